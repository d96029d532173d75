/* SPDX-License-Identifier: MIT */
/*
 * A guest cannot flood the log.  Every message a guest can trigger at will
 * goes through a per-object rate limiter (libvmm/core/log.h): the first of a
 * burst in full, then "N more ..." summaries.  Here a simulated driver
 * (tests/harness: the real virtio-pci transport, PCI bus and MSI-X over a
 * fake KVM; the real virtio-blk request path on fake guest memory) repeats
 * each guest-triggerable mistake 10,000 times, and the log must stay a
 * handful of lines while the counts stay exact (lines logged in full plus
 * the summaries' N equal the events):
 *  - a reset loop whose every cycle brings a queue up on a ring outside
 *    guest RAM ("bad ring" + "device needs reset", both errors);
 *  - a reset loop with register misuse in every cycle (queue_enable 0, a
 *    wrong-width write, queue configuration after DRIVER_OK) and a device
 *    that finds the ring malformed every cycle;
 *  - MSI deliveries that KVM refuses (a guest's bad MSI-X message);
 *  - a BAR moved back and forth onto a range it cannot be mapped at;
 *  - virtio-blk: a queue the guest breaks again after every reset.
 * The bound on lines is computed from the elapsed time (a summary per
 * LOG_LIMIT_REPORT_NS is allowed), never asserted as a time.
 */
#include <check.h>
#include <errno.h>
#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>
#include <linux/virtio_pci.h>
#include <linux/virtio_ring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blk/blk-engine.h"
#include "blk/vblk.h"
#include "fake_guest.h"
#include "fake_vdev.h"
#include "fake_vpci.h"
#include "iobus.h"
#include "log.h"
#include "log_lines.h"
#include "pci/msix.h"
#include "pci/pci.h"
#include "virtio/virtio-pci.h"

#define CYCLES 10000

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Lines @limiters rate limiters may log over @s seconds: per burst its
 * first line and a summary, a new burst only after LOG_LIMIT_GAP_NS
 * without messages (a loaded machine may deschedule the loop that long),
 * a summary per LOG_LIMIT_REPORT_NS while one lasts, one when flushed.
 * Without the limiters: 10,000 lines or more. */
static unsigned int bound(unsigned int limiters, double s)
{
	return limiters * (2 * (1 + (unsigned int)(s * 1e9 / (double)LOG_LIMIT_GAP_NS)) +
			   (unsigned int)(s * 1e9 / (double)LOG_LIMIT_REPORT_NS) + 1);
}

static void check_bounded(const char *what, unsigned int limiters, double t0)
{
	double el = now_s() - t0;
	unsigned int lines = log_lines_total();

	printf("log_flood: %s: %u events in %.2f s -> %u log lines\n", what,
	       CYCLES, el, lines);
	if (lines > bound(limiters, el))
		log_lines_dump(20);
	ck_assert_msg(lines <= bound(limiters, el), "%s: %u log lines (bound %u)",
		      what, lines, bound(limiters, el));
}

/* ===== virtio-pci transport with a device that accepts everything ======= */

#define TQ 2
#define TQSIZE 16
#define RING_BASE 0x100000ull
#define SLOT "virtio-pci 00:01.0"

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
	ck_assert_uint_eq(V.slot, 1);
}

static void t_teardown(void)
{
	fv_destroy(&V); /* flushes the transport's summaries */
	fg_destroy(&tg);
}

static struct vpci_stats tstats(void)
{
	struct vpci_stats st;

	vpci_get_stats(V.t, &st);
	return st;
}

/* Lines logged in full containing @text, plus the summaries' N of
 * @noun for this function. */
static uint64_t events_logged(const char *text, const char *noun)
{
	return log_lines_count(text) + log_lines_sum_more(SLOT, noun);
}

/* Bring the device up with queue 0's rings at @base. */
static void drv_cycle(uint64_t base)
{
	ck_assert_int_eq(fv_negotiate(&V, 1ull << VIRTIO_F_VERSION_1, NULL), 0);
	fv_queue_setup(&V, 0, TQSIZE, base, base + 0x400, base + 0x800,
		       VIRTIO_NO_VECTOR);
	fv_status_add(&V, VIRTIO_CONFIG_S_DRIVER_OK);
}

/* Each cycle: reset, queue 0 on a ring beyond guest RAM, DRIVER_OK. */
START_TEST(reset_loop_bad_ring)
{
	double t0;

	t_setup();
	ck_assert_int_eq(log_lines_start(), 0);
	t0 = now_s();
	for (unsigned int i = 0; i < CYCLES; i++) {
		drv_cycle(0x40000000ull + i * 0x1000ull);
		ck_assert(fv_status(&V) & VIRTIO_CONFIG_S_NEEDS_RESET);
	}
	t_teardown();
	check_bounded("reset loop, bad ring", 2, t0);
	ck_assert_uint_ge(log_lines_count(SLOT ": queue 0: bad ring"), 1);
	ck_assert_uint_eq(events_logged(SLOT ": queue 0: bad ring", "driver errors"),
			  CYCLES);
	ck_assert_uint_eq(events_logged(SLOT ": device needs reset",
					"'device needs reset' events"),
			  CYCLES);
	ck_assert_uint_eq(fdev.start_calls, 0);
}
END_TEST

/* Each cycle: reset; queue_enable 0, a 1-byte write to a 4-byte field,
 * DRIVER_OK, a queue_size write after it; the device then finds the ring
 * malformed (as an I/O thread would report it). */
START_TEST(reset_loop_misuse)
{
	struct vpci_stats st;
	double t0;

	t_setup();
	ck_assert_int_eq(log_lines_start(), 0);
	t0 = now_s();
	for (unsigned int i = 0; i < CYCLES; i++) {
		ck_assert_int_eq(fv_negotiate(&V, 1ull << VIRTIO_F_VERSION_1, NULL), 0);
		fv_queue_setup(&V, 0, TQSIZE, RING_BASE, RING_BASE + 0x400,
			       RING_BASE + 0x800, VIRTIO_NO_VECTOR);
		FV_COMMON_WR(&V, Q_ENABLE, 0, 2);
		FV_COMMON_WR(&V, DFSELECT, 1, 1);
		fv_status_add(&V, VIRTIO_CONFIG_S_DRIVER_OK);
		FV_COMMON_WR(&V, Q_SIZE, 8, 2);
		virtio_transport_needs_reset(V.t, "test device: malformed ring");
	}
	st = tstats();
	ck_assert_uint_eq(st.needs_reset, CYCLES);
	ck_assert_uint_eq(fdev.start_calls, CYCLES);
	t_teardown();
	check_bounded("reset loop, register misuse", 2, t0);
	ck_assert_uint_eq(events_logged(SLOT ": device needs reset: test device",
					"'device needs reset' events"),
			  CYCLES);
	/* Three mistakes a cycle, all "driver errors". */
	ck_assert_uint_eq(log_lines_count(SLOT ": queue_enable 0 ignored") +
				  log_lines_count(SLOT ": 1-byte write") +
				  log_lines_count(SLOT ": queue 0 configured after") +
				  log_lines_sum_more(SLOT, "driver errors"),
			  3 * CYCLES);
}
END_TEST

/* KVM refuses every MSI (the guest's message): one warning per burst. */
START_TEST(msi_failures)
{
	struct vpci_stats st;
	double t0;

	t_setup();
	ck_assert_int_eq(fv_negotiate(&V, 1ull << VIRTIO_F_VERSION_1, NULL), 0);
	fv_msix_ctrl(&V, MSIX_CTRL_ENABLE);
	fv_msix_write(&V, 0, 0xfee00000ull, 0x4321);
	fv_msix_mask(&V, 0, false);
	FV_COMMON_WR(&V, MSIX, 0, 2);
	V.kvm->msi_fail = -EINVAL;
	ck_assert_int_eq(log_lines_start(), 0);
	t0 = now_s();
	for (unsigned int i = 0; i < CYCLES; i++)
		vpci_config_changed(V.t);
	st = tstats();
	ck_assert_uint_eq(V.kvm->msi_calls, CYCLES);
	ck_assert_uint_eq(st.config_interrupts, CYCLES);
	t_teardown();
	check_bounded("failed MSI deliveries", 1, t0);
	ck_assert_uint_eq(events_logged(SLOT ": MSI for vector 0",
					"failed MSI deliveries"),
			  CYCLES);
}
END_TEST

static void blocker(void *opaque, uint64_t off, void *data, uint32_t len,
		    bool is_write)
{
	(void)opaque;
	(void)off;
	(void)is_write;
	memset(data, 0, len);
}

/* The guest moves BAR 0 back and forth between two addresses where a
 * non-PCI range sits: refused every time, logged per burst. */
START_TEST(bar_overlap_loop)
{
	const uint64_t blk_base = FV_MMIO_BASE + 0x1000000ull;
	uint32_t a = (uint32_t)blk_base, b = (uint32_t)(blk_base + 0x10000);
	double t0;

	t_setup();
	ck_assert_int_eq(iobus_register(&V.mmio, blk_base, 0x100000, blocker, NULL), 0);
	ck_assert_int_eq(log_lines_start(), 0);
	t0 = now_s();
	for (unsigned int i = 0; i < CYCLES; i++)
		fv_cfg_wr(&V, PCI_CFG_BAR0, i & 1 ? b : a, 4);
	t_teardown();
	check_bounded("BAR moved onto another range", 1, t0);
	ck_assert_uint_eq(log_lines_count("pci 00:01.0: BAR0 at") +
				  log_lines_sum_more("pci 00:01.0", "unmappable BARs"),
			  CYCLES);
}
END_TEST

/* ===== virtio-blk: a queue broken again after every reset ============= */

START_TEST(blk_broken_queue_loop)
{
	struct vblk_options o = { .num_queues = 1, .queue_size = 16 };
	struct blk_engine *eng;
	struct fake_guest g;
	struct fg_vq fvq;
	struct virtq vq;
	struct vblk *blk;
	char subject[32], first[96];
	bool notify;
	double t0;
	int img = fg_tmp_image(1u << 20);

	ck_assert_int_ge(img, 0);
	o.fd = img;
	ck_assert_int_eq(vblk_open(&o, &blk), 0);
	ck_assert_int_eq(blk_sync_engine_create(&eng), 0);
	ck_assert_int_eq(fg_init(&g, 4u << 20), 0);
	ck_assert_int_eq(fg_vq_init(&g, &fvq, 16, 0), 0);
	ck_assert_int_eq(fg_vq_attach(&fvq, &vq), 0);
	/* A descriptor pointing beyond guest RAM: malformed, the queue
	 * breaks and the chain is never consumed. */
	fg_vq_set_desc(&fvq, 0, 1ull << 40, 512, 0, 0);
	fg_vq_add_raw_head(&fvq, 0);
	fg_vq_publish(&fvq);
	ck_assert_int_eq(log_lines_start(), 0);
	t0 = now_s();
	for (unsigned int i = 0; i < CYCLES; i++) {
		vblk_queue_reset(blk, 0);
		notify = false;
		ck_assert_int_eq(vblk_process_queue(blk, 0, &vq, eng, &notify), -EPROTO);
	}
	vblk_close(blk); /* flushes its summaries */
	check_bounded("virtio-blk queue broken after every reset", 1, t0);
	snprintf(subject, sizeof(subject), "blk: fd %d", img);
	snprintf(first, sizeof(first), "%s: queue 0: malformed descriptor chain",
		 subject);
	ck_assert_uint_ge(log_lines_count(first), 1);
	ck_assert_uint_eq(log_lines_count(first) +
				  log_lines_sum_more(subject, "broken queues"),
			  CYCLES);
	blk_engine_destroy(eng);
	fg_vq_destroy(&fvq);
	fg_destroy(&g);
	close(img);
}
END_TEST

static Suite *log_flood_suite(void)
{
	Suite *s = suite_create("log_flood");
	TCase *tc = tcase_create("log_flood");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, reset_loop_bad_ring);
	tcase_add_test(tc, reset_loop_misuse);
	tcase_add_test(tc, msi_failures);
	tcase_add_test(tc, bar_overlap_loop);
	tcase_add_test(tc, blk_broken_queue_loop);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(log_flood_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
