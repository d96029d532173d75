/* SPDX-License-Identifier: MIT */
/*
 * minivmm-blkd across front ends (KVM-free, tests/harness/vu_rig.h):
 *  - many connections, ended every way a front end ends them (a clean
 *    GET_VRING_BASE stop, a close with requests in flight, a close after
 *    only the memory table, a close before anything): the daemon's open
 *    file descriptors come back to the same count and its resident memory
 *    does not grow, and every acknowledged write is in the image;
 *  - a front end process killed with SIGKILL in the middle of its writes:
 *    the next front end is served and finds every write the killed one
 *    had seen acknowledged (flushed) before it died.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "vu_rig.h"

#define BIT(n) (1ull << (n))
#define BLK 4096u
#define FEATURES                                                            \
	(BIT(VIRTIO_F_VERSION_1) | BIT(VIRTIO_RING_F_EVENT_IDX) |             \
	 BIT(VIRTIO_RING_F_INDIRECT_DESC) | BIT(VIRTIO_BLK_F_FLUSH) |          \
	 BIT(VIRTIO_BLK_F_MQ))

static struct vr R;

static void daemon_ok(const char *after)
{
	char log[2048];
	int st = 0;

	if (!vr_alive(&R, &st)) {
		vr_log_tail(&R, log, sizeof(log));
		ck_abort_msg("minivmm-blkd died (status %#x) after %s:\n%s", st, after, log);
	}
}

/* Block @blk's content as written by cycle @cycle. */
static void pattern(uint8_t *b, uint64_t blk, unsigned int cycle)
{
	for (unsigned int i = 0; i < BLK; i += 8) {
		uint64_t v = blk << 32 | cycle << 16 | i;

		memcpy(b + i, &v, 8);
	}
}

/* The daemon's fds and RSS once it is idle again (between front ends):
 * wait for the count to settle after the last disconnect. */
static int idle_fds(int want)
{
	int n = vr_fd_count(&R);

	for (int i = 0; i < 300 && n != want; i++) {
		usleep(10000);
		n = vr_fd_count(&R);
	}
	return n;
}

/* One front end's life, ended the @cycle % 4 way.  Writes two blocks at
 * a place of its own (acknowledged) and checks them later. */
static void one_cycle(unsigned int cycle)
{
	uint8_t w[BLK], rd[BLK];
	uint64_t blk = 16 + (uint64_t)(cycle % 64) * 4;
	uint32_t base;

	switch (cycle % 4) {
	case 0: /* clean: I/O, then GET_VRING_BASE on every ring, close */
	case 1: /* killed: I/O acknowledged, 32 more in flight, close */
		ck_assert_int_eq(vr_connect(&R, 2, 64, FEATURES, 4 << 20), 0);
		for (unsigned int q = 0; q < 2; q++) {
			pattern(w, blk + q, cycle);
			ck_assert_int_eq(vr_req(&R, q, VIRTIO_BLK_T_OUT, (blk + q) * 8, w, BLK),
					 VIRTIO_BLK_S_OK);
		}
		ck_assert_int_eq(vr_req(&R, 0, VIRTIO_BLK_T_FLUSH, 0, NULL, 0),
				 VIRTIO_BLK_S_OK);
		if (cycle % 4 == 0) {
			for (unsigned int q = 0; q < 2; q++)
				ck_assert_int_eq(vuf_get_vring_base(&R.f, q, &base), 0);
		} else {
			uint64_t gpa = fg_alloc(&R.g, 32 * BLK, 4096);
			struct fg_blk_req req;

			ck_assert_uint_ne(gpa, 0);
			for (unsigned int i = 0; i < 32; i++) {
				struct fg_buf b = { gpa + i * BLK, BLK, true };

				ck_assert_int_eq(fg_blk_add(&R.q[1].vq, VIRTIO_BLK_T_IN,
							    i * 8, &b, 1, true, &req), 0);
			}
			vr_kick(&R, 1);
		}
		vr_disconnect(&R);
		break;
	case 2: /* memory table only */
		ck_assert_int_eq(vr_connect(&R, 0, 64, FEATURES, 4 << 20), 0);
		vr_disconnect(&R);
		break;
	default: /* connect and go */
		ck_assert_int_eq(vr_connect_bare(&R), 0);
		vr_disconnect(&R);
		break;
	}
	daemon_ok("a front end's disconnect");
	/* What cycles 0/1 wrote is in the image. */
	if (cycle % 4 < 2)
		for (unsigned int q = 0; q < 2; q++) {
			pattern(w, blk + q, cycle);
			ck_assert_int_eq(vr_img_read(&R, (blk + q) * BLK, rd, BLK), 0);
			ck_assert_mem_eq(rd, w, BLK);
		}
}

START_TEST(no_leaks)
{
	struct vr_opts o = { .disk_extra = ",num-queues=2" };
	int fds0, fds1;
	long rss0, rss1;

	ck_assert_int_eq(vr_spawn(&R, BLKD_BIN, &o), 0);
	/* Warm up: the allocator's arenas, the rings' request pools, the
	 * engines (created at a queue's first start, kept). */
	for (unsigned int c = 0; c < 8; c++)
		one_cycle(c);
	fds0 = idle_fds(-1);
	rss0 = vr_rss_kib(&R);
	for (unsigned int c = 8; c < 8 + 64; c++)
		one_cycle(c);
	fds1 = idle_fds(fds0);
	rss1 = vr_rss_kib(&R);
	printf("minivmm-blkd after 8 front ends: %d fds, %ld KiB RSS; after 72: %d fds, %ld KiB\n",
	       fds0, rss0, fds1, rss1);
	ck_assert_int_eq(fds1, fds0);
	/* 64 connections of 4 MiB guest RAM each: a leaked mapping, eventfd
	 * or ring would show; allocator noise stays far below. */
	ck_assert_int_lt(rss1 - rss0, 1024);
	ck_assert_int_eq(vr_stop(&R), 0);
}
END_TEST

/*
 * A front end in a process of its own writes blocks 0, 1, 2... one at a
 * time, flushes after each, and reports each flushed block on a pipe; it
 * is SIGKILLed in the middle.  Every block it reported is in the image and
 * reads back through the next front end.
 */
START_TEST(front_end_killed)
{
	struct vr_opts o = { .disk_extra = ",num-queues=1" };
	uint8_t w[BLK], rd[BLK];
	unsigned int done = 0, k;
	int p[2];
	pid_t pid;

	ck_assert_int_eq(vr_spawn(&R, BLKD_BIN, &o), 0);
	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(p[0]);
		if (vr_connect(&R, 1, 256, FEATURES, 0))
			_exit(2);
		for (unsigned int b = 0;; b++) {
			pattern(w, b, 7);
			if (vr_req(&R, 0, VIRTIO_BLK_T_OUT, (uint64_t)b * 8, w, BLK) ||
			    vr_req(&R, 0, VIRTIO_BLK_T_FLUSH, 0, NULL, 0))
				_exit(3);
			if (write(p[1], &b, sizeof(b)) != sizeof(b))
				_exit(4);
			if (b == 2000)
				pause(); /* keep the connection */
		}
	}
	close(p[1]);
	/* Let it get well into its writes, then kill it mid-write. */
	while (done < 200 && read(p[0], &k, sizeof(k)) == sizeof(k))
		done = k + 1;
	ck_assert_int_ge(done, 200);
	kill(pid, SIGKILL);
	while (read(p[0], &k, sizeof(k)) == sizeof(k))
		done = k + 1; /* reported before it died */
	close(p[0]);
	waitpid(pid, NULL, 0);
	daemon_ok("a killed front end");
	ck_assert_int_eq(vr_connect(&R, 1, 256, FEATURES, 0), 0);
	for (unsigned int b = 0; b < done; b++) {
		pattern(w, b, 7);
		ck_assert_int_eq(vr_req(&R, 0, VIRTIO_BLK_T_IN, (uint64_t)b * 8, rd, BLK),
				 VIRTIO_BLK_S_OK);
		ck_assert_msg(!memcmp(rd, w, BLK), "block %u of %u lost", b, done);
		ck_assert_int_eq(vr_img_read(&R, (uint64_t)b * BLK, rd, BLK), 0);
		ck_assert_mem_eq(rd, w, BLK);
	}
	printf("front end killed after %u flushed blocks: all there\n", done);
	vr_disconnect(&R);
	ck_assert_int_eq(vr_stop(&R), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vhost_user_reconnect");
	TCase *tc = tcase_create("blkd");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, no_leaks);
	tcase_add_test(tc, front_end_killed);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
