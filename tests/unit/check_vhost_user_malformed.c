/* SPDX-License-Identifier: MIT */
/*
 * Malformed vhost-user messages get an error and a closed connection,
 * never a crash: each case below is sent to a running minivmm-blkd (seccomp
 * on), which must close the connection (or, for a well-formed request with
 * bad values and REPLY_ACK, answer "failed" and carry on), keep running,
 * close every file descriptor the message carried, and serve the next
 * front end normally.  The fuzz target tests/fuzz/fuzz_vhost_user.c covers
 * the same parser and state machine with arbitrary input.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "vu_rig.h"

#define BIT(n) (1ull << (n))
#define FEATURES                                                            \
	(BIT(VIRTIO_F_VERSION_1) | BIT(VIRTIO_RING_F_EVENT_IDX) |             \
	 BIT(VIRTIO_RING_F_INDIRECT_DESC) | BIT(VIRTIO_BLK_F_FLUSH))

static struct vr R;
static int baseline_fds;

static void daemon_ok(const char *after)
{
	char log[2048];
	int st = 0;

	if (!vr_alive(&R, &st)) {
		vr_log_tail(&R, log, sizeof(log));
		ck_abort_msg("minivmm-blkd died (status %#x) after %s:\n%s", st, after, log);
	}
}

/* The next front end gets full service: negotiation and a read. */
static void next_front_end_works(const char *after)
{
	uint8_t b[4096];

	daemon_ok(after);
	ck_assert_msg(vr_connect(&R, 1, 64, FEATURES, 0) == 0,
		      "no service after %s", after);
	ck_assert_int_eq(vr_req(&R, 0, VIRTIO_BLK_T_IN, 0, b, sizeof(b)), VIRTIO_BLK_S_OK);
	ck_assert_uint_eq(b[100], vr_pat(100));
	vr_disconnect(&R);
	daemon_ok(after);
}

/* After the daemon closed a connection, its fds are back to the idle
 * count: nothing the refused message carried stayed open. */
static void fds_back(const char *after)
{
	int n = -1;

	/* The back end has closed the connection, but give its teardown
	 * (which runs just before the close) a moment on a loaded host. */
	for (int i = 0; i < 200; i++) {
		n = vr_fd_count(&R);
		if (n == baseline_fds)
			return;
		usleep(10000);
	}
	ck_abort_msg("after %s: %d fds open, %d when idle", after, n, baseline_fds);
}

static void setup(void)
{
	struct vr_opts o = { .disk_extra = ",num-queues=2" };

	ck_assert_int_eq(vr_spawn(&R, BLKD_BIN, &o), 0);
	/* Idle fd count, once it listens. */
	ck_assert_int_eq(vuf_connect(&R.f, R.sock, 10000), 0);
	vuf_close(&R.f);
	usleep(50000);
	baseline_fds = vr_fd_count(&R);
	ck_assert_int_gt(baseline_fds, 0);
}

static void teardown(void)
{
	int st;

	daemon_ok("the test");
	st = vr_stop(&R);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %#x", st);
}

/* Send @req raw on a fresh connection; the back end must hang up. */
static void expect_closed(const char *what, uint32_t req, uint32_t flags,
			  const void *payload, uint32_t size, const int *fds,
			  unsigned int nfds)
{
	struct vuf f;

	ck_assert_int_eq(vuf_connect(&f, R.sock, 10000), 0);
	ck_assert_int_eq(vuf_send(&f, req, flags, payload, size, fds, nfds), 0);
	ck_assert_msg(vuf_peer_closed(&f, 5000), "%s: connection not closed", what);
	vuf_close(&f);
	daemon_ok(what);
	fds_back(what);
}

START_TEST(bad_headers)
{
	uint8_t big[300];
	uint64_t v = 0;
	int efd[10];

	memset(big, 0, sizeof(big));
	expect_closed("version 2", VHOST_USER_GET_FEATURES, 0x2, NULL, 0, NULL, 0);
	expect_closed("version 0", VHOST_USER_GET_FEATURES, 0x0, NULL, 0, NULL, 0);
	expect_closed("a reply as request", VHOST_USER_GET_FEATURES,
		      VHOST_USER_VERSION | VHOST_USER_REPLY, NULL, 0, NULL, 0);
	expect_closed("unknown request", 99, VHOST_USER_VERSION, NULL, 0, NULL, 0);
	expect_closed("request 0", 0, VHOST_USER_VERSION, NULL, 0, NULL, 0);
	expect_closed("log base (never offered)", VHOST_USER_SET_LOG_BASE,
		      VHOST_USER_VERSION, &v, 8, NULL, 0);
	expect_closed("payload larger than any", VHOST_USER_GET_FEATURES,
		      VHOST_USER_VERSION, big, sizeof(big), NULL, 0);
	expect_closed("SET_FEATURES of 4 bytes", VHOST_USER_SET_FEATURES,
		      VHOST_USER_VERSION, &v, 4, NULL, 0);
	expect_closed("SET_VRING_NUM of 12 bytes", VHOST_USER_SET_VRING_NUM,
		      VHOST_USER_VERSION, big, 12, NULL, 0);
	/* File descriptors where none belong, or too many. */
	for (unsigned int i = 0; i < 10; i++) {
		efd[i] = eventfd(0, EFD_CLOEXEC);
		ck_assert_int_ge(efd[i], 0);
	}
	expect_closed("an fd on GET_QUEUE_NUM", VHOST_USER_GET_QUEUE_NUM,
		      VHOST_USER_VERSION, NULL, 0, efd, 1);
	expect_closed("10 fds", VHOST_USER_GET_FEATURES, VHOST_USER_VERSION, NULL, 0,
		      efd, 10);
	expect_closed("SET_VRING_KICK without its fd", VHOST_USER_SET_VRING_KICK,
		      VHOST_USER_VERSION, &v, 8, NULL, 0);
	expect_closed("SET_VRING_CALL with 2 fds", VHOST_USER_SET_VRING_CALL,
		      VHOST_USER_VERSION, &v, 8, efd, 2);
	for (unsigned int i = 0; i < 10; i++)
		close(efd[i]);
	next_front_end_works("bad headers");
}
END_TEST

START_TEST(bad_tables)
{
	struct vhost_user_memory m = { .nregions = 2 };
	struct vhost_user_config c = { .offset = 0, .size = 250 };
	int fd = memfd_create("t", MFD_CLOEXEC);
	int fds[2];

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 1 << 20), 0);
	fds[0] = fds[1] = fd;
	m.regions[0] = (struct vhost_user_mem_region){ 0, 1 << 20, 0x10000000, 0 };
	m.regions[1] = (struct vhost_user_mem_region){ 1 << 20, 1 << 20, 0x20000000, 0 };
	/* Region count and size disagree; region count and fds disagree. */
	expect_closed("memory table size", VHOST_USER_SET_MEM_TABLE, VHOST_USER_VERSION,
		      &m, 8 + 32, fds, 2);
	expect_closed("memory table fds", VHOST_USER_SET_MEM_TABLE, VHOST_USER_VERSION,
		      &m, 8 + 64, fds, 1);
	m.nregions = 9;
	expect_closed("9 regions", VHOST_USER_SET_MEM_TABLE, VHOST_USER_VERSION, &m,
		      8 + 64, fds, 2);
	m.nregions = 0;
	expect_closed("0 regions", VHOST_USER_SET_MEM_TABLE, VHOST_USER_VERSION, &m,
		      8, NULL, 0);
	/* Well-formed, but the region lies beyond the end of its file: refused
	 * (no SIGBUS later), and without REPLY_ACK the connection ends. */
	m.nregions = 1;
	m.regions[0].memory_size = 2 << 20;
	expect_closed("region beyond its file", VHOST_USER_SET_MEM_TABLE,
		      VHOST_USER_VERSION, &m, 8 + 32, fds, 1);
	m.regions[0].memory_size = 0;
	expect_closed("region of size 0", VHOST_USER_SET_MEM_TABLE, VHOST_USER_VERSION,
		      &m, 8 + 32, fds, 1);
	/* Offsets not 4 KiB aligned: host pointers would not be aligned as
	 * their guest addresses (a used ring at a misaligned host address). */
	m.regions[0] = (struct vhost_user_mem_region){ 0, 8192, 0x10000000, 1 };
	expect_closed("region at an unaligned file offset", VHOST_USER_SET_MEM_TABLE,
		      VHOST_USER_VERSION, &m, 8 + 32, fds, 1);
	m.regions[0] = (struct vhost_user_mem_region){ 0x802, 8192, 0x10000000, 0 };
	expect_closed("region at an unaligned guest address", VHOST_USER_SET_MEM_TABLE,
		      VHOST_USER_VERSION, &m, 8 + 32, fds, 1);
	m.regions[0] = (struct vhost_user_mem_region){ UINT64_MAX - 4095, 8192, 0, 0 };
	expect_closed("region wrapping around", VHOST_USER_SET_MEM_TABLE,
		      VHOST_USER_VERSION, &m, 8 + 32, fds, 1);
	close(fd);
	/* A config request whose size disagrees with its payload, or beyond
	 * 256 bytes. */
	expect_closed("GET_CONFIG size", VHOST_USER_GET_CONFIG, VHOST_USER_VERSION, &c,
		      12 + 8, NULL, 0);
	c.size = 300;
	expect_closed("GET_CONFIG of 300 bytes", VHOST_USER_GET_CONFIG,
		      VHOST_USER_VERSION, &c, 12 + 256, NULL, 0);
	next_front_end_works("bad tables");
}
END_TEST

/* The front end stops in the middle of a message. */
START_TEST(cut_short)
{
	struct vhost_user_hdr h = { VHOST_USER_SET_FEATURES, VHOST_USER_VERSION, 8 };
	struct vuf f;

	ck_assert_int_eq(vuf_connect(&f, R.sock, 10000), 0);
	ck_assert_int_eq(write(f.sock, &h, 6), 6); /* half a header */
	vuf_close(&f);
	usleep(100000);
	daemon_ok("half a header");
	ck_assert_int_eq(vuf_connect(&f, R.sock, 10000), 0);
	ck_assert_int_eq(write(f.sock, &h, sizeof(h)), (ssize_t)sizeof(h));
	ck_assert_int_eq(write(f.sock, "abc", 3), 3); /* 3 of 8 payload bytes */
	vuf_close(&f);
	usleep(100000);
	fds_back("a cut payload");
	next_front_end_works("messages cut short");
}
END_TEST

/*
 * Well-formed requests with values the back end refuses: with REPLY_ACK
 * the front end hears "failed" (non-zero) and the connection goes on; the
 * device state is untouched.
 */
START_TEST(refused_with_ack)
{
	struct vhost_user_vring_state s;
	struct vhost_user_vring_addr a = { 0 };
	uint64_t feat = 1ull << 63, ack = 0;
	uint8_t b[4096];

	ck_assert_int_eq(vr_connect(&R, 1, 64, FEATURES, 0), 0);
	ck_assert(R.f.reply_ack);
	/* Features never offered. */
	ck_assert_int_eq(vuf_set(&R.f, VHOST_USER_SET_FEATURES, &feat, 8, NULL, 0), -EIO);
	/* Ring index out of range, sizes out of range. */
	s = (struct vhost_user_vring_state){ 7, 64 };
	ck_assert_int_eq(vuf_set(&R.f, VHOST_USER_SET_VRING_NUM, &s, 8, NULL, 0), -EIO);
	s = (struct vhost_user_vring_state){ 1, 4096 };
	ck_assert_int_eq(vuf_set(&R.f, VHOST_USER_SET_VRING_NUM, &s, 8, NULL, 0), -EIO);
	s = (struct vhost_user_vring_state){ 1, 100 }; /* not a power of two */
	ck_assert_int_eq(vuf_set(&R.f, VHOST_USER_SET_VRING_NUM, &s, 8, NULL, 0), -EIO);
	s = (struct vhost_user_vring_state){ 1, 70000 };
	ck_assert_int_eq(vuf_set(&R.f, VHOST_USER_SET_VRING_BASE, &s, 8, NULL, 0), -EIO);
	/* A running ring cannot be resized. */
	s = (struct vhost_user_vring_state){ 0, 32 };
	ck_assert_int_eq(vuf_set(&R.f, VHOST_USER_SET_VRING_NUM, &s, 8, NULL, 0), -EIO);
	/* Ring addresses outside the memory table (ring 1: num 64). */
	s = (struct vhost_user_vring_state){ 1, 64 };
	ck_assert_int_eq(vuf_set(&R.f, VHOST_USER_SET_VRING_NUM, &s, 8, NULL, 0), 0);
	a = (struct vhost_user_vring_addr){ 1, 0, 0x1000, 0x3000, 0x2000, 0 };
	ck_assert_int_eq(vuf_set(&R.f, VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL, 0), 0);
	{
		uint64_t k = 1;
		int kfd = eventfd(0, EFD_CLOEXEC);

		/* With the kick and enabled it would start: its addresses
		 * are bad. */
		ck_assert_int_eq(vuf_set(&R.f, VHOST_USER_SET_VRING_KICK, &k, 8, &kfd, 1), 0);
		ck_assert_int_eq(vuf_ring_enable(&R.f, 1, true), -EIO);
		close(kfd);
	}
	/* Dirty logging was never offered. */
	a.flags = VHOST_VRING_F_LOG;
	ck_assert_int_eq(vuf_set(&R.f, VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL, 0),
			 -EIO);
	/* Polling mode (kick without an fd). */
	feat = 0 | VHOST_USER_VRING_NOFD_MASK;
	ck_assert_int_eq(vuf_set(&R.f, VHOST_USER_SET_VRING_KICK, &feat, 8, NULL, 0), -EIO);
	/* SET_CONFIG outside the config space. */
	{
		struct vhost_user_config c = { .offset = 200, .size = 8 };

		ck_assert_int_eq(vuf_set(&R.f, VHOST_USER_SET_CONFIG, &c, 12 + 8, NULL, 0),
				 -EIO);
	}
	/* GET_INFLIGHT_FD: INFLIGHT_SHMFD was not offered. */
	{
		struct vhost_user_inflight in = { 0 };

		ck_assert_int_eq(vuf_send(&R.f, VHOST_USER_GET_INFLIGHT_FD,
					  VHOST_USER_VERSION, &in, sizeof(in), NULL, 0), 0);
		ck_assert(vuf_peer_closed(&R.f, 5000));
		vr_disconnect(&R);
		ck_assert_int_eq(vr_connect(&R, 1, 64, FEATURES, 0), 0);
	}
	/* Through all this, ring 0 kept working. */
	ck_assert_int_eq(vr_req(&R, 0, VIRTIO_BLK_T_IN, 8, b, sizeof(b)), VIRTIO_BLK_S_OK);
	ck_assert_uint_eq(b[7], vr_pat(8 * 512 + 7));
	/* Without NEED_REPLY the same refusal ends the connection. */
	s = (struct vhost_user_vring_state){ 9, 64 };
	ck_assert_int_eq(vuf_send(&R.f, VHOST_USER_SET_VRING_NUM, VHOST_USER_VERSION, &s,
				  8, NULL, 0), 0);
	ck_assert(vuf_peer_closed(&R.f, 5000));
	(void)ack;
	vr_disconnect(&R);
	fds_back("refused requests");
	next_front_end_works("refused requests");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vhost_user_malformed");
	TCase *tc = tcase_create("blkd");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, bad_headers);
	tcase_add_test(tc, bad_tables);
	tcase_add_test(tc, cut_short);
	tcase_add_test(tc, refused_with_ack);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
