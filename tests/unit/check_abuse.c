/* SPDX-License-Identifier: MIT */
/*
 * Guest resource abuse, KVM-free ("hostile guests" item 6): kick storms,
 * MSI-X re-programming loops, reset loops, huge indirect tables and chains
 * over seg_max.  The VMM must stay bounded (CPU, memory, fds, GSIs, KVM
 * calls) and its statistics exact.
 *
 * Two fixtures: the virtio-blk request path (vblk + fake guest ring + sync
 * engine on a temporary image, as check_blk_malformed.c) and the modern
 * virtio-pci transport over a fake KVM that counts ioctls and tracks live
 * irqfds/ioeventfds/routes (as check_virtio_pci.c), driven the way a guest
 * driver would.  The end-to-end counterpart of "another vCPU's console
 * still works" is not here: a guest payload cannot rewrite MSI-X entries or
 * reset a bound device in a loop without a custom kernel module, so these
 * patterns are covered at the device boundary instead.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <linux/kvm.h>
#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>
#include <linux/virtio_pci.h>
#include <linux/virtio_ring.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "blk/blk-engine.h"
#include "blk/vblk.h"
#include "fake_guest.h"
#include "iobus.h"
#include "irq.h"
#include "x86/irqchip.h"
#include "pci/msix.h"
#include "pci/pci.h"
#include "virtio/virtio-pci.h"

#include "fake_vdev.h"
#include "fake_vpci.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned int n = 0;

	ck_assert_ptr_nonnull(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* ===== virtio-blk request path ============================================ */

#define RAM_SIZE (16u << 20)
#define IMG_SIZE (1u << 20)
#define QSIZE 16 /* seg_max = QSIZE - 2 */
#define FEATS ((1ull << VIRTIO_RING_F_EVENT_IDX) | (1ull << VIRTIO_RING_F_INDIRECT_DESC))

static struct fake_guest g;
static struct fg_vq fvq;
static struct virtq vq;
static struct vblk *blk;
static struct blk_engine *eng;
static int img = -1;

static void blk_setup(void)
{
	struct vblk_options o = { .num_queues = 1, .queue_size = QSIZE };

	img = fg_tmp_image(IMG_SIZE);
	ck_assert_int_ge(img, 0);
	o.fd = img;
	ck_assert_int_eq(vblk_open(&o, &blk), 0);
	ck_assert_int_eq(blk_sync_engine_create(&eng), 0);
	ck_assert_int_eq(fg_init(&g, RAM_SIZE), 0);
	ck_assert_int_eq(fg_vq_init(&g, &fvq, QSIZE, FEATS), 0);
	ck_assert_int_eq(fg_vq_attach(&fvq, &vq), 0);
}

static void blk_teardown(void)
{
	fg_vq_destroy(&fvq);
	fg_destroy(&g);
	blk_engine_destroy(eng);
	vblk_close(blk);
	close(img);
}

static struct vblk_queue_stats qstats(void)
{
	struct vblk_queue_stats st;

	ck_assert_int_eq(vblk_queue_get_stats(blk, 0, &st), 0);
	return st;
}

static uint64_t total_reqs(const struct vblk_queue_stats *st)
{
	uint64_t n = 0;

	for (unsigned int t = 0; t < VBLK_STAT_NR; t++)
		n += st->reqs[t];
	return n;
}

/* One good 512-byte read of sector 0, served and completed OK. */
static void good_read(void)
{
	struct fg_buf d = { fg_alloc(&g, 512, 16), 512, true };
	struct fg_blk_req r;
	bool notify = false;
	uint32_t id, len;

	ck_assert_uint_ne(d.gpa, 0);
	ck_assert_int_eq(fg_blk_add(&fvq, VIRTIO_BLK_T_IN, 0, &d, 1, false, &r), 0);
	fg_vq_publish(&fvq);
	ck_assert_int_eq(vblk_process_queue(blk, 0, &vq, eng, &notify), 1);
	ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &len), 1);
	ck_assert_uint_eq(id, (unsigned int)r.head);
	ck_assert_uint_eq(fg_blk_status(&g, &r), VIRTIO_BLK_S_OK);
}

/*
 * Kick storm: 100k notifications with no new buffers.  Each costs one
 * look at avail->idx; nothing is counted as a request, nothing is pushed,
 * and a real request in between is served and counted exactly once.
 */
START_TEST(kick_storm_no_buffers)
{
	struct vblk_queue_stats st;
	bool notify = false;
	double t0, dt;

	blk_setup();
	t0 = now_s();
	for (unsigned int i = 0; i < 100000; i++) {
		ck_assert_int_eq(vblk_process_queue(blk, 0, &vq, eng, &notify), 0);
		if (i == 50000)
			good_read();
	}
	dt = now_s() - t0;
	st = qstats();
	ck_assert_uint_eq(total_reqs(&st), 1);
	ck_assert_uint_eq(st.reqs[VBLK_STAT_IN], 1);
	ck_assert_uint_eq(st.io_errors + st.unsupported + st.proto_errors, 0);
	ck_assert_uint_eq(fg_vq_used_pending(&fvq), 0);
	printf("abuse: 100000 empty kicks in %.3f s\n", dt);
	/* Generous (sanitizers, loaded CI): an empty kick is ~100 ns. */
	ck_assert_msg(dt < 10.0, "100k empty kicks took %.1f s", dt);
	blk_teardown();
}
END_TEST

/* Build a request whose data is @n 512-byte segments in one indirect table
 * of n + 2 entries (header, data..., status).  Returns the status gpa. */
static uint64_t indirect_read(unsigned int n, int *head)
{
	unsigned int entries = n + 2;
	uint64_t table = fg_alloc(&g, entries * 16ull, 16);
	uint64_t hdr = fg_alloc(&g, 16, 16), status = fg_alloc(&g, 1, 1);
	uint64_t data = fg_alloc(&g, 512ull * n, 512);
	struct virtio_blk_outhdr *h = fg_ptr(&g, hdr, 16);

	ck_assert(table && hdr && status && data);
	h->type = htole32(VIRTIO_BLK_T_IN);
	h->sector = 0;
	*(uint8_t *)fg_ptr(&g, status, 1) = 0xff;
	fg_write_desc(&g, table, 0, hdr, 16, VRING_DESC_F_NEXT, 1);
	for (unsigned int i = 0; i < n; i++)
		fg_write_desc(&g, table, (uint16_t)(1 + i), data + 512ull * i, 512,
			      VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, (uint16_t)(2 + i));
	fg_write_desc(&g, table, (uint16_t)(n + 1), status, 1, VRING_DESC_F_WRITE, 0);
	fg_vq_set_desc(&fvq, 0, table, entries * 16, VRING_DESC_F_INDIRECT, 0);
	fg_vq_add_raw_head(&fvq, 0);
	*head = 0;
	return status;
}

/*
 * More data segments than the seg_max we advertise (QSIZE - 2 = 14), up
 * to the largest indirect table a ring may hold (1024 entries): completed
 * with IOERR, counted once as an I/O error, and the queue keeps working.
 * A table of 1025 entries breaks the queue (-EPROTO, NEEDS_RESET path).
 */
START_TEST(chains_over_seg_max)
{
	static const unsigned int segs[] = { QSIZE - 1, 100, 1022 };
	struct vblk_queue_stats st;
	bool notify = false;
	uint32_t id, len;
	int head;

	blk_setup();
	for (unsigned int i = 0; i < sizeof(segs) / sizeof(segs[0]); i++) {
		uint64_t status = indirect_read(segs[i], &head);

		fg_vq_publish(&fvq);
		ck_assert_int_eq(vblk_process_queue(blk, 0, &vq, eng, &notify), 1);
		ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &len), 1);
		ck_assert_uint_eq(id, (unsigned int)head);
		ck_assert_msg(*(uint8_t *)fg_ptr(&g, status, 1) == VIRTIO_BLK_S_IOERR,
			      "%u segments: status %u", segs[i],
			      *(uint8_t *)fg_ptr(&g, status, 1));
	}
	/* Exactly seg_max segments is fine. */
	{
		uint64_t status = indirect_read(QSIZE - 2, &head);

		fg_vq_publish(&fvq);
		ck_assert_int_eq(vblk_process_queue(blk, 0, &vq, eng, &notify), 1);
		ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &len), 1);
		ck_assert_uint_eq(*(uint8_t *)fg_ptr(&g, status, 1), VIRTIO_BLK_S_OK);
		ck_assert_uint_eq(len, (QSIZE - 2) * 512 + 1);
	}
	st = qstats();
	ck_assert_uint_eq(st.io_errors, 3);
	ck_assert_uint_eq(st.reqs[VBLK_STAT_IN], 4);
	ck_assert_uint_eq(st.bytes_read, (QSIZE - 2) * 512);
	good_read();

	/* 1025 entries: larger than any ring, refused before it is read. */
	indirect_read(1023, &head);
	fg_vq_publish(&fvq);
	ck_assert_int_eq(vblk_process_queue(blk, 0, &vq, eng, &notify), -EPROTO);
	ck_assert(vblk_queue_broken(blk, 0));
	ck_assert_uint_eq(qstats().proto_errors, 1);
	blk_teardown();
}
END_TEST

/* ===== virtio-pci transport ================================================ */

#define TQ 4	/* queues */
#define TQSIZE 16
#define RING_BASE 0x100000ull

/* The device: tests/harness/fake_vdev, accepting everything it offers. */
#define FD_FEATURES \
	((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX))

static struct fv V;
static struct fv_kvm *kvm;
static struct fake_guest tg;
static struct fvd fdev;

#define COMMON_WR(f, v, len) FV_COMMON_WR(&V, f, v, len)
#define status_rd() fv_status(&V)

static void t_setup(void)
{
	struct vpci_params p = {
		.ops = &fvd_ops, .dev = &fdev, .num_queues = TQ,
		.max_queue_size = 256, .ioeventfd_any_length = true,
	};

	ck_assert_int_eq(fg_init(&tg, 8u << 20), 0);
	ck_assert_int_eq(fv_init(&V, 3, FV_MMIO_BASE, FV_MMIO_SIZE, &tg.mem), 0);
	kvm = V.kvm;
	fvd_init(&fdev, FD_FEATURES);
	ck_assert_int_eq(fv_create(&V, &p), 0);
}

static void t_teardown(void)
{
	fv_destroy(&V);
	fg_destroy(&tg);
}

static uint64_t msg_addr(unsigned int v, unsigned int gen)
{
	return 0xfee00000ull | (uint64_t)((v + gen) & 0xff) << 12;
}

static uint32_t msg_data(unsigned int v, unsigned int gen)
{
	return 0x4000u + v + 0x100u * (gen & 0xff);
}

#define msix_entry(v, addr, data) fv_msix_write(&V, v, addr, data)
#define msix_mask(v, masked) fv_msix_mask(&V, v, masked)

/* Reset and full bring-up, as the Linux driver: TQ queues on vectors
 * 1..TQ, config vector 0, DRIVER_OK. */
static void drv_up(void)
{
	const uint64_t f = (1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX);

	ck_assert_int_eq(fv_negotiate(&V, f, NULL), 0);
	fv_msix_ctrl(&V, MSIX_CTRL_ENABLE | MSIX_CTRL_MASKALL);
	for (unsigned int v = 0; v <= TQ; v++) {
		msix_entry(v, msg_addr(v, 0), msg_data(v, 0));
		msix_mask(v, false);
	}
	fv_msix_ctrl(&V, MSIX_CTRL_ENABLE);
	COMMON_WR(MSIX, 0, 2);
	for (unsigned int q = 0; q < TQ; q++) {
		uint64_t base = RING_BASE + q * 0x1000ull;

		fv_queue_setup(&V, q, TQSIZE, base, base + 0x400, base + 0x800,
			       (uint16_t)(q + 1));
	}
	fv_status_add(&V, VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert(status_rd() & VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert(!(status_rd() & VIRTIO_CONFIG_S_NEEDS_RESET));
}

/*
 * 10k MSI-X rewrites of one vector: masked (as Linux moves an interrupt)
 * they cost no KVM call at all and one routing update at the unmask; with
 * a mask/rewrite/unmask cycle each, at most one routing call per cycle;
 * unmasked rewrites (hostile: the spec leaves them undefined) stay bounded
 * too.  The route KVM ends up with is the last message, and no GSI, irqfd
 * or fd is leaked.
 */
START_TEST(msix_rewrite_storm)
{
	unsigned int routing, calls, fds, gsis;
	struct vpci_stats st;
	int gsi;

	t_setup();
	drv_up();
	fds = open_fds();
	gsis = kvm->nr_msi;
	ck_assert_uint_eq(kvm->live_irqfd, TQ);

	/* Masked: coalesced into one update. */
	routing = kvm->routing_calls;
	calls = kvm->calls;
	msix_mask(2, true);
	for (unsigned int i = 1; i <= 10000; i++)
		msix_entry(2, msg_addr(2, i), msg_data(2, i));
	ck_assert_uint_eq(kvm->calls, calls);
	msix_mask(2, false);
	ck_assert_uint_le(kvm->routing_calls, routing + 1);
	gsi = kvm->irqfd_gsi[fdev.queues[1].call_fd];
	ck_assert_int_ge(gsi, 0);
	ck_assert_uint_eq(kvm->route_addr[gsi], msg_addr(2, 10000));
	ck_assert_uint_eq(kvm->route_data[gsi], msg_data(2, 10000));

	/* Cycles: at most one routing call each. */
	routing = kvm->routing_calls;
	for (unsigned int i = 1; i <= 10000; i++) {
		msix_mask(3, true);
		msix_entry(3, msg_addr(3, i), msg_data(3, i));
		msix_mask(3, false);
	}
	printf("abuse: 10000 mask/rewrite/unmask cycles: %u routing calls\n",
	       kvm->routing_calls - routing);
	ck_assert_uint_le(kvm->routing_calls - routing, 10000);

	/* Unmasked rewrites. */
	routing = kvm->routing_calls;
	calls = kvm->calls;
	for (unsigned int i = 1; i <= 10000; i++)
		msix_entry(4, msg_addr(4, i), msg_data(4, i));
	printf("abuse: 10000 unmasked rewrites: %u routing calls, %u KVM calls\n",
	       kvm->routing_calls - routing, kvm->calls - calls);
	ck_assert_uint_le(kvm->calls - calls, 3 * 10000);
	/* An interrupt now goes out with the last message written: with
	 * KVM_SIGNAL_MSI while the route is stale, else through the route. */
	calls = kvm->msi_calls;
	virtio_queue_notify(&fdev.queues[3]);
	gsi = kvm->irqfd_gsi[fdev.queues[3].call_fd];
	if (kvm->msi_calls != calls) {
		ck_assert_uint_eq(kvm->msi_addr, msg_addr(4, 10000));
		ck_assert_uint_eq(kvm->msi_data, msg_data(4, 10000));
	} else if (gsi >= 0 && kvm->route_valid[gsi]) {
		ck_assert_uint_eq(kvm->route_addr[gsi], msg_addr(4, 10000));
		ck_assert_uint_eq(kvm->route_data[gsi], msg_data(4, 10000));
	}

	ck_assert_uint_eq(open_fds(), fds);
	ck_assert_uint_eq(kvm->nr_msi, gsis);
	ck_assert_uint_eq(kvm->live_irqfd, TQ);
	ck_assert_uint_le(kvm->max_gsi, X86_IRQ_FIRST_MSI_GSI + 2 * (TQ + 1));
	vpci_get_stats(V.t, &st);
	ck_assert_uint_eq(st.needs_reset, 0);
	ck_assert(!(status_rd() & VIRTIO_CONFIG_S_NEEDS_RESET));
	t_teardown();
}
END_TEST

/*
 * 1000 reset + bring-up cycles: every cycle unwires and rewires, and
 * nothing grows: fds, live irqfds/ioeventfds, GSIs, heap.  The reset
 * counter is exact.
 */
START_TEST(reset_loop)
{
	unsigned int fds, ioev, irqfd, gsis;
	size_t heap0, heap1;
	struct vpci_stats st0, st;

	t_setup();
	drv_up();
	drv_up(); /* warm: allocations that are reused from now on */
	fds = open_fds();
	ioev = kvm->live_ioev;
	irqfd = kvm->live_irqfd;
	gsis = kvm->nr_msi;
	heap0 = heap_in_use();
	vpci_get_stats(V.t, &st0);
	for (unsigned int i = 0; i < 1000; i++) {
		drv_up();
		ck_assert_uint_eq(kvm->live_ioev, ioev);
		ck_assert_uint_eq(kvm->live_irqfd, irqfd);
	}
	heap1 = heap_in_use();
	vpci_get_stats(V.t, &st);
	printf("abuse: 1000 resets: %u -> %u fds, heap %zu -> %zu bytes, %llu wiring ioctls\n",
	       fds, open_fds(), heap0, heap1,
	       (unsigned long long)(st.wiring_ioctls - st0.wiring_ioctls));
	ck_assert_uint_eq(open_fds(), fds);
	ck_assert_uint_eq(kvm->nr_msi, gsis);
	ck_assert_uint_le(kvm->max_gsi, X86_IRQ_FIRST_MSI_GSI + 2 * (TQ + 1));
	ck_assert_uint_eq(st.resets - st0.resets, 1000);
	ck_assert_uint_eq(st.needs_reset, 0);
	ck_assert_uint_eq(fdev.start_calls, 1002);
	/* Bounded: no per-cycle growth (64 KiB of slack for malloc noise). */
	ck_assert_msg(heap1 <= heap0 + 65536, "heap grew %zu -> %zu", heap0, heap1);
	COMMON_WR(STATUS, 0, 1);
	ck_assert_uint_eq(kvm->live_ioev, TQ); /* they stay with the BAR */
	ck_assert_uint_eq(kvm->live_irqfd, 0);
	t_teardown();
}
END_TEST

static Suite *abuse_suite(void)
{
	Suite *s = suite_create("abuse");
	TCase *tc = tcase_create("abuse");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, kick_storm_no_buffers);
	tcase_add_test(tc, chains_over_seg_max);
	tcase_add_test(tc, msix_rewrite_storm);
	tcase_add_test(tc, reset_loop);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(abuse_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
