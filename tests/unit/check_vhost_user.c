/* SPDX-License-Identifier: MIT */
/*
 * minivmm-blkd through its socket, without KVM (tests/harness/vu_rig.h):
 * what a vhost-user front end negotiates (features, protocol features,
 * queues, config space), I/O on every ring (data lands in the image;
 * flush, discard, write-zeroes, GET_ID), a read-only disk, ring stop and
 * resume (GET_VRING_BASE with requests in flight), a call eventfd swapped
 * while the ring runs, a new memory table while it runs, RESET_DEVICE.
 * The daemon runs with its default seccomp filters (except in sanitizer
 * builds), so a system call off its lists kills it and fails the test.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "vu_rig.h"

#define BIT(n) (1ull << (n))
#define BLK 4096u
#define ALL_FEATURES                                                          \
	(BIT(VIRTIO_F_VERSION_1) | BIT(VIRTIO_RING_F_EVENT_IDX) |               \
	 BIT(VIRTIO_RING_F_INDIRECT_DESC) | BIT(VIRTIO_BLK_F_SEG_MAX) |          \
	 BIT(VIRTIO_BLK_F_SIZE_MAX) | BIT(VIRTIO_BLK_F_BLK_SIZE) |                \
	 BIT(VIRTIO_BLK_F_MQ) | BIT(VIRTIO_BLK_F_FLUSH) |                       \
	 BIT(VIRTIO_BLK_F_CONFIG_WCE) | BIT(VIRTIO_BLK_F_DISCARD) |             \
	 BIT(VIRTIO_BLK_F_WRITE_ZEROES) | BIT(VIRTIO_BLK_F_RO) |                \
	 BIT(VIRTIO_BLK_F_TOPOLOGY))

static struct vr R;

static void spawn(const char *disk_extra)
{
	struct vr_opts o = { .disk_extra = disk_extra };

	ck_assert_int_eq(vr_spawn(&R, BLKD_BIN, &o), 0);
}

static void teardown(void)
{
	char why[2304];

	ck_assert_msg(!vr_end(&R, why, sizeof(why)), "%s", why);
}

static void fill(uint8_t *b, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

START_TEST(negotiation)
{
	struct virtio_blk_config cfg;
	uint8_t tail[64];
	uint64_t pf;

	spawn(",num-queues=3,serial=vu-test");
	ck_assert_int_eq(vr_connect_bare(&R), 0);
	/* Virtio features: the device's, plus PROTOCOL_FEATURES. */
	ck_assert(R.f.features & BIT(VHOST_USER_F_PROTOCOL_FEATURES));
	ck_assert_uint_eq(R.f.features & (ALL_FEATURES & ~BIT(VIRTIO_BLK_F_RO)),
			  ALL_FEATURES & ~BIT(VIRTIO_BLK_F_RO));
	ck_assert(!(R.f.features & BIT(VIRTIO_BLK_F_RO)));
	/* Protocol features: exactly what the back end implements. */
	ck_assert_int_eq(vuf_get_u64(&R.f, VHOST_USER_GET_PROTOCOL_FEATURES, &pf), 0);
	ck_assert_uint_eq(pf, BIT(VHOST_USER_PROTOCOL_F_MQ) |
				      BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK) |
				      BIT(VHOST_USER_PROTOCOL_F_CONFIG) |
				      BIT(VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD) |
				      BIT(VHOST_USER_PROTOCOL_F_RESET_DEVICE));
	ck_assert_uint_eq(R.f.queue_num, 3);
	/* Config space as QEMU 7.2 reads it (60 bytes). */
	ck_assert_int_eq(vuf_get_config(&R.f, 0, sizeof(cfg), &cfg), 0);
	ck_assert_uint_eq(cfg.capacity, (16u << 20) / 512);
	ck_assert_uint_eq(cfg.seg_max, 254);
	ck_assert_uint_eq(cfg.size_max, 16384);
	ck_assert_uint_eq(cfg.blk_size, 512);
	ck_assert_uint_eq(cfg.num_queues, 3);
	ck_assert_uint_eq(cfg.wce, 1);
	/* Past the device's config space: zeros, not an error. */
	memset(tail, 0xee, sizeof(tail));
	ck_assert_int_eq(vuf_get_config(&R.f, sizeof(cfg), sizeof(tail), tail), 0);
	for (unsigned int i = 0; i < sizeof(tail); i++)
		ck_assert_uint_eq(tail[i], 0);
	/* wce is writable (SET_CONFIG), acknowledged. */
	{
		struct vhost_user_config c = { .offset = offsetof(struct virtio_blk_config, wce),
					       .size = 1 };
		uint8_t wce = 0;

		c.region[0] = 0;
		ck_assert_int_eq(vuf_set(&R.f, VHOST_USER_SET_CONFIG, &c,
					 VHOST_USER_CONFIG_HDR_SIZE + 1, NULL, 0), 0);
		ck_assert_int_eq(vuf_get_config(&R.f, c.offset, 1, &wce), 0);
		ck_assert_uint_eq(wce, 0);
	}
	teardown();
}
END_TEST

/* Writes on every ring land in the image; reads see them; flush; GET_ID. */
START_TEST(io_every_ring)
{
	uint8_t w[BLK], rd[BLK], img[BLK];
	char id[20];

	spawn(",num-queues=4,serial=vu-disk");
	ck_assert_int_eq(vr_connect(&R, 4, 128, ALL_FEATURES, 0), 0);
	for (unsigned int q = 0; q < 4; q++) {
		uint64_t sector = 100 + q * 64;

		fill(w, BLK, q + 1);
		ck_assert_int_eq(vr_req(&R, q, VIRTIO_BLK_T_OUT, sector, w, BLK),
				 VIRTIO_BLK_S_OK);
		ck_assert_int_eq(vr_req(&R, q, VIRTIO_BLK_T_FLUSH, 0, NULL, 0),
				 VIRTIO_BLK_S_OK);
		memset(rd, 0, BLK);
		ck_assert_int_eq(vr_req(&R, (q + 1) % 4, VIRTIO_BLK_T_IN, sector, rd, BLK),
				 VIRTIO_BLK_S_OK);
		ck_assert_mem_eq(rd, w, BLK);
		ck_assert_int_eq(vr_img_read(&R, sector * 512, img, BLK), 0);
		ck_assert_mem_eq(img, w, BLK);
	}
	/* Untouched data is the image's. */
	ck_assert_int_eq(vr_req(&R, 2, VIRTIO_BLK_T_IN, 8, rd, BLK), VIRTIO_BLK_S_OK);
	for (unsigned int i = 0; i < BLK; i++)
		ck_assert_uint_eq(rd[i], vr_pat(8 * 512 + i));
	memset(id, 0, sizeof(id));
	ck_assert_int_eq(vr_req(&R, 3, VIRTIO_BLK_T_GET_ID, 0, id, sizeof(id)),
			 VIRTIO_BLK_S_OK);
	ck_assert_str_eq(id, "vu-disk");
	/* Beyond the capacity: an I/O error, nothing else happens. */
	ck_assert_int_eq(vr_req(&R, 0, VIRTIO_BLK_T_IN, (16u << 20) / 512, rd, BLK),
			 VIRTIO_BLK_S_IOERR);
	teardown();
}
END_TEST

START_TEST(discard_write_zeroes)
{
	struct virtio_blk_discard_write_zeroes range = { 0 };
	uint8_t w[4 * BLK], rd[4 * BLK], zero[4 * BLK];

	spawn(",num-queues=1");
	ck_assert_int_eq(vr_connect(&R, 1, 64, ALL_FEATURES, 0), 0);
	memset(zero, 0, sizeof(zero));
	for (unsigned int k = 0; k < 2; k++) {
		uint32_t type = k ? VIRTIO_BLK_T_WRITE_ZEROES : VIRTIO_BLK_T_DISCARD;
		uint64_t sector = 2048 + k * 64;

		fill(w, sizeof(w), 9 + k);
		ck_assert_int_eq(vr_req(&R, 0, VIRTIO_BLK_T_OUT, sector, w, sizeof(w)),
				 VIRTIO_BLK_S_OK);
		range.sector = sector + 8; /* the middle two blocks */
		range.num_sectors = 16;
		ck_assert_int_eq(vr_req(&R, 0, type, 0, &range, sizeof(range)),
				 VIRTIO_BLK_S_OK);
		ck_assert_int_eq(vr_req(&R, 0, VIRTIO_BLK_T_IN, sector, rd, sizeof(rd)),
				 VIRTIO_BLK_S_OK);
		ck_assert_mem_eq(rd, w, BLK);
		ck_assert_mem_eq(rd + BLK, zero, 2 * BLK);
		ck_assert_mem_eq(rd + 3 * BLK, w + 3 * BLK, BLK);
		ck_assert_int_eq(vr_img_read(&R, sector * 512, rd, sizeof(rd)), 0);
		ck_assert_mem_eq(rd + BLK, zero, 2 * BLK);
	}
	teardown();
}
END_TEST

START_TEST(read_only)
{
	struct virtio_blk_discard_write_zeroes range = { .sector = 0, .num_sectors = 8 };
	uint8_t w[BLK], img[BLK];

	spawn(",ro=on,num-queues=1");
	ck_assert_int_eq(vr_connect(&R, 1, 64, ALL_FEATURES, 0), 0);
	ck_assert(R.f.features & BIT(VIRTIO_BLK_F_RO));
	ck_assert(!(R.f.features & BIT(VIRTIO_BLK_F_DISCARD)));
	fill(w, BLK, 77);
	ck_assert_int_eq(vr_req(&R, 0, VIRTIO_BLK_T_OUT, 0, w, BLK), VIRTIO_BLK_S_IOERR);
	ck_assert_int_eq(vr_req(&R, 0, VIRTIO_BLK_T_WRITE_ZEROES, 0, &range, sizeof(range)),
			 VIRTIO_BLK_S_IOERR);
	ck_assert_int_eq(vr_img_read(&R, 0, img, BLK), 0);
	for (unsigned int i = 0; i < BLK; i++)
		ck_assert_uint_eq(img[i], vr_pat(i));
	/* Reads still work. */
	ck_assert_int_eq(vr_req(&R, 0, VIRTIO_BLK_T_IN, 0, w, BLK), VIRTIO_BLK_S_OK);
	ck_assert_mem_eq(w, img, BLK);
	teardown();
}
END_TEST

/*
 * GET_VRING_BASE stops the ring with requests in flight: every request
 * popped before it has completed (the base equals the used entries), and a
 * ring restarted at that base serves what was queued after the stop.
 */
START_TEST(stop_and_resume)
{
	const unsigned int n = 48;
	struct fg_blk_req reqs[48];
	uint64_t gpa, base_hva;
	uint32_t base = 0;
	unsigned int used;
	int kick2;

	spawn(",num-queues=1");
	ck_assert_int_eq(vr_connect(&R, 1, 64, ALL_FEATURES, 0), 0);
	gpa = fg_alloc(&R.g, (uint64_t)n * BLK, 4096);
	ck_assert_uint_ne(gpa, 0);
	for (unsigned int i = 0; i < n; i++) {
		struct fg_buf b = { gpa + (uint64_t)i * BLK, BLK, true };

		ck_assert_int_eq(fg_blk_add(&R.q[0].vq, VIRTIO_BLK_T_IN, i * 8, &b, 1,
					    true, &reqs[i]), 0);
	}
	vr_kick(&R, 0);
	ck_assert_int_eq(vuf_get_vring_base(&R.f, 0, &base), 0);
	/* After the reply, the device touches the ring no more: what it
	 * took has all been completed. */
	used = fg_vq_used_idx(&R.q[0].vq);
	ck_assert_uint_eq(used, base);
	ck_assert_uint_le(base, n);
	for (unsigned int i = 0; i < base; i++)
		ck_assert_uint_eq(fg_blk_status(&R.g, &reqs[i]), VIRTIO_BLK_S_OK);
	/* Restart at base with a new kick fd, as QEMU does at resume. */
	base_hva = (uint64_t)(uintptr_t)R.g.ram;
	kick2 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ck_assert_int_ge(kick2, 0);
	close(R.q[0].kick);
	R.q[0].kick = kick2;
	ck_assert_int_eq(vuf_ring_setup(&R.f, 0, 64, base, base_hva + R.q[0].vq.desc_gpa,
					base_hva + R.q[0].vq.avail_gpa,
					base_hva + R.q[0].vq.used_gpa, kick2, R.q[0].call), 0);
	ck_assert_int_eq(vuf_ring_enable(&R.f, 0, true), 0);
	vr_kick(&R, 0);
	ck_assert_uint_eq(vr_wait_used(&R, 0, n, NULL, 10000), n);
	ck_assert_uint_eq(fg_vq_used_idx(&R.q[0].vq), n);
	for (unsigned int i = 0; i < n; i++) {
		uint8_t *d = fg_ptr(&R.g, gpa + (uint64_t)i * BLK, BLK);

		ck_assert_uint_eq(fg_blk_status(&R.g, &reqs[i]), VIRTIO_BLK_S_OK);
		ck_assert_uint_eq(d[5], vr_pat((uint64_t)i * 8 * 512 + 5));
	}
	teardown();
}
END_TEST

/* SET_VRING_CALL while the ring runs (QEMU masks/unmasks this way): the
 * interrupts move to the new eventfd. */
START_TEST(call_fd_swap)
{
	uint8_t b[BLK];
	uint64_t v = 0, idx = 0;
	int call2;

	spawn(",num-queues=1,event-idx=off");
	ck_assert_int_eq(vr_connect(&R, 1, 64, ALL_FEATURES, 0), 0);
	ck_assert_int_eq(vr_req(&R, 0, VIRTIO_BLK_T_IN, 0, b, BLK), VIRTIO_BLK_S_OK);
	call2 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ck_assert_int_ge(call2, 0);
	ck_assert_int_eq(vuf_set(&R.f, VHOST_USER_SET_VRING_CALL, &idx, 8, &call2, 1), 0);
	/* Drain the old one, then I/O: only the new one fires. */
	while (read(R.q[0].call, &v, 8) == 8)
		;
	{
		int old = R.q[0].call;

		R.q[0].call = call2;
		ck_assert_int_eq(vr_req(&R, 0, VIRTIO_BLK_T_IN, 8, b, BLK), VIRTIO_BLK_S_OK);
		ck_assert_int_eq(read(old, &v, 8), -1);
		ck_assert_int_eq(errno, EAGAIN);
		close(old);
	}
	/* No call fd at all (NOFD): completions still land in the ring. */
	idx = VHOST_USER_VRING_NOFD_MASK;
	ck_assert_int_eq(vuf_set(&R.f, VHOST_USER_SET_VRING_CALL, &idx, 8, NULL, 0), 0);
	ck_assert_int_eq(vr_req(&R, 0, VIRTIO_BLK_T_IN, 16, b, BLK), VIRTIO_BLK_S_OK);
	teardown();
}
END_TEST

/*
 * A new memory table while rings run (QEMU sends one when the guest's
 * memory map changes): the rings restart on the new mapping; here the same
 * memfd at another front-end address, so the ring addresses change too.
 */
START_TEST(mem_table_update)
{
	uint8_t w[BLK], rd[BLK];
	struct vhost_user_memory m = { .nregions = 1 };
	uint8_t *alias;

	spawn(",num-queues=2");
	ck_assert_int_eq(vr_connect(&R, 2, 64, ALL_FEATURES, 0), 0);
	fill(w, BLK, 3);
	ck_assert_int_eq(vr_req(&R, 1, VIRTIO_BLK_T_OUT, 40, w, BLK), VIRTIO_BLK_S_OK);
	alias = mmap(NULL, R.g.ram_size, PROT_READ | PROT_WRITE, MAP_SHARED, R.g.fd, 0);
	ck_assert_ptr_ne(alias, MAP_FAILED);
	m.regions[0] = (struct vhost_user_mem_region){ 0, R.g.ram_size,
						       (uint64_t)(uintptr_t)alias, 0 };
	ck_assert_int_eq(vuf_set(&R.f, VHOST_USER_SET_MEM_TABLE, &m,
				 8 + sizeof(m.regions[0]), &R.g.fd, 1), 0);
	for (unsigned int q = 0; q < 2; q++) {
		struct vhost_user_vring_addr a = {
			q, 0, (uint64_t)(uintptr_t)alias + R.q[q].vq.desc_gpa,
			(uint64_t)(uintptr_t)alias + R.q[q].vq.used_gpa,
			(uint64_t)(uintptr_t)alias + R.q[q].vq.avail_gpa, 0
		};

		ck_assert_int_eq(vuf_set(&R.f, VHOST_USER_SET_VRING_ADDR, &a, sizeof(a),
					 NULL, 0), 0);
		memset(rd, 0, BLK);
		ck_assert_int_eq(vr_req(&R, q, VIRTIO_BLK_T_IN, 40, rd, BLK),
				 VIRTIO_BLK_S_OK);
		ck_assert_mem_eq(rd, w, BLK);
	}
	munmap(alias, R.g.ram_size);
	teardown();
}
END_TEST

/* RESET_DEVICE stops everything; the front end sets the device up again. */
START_TEST(reset_device)
{
	uint8_t b[BLK];
	uint64_t base = 0;
	uint32_t vb;

	spawn(",num-queues=1");
	ck_assert_int_eq(vr_connect(&R, 1, 64, ALL_FEATURES, 0), 0);
	ck_assert_int_eq(vr_req(&R, 0, VIRTIO_BLK_T_IN, 0, b, BLK), VIRTIO_BLK_S_OK);
	ck_assert_int_eq(vuf_set(&R.f, VHOST_USER_RESET_DEVICE, NULL, 0, NULL, 0), 0);
	/* Stopped and forgotten: the ring reports base 0 (no state). */
	ck_assert_int_eq(vuf_get_vring_base(&R.f, 0, &vb), 0);
	ck_assert_uint_eq(vb, 0);
	/* A fresh ring on fresh memory, as after a guest reset. */
	fg_vq_destroy(&R.q[0].vq);
	ck_assert_int_eq(fg_vq_init(&R.g, &R.q[0].vq, 64,
				    R.features & (BIT(VIRTIO_RING_F_EVENT_IDX) |
						  BIT(VIRTIO_RING_F_INDIRECT_DESC))), 0);
	base = (uint64_t)(uintptr_t)R.g.ram;
	ck_assert_int_eq(vuf_set_features(&R.f, R.features), 0);
	ck_assert_int_eq(vuf_set_mem_one(&R.f, R.g.fd, R.g.ram, R.g.ram_size), 0);
	ck_assert_int_eq(vuf_ring_setup(&R.f, 0, 64, 0, base + R.q[0].vq.desc_gpa,
					base + R.q[0].vq.avail_gpa,
					base + R.q[0].vq.used_gpa, R.q[0].kick,
					R.q[0].call), 0);
	ck_assert_int_eq(vuf_ring_enable(&R.f, 0, true), 0);
	ck_assert_int_eq(vr_req(&R, 0, VIRTIO_BLK_T_IN, 0, b, BLK), VIRTIO_BLK_S_OK);
	teardown();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vhost_user");
	TCase *tc = tcase_create("blkd");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, negotiation);
	tcase_add_test(tc, io_every_ring);
	tcase_add_test(tc, discard_write_zeroes);
	tcase_add_test(tc, read_only);
	tcase_add_test(tc, stop_and_resume);
	tcase_add_test(tc, call_fd_swap);
	tcase_add_test(tc, mem_table_update);
	tcase_add_test(tc, reset_device);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
