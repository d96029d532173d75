/* SPDX-License-Identifier: MIT */
/*
 * I/O-thread rings restricted to registered files (iothread-ring.c,
 * ring_restrict()): SQEs must name a file by its slot in the ring's table
 * (IOSQE_FIXED_FILE required), a raw fd is refused with -EACCES, an empty
 * slot with -EBADF, and the only registration allowed after enabling is
 * IORING_REGISTER_FILES_UPDATE -- which the I/O threads' seccomp list also
 * allows, and nothing else.  The virtio-blk device still serves I/O
 * through such rings, and device resets do not touch the table (on kernels
 * before 6.13 every unregistration while the thread's polls run would stay
 * referenced until the ring is destroyed).  No KVM needed.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "blk/vblk.h"
#include "blk/virtio-blk.h"
#include "fake_guest.h"
#include "iothread.h"
#include "pci/msix.h"
#include "sandbox.h"
#include "virtio/virtio-pci.h"
#include "vmm/vmm.h"

#include "fake_vpci.h"
#include "test_clock.h"

#define SECTOR 512u
#define WAIT_MS 10000

static int uring_register(int ring_fd, unsigned int op, void *arg,
			  unsigned int n)
{
	long r = syscall(__NR_io_uring_register, ring_fd, op, arg, n);

	return r < 0 ? -errno : (int)r;
}

/* A ring with registered files, or skip (kernel < 5.10). */
static struct iothread *fixed_ring(void)
{
	struct iothread *io;

	ck_assert_int_eq(iothread_create(0, 8, &io), 0);
	if (!iothread_ring_fixed_files(io)) {
		printf("uring_files: no registered-file ring here (kernel < 5.10?)\n");
		iothread_destroy(io);
		return NULL;
	}
	ck_assert(iothread_ring_restricted(io));
	return io;
}

/* ---- one SQE on a not-started thread's ring ----------------------------- */

struct cqe_wait {
	struct iothread_cb cb;
	bool done;
	int res;
};

static void cqe_done(struct iothread_cb *cb, int res, uint32_t flags)
{
	struct cqe_wait *w = (struct cqe_wait *)cb;

	(void)flags;
	w->res = res;
	w->done = true;
}

static bool waited(void *opaque)
{
	return ((struct cqe_wait *)opaque)->done;
}

static char rbuf[64];

/* READV of the first bytes through sqe->fd = @fd with @flags. */
static int readv_op(struct iothread *io, int fd, uint8_t flags)
{
	static struct iovec iov = { rbuf, sizeof(rbuf) };
	struct cqe_wait w = { .cb.fn = cqe_done };
	struct io_uring_sqe *sqe = iothread_get_sqe(io, &w.cb);

	ck_assert_ptr_nonnull(sqe);
	io_uring_prep_readv(sqe, fd, &iov, 1, 0);
	sqe->flags |= flags;
	memset(rbuf, 0, sizeof(rbuf));
	iothread_run_until(io, waited, &w);
	return w.res;
}

/* POLL_ADD (one shot) through sqe->fd = @fd with @flags. */
static int poll_op(struct iothread *io, int fd, uint8_t flags)
{
	struct cqe_wait w = { .cb.fn = cqe_done };
	struct io_uring_sqe *sqe = iothread_get_sqe(io, &w.cb);

	ck_assert_ptr_nonnull(sqe);
	io_uring_prep_poll_add(sqe, fd, POLLIN);
	sqe->flags |= flags;
	iothread_run_until(io, waited, &w);
	return w.res;
}

static int tmp_file(const char *content)
{
	int fd = fg_tmp_image(4096);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, content, strlen(content), 0),
			 (ssize_t)strlen(content));
	return fd;
}

/* ---- tests ---------------------------------------------------------------- */

/*
 * The ring answers only through its table: a raw fd -EACCES (for a read
 * and for a poll), an empty or out-of-range slot -EBADF, a registered
 * slot the file; after the put, -EBADF again.
 */
START_TEST(unregistered_fd_refused)
{
	struct iothread *io = fixed_ring();
	struct iothread_file f = { 0 };
	struct iothread_stats st;
	int img, efd, slot;

	if (!io)
		return;
	img = tmp_file("registered image");
	efd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
	ck_assert_int_ge(efd, 0);

	ck_assert_int_eq(readv_op(io, img, 0), -EACCES);
	ck_assert_int_eq(poll_op(io, efd, 0), -EACCES);
	iothread_get_stats(io, &st);
	ck_assert_uint_eq(st.files, 2); /* its stop and call eventfds */
	ck_assert_uint_ge(st.files_max, 8);
	/* The slots right after them are empty. */
	ck_assert_int_eq(readv_op(io, 2, IOSQE_FIXED_FILE), -EBADF);
	ck_assert_int_eq(readv_op(io, (int)st.files_max, IOSQE_FIXED_FILE), -EBADF);

	ck_assert_int_eq(iothread_file_get(io, img, &f), 0);
	ck_assert(f.held);
	ck_assert_uint_eq(f.sqe_flags, IOSQE_FIXED_FILE);
	ck_assert_int_ne(f.idx, img);
	ck_assert_int_eq(readv_op(io, f.idx, f.sqe_flags), sizeof(rbuf));
	ck_assert_str_eq(rbuf, "registered image");
	/* The raw fd is still refused while registered. */
	ck_assert_int_eq(readv_op(io, img, 0), -EACCES);
	slot = f.idx;
	iothread_file_put(io, &f);
	ck_assert(!f.held);
	ck_assert_int_eq(readv_op(io, slot, IOSQE_FIXED_FILE), -EBADF);

	/* A watch registers its eventfd itself. */
	{
		struct iothread_file e = { 0 };

		ck_assert_int_eq(iothread_file_get(io, efd, &e), 0);
		ck_assert_int_eq(poll_op(io, e.idx, e.sqe_flags), POLLIN);
		iothread_file_put(io, &e);
	}
	iothread_get_stats(io, &st);
	ck_assert_uint_eq(st.files, 2);
	ck_assert_uint_eq(st.file_updates, 2 + 2 * 2);
	iothread_destroy(io);
	close(efd);
	close(img);
}
END_TEST

/* After enabling, the ring takes FILES_UPDATE and no other registration. */
START_TEST(only_files_update_registers)
{
	struct iothread *io = fixed_ring();
	int ring, img, fds[1], none = -1;
	struct io_uring_files_update up;
	struct iovec iov = { rbuf, sizeof(rbuf) };

	if (!io)
		return;
	ring = iothread_ring_fd(io);
	img = tmp_file("x");
	ck_assert_int_eq(uring_register(ring, IORING_REGISTER_BUFFERS, &iov, 1),
			 -EACCES);
	ck_assert_int_eq(uring_register(ring, IORING_UNREGISTER_FILES, NULL, 0),
			 -EACCES);
	fds[0] = img;
	ck_assert_int_eq(uring_register(ring, IORING_REGISTER_FILES, fds, 1),
			 -EACCES);
	ck_assert_int_eq(uring_register(ring, IORING_REGISTER_EVENTFD, fds, 1),
			 -EACCES);
	ck_assert_int_eq(uring_register(ring, IORING_REGISTER_PERSONALITY, NULL, 0),
			 -EACCES);
	/* The restrictions themselves cannot be replaced. */
	ck_assert_int_lt(uring_register(ring, IORING_REGISTER_RESTRICTIONS, NULL, 0),
			 0);
	/* FILES_UPDATE works (a slot the thread does not use: the last). */
	memset(&up, 0, sizeof(up));
	{
		struct iothread_stats st;

		iothread_get_stats(io, &st);
		up.offset = st.files_max - 1;
	}
	up.fds = (uint64_t)(uintptr_t)fds;
	ck_assert_int_eq(uring_register(ring, IORING_REGISTER_FILES_UPDATE, &up, 1), 1);
	ck_assert_int_eq(readv_op(io, (int)up.offset, IOSQE_FIXED_FILE), sizeof(rbuf));
	up.fds = (uint64_t)(uintptr_t)&none;
	ck_assert_int_eq(uring_register(ring, IORING_REGISTER_FILES_UPDATE, &up, 1), 1);
	iothread_destroy(io);
	close(img);
}
END_TEST

/* The table is sized by RLIMIT_NOFILE: when it is full, -ENOSPC, and a
 * put makes room again. */
START_TEST(table_full)
{
	struct rlimit rl, low;
	struct iothread *io;
	struct iothread_file f[64];
	struct iothread_stats st;
	unsigned int n = 0;
	int img;

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	low = rl;
	low.rlim_cur = 48; /* this forked test process has far fewer open */
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	io = fixed_ring();
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	if (!io)
		return;
	iothread_get_stats(io, &st);
	ck_assert_uint_eq(st.files_max, 48);
	img = tmp_file("y");
	memset(f, 0, sizeof(f));
	while (n < 64 && iothread_file_get(io, img, &f[n]) == 0)
		n++;
	ck_assert_uint_eq(n, 48 - 2);
	ck_assert_int_eq(iothread_file_get(io, img, &f[n]), -ENOSPC);
	iothread_file_put(io, &f[7]);
	ck_assert_int_eq(iothread_file_get(io, img, &f[7]), 0);
	ck_assert_int_eq(readv_op(io, f[7].idx, f[7].sqe_flags), sizeof(rbuf));
	for (unsigned int i = 0; i < n; i++)
		iothread_file_put(io, &f[i]);
	iothread_get_stats(io, &st);
	ck_assert_uint_eq(st.files, 2);
	ck_assert_int_eq(iothread_file_get(io, -1, &f[0]), -EBADF);
	iothread_destroy(io);
	close(img);
}
END_TEST

/*
 * The I/O threads' seccomp list: io_uring_register only with
 * IORING_REGISTER_FILES_UPDATE (in a child, ERRNO mode: EPERM otherwise).
 */
START_TEST(seccomp_allows_files_update_only)
{
	struct iothread *io = fixed_ring();
	struct sandbox *sb;
	pid_t pid;
	int st;

	if (!io)
		return;
	ck_assert_int_eq(sandbox_build(VMM_SECCOMP_ERRNO, &sb), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int ring = iothread_ring_fd(io), none = -1, ok = 0;
		struct io_uring_files_update up = {
			.offset = 5, .fds = (uint64_t)(uintptr_t)&none,
		};

		if (sandbox_install(sb, SANDBOX_CLASS_IO))
			_exit(10);
		/* Passes the filter (the kernel answers: 1 slot updated). */
		if (syscall(__NR_io_uring_register, ring,
			    IORING_REGISTER_FILES_UPDATE, &up, 1) == 1)
			ok |= 1;
		errno = 0;
		if (syscall(__NR_io_uring_register, ring, IORING_REGISTER_BUFFERS,
			    NULL, 0) < 0 && errno == EPERM)
			ok |= 2;
		errno = 0;
		if (syscall(__NR_io_uring_register, ring, IORING_UNREGISTER_FILES,
			    NULL, 0) < 0 && errno == EPERM)
			ok |= 4;
		_exit(ok == 7 ? 0 : 20 + ok);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: 0x%x", st);
	sandbox_free(sb);
	iothread_destroy(io);
}
END_TEST

/* ---- the virtio-blk device on such rings ---------------------------------- */

#define NQ 2
#define QSIZE 16
#define RAM_SIZE (8ull << 20)
#define IMG_SIZE (1ull << 20)

static struct {
	struct fv v;
	struct fake_guest g;
	struct iothread *io;
	struct virtio_blk *dev;
	int img;
	struct fg_vq vq[NQ];
	bool inited[NQ];
	int kick[NQ];
} D;

static uint8_t pat(uint64_t off)
{
	return (uint8_t)(off * 7 + (off >> 9));
}

static void dev_up(void)
{
	static uint8_t buf[IMG_SIZE];
	struct vblk_options bo = { .num_queues = NQ, .queue_size = QSIZE };
	struct virtio_blk_params dp = { .nr_iothreads = 1 };
	struct vpci_params vp = { .num_queues = NQ, .max_queue_size = QSIZE,
				  .ioeventfd_any_length = true };
	struct vblk *blk;

	memset(&D, 0, sizeof(D));
	ck_assert_int_eq(fg_init(&D.g, RAM_SIZE), 0);
	ck_assert_int_eq(fv_init(&D.v, -1, FV_MMIO_BASE, FV_MMIO_SIZE, &D.g.mem), 0);
	D.img = fg_tmp_image(IMG_SIZE);
	ck_assert_int_ge(D.img, 0);
	for (uint64_t i = 0; i < IMG_SIZE; i++)
		buf[i] = pat(i);
	ck_assert_int_eq(pwrite(D.img, buf, IMG_SIZE, 0), (ssize_t)IMG_SIZE);
	ck_assert_int_eq(iothread_create(0, 32, &D.io), 0);
	ck_assert_int_eq(iothread_start(D.io), 0);
	bo.fd = D.img;
	ck_assert_int_eq(vblk_open(&bo, &blk), 0);
	dp.blk = blk;
	dp.iothreads = &D.io;
	ck_assert_int_eq(virtio_blk_create(&dp, &D.dev), 0);
	vp.bus = D.v.bus;
	vp.irq = D.v.irq;
	vp.mem = &D.g.mem;
	vp.ops = virtio_blk_ops();
	vp.dev = D.dev;
	ck_assert_int_eq(vpci_create(&vp, &D.v.t), 0);
	ck_assert_int_eq(fv_probe(&D.v), 0);
}

/* Reset and bring up as the Linux driver, fresh rings. */
static void drv_up(void)
{
	const uint64_t f = (1ull << VIRTIO_F_VERSION_1) |
			   (1ull << VIRTIO_RING_F_EVENT_IDX);

	ck_assert_int_eq(fv_negotiate(&D.v, f, NULL), 0);
	fv_msix_ctrl(&D.v, MSIX_CTRL_ENABLE | MSIX_CTRL_MASKALL);
	for (unsigned int v = 0; v <= NQ; v++) {
		fv_msix_write(&D.v, v, 0xfee00000ull | (uint64_t)v << 12, 0x4000 + v);
		fv_msix_mask(&D.v, v, false);
	}
	fv_msix_ctrl(&D.v, MSIX_CTRL_ENABLE);
	FV_COMMON_WR(&D.v, MSIX, 0, 2);
	for (unsigned int q = 0; q < NQ; q++) {
		if (D.inited[q])
			fg_vq_destroy(&D.vq[q]);
		ck_assert_int_eq(fg_vq_init(&D.g, &D.vq[q], QSIZE,
					    1ull << VIRTIO_RING_F_EVENT_IDX), 0);
		D.inited[q] = true;
		fv_queue_setup(&D.v, q, QSIZE, D.vq[q].desc_gpa, D.vq[q].avail_gpa,
			       D.vq[q].used_gpa, (uint16_t)(q + 1));
	}
	fv_status_add(&D.v, VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert(fv_status(&D.v) & VIRTIO_CONFIG_S_DRIVER_OK);
	for (unsigned int q = 0; q < NQ; q++) {
		D.kick[q] = fv_kvm_kick_fd(D.v.kvm, fv_notify_addr(&D.v, q));
		ck_assert_int_ge(D.kick[q], 0);
	}
}

static void dev_down(void)
{
	vpci_destroy(D.v.t);
	D.v.t = NULL;
	virtio_blk_destroy(D.dev);
	iothread_destroy(D.io);
	fv_destroy(&D.v);
	for (unsigned int q = 0; q < NQ; q++)
		if (D.inited[q])
			fg_vq_destroy(&D.vq[q]);
	fg_destroy(&D.g);
	close(D.img);
}

/* One 4 KiB read on @q at @sector, through the I/O thread's ring. */
static void one_read(unsigned int q, uint64_t sector)
{
	uint64_t data = fg_alloc(&D.g, 4096, 4096);
	struct fg_buf b = { data, 4096, true };
	uint64_t deadline = test_now_ms() + WAIT_MS;
	struct fg_blk_req r;
	uint32_t id, len;
	const uint8_t *p;

	ck_assert_uint_ne(data, 0);
	ck_assert_int_eq(fg_blk_add(&D.vq[q], VIRTIO_BLK_T_IN, sector, &b, 1,
				    false, &r), 0);
	if (fg_vq_publish(&D.vq[q]))
		ck_assert_int_eq(eventfd_write(D.kick[q], 1), 0);
	while (!fg_vq_get_used(&D.vq[q], &id, &len)) {
		ck_assert_msg(test_now_ms() < deadline, "queue %u: no completion", q);
		usleep(200);
	}
	ck_assert_uint_eq(id, (uint32_t)r.head);
	ck_assert_uint_eq(len, 4096 + 1);
	ck_assert_uint_eq(fg_blk_status(&D.g, &r), VIRTIO_BLK_S_OK);
	p = fg_ptr(&D.g, data, 4096);
	for (unsigned int i = 0; i < 4096; i++)
		if (p[i] != pat(sector * SECTOR + i))
			ck_abort_msg("queue %u sector %llu byte %u wrong", q,
				     (unsigned long long)sector, i);
}

/* Entries of the ring's registered table the kernel shows in fdinfo (-1:
 * it did not list them: the ring lock was busy). */
static int kernel_files(void)
{
	char path[64], line[256];
	int n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", iothread_ring_fd(D.io));
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned int slot;
		char rest[200];

		if (!strncmp(line, "UserFiles:", 10)) {
			n = 0;
			continue;
		}
		if (!strncmp(line, "UserBufs:", 9))
			break;
		/* "%5u: name" per slot with a file ("<none>" on 6.1). */
		if (n >= 0 && sscanf(line, " %u: %199s", &slot, rest) == 2 &&
		    strcmp(rest, "<none>"))
			n++;
	}
	fclose(f);
	return n;
}

static int kernel_files_settled(unsigned int want)
{
	int n = -1;

	for (int i = 0; i < 50; i++) {
		n = kernel_files();
		if (n == (int)want)
			break;
		usleep(20000);
	}
	return n;
}

/*
 * Requests are served through registered files; 50 resets later the table
 * has not changed at all (no FILES_UPDATE), reads still work, and the
 * teardown gives every slot back.
 */
START_TEST(device_io_and_resets_keep_the_table)
{
	struct iothread_stats st0, st;
	int kf;

	dev_up();
	if (!iothread_ring_fixed_files(D.io)) {
		printf("uring_files: no registered-file ring here (kernel < 5.10?)\n");
		dev_down();
		return;
	}
	drv_up();
	for (unsigned int q = 0; q < NQ; q++)
		one_read(q, 8 + q);
	iothread_get_stats(D.io, &st0);
	/* stop + call, and per queue its kick eventfd and its engine's image */
	ck_assert_uint_eq(st0.files, 2 + 2 * NQ);
	kf = kernel_files_settled(st0.files);
	printf("uring_files: %u files registered (kernel lists %d), %llu updates\n",
	       st0.files, kf, (unsigned long long)st0.file_updates);
	if (kf >= 0)
		ck_assert_int_eq(kf, (int)st0.files);
	for (unsigned int i = 0; i < 50; i++) {
		drv_up(); /* reset + bring-up: queues detached and attached */
		one_read(i % NQ, 100 + i);
	}
	iothread_get_stats(D.io, &st);
	printf("uring_files: after 50 resets: %u files, %llu updates\n", st.files,
	       (unsigned long long)st.file_updates);
	ck_assert_uint_eq(st.files, st0.files);
	ck_assert_uint_eq(st.file_updates, st0.file_updates);
	kf = kernel_files_settled(st.files);
	if (kf >= 0)
		ck_assert_int_eq(kf, (int)st.files);

	/* Teardown with the thread still running: every slot back. */
	vpci_destroy(D.v.t);
	D.v.t = NULL;
	virtio_blk_destroy(D.dev);
	D.dev = NULL;
	iothread_get_stats(D.io, &st);
	ck_assert_uint_eq(st.files, 2);
	kf = kernel_files_settled(2);
	if (kf >= 0)
		ck_assert_int_eq(kf, 2);
	iothread_destroy(D.io);
	fv_destroy(&D.v);
	for (unsigned int q = 0; q < NQ; q++)
		fg_vq_destroy(&D.vq[q]);
	fg_destroy(&D.g);
	close(D.img);
}
END_TEST

/* Teardown in the machine's order: the thread is stopped before the
 * device is destroyed (no kernel call then), and nothing leaks. */
START_TEST(device_teardown_after_stop)
{
	dev_up();
	drv_up();
	one_read(0, 3);
	one_read(1, 4);
	vpci_quiesce(D.v.t);
	iothread_stop(D.io);
	dev_down();
}
END_TEST

static Suite *uring_files_suite(void)
{
	Suite *s = suite_create("uring_files");
	TCase *tc = tcase_create("registered files");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, unregistered_fd_refused);
	tcase_add_test(tc, only_files_update_registers);
	tcase_add_test(tc, table_full);
	tcase_add_test(tc, seccomp_allows_files_update_only);
	tcase_add_test(tc, device_io_and_resets_keep_the_table);
	tcase_add_test(tc, device_teardown_after_stop);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(uring_files_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
