/* SPDX-License-Identifier: MIT */
/*
 * minivmm-blkd --stats-json (what bench/vhost_guest_bench.sh and
 * e2e/vhost_user_qemu read): after each front end disconnects, one JSON line
 * with the device's counters since the start -- requests by the device's
 * own count, discards and write-zeroes apart, doorbells, kicks and
 * interrupts per
 * queue and in all, I/O errors -- cumulative across front ends.  KVM-free,
 * through the socket (tests/harness/vu_rig.h).
 */
#include <check.h>
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
#define FEATURES                                                              \
	(BIT(VIRTIO_F_VERSION_1) | BIT(VIRTIO_RING_F_EVENT_IDX) |               \
	 BIT(VIRTIO_BLK_F_MQ) | BIT(VIRTIO_BLK_F_FLUSH) |                       \
	 BIT(VIRTIO_BLK_F_DISCARD) | BIT(VIRTIO_BLK_F_WRITE_ZEROES))

static struct vr R;

/* The number after "KEY": in the totals (after the per-queue array). */
static unsigned long long total(const char *line, const char *key)
{
	char pat[64];
	const char *p = strstr(line, "],");

	ck_assert_ptr_nonnull(p);
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(p, pat);
	ck_assert_msg(p, "no %s in %s", key, line);
	return strtoull(p + strlen(pat), NULL, 10);
}

START_TEST(counters_per_front_end)
{
	static const char *const args[] = { "--stats-json", NULL };
	struct vr_opts o = { .disk_extra = ",num-queues=2", .args = args };
	struct virtio_blk_discard_write_zeroes range = { .sector = 64, .num_sectors = 8 };
	uint8_t buf[BLK];
	char line[4096];
	int st;

	ck_assert_int_eq(vr_spawn(&R, BLKD_BIN, &o), 0);
	/* Front end 1: 3 writes, 2 reads, a flush on ring 0; a discard and a
	 * write-zeroes on ring 1. */
	ck_assert_int_eq(vr_connect(&R, 2, 64, FEATURES, 0), 0);
	memset(buf, 0x5a, sizeof(buf));
	for (unsigned int i = 0; i < 3; i++)
		ck_assert_int_eq(vr_req(&R, 0, VIRTIO_BLK_T_OUT, i * 8, buf, BLK),
				 VIRTIO_BLK_S_OK);
	for (unsigned int i = 0; i < 2; i++)
		ck_assert_int_eq(vr_req(&R, 0, VIRTIO_BLK_T_IN, i * 8, buf, BLK),
				 VIRTIO_BLK_S_OK);
	ck_assert_int_eq(vr_req(&R, 0, VIRTIO_BLK_T_FLUSH, 0, NULL, 0), VIRTIO_BLK_S_OK);
	ck_assert_int_eq(vr_req(&R, 1, VIRTIO_BLK_T_DISCARD, 0, &range, sizeof(range)),
			 VIRTIO_BLK_S_OK);
	ck_assert_int_eq(vr_req(&R, 1, VIRTIO_BLK_T_WRITE_ZEROES, 0, &range,
				sizeof(range)),
			 VIRTIO_BLK_S_OK);
	vr_disconnect(&R);
	ck_assert_int_eq(vr_stats_line(&R, 1, line, sizeof(line)), 0);
	ck_assert_uint_eq(total(line, "requests"), 8);
	ck_assert_uint_eq(total(line, "discards"), 1);
	ck_assert_uint_eq(total(line, "write_zeroes"), 1);
	ck_assert_uint_eq(total(line, "io_errors"), 0);
	/* Every request rang the doorbell once (vr_req kicks each); the I/O
	 * thread woke at most once per doorbell; each was interrupted. */
	ck_assert_uint_eq(total(line, "doorbells"), 8);
	ck_assert_uint_ge(total(line, "kicks"), 1);
	ck_assert_uint_le(total(line, "kicks"), 8);
	ck_assert_uint_ge(total(line, "interrupts"), 1);
	ck_assert_uint_le(total(line, "interrupts"), 8);
	ck_assert_ptr_nonnull(strstr(line, "{\"q\":0,\"requests\":6,\"doorbells\":6,"));
	ck_assert_ptr_nonnull(strstr(line, "{\"q\":1,\"requests\":2,\"doorbells\":2,"));

	/* Front end 2: one more read; the counters go on from there. */
	ck_assert_int_eq(vr_connect(&R, 1, 64, FEATURES, 0), 0);
	ck_assert_int_eq(vr_req(&R, 0, VIRTIO_BLK_T_IN, 0, buf, BLK), VIRTIO_BLK_S_OK);
	vr_disconnect(&R);
	ck_assert_int_eq(vr_stats_line(&R, 2, line, sizeof(line)), 0);
	ck_assert_uint_eq(total(line, "requests"), 9);
	ck_assert_ptr_nonnull(strstr(line, "{\"q\":0,\"requests\":7,"));

	st = vr_stop(&R);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "minivmm-blkd exit status %#x after SIGTERM", st);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("blkd_stats");
	TCase *tc = tcase_create("stats");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, counters_per_front_end);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
