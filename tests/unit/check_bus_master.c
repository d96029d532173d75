/* SPDX-License-Identifier: MIT */
/*
 * PCI bus mastering on the virtio-pci function (COMMAND.MASTER, bit 2):
 * cleared, the device does no DMA (no request is popped, no used entry
 * written) and sends no MSI-X message (interrupts are latched in the PBA);
 * set again, it resumes where it was, serves the kicks that came meanwhile
 * and delivers what was latched.  KVM-free: the simulated driver of
 * tests/harness on the real transport, PCI bus and MSI-X over a fake KVM,
 * first with a device model that records its start/stop calls, then with
 * the real virtio-blk device, an I/O thread with its io_uring and an image.
 */
#include <check.h>
#include <errno.h>
#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>
#include <linux/virtio_pci.h>
#include <linux/virtio_ring.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "blk/vblk.h"
#include "blk_rig.h"
#include "fake_guest.h"
#include "fake_vdev.h"
#include "fake_vpci.h"
#include "iothread.h"
#include "pci/msix.h"
#include "pci/pci.h"
#include "virtio/virtio-pci.h"
#include "test_clock.h"

#define TQ 2
#define TQSIZE 16
#define RING_BASE 0x100000ull
#define CMD_ON (PCI_CMD_MEM | PCI_CMD_MASTER)

static uint64_t msg_addr(unsigned int v)
{
	return 0xfee00000ull | (uint64_t)(v & 0xff) << 12;
}

static uint32_t msg_data(unsigned int v)
{
	return 0x4000u + v;
}

/* Interrupts pending on an irqfd (reads and clears its counter). */
static uint64_t irqs(int call_fd)
{
	eventfd_t v;

	ck_assert_int_ge(call_fd, 0);
	return eventfd_read(call_fd, &v) < 0 ? 0 : v;
}

/* ===== the transport, with a device that records start/stop ============ */

/* The device: tests/harness/fake_vdev. */
#define FD_FEATURES (1ull << VIRTIO_F_VERSION_1)

static struct fv V;
static struct fake_guest tg;
static struct fvd fdev;

static void t_setup(void)
{
	struct vpci_params p = {
		.ops = &fvd_ops, .dev = &fdev, .num_queues = TQ,
		.max_queue_size = 256, .ioeventfd_any_length = true,
	};

	ck_assert_int_eq(fg_init(&tg, 8u << 20), 0);
	ck_assert_int_eq(fv_init(&V, 3, FV_MMIO_BASE, FV_MMIO_SIZE, &tg.mem), 0);
	fvd_init(&fdev, FD_FEATURES);
	ck_assert_int_eq(fv_create(&V, &p), 0);
}

static void t_teardown(void)
{
	fv_destroy(&V);
	fg_destroy(&tg);
}

static void command(uint16_t v)
{
	fv_cfg_wr(&V, PCI_CFG_COMMAND, v, 2);
}

/* Reset, negotiate, MSI-X (config vector 0, queue q on vector q + 1, all
 * unmasked), queues, DRIVER_OK. */
static void drv_up(void)
{
	ck_assert_int_eq(fv_negotiate(&V, 1ull << VIRTIO_F_VERSION_1, NULL), 0);
	fv_msix_ctrl(&V, MSIX_CTRL_ENABLE);
	for (unsigned int v = 0; v <= TQ; v++) {
		fv_msix_write(&V, v, msg_addr(v), msg_data(v));
		fv_msix_mask(&V, v, false);
	}
	FV_COMMON_WR(&V, MSIX, 0, 2);
	for (unsigned int q = 0; q < TQ; q++) {
		uint64_t base = RING_BASE + q * 0x1000ull;

		fv_queue_setup(&V, q, TQSIZE, base, base + 0x400, base + 0x800,
			       (uint16_t)(q + 1));
	}
	fv_status_add(&V, VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert(fv_status(&V) & VIRTIO_CONFIG_S_DRIVER_OK);
}

/* Direct kernel boot: the function comes up decoding and mastering. */
START_TEST(master_on_after_registration)
{
	t_setup();
	ck_assert_uint_eq(fv_cfg_rd(&V, PCI_CFG_COMMAND, 2) & CMD_ON, CMD_ON);
	drv_up();
	ck_assert_uint_eq(fdev.start_calls, 1);
	t_teardown();
}
END_TEST

/*
 * Master off: the device is stopped (DMA), its interrupts -- queue and
 * configuration -- are latched in the PBA and reach neither an irqfd nor
 * KVM_SIGNAL_MSI, and the KVM wiring is left alone.  Master on: the device
 * starts again on the same queues, the latched interrupts go out, and every
 * wired vector gets one.
 */
START_TEST(msi_latched_while_master_off)
{
	unsigned int routing, irqfds, ioev, msis;
	int call[TQ];
	struct vpci_stats st0, st;

	t_setup();
	drv_up();
	for (unsigned int q = 0; q < TQ; q++) {
		call[q] = fv_kvm_call_fd(V.kvm, msg_addr(q + 1), msg_data(q + 1));
		ck_assert_int_eq(call[q], fdev.queues[q].call_fd);
	}
	routing = V.kvm->routing_calls;
	irqfds = V.kvm->live_irqfd;
	ioev = V.kvm->live_ioev;
	msis = V.kvm->msi_calls;
	vpci_get_stats(V.t, &st0);

	command(PCI_CMD_MEM); /* MASTER off */
	ck_assert_uint_eq(fdev.stop_calls, 1);
	ck_assert(fv_status(&V) & VIRTIO_CONFIG_S_DRIVER_OK);
	/* A completion interrupt of queue 0 and a configuration change. */
	virtio_queue_notify(&fdev.queues[0]);
	vpci_config_changed(V.t);
	ck_assert_uint_eq(irqs(call[0]), 0);
	ck_assert_uint_eq(V.kvm->msi_calls, msis);
	ck_assert(fv_pba_bit(&V, 1));
	ck_assert(fv_pba_bit(&V, 0));
	ck_assert(!fv_pba_bit(&V, 2));
	vpci_get_stats(V.t, &st);
	ck_assert_uint_eq(st.interrupts, st0.interrupts);
	ck_assert_uint_eq(st.interrupts_masked, st0.interrupts_masked + 1);
	/* Nothing was unwired, no routing update. */
	ck_assert_uint_eq(V.kvm->routing_calls, routing);
	ck_assert_uint_eq(V.kvm->live_irqfd, irqfds);
	ck_assert_uint_eq(V.kvm->live_ioev, ioev);
	/* The same value again changes nothing. */
	command(PCI_CMD_MEM);
	ck_assert_uint_eq(fdev.stop_calls, 1);

	command(CMD_ON);
	ck_assert_uint_eq(fdev.start_calls, 2);
	ck_assert_uint_eq(fdev.stop_calls, 1);
	ck_assert(!fv_pba_bit(&V, 0));
	ck_assert(!fv_pba_bit(&V, 1));
	/* The configuration interrupt (KVM_SIGNAL_MSI, vector 0's message),
	 * queue 0's latched one plus the resume one, queue 1's resume one. */
	ck_assert_uint_eq(V.kvm->msi_calls, msis + 1);
	ck_assert_uint_eq(V.kvm->msi_addr, msg_addr(0));
	ck_assert_uint_eq(V.kvm->msi_data, msg_data(0));
	ck_assert_uint_eq(irqs(call[0]), 2);
	ck_assert_uint_eq(irqs(call[1]), 1);
	ck_assert_uint_eq(V.kvm->routing_calls, routing);
	t_teardown();
}
END_TEST

/* A vector the guest masked stays masked when mastering comes back: the
 * resume interrupt waits in the PBA for the unmask. */
START_TEST(guest_mask_still_applies)
{
	int call1;

	t_setup();
	drv_up();
	call1 = fdev.queues[1].call_fd;
	fv_msix_mask(&V, 2, true);
	command(PCI_CMD_MEM);
	command(CMD_ON);
	ck_assert_uint_eq(irqs(call1), 0);
	ck_assert(fv_pba_bit(&V, 2));
	fv_msix_mask(&V, 2, false);
	ck_assert_uint_eq(irqs(call1), 1);
	ck_assert(!fv_pba_bit(&V, 2));
	t_teardown();
}
END_TEST

/* DRIVER_OK while mastering is off wires the queues but starts nothing;
 * turning it on starts the device.  A reset while off stops nothing more
 * (the device is not running) and unwires; mastering on then starts
 * nothing (not live). */
START_TEST(driver_ok_while_master_off)
{
	t_setup();
	command(PCI_CMD_MEM);
	drv_up();
	ck_assert_uint_eq(fdev.start_calls, 0);
	ck_assert_uint_eq(V.kvm->live_ioev, TQ);
	ck_assert_uint_eq(V.kvm->live_irqfd, TQ);
	command(CMD_ON);
	ck_assert_uint_eq(fdev.start_calls, 1);

	command(PCI_CMD_MEM);
	ck_assert_uint_eq(fdev.stop_calls, 1);
	FV_COMMON_WR(&V, STATUS, 0, 1);
	ck_assert_uint_eq(fv_status(&V), 0);
	ck_assert_uint_eq(fdev.stop_calls, 1);
	ck_assert_uint_eq(V.kvm->live_ioev, TQ); /* they stay with the BAR */
	ck_assert_uint_eq(V.kvm->live_irqfd, 0);
	command(CMD_ON);
	ck_assert_uint_eq(fdev.start_calls, 1);
	t_teardown();
}
END_TEST

/* A hostile guest toggling the bit: bounded work, exact start/stop pairs,
 * nothing leaked. */
START_TEST(toggle_loop)
{
	unsigned int ioev, irqfd;

	t_setup();
	drv_up();
	ioev = V.kvm->live_ioev;
	irqfd = V.kvm->live_irqfd;
	for (unsigned int i = 0; i < 1000; i++) {
		command(PCI_CMD_MEM);
		command(CMD_ON);
	}
	ck_assert_uint_eq(fdev.stop_calls, 1000);
	ck_assert_uint_eq(fdev.start_calls, 1001);
	ck_assert_uint_eq(V.kvm->live_ioev, ioev);
	ck_assert_uint_eq(V.kvm->live_irqfd, irqfd);
	ck_assert(!(fv_status(&V) & VIRTIO_CONFIG_S_NEEDS_RESET));
	t_teardown();
}
END_TEST

/* ===== the real virtio-blk device: DMA stops and resumes ================= */

#define WAIT_MS 10000

/* Add and publish (no doorbell) a 4 KiB read of @sector on queue 0. */
static struct fg_blk_req add_read(struct br *r, uint64_t sector)
{
	struct fg_buf d = { fg_alloc(&r->g, 4096, 4096), 4096, true };
	struct fg_blk_req req;

	ck_assert_uint_ne(d.gpa, 0);
	ck_assert_int_eq(fg_blk_add(&r->q[0].vq, VIRTIO_BLK_T_IN, sector, &d, 1,
				    false, &req), 0);
	fg_vq_publish(&r->q[0].vq);
	return req;
}

static int nop(void *opaque)
{
	(void)opaque;
	return 0;
}

/* The I/O thread has finished whatever a doorbell would have made it do
 * (or, with the queue detached, was never going to do). */
static void settle(struct br *r)
{
	for (unsigned int i = 0; i < 3; i++)
		iothread_call_sync(br_queue_io(r, 0), nop, NULL);
}

START_TEST(blk_dma_stops_and_resumes)
{
	struct br_opts o = { .queue_size = 64 };
	struct virtio_blk_queue_stats st;
	struct fg_blk_req req;
	struct pollfd p;
	struct br R;
	uint32_t id;

	ck_assert_int_eq(br_up(&R, &o), 0);
	/* Mastering on: served. */
	req = add_read(&R, 8);
	br_kick(&R, 0);
	ck_assert_uint_eq(br_wait_used(&R, 0, &id, NULL, 1, WAIT_MS), 1);
	ck_assert_uint_eq(id, (uint32_t)req.head);
	ck_assert_uint_eq(fg_blk_status(&R.g, &req), VIRTIO_BLK_S_OK);

	/* Off: a request and its doorbell are left alone -- no used entry,
	 * no status byte, no interrupt -- however long we wait. */
	fv_cfg_wr(&R.v, PCI_CFG_COMMAND, PCI_CMD_MEM, 2);
	settle(&R);
	irqs(R.q[0].call_fd); /* whatever the first request left */
	req = add_read(&R, 16);
	br_kick(&R, 0);
	settle(&R);
	usleep(50 * 1000);
	settle(&R);
	ck_assert_uint_eq(fg_vq_used_idx(&R.q[0].vq), 1);
	ck_assert_uint_eq(fg_blk_status(&R.g, &req), 0xff);
	ck_assert_uint_eq(irqs(R.q[0].call_fd), 0);
	ck_assert_int_eq(virtio_blk_queue_stats(R.dev, 0, &st), 0);
	ck_assert(!st.svc.attached);
	ck_assert_uint_eq(st.blk.reqs[VBLK_STAT_IN], 1);

	/* On again: the request that waited is served, with an interrupt. */
	fv_cfg_wr(&R.v, PCI_CFG_COMMAND, CMD_ON, 2);
	p = (struct pollfd){ .fd = R.q[0].call_fd, .events = POLLIN };
	ck_assert_int_eq(poll(&p, 1, WAIT_MS), 1);
	ck_assert_uint_eq(br_wait_used(&R, 0, &id, NULL, 1, WAIT_MS), 1);
	ck_assert_uint_eq(id, (uint32_t)req.head);
	ck_assert_uint_eq(fg_blk_status(&R.g, &req), VIRTIO_BLK_S_OK);
	ck_assert_int_eq(virtio_blk_queue_stats(R.dev, 0, &st), 0);
	ck_assert(st.svc.attached);
	ck_assert_uint_eq(st.blk.reqs[VBLK_STAT_IN], 2);
	ck_assert(!(fv_status(&R.v) & VIRTIO_CONFIG_S_NEEDS_RESET));
	br_down(&R);
}
END_TEST

/* On the I/O thread: the ring refuses every SQE from now on. */
static int jam(void *opaque)
{
	iothread_fail_sqes(br_queue_io(opaque, 0), 0, 1u << 30);
	return 0;
}

/* On the I/O thread: whether queue 0 holds a request the engine refused. */
static int parked(void *opaque)
{
	return vblk_queue_parked(br_blk(opaque), 0);
}

/* On the I/O thread: the ring takes SQEs again and mastering goes off,
 * with no round in between for the parked request to slip through (the
 * transport's stop runs inline on this thread). */
static int unjam_master_off(void *opaque)
{
	struct br *r = opaque;

	iothread_fail_sqes(br_queue_io(r, 0), 0, 0);
	fv_cfg_wr(&r->v, PCI_CFG_COMMAND, PCI_CMD_MEM, 2);
	return 0;
}

/* Mastering off while a popped request waits for room in the ring (parked
 * after -EAGAIN): the stop gives it back to the avail ring instead of
 * dropping it, and mastering on serves it.  Dropped, it was never
 * completed: the guest waited for it forever (found by fuzz_blk_uring:
 * a stop returned with a chain taken and not completed). */
START_TEST(blk_parked_request_survives_master_off)
{
	struct br_opts o = { .queue_size = 64 };
	struct fg_blk_req req;
	struct br R;
	uint32_t id;

	ck_assert_int_eq(br_up(&R, &o), 0);
	iothread_call_sync(br_queue_io(&R, 0), jam, &R);
	req = add_read(&R, 8);
	br_kick(&R, 0);
	for (double t0 = test_now_ms_f(); !iothread_call_sync(br_queue_io(&R, 0), parked, &R);)
		ck_assert_msg(test_now_ms_f() - t0 < WAIT_MS, "the request was never parked");
	iothread_call_sync(br_queue_io(&R, 0), unjam_master_off, &R);
	ck_assert_uint_eq(fg_vq_used_idx(&R.q[0].vq), 0);
	fv_cfg_wr(&R.v, PCI_CFG_COMMAND, CMD_ON, 2);
	ck_assert_msg(br_wait_used(&R, 0, &id, NULL, 1, WAIT_MS) == 1,
		      "the parked request was never completed");
	ck_assert_uint_eq(id, (uint32_t)req.head);
	ck_assert_uint_eq(fg_blk_status(&R.g, &req), VIRTIO_BLK_S_OK);
	br_down(&R);
}
END_TEST

static Suite *bus_master_suite(void)
{
	Suite *s = suite_create("bus_master");
	TCase *tc = tcase_create("bus_master");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, master_on_after_registration);
	tcase_add_test(tc, msi_latched_while_master_off);
	tcase_add_test(tc, guest_mask_still_applies);
	tcase_add_test(tc, driver_ok_while_master_off);
	tcase_add_test(tc, toggle_loop);
	tcase_add_test(tc, blk_dma_stops_and_resumes);
	tcase_add_test(tc, blk_parked_request_survives_master_off);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(bus_master_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
