/* SPDX-License-Identifier: MIT */
/*
 * Bounded work per request (issue 13, item 4),
 * KVM-free:
 *
 *  - the device offers SIZE_MAX, and seg_max * size_max fits under
 *    VBLK_MAX_REQ_BYTES for every queue size: a driver that honours both
 *    (Linux does) never builds a request over the cap;
 *  - a read or write whose descriptors alias the same guest pages up to
 *    hundreds of times guest RAM completes with VIRTIO_BLK_S_IOERR without
 *    any I/O; a request of exactly the cap runs.
 */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/virtio_blk.h>
#include <linux/virtio_ring.h>

#include "blk/blk-engine.h"
#include "blk/vblk.h"
#include "fake_guest.h"

#define WAIT_MS 10000
#define SECTOR 512u
#define MIB (1ull << 20)

/* ---- vblk level: the cap --------------------------------------------- */

struct count_engine {
	struct blk_engine base;
	struct blk_engine *inner;
	unsigned int submits;
};

static int count_submit(struct blk_engine *e, struct vblk_req *req)
{
	struct count_engine *c = (struct count_engine *)e;

	c->submits++;
	return blk_engine_submit(c->inner, req);
}

static const struct blk_engine_ops count_ops = { .name = "count",
						 .submit = count_submit };

#define QSIZE 256 /* seg_max 254 */
#define VRAM (8 * MIB)
#define VIMG (512 * MIB) /* sparse */

static struct fake_guest g;
static struct fg_vq fvq;
static struct virtq vq;
static struct vblk *blk;
static struct count_engine ceng = { .base = { &count_ops } };
static int img = -1;

static void vsetup(void)
{
	struct vblk_options o = { .num_queues = 1, .queue_size = QSIZE };

	img = fg_tmp_image(VIMG);
	ck_assert_int_ge(img, 0);
	o.fd = img;
	ck_assert_int_eq(vblk_open(&o, &blk), 0);
	ck_assert_int_eq(vblk_set_driver_features(blk, vblk_device_features(blk)), 0);
	ck_assert_int_eq(blk_sync_engine_create(&ceng.inner), 0);
	ceng.submits = 0;
	ck_assert_int_eq(fg_init(&g, VRAM), 0);
	ck_assert_int_eq(fg_vq_init(&g, &fvq, QSIZE, 1ull << VIRTIO_RING_F_INDIRECT_DESC), 0);
	ck_assert_int_eq(fg_vq_attach(&fvq, &vq), 0);
}

static void vteardown(void)
{
	fg_vq_destroy(&fvq);
	fg_destroy(&g);
	blk_engine_destroy(ceng.inner);
	vblk_close(blk);
	close(img);
}

START_TEST(size_max_for_every_queue_size)
{
	int fd = fg_tmp_image(1 << 20);

	ck_assert_int_ge(fd, 0);
	for (unsigned int qsz = 4; qsz <= VIRTQ_MAX_SIZE; qsz *= 2) {
		struct vblk_options o = { .fd = fd, .num_queues = 1,
					  .queue_size = (uint16_t)qsz,
					  .flags = VBLK_OPT_NO_LOCK };
		struct virtio_blk_config c;
		struct vblk *b;
		uint32_t size_max, seg_max;

		ck_assert_int_eq(vblk_open(&o, &b), 0);
		ck_assert(vblk_device_features(b) & (1ull << VIRTIO_BLK_F_SIZE_MAX));
		ck_assert(vblk_device_features(b) & (1ull << VIRTIO_BLK_F_SEG_MAX));
		ck_assert_int_eq(vblk_config_read(b, 0, &c, sizeof(c)), 0);
		size_max = le32toh(c.size_max);
		seg_max = le32toh(c.seg_max);
		/* What the header promises (queue size - 2 segments) ... */
		ck_assert_uint_eq(seg_max, qsz - 2);
		/* ... of at least a page each (Linux's minimum), page-sized
		 * multiples ... */
		ck_assert_uint_ge(size_max, 4096);
		ck_assert_uint_eq(size_max % 4096, 0);
		/* ... and all of them fit under the cap: */
		ck_assert_uint_le((uint64_t)seg_max * size_max, VBLK_MAX_REQ_BYTES);
		/* ... as tightly as the page granule allows. */
		ck_assert_uint_gt((uint64_t)seg_max * (size_max + 4096),
				  VBLK_MAX_REQ_BYTES);
		vblk_close(b);
	}
	close(fd);
}
END_TEST

/*
 * An indirect request of @nseg data descriptors of @seglen bytes, all at
 * guest address @gpa (aliasing), then one of @extra bytes (0: none).
 * Returns its status; *@used_len the used length.
 */
static uint8_t alias_req(uint32_t type, uint64_t gpa, unsigned int nseg,
			 uint32_t seglen, uint32_t extra, uint32_t *used_len)
{
	struct fg_buf d[QSIZE];
	struct fg_blk_req r;
	bool notify = false;
	uint32_t id;
	unsigned int n = 0;

	for (unsigned int i = 0; i < nseg; i++)
		d[n++] = (struct fg_buf){ gpa, seglen, type == VIRTIO_BLK_T_IN };
	if (extra)
		d[n++] = (struct fg_buf){ gpa, extra, type == VIRTIO_BLK_T_IN };
	ck_assert_int_eq(fg_blk_add(&fvq, type, 0, d, n, true, &r), 0);
	fg_vq_publish(&fvq);
	ck_assert_int_eq(vblk_process_queue(blk, 0, &vq, &ceng.base, &notify), 1);
	ck_assert(!vblk_queue_broken(blk, 0));
	ck_assert_int_eq(fg_vq_get_used(&fvq, &id, used_len), 1);
	ck_assert_uint_eq(id, (uint32_t)r.head);
	return fg_blk_status(&g, &r);
}

static bool all_bytes(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* 254 descriptors of 1 MiB over the same guest MiB: 254 MiB from an 8 MiB
 * guest.  Refused, nothing read or written. */
START_TEST(aliasing_request_over_cap)
{
	uint64_t gpa = fg_alloc(&g, MIB, 4096);
	uint8_t *p = fg_ptr(&g, gpa, MIB);
	uint8_t back[4096];
	uint32_t len;
	struct vblk_queue_stats st;

	ck_assert_uint_ne(gpa, 0);
	memset(p, 0xee, MIB);
	ck_assert_uint_eq(alias_req(VIRTIO_BLK_T_IN, gpa, 254, MIB, 0, &len),
			  VIRTIO_BLK_S_IOERR);
	ck_assert_uint_eq(len, 1);
	ck_assert(all_bytes(p, MIB, 0xee));

	memset(p, 0x77, MIB);
	ck_assert_uint_eq(alias_req(VIRTIO_BLK_T_OUT, gpa, 254, MIB, 0, &len),
			  VIRTIO_BLK_S_IOERR);
	ck_assert_uint_eq(len, 1);
	for (uint64_t off = 0; off < 254 * MIB; off += 16 * MIB) {
		ck_assert_int_eq(pread(img, back, sizeof(back), (off_t)off), 4096);
		ck_assert(all_bytes(back, sizeof(back), 0));
	}

	/* One sector over the cap. */
	ck_assert_uint_eq(alias_req(VIRTIO_BLK_T_IN, gpa, 4, MIB, SECTOR, &len),
			  VIRTIO_BLK_S_IOERR);
	ck_assert_uint_eq(ceng.submits, 0);
	ck_assert_int_eq(vblk_queue_get_stats(blk, 0, &st), 0);
	ck_assert_uint_eq(st.io_errors, 3);
	ck_assert_uint_eq(st.bytes_read + st.bytes_written, 0);
}
END_TEST

/* Exactly the cap, as four aliasing MiBs: executed. */
START_TEST(request_at_cap)
{
	uint64_t gpa = fg_alloc(&g, MIB, 4096);
	uint8_t back[4096];
	uint32_t len;

	ck_assert_uint_ne(gpa, 0);
	ck_assert_uint_eq(VBLK_MAX_REQ_BYTES, 4 * MIB);
	memset(fg_ptr(&g, gpa, MIB), 0x42, MIB);
	ck_assert_uint_eq(alias_req(VIRTIO_BLK_T_OUT, gpa, 4, MIB, 0, &len),
			  VIRTIO_BLK_S_OK);
	ck_assert_uint_eq(len, 1);
	ck_assert_int_eq(pread(img, back, sizeof(back), (off_t)(4 * MIB - 4096)), 4096);
	ck_assert(all_bytes(back, sizeof(back), 0x42));
	ck_assert_uint_eq(alias_req(VIRTIO_BLK_T_IN, gpa, 4, MIB, 0, &len),
			  VIRTIO_BLK_S_OK);
	ck_assert_uint_eq(len, 4 * MIB + 1);
	ck_assert_uint_eq(ceng.submits, 2);
}
END_TEST

static Suite *bounded_suite(void)
{
	Suite *s = suite_create("blk-bounded");
	TCase *tv = tcase_create("request cap");

	tcase_add_checked_fixture(tv, vsetup, vteardown);
	tcase_add_test(tv, size_max_for_every_queue_size);
	tcase_add_test(tv, aliasing_request_over_cap);
	tcase_add_test(tv, request_at_cap);
	suite_add_tcase(s, tv);

	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(bounded_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
