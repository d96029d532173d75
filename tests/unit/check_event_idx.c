/* SPDX-License-Identifier: MIT */
/*
 * Notification suppression in both directions: virtq_need_event() math
 * with 16-bit wrap-around, virtq_should_notify() (used_event with
 * EVENT_IDX, VRING_AVAIL_F_NO_INTERRUPT without), and kick suppression
 * (avail_event / VRING_USED_F_NO_NOTIFY) including the enable race.
 */
#include <check.h>
#include <stdlib.h>

#include "fake_guest.h"
#include "virtio/virtqueue.h"

#define RAM_SIZE (4u << 20)
#define F_EVENT (1ull << VIRTIO_RING_F_EVENT_IDX)

static struct fake_guest g;
static struct fg_vq fvq;
static struct virtq vq;
static struct virtq_chain *chain;
static struct fg_buf buf;

static void setup_feat(uint16_t size, uint64_t features)
{
	ck_assert_int_eq(fg_init(&g, RAM_SIZE), 0);
	ck_assert_int_eq(fg_vq_init(&g, &fvq, size, features), 0);
	ck_assert_int_eq(fg_vq_attach(&fvq, &vq), 0);
	fvq.auto_used_event = false; /* these tests set used_event by hand */
	chain = malloc(sizeof(*chain));
	ck_assert_ptr_nonnull(chain);
	buf = (struct fg_buf){ fg_alloc(&g, 64, 8), 64, true };
}

static void setup_event(void)
{
	setup_feat(8, F_EVENT);
}

static void setup_plain(void)
{
	setup_feat(8, 0);
}

static void teardown(void)
{
	free(chain);
	fg_vq_destroy(&fvq);
	fg_destroy(&g);
}

/* Driver adds one buffer and publishes; returns whether it kicked. */
static bool add_one(void)
{
	ck_assert_int_ge(fg_vq_add(&fvq, &buf, 1, false), 0);
	return fg_vq_publish(&fvq);
}

/* Device pops one and pushes it; the driver reclaims it. */
static void serve_one(void)
{
	uint32_t id, len;

	ck_assert_int_eq(virtq_pop(&vq, chain), 1);
	virtq_push(&vq, chain->head, 1);
	ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &len), 1);
}

START_TEST(test_need_event_math)
{
	/* (event, new, old) -> interrupt iff event in [old, new) */
	ck_assert(virtq_need_event(0, 1, 0));
	ck_assert(!virtq_need_event(1, 1, 0));
	ck_assert(virtq_need_event(9, 10, 0));
	ck_assert(virtq_need_event(5, 10, 0));
	ck_assert(!virtq_need_event(10, 10, 0));
	ck_assert(!virtq_need_event(11, 10, 5));
	ck_assert(!virtq_need_event(4, 10, 5));
	ck_assert(virtq_need_event(5, 10, 5));
	ck_assert(!virtq_need_event(3, 3, 3)); /* nothing new */
	/* Wrap: old = 65530, new = 4 (10 entries). */
	ck_assert(virtq_need_event(65530, 4, 65530));
	ck_assert(virtq_need_event(65535, 4, 65530));
	ck_assert(virtq_need_event(0, 4, 65530));
	ck_assert(virtq_need_event(3, 4, 65530));
	ck_assert(!virtq_need_event(4, 4, 65530));
	ck_assert(!virtq_need_event(65529, 4, 65530));
	ck_assert(!virtq_need_event(100, 4, 65530));
	/* Full 16-bit window edge. */
	ck_assert(virtq_need_event(65535, 0, 65535));
	ck_assert(!virtq_need_event(0, 0, 65535));
}
END_TEST

START_TEST(test_notify_no_event_idx)
{
	add_one();
	serve_one();
	ck_assert(virtq_should_notify(&vq));
	ck_assert(!virtq_should_notify(&vq)); /* nothing new pushed */

	fg_vq_set_avail_flags(&fvq, VRING_AVAIL_F_NO_INTERRUPT);
	add_one();
	serve_one();
	ck_assert(!virtq_should_notify(&vq));

	fg_vq_set_avail_flags(&fvq, 0);
	add_one();
	serve_one();
	ck_assert(virtq_should_notify(&vq));
}
END_TEST

START_TEST(test_notify_event_idx)
{
	/* First interrupt after reset is always sent. */
	add_one();
	serve_one();
	ck_assert(virtq_should_notify(&vq));

	/* Driver wants an interrupt when entry 3 is used (used idx -> 4). */
	fg_vq_set_used_event(&fvq, 3);
	for (int i = 2; i <= 3; i++) {
		add_one();
		serve_one(); /* used idx = i */
		ck_assert(!virtq_should_notify(&vq));
	}
	add_one();
	serve_one(); /* used idx = 4: crosses 3 */
	ck_assert(virtq_should_notify(&vq));

	/* Batching: several pushes, one decision covering the crossing. */
	fg_vq_set_used_event(&fvq, 5);
	for (int i = 0; i < 3; i++) {
		add_one();
		serve_one();
	}
	ck_assert(virtq_should_notify(&vq));
	ck_assert(!virtq_should_notify(&vq));
}
END_TEST

START_TEST(test_event_idx_ignores_no_interrupt)
{
	add_one();
	serve_one();
	ck_assert(virtq_should_notify(&vq));
	fg_vq_set_avail_flags(&fvq, VRING_AVAIL_F_NO_INTERRUPT);
	fg_vq_set_used_event(&fvq, 1);
	add_one();
	serve_one();
	ck_assert(virtq_should_notify(&vq));
}
END_TEST

START_TEST(test_notify_event_idx_wrap)
{
	/* Bring used idx to 65534, then ask for an interrupt at 65535 and at
	 * 1, both across the wrap. */
	for (unsigned int i = 0; i < 65534; i++) {
		add_one();
		serve_one();
		(void)virtq_should_notify(&vq);
	}
	ck_assert_uint_eq(fg_vq_used_idx(&fvq), 65534);
	fg_vq_set_used_event(&fvq, 65535);
	add_one();
	serve_one(); /* 65535 */
	ck_assert(!virtq_should_notify(&vq));
	add_one();
	serve_one(); /* 0: entry 65535 used */
	ck_assert(virtq_should_notify(&vq));
	fg_vq_set_used_event(&fvq, 1);
	add_one();
	serve_one(); /* 1 */
	ck_assert(!virtq_should_notify(&vq));
	add_one();
	add_one();
	serve_one();
	serve_one(); /* 3: crossed 1 in a batch */
	ck_assert(virtq_should_notify(&vq));
}
END_TEST

START_TEST(test_avail_event_written)
{
	ck_assert_uint_eq(fg_vq_avail_event(&fvq), 0);
	ck_assert(add_one()); /* avail_event 0 in [0, 1): kick */
	ck_assert(!add_one()); /* 0 not in [1, 2): no kick */
	ck_assert_uint_eq(fvq.kicks, 1);
	serve_one();
	ck_assert_uint_eq(fg_vq_avail_event(&fvq), 1);
	serve_one();
	ck_assert_uint_eq(fg_vq_avail_event(&fvq), 2);
	ck_assert(add_one()); /* device caught up: kick again */
	ck_assert_uint_eq(fvq.kicks, 2);
}
END_TEST

START_TEST(test_disable_enable_event_idx)
{
	virtq_disable_notify(&vq);
	ck_assert_uint_eq(fg_vq_avail_event(&fvq), 0xffff);
	ck_assert(!add_one());
	ck_assert(!add_one());
	ck_assert_uint_eq(fvq.kicks, 0);
	serve_one();
	serve_one();
	/* While disabled, popping does not re-arm kicks. */
	ck_assert(!add_one());
	serve_one();
	ck_assert(!virtq_enable_notify(&vq)); /* ring empty */
	ck_assert_uint_eq(fg_vq_avail_event(&fvq), 3);
	ck_assert(add_one());
	ck_assert_uint_eq(fvq.kicks, 1);
}
END_TEST

/* The race: buffers published while kicks were off must be reported. */
START_TEST(test_enable_race_event_idx)
{
	virtq_disable_notify(&vq);
	ck_assert(!add_one()); /* no kick: driver relies on the device */
	ck_assert(virtq_enable_notify(&vq));
	serve_one();
	ck_assert(!virtq_enable_notify(&vq));
}
END_TEST

START_TEST(test_disable_enable_plain)
{
	virtq_disable_notify(&vq);
	ck_assert(fg_vq_used_flags(&fvq) & VRING_USED_F_NO_NOTIFY);
	ck_assert(!add_one());
	ck_assert(virtq_enable_notify(&vq)); /* raced in */
	ck_assert(!(fg_vq_used_flags(&fvq) & VRING_USED_F_NO_NOTIFY));
	serve_one();
	ck_assert(!virtq_enable_notify(&vq));
	ck_assert(add_one());
	ck_assert_uint_eq(fvq.kicks, 1);
}
END_TEST

static Suite *event_suite(void)
{
	Suite *s = suite_create("event_idx");
	TCase *math = tcase_create("math");
	TCase *ev = tcase_create("event_idx");
	TCase *plain = tcase_create("flags");

	tcase_add_test(math, test_need_event_math);
	suite_add_tcase(s, math);

	tcase_add_checked_fixture(ev, setup_event, teardown);
	tcase_add_test(ev, test_notify_event_idx);
	tcase_add_test(ev, test_event_idx_ignores_no_interrupt);
	tcase_add_test(ev, test_notify_event_idx_wrap);
	tcase_add_test(ev, test_avail_event_written);
	tcase_add_test(ev, test_disable_enable_event_idx);
	tcase_add_test(ev, test_enable_race_event_idx);
	suite_add_tcase(s, ev);

	tcase_add_checked_fixture(plain, setup_plain, teardown);
	tcase_add_test(plain, test_notify_no_event_idx);
	tcase_add_test(plain, test_disable_enable_plain);
	suite_add_tcase(s, plain);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(event_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
