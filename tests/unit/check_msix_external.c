/* SPDX-License-Identifier: MIT */
/*
 * MSI-X masking for a device whose queues another process serves (a
 * vhost-user back end writes call_fd itself: vq-wiring.h, "External
 * notifiers"), KVM-free over tests/harness/fake_vpci: a masked vector's
 * irqfds are deassigned, so what the back end signals meanwhile is not
 * delivered; at the unmask the route is refreshed first and the irqfds
 * reassigned (KVM then injects the pending count once); a rewrite of an
 * unmasked vector reaches the route at once, never leaving the back end's
 * interrupts on a stale message.
 */
#include <check.h>
#include <errno.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_ring.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include "irq.h"
#include "memory.h"
#include "pci/msix.h"
#include "virtio/virtio-pci.h"

#include "fake_vdev.h"
#include "fake_vpci.h"

#define NQ 4
#define QSIZE 16
#define RAM_SIZE (4ull << 20)
#define RING_BASE 0x100000ull

#define FD_FEATURES \
	((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX))

/* ---- machine ------------------------------------------------------------ */

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
	p.external_queues = true; /* a vhost-user device's */
	ck_assert_int_eq(fv_create(&V, &p), 0);
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

#define rewrite(v, gen) fv_msix_write(&V, v, msg_addr(v, gen), msg_data(v, gen))
#define mask(v, m) fv_msix_mask(&V, v, m)

/* Bring-up as the Linux driver: vectors programmed under the function
 * mask, queue q on vector q + 1, DRIVER_OK (one routing update). */
static void drv_up(void)
{
	ck_assert_int_eq(fv_negotiate(&V, FD_FEATURES, NULL), 0);
	fv_msix_ctrl(&V, MSIX_CTRL_ENABLE | MSIX_CTRL_MASKALL);
	for (unsigned int v = 0; v <= NQ; v++) {
		rewrite(v, 0);
		mask(v, false);
	}
	fv_msix_ctrl(&V, MSIX_CTRL_ENABLE);
	FV_COMMON_WR(&V, MSIX, 0, 2);
	for (unsigned int q = 0; q < NQ; q++) {
		uint64_t base = RING_BASE + q * 0x1000ull;

		ck_assert_uint_eq(fv_queue_setup(&V, q, QSIZE, base, base + 0x400,
						 base + 0x800, (uint16_t)(q + 1)),
				  q + 1);
	}
	fv_status_add(&V, VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert(fv_status(&V) & VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert_uint_eq(kvm->routing_calls, 1);
}

/* Interrupts the irqfd of queue @q received (and consumes them). */
static uint64_t fired(unsigned int q)
{
	eventfd_t v;

	return eventfd_read(fdev.queues[q].call_fd, &v) ? 0 : v;
}

static int gsi_of(unsigned int q)
{
	return kvm->irqfd_gsi[fdev.queues[q].call_fd];
}

/* The route of queue @q's irqfd carries (@addr, @data). */
static bool route_is(unsigned int q, uint64_t addr, uint32_t data)
{
	int gsi = gsi_of(q);

	return gsi >= 0 && kvm->route_valid[gsi] && kvm->route_addr[gsi] == addr &&
	       kvm->route_data[gsi] == data;
}


/* ---- tests --------------------------------------------------------------- */

START_TEST(masked_vector_holds_back_end_interrupts)
{
	int call;

	drv_up();
	for (unsigned int q = 0; q < NQ; q++)
		ck_assert(route_is(q, msg_addr(q + 1, 0), msg_data(q + 1, 0)));
	call = fdev.queues[1].call_fd;
	mask(2, true);
	/* No irqfd while masked: the back end's write waits in the eventfd. */
	ck_assert_int_eq(gsi_of(1), -1);
	ck_assert_int_ge(gsi_of(0), 0); /* other vectors untouched */
	ck_assert_int_eq(eventfd_write(call, 1), 0);
	rewrite(2, 5);
	mask(2, false);
	/* Route refreshed, then the irqfd back on it: KVM would inject the
	 * pending count with the new message. */
	ck_assert(route_is(1, msg_addr(2, 5), msg_data(2, 5)));
	ck_assert_uint_eq(fired(1), 1);
	ck_assert_uint_eq(kvm->msi_calls, 0);

	/* Function mask: every vector's irqfds go, and come back at the clear. */
	fv_msix_ctrl(&V, MSIX_CTRL_ENABLE | MSIX_CTRL_MASKALL);
	for (unsigned int q = 0; q < NQ; q++)
		ck_assert_int_eq(gsi_of(q), -1);
	fv_msix_ctrl(&V, MSIX_CTRL_ENABLE);
	for (unsigned int q = 0; q < NQ; q++)
		ck_assert_int_ge(gsi_of(q), 0);
}
END_TEST

START_TEST(unmasked_rewrite_reaches_route_at_once)
{
	unsigned int routing;

	drv_up();
	routing = kvm->routing_calls;
	rewrite(3, 9);
	/* No interrupt passes through the VMM: the route must follow now. */
	ck_assert_uint_gt(kvm->routing_calls, routing);
	ck_assert(route_is(2, msg_addr(3, 9), msg_data(3, 9)));
	ck_assert_int_ge(gsi_of(2), 0);
	ck_assert_uint_eq(kvm->msi_calls, 0);
}
END_TEST

/* A reset unwires everything, the irqfds of masked vectors included (the
 * fake KVM aborts on a deassign of nothing). */
START_TEST(reset_while_masked)
{
	drv_up();
	mask(1, true);
	FV_COMMON_WR(&V, STATUS, 0, 1);
	ck_assert_uint_eq(kvm->live_irqfd, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("msix_external");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, masked_vector_holds_back_end_interrupts);
	tcase_add_test(tc, unmasked_rewrite_reaches_route_at_once);
	tcase_add_test(tc, reset_while_masked);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
