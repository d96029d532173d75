/* SPDX-License-Identifier: MIT */
/* vm_flush_coalesced(): writes KVM logged in the coalesced ring reach the
 * port and MMIO buses in order, and the ring is consumed. */
#include <check.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>

#include "iobus.h"
#include "vm.h"

#define RING_MAX 8 /* a small ring: wrap-around is cheap to reach */

static struct vmm vm;
static struct kvm_coalesced_mmio_ring *ring;
static uint64_t seen[64];
static unsigned int nseen;

/* Records (bus, offset, value) of every write. */
static void rec(void *opaque, uint64_t off, void *data, uint32_t len,
		bool is_write)
{
	uint32_t v = 0;

	ck_assert(is_write);
	memcpy(&v, data, len < 4 ? len : 4);
	ck_assert_uint_lt(nseen, 64);
	seen[nseen++] = (uint64_t)(uintptr_t)opaque << 48 | off << 32 | v;
}

static void log_write(uint64_t addr, uint32_t len, uint32_t val, bool pio)
{
	struct kvm_coalesced_mmio *e = &ring->coalesced_mmio[ring->last];

	memset(e, 0, sizeof(*e));
	e->phys_addr = addr;
	e->len = len;
	e->pio = pio;
	memcpy(e->data, &val, sizeof(val));
	ring->last = (ring->last + 1) % RING_MAX;
}

static void setup(void)
{
	memset(&vm, 0, sizeof(vm));
	ck_assert_int_eq(iobus_init(&vm.pio, "pio"), 0);
	ck_assert_int_eq(iobus_init(&vm.mmio, "mmio"), 0);
	ck_assert_int_eq(iobus_register(&vm.pio, 0xcf8, 8, rec, (void *)1), 0);
	ck_assert_int_eq(iobus_register(&vm.mmio, 0xe0000000, 0x1000, rec,
					(void *)2), 0);
	pthread_mutex_init(&vm.coalesced_lock, NULL);
	ring = calloc(1, sizeof(*ring) + RING_MAX * sizeof(ring->coalesced_mmio[0]));
	ck_assert_ptr_nonnull(ring);
	nseen = 0;
}

static void teardown(void)
{
	free(ring);
	pthread_mutex_destroy(&vm.coalesced_lock);
	iobus_destroy(&vm.mmio);
	iobus_destroy(&vm.pio);
}

START_TEST(test_none)
{
	vm_flush_coalesced(&vm); /* no ring registered */
	vm.coalesced_ring = ring;
	vm.coalesced_max = RING_MAX;
	vm_flush_coalesced(&vm); /* empty ring */
	ck_assert_uint_eq(nseen, 0);
}
END_TEST

START_TEST(test_in_order_and_wrap)
{
	vm.coalesced_ring = ring;
	vm.coalesced_max = RING_MAX;
	ring->first = ring->last = RING_MAX - 2; /* entries wrap past the end */
	log_write(0xcf8, 4, 0x80000000, true);
	log_write(0xe0000010, 2, 0xbeef, false);
	log_write(0xcf9, 1, 0x06, true);
	vm_flush_coalesced(&vm);
	ck_assert_uint_eq(nseen, 3);
	ck_assert_uint_eq(seen[0], 1ull << 48 | 0ull << 32 | 0x80000000u);
	ck_assert_uint_eq(seen[1], 2ull << 48 | 0x10ull << 32 | 0xbeef);
	ck_assert_uint_eq(seen[2], 1ull << 48 | 1ull << 32 | 0x06);
	ck_assert_uint_eq(ring->first, ring->last);
	ck_assert_uint_eq(ring->first, 1);
	vm_flush_coalesced(&vm); /* nothing new */
	ck_assert_uint_eq(nseen, 3);
}
END_TEST

START_TEST(test_bogus_index)
{
	/* A corrupt index must not walk out of the ring. */
	vm.coalesced_ring = ring;
	vm.coalesced_max = RING_MAX;
	ring->first = RING_MAX + 5;
	ring->last = 0;
	vm_flush_coalesced(&vm);
	ck_assert_uint_eq(nseen, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("coalesced");
	TCase *tc = tcase_create("coalesced");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_none);
	tcase_add_test(tc, test_in_order_and_wrap);
	tcase_add_test(tc, test_bogus_index);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
