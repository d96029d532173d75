/* SPDX-License-Identifier: MIT */
/*
 * The MSI-X table is coalesced only while the device is not live
 * (virtio-pci-irq.c, "Coalesced registers"), KVM-free over
 * tests/harness/fake_vpci with its fake coalesced ring on (struct fv: a
 * write into a registered zone is logged, not dispatched, until the next
 * exit): the zone covers the table from creation and after every reset; the
 * driver's table writes before DRIVER_OK exit nowhere and are what DRIVER_OK
 * wires; from DRIVER_OK on the zone is gone, so a mask acts at once; a
 * configuration interrupt raised while an unmask still sits in the ring is
 * sent by the drain that applies it; and DRIVER_OK fails cleanly (nothing
 * wired, nothing started) if the zone cannot be removed.
 */
#include <check.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_ring.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include "memory.h"
#include "pci/msix.h"
#include "virtio/virtio-pci.h"

#include "fake_vdev.h"
#include "fake_vpci.h"
#include "log_capture.h"

#define NQ 4
#define QSIZE 16
#define RAM_SIZE (4ull << 20)
#define RING_BASE 0x100000ull

/* ---- the device: tests/harness/fake_vdev ------------------------------------ */

#define FD_FEATURES \
	((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX))

/* ---- machine -------------------------------------------------------------- */

static struct fv V;
static struct fv_kvm *kvm;
static struct guest_mem mem;
static void *ram;
static struct fvd fdev;

static void setup(void)
{
	struct vpci_params p;

	ram = aligned_alloc(4096, RAM_SIZE);
	ck_assert_ptr_nonnull(ram);
	memset(ram, 0, RAM_SIZE);
	guest_mem_init_buf(&mem, ram, RAM_SIZE);
	ck_assert_int_eq(fv_init(&V, 3, FV_MMIO_BASE, FV_MMIO_SIZE, &mem), 0);
	kvm = V.kvm;
	fvd_init(&fdev, FD_FEATURES);
	p = fv_params(&V);
	p.ops = &fvd_ops;
	p.dev = &fdev;
	p.num_queues = NQ;
	p.max_queue_size = 256;
	p.ioeventfd_any_length = true;
	p.coalesce_queue_regs = true;
	ck_assert_int_eq(fv_create(&V, &p), 0);
	V.defer = true;
}

static void teardown(void)
{
	fv_destroy(&V);
	free(ram);
}

static uint64_t msg_addr(unsigned int v, unsigned int gen)
{
	return 0xfee00000ull | (uint64_t)((v + gen) & 0xff) << 12;
}

static uint32_t msg_data(unsigned int v, unsigned int gen)
{
	return 0x4000u + v + 0x100u * (gen & 0xffff);
}

/* Is the table zone registered where the table is? */
static bool table_zone(void)
{
	for (unsigned int i = 0; i < kvm->nr_zones; i++)
		if (kvm->zone_addr[i] == V.bar + V.table)
			return kvm->zone_len[i] == V.nr_vectors * MSIX_ENTRY_SIZE;
	return false;
}

/* Interrupts the irqfd of queue @q received (and consumes them). */
static uint64_t fired(unsigned int q)
{
	eventfd_t v;

	return eventfd_read(fdev.queues[q].call_fd, &v) ? 0 : v;
}

static bool route_is(unsigned int q, uint64_t addr, uint32_t data)
{
	int gsi = kvm->irqfd_gsi[fdev.queues[q].call_fd];

	return gsi >= 0 && kvm->route_valid[gsi] && kvm->route_addr[gsi] == addr &&
	       kvm->route_data[gsi] == data;
}

/* Linux's order (pci_msi and virtio_pci_modern): MSI-X on with the
 * function masked, every entry masked, each message written twice
 * (activation, then affinity) and unmasked, the function unmasked, the
 * config vector, the queues (queue q on vector q + 1).  Returns the BAR
 * accesses that exited for the table's part. */
static unsigned int drv_setup(unsigned int gen)
{
	unsigned int exits;

	ck_assert_int_eq(fv_negotiate(&V, FD_FEATURES, NULL), 0);
	fv_msix_ctrl(&V, MSIX_CTRL_ENABLE | MSIX_CTRL_MASKALL);
	exits = V.exits;
	for (unsigned int v = 0; v <= NQ; v++)
		fv_msix_mask(&V, v, true);
	for (unsigned int v = 0; v <= NQ; v++) {
		fv_msix_write(&V, v, msg_addr(v, gen + 7), msg_data(v, gen + 7));
		fv_msix_write(&V, v, msg_addr(v, gen), msg_data(v, gen));
		fv_msix_mask(&V, v, false);
	}
	exits = V.exits - exits;
	fv_msix_ctrl(&V, MSIX_CTRL_ENABLE);
	FV_COMMON_WR(&V, MSIX, 0, 2);
	ck_assert_uint_eq(FV_COMMON_RD(&V, MSIX, 2), 0);
	for (unsigned int q = 0; q < NQ; q++) {
		uint64_t base = RING_BASE + q * 0x1000ull;

		ck_assert_uint_eq(fv_queue_setup(&V, q, QSIZE, base, base + 0x400,
						 base + 0x800, (uint16_t)(q + 1)),
				  q + 1);
	}
	return exits;
}

/* ---- tests ---------------------------------------------------------------- */

START_TEST(table_coalesced_until_driver_ok)
{
	struct vpci_stats st;

	ck_assert_uint_eq(kvm->nr_zones, 2); /* queue registers + table */
	ck_assert(table_zone());

	/* 3 x NQ+1 table writes, none an exit. */
	ck_assert_uint_eq(drv_setup(0), 0);
	ck_assert_uint_gt(V.nr_logged, 0);
	fv_status_add(&V, VIRTIO_CONFIG_S_DRIVER_OK); /* drains, then acts */
	ck_assert(fv_status(&V) & VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert_uint_eq(fdev.start_calls, 1);
	/* What DRIVER_OK wired is what the logged writes said last. */
	for (unsigned int q = 0; q < NQ; q++)
		ck_assert(route_is(q, msg_addr(q + 1, 0), msg_data(q + 1, 0)));
	ck_assert_uint_eq(kvm->routing_calls, 1);

	vpci_get_stats(V.t, &st);
	ck_assert_uint_gt(st.driver_ok_ns_max, 0); /* timed */

	/* Live: the table zone is gone, the queue registers' stays. */
	ck_assert_uint_eq(kvm->nr_zones, 1);
	ck_assert(!table_zone());

	/* A mask acts at once: the write exits and the next interrupt is
	 * held back, then sent at the unmask. */
	fv_msix_mask(&V, 2, true);
	ck_assert_uint_eq(V.nr_logged, 0);
	virtio_queue_notify(&fdev.queues[1]);
	ck_assert_uint_eq(fired(1), 0);
	ck_assert(fv_pba_bit(&V, 2));
	fv_msix_mask(&V, 2, false);
	ck_assert_uint_eq(fired(1), 1);
	virtio_queue_notify(&fdev.queues[3]);
	ck_assert_uint_eq(fired(3), 1);

	/* Reset: the table is coalesced again for the next probe, and the
	 * next bring-up works the same way. */
	FV_COMMON_WR(&V, STATUS, 0, 1);
	ck_assert_uint_eq(fv_status(&V), 0);
	ck_assert_uint_eq(kvm->nr_zones, 2);
	ck_assert(table_zone());
	ck_assert_uint_eq(drv_setup(1), 0);
	fv_status_add(&V, VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert(fv_status(&V) & VIRTIO_CONFIG_S_DRIVER_OK);
	for (unsigned int q = 0; q < NQ; q++)
		ck_assert(route_is(q, msg_addr(q + 1, 1), msg_data(q + 1, 1)));
	ck_assert(!table_zone());
}
END_TEST

/* Before DRIVER_OK only a configuration change can raise an interrupt.
 * Raised while the config vector's unmask is still logged, it finds the
 * vector masked and waits; the drain that applies the unmask sends it,
 * with the message logged before it. */
START_TEST(config_irq_waits_for_the_drain)
{
	struct vpci_stats st;
	unsigned int msi;

	ck_assert_int_eq(fv_negotiate(&V, FD_FEATURES, NULL), 0);
	FV_COMMON_WR(&V, MSIX, 0, 2);
	fv_msix_ctrl(&V, MSIX_CTRL_ENABLE);
	fv_msix_write(&V, 0, msg_addr(0, 3), msg_data(0, 3));
	fv_msix_mask(&V, 0, false);
	ck_assert_uint_eq(V.nr_logged, 4);
	msi = kvm->msi_calls;

	vpci_config_changed(V.t);
	ck_assert_uint_eq(kvm->msi_calls, msi);
	fv_drain(&V);
	ck_assert_uint_eq(kvm->msi_calls, msi + 1);
	ck_assert_uint_eq(kvm->msi_addr, msg_addr(0, 3));
	ck_assert_uint_eq(kvm->msi_data, msg_data(0, 3));
	vpci_get_stats(V.t, &st);
	ck_assert_uint_eq(st.config_interrupts, 1);
	ck_assert(!fv_pba_bit(&V, 0));
}
END_TEST

/* KVM failing to remove the zone fails DRIVER_OK the usual way: NEEDS_RESET,
 * nothing wired or started; after a reset the driver can try again. */
START_TEST(unzone_refused_fails_driver_ok)
{
	drv_setup(0);
	fv_drain(&V);
	ck_assert_int_eq(log_capture_start(), 0);
	kvm->fail_deassign = true;
	kvm->fail_at = kvm->calls + 1; /* the zone's removal */
	fv_status_add(&V, VIRTIO_CONFIG_S_DRIVER_OK);
	kvm->fail_at = 0;
	kvm->fail_deassign = false;
	/* Logged as a zone (address and size), not as an fd. */
	ck_assert_uint_eq(log_capture_count("KVM_(UN)REGISTER_COALESCED_MMIO unregister zone 0x"), 1);
	ck_assert_uint_eq(log_capture_count("fd -1"), 0);
	ck_assert(!(fv_status(&V) & VIRTIO_CONFIG_S_DRIVER_OK));
	ck_assert(fv_status(&V) & VIRTIO_CONFIG_S_NEEDS_RESET);
	ck_assert_uint_eq(fdev.start_calls, 0);
	ck_assert_uint_eq(kvm->live_irqfd, 0);
	ck_assert_uint_eq(kvm->nr_msi, 0);
	ck_assert(table_zone()); /* still there: nothing may fire */

	FV_COMMON_WR(&V, STATUS, 0, 1);
	drv_setup(2);
	fv_status_add(&V, VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert(fv_status(&V) & VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert_uint_eq(fdev.start_calls, 1);
	ck_assert(!table_zone());
	for (unsigned int q = 0; q < NQ; q++)
		ck_assert(route_is(q, msg_addr(q + 1, 2), msg_data(q + 1, 2)));
}
END_TEST

static Suite *msix_zone_suite(void)
{
	Suite *s = suite_create("msix-zone");
	TCase *tc = tcase_create("zone");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, table_coalesced_until_driver_ok);
	tcase_add_test(tc, config_irq_waits_for_the_drain);
	tcase_add_test(tc, unzone_refused_fails_driver_ok);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(msix_zone_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
