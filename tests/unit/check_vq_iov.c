/* SPDX-License-Identifier: MIT */
/*
 * vq-iov.h: copies between a chain's segments and a flat buffer at any
 * offset, across segment boundaries and zero-length segments; a copy that
 * runs past the segments stops there and says how much it did; a slice
 * never exceeds its segment budget.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "virtio/vq-iov.h"

static uint8_t mem[64];
/* 5 + 0 + 3 + 8 = 16 bytes in four segments, one of them empty. */
static struct iovec iov[4];

static void setup(void)
{
	for (unsigned int i = 0; i < sizeof(mem); i++)
		mem[i] = (uint8_t)i;
	iov[0] = (struct iovec){ mem, 5 };
	iov[1] = (struct iovec){ mem + 10, 0 };
	iov[2] = (struct iovec){ mem + 20, 3 };
	iov[3] = (struct iovec){ mem + 30, 8 };
}

/* Byte @i of the chain's 16 (where it lies in mem). */
static uint8_t *at(unsigned int i)
{
	return i < 5 ? mem + i : i < 8 ? mem + 20 + (i - 5) : mem + 30 + (i - 8);
}

START_TEST(to_buf_crosses_segments)
{
	uint8_t b[16];

	for (unsigned int skip = 0; skip <= 16; skip++) {
		memset(b, 0xee, sizeof(b));
		ck_assert_uint_eq(vq_iov_to_buf(iov, 4, skip, b, sizeof(b)), 16 - skip);
		for (unsigned int i = 0; i < 16 - skip; i++)
			ck_assert_uint_eq(b[i], *at(skip + i));
		for (unsigned int i = 16 - skip; i < 16; i++)
			ck_assert_uint_eq(b[i], 0xee); /* nothing past the chain */
	}
	ck_assert_uint_eq(vq_iov_to_buf(iov, 4, 100, b, 4), 0);
	ck_assert_uint_eq(vq_iov_to_buf(iov, 4, 3, b, 0), 0);
}
END_TEST

START_TEST(from_buf_writes_and_zeroes)
{
	const uint8_t src[6] = { 0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5 };

	/* Bytes 3..8: the end of segment 0, all of segment 2, segment 3's first. */
	ck_assert_uint_eq(vq_iov_from_buf(iov, 4, 3, src, sizeof(src)), 6);
	for (unsigned int i = 0; i < 6; i++)
		ck_assert_uint_eq(*at(3 + i), src[i]);
	ck_assert_uint_eq(*at(2), 2);	     /* before: untouched */
	ck_assert_uint_eq(*at(9), 31);	     /* after: untouched */
	ck_assert_uint_eq(mem[10], 10);	     /* the empty segment's memory */
	ck_assert_uint_eq(mem[23], 23);	     /* between segments */
	/* Zeros to the end, and a write past the end stops there. */
	ck_assert_uint_eq(vq_iov_from_buf(iov, 4, 12, NULL, 10), 4);
	for (unsigned int i = 12; i < 16; i++)
		ck_assert_uint_eq(*at(i), 0);
	ck_assert_uint_eq(mem[38], 38);
}
END_TEST

START_TEST(slice_keeps_its_budget)
{
	struct iovec out[4];
	unsigned int k;

	k = vq_iov_slice(iov, 4, 4, SIZE_MAX, out, 4);
	ck_assert_uint_eq(k, 3); /* 1 byte of seg 0, seg 2, seg 3; the empty one skipped */
	ck_assert_ptr_eq(out[0].iov_base, mem + 4);
	ck_assert_uint_eq(out[0].iov_len, 1);
	ck_assert_uint_eq(vq_iov_len(out, k), 12);
	k = vq_iov_slice(iov, 4, 6, 4, out, 4);
	ck_assert_uint_eq(k, 2);
	ck_assert_ptr_eq(out[0].iov_base, mem + 21);
	ck_assert_uint_eq(out[0].iov_len, 2);
	ck_assert_ptr_eq(out[1].iov_base, mem + 30);
	ck_assert_uint_eq(out[1].iov_len, 2);
	ck_assert_uint_eq(vq_iov_slice(iov, 4, 0, SIZE_MAX, out, 1), 1);
	ck_assert_uint_eq(out[0].iov_len, 5);
	ck_assert_uint_eq(vq_iov_slice(iov, 4, 16, 8, out, 4), 0);
	ck_assert_uint_eq(vq_iov_len(iov, 4), 16);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vq_iov");
	TCase *tc = tcase_create("copies");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, to_buf_crosses_segments);
	tcase_add_test(tc, from_buf_writes_and_zeroes);
	tcase_add_test(tc, slice_keeps_its_budget);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
