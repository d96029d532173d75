/* SPDX-License-Identifier: MIT */
/*
 * Requests the engine could not take or continue right away (issue 13,
 * item 5), KVM-free:
 *
 *  - a request parked after -EAGAIN is released by a queue reset and by
 *    vblk_close() (its heap iovec array with it: LeakSanitizer in the ASan
 *    build, malloc statistics in the plain one);
 *  - a queue whose engine answered -EAGAIN with nothing else in flight is
 *    retried without a kick or a completion;
 *  - the next step of a request (the rest of a short read, the fdatasync
 *    of a write-through write) that finds the ring full is retried, not
 *    failed: the write is on the disk, the guest must not see an error;
 *  - a reset while such a step waits cancels it (an error, never an
 *    acknowledgement).
 *
 * "The ring is full" is iothread_fail_sqes(), on the real threaded data
 * path (blk_rig.h).  Nothing asserts on timing: waits have a 10 s deadline.
 */
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/virtio_blk.h>
#include <linux/virtio_ring.h>

#include "blk/blk-engine.h"
#include "blk/vblk.h"
#include "blk_rig.h"
#include "fake_guest.h"

#define WAIT_MS 10000
#define SECTOR 512u

#if defined(__SANITIZE_ADDRESS__)
#define ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN 1
#endif
#endif

/* ---- vblk level: an engine that is always full ------------------------- */

#define QSIZE 128
#define NSEG 64 /* more than VBLK_INLINE_IOV: a heap iovec array */

static int eagain_submit(struct blk_engine *e, struct vblk_req *req)
{
	(void)e;
	(void)req;
	return -EAGAIN;
}

static const struct blk_engine_ops eagain_ops = { .name = "eagain",
						  .submit = eagain_submit };

static struct fake_guest g;
static struct fg_vq fvq;
static struct virtq vq;
static struct vblk *blk;
static int img = -1;

static void vsetup(void)
{
	struct vblk_options o = { .num_queues = 1, .queue_size = QSIZE };

	img = fg_tmp_image(1 << 20);
	ck_assert_int_ge(img, 0);
	o.fd = img;
	ck_assert_int_eq(vblk_open(&o, &blk), 0);
	ck_assert_int_eq(vblk_set_driver_features(blk, vblk_device_features(blk)), 0);
	ck_assert_int_eq(fg_init(&g, 4 << 20), 0);
	ck_assert_int_eq(fg_vq_init(&g, &fvq, QSIZE, 1ull << VIRTIO_RING_F_INDIRECT_DESC), 0);
	ck_assert_int_eq(fg_vq_attach(&fvq, &vq), 0);
}

static void vteardown(void)
{
	fg_vq_destroy(&fvq);
	fg_destroy(&g);
	vblk_close(blk);
	blk = NULL;
	close(img);
	img = -1;
}

/* A read of NSEG 512-byte segments (indirect), popped and parked. */
static void park_long_read(void)
{
	struct blk_engine eng = { &eagain_ops };
	struct fg_buf d[NSEG];
	struct fg_blk_req r;
	uint64_t buf = fg_alloc(&g, NSEG * SECTOR, 4096);
	bool notify = false;

	ck_assert_uint_ne(buf, 0);
	for (unsigned int i = 0; i < NSEG; i++)
		d[i] = (struct fg_buf){ buf + i * SECTOR, SECTOR, true };
	ck_assert_int_eq(fg_blk_add(&fvq, VIRTIO_BLK_T_IN, 0, d, NSEG, true, &r), 0);
	fg_vq_publish(&fvq);
	ck_assert(!vblk_queue_parked(blk, 0));
	/* Popped (count 1), refused, kept. */
	ck_assert_int_eq(vblk_process_queue(blk, 0, &vq, &eng, &notify), 1);
	ck_assert(vblk_queue_parked(blk, 0));
	ck_assert_uint_eq(fg_vq_used_pending(&fvq), 0);
	/* Retried first on the next call, refused again, still kept. */
	ck_assert_int_eq(vblk_process_queue(blk, 0, &vq, &eng, &notify), 0);
	ck_assert(vblk_queue_parked(blk, 0));
}

/* Bytes malloc holds (meaningless under ASan, whose LeakSanitizer checks
 * the forked test at exit instead).  Exact only without glibc's per-thread
 * cache, whose chunks count as in use: main() turns it off. */
static size_t heap_in_use(void)
{
#ifdef ASAN
	return 0;
#else
	return mallinfo2().uordblks;
#endif
}

START_TEST(reset_releases_parked_request)
{
	size_t before;

	/* The queue's request pool comes with its first request and stays:
	 * not what this counts. */
	vblk_req_put(vblk_req_get(blk, 0));
	vblk_queue_reset(blk, 0);
	before = heap_in_use();

	park_long_read();
	vblk_queue_reset(blk, 0);
	ck_assert(!vblk_queue_parked(blk, 0));
	ck_assert_uint_eq(heap_in_use(), before);
	/* The pool starts over: every slot can be taken again. */
	for (unsigned int i = 0; i < QSIZE; i++)
		ck_assert_ptr_nonnull(vblk_req_get(blk, 0));
	ck_assert_ptr_null(vblk_req_get(blk, 0));
}
END_TEST

START_TEST(close_releases_parked_request)
{
	struct vblk_options o = { .fd = img, .num_queues = 1, .queue_size = QSIZE };
	size_t before;

	/* A disk of its own, so that everything it allocates is counted. */
	vblk_close(blk);
	before = heap_in_use();
	ck_assert_int_eq(vblk_open(&o, &blk), 0);
	ck_assert_int_eq(vblk_set_driver_features(blk, vblk_device_features(blk)), 0);
	park_long_read();
	vblk_close(blk);
	blk = NULL;
	ck_assert_uint_eq(heap_in_use(), before);
}
END_TEST

/* ---- the threaded data path ------------------------------------------- */

static struct br R;

static void rsetup(void)
{
	struct br_opts o = { .nq = 2, .nio = 1 };

	ck_assert_int_eq(br_up(&R, &o), 0);
}

static void rteardown(void)
{
	br_down(&R);
}

struct fail_op {
	unsigned int after, n;
};

static int fail_local(void *opaque)
{
	struct fail_op *op = opaque;

	iothread_fail_sqes(br_queue_io(&R, 0), op->after, op->n);
	return 0;
}

/* The ring refuses SQEs: after @after more, the next @n. */
static void ring_full(unsigned int after, unsigned int n)
{
	struct fail_op op = { after, n };

	iothread_call_sync(br_queue_io(&R, 0), fail_local, &op);
}

/* Add a one-segment request on queue 0 with data at a fresh buffer. */
static uint64_t add_rw(struct fg_blk_req *r, uint32_t type, uint64_t sector,
		       uint32_t len, uint8_t fill)
{
	uint64_t gpa = fg_alloc(&R.g, len, 4096);
	struct fg_buf d = { gpa, len, type == VIRTIO_BLK_T_IN };

	ck_assert_uint_ne(gpa, 0);
	memset(fg_ptr(&R.g, gpa, len), fill, len);
	ck_assert_int_eq(fg_blk_add(&R.q[0].vq, type, sector, &d, 1, false, r), 0);
	return gpa;
}

/* One used entry for @r, with @status and @len. */
static void expect_done(const struct fg_blk_req *r, uint8_t status, uint32_t len)
{
	uint32_t id, ulen;

	ck_assert_msg(br_wait_used(&R, 0, &id, &ulen, 1, WAIT_MS) == 1,
		      "request never completed");
	ck_assert_uint_eq(id, (uint32_t)r->head);
	ck_assert_uint_eq(fg_blk_status(&R.g, r), status);
	ck_assert_uint_eq(ulen, len);
}

static void check_pat(uint64_t gpa, uint64_t off, uint32_t len, uint64_t eof)
{
	const uint8_t *p = fg_ptr(&R.g, gpa, len);

	for (uint32_t i = 0; i < len; i++) {
		uint8_t want = off + i < eof ? br_pat(off + i) : 0;

		if (p[i] != want)
			ck_abort_msg("byte %u: 0x%02x, want 0x%02x", i, p[i], want);
	}
}

static struct vblk_queue_stats qstats(void)
{
	struct vblk_queue_stats st;

	ck_assert_int_eq(vblk_queue_get_stats(br_blk(&R), 0, &st), 0);
	return st;
}

/* The first SQE of a request is refused and nothing else of the queue is
 * in flight: no completion, no kick will come; the device retries. */
START_TEST(eagain_idle_queue_retried)
{
	struct fg_blk_req r;
	uint64_t gpa;

	ring_full(0, 1);
	gpa = add_rw(&r, VIRTIO_BLK_T_IN, 64, 4096, 0xee);
	br_publish(&R, 0);
	expect_done(&r, VIRTIO_BLK_S_OK, 4097);
	check_pat(gpa, 64 * SECTOR, 4096, UINT64_MAX);

	/* Refused for a while (about 20 retries): still served, once. */
	ring_full(0, 20);
	gpa = add_rw(&r, VIRTIO_BLK_T_IN, 128, 4096, 0xee);
	br_publish(&R, 0);
	expect_done(&r, VIRTIO_BLK_S_OK, 4097);
	check_pat(gpa, 128 * SECTOR, 4096, UINT64_MAX);
	ck_assert_uint_eq(qstats().reqs[VBLK_STAT_IN], 2);
	ck_assert_uint_eq(qstats().io_errors, 0);
}
END_TEST

/* A read across the end of a file that shrank: the rest after the short
 * transfer finds the ring full.  It is retried, then sees EOF: zeros. */
START_TEST(short_read_rest_retried)
{
	uint64_t eof = R.o.img_size - 2048;
	struct fg_blk_req r;
	uint64_t gpa;

	ck_assert_int_eq(ftruncate(R.img, (off_t)eof), 0);
	ring_full(1, 1); /* the read goes out, its rest is refused once */
	gpa = add_rw(&r, VIRTIO_BLK_T_IN, R.o.img_size / SECTOR - 8, 4096, 0xee);
	br_publish(&R, 0);
	expect_done(&r, VIRTIO_BLK_S_OK, 4097);
	check_pat(gpa, R.o.img_size - 4096, 4096, eof);
	ck_assert_uint_eq(qstats().io_errors, 0);
}
END_TEST

/* Write-through (the driver turned the cache off): the fdatasync after
 * the write finds the ring full.  The write is on the disk; it must be
 * acknowledged once the retried fdatasync is done, not failed. */
START_TEST(write_through_sync_retried)
{
	const uint32_t wce = offsetof(struct virtio_blk_config, wce);
	struct fg_blk_req r;
	uint8_t back[4096];
	uint64_t gpa;

	fv_mw(&R.v, R.v.devcfg + wce, 0, 1);
	ck_assert_uint_eq(fv_mr(&R.v, R.v.devcfg + wce, 1), 0);
	ring_full(1, 3); /* the write goes out, its fdatasync is refused 3x */
	gpa = add_rw(&r, VIRTIO_BLK_T_OUT, 256, 4096, 0x3c);
	br_publish(&R, 0);
	expect_done(&r, VIRTIO_BLK_S_OK, 1);
	ck_assert_int_eq(pread(R.img, back, sizeof(back), 256 * SECTOR), 4096);
	ck_assert_mem_eq(back, fg_ptr(&R.g, gpa, 4096), 4096);
	ck_assert_uint_eq(qstats().io_errors, 0);
	ck_assert_uint_eq(qstats().bytes_written, 4096);
}
END_TEST

/* On the I/O thread: the ring takes SQEs again, and the device resets
 * (the transport's call to this thread runs inline). */
static int unjam_and_reset(void *opaque)
{
	(void)opaque;
	iothread_fail_sqes(br_queue_io(&R, 0), 0, 0);
	br_reset(&R);
	return 0;
}

/* A reset while a request's next step waits for room in the ring: the
 * request completes with IOERR (cancelled, not acknowledged), the reset
 * returns, and the device works again afterwards. */
START_TEST(reset_cancels_waiting_step)
{
	const uint32_t wce = offsetof(struct virtio_blk_config, wce);
	struct fg_blk_req r;
	uint64_t gpa;

	fv_mw(&R.v, R.v.devcfg + wce, 0, 1);
	ring_full(1, 1u << 30); /* the fdatasync never finds room */
	add_rw(&r, VIRTIO_BLK_T_OUT, 512, 4096, 0x5d);
	br_publish(&R, 0);
	ck_assert_int_eq(br_wait_popped(&R, 0, WAIT_MS), 0);
	usleep(20 * 1000); /* some retries */
	ck_assert_uint_eq(fg_vq_used_pending(&R.q[0].vq), 0);
	/* The ring works again for the reset's own SQEs (poll removals),
	 * with no round in between for the fdatasync to slip through. */
	iothread_call_sync(br_queue_io(&R, 0), unjam_and_reset, NULL);
	expect_done(&r, VIRTIO_BLK_S_IOERR, 1);
	ck_assert_uint_eq(qstats().cancelled, 1);
	ck_assert_uint_eq(qstats().io_errors, 1);

	ck_assert_int_eq(br_drv_up(&R), 0);
	gpa = add_rw(&r, VIRTIO_BLK_T_IN, 8, 4096, 0xee);
	br_publish(&R, 0);
	expect_done(&r, VIRTIO_BLK_S_OK, 4097);
	check_pat(gpa, 8 * SECTOR, 4096, UINT64_MAX);
}
END_TEST

static Suite *retry_suite(void)
{
	Suite *s = suite_create("blk-retry");
	TCase *tv = tcase_create("parked request");
	TCase *tr = tcase_create("ring full");

	tcase_add_checked_fixture(tv, vsetup, vteardown);
	tcase_add_test(tv, reset_releases_parked_request);
	tcase_add_test(tv, close_releases_parked_request);
	suite_add_tcase(s, tv);

	tcase_add_checked_fixture(tr, rsetup, rteardown);
	tcase_set_timeout(tr, 60);
	tcase_add_test(tr, eagain_idle_queue_retried);
	tcase_add_test(tr, short_read_rest_retried);
	tcase_add_test(tr, write_through_sync_retried);
	tcase_add_test(tr, reset_cancels_waiting_step);
	suite_add_tcase(s, tr);
	return s;
}

int main(int argc, char **argv)
{
	SRunner *sr;
	int failed;

	(void)argc;
#ifndef ASAN
	/* heap_in_use() needs malloc without its tcache: re-exec once. */
	if (!getenv("GLIBC_TUNABLES")) {
		setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0", 1);
		execv("/proc/self/exe", argv);
		perror("re-exec without tcache");
		return EXIT_FAILURE;
	}
#endif
	sr = srunner_create(retry_suite());

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
