/* SPDX-License-Identifier: MIT */
/*
 * The I/O threads' io_uring (see iothread-ring.h): its set-up, the
 * restrictions of its opcodes and the registered-file table.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "iothread-ring.h"
#include "log.h"

/* A statistic of the owner's (the only writer); read relaxed. */
#define RING_STAT_ADD(r, f, n) \
	__atomic_store_n(&(r)->f, (r)->f + (n), __ATOMIC_RELAXED)

/* ---- registered files ---- */

/* One IORING_REGISTER_FILES_UPDATE: slot @slot := @fd (-1: empty it). */
static int files_update(struct iothread_ring *r, unsigned int slot, int fd)
{
	struct io_uring_files_update up = {
		.offset = slot,
		.fds = (uint64_t)(uintptr_t)&fd,
	};
	long n;

	RING_STAT_ADD(r, file_updates, 1);
	/* Raw syscall, as in ring_restrict(). */
	n = syscall(__NR_io_uring_register, r->uring.ring_fd,
		    (unsigned long)IORING_REGISTER_FILES_UPDATE, &up, 1ul);
	if (n < 0)
		return -errno;
	return n == 1 ? 0 : -EIO;
}

int iothread_ring_file_get(struct iothread_ring *r, int fd,
			   struct iothread_file *f)
{
	unsigned int slot;
	int ret;

	if (r->files_used == r->nr_files)
		return -ENOSPC;
	for (slot = r->file_hint; r->files[slot] != -1;
	     slot = (slot + 1) % r->nr_files)
		;
	ret = files_update(r, slot, fd);
	if (ret)
		return ret;
	r->files[slot] = fd;
	r->files_used++;
	r->file_hint = (slot + 1) % r->nr_files;
	RING_STAT_ADD(r, files_held, 1);
	*f = (struct iothread_file){ .fd = fd, .idx = (int)slot,
				     .sqe_flags = IOSQE_FIXED_FILE,
				     .held = true };
	return 0;
}

void iothread_ring_file_put(struct iothread_ring *r, struct iothread_file *f,
			    bool kernel)
{
	unsigned int slot = (unsigned int)f->idx;
	int ret = 0;

	if (kernel)
		ret = files_update(r, slot, -1);
	if (ret) {
		/* Cannot happen for a slot we filled; if it does, retire the
		 * slot rather than reuse it with an unknown file in it. */
		vmm_err("iothread %u: unregistering file slot %u: %s",
			r->index, slot, strerror(-ret));
		r->files[slot] = -2;
	} else {
		r->files[slot] = -1;
		r->files_used--;
	}
	RING_STAT_ADD(r, files_held, (uint32_t)-1); /* - 1 */
	f->held = false;
}

/*
 * The SQE opcodes the I/O threads submit: POLL_ADD/POLL_REMOVE (watched
 * fds), READV/WRITEV/FSYNC/FALLOCATE/NOP (the block backend) and
 * ASYNC_CANCEL (the block backend cancels what it has in flight when a
 * queue is reset or stopped; it only reaches this ring's requests).  A new
 * opcode, an IOSQE_* flag or a registration (io_uring_register) must be
 * added here, or its SQEs complete with -EACCES.
 */
static const uint8_t ring_sqe_ops[] = {
	IORING_OP_NOP, IORING_OP_READV, IORING_OP_WRITEV, IORING_OP_FSYNC,
	IORING_OP_POLL_ADD, IORING_OP_POLL_REMOVE, IORING_OP_FALLOCATE,
	IORING_OP_ASYNC_CANCEL,
};

/*
 * Registered-file slots per ring: what the kernel allows one process
 * (RLIMIT_NOFILE, which io_uring enforces on the table size too), at most
 * this.  A thread needs one slot per eventfd it watches (its own two and a
 * kick per queue it serves) and one per block engine (a queue): every
 * queue also has two eventfds open (kick, call), so a VM whose eventfds
 * fit under RLIMIT_NOFILE fits here, up to 16k queues on one thread.
 * 32768 is also the kernel's own limit before 5.13.  Cost: 8-16 bytes of
 * kernel memory per slot and ring.
 */
#define IOTHREAD_MAX_FILES 32768u

/* An empty (sparse) table of registered files on a ring not enabled yet.
 * Returns 0 or -errno. */
static int ring_register_files(struct iothread_ring *r)
{
	struct rlimit rl;
	unsigned int n = IOTHREAD_MAX_FILES;
	int ret = 0;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < n)
		n = (unsigned int)rl.rlim_cur;
	if (n < 8)
		return -EMFILE;
	r->files = malloc(n * sizeof(*r->files));
	if (!r->files)
		return -ENOMEM;
	for (unsigned int i = 0; i < n; i++)
		r->files[i] = -1; /* "allow sparse sets" since Linux 5.5 */
	/* Raw syscall, as in ring_restrict(): liburing's wrapper raises
	 * RLIMIT_NOFILE behind our back when the kernel says -EMFILE. */
	if (syscall(__NR_io_uring_register, r->uring.ring_fd,
		    IORING_REGISTER_FILES, r->files, n) < 0) {
		ret = -errno;
		free(r->files);
		r->files = NULL;
		return ret;
	}
	r->nr_files = n;
	r->files_used = r->file_hint = 0;
	return 0;
}

/*
 * Restrict a ring created with IORING_SETUP_R_DISABLED to ring_sqe_ops[],
 * then enable it: io_uring requests are not subject
 * to seccomp, so without this a compromised thread could open files or
 * sockets through its own ring.
 *
 * With @fixed (a registered-file table is in place), also: every SQE must carry IOSQE_FIXED_FILE (SQE_FLAGS_REQUIRED), so an
 * SQE can only reach a file in the table -- a raw fd gets -EACCES, an empty
 * slot -EBADF -- and no other SQE flag is allowed; the only registration
 * allowed afterwards is IORING_REGISTER_FILES_UPDATE (REGISTER_OP).
 *
 * Updates must stay allowed: the threads start before the disks are opened
 * and the kick eventfds are created at the guest's DRIVER_OK, long after
 * the ring was enabled (a table frozen at creation only suits a ring
 * whose files are all known in advance).  What that protects: an SQE whose contents
 * went wrong (a bug letting a guest-controlled value into sqe->fd or the
 * opcode) reaches at most this thread's own disk images and eventfds --
 * never /dev/kvm, the VM fd, another VM's images or the embedding
 * application's files -- and cannot change the table itself
 * (IORING_OP_FILES_UPDATE is not an allowed opcode).  What it does not: a
 * thread running arbitrary code can call io_uring_register(FILES_UPDATE)
 * (its seccomp list allows exactly that command) and register any fd of
 * the process; but the same list lets it preadv/pwritev any fd directly,
 * so the table gives it nothing more.  It still cannot register buffers,
 * personalities or eventfds, or lift the restrictions.
 *
 * Returns 0 or -errno; the ring is unusable after a failure.
 */
static int ring_restrict(struct io_uring *ring, bool fixed)
{
	struct io_uring_restriction r[sizeof(ring_sqe_ops) + 2];
	unsigned int n = 0;

	memset(r, 0, sizeof(r));
	for (unsigned int i = 0; i < sizeof(ring_sqe_ops); i++) {
		r[n].opcode = IORING_RESTRICTION_SQE_OP;
		r[n++].sqe_op = ring_sqe_ops[i];
	}
	if (fixed) {
		r[n].opcode = IORING_RESTRICTION_SQE_FLAGS_REQUIRED;
		r[n++].sqe_flags = IOSQE_FIXED_FILE;
		r[n].opcode = IORING_RESTRICTION_REGISTER_OP;
		r[n++].register_op = IORING_REGISTER_FILES_UPDATE;
	}
	/* Raw io_uring_register(2): Debian's liburing 2.3 declares
	 * io_uring_register_restrictions()/io_uring_enable_rings() but does
	 * not export them. */
	if (syscall(__NR_io_uring_register, ring->ring_fd,
		    IORING_REGISTER_RESTRICTIONS, r, n) < 0 ||
	    syscall(__NR_io_uring_register, ring->ring_fd,
		    IORING_REGISTER_ENABLE_RINGS, NULL, 0) < 0)
		return -errno;
	return 0;
}

static void ring_free_files(struct iothread_ring *r)
{
	free(r->files);
	r->files = NULL;
	r->nr_files = 0;
	r->fixed_files = false;
}

void iothread_ring_exit(struct iothread_ring *r)
{
	io_uring_queue_exit(&r->uring); /* drops every registered file */
	ring_free_files(r);
}

int iothread_ring_init(struct iothread_ring *r, unsigned int index,
		       unsigned int entries)
{
	/*
	 * The thread reaps its own completions (COOP_TASKRUN, 5.19+: no IPI
	 * to interrupt it for task work).  Not SINGLE_ISSUER: the ring is
	 * created here, by the thread that builds the VM, and the kernel
	 * binds a single-issuer ring to its first submitter.  R_DISABLED
	 * (5.10+) lets ring_restrict() register the file table and the
	 * allow-list before any SQE.  Older kernels reject flags: fall back
	 * step by step -- restricted without registered files, then a plain
	 * unrestricted ring last.
	 */
	static const uint32_t tries[] = {
		IORING_SETUP_COOP_TASKRUN | IORING_SETUP_R_DISABLED,
		IORING_SETUP_R_DISABLED,
		IORING_SETUP_COOP_TASKRUN,
		0,
	};
	struct io_uring_params p;
	int ret = -EINVAL;

	r->index = index;

	for (unsigned int i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		bool want_files = tries[i] & IORING_SETUP_R_DISABLED;

again:
		memset(&p, 0, sizeof(p));
		p.flags = tries[i] | IORING_SETUP_CQSIZE;
		p.cq_entries = entries * 4;
		ret = io_uring_queue_init_params(entries, &r->uring, &p);
		if (ret == -EINVAL)
			continue;
		if (ret || !(tries[i] & IORING_SETUP_R_DISABLED))
			break;
		if (want_files) {
			ret = ring_register_files(r);
			if (ret)
				vmm_dbg("iothread %u: io_uring registered files: %s",
					r->index, strerror(-ret));
			r->fixed_files = !ret;
		}
		ret = ring_restrict(&r->uring, r->fixed_files);
		if (!ret) {
			r->restricted = true;
			break;
		}
		vmm_dbg("iothread %u: io_uring restrictions%s: %s", r->index,
			r->fixed_files ? " with registered files" : "",
			strerror(-ret));
		io_uring_queue_exit(&r->uring);
		ret = -EINVAL;
		if (r->fixed_files) {
			/* Once more on the same flags, opcodes only. */
			ring_free_files(r);
			want_files = false;
			goto again;
		}
	}
	if (!ret && !r->restricted)
		vmm_warn("iothread %u: io_uring ring without opcode restrictions "
			 "(kernel < 5.10?)", r->index);
	else if (!ret && !r->fixed_files)
		vmm_warn("iothread %u: io_uring ring without registered files: "
			 "its SQEs may name any fd", r->index);
	return ret;
}
