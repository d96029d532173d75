/* SPDX-License-Identifier: MIT */
/*
 * The virtio-fs device's vhost-user front end against Debian's own back
 * end, QEMU 7.2's virtiofsd, KVM-free: guest RAM is a memfd, this test
 * is the guest's driver.  It connects (virtiofsd offers MQ, REPLY_ACK,
 * CONFIGURE_MEM_SLOTS; one request queue), hands over hiprio and the
 * request queue, puts a FUSE_INIT request on the request queue, kicks,
 * and reads virtiofsd's answer from the used ring after the call eventfd
 * fires; then stops the rings (GET_VRING_BASE: 1 consumed), and kills
 * virtiofsd to see the front end break cleanly; and virtiofsd killed while
 * the rings run: the device answers the next requests itself with EIO.
 * Skipped (passes) without
 * virtiofsd or root (its sandbox).
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs/virtio-fs.h"
#include "memory.h"

#define VIRTIOFSD "/usr/lib/qemu/virtiofsd"
#define RAM (8ull << 20)
#define QSZ 64
#define RING(q) (0x10000ull * ((q) + 1))
#define REQ_GPA 0x100000ull
#define REPLY_GPA 0x101000ull

static struct guest_mem mem;
static char dir[64], sock[96];
static pid_t child;

/* Whether the Unix socket bound at @path listens yet: the file appears at
 * bind(), before listen(), and a connect() between the two is refused
 * (seen: -ECONNREFUSED from virtio_fs_create() on a loaded machine).  A
 * probe connect() would take virtiofsd's one session, so look in
 * /proc/net/unix for the path with __SO_ACCEPTCON (00010000). */
static bool listening(const char *path)
{
	FILE *f = fopen("/proc/net/unix", "r");
	char line[512];
	bool yes = false;

	if (!f)
		return true; /* cannot tell: the old wait */
	while (!yes && fgets(line, sizeof(line), f)) {
		char flags[16], p[300];

		p[0] = 0;
		if (sscanf(line, "%*s %*s %*s %15s %*s %*s %*s %299s", flags, p) == 2 &&
		    !strcmp(p, path) && !strcmp(flags, "00010000"))
			yes = true;
	}
	fclose(f);
	return yes;
}

static int start_virtiofsd(void)
{
	struct stat st;

	snprintf(dir, sizeof(dir), "/tmp/check_vu_vfsd.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/s", dir);
	child = fork();
	if (!child) {
		char s[128], src[128];

		snprintf(s, sizeof(s), "--socket-path=%s", sock);
		snprintf(src, sizeof(src), "source=%s", dir);
		execl(VIRTIOFSD, VIRTIOFSD, s, "-o", src, "-o", "sandbox=chroot",
		      (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		if (!stat(sock, &st) && listening(sock))
			return 0;
		usleep(10000);
	}
	return -1;
}

static void put_desc(unsigned int q, unsigned int i, uint64_t addr, uint32_t len,
		     uint16_t flags, uint16_t next)
{
	uint8_t *d = guest_mem_ptr(&mem, RING(q) + 16 * i, 16);

	memcpy(d, &addr, 8);
	memcpy(d + 8, &len, 4);
	memcpy(d + 12, &flags, 2);
	memcpy(d + 14, &next, 2);
}

START_TEST(fuse_init_through_virtiofsd)
{
	struct guest_layout l = { 0, 0, 0 };
	struct virtio_fs_params p = { .tag = "t", .mem = &mem, .num_queues = 5,
				      .queue_size = QSZ, .timeout_ms = 2000,
				      .name = "fs test" };
	struct virtio_queue q[2];
	struct virtio_fs *fs;
	struct virtio_device vd;
	struct pollfd pf;
	uint8_t req[56] = { 0 };
	uint32_t v32;
	uint16_t v16;
	int32_t err;
	eventfd_t ev;

	if (access(VIRTIOFSD, X_OK) || geteuid()) {
		printf("skipped: needs %s and root\n", VIRTIOFSD);
		return;
	}
	ck_assert_int_eq(guest_mem_init(&mem, RAM, GUEST_MEM_MEMFD, &l), 0);
	ck_assert_int_eq(start_virtiofsd(), 0);
	p.socket = sock;
	ck_assert_int_eq(virtio_fs_create(&p, &fs), 0);
	/* virtiofsd 7.2 serves hiprio and one request queue. */
	ck_assert_uint_eq(virtio_fs_request_queues(fs), 1);
	virtio_fs_virtio(fs, &vd);
	ck_assert_uint_eq(vd.ops->device_id, 26);
	ck_assert(vd.external_queues);
	memset(q, 0, sizeof(q));
	for (unsigned int i = 0; i < 2; i++) {
		q[i].index = i;
		q[i].enabled = true;
		q[i].kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		q[i].call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		ck_assert_int_eq(virtq_start(&q[i].vq, &mem, QSZ, RING(i),
					     RING(i) + 0x1000, RING(i) + 0x2000,
					     false, false), 0);
	}
	ck_assert_int_eq(vd.ops->set_features(fs, vd.ops->features(fs)), 0);
	ck_assert_int_eq(vd.ops->start(fs, q, 2), 0);

	/* FUSE_INIT (opcode 26), protocol 7.31, on the request queue. */
	v32 = sizeof(req);
	memcpy(req, &v32, 4);
	v32 = 26;
	memcpy(req + 4, &v32, 4);
	req[8] = 1; /* unique */
	v32 = 7;
	memcpy(req + 40, &v32, 4);
	v32 = 31;
	memcpy(req + 44, &v32, 4);
	memcpy(guest_mem_ptr(&mem, REQ_GPA, sizeof(req)), req, sizeof(req));
	put_desc(1, 0, REQ_GPA, sizeof(req), 1 /* NEXT */, 1);
	put_desc(1, 1, REPLY_GPA, 4096, 2 /* WRITE */, 0);
	v16 = 0;
	memcpy(guest_mem_ptr(&mem, RING(1) + 0x1000 + 4, 2), &v16, 2); /* ring[0] */
	v16 = 1;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	memcpy(guest_mem_ptr(&mem, RING(1) + 0x1000 + 2, 2), &v16, 2); /* idx */
	/* libvhost-user signals every call eventfd once when it gets it
	 * (a guest sees one spurious interrupt): consume that first. */
	(void)eventfd_read(q[1].call_fd, &ev);
	ck_assert_int_eq(eventfd_write(q[1].kick_fd, 1), 0);
	pf = (struct pollfd){ .fd = q[1].call_fd, .events = POLLIN };
	ck_assert_int_eq(poll(&pf, 1, 5000), 1);
	memcpy(&v16, guest_mem_ptr(&mem, RING(1) + 0x2000 + 2, 2), 2);
	ck_assert_uint_eq(v16, 1); /* used idx */
	memcpy(&v32, guest_mem_ptr(&mem, REPLY_GPA, 4), 4);
	memcpy(&err, guest_mem_ptr(&mem, REPLY_GPA + 4, 4), 4);
	ck_assert_int_eq(err, 0);
	ck_assert_uint_ge(v32, 16 + 24); /* out header + fuse_init_out */
	memcpy(&v32, guest_mem_ptr(&mem, REPLY_GPA + 16, 4), 4);
	ck_assert_uint_eq(v32, 7); /* major */

	vd.ops->stop(fs);
	ck_assert_uint_eq(q[1].vq.last_avail_idx, 1);
	/* The back end dies: the next start fails cleanly. */
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	ck_assert_int_ne(vd.ops->start(fs, q, 2), 0);
	virtio_fs_destroy(fs);
	for (unsigned int i = 0; i < 2; i++) {
		close(q[i].kick_fd);
		close(q[i].call_fd);
	}
	guest_mem_destroy(&mem);
	unlink(sock);
	rmdir(dir);
}
END_TEST

static int resets;

static void count_reset(struct virtio_queue *q, const char *why)
{
	(void)q;
	(void)why;
	__atomic_fetch_add(&resets, 1, __ATOMIC_SEQ_CST);
}

static const struct virtio_transport_ops test_t_ops = { .needs_reset = count_reset };

/* Put a FUSE request (opcode @op, @unique) with a 4 KiB reply buffer as
 * avail entry @slot of the request queue, publish it and kick. */
static void post_request(struct virtio_queue *q, unsigned int slot,
			 uint32_t op, uint64_t unique)
{
	uint8_t req[40] = { 0 };
	uint32_t v32 = sizeof(req);
	uint16_t v16 = (uint16_t)(2 * slot);
	uint64_t at = REQ_GPA + 0x2000 * slot;

	memcpy(req, &v32, 4);
	memcpy(req + 4, &op, 4);
	memcpy(req + 8, &unique, 8);
	memcpy(guest_mem_ptr(&mem, at, sizeof(req)), req, sizeof(req));
	memset(guest_mem_ptr(&mem, at + 0x1000, 16), 0xff, 16);
	put_desc(1, 2 * slot, at, sizeof(req), 1 /* NEXT */, (uint16_t)(2 * slot + 1));
	put_desc(1, 2 * slot + 1, at + 0x1000, 4096, 2 /* WRITE */, 0);
	memcpy(guest_mem_ptr(&mem, RING(1) + 0x1000 + 4 + 2 * slot, 2), &v16, 2);
	v16 = (uint16_t)(slot + 1);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	memcpy(guest_mem_ptr(&mem, RING(1) + 0x1000 + 2, 2), &v16, 2); /* idx */
	ck_assert_int_eq(eventfd_write(q[1].kick_fd, 1), 0);
}

/* virtiofsd is killed while the device runs: the watch thread sets
 * NEEDS_RESET and answers the guest's next requests itself with EIO and
 * their unique ids, an interrupt each time; the stop is clean. */
START_TEST(dead_back_end_answers_eio)
{
	struct guest_layout l = { 0, 0, 0 };
	struct virtio_fs_params p = { .tag = "t", .mem = &mem, .num_queues = 2,
				      .queue_size = QSZ, .timeout_ms = 2000,
				      .name = "fs test" };
	struct virtio_queue q[2];
	struct virtio_fs *fs;
	struct virtio_device vd;
	struct vu_fe_stats st;
	struct pollfd pf;
	uint32_t v32;
	uint64_t u64;
	uint16_t v16;
	int32_t err;
	eventfd_t ev;

	if (access(VIRTIOFSD, X_OK) || geteuid()) {
		printf("skipped: needs %s and root\n", VIRTIOFSD);
		return;
	}
	resets = 0;
	ck_assert_int_eq(guest_mem_init(&mem, RAM, GUEST_MEM_MEMFD, &l), 0);
	ck_assert_int_eq(start_virtiofsd(), 0);
	p.socket = sock;
	ck_assert_int_eq(virtio_fs_create(&p, &fs), 0);
	virtio_fs_virtio(fs, &vd);
	memset(q, 0, sizeof(q));
	for (unsigned int i = 0; i < 2; i++) {
		q[i].index = i;
		q[i].enabled = true;
		q[i].t_ops = &test_t_ops;
		q[i].kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		q[i].call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		ck_assert_int_eq(virtq_start(&q[i].vq, &mem, QSZ, RING(i),
					     RING(i) + 0x1000, RING(i) + 0x2000,
					     false, false), 0);
	}
	ck_assert_int_eq(vd.ops->set_features(fs, vd.ops->features(fs)), 0);
	ck_assert_int_eq(virtio_fs_watch(fs, NULL, NULL), 0);
	ck_assert_int_eq(vd.ops->start(fs, q, 2), 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	for (int i = 0; i < 500 && !__atomic_load_n(&resets, __ATOMIC_SEQ_CST); i++)
		usleep(10000);
	ck_assert_int_eq(__atomic_load_n(&resets, __ATOMIC_SEQ_CST), 1);
	/* Two requests, one after the other: GETATTR (3), LOOKUP (1). */
	for (unsigned int k = 0; k < 2; k++) {
		(void)eventfd_read(q[1].call_fd, &ev);
		post_request(q, k, k ? 1 : 3, 0x1000 + k);
		pf = (struct pollfd){ .fd = q[1].call_fd, .events = POLLIN };
		ck_assert_int_eq(poll(&pf, 1, 5000), 1);
		memcpy(&v16, guest_mem_ptr(&mem, RING(1) + 0x2000 + 2, 2), 2);
		ck_assert_uint_eq(v16, k + 1); /* used idx */
		memcpy(&v32, guest_mem_ptr(&mem, RING(1) + 0x2000 + 4 + 8 * k + 4, 4), 4);
		ck_assert_uint_eq(v32, 16); /* used len: the out header */
		memcpy(&v32, guest_mem_ptr(&mem, REQ_GPA + 0x2000 * k + 0x1000, 4), 4);
		memcpy(&err, guest_mem_ptr(&mem, REQ_GPA + 0x2000 * k + 0x1004, 4), 4);
		memcpy(&u64, guest_mem_ptr(&mem, REQ_GPA + 0x2000 * k + 0x1008, 8), 8);
		ck_assert_uint_eq(v32, 16);
		ck_assert_int_eq(err, -EIO);
		ck_assert_uint_eq(u64, 0x1000 + k);
	}
	virtio_fs_get_stats(fs, &st);
	ck_assert_uint_eq(st.orphaned, 2);
	ck_assert_uint_eq(st.disconnects, 1);
	vd.ops->stop(fs);
	virtio_fs_unwatch(fs);
	virtio_fs_destroy(fs);
	for (unsigned int i = 0; i < 2; i++) {
		close(q[i].kick_fd);
		close(q[i].call_fd);
	}
	guest_mem_destroy(&mem);
	unlink(sock);
	rmdir(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vu_virtiofsd");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, fuse_init_through_virtiofsd);
	tcase_add_test(tc, dead_back_end_answers_eio);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
