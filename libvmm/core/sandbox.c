/* SPDX-License-Identifier: MIT */
/*
 * Per-thread-class seccomp allow-lists (see sandbox.h).
 *
 * The lists hold what each class was seen to call at run time (strace -ff
 * of minivmm booting the blk-mq payload with fio, tests/e2e/
 * seccomp_profile.sh), plus what glibc needs on the same paths (malloc
 * growing an arena, a thread's exit, usleep) and error paths (logging).
 * Arguments are checked where it is cheap and meaningful: ioctl by request
 * number (the low 32 bits, which is all the kernel
 * reads), mmap/mprotect never with PROT_EXEC, tgkill only inside this
 * process.  Everything else (open, socket, execve, clone, ptrace, ...)
 * gets the default action: end the process (VMM_SECCOMP_KILL: a trap whose
 * SIGSYS handler names the call on stderr first, sandbox-trap.c, or a
 * silent SECCOMP_RET_KILL_PROCESS when the embedder handles SIGSYS itself)
 * or EPERM (VMM_SECCOMP_ERRNO, for tests and debugging).
 *
 * The lists are not widened for glibc's lazy initialisation (arena limit,
 * heap trimming, message catalogs): that work is done before a thread
 * confines itself (sandbox-warm.c).
 *
 * A vmm_log_fn callback runs on these threads under these filters.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/fs.h>
#include <linux/if_tun.h>
#include <linux/io_uring.h>
#include <linux/kvm.h>
#include <linux/vhost.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include "log.h"
#include "sandbox-trap.h"
#include "sandbox-warm.h"
#include "sandbox.h"
#include "vmm/vmm.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Argument checks a rule can carry (few kinds, so the tables stay data). */
enum arg_check {
	ARG_ANY,
	ARG_NO_EXEC, /* prot (argument 2) without PROT_EXEC: mmap, mprotect */
	ARG_OWN_PID, /* argument 0 is this process: tgkill */
	ARG_FD_ONLY, /* flags (argument 3) have AT_EMPTY_PATH: fstat of an fd,
			not a path lookup (newfstatat) */
	ARG_FCNTL,   /* command (argument 1) in fcntl_cmds[]: no F_DUPFD */
	ARG_URING_FILES_UPDATE, /* io_uring_register command (argument 1)
				   IORING_REGISTER_FILES_UPDATE only */
	ARG_SEND_NOWAIT, /* sendto on a connected socket (no address,
			    argument 4) with flags (argument 3) exactly
			    MSG_DONTWAIT | MSG_NOSIGNAL: nbfd.c's write */
	ARG_UNIX_STREAM, /* socket(AF_UNIX, SOCK_STREAM | flags, 0) */
	ARG_SENDMSG_NOWAIT, /* sendmsg with flags (argument 2) exactly
			       MSG_DONTWAIT | MSG_NOSIGNAL */
	ARG_RECV_NOWAIT, /* recvfrom without an address (argument 4) and
			    flags (argument 3) MSG_DONTWAIT, or with MSG_PEEK */
	ARG_SCHED_SELF, /* sched_setscheduler of the calling thread (pid 0)
			   to SCHED_OTHER or SCHED_BATCH: iothread.c */
};

/* Disk image locks (OFD locks, released explicitly at disk_close()) and
 * flag reads. */
static const int fcntl_cmds[] = {
	F_OFD_SETLK, F_OFD_GETLK, F_SETLK, F_GETLK, F_GETFL, F_GETFD,
};

struct rule {
	int nr;
	enum arg_check check;
};

/* Every class: memory management for malloc (glibc and, in sanitizer
 * builds, ASan's allocator), locks, signals (the vCPU kick), time, and
 * ending the thread; the non-blocking writes of the log sink to stderr
 * (log.c through nbfd.c: write, send(MSG_DONTWAIT) to a socket, poll()
 * first where it could not be reopened non-blocking). */
static const struct rule common_rules[] = {
	{ SCMP_SYS(read), ARG_ANY },
	{ SCMP_SYS(write), ARG_ANY },
	{ SCMP_SYS(sendto), ARG_SEND_NOWAIT },
	{ SCMP_SYS(poll), ARG_ANY },
	{ SCMP_SYS(ppoll), ARG_ANY },
	{ SCMP_SYS(close), ARG_ANY },
	{ SCMP_SYS(futex), ARG_ANY },
	{ SCMP_SYS(brk), ARG_ANY },
	{ SCMP_SYS(mmap), ARG_NO_EXEC },
	{ SCMP_SYS(mprotect), ARG_NO_EXEC },
	{ SCMP_SYS(munmap), ARG_ANY },
	{ SCMP_SYS(mremap), ARG_ANY },
	{ SCMP_SYS(madvise), ARG_ANY },
	{ SCMP_SYS(rt_sigprocmask), ARG_ANY },
	{ SCMP_SYS(rt_sigreturn), ARG_ANY },
	{ SCMP_SYS(sigaltstack), ARG_ANY }, /* sanitizer runtimes, thread exit */
	/* Sanitizer runtimes' spin locks yield under contention (ASan's
	 * allocator with 64+ threads, tests/unit/check_seccomp_threads.c);
	 * touches nothing but the scheduler. */
	{ SCMP_SYS(sched_yield), ARG_ANY },
	{ SCMP_SYS(restart_syscall), ARG_ANY },
	{ SCMP_SYS(clock_gettime), ARG_ANY },
	{ SCMP_SYS(clock_nanosleep), ARG_ANY },
	{ SCMP_SYS(nanosleep), ARG_ANY },
	{ SCMP_SYS(getpid), ARG_ANY },
	{ SCMP_SYS(gettid), ARG_ANY },
	{ SCMP_SYS(tgkill), ARG_OWN_PID },
	{ SCMP_SYS(exit), ARG_ANY },
	{ SCMP_SYS(exit_group), ARG_ANY },
};

/*
 * vCPU threads: KVM_RUN, and the device emulation that runs on them: a
 * guest register write may commit a wiring transaction (GSI routes, irqfds,
 * ioeventfds, coalesced MMIO zones that follow a BAR), create eventfds (queue enable / DRIVER_OK), run a call on an
 * I/O thread (eventfd write + futex wait), raise the serial IRQ line, or
 * kick the other vCPUs (guest reset).
 */
static const struct rule vcpu_rules[] = {
	{ SCMP_SYS(ioctl), ARG_ANY }, /* by request: vcpu_ioctls[] */
	{ SCMP_SYS(eventfd2), ARG_ANY },
	{ SCMP_SYS(rt_sigtimedwait), ARG_ANY }, /* consuming kicks (vcpu.c) */
	/* A vhost-user device's DRIVER_OK and reset (virtio-fs): requests to
	 * its back end with their fds, and the replies, on the socket
	 * opened before (no socket() or connect() here). */
	{ SCMP_SYS(sendmsg), ARG_ANY },
	{ SCMP_SYS(recvmsg), ARG_ANY },
};
static const unsigned long vcpu_ioctls[] = {
	KVM_RUN, KVM_IRQ_LINE, KVM_SET_GSI_ROUTING, KVM_IRQFD, KVM_IOEVENTFD,
	KVM_SIGNAL_MSI, KVM_REGISTER_COALESCED_MMIO,
	KVM_UNREGISTER_COALESCED_MMIO,
	/* virtio-net vhost=on, DRIVER_OK and reset: the rings to the
	 * vhost-net files opened before (no VHOST_SET_OWNER or memory table
	 * here), the tap's offloads and enabled pairs. */
	VHOST_SET_FEATURES, VHOST_SET_VRING_NUM, VHOST_SET_VRING_BASE,
	VHOST_SET_VRING_ADDR, VHOST_SET_VRING_KICK, VHOST_SET_VRING_CALL,
	VHOST_NET_SET_BACKEND, VHOST_GET_VRING_BASE, TUNSETOFFLOAD, TUNSETQUEUE,
	/* virtio-vsock vhost=on, DRIVER_OK and reset (the same ring
	 * requests, then the running switch). */
	VHOST_VSOCK_SET_RUNNING,
};

/* I/O threads: their io_uring, and the synchronous fallback of the block
 * backend (preadv/pwritev, fdatasync, fallocate, BLKDISCARD/BLKZEROOUT);
 * interrupts of a rewritten MSI-X vector (KVM_SIGNAL_MSI) and the refresh
 * of its route (KVM_SET_GSI_ROUTING, vq-wiring.c's lazy flush);
 * slots of the ring's registered-file table (iothread.c: the only
 * registration its restrictions allow, too). */
static const struct rule io_rules[] = {
	{ SCMP_SYS(io_uring_enter), ARG_ANY },
	{ SCMP_SYS(io_uring_register), ARG_URING_FILES_UPDATE },
	{ SCMP_SYS(ioctl), ARG_ANY }, /* by request: io_ioctls[] */
	{ SCMP_SYS(preadv), ARG_ANY },
	{ SCMP_SYS(pwritev), ARG_ANY },
	{ SCMP_SYS(pread64), ARG_ANY },
	{ SCMP_SYS(pwrite64), ARG_ANY },
	{ SCMP_SYS(fdatasync), ARG_ANY },
	{ SCMP_SYS(fsync), ARG_ANY },
	{ SCMP_SYS(fallocate), ARG_ANY },
	{ SCMP_SYS(eventfd2), ARG_ANY },
	/* virtio-net: frames to and from the tap (READV/WRITEV SQEs on the
	 * ring, io_uring_enter above; readv/writev where the tap cannot be
	 * registered with it), the offloads the driver accepted and the
	 * pairs it enabled (TUNSETOFFLOAD, TUNSETQUEUE). */
	{ SCMP_SYS(readv), ARG_ANY },
	{ SCMP_SYS(writev), ARG_ANY },
	/* virtio-net on a stream socket (devices/net/stream.c): frames sent
	 * with MSG_DONTWAIT | MSG_NOSIGNAL only (read() is common), the
	 * socket shut down when its peer breaks the framing or goes. */
	{ SCMP_SYS(sendmsg), ARG_SENDMSG_NOWAIT },
	{ SCMP_SYS(shutdown), ARG_ANY },
	/* The adaptive policy (vmm_set_iothread_sched()): the thread itself
	 * between SCHED_OTHER and SCHED_BATCH, nothing else. */
	{ SCMP_SYS(sched_setscheduler), ARG_SCHED_SELF },
};
static const unsigned long io_ioctls[] = {
	BLKDISCARD, BLKZEROOUT, KVM_SIGNAL_MSI, KVM_SET_GSI_ROUTING,
	TUNSETOFFLOAD, TUNSETQUEUE,
};

/* Console input: poll the input fd, feed the UART (which raises its IRQ).
 * Also the virtio-console port threads (devices/console/vcon.c): poll,
 * read/write their fds and eventfds (send() with MSG_DONTWAIT to a socket
 * out_fd: core/nbfd.c), and interrupt the guest like an I/O thread
 * (KVM_SIGNAL_MSI, and KVM_SET_GSI_ROUTING for a lazy route refresh in
 * virtio_queue_notify()). */
static const struct rule console_rules[] = {
	{ SCMP_SYS(ioctl), ARG_ANY }, /* by request: console_ioctls[] */
};
static const unsigned long console_ioctls[] = { KVM_IRQ_LINE, KVM_SIGNAL_MSI,
						KVM_SET_GSI_ROUTING };

/*
 * Control thread, after vmm_start(): wait for the VM (poll/ppoll/
 * epoll_wait on the exit eventfd and a signalfd), vmm_stop() (kicks),
 * vmm_pause()/vmm_resume() (the guest clock's ioctls),
 * vmm_wait() (joins), the stats getters (KVM stats fds), vmm_destroy()
 * (unwiring, closing, unmapping, draining the I/O threads) and the
 * terminal restore of a CLI.  Not open(), not vmm_create(): a confined
 * thread cannot build another VM.
 */
static const struct rule control_rules[] = {
	/* An embedder's control socket (minivmm --api-socket): the listening
	 * socket exists before; a client is accepted, its credentials read,
	 * its request read and answered (sendto: MSG_DONTWAIT|MSG_NOSIGNAL). */
	{ SCMP_SYS(accept4), ARG_ANY },
	{ SCMP_SYS(getsockopt), ARG_ANY },
	{ SCMP_SYS(epoll_wait), ARG_ANY },
	{ SCMP_SYS(epoll_pwait), ARG_ANY },
	{ SCMP_SYS(ioctl), ARG_ANY }, /* by request: control_ioctls[] */
	{ SCMP_SYS(pread64), ARG_ANY },
	{ SCMP_SYS(io_uring_enter), ARG_ANY },
	{ SCMP_SYS(fdatasync), ARG_ANY },
	{ SCMP_SYS(fsync), ARG_ANY },
	{ SCMP_SYS(fcntl), ARG_FCNTL }, /* image unlock at vmm_destroy() */
	{ SCMP_SYS(newfstatat), ARG_FD_ONLY }, /* stdio's first use of a FILE */
	{ SCMP_SYS(fstat), ARG_ANY },
	{ SCMP_SYS(lseek), ARG_ANY },
	/* A vhost-user device stopped at the VM's end (GET_VRING_BASE). */
	{ SCMP_SYS(sendmsg), ARG_ANY },
	{ SCMP_SYS(recvmsg), ARG_ANY },
};
static const unsigned long control_ioctls[] = {
	KVM_SET_GSI_ROUTING, KVM_IRQFD, KVM_IOEVENTFD, KVM_IRQ_LINE,
	KVM_SIGNAL_MSI, KVM_UNREGISTER_COALESCED_MMIO, TCGETS, TCSETS, TCSETSW,
	TCSETSF,
	KVM_GET_CLOCK, KVM_SET_CLOCK, KVM_KVMCLOCK_CTRL, /* vmm_pause/resume */
	/* virtio-net vhost=on stopped at the VM's end, and its link held
	 * down or let up (vmm_set_net_link(): the vhost files' back end and
	 * the tap's queue steering). */
	VHOST_NET_SET_BACKEND, VHOST_GET_VRING_BASE, TUNSETQUEUE,
	/* virtio-vsock vhost=on stopped at the VM's end. */
	VHOST_VSOCK_SET_RUNNING,
};

/*
 * A vhost-user back end's control thread (minivmm-blkd): accept the front
 * end's connection, receive its messages with their file descriptors and
 * reply, map the guest RAM regions it sends (fstat checks their size) and
 * unmap them, close the eventfds it replaces; start and stop rings on the
 * I/O threads (eventfd write + futex wait); at exit, unlock the image
 * (fcntl) and join the I/O threads.  No open(), no socket(), no ioctl:
 * the listening socket, the image and the signalfd exist before.
 */
static const struct rule vhost_rules[] = {
	{ SCMP_SYS(accept4), ARG_ANY },
	{ SCMP_SYS(recvmsg), ARG_ANY },
	{ SCMP_SYS(sendmsg), ARG_ANY },
	{ SCMP_SYS(fstat), ARG_ANY },
	{ SCMP_SYS(newfstatat), ARG_FD_ONLY }, /* glibc's fstat() */
	{ SCMP_SYS(fcntl), ARG_FCNTL },	       /* image unlock at exit */
};

/*
 * The host side of a vsock device (devices/vsock/), on the I/O thread that
 * serves it, added to the I/O list: accept host clients on its listening
 * socket, connect to a host listener (a Unix stream socket, the path
 * built from the configured one), the epoll set of its host sockets,
 * their non-blocking reads and writes (the CONNECT line peeked first),
 * a half close.
 */
static const struct rule sock_rules[] = {
	{ SCMP_SYS(accept4), ARG_ANY },
	{ SCMP_SYS(socket), ARG_UNIX_STREAM },
	{ SCMP_SYS(connect), ARG_ANY },
	{ SCMP_SYS(epoll_wait), ARG_ANY },
	{ SCMP_SYS(epoll_pwait), ARG_ANY },
	{ SCMP_SYS(epoll_ctl), ARG_ANY },
	{ SCMP_SYS(readv), ARG_ANY },
	{ SCMP_SYS(sendmsg), ARG_SENDMSG_NOWAIT },
	{ SCMP_SYS(recvfrom), ARG_RECV_NOWAIT },
	{ SCMP_SYS(shutdown), ARG_ANY },
};

struct class_def {
	const char *name;
	const struct rule *rules;
	unsigned int nr_rules;
	const unsigned long *ioctls;
	unsigned int nr_ioctls;
	/* A second list of rules (a class that extends another). */
	const struct rule *more;
	unsigned int nr_more;
};

static const struct class_def classes[SANDBOX_CLASS_NR] = {
	[SANDBOX_CLASS_VCPU] = { "vcpu", vcpu_rules, ARRAY_LEN(vcpu_rules),
				 vcpu_ioctls, ARRAY_LEN(vcpu_ioctls) },
	[SANDBOX_CLASS_IO] = { "io", io_rules, ARRAY_LEN(io_rules), io_ioctls,
			       ARRAY_LEN(io_ioctls) },
	[SANDBOX_CLASS_CONSOLE] = { "console", console_rules,
				    ARRAY_LEN(console_rules), console_ioctls,
				    ARRAY_LEN(console_ioctls) },
	[SANDBOX_CLASS_CONTROL] = { "control", control_rules,
				    ARRAY_LEN(control_rules), control_ioctls,
				    ARRAY_LEN(control_ioctls) },
	[SANDBOX_CLASS_VHOST] = { "vhost", vhost_rules, ARRAY_LEN(vhost_rules),
				  NULL, 0 },
	[SANDBOX_CLASS_IO_SOCK] = { "io-sock", io_rules, ARRAY_LEN(io_rules),
				    io_ioctls, ARRAY_LEN(io_ioctls), sock_rules,
				    ARRAY_LEN(sock_rules) },
};

struct sandbox {
	struct sock_fprog prog[SANDBOX_CLASS_NR];
};

const char *sandbox_class_name(enum sandbox_class cls)
{
	return cls < SANDBOX_CLASS_NR ? classes[cls].name : "unknown";
}

static bool seen(const int *nrs, unsigned int n, int nr)
{
	for (unsigned int i = 0; i < n; i++)
		if (nrs[i] == nr)
			return true;
	return false;
}

unsigned int sandbox_class_nr_syscalls(enum sandbox_class cls)
{
	int nrs[ARRAY_LEN(common_rules) + 32];
	unsigned int n = 0;

	if (cls >= SANDBOX_CLASS_NR)
		return 0;
	for (unsigned int i = 0; i < ARRAY_LEN(common_rules); i++)
		if (!seen(nrs, n, common_rules[i].nr))
			nrs[n++] = common_rules[i].nr;
	for (unsigned int i = 0; i < classes[cls].nr_rules && n < ARRAY_LEN(nrs); i++)
		if (!seen(nrs, n, classes[cls].rules[i].nr))
			nrs[n++] = classes[cls].rules[i].nr;
	for (unsigned int i = 0; i < classes[cls].nr_more && n < ARRAY_LEN(nrs); i++)
		if (!seen(nrs, n, classes[cls].more[i].nr))
			nrs[n++] = classes[cls].more[i].nr;
	return n;
}

static int add_rule(scmp_filter_ctx ctx, const struct rule *r,
		    const struct class_def *c)
{
	int ret = 0;

	if (r->nr == SCMP_SYS(ioctl)) {
		/* The kernel reads the request as an unsigned int: compare
		 * the low 32 bits only, whatever the caller left above. */
		for (unsigned int i = 0; i < c->nr_ioctls && !ret; i++)
			ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, r->nr, 1,
					       SCMP_A1(SCMP_CMP_MASKED_EQ,
						       0xffffffffu,
						       c->ioctls[i] & 0xffffffffu));
		return ret;
	}
	switch (r->check) {
	case ARG_NO_EXEC:
		return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, r->nr, 1,
					SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	case ARG_FCNTL:
		for (unsigned int i = 0; i < ARRAY_LEN(fcntl_cmds) && !ret; i++)
			ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, r->nr, 1,
					       SCMP_A1(SCMP_CMP_EQ,
						       (scmp_datum_t)fcntl_cmds[i]));
		return ret;
	case ARG_FD_ONLY:
		return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, r->nr, 1,
					SCMP_A3(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH,
						AT_EMPTY_PATH));
	case ARG_URING_FILES_UPDATE:
		/* The kernel reads the command as an unsigned int, as an
		 * ioctl request: compare the low 32 bits. */
		return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, r->nr, 1,
					SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu,
						IORING_REGISTER_FILES_UPDATE));
	case ARG_SEND_NOWAIT:
		/* flags is an int: compare its 32 bits, whatever the caller
		 * left above; the address is a pointer: all 64. */
		return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, r->nr, 2,
					SCMP_A3(SCMP_CMP_MASKED_EQ, 0xffffffffu,
						MSG_DONTWAIT | MSG_NOSIGNAL),
					SCMP_A4(SCMP_CMP_EQ, 0));
	case ARG_UNIX_STREAM:
		/* type carries SOCK_NONBLOCK | SOCK_CLOEXEC: its low bits. */
		return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, r->nr, 3,
					SCMP_A0(SCMP_CMP_EQ, AF_UNIX),
					SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, SOCK_STREAM),
					SCMP_A2(SCMP_CMP_EQ, 0));
	case ARG_SENDMSG_NOWAIT:
		return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, r->nr, 1,
					SCMP_A2(SCMP_CMP_MASKED_EQ, 0xffffffffu,
						MSG_DONTWAIT | MSG_NOSIGNAL));
	case ARG_RECV_NOWAIT:
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, r->nr, 2,
				       SCMP_A3(SCMP_CMP_MASKED_EQ, 0xffffffffu,
					       MSG_DONTWAIT),
				       SCMP_A4(SCMP_CMP_EQ, 0));
		return ret ? ret :
			     seccomp_rule_add(ctx, SCMP_ACT_ALLOW, r->nr, 2,
					      SCMP_A3(SCMP_CMP_MASKED_EQ, 0xffffffffu,
						      MSG_DONTWAIT | MSG_PEEK),
					      SCMP_A4(SCMP_CMP_EQ, 0));
	case ARG_SCHED_SELF:
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, r->nr, 2,
				       SCMP_A0(SCMP_CMP_EQ, 0),
				       SCMP_A1(SCMP_CMP_EQ, SCHED_OTHER));
		return ret ? ret :
			     seccomp_rule_add(ctx, SCMP_ACT_ALLOW, r->nr, 2,
					      SCMP_A0(SCMP_CMP_EQ, 0),
					      SCMP_A1(SCMP_CMP_EQ, SCHED_BATCH));
	case ARG_OWN_PID:
		return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, r->nr, 1,
					SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid()));
	case ARG_ANY:
		break;
	}
	return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, r->nr, 0);
}

/* libseccomp 2.5 exports BPF only to an fd: go through a memfd. */
static int export_bpf(scmp_filter_ctx ctx, struct sock_fprog *out)
{
	struct stat st;
	void *buf = NULL;
	int fd, ret;

	fd = memfd_create("vmm-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = seccomp_export_bpf(ctx, fd);
	if (ret)
		goto out;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		goto out;
	}
	if (st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) ||
	    st.st_size / sizeof(struct sock_filter) > BPF_MAXINSNS) {
		ret = -ENOTSUP;
		goto out;
	}
	buf = malloc((size_t)st.st_size);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	if (pread(fd, buf, (size_t)st.st_size, 0) != st.st_size) {
		ret = -EIO;
		goto out;
	}
	out->filter = buf;
	out->len = (unsigned short)(st.st_size / sizeof(struct sock_filter));
	buf = NULL;
out:
	free(buf);
	close(fd);
	return ret;
}

/*
 * libseccomp's SCMP_ACT_TRAP carries no data: mark our traps in the
 * exported program (every "ret SECCOMP_RET_TRAP") with SANDBOX_TRAP_DATA,
 * which the kernel passes as the SIGSYS's si_errno, so that the handler
 * tells them from another filter's.
 */
static void mark_traps(struct sock_fprog *prog)
{
	for (unsigned int i = 0; i < prog->len; i++) {
		struct sock_filter *ins = &prog->filter[i];

		if (ins->code == (BPF_RET | BPF_K) && ins->k == SECCOMP_RET_TRAP)
			ins->k = SECCOMP_RET_TRAP | SANDBOX_TRAP_DATA;
	}
}

static int build_class(const struct class_def *c, uint32_t deny,
		       struct sock_fprog *out)
{
	scmp_filter_ctx ctx = seccomp_init(deny);
	int ret = 0;

	if (!ctx)
		return -ENOMEM;
	/* A foreign-architecture call (int 0x80 from a 64-bit process) gets
	 * the same answer as any call off the list. */
	ret = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, deny);
	for (unsigned int i = 0; i < ARRAY_LEN(common_rules) && !ret; i++)
		ret = add_rule(ctx, &common_rules[i], c);
	for (unsigned int i = 0; i < c->nr_rules && !ret; i++)
		ret = add_rule(ctx, &c->rules[i], c);
	for (unsigned int i = 0; i < c->nr_more && !ret; i++)
		ret = add_rule(ctx, &c->more[i], c);
	if (!ret)
		ret = export_bpf(ctx, out);
	if (!ret && deny == SCMP_ACT_TRAP)
		mark_traps(out);
	seccomp_release(ctx);
	if (ret)
		vmm_err("seccomp: cannot build the %s filter: %s", c->name,
			strerror(-ret));
	return ret == -ENOMEM ? ret : (ret ? -ENOTSUP : 0);
}

int sandbox_build(int mode, struct sandbox **out)
{
	return sandbox_build_classes(mode,
				     (1u << SANDBOX_CLASS_VCPU) | (1u << SANDBOX_CLASS_IO) |
					     (1u << SANDBOX_CLASS_CONSOLE) |
					     (1u << SANDBOX_CLASS_CONTROL),
				     out);
}

int sandbox_build_classes(int mode, unsigned int mask, struct sandbox **out)
{
	struct sandbox *f;
	uint32_t deny;
	int ret = 0;

	if (mode == VMM_SECCOMP_KILL)
		/* A trap reported by our SIGSYS handler, which then ends the
		 * process as KILL_PROCESS would; silent KILL_PROCESS if the
		 * embedder has its own SIGSYS disposition. */
		deny = sandbox_trap_ready() ? SCMP_ACT_TRAP : SCMP_ACT_KILL_PROCESS;
	else if (mode == VMM_SECCOMP_ERRNO)
		deny = SCMP_ACT_ERRNO(EPERM);
	else
		return -EINVAL;
	sandbox_warm_process();
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	for (unsigned int i = 0; i < SANDBOX_CLASS_NR && !ret; i++)
		if (mask & (1u << i))
			ret = build_class(&classes[i], deny, &f->prog[i]);
	if (ret) {
		sandbox_free(f);
		return ret;
	}
	*out = f;
	return 0;
}

void sandbox_free(struct sandbox *f)
{
	if (!f)
		return;
	for (unsigned int i = 0; i < SANDBOX_CLASS_NR; i++)
		free(f->prog[i].filter);
	free(f);
}

int sandbox_install(const struct sandbox *f, enum sandbox_class cls)
{
	int ret;

	if (!f)
		return 0;
	if (cls >= SANDBOX_CLASS_NR || !f->prog[cls].filter)
		return -EINVAL;
	/* Last unconfined moment of this thread: what glibc would otherwise
	 * initialise under the filter (sandbox-warm.c), and the record the
	 * violation report names it by; the log sink stops preparing on it. */
	sandbox_warm_thread();
	log_thread_confined();
	ret = sandbox_trap_thread(classes[cls].name);
	if (ret)
		return ret;
	/* Needed without CAP_SYS_ADMIN; also keeps a later execve (not
	 * allowed anyway) from gaining privileges. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	/* Per thread: no SECCOMP_FILTER_FLAG_TSYNC. */
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &f->prog[cls]) < 0)
		return errno == EINVAL ? -ENOTSUP : -errno;
	return 0;
}
