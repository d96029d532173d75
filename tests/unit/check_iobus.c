/* SPDX-License-Identifier: MIT */
/* PIO/MMIO range dispatch: registration, overlaps, boundaries. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iobus.h"

struct rec {
	int calls;
	uint64_t off;
	uint32_t len;
	bool is_write;
	uint8_t val;
};

static void rec_fn(void *opaque, uint64_t off, void *data, uint32_t len,
		   bool is_write)
{
	struct rec *r = opaque;

	r->calls++;
	r->off = off;
	r->len = len;
	r->is_write = is_write;
	if (is_write)
		r->val = *(uint8_t *)data;
	else
		memset(data, 0x5a, len);
}

static struct iobus bus;

static void setup(void)
{
	ck_assert_int_eq(iobus_init(&bus, "test"), 0);
}

static void teardown(void)
{
	iobus_destroy(&bus);
}

START_TEST(test_register_dispatch)
{
	struct rec r = { 0 };
	uint32_t v = 0;
	uint8_t b = 0x42;

	ck_assert_int_eq(iobus_register(&bus, 0x1000, 0x10, rec_fn, &r), 0);
	ck_assert_int_eq(iobus_dispatch(&bus, 0x1004, &v, 4, false), 0);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_uint_eq(r.off, 4);
	ck_assert_uint_eq(r.len, 4);
	ck_assert_uint_eq(v, 0x5a5a5a5a);
	ck_assert_int_eq(iobus_dispatch(&bus, 0x1002, &b, 1, true), 0);
	ck_assert_int_eq(r.calls, 2);
	ck_assert(r.is_write);
	ck_assert_uint_eq(r.off, 2);
	ck_assert_uint_eq(r.val, 0x42);
}
END_TEST

START_TEST(test_invalid)
{
	struct rec r = { 0 };

	ck_assert_int_eq(iobus_register(&bus, 0x1000, 0, rec_fn, &r), -EINVAL);
	ck_assert_int_eq(iobus_register(&bus, 0x1000, 1, NULL, &r), -EINVAL);
	/* wrap-around */
	ck_assert_int_eq(iobus_register(&bus, UINT64_MAX - 3, 8, rec_fn, &r),
			 -EINVAL);
	ck_assert_int_eq(iobus_register(&bus, UINT64_MAX, 2, rec_fn, &r),
			 -EINVAL);
	/* the very last byte is fine */
	ck_assert_int_eq(iobus_register(&bus, UINT64_MAX - 1, 1, rec_fn, &r),
			 0);
}
END_TEST

START_TEST(test_overlap)
{
	struct rec r = { 0 };

	ck_assert_int_eq(iobus_register(&bus, 0x100, 0x10, rec_fn, &r), 0);
	/* identical, contained, containing, partial on either side */
	ck_assert_int_eq(iobus_register(&bus, 0x100, 0x10, rec_fn, &r), -EEXIST);
	ck_assert_int_eq(iobus_register(&bus, 0x104, 0x4, rec_fn, &r), -EEXIST);
	ck_assert_int_eq(iobus_register(&bus, 0x80, 0x100, rec_fn, &r), -EEXIST);
	ck_assert_int_eq(iobus_register(&bus, 0xf8, 0x9, rec_fn, &r), -EEXIST);
	ck_assert_int_eq(iobus_register(&bus, 0x10f, 0x10, rec_fn, &r), -EEXIST);
	/* adjacent on both sides */
	ck_assert_int_eq(iobus_register(&bus, 0xf0, 0x10, rec_fn, &r), 0);
	ck_assert_int_eq(iobus_register(&bus, 0x110, 0x10, rec_fn, &r), 0);
	/* now a gap-filling range that touches both neighbours' edges */
	ck_assert_int_eq(iobus_register(&bus, 0x120, 0x1, rec_fn, &r), 0);
	ck_assert_int_eq(iobus_register(&bus, 0x11f, 0x2, rec_fn, &r), -EEXIST);
}
END_TEST

START_TEST(test_boundaries)
{
	struct rec a = { 0 }, b = { 0 };
	uint8_t d[8];

	ck_assert_int_eq(iobus_register(&bus, 0x3f8, 8, rec_fn, &a), 0);
	ck_assert_int_eq(iobus_register(&bus, 0x400, 8, rec_fn, &b), 0);
	ck_assert_int_eq(iobus_dispatch(&bus, 0x3f8, d, 1, false), 0);
	ck_assert_uint_eq(a.off, 0);
	ck_assert_int_eq(iobus_dispatch(&bus, 0x3ff, d, 1, false), 0);
	ck_assert_uint_eq(a.off, 7);
	ck_assert_int_eq(a.calls, 2);
	ck_assert_int_eq(iobus_dispatch(&bus, 0x400, d, 1, false), 0);
	ck_assert_int_eq(b.calls, 1);
	ck_assert_uint_eq(b.off, 0);
	/* straddles the end of a into b: no one handles it */
	memset(d, 0, sizeof(d));
	ck_assert_int_eq(iobus_dispatch(&bus, 0x3fe, d, 4, false), -ENOENT);
	ck_assert_uint_eq(d[0], 0xff);
	ck_assert_uint_eq(d[3], 0xff);
	ck_assert_int_eq(iobus_dispatch(&bus, 0x406, d, 4, true), -ENOENT);
	ck_assert_int_eq(a.calls, 2);
	ck_assert_int_eq(b.calls, 1);
	/* straddles the start */
	ck_assert_int_eq(iobus_dispatch(&bus, 0x3f6, d, 4, false), -ENOENT);
	ck_assert_int_eq(iobus_dispatch(&bus, 0x3f7, d, 1, false), -ENOENT);
	ck_assert_int_eq(iobus_dispatch(&bus, 0x408, d, 1, false), -ENOENT);
	/* an 8-byte access that exactly covers a range */
	ck_assert_int_eq(iobus_dispatch(&bus, 0x400, d, 8, false), 0);
	ck_assert_uint_eq(b.len, 8);
}
END_TEST

START_TEST(test_unclaimed)
{
	uint32_t v = 0;
	uint16_t w = 0;

	ck_assert_int_eq(iobus_dispatch(&bus, 0x1234, &v, 4, false), -ENOENT);
	ck_assert_uint_eq(v, 0xffffffff);
	ck_assert_int_eq(iobus_dispatch(&bus, 0x1234, &w, 2, false), -ENOENT);
	ck_assert_uint_eq(w, 0xffff);
	v = 7;
	ck_assert_int_eq(iobus_dispatch(&bus, 0x1234, &v, 4, true), -ENOENT);
	ck_assert_uint_eq(v, 7); /* writes leave the buffer alone */
}
END_TEST

START_TEST(test_unregister)
{
	struct rec r = { 0 };
	uint8_t d;

	ck_assert_int_eq(iobus_register(&bus, 0x60, 1, rec_fn, &r), 0);
	ck_assert_int_eq(iobus_register(&bus, 0x64, 1, rec_fn, &r), 0);
	ck_assert_int_eq(iobus_unregister(&bus, 0x61), -ENOENT);
	ck_assert_int_eq(iobus_unregister(&bus, 0x60), 0);
	ck_assert_int_eq(iobus_unregister(&bus, 0x60), -ENOENT);
	ck_assert_int_eq(iobus_dispatch(&bus, 0x60, &d, 1, false), -ENOENT);
	ck_assert_int_eq(iobus_dispatch(&bus, 0x64, &d, 1, false), 0);
	ck_assert_int_eq(r.calls, 1);
	/* the freed space can be reused */
	ck_assert_int_eq(iobus_register(&bus, 0x60, 4, rec_fn, &r), 0);
	ck_assert_int_eq(iobus_register(&bus, 0x63, 2, rec_fn, &r), -EEXIST);
}
END_TEST

/* Many ranges, inserted out of order: the sorted table must keep working
 * as it grows past its initial capacity. */
START_TEST(test_many)
{
	static struct rec r[200];
	uint8_t d;

	for (unsigned int i = 0; i < 200; i++) {
		unsigned int k = (i * 37) % 200;

		ck_assert_int_eq(iobus_register(&bus, 0x10000 + k * 0x100,
						0x80, rec_fn, &r[k]),
				 0);
	}
	for (unsigned int k = 0; k < 200; k++) {
		ck_assert_int_eq(iobus_dispatch(&bus, 0x10000 + k * 0x100 + 0x7f,
						&d, 1, false),
				 0);
		ck_assert_int_eq(iobus_dispatch(&bus, 0x10000 + k * 0x100 + 0x80,
						&d, 1, false),
				 -ENOENT);
		ck_assert_int_eq(r[k].calls, 1);
		ck_assert_uint_eq(r[k].off, 0x7f);
	}
}
END_TEST

/* A handler registered with iobus_register_unlocked() runs without the
 * bus lock: it may map and unmap ranges on its own bus (an ECAM window
 * moving a BAR).  Under the lock this would self-deadlock on the rwlock. */
struct remapper {
	struct rec target;
	uint64_t mapped; /* 0: nothing mapped */
};

static void remap_fn(void *opaque, uint64_t off, void *data, uint32_t len,
		     bool is_write)
{
	struct remapper *m = opaque;
	uint64_t to;

	if (!is_write) {
		memcpy(data, &m->mapped, len);
		return;
	}
	to = 0;
	memcpy(&to, data, len);
	if (m->mapped)
		ck_assert_int_eq(iobus_unregister(&bus, m->mapped), 0);
	m->mapped = 0;
	if (to) {
		ck_assert_int_eq(iobus_register(&bus, to, 0x10, rec_fn, &m->target), 0);
		m->mapped = to;
	}
}

START_TEST(test_unlocked_handler_remaps)
{
	struct remapper m = { 0 };
	uint64_t to = 0x9000, got = 0;
	uint32_t v = 0;

	ck_assert_int_eq(iobus_register_unlocked(&bus, 0x100, 8, remap_fn, &m), 0);
	/* Overlaps are refused for either kind. */
	ck_assert_int_eq(iobus_register(&bus, 0x104, 8, rec_fn, &m.target), -EEXIST);
	ck_assert_int_eq(iobus_dispatch(&bus, 0x100, &to, 8, true), 0);
	ck_assert_int_eq(iobus_dispatch(&bus, 0x9004, &v, 4, false), 0);
	ck_assert_int_eq(m.target.calls, 1);
	to = 0xa000;
	ck_assert_int_eq(iobus_dispatch(&bus, 0x100, &to, 8, true), 0);
	ck_assert_int_eq(iobus_dispatch(&bus, 0x9004, &v, 4, false), -ENOENT);
	ck_assert_int_eq(iobus_dispatch(&bus, 0xa000, &v, 4, false), 0);
	ck_assert_int_eq(m.target.calls, 2);
	ck_assert_int_eq(iobus_dispatch(&bus, 0x100, &got, 8, false), 0);
	ck_assert_uint_eq(got, 0xa000);
	/* Unregistered like any range; the bad arguments as iobus_register(). */
	ck_assert_int_eq(iobus_unregister(&bus, 0x100), 0);
	ck_assert_int_eq(iobus_dispatch(&bus, 0x100, &got, 8, false), -ENOENT);
	ck_assert_int_eq(iobus_register_unlocked(&bus, 0x100, 0, remap_fn, &m), -EINVAL);
	ck_assert_int_eq(iobus_register_unlocked(&bus, 0x100, 8, NULL, &m), -EINVAL);
}
END_TEST

static Suite *iobus_suite(void)
{
	Suite *s = suite_create("iobus");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_register_dispatch);
	tcase_add_test(tc, test_invalid);
	tcase_add_test(tc, test_overlap);
	tcase_add_test(tc, test_boundaries);
	tcase_add_test(tc, test_unclaimed);
	tcase_add_test(tc, test_unregister);
	tcase_add_test(tc, test_many);
	tcase_add_test(tc, test_unlocked_handler_remaps);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(iobus_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
