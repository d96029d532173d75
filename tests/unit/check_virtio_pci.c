/* SPDX-License-Identifier: MIT */
/*
 * The modern virtio-pci transport, driven the way the Linux driver drives
 * it: config space through 0xCF8/0xCFC on a real PIO bus, registers through
 * the BAR on a real MMIO bus, a real PCI bus and MSI-X emulation, the real
 * wiring transaction over a fake KVM (counts and records ioctls, fails on
 * demand), fake guest RAM and a tiny fake device model.  No KVM needed.
 */
#include <check.h>
#include <errno.h>
#include <linux/kvm.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_pci.h>
#include <linux/virtio_ring.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "iobus.h"
#include "irq.h"
#include "x86/irqchip.h"
#include "memory.h"
#include "pci/msix.h"
#include "pci/pci.h"
#include "virtio/virtio-pci.h"

#include "fake_vdev.h"
#include "fake_vpci.h"

/* ---- the device: tests/harness/fake_vdev, offering these ---------------- */

#define FD_FEATURES                                                  \
	((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX) | \
	 (1ull << VIRTIO_RING_F_INDIRECT_DESC) | (1ull << 9))

/* ---- the machine ------------------------------------------------------- */

#define RAM_SIZE (8ull << 20)
#define QSIZE 16
#define RING_BASE 0x100000ull
#define RING_STRIDE 0x1000ull

/* The machine and what the "driver" found while probing (fake_vpci.h). */
static struct fv V;
static struct fv_kvm *kvm;
static struct guest_mem mem;
static void *ram;
static struct fvd fdev;

static void setup(void)
{
	ram = aligned_alloc(4096, RAM_SIZE);
	ck_assert_ptr_nonnull(ram);
	memset(ram, 0, RAM_SIZE);
	guest_mem_init_buf(&mem, ram, RAM_SIZE);
	ck_assert_int_eq(fv_init(&V, 3, FV_MMIO_BASE, FV_MMIO_SIZE, &mem), 0);
	kvm = V.kvm;
	kvm->fail_deassign = true; /* fail_at hits any call */
	fvd_init(&fdev, FD_FEATURES);
	for (unsigned int i = 0; i < sizeof(fdev.cfg); i++)
		fdev.cfg[i] = (uint8_t)(0xa0 + i);
}

static void teardown(void)
{
	fv_destroy(&V);
	free(ram);
}

static struct vpci_params params(unsigned int nq)
{
	struct vpci_params p = fv_params(&V);

	p.ops = &fvd_ops;
	p.dev = &fdev;
	p.num_queues = nq;
	p.max_queue_size = 256;
	p.ioeventfd_any_length = true;
	return p;
}

/* Config space through 0xCF8/0xCFC, BAR MMIO, status. */
#define cfg_rd(off, len) fv_cfg_rd(&V, off, len)
#define cfg_wr(off, v, len) fv_cfg_wr(&V, off, v, len)
#define mr(off, len) fv_mr(&V, off, len)
#define mw(off, v, len) fv_mw(&V, off, v, len)
#define COMMON_RD(field, len) FV_COMMON_RD(&V, field, len)
#define COMMON_WR(field, v, len) FV_COMMON_WR(&V, field, v, len)
#define status_rd() fv_status(&V)
#define status_add(bits) fv_status_add(&V, bits)

static void create(unsigned int nq)
{
	struct vpci_params p = params(nq);

	/* vpci_create(), then walk the capabilities as virtio_pci_modern. */
	ck_assert_int_eq(fv_create(&V, &p), 0);
	ck_assert_uint_eq(V.nq, nq);
	ck_assert_uint_eq(V.nr_vectors, nq + 1);
}

static uint64_t msg_addr(unsigned int v, unsigned int gen)
{
	return 0xfee00000ull | (uint64_t)((v + gen) & 0xff) << 12;
}

static uint32_t msg_data(unsigned int v, unsigned int gen)
{
	return 0x4000u + v + 0x100u * gen;
}

static void msix_entry(unsigned int v, uint64_t addr, uint32_t data,
		       bool masked)
{
	fv_msix_write(&V, v, addr, data);
	fv_msix_mask(&V, v, masked);
}

#define msix_mask(v, masked) fv_msix_mask(&V, v, masked)
#define msix_ctrl(bits) fv_msix_ctrl(&V, bits)
#define pba_bit(v) fv_pba_bit(&V, v)

/*
 * Reset, ACKNOWLEDGE, DRIVER, negotiate @features, FEATURES_OK; enable
 * MSI-X (with the function masked while entries are programmed, as the
 * Linux PCI core does), config vector 0.  Returns whether FEATURES_OK
 * stuck.
 */
static bool drv_begin(uint64_t features)
{
	uint64_t offered;

	COMMON_WR(STATUS, 0, 1);
	ck_assert_uint_eq(status_rd(), 0);
	status_add(VIRTIO_CONFIG_S_ACKNOWLEDGE);
	status_add(VIRTIO_CONFIG_S_DRIVER);
	COMMON_WR(DFSELECT, 0, 4);
	offered = COMMON_RD(DF, 4);
	COMMON_WR(DFSELECT, 1, 4);
	offered |= COMMON_RD(DF, 4) << 32;
	ck_assert_uint_eq(offered, FD_FEATURES);
	COMMON_WR(GFSELECT, 0, 4);
	COMMON_WR(GF, (uint32_t)features, 4);
	COMMON_WR(GFSELECT, 1, 4);
	COMMON_WR(GF, (uint32_t)(features >> 32), 4);
	status_add(VIRTIO_CONFIG_S_FEATURES_OK);
	if (!(status_rd() & VIRTIO_CONFIG_S_FEATURES_OK))
		return false;

	msix_ctrl(MSIX_CTRL_ENABLE | MSIX_CTRL_MASKALL);
	for (unsigned int v = 0; v < V.nr_vectors; v++)
		msix_entry(v, msg_addr(v, 0), msg_data(v, 0), false);
	msix_ctrl(MSIX_CTRL_ENABLE);
	COMMON_WR(MSIX, 0, 2);
	ck_assert_uint_eq(COMMON_RD(MSIX, 2), 0);
	return true;
}

static uint64_t ring_gpa(unsigned int q)
{
	return RING_BASE + q * RING_STRIDE;
}

/* Configure and enable queue @q with @vector, as vp_modern_setup_vq(). */
static void drv_queue(unsigned int q, uint16_t vector)
{
	uint64_t base = ring_gpa(q);

	COMMON_WR(Q_SELECT, q, 2);
	ck_assert_uint_eq(COMMON_RD(Q_SIZE, 2), 256);
	ck_assert_uint_eq(COMMON_RD(Q_ENABLE, 2), 0);
	COMMON_WR(Q_SIZE, QSIZE, 2);
	ck_assert_uint_eq(COMMON_RD(Q_SIZE, 2), QSIZE);
	COMMON_WR(Q_DESCLO, (uint32_t)base, 4);
	COMMON_WR(Q_DESCHI, (uint32_t)(base >> 32), 4);
	COMMON_WR(Q_AVAILLO, (uint32_t)(base + 0x400), 4);
	COMMON_WR(Q_AVAILHI, 0, 4);
	/* 64-bit field in one access. */
	COMMON_WR(Q_USEDLO, base + 0x800, 8);
	ck_assert_uint_eq(COMMON_RD(Q_USEDLO, 8), base + 0x800);
	COMMON_WR(Q_MSIX, vector, 2);
	ck_assert_uint_eq(COMMON_RD(Q_MSIX, 2), vector);
	COMMON_WR(Q_ENABLE, 1, 2);
	ck_assert_uint_eq(COMMON_RD(Q_ENABLE, 2), 1);
}

#define DRV_FEATURES \
	((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX))

/* Full bring-up of @nq queues, queue i on vector i + 1. */
static void drv_up(unsigned int nq)
{
	ck_assert(drv_begin(DRV_FEATURES));
	for (unsigned int q = 0; q < nq; q++)
		drv_queue(q, (uint16_t)(q + 1));
	status_add(VIRTIO_CONFIG_S_DRIVER_OK);
}

#define notify_addr(q) fv_notify_addr(&V, q)

static bool eventfd_fired(int fd)
{
	eventfd_t v;

	return eventfd_read(fd, &v) == 0 && v > 0;
}

/* Queue @q's notify address with the BAR at @bar (notify_off == q). */
static uint64_t notify_at(uint64_t bar, unsigned int q)
{
	return bar + V.notify + (uint64_t)q * V.mult;
}

/* Every queue's kick eventfd is an ioeventfd on its notify address. */
static void assert_kicks_placed(void)
{
	ck_assert_uint_eq(kvm->live_ioev, V.nq);
	for (unsigned int q = 0; q < V.nq; q++) {
		int fd = vpci_kick_fd(V.t, q);

		ck_assert(kvm->ioev[fd]);
		ck_assert_uint_eq(kvm->ioev_addr[fd], fv_notify_addr(&V, q));
	}
}

/* No interrupt wiring is left; the notify ioeventfds stay with the BAR. */
static void assert_unwired(void)
{
	ck_assert_uint_eq(kvm->live_irqfd, 0);
	ck_assert_uint_eq(kvm->nr_msi, 0);
	assert_kicks_placed();
}

/* ---- tests --------------------------------------------------------------- */

START_TEST(identity_and_caps)
{
	create(4);
	ck_assert_uint_eq(cfg_rd(PCI_CFG_DEVICE_ID, 2), 0x1040 + VIRTIO_ID_BLOCK);
	ck_assert_uint_eq(cfg_rd(PCI_CFG_REVISION, 1), 1);
	ck_assert_uint_eq(cfg_rd(PCI_CFG_REVISION, 4) >> 8, 0x018000);
	ck_assert_uint_eq(cfg_rd(PCI_CFG_SUBSYS_VENDOR, 2), VPCI_VENDOR_ID);
	ck_assert_uint_eq(cfg_rd(PCI_CFG_INT_PIN, 1), 0); /* no INTx */
	ck_assert_uint_eq(V.mult, 4);
	ck_assert_uint_ge(V.notify_len, 4 * 4);
	ck_assert_uint_eq(V.devcfg_len, 16);
	/* The MSI-X table and PBA sit on pages of their own. */
	ck_assert_uint_eq(V.table % 4096, 0);
	ck_assert_uint_eq(V.pba % 4096, 0);

	/* Distinct notify addresses, one per queue, inside the notify area. */
	for (unsigned int q = 0; q < 4; q++) {
		uint64_t a = notify_addr(q);

		ck_assert_uint_ge(a, V.bar + V.notify);
		ck_assert_uint_le(a + 2, V.bar + V.notify + V.notify_len);
		for (unsigned int p = 0; p < q; p++)
			ck_assert_uint_ne(a, notify_addr(p));
	}
	/* A queue index past num_queues reads as absent. */
	COMMON_WR(Q_SELECT, 4, 2);
	ck_assert_uint_eq(COMMON_RD(Q_SIZE, 2), 0);

	/* Device configuration, with bounds. */
	ck_assert_uint_eq(mr(V.devcfg, 4), 0xa3a2a1a0);
	ck_assert_uint_eq(mr(V.devcfg + 15, 1), 0xaf);
	ck_assert_uint_eq(mr(V.devcfg + 14, 4), 0); /* crosses the end */
	mw(V.devcfg + 2, 0x55, 1);
	ck_assert_uint_eq(fdev.cfg[2], 0x55);
	mw(V.devcfg + 16, 0x66, 1); /* outside: dropped */

	/* Sub-width and 64-bit reads of the common config. */
	ck_assert_uint_eq(COMMON_RD(NUMQ, 1), 4);
	ck_assert_uint_eq(mr(V.common + VIRTIO_PCI_COMMON_MSIX, 4),
			  0xffffu | 4u << 16);
}
END_TEST

START_TEST(driver_ok_wires_in_one_transaction)
{
	struct vpci_stats st0, st;

	create(4);
	/* The notify ioeventfds come with the BAR, before any driver. */
	assert_kicks_placed();
	ck_assert_uint_eq(kvm->calls, 4);
	ck_assert_uint_eq(kvm->ioeventfd_calls, 4);
	ck_assert(drv_begin(DRV_FEATURES));
	ck_assert_uint_eq(fdev.set_features_calls, 1);
	ck_assert_uint_eq(fdev.accepted, DRV_FEATURES);
	for (unsigned int q = 0; q < 4; q++)
		drv_queue(q, (uint16_t)(q + 1));
	ck_assert_uint_eq(kvm->calls, 4); /* nothing else before DRIVER_OK */
	vpci_get_stats(V.t, &st0);
	status_add(VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert(status_rd() & VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert(!(status_rd() & VIRTIO_CONFIG_S_NEEDS_RESET));

	ck_assert_uint_eq(kvm->routing_calls, 1);
	ck_assert_uint_eq(kvm->live_ioev, 4);
	ck_assert_uint_eq(kvm->live_irqfd, 4);
	ck_assert_uint_eq(kvm->nr_msi, 4);
	/* DRIVER_OK: one routing update and the irqfds, no ioeventfd. */
	ck_assert_uint_eq(kvm->calls, 4 + 1 + 4);
	ck_assert_uint_eq(kvm->ioeventfd_calls, 4);
	ck_assert_uint_eq(fdev.start_calls, 1);
	ck_assert_uint_eq(fdev.nr, 4);
	ck_assert_uint_eq(fdev.started_enabled, 4);
	for (unsigned int q = 0; q < 4; q++) {
		struct virtio_queue *vq = &fdev.queues[q];
		int gsi;

		ck_assert_uint_eq(vq->vector, q + 1);
		ck_assert(kvm->ioev[vq->kick_fd]);
		ck_assert_uint_eq(kvm->ioev_addr[vq->kick_fd], notify_addr(q));
		ck_assert_uint_eq(kvm->ioev_len[vq->kick_fd], 0);
		gsi = kvm->irqfd_gsi[vq->call_fd];
		ck_assert_int_ge(gsi, X86_IRQ_FIRST_MSI_GSI);
		ck_assert(kvm->route_valid[gsi]);
		ck_assert_uint_eq(kvm->route_addr[gsi], msg_addr(q + 1, 0));
		ck_assert_uint_eq(kvm->route_data[gsi], msg_data(q + 1, 0));
		ck_assert_int_eq(kvm->route_devid[gsi], -1); /* x86: none */
		ck_assert_uint_eq(vq->vq.size, QSIZE);
		ck_assert_uint_eq(vq->vq.desc_gpa, ring_gpa(q));
	}
	vpci_get_stats(V.t, &st);
	ck_assert_uint_eq(st.wiring_commits, st0.wiring_commits + 1);
	ck_assert_uint_eq(st.wiring_ioctls, st0.wiring_ioctls + 5);

	/* A kick KVM did not catch (here: every kick, the fake KVM does not
	 * intercept MMIO) reaches kick_fd through the MMIO handler. */
	ck_assert(!eventfd_fired(fdev.queues[2].kick_fd));
	{
		uint16_t idx = 2;

		ck_assert_int_eq(iobus_dispatch(&V.mmio, notify_addr(2), &idx, 2,
						true), 0);
	}
	ck_assert(eventfd_fired(fdev.queues[2].kick_fd));

	/* Queue configuration is frozen while live. */
	COMMON_WR(Q_SELECT, 1, 2);
	COMMON_WR(Q_SIZE, 8, 2);
	COMMON_WR(Q_DESCLO, 0x5000, 4);
	COMMON_WR(Q_MSIX, 0, 2);
	ck_assert_uint_eq(COMMON_RD(Q_SIZE, 2), QSIZE);
	ck_assert_uint_eq(COMMON_RD(Q_DESCLO, 4), (uint32_t)ring_gpa(1));
	ck_assert_uint_eq(COMMON_RD(Q_MSIX, 2), 2);
}
END_TEST

START_TEST(notify_masked_pending_unmask)
{
	struct virtio_queue *q;
	struct vpci_stats st;
	unsigned int routing;

	create(2);
	drv_up(2);
	q = &fdev.queues[0];
	routing = kvm->routing_calls;

	virtio_queue_notify(q);
	ck_assert(eventfd_fired(q->call_fd));
	ck_assert_uint_eq(vpci_queue_interrupts(V.t, 0), 1);

	/* Masked: nothing sent, the PBA bit is set instead. */
	msix_mask(1, true);
	virtio_queue_notify(q);
	virtio_queue_notify(q);
	ck_assert(!eventfd_fired(q->call_fd));
	ck_assert(pba_bit(1));
	ck_assert(!pba_bit(2));
	vpci_get_stats(V.t, &st);
	ck_assert_uint_eq(st.interrupts_masked, 2);

	/* Unmask delivers it once; the message did not change, so no route
	 * update. */
	msix_mask(1, false);
	ck_assert(eventfd_fired(q->call_fd));
	ck_assert(!eventfd_fired(q->call_fd));
	ck_assert(!pba_bit(1));
	ck_assert_uint_eq(kvm->routing_calls, routing);

	/* The function mask works the same way. */
	msix_ctrl(MSIX_CTRL_ENABLE | MSIX_CTRL_MASKALL);
	virtio_queue_notify(&fdev.queues[1]);
	ck_assert(!eventfd_fired(fdev.queues[1].call_fd));
	ck_assert(pba_bit(2));
	msix_ctrl(MSIX_CTRL_ENABLE);
	ck_assert(eventfd_fired(fdev.queues[1].call_fd));
	ck_assert(!pba_bit(2));
	ck_assert_uint_eq(kvm->routing_calls, routing);
	vpci_get_stats(V.t, &st);
	ck_assert_uint_eq(st.interrupts, 3);
	ck_assert_uint_eq(vpci_queue_interrupts(V.t, 1), 0); /* via unmask */
}
END_TEST

START_TEST(poll_queue_has_no_irqfd)
{
	struct vpci_stats st;

	create(3);
	ck_assert(drv_begin(DRV_FEATURES));
	drv_queue(0, 1);
	drv_queue(1, 2);
	drv_queue(2, VIRTIO_NO_VECTOR); /* virtio_blk.poll_queues */
	status_add(VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert(status_rd() & VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert_uint_eq(kvm->routing_calls, 1);
	ck_assert_uint_eq(kvm->live_ioev, 3);
	ck_assert_uint_eq(kvm->live_irqfd, 2);
	ck_assert_uint_eq(kvm->nr_msi, 2);
	ck_assert_uint_eq(fdev.started_enabled, 3);
	ck_assert_int_eq(fdev.queues[2].call_fd, -1);
	ck_assert_int_ge(fdev.queues[2].kick_fd, 0);
	virtio_queue_notify(&fdev.queues[2]);
	vpci_get_stats(V.t, &st);
	ck_assert_uint_eq(st.interrupts, 0);
	ck_assert_uint_eq(st.interrupts_masked, 0);
	ck_assert_uint_eq(kvm->msi_calls, 0);
}
END_TEST

START_TEST(reset_unwires_and_clears)
{
	struct vpci_stats st;

	create(4);
	drv_up(4);
	ck_assert_uint_eq(kvm->routing_calls, 1);
	COMMON_WR(STATUS, 0, 1);
	ck_assert_uint_eq(status_rd(), 0);
	ck_assert_uint_eq(fdev.stop_calls, 1);
	assert_unwired();
	ck_assert_uint_eq(kvm->routing_calls, 2); /* one teardown commit */
	vpci_get_stats(V.t, &st);
	ck_assert_uint_eq(st.resets, 2); /* drv_begin's reset too */
	/* Placing the kicks, DRIVER_OK, the reset. */
	ck_assert_uint_eq(st.wiring_commits, 3);

	/* State is back to the defaults. */
	ck_assert_uint_eq(COMMON_RD(MSIX, 2), VIRTIO_NO_VECTOR);
	COMMON_WR(GFSELECT, 0, 4);
	ck_assert_uint_eq(COMMON_RD(GF, 4), 0);
	for (unsigned int q = 0; q < 4; q++) {
		COMMON_WR(Q_SELECT, q, 2);
		ck_assert_uint_eq(COMMON_RD(Q_SIZE, 2), 256);
		ck_assert_uint_eq(COMMON_RD(Q_MSIX, 2), VIRTIO_NO_VECTOR);
		ck_assert_uint_eq(COMMON_RD(Q_ENABLE, 2), 0);
		ck_assert_uint_eq(COMMON_RD(Q_DESCLO, 8), 0);
	}

	/* And it comes up again. */
	drv_up(4);
	ck_assert(status_rd() & VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert_uint_eq(fdev.start_calls, 2);
	ck_assert_uint_eq(kvm->live_ioev, 4);
	ck_assert_uint_eq(kvm->live_irqfd, 4);
	ck_assert_uint_eq(kvm->routing_calls, 3);

	/* Destroy of a live device stops and unwires it, kicks included. */
	vpci_destroy(V.t);
	V.t = NULL;
	ck_assert_uint_eq(fdev.stop_calls, 2);
	ck_assert_uint_eq(kvm->live_ioev, 0);
	ck_assert_uint_eq(kvm->live_irqfd, 0);
	ck_assert_uint_eq(kvm->nr_msi, 0);
}
END_TEST

/* The VM's end: the device stops as with a reset, but no KVM ioctl undoes
 * its wiring, neither then nor at vpci_destroy() (KVM drops it with the VM
 * fd). */
START_TEST(shutdown_leaves_wiring_to_kvm)
{
	struct vpci_params p = params(4);
	unsigned int routing, irqfd, ioev;

	p.coalesce_queue_regs = true;
	ck_assert_int_eq(fv_create(&V, &p), 0);
	drv_up(4);
	ck_assert_uint_eq(kvm->nr_zones, 1);
	routing = kvm->routing_calls;
	irqfd = kvm->irqfd_calls;
	ioev = kvm->ioeventfd_calls;
	vpci_shutdown(V.t);
	ck_assert_uint_eq(fdev.stop_calls, 1);
	vpci_shutdown(V.t); /* idempotent */
	ck_assert_uint_eq(fdev.stop_calls, 1);
	vpci_destroy(V.t);
	V.t = NULL;
	ck_assert_uint_eq(fdev.stop_calls, 1);
	ck_assert_uint_eq(kvm->routing_calls, routing);
	ck_assert_uint_eq(kvm->irqfd_calls, irqfd);
	ck_assert_uint_eq(kvm->ioeventfd_calls, ioev);
	/* Still registered in the (fake) VM, as they would be in KVM until
	 * its fd closes. */
	ck_assert_uint_eq(kvm->live_ioev, 4);
	ck_assert_uint_eq(kvm->live_irqfd, 4);
	ck_assert_uint_eq(kvm->nr_zones, 1);
	/* Queue registers and table placed, the table's removed at
	 * DRIVER_OK (check_msix_zone), nothing since. */
	ck_assert_uint_eq(kvm->zone_calls, 3);
}
END_TEST

START_TEST(features_ok_refused)
{
	create(1);
	/* No VERSION_1: legacy driver. */
	ck_assert(!drv_begin(1ull << VIRTIO_RING_F_EVENT_IDX));
	ck_assert_uint_eq(fdev.set_features_calls, 0);
	/* A feature that was not offered. */
	ck_assert(!drv_begin(DRV_FEATURES | (1ull << 10)));
	ck_assert_uint_eq(fdev.set_features_calls, 0);
	/* The device refuses. */
	fdev.refuse = true;
	ck_assert(!drv_begin(DRV_FEATURES));
	ck_assert_uint_eq(fdev.set_features_calls, 1);
	fdev.refuse = false;
	ck_assert(drv_begin(DRV_FEATURES));
	/* Driver features are frozen after FEATURES_OK. */
	COMMON_WR(GFSELECT, 0, 4);
	COMMON_WR(GF, 0, 4);
	ck_assert_uint_eq(COMMON_RD(GF, 4), (uint32_t)DRV_FEATURES);

	/* DRIVER_OK without FEATURES_OK is a violation. */
	COMMON_WR(STATUS, 0, 1);
	status_add(VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
	status_add(VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert(!(status_rd() & VIRTIO_CONFIG_S_DRIVER_OK));
	ck_assert(status_rd() & VIRTIO_CONFIG_S_NEEDS_RESET);
	ck_assert_uint_eq(fdev.start_calls, 0);
	/* Nothing but the ioeventfds placed with the BAR. */
	ck_assert_uint_eq(kvm->calls, kvm->ioeventfd_calls);
	ck_assert_uint_eq(kvm->ioeventfd_calls, 1);
}
END_TEST

/* Under an ITS-style controller every MSI the transport makes -- its
 * queues' routes and its direct ones -- carries its PCI requester ID
 * (the device ID of the device tree's identity msi-map); under x86's none
 * does. */
static const struct irq_platform its_platform = { .msi_devid = true };

START_TEST(requester_ids)
{
	unsigned int devid;

	for (unsigned int gsi = 0; gsi < IRQ_MAX_ROUTES; gsi++)
		ck_assert(!kvm->route_valid[gsi]);
	fv_destroy(&V);
	ck_assert_int_eq(fv_init_platform(&V, 3, &its_platform, FV_MMIO_BASE,
					  FV_MMIO_SIZE, &mem), 0);
	kvm = V.kvm;
	create(2);
	devid = PCI_DEVFN(vpci_pci_device(V.t)->slot, vpci_pci_device(V.t)->fn);
	ck_assert_uint_ne(devid, 0);
	ck_assert(drv_begin(DRV_FEATURES));
	for (unsigned int q = 0; q < 2; q++)
		drv_queue(q, (uint16_t)(q + 1));
	status_add(VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert(!(status_rd() & VIRTIO_CONFIG_S_NEEDS_RESET));
	ck_assert_uint_eq(kvm->nr_msi, 2);
	for (unsigned int q = 0; q < 2; q++) {
		int gsi = kvm->irqfd_gsi[fdev.queues[q].call_fd];

		ck_assert_int_ge(gsi, 0);
		ck_assert_int_eq(kvm->route_devid[gsi], devid);
	}
	vpci_config_changed(V.t); /* KVM_SIGNAL_MSI on the config vector */
	ck_assert_uint_eq(kvm->msi_calls, 1);
	ck_assert_int_eq(kvm->msi_devid, devid);
}
END_TEST

START_TEST(bad_queue_size)
{
	struct vpci_stats st;

	create(1);
	ck_assert(drv_begin(DRV_FEATURES));
	COMMON_WR(Q_SELECT, 0, 2);
	COMMON_WR(Q_SIZE, 64, 2);
	ck_assert_uint_eq(COMMON_RD(Q_SIZE, 2), 64);
	COMMON_WR(Q_SIZE, 48, 2); /* not a power of two */
	ck_assert_uint_eq(COMMON_RD(Q_SIZE, 2), 64);
	ck_assert(status_rd() & VIRTIO_CONFIG_S_NEEDS_RESET);
	/* The config interrupt went out on vector 0 (unmasked). */
	ck_assert_uint_eq(kvm->msi_calls, 1);
	ck_assert_uint_eq(kvm->msi_addr, msg_addr(0, 0));
	ck_assert_uint_eq(kvm->msi_data, msg_data(0, 0));
	ck_assert_uint_eq(mr(V.isr, 1), VIRTIO_PCI_ISR_CONFIG);
	ck_assert_uint_eq(mr(V.isr, 1), 0); /* read clears */
	COMMON_WR(Q_SIZE, 512, 2); /* above the maximum */
	ck_assert_uint_eq(COMMON_RD(Q_SIZE, 2), 64);
	COMMON_WR(Q_SIZE, 0, 2);
	ck_assert_uint_eq(COMMON_RD(Q_SIZE, 2), 64);
	vpci_get_stats(V.t, &st);
	ck_assert_uint_eq(st.needs_reset, 1); /* set once */
	ck_assert_uint_eq(st.config_interrupts, 1);
	/* Wrong-width write: ignored. */
	COMMON_WR(Q_SIZE, 0x00100010, 4);
	ck_assert_uint_eq(COMMON_RD(Q_SIZE, 2), 64);
	/* Reset clears NEEDS_RESET. */
	COMMON_WR(STATUS, 0, 1);
	ck_assert_uint_eq(status_rd(), 0);
}
END_TEST

START_TEST(msix_vector_out_of_range)
{
	create(2); /* 3 vectors */
	ck_assert(drv_begin(DRV_FEATURES));
	COMMON_WR(Q_SELECT, 1, 2);
	COMMON_WR(Q_MSIX, 2, 2);
	ck_assert_uint_eq(COMMON_RD(Q_MSIX, 2), 2);
	COMMON_WR(Q_MSIX, 3, 2);
	ck_assert_uint_eq(COMMON_RD(Q_MSIX, 2), VIRTIO_NO_VECTOR);
	COMMON_WR(Q_MSIX, 0x7ff, 2);
	ck_assert_uint_eq(COMMON_RD(Q_MSIX, 2), VIRTIO_NO_VECTOR);
	COMMON_WR(MSIX, 3, 2);
	ck_assert_uint_eq(COMMON_RD(MSIX, 2), VIRTIO_NO_VECTOR);
	COMMON_WR(MSIX, 1, 2);
	ck_assert_uint_eq(COMMON_RD(MSIX, 2), 1);
	ck_assert(!(status_rd() & VIRTIO_CONFIG_S_NEEDS_RESET));
}
END_TEST

START_TEST(ring_outside_ram)
{
	struct vpci_stats st;

	create(2);
	ck_assert(drv_begin(DRV_FEATURES));
	drv_queue(0, 1);
	drv_queue(1, 2);
	COMMON_WR(Q_SELECT, 1, 2);
	COMMON_WR(Q_AVAILLO, RAM_SIZE - 8, 8); /* ring runs past the end */
	status_add(VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert(!(status_rd() & VIRTIO_CONFIG_S_DRIVER_OK));
	ck_assert(status_rd() & VIRTIO_CONFIG_S_NEEDS_RESET);
	ck_assert_uint_eq(fdev.start_calls, 0);
	assert_unwired();
	/* Only the config MSI, after the ioeventfds placed at creation. */
	ck_assert_uint_eq(kvm->calls, kvm->ioeventfd_calls + 1);
	ck_assert_uint_eq(kvm->ioeventfd_calls, 2);
	vpci_get_stats(V.t, &st);
	ck_assert_uint_eq(st.needs_reset, 1);

	/* Misaligned descriptor table. */
	ck_assert(drv_begin(DRV_FEATURES));
	drv_queue(0, 1);
	COMMON_WR(Q_DESCLO, ring_gpa(0) + 8, 8);
	status_add(VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert(status_rd() & VIRTIO_CONFIG_S_NEEDS_RESET);
	assert_unwired();

	/* Fixed, it comes up. */
	drv_up(2);
	ck_assert(status_rd() & VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert_uint_eq(fdev.start_calls, 1);
}
END_TEST

/* Bring @nq queues up @total times, KVM failing the first, second, ...
 * call of DRIVER_OK's wiring: each time NEEDS_RESET and nothing wired. */
static void driver_ok_fails_at_each_call(unsigned int nq, unsigned int total)
{
	for (unsigned int fail = 1; fail <= total; fail++) {
		ck_assert(drv_begin(DRV_FEATURES));
		for (unsigned int q = 0; q < nq; q++)
			drv_queue(q, (uint16_t)(q + 1));
		kvm->fail_at = kvm->calls + fail;
		status_add(VIRTIO_CONFIG_S_DRIVER_OK);
		kvm->fail_at = 0;
		ck_assert(!(status_rd() & VIRTIO_CONFIG_S_DRIVER_OK));
		ck_assert(status_rd() & VIRTIO_CONFIG_S_NEEDS_RESET);
		ck_assert_uint_eq(fdev.start_calls, 0);
		assert_unwired();
	}
}

START_TEST(kvm_failure_rolls_back)
{
	const unsigned int nq = 2, total = 1 + nq; /* routing + irqfds */

	create(nq);
	driver_ok_fails_at_each_call(nq, total);
	/* Reset and retry works (GSIs and fds were given back). */
	drv_up(nq);
	ck_assert(status_rd() & VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert(!(status_rd() & VIRTIO_CONFIG_S_NEEDS_RESET));
	ck_assert_uint_eq(fdev.start_calls, 1);
	ck_assert_uint_eq(kvm->live_irqfd, nq);
	ck_assert_uint_eq(kvm->live_ioev, nq);
	ck_assert_uint_eq(kvm->nr_msi, nq);

	/* The device failing to start unwires too. */
	COMMON_WR(STATUS, 0, 1);
	fdev.start_ret = -EIO;
	drv_up(nq);
	ck_assert(status_rd() & VIRTIO_CONFIG_S_NEEDS_RESET);
	ck_assert(!(status_rd() & VIRTIO_CONFIG_S_DRIVER_OK));
	assert_unwired();
}
END_TEST

/* KVM refusing the notify ioeventfds costs speed, never a kick: they
 * go through the MMIO handler, and the next DRIVER_OK tries again.  A
 * refused move leaves none behind on the old address. */
START_TEST(kick_placement_failure_falls_back)
{
	struct vpci_params p = params(2);
	uint64_t nbar = FV_MMIO_BASE + 0x10000000;
	uint16_t idx = 0;

	kvm->fail_at = 2; /* the second ioeventfd of the first placement */
	ck_assert_int_eq(fv_create(&V, &p), 0);
	kvm->fail_at = 0;
	ck_assert_uint_eq(kvm->live_ioev, 0);
	drv_up(2);
	ck_assert(status_rd() & VIRTIO_CONFIG_S_DRIVER_OK);
	assert_kicks_placed(); /* placed again at DRIVER_OK */

	kvm->fail_at = kvm->calls + 3; /* the move: 2 deassigns, then 2 */
	cfg_wr(PCI_CFG_BAR0, (uint32_t)nbar, 4);
	kvm->fail_at = 0;
	V.bar = nbar;
	ck_assert_uint_eq(kvm->live_ioev, 0);
	ck_assert(!eventfd_fired(fdev.queues[1].kick_fd));
	ck_assert_int_eq(iobus_dispatch(&V.mmio, notify_addr(1), &idx, 2, true), 0);
	ck_assert(eventfd_fired(fdev.queues[1].kick_fd));
	ck_assert(!(status_rd() & VIRTIO_CONFIG_S_NEEDS_RESET));
}
END_TEST

START_TEST(bar_move_moves_ioeventfds)
{
	struct vpci_stats st0, st1;
	uint64_t old = V.bar, nbar = FV_MMIO_BASE + 0x10000000;
	unsigned int calls;

	create(3);
	drv_up(3);
	old = V.bar;
	vpci_get_stats(V.t, &st0);
	calls = kvm->calls;
	cfg_wr(PCI_CFG_BAR0, (uint32_t)nbar, 4);
	V.bar = cfg_rd(PCI_CFG_BAR0, 4) & ~0xfu;
	ck_assert_uint_eq(V.bar, nbar);
	vpci_get_stats(V.t, &st1);
	ck_assert_uint_eq(st1.wiring_commits, st0.wiring_commits + 1);
	ck_assert_uint_eq(kvm->calls, calls + 2 * 3);
	ck_assert_uint_eq(kvm->ioeventfd_calls, 3 + 2 * 3);
	ck_assert_uint_eq(kvm->live_ioev, 3);
	for (unsigned int q = 0; q < 3; q++) {
		uint64_t a = notify_addr(q);

		ck_assert_uint_ge(a, nbar);
		ck_assert_uint_eq(kvm->ioev_addr[fdev.queues[q].kick_fd], a);
	}
	/* The registers answer at the new address only. */
	ck_assert_uint_eq(COMMON_RD(NUMQ, 2), 3);
	{
		uint32_t v = 0;

		ck_assert_int_eq(iobus_dispatch(&V.mmio, old, &v, 4, false),
				 -ENOENT);
	}

	/* Decode off (COMMAND.MEM clear) and on again at the same address,
	 * as Linux does around the sizing of each BAR slot: the ioeventfds
	 * stay parked, no KVM call at all. */
	calls = kvm->calls;
	for (unsigned int slot = 0; slot < 7; slot++) {
		cfg_wr(PCI_CFG_COMMAND, 0, 2);
		cfg_wr(PCI_CFG_BAR0, 0xffffffffu, 4); /* sizing */
		cfg_wr(PCI_CFG_BAR0, (uint32_t)nbar, 4);
		cfg_wr(PCI_CFG_COMMAND, PCI_CMD_MEM, 2);
	}
	ck_assert_uint_eq(kvm->calls, calls);
	assert_kicks_placed();

	/* Moved while decoding is off: one transaction when it comes on. */
	cfg_wr(PCI_CFG_COMMAND, 0, 2);
	cfg_wr(PCI_CFG_BAR0, (uint32_t)old, 4);
	ck_assert_uint_eq(kvm->calls, calls);
	cfg_wr(PCI_CFG_COMMAND, PCI_CMD_MEM, 2);
	V.bar = old;
	ck_assert_uint_eq(kvm->calls, calls + 2 * 3);
	assert_kicks_placed();
	ck_assert_uint_eq(kvm->routing_calls, 1); /* routes untouched */

	/* Reset after a move: interrupts unwired, kicks where they are. */
	COMMON_WR(STATUS, 0, 1);
	assert_unwired();
}
END_TEST

/* Parked ioeventfds never swallow another device's accesses: a BAR mapped
 * over them makes them go first (the fake KVM aborts on two ioeventfds at
 * one address), and the device places them again when its own BAR comes
 * back somewhere free. */
START_TEST(parked_kicks_yield_to_another_bar)
{
	struct vpci_params p = params(3);
	struct virtio_transport *b;
	unsigned int bslot;
	uint64_t a_bar, b_bar, free_bar = FV_MMIO_BASE + 0x10000000;
	uint32_t v;

	create(3);
	a_bar = V.bar;
	ck_assert_int_eq(vpci_create(&p, &b), 0);
	ck_assert_uint_eq(kvm->live_ioev, 6);
	bslot = vpci_pci_device(b)->slot;
	ck_assert_int_eq(fv_cfg_access(&V, bslot, PCI_CFG_BAR0, &v, 4, false), 0);
	b_bar = v & ~0xfu;
	ck_assert_uint_ne(a_bar, b_bar);

	/* A's decoding off: parked at a_bar.  B moves onto a_bar. */
	cfg_wr(PCI_CFG_COMMAND, 0, 2);
	ck_assert_uint_eq(kvm->live_ioev, 6);
	v = (uint32_t)a_bar;
	ck_assert_int_eq(fv_cfg_access(&V, bslot, PCI_CFG_BAR0, &v, 4, true), 0);
	ck_assert_uint_eq(kvm->live_ioev, 3); /* A's went first */
	for (unsigned int q = 0; q < 3; q++) {
		int fd = vpci_kick_fd(b, q);

		ck_assert_uint_eq(kvm->ioev_addr[fd], notify_at(a_bar, q));
		ck_assert_int_eq(fv_kvm_kick_fd(kvm, notify_at(a_bar, q)), fd);
	}

	/* A on again at a_bar: overlaps B, left unmapped, nothing placed. */
	cfg_wr(PCI_CFG_COMMAND, PCI_CMD_MEM, 2);
	ck_assert_uint_eq(kvm->live_ioev, 3);
	/* A moved somewhere free: mapped, its kicks placed there. */
	cfg_wr(PCI_CFG_BAR0, (uint32_t)free_bar, 4);
	V.bar = free_bar;
	ck_assert_uint_eq(kvm->live_ioev, 6);
	for (unsigned int q = 0; q < 3; q++)
		ck_assert_uint_eq(kvm->ioev_addr[vpci_kick_fd(V.t, q)],
				  notify_at(free_bar, q));
	ck_assert_uint_eq(COMMON_RD(NUMQ, 2), 3); /* and answers there */

	vpci_destroy(b);
	ck_assert_uint_eq(kvm->live_ioev, 3);
	vpci_destroy(V.t);
	V.t = NULL;
	ck_assert_uint_eq(kvm->live_ioev, 0);
}
END_TEST

/* Transport B beside A (V.t, made by create(3)), 3 queues: its slot and
 * BAR address. */
static struct virtio_transport *second(unsigned int *slot, uint64_t *bar)
{
	struct vpci_params p = params(3);
	struct virtio_transport *b;
	uint32_t v;

	ck_assert_int_eq(vpci_create(&p, &b), 0);
	*slot = vpci_pci_device(b)->slot;
	ck_assert_int_eq(fv_cfg_access(&V, *slot, PCI_CFG_BAR0, &v, 4, false), 0);
	*bar = v & ~0xfu;
	return b;
}

static void bar_wr(unsigned int slot, uint64_t gpa)
{
	uint32_t v = (uint32_t)gpa;

	ck_assert_int_eq(fv_cfg_access(&V, slot, PCI_CFG_BAR0, &v, 4, true), 0);
}

/* @t's notify ioeventfds, and only they, answer at BAR address @bar. */
static void assert_kicks_at(struct virtio_transport *t, uint64_t bar)
{
	for (unsigned int q = 0; q < 3; q++) {
		int fd = vpci_kick_fd(t, q);

		ck_assert_uint_eq(kvm->ioev_addr[fd], notify_at(bar, q));
		ck_assert_int_eq(fv_kvm_kick_fd(kvm, notify_at(bar, q)), fd);
	}
}

/* A's BAR register to @bar, where B decodes: A unmapped, kicks parked. */
static void a_onto(uint64_t bar)
{
	cfg_wr(PCI_CFG_BAR0, (uint32_t)bar, 4);
	ck_assert_uint_eq(pci_bar_gpa(vpci_pci_device(V.t), VPCI_BAR), PCI_BAR_UNMAPPED);
}

static void destroy_both(struct virtio_transport *b)
{
	vpci_destroy(b);
	vpci_destroy(V.t);
	V.t = NULL;
	ck_assert_uint_eq(kvm->live_ioev, 0);
}

/* The same when one write does both: B was programmed onto A's BAR while
 * A decoded it (B left unmapped), then A's decoding goes off, which maps B
 * there in the same configuration write.  A must hear that its BAR is
 * unmapped before it hears that its parked range is taken, or it keeps
 * its kicks at a_bar, where B's writes would reach them (found by
 * fuzz_pci_bus: bar_range_taken came before bar_moved). */
START_TEST(parked_kicks_yield_in_one_write)
{
	struct virtio_transport *b;
	unsigned int bslot;
	uint64_t a_bar, b_bar;

	create(3);
	a_bar = V.bar;
	b = second(&bslot, &b_bar);

	/* B onto a_bar while A decodes it: B unmapped, its kicks parked. */
	bar_wr(bslot, a_bar);
	ck_assert_uint_eq(pci_bar_gpa(vpci_pci_device(b), VPCI_BAR), PCI_BAR_UNMAPPED);
	ck_assert_uint_eq(kvm->live_ioev, 6);
	/* A's decoding off: B mapped at a_bar, A's kicks gone first (the fake
	 * KVM aborts on two ioeventfds at one address), B's placed there. */
	cfg_wr(PCI_CFG_COMMAND, 0, 2);
	ck_assert_uint_eq(pci_bar_gpa(vpci_pci_device(b), VPCI_BAR), a_bar);
	ck_assert_uint_eq(kvm->live_ioev, 3);
	assert_kicks_at(b, a_bar);
	destroy_both(b);
}
END_TEST

/* And when the write moves a BAR away from a range another one then
 * gets: A (slot 1) programmed onto B's BAR (left unmapped), B moved
 * somewhere free maps A where B was.  B's kicks must leave b_bar before
 * A's arrive, whatever the slots' order. */
START_TEST(kicks_follow_a_move_before_the_next_owner)
{
	struct virtio_transport *b;
	unsigned int bslot;
	uint64_t b_bar, free_bar = FV_MMIO_BASE + 0x10000000;

	create(3);
	b = second(&bslot, &b_bar);
	ck_assert_uint_gt(bslot, V.slot);

	a_onto(b_bar);
	/* B moves away: A mapped at b_bar in the same write. */
	bar_wr(bslot, free_bar);
	ck_assert_uint_eq(pci_bar_gpa(vpci_pci_device(V.t), VPCI_BAR), b_bar);
	ck_assert_uint_eq(kvm->live_ioev, 6);
	assert_kicks_at(V.t, b_bar);
	assert_kicks_at(b, free_bar);
	destroy_both(b);
}
END_TEST

/* Two BARs trade places in one write: A parked at a_bar and waiting for
 * b_bar (B's), B moved onto a_bar maps both.  A's parked kicks must go
 * before B's arrive at a_bar, B's must leave b_bar before A's arrive. */
START_TEST(kicks_follow_a_swap)
{
	struct virtio_transport *b;
	unsigned int bslot;
	uint64_t a_bar, b_bar;

	create(3);
	a_bar = V.bar;
	b = second(&bslot, &b_bar);

	a_onto(b_bar);
	bar_wr(bslot, a_bar);
	ck_assert_uint_eq(pci_bar_gpa(vpci_pci_device(V.t), VPCI_BAR), b_bar);
	ck_assert_uint_eq(pci_bar_gpa(vpci_pci_device(b), VPCI_BAR), a_bar);
	ck_assert_uint_eq(kvm->live_ioev, 6);
	assert_kicks_at(V.t, b_bar);
	assert_kicks_at(b, a_bar);
	destroy_both(b);
}
END_TEST

START_TEST(msix_rewrite_coalesced)
{
	const unsigned int nq = 8;
	unsigned int routing, calls;

	create(nq);
	drv_up(nq);
	routing = kvm->routing_calls;
	calls = kvm->calls;

	/* Rewrite all 8 queue vectors while the function is masked (as the
	 * guest does when it moves interrupts, e.g. CPU hot-unplug). */
	msix_ctrl(MSIX_CTRL_ENABLE | MSIX_CTRL_MASKALL);
	for (unsigned int v = 1; v <= nq; v++)
		msix_entry(v, msg_addr(v, 1), msg_data(v, 1), false);
	ck_assert_uint_eq(kvm->calls, calls); /* nothing yet */
	/* An interrupt while masked and dirty stays pending. */
	virtio_queue_notify(&fdev.queues[3]);
	ck_assert(!eventfd_fired(fdev.queues[3].call_fd));
	ck_assert(pba_bit(4));

	msix_ctrl(MSIX_CTRL_ENABLE);
	ck_assert_uint_eq(kvm->routing_calls, routing + 1);
	ck_assert_uint_eq(kvm->calls, calls + 1);
	for (unsigned int q = 0; q < nq; q++) {
		int gsi = kvm->irqfd_gsi[fdev.queues[q].call_fd];

		ck_assert_uint_eq(kvm->route_addr[gsi], msg_addr(q + 1, 1));
		ck_assert_uint_eq(kvm->route_data[gsi], msg_data(q + 1, 1));
	}
	/* Delivered after the route update, through the irqfd. */
	ck_assert(eventfd_fired(fdev.queues[3].call_fd));
	ck_assert(!pba_bit(4));

	/* One vector masked individually: one update at its unmask. */
	msix_mask(2, true);
	msix_entry(2, msg_addr(2, 2), msg_data(2, 2), true);
	ck_assert_uint_eq(kvm->routing_calls, routing + 1);
	virtio_queue_notify(&fdev.queues[1]);
	ck_assert(pba_bit(2));
	msix_mask(2, false);
	ck_assert_uint_eq(kvm->routing_calls, routing + 2);
	ck_assert(eventfd_fired(fdev.queues[1].call_fd));

	/* A failing route update: NEEDS_RESET, not a crash. */
	msix_mask(5, true);
	msix_entry(5, msg_addr(5, 3), msg_data(5, 3), true);
	kvm->fail_at = kvm->calls + 1;
	msix_mask(5, false);
	kvm->fail_at = 0;
	ck_assert(status_rd() & VIRTIO_CONFIG_S_NEEDS_RESET);
	COMMON_WR(STATUS, 0, 1);
	assert_unwired();
}
END_TEST

START_TEST(many_queues_one_routing_call)
{
	const unsigned int nq = VPCI_MAX_QUEUES;
	struct vpci_stats st0, st;

	create(nq);
	ck_assert_uint_eq(V.nr_vectors, nq + 1);
	/* The ioeventfds: one transaction at registration. */
	vpci_get_stats(V.t, &st0);
	ck_assert_uint_eq(st0.wiring_commits, 1);
	ck_assert_uint_eq(st0.wiring_ioctls, nq);
	drv_up(nq);
	ck_assert(status_rd() & VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert_uint_eq(kvm->routing_calls, 1);
	ck_assert_uint_eq(kvm->live_ioev, nq);
	ck_assert_uint_eq(kvm->live_irqfd, nq);
	ck_assert_uint_eq(kvm->nr_msi, nq);
	ck_assert_uint_eq(fdev.started_enabled, nq);
	/* DRIVER_OK: one transaction, the routes and irqfds only. */
	vpci_get_stats(V.t, &st);
	ck_assert_uint_eq(st.wiring_commits, 2);
	ck_assert_uint_eq(st.wiring_ioctls, nq + 1 + nq);
	COMMON_WR(STATUS, 0, 1);
	assert_unwired();
	ck_assert_uint_eq(kvm->routing_calls, 2);

	{
		struct vpci_params p = params(nq + 1);
		struct virtio_transport *t2 = NULL;

		ck_assert_int_eq(vpci_create(&p, &t2), -EINVAL);
	}
}
END_TEST

/*
 * per_vector_wiring (VMM_DISK_PER_VECTOR_WIRING, the comparison knob):
 * DRIVER_OK makes one commit, so one KVM_SET_GSI_ROUTING, per vectored
 * queue, each carrying every route wired so far; a failure at any call
 * leaves nothing wired, and a retry after reset works.
 */
START_TEST(per_vector_wiring_knob)
{
	const unsigned int nq = 4, total = 2 * nq; /* a routing + an irqfd each */
	struct vpci_params p = params(nq);
	struct vpci_stats st0, st;
	unsigned int calls0;

	p.per_vector_wiring = true;
	ck_assert_int_eq(fv_create(&V, &p), 0);
	assert_kicks_placed();
	driver_ok_fails_at_each_call(nq, total);

	ck_assert(drv_begin(DRV_FEATURES));
	for (unsigned int q = 0; q < nq; q++)
		drv_queue(q, (uint16_t)(q + 1));
	vpci_get_stats(V.t, &st0);
	calls0 = kvm->calls;
	kvm->routing_calls = 0;
	status_add(VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert(status_rd() & VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert_uint_eq(kvm->routing_calls, nq);
	ck_assert_uint_eq(kvm->calls - calls0, total);
	ck_assert_uint_eq(kvm->nr_msi, nq);
	ck_assert_uint_eq(kvm->live_irqfd, nq);
	ck_assert_uint_eq(fdev.start_calls, 1);
	for (unsigned int q = 0; q < nq; q++) {
		int gsi = kvm->irqfd_gsi[fdev.queues[q].call_fd];

		ck_assert_int_ge(gsi, X86_IRQ_FIRST_MSI_GSI);
		ck_assert(kvm->route_valid[gsi]);
		ck_assert_uint_eq(kvm->route_data[gsi], msg_data(q + 1, 0));
	}
	vpci_get_stats(V.t, &st);
	ck_assert_uint_eq(st.wiring_commits, st0.wiring_commits + nq);
	ck_assert_uint_eq(st.wiring_ioctls, st0.wiring_ioctls + total);
	/* Teardown stays one transaction. */
	COMMON_WR(STATUS, 0, 1);
	assert_unwired();
	ck_assert_uint_eq(kvm->routing_calls, nq + 1);
}
END_TEST

/*
 * coalesce_queue_regs: one coalesced MMIO zone over the common
 * configuration's queue registers (queue_select .. queue_device), placed
 * with the BAR, parked while decoding is off, moved with the BAR, dropped
 * when another BAR takes the range and at destroy.  device_status and the
 * notify area stay outside it.  (The MSI-X table's zone, there until
 * DRIVER_OK: check_msix_zone.)
 */
#define ZONE_OFF VIRTIO_PCI_COMMON_Q_SELECT
#define ZONE_LEN (VIRTIO_PCI_COMMON_Q_USEDHI + 4 - VIRTIO_PCI_COMMON_Q_SELECT)

START_TEST(coalesced_queue_registers)
{
	struct vpci_params p = params(2), pb = params(2);
	struct virtio_transport *b;
	uint64_t nbar = FV_MMIO_BASE + 0x10000000, zone;
	unsigned int calls, bslot;
	uint32_t v;

	p.coalesce_queue_regs = true;
	ck_assert_int_eq(fv_create(&V, &p), 0);
	assert_kicks_placed();
	/* With the MSI-X table's until DRIVER_OK (check_msix_zone). */
	ck_assert_uint_eq(kvm->nr_zones, 2);
	ck_assert_uint_eq(kvm->zone_addr[1], V.bar + V.table);
	zone = V.bar + V.common + ZONE_OFF;
	ck_assert_uint_eq(kvm->zone_addr[0], zone);
	ck_assert_uint_eq(kvm->zone_len[0], ZONE_LEN);
	ck_assert_uint_lt(V.bar + V.common + VIRTIO_PCI_COMMON_STATUS, zone);
	for (unsigned int q = 0; q < 2; q++)
		ck_assert_uint_ge(notify_addr(q), zone + ZONE_LEN);

	/* Linux's sizing of each BAR slot: parked, no KVM call. */
	drv_up(2);
	ck_assert(status_rd() & VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert_uint_eq(kvm->nr_zones, 1);
	ck_assert_uint_eq(kvm->zone_addr[0], zone);
	calls = kvm->calls;
	for (unsigned int slot = 0; slot < 7; slot++) {
		cfg_wr(PCI_CFG_COMMAND, 0, 2);
		cfg_wr(PCI_CFG_BAR0, 0xffffffffu, 4);
		cfg_wr(PCI_CFG_BAR0, (uint32_t)V.bar, 4);
		cfg_wr(PCI_CFG_COMMAND, PCI_CMD_MEM, 2);
	}
	ck_assert_uint_eq(kvm->calls, calls);

	/* Moved: one transaction for the kicks, one for the zone. */
	cfg_wr(PCI_CFG_BAR0, (uint32_t)nbar, 4);
	V.bar = nbar;
	ck_assert_uint_eq(kvm->nr_zones, 1);
	ck_assert_uint_eq(kvm->zone_addr[0], nbar + V.common + ZONE_OFF);
	ck_assert_uint_eq(kvm->zone_calls, 5);
	assert_kicks_placed();

	/* Decoding off, and another device's BAR mapped over ours: the
	 * parked zone goes with the kicks. */
	ck_assert_int_eq(vpci_create(&pb, &b), 0);
	bslot = vpci_pci_device(b)->slot;
	cfg_wr(PCI_CFG_COMMAND, 0, 2);
	ck_assert_uint_eq(kvm->nr_zones, 1);
	v = (uint32_t)nbar;
	ck_assert_int_eq(fv_cfg_access(&V, bslot, PCI_CFG_BAR0, &v, 4, true), 0);
	ck_assert_uint_eq(kvm->nr_zones, 0);
	vpci_destroy(b);

	/* Back elsewhere: placed again; destroyed: removed. */
	cfg_wr(PCI_CFG_BAR0, (uint32_t)(nbar + 0x100000), 4);
	cfg_wr(PCI_CFG_COMMAND, PCI_CMD_MEM, 2);
	ck_assert_uint_eq(kvm->nr_zones, 1);
	ck_assert_uint_eq(kvm->zone_addr[0], nbar + 0x100000 + V.common + ZONE_OFF);
	vpci_destroy(V.t);
	V.t = NULL;
	ck_assert_uint_eq(kvm->nr_zones, 0);
	ck_assert_uint_eq(kvm->live_ioev, 0);
}
END_TEST

/* KVM refusing the zone costs nothing but the speed-up: the kicks are
 * placed, the registers work, and no zone is tried again. */
START_TEST(coalesced_zone_refused)
{
	struct vpci_params p = params(2);
	uint64_t nbar = FV_MMIO_BASE + 0x10000000;
	unsigned int calls;

	p.coalesce_queue_regs = true;
	kvm->fail_at = 3; /* two ioeventfds, then the zone */
	ck_assert_int_eq(fv_create(&V, &p), 0);
	kvm->fail_at = 0;
	ck_assert_uint_eq(kvm->calls, 3); /* the refused one included */
	ck_assert_uint_eq(kvm->nr_zones, 0);
	assert_kicks_placed();
	drv_up(2);
	ck_assert(status_rd() & VIRTIO_CONFIG_S_DRIVER_OK);
	calls = kvm->calls;
	cfg_wr(PCI_CFG_BAR0, (uint32_t)nbar, 4);
	V.bar = nbar;
	assert_kicks_placed();
	ck_assert_uint_eq(kvm->calls, calls + 2 * 2); /* the kicks only */
	ck_assert_uint_eq(kvm->zone_calls, 0);
	ck_assert_uint_eq(COMMON_RD(NUMQ, 2), 2);
}
END_TEST

START_TEST(needs_reset_config_interrupt)
{
	struct vpci_stats st;
	uint8_t gen;

	create(2);
	drv_up(2);
	gen = (uint8_t)COMMON_RD(CFGGENERATION, 1);
	virtio_transport_needs_reset(V.t, "test: malformed ring");
	ck_assert(status_rd() & VIRTIO_CONFIG_S_NEEDS_RESET);
	ck_assert(status_rd() & VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert_uint_eq((uint8_t)COMMON_RD(CFGGENERATION, 1), (uint8_t)(gen + 1));
	ck_assert_uint_eq(kvm->msi_calls, 1);
	ck_assert_uint_eq(kvm->msi_data, msg_data(0, 0));
	ck_assert_uint_eq(mr(V.isr, 4), VIRTIO_PCI_ISR_CONFIG);
	ck_assert_uint_eq(mr(V.isr, 4), 0);
	/* Once. */
	virtio_transport_needs_reset(V.t, "again");
	ck_assert_uint_eq(kvm->msi_calls, 1);
	/* The driver writing status back (with the bit) keeps it. */
	status_add(0);
	ck_assert(status_rd() & VIRTIO_CONFIG_S_NEEDS_RESET);

	/* Masked config vector: pending until unmasked. */
	COMMON_WR(STATUS, 0, 1);
	drv_up(2);
	msix_mask(0, true);
	vpci_config_changed(V.t);
	ck_assert_uint_eq(kvm->msi_calls, 1);
	ck_assert(pba_bit(0));
	msix_mask(0, false);
	ck_assert_uint_eq(kvm->msi_calls, 2);
	ck_assert(!pba_bit(0));
	vpci_get_stats(V.t, &st);
	ck_assert_uint_eq(st.config_interrupts, 2);
	ck_assert_uint_eq(st.needs_reset, 1);

	/* FAILED stops a live device (the reset above was the first stop). */
	ck_assert_uint_eq(fdev.stop_calls, 1);
	status_add(VIRTIO_CONFIG_S_FAILED);
	ck_assert_uint_eq(fdev.stop_calls, 2);
	assert_unwired();
}
END_TEST

/* VIRTIO_PCI_CAP_PCI_CFG: BAR accesses through config space. */
START_TEST(pci_cfg_window)
{
	unsigned int c;

	create(3);
	c = V.pcicfg;
	cfg_wr(c + VIRTIO_PCI_CAP_BAR, 0, 1);
	cfg_wr(c + VIRTIO_PCI_CAP_OFFSET, V.common + VIRTIO_PCI_COMMON_NUMQ, 4);
	cfg_wr(c + VIRTIO_PCI_CAP_LENGTH, 2, 4);
	ck_assert_uint_eq(cfg_rd(c + 16, 2), 3);
	/* Write queue_select through the window, read it back by MMIO. */
	cfg_wr(c + VIRTIO_PCI_CAP_OFFSET, V.common + VIRTIO_PCI_COMMON_Q_SELECT, 4);
	cfg_wr(c + 16, 2, 2);
	ck_assert_uint_eq(COMMON_RD(Q_SELECT, 2), 2);
	/* Device config, 4 bytes. */
	cfg_wr(c + VIRTIO_PCI_CAP_OFFSET, V.devcfg + 4, 4);
	cfg_wr(c + VIRTIO_PCI_CAP_LENGTH, 4, 4);
	ck_assert_uint_eq(cfg_rd(c + 16, 4), 0xa7a6a5a4);
	/* Bad length / misaligned / outside the BAR: no access. */
	cfg_wr(c + VIRTIO_PCI_CAP_LENGTH, 3, 4);
	cfg_wr(c + 16, 0xdeadbeef, 4);
	cfg_wr(c + VIRTIO_PCI_CAP_LENGTH, 4, 4);
	cfg_wr(c + VIRTIO_PCI_CAP_OFFSET, V.devcfg + 2, 4);
	cfg_wr(c + 16, 0xdeadbeef, 4);
	cfg_wr(c + VIRTIO_PCI_CAP_OFFSET, 0xfffffffc, 4);
	(void)cfg_rd(c + 16, 4);
	ck_assert_uint_eq(mr(V.devcfg, 8), 0xa7a6a5a4a3a2a1a0ull);
	/* A BAR that is not ours. */
	cfg_wr(c + VIRTIO_PCI_CAP_BAR, 2, 1);
	cfg_wr(c + VIRTIO_PCI_CAP_OFFSET, V.devcfg, 4);
	cfg_wr(c + 16, 0xdeadbeef, 4);
	ck_assert_uint_eq(mr(V.devcfg, 4), 0xa3a2a1a0);
}
END_TEST

START_TEST(create_rejects_bad_params)
{
	struct vpci_params p = params(1);
	struct virtio_device_ops ops = fvd_ops;
	struct virtio_transport *t2 = NULL;

	p.num_queues = 0;
	ck_assert_int_eq(vpci_create(&p, &t2), -EINVAL);
	p = params(1);
	p.max_queue_size = 48;
	ck_assert_int_eq(vpci_create(&p, &t2), -EINVAL);
	p.max_queue_size = 2048;
	ck_assert_int_eq(vpci_create(&p, &t2), -EINVAL);
	p = params(1);
	fdev.features = 1ull << VIRTIO_RING_F_EVENT_IDX; /* no VERSION_1 */
	ck_assert_int_eq(vpci_create(&p, &t2), -EINVAL);
	fdev.features = FD_FEATURES;
	ops.config_size = VPCI_DEVCFG_MAX + 1;
	p.ops = &ops;
	ck_assert_int_eq(vpci_create(&p, &t2), -EINVAL);
	ck_assert_int_eq(vpci_create(NULL, &t2), -EINVAL);
	ck_assert_ptr_null(t2);
	/* Unsupported transport features are never offered. */
	fdev.features = FD_FEATURES | (1ull << 34) | (1ull << 40);
	create(1);
	COMMON_WR(DFSELECT, 1, 4);
	ck_assert_uint_eq(COMMON_RD(DF, 4), 1);
}
END_TEST

/* I/O thread interrupting while the vCPU masks, rewrites and unmasks the
 * vector: once everything is unmasked no interrupt may be stuck pending,
 * and every burst of notifies is followed by a delivery. */
struct stress {
	struct virtio_queue *q;
	unsigned int iters;
};

static void *stress_io(void *arg)
{
	struct stress *s = arg;

	for (unsigned int i = 0; i < s->iters; i++)
		virtio_queue_notify(s->q);
	return NULL;
}

START_TEST(notify_races_mask_and_rewrite)
{
	struct stress s;
	pthread_t th;
	unsigned int gen = 1;
	eventfd_t v;

	create(1);
	drv_up(1);
	s.q = &fdev.queues[0];
	s.iters = 200000;
	ck_assert_int_eq(pthread_create(&th, NULL, stress_io, &s), 0);
	for (unsigned int i = 0; i < 2000; i++) {
		switch (i % 3) {
		case 0: /* plain mask / unmask */
			msix_mask(1, true);
			msix_mask(1, false);
			break;
		case 1: /* rewrite while masked */
			msix_mask(1, true);
			msix_entry(1, msg_addr(1, gen), msg_data(1, gen), true);
			gen++;
			msix_mask(1, false);
			break;
		default: /* function mask */
			msix_ctrl(MSIX_CTRL_ENABLE | MSIX_CTRL_MASKALL);
			msix_entry(1, msg_addr(1, gen), msg_data(1, gen), false);
			gen++;
			msix_ctrl(MSIX_CTRL_ENABLE);
			break;
		}
	}
	pthread_join(th, NULL);
	ck_assert(!pba_bit(1));
	ck_assert(!(status_rd() & VIRTIO_CONFIG_S_NEEDS_RESET));
	/* The route matches the table. */
	ck_assert_uint_eq(kvm->route_data[kvm->irqfd_gsi[s.q->call_fd]],
			  msg_data(1, gen - 1));
	/* A last notify goes straight through. */
	(void)eventfd_read(s.q->call_fd, &v);
	virtio_queue_notify(s.q);
	ck_assert(eventfd_fired(s.q->call_fd));
}
END_TEST

static Suite *vpci_suite(void)
{
	Suite *s = suite_create("virtio-pci");
	TCase *tc = tcase_create("transport");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, identity_and_caps);
	tcase_add_test(tc, driver_ok_wires_in_one_transaction);
	tcase_add_test(tc, notify_masked_pending_unmask);
	tcase_add_test(tc, poll_queue_has_no_irqfd);
	tcase_add_test(tc, reset_unwires_and_clears);
	tcase_add_test(tc, shutdown_leaves_wiring_to_kvm);
	tcase_add_test(tc, features_ok_refused);
	tcase_add_test(tc, bad_queue_size);
	tcase_add_test(tc, requester_ids);
	tcase_add_test(tc, msix_vector_out_of_range);
	tcase_add_test(tc, ring_outside_ram);
	tcase_add_test(tc, kvm_failure_rolls_back);
	tcase_add_test(tc, bar_move_moves_ioeventfds);
	tcase_add_test(tc, kick_placement_failure_falls_back);
	tcase_add_test(tc, parked_kicks_yield_to_another_bar);
	tcase_add_test(tc, parked_kicks_yield_in_one_write);
	tcase_add_test(tc, kicks_follow_a_move_before_the_next_owner);
	tcase_add_test(tc, kicks_follow_a_swap);
	tcase_add_test(tc, msix_rewrite_coalesced);
	tcase_add_test(tc, many_queues_one_routing_call);
	tcase_add_test(tc, per_vector_wiring_knob);
	tcase_add_test(tc, coalesced_queue_registers);
	tcase_add_test(tc, coalesced_zone_refused);
	tcase_add_test(tc, needs_reset_config_interrupt);
	tcase_add_test(tc, pci_cfg_window);
	tcase_add_test(tc, create_rejects_bad_params);
	tcase_add_test(tc, notify_races_mask_and_rewrite);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(vpci_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
