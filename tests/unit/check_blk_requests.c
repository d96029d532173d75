/* SPDX-License-Identifier: MIT */
/*
 * virtio-blk requests end to end through the simulated driver, the request
 * layer and the synchronous engine, on a temporary 1 MiB image: IN, OUT,
 * FLUSH, GET_ID, DISCARD, WRITE_ZEROES, many segments, config space,
 * feature bits, write-through, read-only disks, multiple queues and the
 * asynchronous completion path.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>

#include "blk/blk-engine.h"
#include "blk/vblk.h"
#include "fake_guest.h"

#define RAM_SIZE (16u << 20)
#define IMG_SIZE (1u << 20)
#define QSIZE 128
#define SERIAL "libvmm-serial-01"
#define FEATS ((1ull << VIRTIO_RING_F_EVENT_IDX) | (1ull << VIRTIO_RING_F_INDIRECT_DESC))

static struct fake_guest g;
static struct fg_vq fvq;
static struct virtq vq;
static struct vblk *blk;
static struct blk_engine *eng;
static int img = -1;
static uint32_t last_used_len;

static uint8_t pattern(uint64_t off)
{
	return (uint8_t)(off * 7 + off / 512 + 1);
}

static void open_disk(uint32_t flags)
{
	struct vblk_options o = {
		.fd = img, .flags = flags, .num_queues = 2,
		.queue_size = QSIZE, .serial = SERIAL,
	};

	ck_assert_int_eq(vblk_open(&o, &blk), 0);
	ck_assert_int_eq(vblk_set_driver_features(blk, vblk_device_features(blk)), 0);
}

static void setup_common(uint32_t flags)
{
	uint8_t *p = malloc(IMG_SIZE);

	ck_assert_ptr_nonnull(p);
	img = fg_tmp_image(IMG_SIZE);
	ck_assert_int_ge(img, 0);
	for (uint64_t i = 0; i < IMG_SIZE; i++)
		p[i] = pattern(i);
	ck_assert_int_eq(pwrite(img, p, IMG_SIZE, 0), IMG_SIZE);
	free(p);
	open_disk(flags);
	ck_assert_int_eq(blk_sync_engine_create(&eng), 0);
	ck_assert_int_eq(fg_init(&g, RAM_SIZE), 0);
	ck_assert_int_eq(fg_vq_init(&g, &fvq, QSIZE, FEATS), 0);
	ck_assert_int_eq(fg_vq_attach(&fvq, &vq), 0);
}

static void setup(void)
{
	setup_common(0);
}

static void setup_ro(void)
{
	setup_common(VBLK_OPT_READONLY);
}

static void teardown(void)
{
	fg_vq_destroy(&fvq);
	fg_destroy(&g);
	blk_engine_destroy(eng);
	vblk_close(blk);
	close(img);
}

/* Publish, let the device process, and return the status of @r. */
static uint8_t run(struct fg_blk_req *r)
{
	bool notify = false;
	uint32_t id, len;

	fg_vq_publish(&fvq);
	ck_assert_int_eq(vblk_process_queue(blk, 0, &vq, eng, &notify), 1);
	ck_assert(notify);
	ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &len), 1);
	ck_assert_uint_eq(id, (unsigned int)r->head);
	last_used_len = len;
	return fg_blk_status(&g, r);
}

static uint8_t do_req(uint32_t type, uint64_t sector, const struct fg_buf *d,
		      unsigned int n, bool indirect)
{
	struct fg_blk_req r;

	ck_assert_int_eq(fg_blk_add(&fvq, type, sector, d, n, indirect, &r), 0);
	return run(&r);
}

static struct fg_buf gbuf(uint32_t len, bool writable, uint8_t fill)
{
	struct fg_buf b = { fg_alloc(&g, len, 512), len, writable };

	memset(fg_ptr(&g, b.gpa, len), fill, len);
	return b;
}

static uint8_t *gp(const struct fg_buf *b)
{
	return fg_ptr(&g, b->gpa, b->len);
}

static uint8_t do_dwz(uint32_t type, uint64_t sector, uint32_t nsec, uint32_t flags)
{
	struct fg_buf d = gbuf(sizeof(struct virtio_blk_discard_write_zeroes), false, 0);
	struct virtio_blk_discard_write_zeroes *s = (void *)gp(&d);

	s->sector = htole64(sector);
	s->num_sectors = htole32(nsec);
	s->flags = htole32(flags);
	return do_req(type, sector, &d, 1, false);
}

START_TEST(test_in)
{
	struct fg_buf d[2] = { gbuf(512, true, 0), gbuf(1024, true, 0) };
	struct vblk_queue_stats st;

	ck_assert_uint_eq(do_req(VIRTIO_BLK_T_IN, 3, d, 2, false), VIRTIO_BLK_S_OK);
	ck_assert_uint_eq(last_used_len, 1536 + 1);
	for (unsigned int i = 0; i < 512; i++)
		ck_assert_uint_eq(gp(&d[0])[i], pattern(3 * 512 + i));
	for (unsigned int i = 0; i < 1024; i++)
		ck_assert_uint_eq(gp(&d[1])[i], pattern(4 * 512 + i));
	ck_assert_int_eq(vblk_queue_get_stats(blk, 0, &st), 0);
	ck_assert_uint_eq(st.reqs[VBLK_STAT_IN], 1);
	ck_assert_uint_eq(st.bytes_read, 1536);
}
END_TEST

START_TEST(test_out)
{
	struct fg_buf d = gbuf(4096, false, 0x5a);
	uint8_t back[4096];
	struct vblk_queue_stats st;

	ck_assert_uint_eq(do_req(VIRTIO_BLK_T_OUT, 8, &d, 1, true), VIRTIO_BLK_S_OK);
	ck_assert_uint_eq(last_used_len, 1);
	ck_assert_int_eq(pread(img, back, sizeof(back), 8 * 512), sizeof(back));
	for (unsigned int i = 0; i < sizeof(back); i++)
		ck_assert_uint_eq(back[i], 0x5a);
	/* Neighbours untouched. */
	ck_assert_int_eq(pread(img, back, 1, 8 * 512 - 1), 1);
	ck_assert_uint_eq(back[0], pattern(8 * 512 - 1));
	ck_assert_int_eq(pread(img, back, 1, 8 * 512 + 4096), 1);
	ck_assert_uint_eq(back[0], pattern(8 * 512 + 4096));
	ck_assert_int_eq(vblk_queue_get_stats(blk, 0, &st), 0);
	ck_assert_uint_eq(st.bytes_written, 4096);
}
END_TEST

START_TEST(test_last_sector)
{
	struct fg_buf d = gbuf(512, true, 0);

	ck_assert_uint_eq(do_req(VIRTIO_BLK_T_IN, IMG_SIZE / 512 - 1, &d, 1, false),
			  VIRTIO_BLK_S_OK);
	ck_assert_uint_eq(gp(&d)[511], pattern(IMG_SIZE - 1));
}
END_TEST

/* The header may be split across descriptors and share one with data. */
START_TEST(test_split_header)
{
	struct fg_buf b[4];
	struct virtio_blk_outhdr h = { htole32(VIRTIO_BLK_T_IN), 0, htole64(2) };
	struct fg_blk_req r;
	uint8_t *p;

	b[0] = gbuf(8, false, 0);
	b[1] = gbuf(8, false, 0);
	memcpy(gp(&b[0]), &h, 8);
	memcpy(gp(&b[1]), (char *)&h + 8, 8);
	b[2] = gbuf(512 + 1, true, 0xee); /* data and the status byte together */
	r.head = fg_vq_add(&fvq, b, 3, false);
	r.status_gpa = b[2].gpa + 512;
	ck_assert_int_ge(r.head, 0);
	ck_assert_uint_eq(run(&r), VIRTIO_BLK_S_OK);
	p = gp(&b[2]);
	for (unsigned int i = 0; i < 512; i++)
		ck_assert_uint_eq(p[i], pattern(2 * 512 + i));
}
END_TEST

START_TEST(test_flush)
{
	struct vblk_queue_stats st;

	ck_assert_uint_eq(do_req(VIRTIO_BLK_T_FLUSH, 0, NULL, 0, false), VIRTIO_BLK_S_OK);
	ck_assert_int_eq(vblk_queue_get_stats(blk, 0, &st), 0);
	ck_assert_uint_eq(st.reqs[VBLK_STAT_FLUSH], 1);
}
END_TEST

START_TEST(test_get_id)
{
	struct fg_buf d = gbuf(VIRTIO_BLK_ID_BYTES, true, 0xaa);
	char want[VIRTIO_BLK_ID_BYTES] = SERIAL;

	ck_assert_uint_eq(do_req(VIRTIO_BLK_T_GET_ID, 0, &d, 1, false), VIRTIO_BLK_S_OK);
	ck_assert_mem_eq(gp(&d), want, VIRTIO_BLK_ID_BYTES);
	ck_assert_uint_eq(last_used_len, VIRTIO_BLK_ID_BYTES + 1);
}
END_TEST

START_TEST(test_get_id_short_buffer)
{
	struct fg_buf d = gbuf(8, true, 0xaa);

	ck_assert_uint_eq(do_req(VIRTIO_BLK_T_GET_ID, 0, &d, 1, false), VIRTIO_BLK_S_OK);
	ck_assert_mem_eq(gp(&d), SERIAL, 8);
	ck_assert_uint_eq(last_used_len, 9);
}
END_TEST

START_TEST(test_get_id_long_buffer)
{
	struct fg_buf d = gbuf(64, true, 0xaa);

	ck_assert_uint_eq(do_req(VIRTIO_BLK_T_GET_ID, 0, &d, 1, false), VIRTIO_BLK_S_OK);
	ck_assert_mem_eq(gp(&d), SERIAL, sizeof(SERIAL) - 1);
	ck_assert_uint_eq(gp(&d)[sizeof(SERIAL) - 1], 0); /* NUL padding */
	ck_assert_uint_eq(gp(&d)[VIRTIO_BLK_ID_BYTES], 0xaa); /* only 20 written */
}
END_TEST

static void assert_zero_range(uint64_t off, uint64_t len)
{
	uint8_t *p = malloc(len);

	ck_assert_int_eq(pread(img, p, len, (off_t)off), (ssize_t)len);
	for (uint64_t i = 0; i < len; i++)
		ck_assert_uint_eq(p[i], 0);
	free(p);
}

START_TEST(test_discard)
{
	struct fg_buf d = gbuf(8192, true, 0x11);

	ck_assert_uint_eq(do_dwz(VIRTIO_BLK_T_DISCARD, 16, 16, 0), VIRTIO_BLK_S_OK);
	assert_zero_range(16 * 512, 8192); /* ext4/tmpfs punch holes */
	ck_assert_uint_eq(do_req(VIRTIO_BLK_T_IN, 16, &d, 1, false), VIRTIO_BLK_S_OK);
	for (unsigned int i = 0; i < 8192; i++)
		ck_assert_uint_eq(gp(&d)[i], 0);
	/* File size kept. */
	ck_assert_int_eq(lseek(img, 0, SEEK_END), IMG_SIZE);
}
END_TEST

START_TEST(test_write_zeroes)
{
	uint8_t b;

	ck_assert_uint_eq(do_dwz(VIRTIO_BLK_T_WRITE_ZEROES, 5, 3, 0), VIRTIO_BLK_S_OK);
	assert_zero_range(5 * 512, 3 * 512);
	ck_assert_int_eq(pread(img, &b, 1, 8 * 512), 1);
	ck_assert_uint_eq(b, pattern(8 * 512));
	ck_assert_int_eq(pread(img, &b, 1, 5 * 512 - 1), 1);
	ck_assert_uint_eq(b, pattern(5 * 512 - 1));
}
END_TEST

START_TEST(test_write_zeroes_unmap)
{
	ck_assert_uint_eq(do_dwz(VIRTIO_BLK_T_WRITE_ZEROES, 32, 64,
				 VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP), VIRTIO_BLK_S_OK);
	assert_zero_range(32 * 512, 64 * 512);
	ck_assert_int_eq(lseek(img, 0, SEEK_END), IMG_SIZE);
}
END_TEST

/* OUT through many segments (indirect), read back through many (direct). */
START_TEST(test_many_segments)
{
	enum { NSEG = QSIZE - 2 };
	struct fg_buf *d = calloc(NSEG, sizeof(*d));

	for (unsigned int i = 0; i < NSEG; i++)
		d[i] = gbuf(512, false, (uint8_t)i);
	ck_assert_uint_eq(do_req(VIRTIO_BLK_T_OUT, 100, d, NSEG, true), VIRTIO_BLK_S_OK);
	for (unsigned int i = 0; i < NSEG; i++)
		d[i] = gbuf(512, true, 0xff);
	ck_assert_uint_eq(do_req(VIRTIO_BLK_T_IN, 100, d, NSEG, false), VIRTIO_BLK_S_OK);
	for (unsigned int i = 0; i < NSEG; i++)
		for (unsigned int j = 0; j < 512; j++)
			ck_assert_uint_eq(gp(&d[i])[j], (uint8_t)i);
	free(d);
}
END_TEST

/* More data segments than the seg_max we advertise: IOERR. */
START_TEST(test_too_many_segments)
{
	enum { NSEG = QSIZE - 1 };
	struct fg_buf *d = calloc(NSEG, sizeof(*d));

	for (unsigned int i = 0; i < NSEG; i++)
		d[i] = gbuf(512, true, 0);
	ck_assert_uint_eq(do_req(VIRTIO_BLK_T_IN, 0, d, NSEG, true), VIRTIO_BLK_S_IOERR);
	free(d);
}
END_TEST

START_TEST(test_several_in_one_kick)
{
	struct fg_blk_req r[5];
	struct fg_buf d[5];
	bool notify = false;
	uint32_t id, len;

	for (int i = 0; i < 5; i++) {
		d[i] = gbuf(512, true, 0);
		ck_assert_int_eq(fg_blk_add(&fvq, VIRTIO_BLK_T_IN, (uint64_t)i, &d[i], 1,
					    i & 1, &r[i]), 0);
	}
	fg_vq_publish(&fvq);
	ck_assert_int_eq(vblk_process_queue(blk, 0, &vq, eng, &notify), 5);
	ck_assert(notify);
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &len), 1);
		ck_assert_uint_eq(id, (unsigned int)r[i].head);
		ck_assert_uint_eq(fg_blk_status(&g, &r[i]), VIRTIO_BLK_S_OK);
		ck_assert_uint_eq(gp(&d[i])[0], pattern((uint64_t)i * 512));
	}
	/* Kicks re-enabled at the end: avail_event == last_avail_idx. */
	ck_assert_uint_eq(fg_vq_avail_event(&fvq), 5);
}
END_TEST

START_TEST(test_config_space)
{
	struct virtio_blk_config c;
	uint64_t f = vblk_device_features(blk);
	uint8_t v;

	ck_assert_int_eq(vblk_config_read(blk, 0, &c, sizeof(c)), 0);
	ck_assert_uint_eq(le64toh(c.capacity), IMG_SIZE / 512);
	ck_assert_uint_eq(le32toh(c.seg_max), QSIZE - 2);
	ck_assert_uint_eq(le32toh(c.blk_size), 512);
	ck_assert_uint_eq(le16toh(c.num_queues), 2);
	ck_assert_uint_eq(c.physical_block_exp, 0);
	ck_assert_uint_eq(c.alignment_offset, 0);
	ck_assert_uint_eq(le16toh(c.min_io_size), 1);
	ck_assert_uint_eq(c.wce, 1);
	ck_assert_uint_eq(le32toh(c.max_discard_sectors), VBLK_MAX_DWZ_SECTORS);
	ck_assert_uint_eq(le32toh(c.max_discard_seg), 1);
	ck_assert_uint_eq(le32toh(c.discard_sector_alignment), 1);
	ck_assert_uint_eq(le32toh(c.max_write_zeroes_sectors), VBLK_MAX_DWZ_SECTORS);
	ck_assert_uint_eq(le32toh(c.max_write_zeroes_seg), 1);
	ck_assert_uint_eq(c.write_zeroes_may_unmap, 1);

	ck_assert(f & (1ull << VIRTIO_F_VERSION_1));
	ck_assert(f & (1ull << VIRTIO_RING_F_EVENT_IDX));
	ck_assert(f & (1ull << VIRTIO_RING_F_INDIRECT_DESC));
	ck_assert(f & (1ull << VIRTIO_BLK_F_SEG_MAX));
	/* size_max: seg_max segments of it fit under the request cap. */
	ck_assert(f & (1ull << VIRTIO_BLK_F_SIZE_MAX));
	ck_assert_uint_eq(le32toh(c.size_max), vblk_size_max(blk));
	ck_assert_uint_eq(le32toh(c.size_max) % 4096, 0);
	ck_assert_uint_le((uint64_t)le32toh(c.size_max) * le32toh(c.seg_max),
			  VBLK_MAX_REQ_BYTES);
	ck_assert(f & (1ull << VIRTIO_BLK_F_BLK_SIZE));
	ck_assert(f & (1ull << VIRTIO_BLK_F_TOPOLOGY));
	ck_assert(f & (1ull << VIRTIO_BLK_F_FLUSH));
	ck_assert(f & (1ull << VIRTIO_BLK_F_CONFIG_WCE));
	ck_assert(f & (1ull << VIRTIO_BLK_F_MQ));
	ck_assert(f & (1ull << VIRTIO_BLK_F_DISCARD));
	ck_assert(f & (1ull << VIRTIO_BLK_F_WRITE_ZEROES));
	ck_assert(!(f & (1ull << VIRTIO_BLK_F_RO)));

	/* Partial reads, bounds. */
	ck_assert_int_eq(vblk_config_read(blk, offsetof(struct virtio_blk_config, num_queues),
					  &v, 1), 0);
	ck_assert_uint_eq(v, 2);
	ck_assert_int_eq(vblk_config_read(blk, sizeof(c), &v, 0), 0);
	ck_assert_int_eq(vblk_config_read(blk, sizeof(c), &v, 1), -EINVAL);
	ck_assert_int_eq(vblk_config_read(blk, UINT32_MAX, &v, 2), -EINVAL);

	/* Only wce is writable. */
	v = 0;
	ck_assert_int_eq(vblk_config_write(blk, offsetof(struct virtio_blk_config, wce), &v, 1), 0);
	ck_assert_int_eq(vblk_config_read(blk, 0, &c, sizeof(c)), 0);
	ck_assert_uint_eq(c.wce, 0);
	ck_assert_uint_eq(le64toh(c.capacity), IMG_SIZE / 512);
	ck_assert_int_eq(vblk_config_write(blk, 0, &v, 1), -EPERM);
	ck_assert_int_eq(vblk_config_write(blk, sizeof(c), &v, 1), -EINVAL);
	ck_assert_int_eq(vblk_config_read(blk, 0, &c, sizeof(c)), 0);
	ck_assert_uint_eq(le64toh(c.capacity), IMG_SIZE / 512);
}
END_TEST

/* Write-through: WCE=0, or FLUSH not negotiated, marks writes VBLK_REQ_F_SYNC. */
START_TEST(test_write_through_marking)
{
	struct fg_buf d = gbuf(512, false, 1);
	struct virtq_chain *c = malloc(sizeof(*c));
	struct vblk_req *req;
	uint8_t zero = 0, one = 1;

	ck_assert_int_ge(fg_blk_add(&fvq, VIRTIO_BLK_T_OUT, 0, &d, 1, false,
				    &(struct fg_blk_req){ 0 }), 0);
	ck_assert_int_ge(fg_blk_add(&fvq, VIRTIO_BLK_T_OUT, 0, &d, 1, false,
				    &(struct fg_blk_req){ 0 }), 0);
	ck_assert_int_ge(fg_blk_add(&fvq, VIRTIO_BLK_T_OUT, 0, &d, 1, false,
				    &(struct fg_blk_req){ 0 }), 0);
	fg_vq_publish(&fvq);
	req = vblk_req_get(blk, 0);
	ck_assert_ptr_nonnull(req);

	ck_assert_int_eq(virtq_pop(&vq, c), 1);
	ck_assert_int_eq(vblk_req_parse(blk, c, req), VBLK_REQ_EXECUTE);
	ck_assert(!(req->flags & VBLK_REQ_F_SYNC));

	ck_assert_int_eq(vblk_config_write(blk, offsetof(struct virtio_blk_config, wce), &zero, 1), 0);
	ck_assert_int_eq(virtq_pop(&vq, c), 1);
	ck_assert_int_eq(vblk_req_parse(blk, c, req), VBLK_REQ_EXECUTE);
	ck_assert(req->flags & VBLK_REQ_F_SYNC);
	ck_assert_int_eq(blk_engine_submit(eng, req), BLK_SUBMIT_DONE);
	ck_assert_uint_eq(req->status_val, VIRTIO_BLK_S_OK);

	ck_assert_int_eq(vblk_config_write(blk, offsetof(struct virtio_blk_config, wce), &one, 1), 0);
	ck_assert_int_eq(vblk_set_driver_features(blk, vblk_device_features(blk) &
						  ~(1ull << VIRTIO_BLK_F_FLUSH)), 0);
	ck_assert_int_eq(virtq_pop(&vq, c), 1);
	ck_assert_int_eq(vblk_req_parse(blk, c, req), VBLK_REQ_EXECUTE);
	ck_assert(req->flags & VBLK_REQ_F_SYNC);
	vblk_req_put(req);
	free(c);
}
END_TEST

START_TEST(test_features_need_version_1)
{
	ck_assert_int_eq(vblk_set_driver_features(blk, 1ull << VIRTIO_BLK_F_FLUSH), -EINVAL);
	ck_assert_int_eq(vblk_set_driver_features(blk, ~0ull), 0);
	ck_assert_uint_eq(vblk_driver_features(blk), vblk_device_features(blk));
}
END_TEST

START_TEST(test_read_only)
{
	struct fg_buf w = gbuf(512, false, 0x77);
	struct fg_buf r = gbuf(512, true, 0);
	uint64_t f = vblk_device_features(blk);
	struct virtio_blk_config c;
	uint8_t b;

	ck_assert(f & (1ull << VIRTIO_BLK_F_RO));
	ck_assert(!(f & (1ull << VIRTIO_BLK_F_DISCARD)));
	ck_assert(!(f & (1ull << VIRTIO_BLK_F_WRITE_ZEROES)));
	ck_assert_int_eq(vblk_config_read(blk, 0, &c, sizeof(c)), 0);
	ck_assert_uint_eq(le32toh(c.max_discard_sectors), 0);

	ck_assert_uint_eq(do_req(VIRTIO_BLK_T_OUT, 1, &w, 1, false), VIRTIO_BLK_S_IOERR);
	ck_assert_uint_eq(do_dwz(VIRTIO_BLK_T_DISCARD, 1, 1, 0), VIRTIO_BLK_S_IOERR);
	ck_assert_uint_eq(do_dwz(VIRTIO_BLK_T_WRITE_ZEROES, 1, 1, 0), VIRTIO_BLK_S_IOERR);
	ck_assert_int_eq(pread(img, &b, 1, 512), 1);
	ck_assert_uint_eq(b, pattern(512));
	ck_assert_uint_eq(do_req(VIRTIO_BLK_T_IN, 1, &r, 1, false), VIRTIO_BLK_S_OK);
	ck_assert_uint_eq(gp(&r)[0], pattern(512));
	ck_assert_uint_eq(do_req(VIRTIO_BLK_T_FLUSH, 0, NULL, 0, false), VIRTIO_BLK_S_OK);
}
END_TEST

START_TEST(test_second_queue)
{
	struct fg_vq fvq1;
	struct virtq vq1;
	struct fg_blk_req r;
	struct fg_buf d = gbuf(512, true, 0);
	struct vblk_queue_stats st;
	bool notify = false;
	uint32_t id, len;

	ck_assert_int_eq(fg_vq_init(&g, &fvq1, 16, FEATS), 0);
	ck_assert_int_eq(fg_vq_attach(&fvq1, &vq1), 0);
	ck_assert_int_eq(fg_blk_add(&fvq1, VIRTIO_BLK_T_IN, 7, &d, 1, false, &r), 0);
	fg_vq_publish(&fvq1);
	ck_assert_int_eq(vblk_process_queue(blk, 1, &vq1, eng, &notify), 1);
	ck_assert_int_eq(fg_vq_get_used(&fvq1, &id, &len), 1);
	ck_assert_uint_eq(fg_blk_status(&g, &r), VIRTIO_BLK_S_OK);
	ck_assert_uint_eq(gp(&d)[0], pattern(7 * 512));
	ck_assert_int_eq(vblk_queue_get_stats(blk, 1, &st), 0);
	ck_assert_uint_eq(st.reqs[VBLK_STAT_IN], 1);
	ck_assert_int_eq(vblk_queue_get_stats(blk, 0, &st), 0);
	ck_assert_uint_eq(st.reqs[VBLK_STAT_IN], 0);
	ck_assert_int_eq(vblk_process_queue(blk, 2, &vq1, eng, &notify), -EINVAL);
	fg_vq_destroy(&fvq1);
}
END_TEST

/*
 * An asynchronous engine: queues requests (at most 2 in flight, then
 * -EAGAIN) and completes them later from a "reaper", as io_uring will.
 */
struct async_eng {
	struct blk_engine base;
	struct blk_engine *sync;
	struct vblk_req *q[2];
	unsigned int n;
};

static int async_submit(struct blk_engine *e, struct vblk_req *req)
{
	struct async_eng *a = container_of(e, struct async_eng, base);

	if (a->n == 2)
		return -EAGAIN;
	a->q[a->n++] = req;
	return BLK_SUBMIT_QUEUED;
}

static const struct blk_engine_ops async_ops = { "test-async", async_submit, NULL };

/* Reap: execute with the sync engine's logic, then complete + push. */
static void async_reap(struct async_eng *a)
{
	for (unsigned int i = 0; i < a->n; i++) {
		ck_assert_int_eq(blk_engine_submit(a->sync, a->q[i]), BLK_SUBMIT_DONE);
		vblk_queue_push(a->q[i], &vq);
	}
	a->n = 0;
}

START_TEST(test_async_completion)
{
	struct async_eng a = { .base = { &async_ops }, .sync = eng };
	struct fg_blk_req r[3];
	struct fg_buf d[3];
	bool notify = false;
	uint32_t id, len;

	for (int i = 0; i < 3; i++) {
		d[i] = gbuf(512, true, 0);
		ck_assert_int_eq(fg_blk_add(&fvq, VIRTIO_BLK_T_IN, (uint64_t)i, &d[i], 1,
					    false, &r[i]), 0);
	}
	fg_vq_publish(&fvq);
	/* Two accepted, the third refused and kept. */
	ck_assert_int_eq(vblk_process_queue(blk, 0, &vq, &a.base, &notify), 3);
	ck_assert(!notify);
	ck_assert_uint_eq(fg_vq_used_pending(&fvq), 0);
	ck_assert_uint_eq(fg_blk_status(&g, &r[0]), 0xff);

	async_reap(&a);
	ck_assert(virtq_should_notify(&vq));
	ck_assert_uint_eq(fg_vq_used_pending(&fvq), 2);
	/* The kept request goes first on the next call. */
	ck_assert_int_eq(vblk_process_queue(blk, 0, &vq, &a.base, &notify), 0);
	ck_assert_uint_eq(a.n, 1);
	async_reap(&a);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &len), 1);
		ck_assert_uint_eq(id, (unsigned int)r[i].head);
		ck_assert_uint_eq(len, 513);
		ck_assert_uint_eq(fg_blk_status(&g, &r[i]), VIRTIO_BLK_S_OK);
		ck_assert_uint_eq(gp(&d[i])[0], pattern((uint64_t)i * 512));
	}
}
END_TEST

/* Short read at end of file (image shrank under us): zero-filled, OK. */
START_TEST(test_short_read_zero_fill)
{
	struct fg_buf d = gbuf(1024, true, 0xcc);

	ck_assert_int_eq(ftruncate(img, IMG_SIZE - 512), 0);
	ck_assert_uint_eq(do_req(VIRTIO_BLK_T_IN, IMG_SIZE / 512 - 2, &d, 1, false),
			  VIRTIO_BLK_S_OK);
	ck_assert_uint_eq(gp(&d)[0], pattern(IMG_SIZE - 1024));
	for (unsigned int i = 512; i < 1024; i++)
		ck_assert_uint_eq(gp(&d)[i], 0);
}
END_TEST

/* ---- vblk_open options (no fixture) ------------------------------------ */

START_TEST(test_open_options)
{
	struct vblk_options o = { .num_queues = 1 };
	struct vblk *b;
	int fd = fg_tmp_image(1000), rofd;
	char path[64];

	ck_assert_int_ge(fd, 0);
	/* Tail shorter than 512 bytes is not exposed. */
	o.fd = fd;
	ck_assert_int_eq(vblk_open(&o, &b), 0);
	ck_assert_uint_eq(disk_capacity(vblk_disk(b)), 1);
	ck_assert_uint_eq(vblk_queue_size(b), VBLK_DEFAULT_QUEUE_SIZE);
	vblk_close(b);

	/* Bad options. */
	o.num_queues = 0;
	ck_assert_int_eq(vblk_open(&o, &b), -EINVAL);
	o.num_queues = 1;
	o.queue_size = 100;
	ck_assert_int_eq(vblk_open(&o, &b), -EINVAL);
	o.queue_size = 0;
	o.serial = "0123456789abcdefghijK";
	ck_assert_int_eq(vblk_open(&o, &b), -EINVAL);
	o.serial = NULL;
	o.flags = 1u << 7;
	ck_assert_int_eq(vblk_open(&o, &b), -EINVAL);
	o.flags = 0;

	/* A read-only fd needs the read-only flag. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	rofd = open(path, O_RDONLY);
	ck_assert_int_ge(rofd, 0);
	o.fd = rofd;
	ck_assert_int_eq(vblk_open(&o, &b), -EINVAL);
	o.flags = VBLK_OPT_READONLY;
	ck_assert_int_eq(vblk_open(&o, &b), 0);
	vblk_close(b);

	/* Path that does not exist. */
	o.path = "/nonexistent/libvmm.img";
	ck_assert_int_eq(vblk_open(&o, &b), -ENOENT);
	close(rofd);
	close(fd);
}
END_TEST

/* O_DIRECT is either honoured or refused with -EINVAL, never dropped. */
START_TEST(test_open_direct)
{
	struct vblk_options o = { .num_queues = 1, .flags = VBLK_OPT_DIRECT };
	struct vblk *b;
	int fd = fg_tmp_image(IMG_SIZE), r, fl;

	ck_assert_int_ge(fd, 0);
	o.fd = fd;
	r = vblk_open(&o, &b);
	ck_assert(r == 0 || r == -EINVAL);
	if (r == 0) {
		fl = fcntl(disk_fd(vblk_disk(b)), F_GETFL);
		ck_assert(fl & O_DIRECT);
		/* The caller's fd is not switched to O_DIRECT. */
		ck_assert(!(fcntl(fd, F_GETFL) & O_DIRECT));
		vblk_close(b);
	}
	close(fd);
}
END_TEST

static Suite *blk_suite(void)
{
	Suite *s = suite_create("blk_requests");
	TCase *tc = tcase_create("rw");
	TCase *ro = tcase_create("read_only");
	TCase *open = tcase_create("open");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_in);
	tcase_add_test(tc, test_out);
	tcase_add_test(tc, test_last_sector);
	tcase_add_test(tc, test_split_header);
	tcase_add_test(tc, test_flush);
	tcase_add_test(tc, test_get_id);
	tcase_add_test(tc, test_get_id_short_buffer);
	tcase_add_test(tc, test_get_id_long_buffer);
	tcase_add_test(tc, test_discard);
	tcase_add_test(tc, test_write_zeroes);
	tcase_add_test(tc, test_write_zeroes_unmap);
	tcase_add_test(tc, test_many_segments);
	tcase_add_test(tc, test_too_many_segments);
	tcase_add_test(tc, test_several_in_one_kick);
	tcase_add_test(tc, test_config_space);
	tcase_add_test(tc, test_write_through_marking);
	tcase_add_test(tc, test_features_need_version_1);
	tcase_add_test(tc, test_second_queue);
	tcase_add_test(tc, test_async_completion);
	tcase_add_test(tc, test_short_read_zero_fill);
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(ro, setup_ro, teardown);
	tcase_add_test(ro, test_read_only);
	suite_add_tcase(s, ro);

	tcase_add_test(open, test_open_options);
	tcase_add_test(open, test_open_direct);
	suite_add_tcase(s, open);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(blk_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
