/* SPDX-License-Identifier: MIT */
/*
 * Split virtqueue, device side: chain walking (direct, indirect, mixed),
 * pop/push and the used ring, avail_count, 16-bit index wrap-around, and
 * rejection of every malformed-ring case with -EPROTO.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "fake_guest.h"
#include "virtio/virtqueue.h"

#define RAM_SIZE (16u << 20)
#define FEAT_ALL ((1ull << VIRTIO_RING_F_EVENT_IDX) | (1ull << VIRTIO_RING_F_INDIRECT_DESC))

static struct fake_guest g;
static struct fg_vq fvq;
static struct virtq vq;
static struct virtq_chain *chain;

static void setup_size(uint16_t size, uint64_t features)
{
	ck_assert_int_eq(fg_init(&g, RAM_SIZE), 0);
	ck_assert_int_eq(fg_vq_init(&g, &fvq, size, features), 0);
	ck_assert_int_eq(fg_vq_attach(&fvq, &vq), 0);
	chain = malloc(sizeof(*chain));
	ck_assert_ptr_nonnull(chain);
}

static void setup(void)
{
	setup_size(16, FEAT_ALL);
}

static void teardown(void)
{
	free(chain);
	fg_vq_destroy(&fvq);
	fg_destroy(&g);
}

/* A 3-buffer chain: 16 readable, 100 readable, 64 writable bytes. */
static void make_bufs(struct fg_buf b[3])
{
	b[0] = (struct fg_buf){ fg_alloc(&g, 16, 16), 16, false };
	b[1] = (struct fg_buf){ fg_alloc(&g, 100, 8), 100, false };
	b[2] = (struct fg_buf){ fg_alloc(&g, 64, 8), 64, true };
}

static void check_chain(const struct fg_buf b[3], int head)
{
	ck_assert_uint_eq(chain->head, (unsigned int)head);
	ck_assert_uint_eq(chain->nr_out, 2);
	ck_assert_uint_eq(chain->nr_in, 1);
	ck_assert_uint_eq(chain->in_len, 64);
	for (int i = 0; i < 3; i++) {
		ck_assert_ptr_eq(chain->iov[i].iov_base, fg_ptr(&g, b[i].gpa, b[i].len));
		ck_assert_uint_eq(chain->iov[i].iov_len, b[i].len);
	}
}

START_TEST(test_start_validation)
{
	struct virtq v;

	ck_assert_int_eq(virtq_start(&v, &g.mem, 0, fvq.desc_gpa, fvq.avail_gpa,
				     fvq.used_gpa, false, false), -EINVAL);
	ck_assert_int_eq(virtq_start(&v, &g.mem, 12, fvq.desc_gpa, fvq.avail_gpa,
				     fvq.used_gpa, false, false), -EINVAL);
	ck_assert_int_eq(virtq_start(&v, &g.mem, 2048, fvq.desc_gpa, fvq.avail_gpa,
				     fvq.used_gpa, false, false), -EINVAL);
	ck_assert_int_eq(virtq_start(&v, &g.mem, 16, fvq.desc_gpa + 8, fvq.avail_gpa,
				     fvq.used_gpa, false, false), -EINVAL);
	ck_assert_int_eq(virtq_start(&v, &g.mem, 16, fvq.desc_gpa, fvq.avail_gpa + 1,
				     fvq.used_gpa, false, false), -EINVAL);
	ck_assert_int_eq(virtq_start(&v, &g.mem, 16, fvq.desc_gpa, fvq.avail_gpa,
				     fvq.used_gpa + 2, false, false), -EINVAL);
	ck_assert_int_eq(virtq_start(&v, &g.mem, 16, RAM_SIZE - 64, fvq.avail_gpa,
				     fvq.used_gpa, false, false), -EINVAL);
	ck_assert_int_eq(virtq_start(&v, &g.mem, 16, fvq.desc_gpa, fvq.avail_gpa,
				     UINT64_MAX - 3, false, false), -EINVAL);
}
END_TEST

START_TEST(test_empty)
{
	ck_assert_uint_eq(virtq_avail_count(&vq), 0);
	ck_assert_int_eq(virtq_pop(&vq, chain), 0);
}
END_TEST

START_TEST(test_direct_chain)
{
	struct fg_buf b[3];
	int head;

	make_bufs(b);
	head = fg_vq_add(&fvq, b, 3, false);
	ck_assert_int_ge(head, 0);
	ck_assert_int_eq(virtq_pop(&vq, chain), 0); /* not yet published */
	fg_vq_publish(&fvq);
	ck_assert_int_eq(virtq_pop(&vq, chain), 1);
	check_chain(b, head);
	ck_assert_int_eq(virtq_pop(&vq, chain), 0);
}
END_TEST

START_TEST(test_indirect_chain)
{
	struct fg_buf b[3];
	int head;

	make_bufs(b);
	head = fg_vq_add(&fvq, b, 3, true);
	ck_assert_int_ge(head, 0);
	fg_vq_publish(&fvq);
	ck_assert_int_eq(virtq_pop(&vq, chain), 1);
	check_chain(b, head);
}
END_TEST

START_TEST(test_mixed_chains)
{
	struct fg_buf b[3][3];
	int heads[3];

	for (int i = 0; i < 3; i++) {
		make_bufs(b[i]);
		heads[i] = fg_vq_add(&fvq, b[i], 3, i == 1);
		ck_assert_int_ge(heads[i], 0);
	}
	fg_vq_publish(&fvq);
	ck_assert_uint_eq(virtq_avail_count(&vq), 3);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(virtq_pop(&vq, chain), 1);
		check_chain(b[i], heads[i]);
	}
	ck_assert_uint_eq(virtq_avail_count(&vq), 0);
}
END_TEST

/* Direct descriptors ending in an indirect one: segments are concatenated. */
START_TEST(test_direct_then_indirect)
{
	uint64_t d0 = fg_alloc(&g, 16, 16), d1 = fg_alloc(&g, 32, 16);
	uint64_t t = fg_alloc(&g, 32, 16);

	fg_write_desc(&g, t, 0, d1, 32, VRING_DESC_F_NEXT, 1);
	fg_write_desc(&g, t, 1, d1, 1, VRING_DESC_F_WRITE, 0);
	fg_vq_set_desc(&fvq, 0, d0, 16, VRING_DESC_F_NEXT, 1);
	fg_vq_set_desc(&fvq, 1, t, 32, VRING_DESC_F_INDIRECT, 0);
	fg_vq_add_raw_head(&fvq, 0);
	fg_vq_publish(&fvq);
	ck_assert_int_eq(virtq_pop(&vq, chain), 1);
	ck_assert_uint_eq(chain->nr_out, 2);
	ck_assert_uint_eq(chain->nr_in, 1);
}
END_TEST

START_TEST(test_zero_length_desc)
{
	struct fg_buf b[4];

	make_bufs(b);
	b[3] = b[2];
	b[2] = (struct fg_buf){ fg_alloc(&g, 8, 8), 0, true };
	ck_assert_int_ge(fg_vq_add(&fvq, b, 4, false), 0);
	fg_vq_publish(&fvq);
	ck_assert_int_eq(virtq_pop(&vq, chain), 1);
	ck_assert_uint_eq(chain->nr_out, 2);
	ck_assert_uint_eq(chain->nr_in, 1); /* the empty one carries nothing */
	ck_assert_uint_eq(chain->in_len, 64);
}
END_TEST

START_TEST(test_push_used_ring)
{
	struct fg_buf b[3];
	uint32_t id, len;
	int h1, h2;

	make_bufs(b);
	h1 = fg_vq_add(&fvq, b, 3, false);
	h2 = fg_vq_add(&fvq, b, 3, true);
	fg_vq_publish(&fvq);
	ck_assert_int_eq(virtq_pop(&vq, chain), 1);
	ck_assert_uint_eq(chain->head, (unsigned int)h1);
	ck_assert_int_eq(virtq_pop(&vq, chain), 1);
	ck_assert_uint_eq(chain->head, (unsigned int)h2);

	/* Completion out of order. */
	virtq_push(&vq, (uint16_t)h2, 7);
	ck_assert_uint_eq(fg_vq_used_idx(&fvq), 1);
	virtq_push(&vq, (uint16_t)h1, 64);
	ck_assert_uint_eq(fg_vq_used_idx(&fvq), 2);
	ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &len), 1);
	ck_assert_uint_eq(id, (unsigned int)h2);
	ck_assert_uint_eq(len, 7);
	ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &len), 1);
	ck_assert_uint_eq(id, (unsigned int)h1);
	ck_assert_uint_eq(len, 64);
	ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &len), 0);
	/* Bad head from a buggy caller is ignored, not written. */
	virtq_push(&vq, 16, 1);
	ck_assert_uint_eq(fg_vq_used_idx(&fvq), 2);
}
END_TEST

START_TEST(test_avail_count)
{
	struct fg_buf b[3];

	make_bufs(b);
	for (int i = 0; i < 5; i++)
		ck_assert_int_ge(fg_vq_add(&fvq, b, 3, true), 0);
	ck_assert_uint_eq(virtq_avail_count(&vq), 0);
	fg_vq_publish(&fvq);
	ck_assert_uint_eq(virtq_avail_count(&vq), 5);
	ck_assert_int_eq(virtq_pop(&vq, chain), 1);
	ck_assert_int_eq(virtq_pop(&vq, chain), 1);
	ck_assert_uint_eq(virtq_avail_count(&vq), 3);
}
END_TEST

/* More than 65536 requests through a 4-entry queue: every index wraps. */
START_TEST(test_wraparound)
{
	struct fg_buf b[3];
	uint32_t id, len;

	teardown();
	setup_size(4, FEAT_ALL);
	make_bufs(b);
	for (unsigned int i = 0; i < 70000; i++) {
		int h1 = fg_vq_add(&fvq, b, 3, (i & 1) != 0);
		int h2 = fg_vq_add(&fvq, b, 1, false);

		ck_assert_int_ge(h1, 0);
		ck_assert_int_ge(h2, 0);
		fg_vq_publish(&fvq);
		ck_assert_uint_eq(virtq_avail_count(&vq), 2);
		ck_assert_int_eq(virtq_pop(&vq, chain), 1);
		ck_assert_uint_eq(chain->head, (unsigned int)h1);
		ck_assert_uint_eq(chain->nr_out + chain->nr_in, 3);
		virtq_push(&vq, chain->head, i);
		ck_assert_int_eq(virtq_pop(&vq, chain), 1);
		ck_assert_uint_eq(chain->head, (unsigned int)h2);
		virtq_push(&vq, chain->head, 0);
		ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &len), 1);
		ck_assert_uint_eq(id, (unsigned int)h1);
		ck_assert_uint_eq(len, i);
		ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &len), 1);
		ck_assert_uint_eq(id, (unsigned int)h2);
	}
	ck_assert_uint_eq(vq.last_avail_idx, (uint16_t)140000);
	ck_assert_uint_eq(fg_vq_used_idx(&fvq), (uint16_t)140000);
}
END_TEST

/* ---- malformed rings: all -EPROTO ------------------------------------- */

static void raw_publish(uint16_t head)
{
	fg_vq_add_raw_head(&fvq, head);
	fg_vq_publish(&fvq);
}

START_TEST(test_loop)
{
	uint64_t d = fg_alloc(&g, 64, 16);

	fg_vq_set_desc(&fvq, 0, d, 16, VRING_DESC_F_NEXT, 1);
	fg_vq_set_desc(&fvq, 1, d, 16, VRING_DESC_F_NEXT, 2);
	fg_vq_set_desc(&fvq, 2, d, 16, VRING_DESC_F_NEXT, 0);
	raw_publish(0);
	ck_assert_int_eq(virtq_pop(&vq, chain), -EPROTO);
}
END_TEST

START_TEST(test_self_loop)
{
	fg_vq_set_desc(&fvq, 3, fg_alloc(&g, 4, 4), 4, VRING_DESC_F_NEXT, 3);
	raw_publish(3);
	ck_assert_int_eq(virtq_pop(&vq, chain), -EPROTO);
}
END_TEST

START_TEST(test_head_out_of_range)
{
	raw_publish(16);
	ck_assert_int_eq(virtq_pop(&vq, chain), -EPROTO);
}
END_TEST

START_TEST(test_next_out_of_range)
{
	fg_vq_set_desc(&fvq, 0, fg_alloc(&g, 16, 16), 16, VRING_DESC_F_NEXT, 16);
	raw_publish(0);
	ck_assert_int_eq(virtq_pop(&vq, chain), -EPROTO);
}
END_TEST

START_TEST(test_addr_beyond_ram)
{
	fg_vq_set_desc(&fvq, 0, RAM_SIZE - 8, 16, 0, 0);
	raw_publish(0);
	ck_assert_int_eq(virtq_pop(&vq, chain), -EPROTO);
}
END_TEST

START_TEST(test_addr_len_overflow)
{
	fg_vq_set_desc(&fvq, 0, UINT64_MAX - 4, 16, VRING_DESC_F_WRITE, 0);
	raw_publish(0);
	ck_assert_int_eq(virtq_pop(&vq, chain), -EPROTO);
}
END_TEST

START_TEST(test_readable_after_writable)
{
	uint64_t d = fg_alloc(&g, 64, 16);

	fg_vq_set_desc(&fvq, 0, d, 16, VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 1);
	fg_vq_set_desc(&fvq, 1, d, 16, 0, 0);
	raw_publish(0);
	ck_assert_int_eq(virtq_pop(&vq, chain), -EPROTO);
}
END_TEST

START_TEST(test_nested_indirect)
{
	uint64_t t1 = fg_alloc(&g, 16, 16), t2 = fg_alloc(&g, 16, 16);

	fg_write_desc(&g, t2, 0, fg_alloc(&g, 8, 8), 8, VRING_DESC_F_WRITE, 0);
	fg_write_desc(&g, t1, 0, t2, 16, VRING_DESC_F_INDIRECT, 0);
	fg_vq_set_desc(&fvq, 0, t1, 16, VRING_DESC_F_INDIRECT, 0);
	raw_publish(0);
	ck_assert_int_eq(virtq_pop(&vq, chain), -EPROTO);
}
END_TEST

START_TEST(test_indirect_not_negotiated)
{
	struct fg_buf b[3];

	teardown();
	setup_size(16, 1ull << VIRTIO_RING_F_EVENT_IDX);
	make_bufs(b);
	ck_assert_int_ge(fg_vq_add(&fvq, b, 3, true), 0);
	fg_vq_publish(&fvq);
	ck_assert_int_eq(virtq_pop(&vq, chain), -EPROTO);
}
END_TEST

START_TEST(test_indirect_bad_len)
{
	uint64_t t = fg_alloc(&g, 64, 16);
	static const uint32_t lens[] = { 0, 8, 24, 17 };

	fg_write_desc(&g, t, 0, fg_alloc(&g, 8, 8), 8, VRING_DESC_F_WRITE, 0);
	fg_vq_set_desc(&fvq, 0, t, lens[_i], VRING_DESC_F_INDIRECT, 0);
	raw_publish(0);
	ck_assert_int_eq(virtq_pop(&vq, chain), -EPROTO);
}
END_TEST

START_TEST(test_indirect_too_big)
{
	uint64_t t = fg_alloc(&g, 16ull * (VIRTQ_MAX_SIZE + 1), 16);

	fg_write_desc(&g, t, 0, fg_alloc(&g, 8, 8), 8, VRING_DESC_F_WRITE, 0);
	fg_vq_set_desc(&fvq, 0, t, 16u * (VIRTQ_MAX_SIZE + 1), VRING_DESC_F_INDIRECT, 0);
	raw_publish(0);
	ck_assert_int_eq(virtq_pop(&vq, chain), -EPROTO);
}
END_TEST

START_TEST(test_indirect_with_next)
{
	uint64_t t = fg_alloc(&g, 16, 16);

	fg_write_desc(&g, t, 0, fg_alloc(&g, 8, 8), 8, VRING_DESC_F_WRITE, 0);
	fg_vq_set_desc(&fvq, 0, t, 16, VRING_DESC_F_INDIRECT | VRING_DESC_F_NEXT, 1);
	fg_vq_set_desc(&fvq, 1, fg_alloc(&g, 8, 8), 8, VRING_DESC_F_WRITE, 0);
	raw_publish(0);
	ck_assert_int_eq(virtq_pop(&vq, chain), -EPROTO);
}
END_TEST

START_TEST(test_indirect_next_beyond_table)
{
	uint64_t t = fg_alloc(&g, 32, 16), d = fg_alloc(&g, 8, 8);

	fg_write_desc(&g, t, 0, d, 8, VRING_DESC_F_NEXT, 1);
	fg_write_desc(&g, t, 1, d, 8, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 2);
	fg_vq_set_desc(&fvq, 0, t, 32, VRING_DESC_F_INDIRECT, 0);
	raw_publish(0);
	ck_assert_int_eq(virtq_pop(&vq, chain), -EPROTO);
}
END_TEST

START_TEST(test_indirect_loop)
{
	uint64_t t = fg_alloc(&g, 32, 16), d = fg_alloc(&g, 8, 8);

	fg_write_desc(&g, t, 0, d, 8, VRING_DESC_F_NEXT, 1);
	fg_write_desc(&g, t, 1, d, 8, VRING_DESC_F_NEXT, 0);
	fg_vq_set_desc(&fvq, 0, t, 32, VRING_DESC_F_INDIRECT, 0);
	raw_publish(0);
	ck_assert_int_eq(virtq_pop(&vq, chain), -EPROTO);
}
END_TEST

START_TEST(test_indirect_table_beyond_ram)
{
	fg_vq_set_desc(&fvq, 0, RAM_SIZE - 16, 32, VRING_DESC_F_INDIRECT, 0);
	raw_publish(0);
	ck_assert_int_eq(virtq_pop(&vq, chain), -EPROTO);
}
END_TEST

START_TEST(test_avail_idx_jump)
{
	fg_vq_set_avail_idx(&fvq, 17); /* 17 > size 16 ahead of 0 */
	ck_assert_int_eq(virtq_pop(&vq, chain), -EPROTO);
}
END_TEST

START_TEST(test_avail_idx_full_ok)
{
	struct fg_buf b[1] = { { 0, 8, true } };

	b[0].gpa = fg_alloc(&g, 8, 8);
	for (int i = 0; i < 16; i++)
		ck_assert_int_ge(fg_vq_add(&fvq, b, 1, false), 0);
	fg_vq_publish(&fvq);
	ck_assert_uint_eq(virtq_avail_count(&vq), 16);
	for (int i = 0; i < 16; i++)
		ck_assert_int_eq(virtq_pop(&vq, chain), 1);
	ck_assert_int_eq(virtq_pop(&vq, chain), 0);
}
END_TEST

static Suite *virtqueue_suite(void)
{
	Suite *s = suite_create("virtqueue");
	TCase *tc = tcase_create("ring");
	TCase *bad = tcase_create("malformed");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_start_validation);
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_direct_chain);
	tcase_add_test(tc, test_indirect_chain);
	tcase_add_test(tc, test_mixed_chains);
	tcase_add_test(tc, test_direct_then_indirect);
	tcase_add_test(tc, test_zero_length_desc);
	tcase_add_test(tc, test_push_used_ring);
	tcase_add_test(tc, test_avail_count);
	tcase_add_test(tc, test_avail_idx_full_ok);
	tcase_add_test(tc, test_wraparound);
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(bad, setup, teardown);
	tcase_add_test(bad, test_loop);
	tcase_add_test(bad, test_self_loop);
	tcase_add_test(bad, test_head_out_of_range);
	tcase_add_test(bad, test_next_out_of_range);
	tcase_add_test(bad, test_addr_beyond_ram);
	tcase_add_test(bad, test_addr_len_overflow);
	tcase_add_test(bad, test_readable_after_writable);
	tcase_add_test(bad, test_nested_indirect);
	tcase_add_test(bad, test_indirect_not_negotiated);
	tcase_add_loop_test(bad, test_indirect_bad_len, 0, 4);
	tcase_add_test(bad, test_indirect_too_big);
	tcase_add_test(bad, test_indirect_with_next);
	tcase_add_test(bad, test_indirect_next_beyond_table);
	tcase_add_test(bad, test_indirect_loop);
	tcase_add_test(bad, test_indirect_table_beyond_ram);
	tcase_add_test(bad, test_avail_idx_jump);
	suite_add_tcase(s, bad);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(virtqueue_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
