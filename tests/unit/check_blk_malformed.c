/* SPDX-License-Identifier: MIT */
/*
 * Malformed guest input to virtio-blk (the table).  Every case ends
 * either in a completed request with VIRTIO_BLK_S_IOERR / S_UNSUPP (status
 * byte written, used entry pushed, and the next good request is served), or
 * in -EPROTO from vblk_process_queue() (nothing pushed, queue latched broken
 * until vblk_queue_reset(): the transport's NEEDS_RESET path).  Nothing
 * crashes, hangs or touches memory outside guest RAM (run under ASan).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/virtio_blk.h>

#include "blk/blk-engine.h"
#include "blk/vblk.h"
#include "fake_guest.h"

#define RAM_SIZE (8u << 20)
#define IMG_SIZE (1u << 20)
#define CAP (IMG_SIZE / 512)
#define QSIZE 16
#define FEATS ((1ull << VIRTIO_RING_F_EVENT_IDX) | (1ull << VIRTIO_RING_F_INDIRECT_DESC))

enum expect { EXP_IOERR = VIRTIO_BLK_S_IOERR, EXP_UNSUPP = VIRTIO_BLK_S_UNSUPP, EXP_PROTO = -1 };

static struct fake_guest g;
static struct fg_vq fvq;
static struct virtq vq;
static struct vblk *blk;
static struct blk_engine *eng;
static int img = -1;
/* What the case built: head to expect in the used ring, its status byte. */
static int cur_head;
static uint64_t cur_status_gpa;

static struct fg_buf gbuf(uint32_t len, bool writable)
{
	struct fg_buf b = { fg_alloc(&g, len ? len : 1, 16), len, writable };

	memset(fg_ptr(&g, b.gpa, len ? len : 1), 0x3c, len ? len : 1);
	return b;
}

static void blk_req(uint32_t type, uint64_t sector, const struct fg_buf *d,
		    unsigned int n, bool indirect)
{
	struct fg_blk_req r;

	ck_assert_int_eq(fg_blk_add(&fvq, type, sector, d, n, indirect, &r), 0);
	cur_head = r.head;
	cur_status_gpa = r.status_gpa;
}

static void add_bufs(const struct fg_buf *b, unsigned int n)
{
	cur_head = fg_vq_add(&fvq, b, n, false);
	ck_assert_int_ge(cur_head, 0);
}

static uint64_t hdr(uint32_t type, uint64_t sector)
{
	struct fg_buf h = gbuf(16, false);
	struct virtio_blk_outhdr *p = fg_ptr(&g, h.gpa, 16);

	p->type = htole32(type);
	p->ioprio = 0;
	p->sector = htole64(sector);
	return h.gpa;
}

static uint64_t status_byte(void)
{
	struct fg_buf s = gbuf(1, true);

	*(uint8_t *)fg_ptr(&g, s.gpa, 1) = 0xff;
	cur_status_gpa = s.gpa;
	return s.gpa;
}

/* ---- the cases ------------------------------------------------------- */

static void c_desc_loop(void)
{
	uint64_t h = hdr(VIRTIO_BLK_T_IN, 0), d = gbuf(512, true).gpa, s = status_byte();

	fg_vq_set_desc(&fvq, 0, h, 16, VRING_DESC_F_NEXT, 1);
	fg_vq_set_desc(&fvq, 1, d, 512, VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 2);
	fg_vq_set_desc(&fvq, 2, s, 1, VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 1);
	fg_vq_add_raw_head(&fvq, 0);
}

static void c_next_out_of_range(void)
{
	fg_vq_set_desc(&fvq, 0, hdr(VIRTIO_BLK_T_IN, 0), 16, VRING_DESC_F_NEXT, QSIZE + 3);
	status_byte();
	fg_vq_add_raw_head(&fvq, 0);
}

static void c_head_out_of_range(void)
{
	status_byte();
	fg_vq_add_raw_head(&fvq, 0xffff);
}

static void c_addr_beyond_ram(void)
{
	fg_vq_set_desc(&fvq, 0, hdr(VIRTIO_BLK_T_IN, 0), 16, VRING_DESC_F_NEXT, 1);
	fg_vq_set_desc(&fvq, 1, RAM_SIZE + 4096, 512, VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 2);
	fg_vq_set_desc(&fvq, 2, status_byte(), 1, VRING_DESC_F_WRITE, 0);
	fg_vq_add_raw_head(&fvq, 0);
}

static void c_addr_len_overflow(void)
{
	fg_vq_set_desc(&fvq, 0, hdr(VIRTIO_BLK_T_IN, 0), 16, VRING_DESC_F_NEXT, 1);
	fg_vq_set_desc(&fvq, 1, UINT64_MAX - 255, 512, VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 2);
	fg_vq_set_desc(&fvq, 2, status_byte(), 1, VRING_DESC_F_WRITE, 0);
	fg_vq_add_raw_head(&fvq, 0);
}

static void c_nested_indirect(void)
{
	uint64_t t1 = fg_alloc(&g, 32, 16), t2 = fg_alloc(&g, 16, 16);

	fg_write_desc(&g, t2, 0, status_byte(), 1, VRING_DESC_F_WRITE, 0);
	fg_write_desc(&g, t1, 0, hdr(VIRTIO_BLK_T_IN, 0), 16, VRING_DESC_F_NEXT, 1);
	fg_write_desc(&g, t1, 1, t2, 16, VRING_DESC_F_INDIRECT, 0);
	fg_vq_set_desc(&fvq, 0, t1, 32, VRING_DESC_F_INDIRECT, 0);
	fg_vq_add_raw_head(&fvq, 0);
}

static void c_indirect_beyond_ram(void)
{
	status_byte();
	fg_vq_set_desc(&fvq, 0, RAM_SIZE - 16, 48, VRING_DESC_F_INDIRECT, 0);
	fg_vq_add_raw_head(&fvq, 0);
}

static void c_avail_idx_jump(void)
{
	struct fg_buf d = gbuf(512, true);

	blk_req(VIRTIO_BLK_T_IN, 0, &d, 1, false);
	fg_vq_set_avail_idx(&fvq, (uint16_t)(QSIZE + 5));
}

/* All readable: there is no byte to write a status into. */
static void c_status_not_writable(void)
{
	struct fg_buf b[2] = { { hdr(VIRTIO_BLK_T_IN, 0), 16, false },
			       { status_byte(), 1, false } };

	add_bufs(b, 2);
}

/* A readable "status" after writable data: ring order violation. */
static void c_status_readable_after_data(void)
{
	struct fg_buf b[3] = { { hdr(VIRTIO_BLK_T_IN, 0), 16, false },
			       gbuf(512, true), { status_byte(), 1, false } };

	add_bufs(b, 3);
}

static void c_zero_length_data(void)
{
	struct fg_buf d = gbuf(0, true);

	blk_req(VIRTIO_BLK_T_IN, 0, &d, 1, false);
}

static void c_short_header(void)
{
	struct fg_buf b[2] = { { hdr(VIRTIO_BLK_T_IN, 0), 12, false },
			       { status_byte(), 1, true } };

	add_bufs(b, 2);
}

static void c_no_header(void)
{
	struct fg_buf b[2] = { gbuf(512, true), { status_byte(), 1, true } };

	add_bufs(b, 2);
}

static void c_beyond_capacity(void)
{
	struct fg_buf d = gbuf(512, true);

	blk_req(VIRTIO_BLK_T_IN, CAP, &d, 1, false);
}

static void c_straddles_capacity(void)
{
	struct fg_buf d = gbuf(1024, false);

	blk_req(VIRTIO_BLK_T_OUT, CAP - 1, &d, 1, false);
}

static void c_sector_overflow(void)
{
	struct fg_buf d = gbuf(512, true);

	blk_req(VIRTIO_BLK_T_IN, UINT64_MAX, &d, 1, false);
}

static void c_sector_shift_overflow(void)
{
	struct fg_buf d = gbuf(512, true);

	blk_req(VIRTIO_BLK_T_IN, 1ull << 55, &d, 1, false);
}

static void c_write_read_only(void)
{
	struct fg_buf d = gbuf(512, false);

	blk_req(VIRTIO_BLK_T_OUT, 0, &d, 1, false);
}

static void c_misaligned_len(void)
{
	struct fg_buf d = gbuf(513, true);

	blk_req(VIRTIO_BLK_T_IN, 0, &d, 1, false);
}

static void c_in_with_readable_data(void)
{
	struct fg_buf d[2] = { gbuf(512, false), gbuf(512, true) };

	blk_req(VIRTIO_BLK_T_IN, 0, d, 2, false);
}

static void c_out_with_writable_data(void)
{
	struct fg_buf d[2] = { gbuf(512, false), gbuf(512, true) };

	blk_req(VIRTIO_BLK_T_OUT, 0, d, 2, true);
}

static void c_unknown_type(void)
{
	struct fg_buf d = gbuf(512, true);

	blk_req(0xdead, 0, &d, 1, false);
}

static void c_scsi_cmd(void)
{
	struct fg_buf d = gbuf(512, true);

	blk_req(VIRTIO_BLK_T_SCSI_CMD, 0, &d, 1, false);
}

static void dwz(uint32_t type, unsigned int nseg, uint32_t seglen, uint64_t sector,
		uint32_t nsec, uint32_t flags)
{
	struct fg_buf d = gbuf(nseg * seglen, false);
	struct virtio_blk_discard_write_zeroes *s = fg_ptr(&g, d.gpa, d.len);

	for (unsigned int i = 0; i < nseg && seglen == sizeof(*s); i++) {
		s[i].sector = htole64(sector);
		s[i].num_sectors = htole32(nsec);
		s[i].flags = htole32(flags);
	}
	blk_req(type, 0, &d, 1, false);
}

static void c_discard_unmap(void)
{
	dwz(VIRTIO_BLK_T_DISCARD, 1, 16, 0, 8, VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP);
}

static void c_wz_unknown_flag(void)
{
	dwz(VIRTIO_BLK_T_WRITE_ZEROES, 1, 16, 0, 8, 0x4);
}

static void c_discard_two_segments(void)
{
	dwz(VIRTIO_BLK_T_DISCARD, 2, 16, 0, 8, 0);
}

static void c_discard_bad_seg_len(void)
{
	dwz(VIRTIO_BLK_T_DISCARD, 1, 12, 0, 8, 0);
}

static void c_discard_beyond_capacity(void)
{
	dwz(VIRTIO_BLK_T_DISCARD, 1, 16, CAP - 4, 8, 0);
}

static void c_wz_sector_overflow(void)
{
	dwz(VIRTIO_BLK_T_WRITE_ZEROES, 1, 16, UINT64_MAX - 2, 8, 0);
}

static void c_discard_zero_sectors(void)
{
	dwz(VIRTIO_BLK_T_DISCARD, 1, 16, 0, 0, 0);
}

static void c_discard_too_long(void)
{
	dwz(VIRTIO_BLK_T_DISCARD, 1, 16, 0, VBLK_MAX_DWZ_SECTORS + 1, 0);
}

static void c_discard_read_only(void)
{
	dwz(VIRTIO_BLK_T_DISCARD, 1, 16, 0, 8, 0);
}

static const struct mcase {
	const char *name;
	void (*build)(void);
	enum expect expect;
	uint32_t disk_flags;
} cases[] = {
	{ "descriptor loop", c_desc_loop, EXP_PROTO, 0 },
	{ "next out of range", c_next_out_of_range, EXP_PROTO, 0 },
	{ "head out of range", c_head_out_of_range, EXP_PROTO, 0 },
	{ "address beyond RAM", c_addr_beyond_ram, EXP_PROTO, 0 },
	{ "address+len overflow", c_addr_len_overflow, EXP_PROTO, 0 },
	{ "nested indirect", c_nested_indirect, EXP_PROTO, 0 },
	{ "indirect table beyond RAM", c_indirect_beyond_ram, EXP_PROTO, 0 },
	{ "avail idx jump", c_avail_idx_jump, EXP_PROTO, 0 },
	{ "status descriptor not writable", c_status_not_writable, EXP_PROTO, 0 },
	{ "readable status after writable data", c_status_readable_after_data, EXP_PROTO, 0 },
	{ "zero-length data", c_zero_length_data, EXP_IOERR, 0 },
	{ "header shorter than 16 bytes", c_short_header, EXP_IOERR, 0 },
	{ "no readable header at all", c_no_header, EXP_IOERR, 0 },
	{ "request beyond capacity", c_beyond_capacity, EXP_IOERR, 0 },
	{ "request straddling capacity", c_straddles_capacity, EXP_IOERR, 0 },
	{ "sector UINT64_MAX", c_sector_overflow, EXP_IOERR, 0 },
	{ "sector * 512 overflows", c_sector_shift_overflow, EXP_IOERR, 0 },
	{ "write to read-only disk", c_write_read_only, EXP_IOERR, VBLK_OPT_READONLY },
	{ "misaligned length", c_misaligned_len, EXP_IOERR, 0 },
	{ "IN with readable data", c_in_with_readable_data, EXP_IOERR, 0 },
	{ "OUT with writable data", c_out_with_writable_data, EXP_IOERR, 0 },
	{ "unknown request type", c_unknown_type, EXP_UNSUPP, 0 },
	{ "SCSI passthrough", c_scsi_cmd, EXP_UNSUPP, 0 },
	{ "discard with UNMAP", c_discard_unmap, EXP_UNSUPP, 0 },
	{ "write-zeroes unknown flag", c_wz_unknown_flag, EXP_UNSUPP, 0 },
	{ "discard: two segments", c_discard_two_segments, EXP_IOERR, 0 },
	{ "discard: segment not 16 bytes", c_discard_bad_seg_len, EXP_IOERR, 0 },
	{ "discard beyond capacity", c_discard_beyond_capacity, EXP_IOERR, 0 },
	{ "write-zeroes sector overflow", c_wz_sector_overflow, EXP_IOERR, 0 },
	{ "discard of zero sectors", c_discard_zero_sectors, EXP_IOERR, 0 },
	{ "discard above max_discard_sectors", c_discard_too_long, EXP_IOERR, 0 },
	{ "discard on read-only disk", c_discard_read_only, EXP_IOERR, VBLK_OPT_READONLY },
};

static void setup_case(uint32_t flags)
{
	struct vblk_options o = { .num_queues = 1, .queue_size = QSIZE, .flags = flags };
	uint8_t buf[4096];

	img = fg_tmp_image(IMG_SIZE);
	ck_assert_int_ge(img, 0);
	memset(buf, 0x42, sizeof(buf));
	ck_assert_int_eq(pwrite(img, buf, sizeof(buf), 0), sizeof(buf));
	o.fd = img;
	ck_assert_int_eq(vblk_open(&o, &blk), 0);
	ck_assert_int_eq(blk_sync_engine_create(&eng), 0);
	ck_assert_int_eq(fg_init(&g, RAM_SIZE), 0);
	ck_assert_int_eq(fg_vq_init(&g, &fvq, QSIZE, FEATS), 0);
	ck_assert_int_eq(fg_vq_attach(&fvq, &vq), 0);
	cur_head = -1;
	cur_status_gpa = 0;
}

static void teardown_case(void)
{
	fg_vq_destroy(&fvq);
	fg_destroy(&g);
	blk_engine_destroy(eng);
	vblk_close(blk);
	close(img);
}

/* A good read of sector 0 on the current ring must succeed. */
static void good_request_ok(void)
{
	struct fg_buf d = gbuf(512, true);
	bool notify = false;
	uint32_t id, len;
	struct fg_blk_req r;

	ck_assert_int_eq(fg_blk_add(&fvq, VIRTIO_BLK_T_IN, 0, &d, 1, false, &r), 0);
	fg_vq_publish(&fvq);
	ck_assert_int_eq(vblk_process_queue(blk, 0, &vq, eng, &notify), 1);
	ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &len), 1);
	ck_assert_uint_eq(id, (unsigned int)r.head);
	ck_assert_uint_eq(fg_blk_status(&g, &r), VIRTIO_BLK_S_OK);
	ck_assert_uint_eq(*(uint8_t *)fg_ptr(&g, d.gpa, 1), 0x42);
}

START_TEST(test_malformed)
{
	const struct mcase *c = &cases[_i];
	struct vblk_queue_stats st;
	bool notify = false;
	uint32_t id, len;
	int r;

	setup_case(c->disk_flags);
	c->build();
	fg_vq_publish(&fvq);
	r = vblk_process_queue(blk, 0, &vq, eng, &notify);
	ck_assert_int_eq(vblk_queue_get_stats(blk, 0, &st), 0);

	if (c->expect == EXP_PROTO) {
		ck_assert_msg(r == -EPROTO, "%s: got %d, want -EPROTO", c->name, r);
		ck_assert_msg(vblk_queue_broken(blk, 0), "%s: queue not latched", c->name);
		ck_assert_uint_eq(fg_vq_used_pending(&fvq), 0);
		if (cur_status_gpa)
			ck_assert_uint_eq(*(uint8_t *)fg_ptr(&g, cur_status_gpa, 1), 0xff);
		ck_assert_uint_eq(st.proto_errors, 1);
		/* Latched: nothing is served until reset. */
		ck_assert_int_eq(vblk_process_queue(blk, 0, &vq, eng, &notify), -EPROTO);
		/* Device reset: new ring, queue state cleared, works again. */
		vblk_queue_reset(blk, 0);
		virtq_reset(&vq);
		fg_vq_destroy(&fvq);
		ck_assert_int_eq(fg_vq_init(&g, &fvq, QSIZE, FEATS), 0);
		ck_assert_int_eq(fg_vq_attach(&fvq, &vq), 0);
		ck_assert(!vblk_queue_broken(blk, 0));
	} else {
		ck_assert_msg(r == 1, "%s: got %d, want 1 chain", c->name, r);
		ck_assert(notify);
		ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &len), 1);
		ck_assert_uint_eq(id, (unsigned int)cur_head);
		ck_assert_uint_eq(len, 1);
		ck_assert_msg(*(uint8_t *)fg_ptr(&g, cur_status_gpa, 1) == (uint8_t)c->expect,
			      "%s: status %u, want %d", c->name,
			      *(uint8_t *)fg_ptr(&g, cur_status_gpa, 1), c->expect);
		ck_assert_uint_eq(c->expect == EXP_IOERR ? st.io_errors : st.unsupported, 1);
		ck_assert_uint_eq(st.proto_errors, 0);
	}
	good_request_ok();
	teardown_case();
}
END_TEST

/* The file is not modified by any rejected write. */
START_TEST(test_rejected_writes_leave_image)
{
	struct fg_buf d = { 0 };
	bool notify = false;
	uint8_t b[512];

	setup_case(0);
	d = gbuf(1024, false);
	memset(fg_ptr(&g, d.gpa, 1024), 0x99, 1024);
	blk_req(VIRTIO_BLK_T_OUT, CAP - 1, &d, 1, false);
	d.len = 511;
	blk_req(VIRTIO_BLK_T_OUT, 0, &d, 1, false);
	fg_vq_publish(&fvq);
	ck_assert_int_eq(vblk_process_queue(blk, 0, &vq, eng, &notify), 2);
	ck_assert_int_eq(pread(img, b, sizeof(b), 0), sizeof(b));
	for (unsigned int i = 0; i < sizeof(b); i++)
		ck_assert_uint_eq(b[i], 0x42);
	ck_assert_int_eq(pread(img, b, sizeof(b), IMG_SIZE - 512), sizeof(b));
	for (unsigned int i = 0; i < sizeof(b); i++)
		ck_assert_uint_eq(b[i], 0);
	teardown_case();
}
END_TEST

static Suite *malformed_suite(void)
{
	Suite *s = suite_create("blk_malformed");
	TCase *tc = tcase_create("table");

	tcase_add_loop_test(tc, test_malformed, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, test_rejected_writes_leave_image);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(malformed_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
