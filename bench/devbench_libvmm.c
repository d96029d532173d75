/* SPDX-License-Identifier: MIT */
/*
 * devbench target "libvmm": the real virtio-blk device (virtio_blk), its
 * virtio-pci transport on a real PCI bus and real PIO/MMIO buses, the real
 * I/O threads and io_uring (or the null engine).  KVM is replaced by a fake
 * ioctl function that records what would be registered: the KVM_IOEVENTFD
 * of each queue's notify address is that queue's kick eventfd, the
 * KVM_IRQFD whose GSI routes to the queue's MSI-X vector is its interrupt
 * eventfd.  The driver brings the function up through config space and BAR
 * MMIO exactly like Linux' virtio_pci_modern.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <linux/virtio_config.h>
#include <linux/virtio_pci.h>
#include <linux/virtio_ring.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "blk/virtio-blk.h"
#include "iobus.h"
#include "iothread.h"
#include "irq.h"
#include "memory.h"
#include "pci/msix.h"
#include "pci/pci.h"
#include "virtio/virtio-pci.h"

#include "devbench.h"
#include "ratelimit.h"
#include "fake_vpci.h"

#define MAXQ 64

static struct {
	/* fake KVM, buses, transport, the driver's view (fake_vpci.h) */
	struct fv v;
	struct guest_mem mem;
	struct iothread *io[MAXQ];
	unsigned int nr_io;
	struct virtio_blk *dev;
	int null_fd;
	/* device counters at the window start */
	struct virtio_blk_queue_stats st0[MAXQ], st1[MAXQ];
	struct iothread_stats it0[MAXQ], it1[MAXQ];
} L;

/* Vector v: a distinct MSI message whose data is 0x4000 + v. */
static void msix_setup(unsigned int nvec)
{
	fv_msix_ctrl(&L.v, MSIX_CTRL_ENABLE | MSIX_CTRL_MASKALL);
	for (unsigned int v = 0; v < nvec; v++) {
		fv_msix_write(&L.v, v, 0xfee00000u, 0x4000u + v);
		fv_msix_mask(&L.v, v, false);
	}
	fv_msix_ctrl(&L.v, MSIX_CTRL_ENABLE);
}

static int bring_up(const struct db_cfg *c, struct db_queue *q)
{
	uint64_t offered, want;
	int ret;

	want = (1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_INDIRECT_DESC);
	if (c->event_idx)
		want |= 1ull << VIRTIO_RING_F_EVENT_IDX;
	ret = fv_negotiate(&L.v, want, &offered);
	if (ret == -ENOTSUP) {
		fprintf(stderr, "devbench: device lacks features %#llx\n",
			(unsigned long long)(want & ~offered));
		return -ENOTSUP;
	}
	if (ret)
		return -EIO;
	msix_setup(c->queues + 1);
	FV_COMMON_WR(&L.v, MSIX, 0, 2);
	for (unsigned int i = 0; i < c->queues; i++)
		fv_queue_setup(&L.v, i, q[i].size, q[i].desc_gpa, q[i].avail_gpa,
			       q[i].used_gpa, (uint16_t)(i + 1));
	fv_status_add(&L.v, VIRTIO_CONFIG_S_DRIVER_OK);
	if (fv_status(&L.v) & VIRTIO_CONFIG_S_NEEDS_RESET)
		return -EIO;
	/* Find each queue's kick and interrupt eventfds in the fake KVM. */
	for (unsigned int i = 0; i < c->queues; i++) {
		q[i].kick_fd = fv_kvm_kick_fd(L.v.kvm, fv_notify_addr(&L.v, i));
		q[i].call_fd = fv_kvm_call_fd(L.v.kvm, 0xfee00000u, 0x4000u + i + 1);
		if (q[i].kick_fd < 0 || q[i].call_fd < 0) {
			fprintf(stderr, "devbench: queue %u not wired\n", i);
			return -EIO;
		}
	}
	return 0;
}

static int lv_setup(const struct db_cfg *c, struct db_ram *ram,
		    struct db_queue *q, volatile int *stop)
{
	bool null = !strcmp(c->backend, "null");
	struct vblk_options o = {
		.num_queues = (uint16_t)c->queues,
		.queue_size = (uint16_t)c->queue_size,
		.fd = -1,
		/* Reads only; the same image is open in fio and the peer. */
		.flags = VBLK_OPT_READONLY | VBLK_OPT_NO_LOCK,
	};
	struct vblk *blk;
	uint64_t cap;
	int ret;

	L.null_fd = -1;
	if (c->queues > MAXQ || c->iothreads > MAXQ || !c->iothreads)
		return -EINVAL;
	guest_mem_init_buf(&L.mem, ram->base, ram->size);
	if ((ret = fv_init(&L.v, -1, FV_MMIO_BASE, FV_MMIO_SIZE, &L.mem)))
		return ret;
	if (null) {
		/* The null engine never touches the image: a sparse memfd. */
		L.null_fd = memfd_create("devbench-null", MFD_CLOEXEC);
		if (L.null_fd < 0 || ftruncate(L.null_fd, 1ll << 30) < 0)
			return -errno;
		o.fd = L.null_fd;
	} else {
		o.path = c->file;
	}
	if ((ret = vblk_open(&o, &blk)))
		return ret;
	cap = disk_capacity(vblk_disk(blk)) * 512;
	for (unsigned int i = 0; i < c->iothreads; i++) {
		if ((ret = iothread_create(i, 512, &L.io[i])))
			return ret;
		L.nr_io++;
		if ((ret = iothread_start(L.io[i])))
			return ret;
	}
	{
		struct ratelimit_cfg rate = {
			.bw = { c->rate_bw, c->rate_bw_burst, 0 },
			.ops = { c->rate_ops, c->rate_ops_burst, 0 },
		};
		struct virtio_blk_params dp = {
			.blk = blk,
			.iothreads = L.io,
			.nr_iothreads = L.nr_io,
			.poll_us = c->poll_us,
			.null_engine = null,
			.rate = &rate,
		};
		struct vpci_params tp = {
			.irq = L.v.irq,
			.mem = &L.mem,
			.ops = virtio_blk_ops(),
			.num_queues = c->queues,
			.ioeventfd_any_length = true,
		};

		if ((ret = virtio_blk_create(&dp, &L.dev))) {
			vblk_close(blk);
			return ret;
		}
		tp.bus = L.v.bus;
		tp.dev = L.dev;
		tp.max_queue_size = vblk_queue_size(blk);
		if ((ret = fv_create(&L.v, &tp)))
			return ret;
	}
	if (L.v.nq != c->queues)
		return -EIO;
	for (unsigned int i = 0; i < c->queues; i++)
		if ((ret = db_queue_init(&q[i], ram, i, (uint16_t)c->queue_size, c->qd,
					 cap, c->event_idx, stop)))
			return ret;
	return bring_up(c, q);
}

static void lv_snapshot(bool end)
{
	for (unsigned int i = 0; i < L.v.nq && i < MAXQ; i++)
		(void)virtio_blk_queue_stats(L.dev, i, end ? &L.st1[i] : &L.st0[i]);
	for (unsigned int i = 0; i < L.nr_io; i++)
		iothread_get_stats(L.io[i], end ? &L.it1[i] : &L.it0[i]);
}

static void lv_json(FILE *f, double secs, double reqs)
{
	uint64_t kicks = 0, irqs = 0, supp = 0, loops = 0, submits = 0;

	(void)secs;
	for (unsigned int i = 0; i < L.v.nq && i < MAXQ; i++) {
		kicks += L.st1[i].svc.kicks - L.st0[i].svc.kicks;
		irqs += L.st1[i].svc.interrupts - L.st0[i].svc.interrupts;
		supp += L.st1[i].svc.suppressed - L.st0[i].svc.suppressed;
	}
	for (unsigned int i = 0; i < L.nr_io; i++) {
		loops += L.it1[i].loops - L.it0[i].loops;
		submits += L.it1[i].submits - L.it0[i].submits;
	}
	if (reqs <= 0)
		reqs = 1;
	fprintf(f, ", \"dev_kick_wakeups_per_req\": %.4f, \"dev_irqs_per_req\": %.4f"
		   ", \"dev_suppressed_per_req\": %.4f, \"iothread_loops_per_req\": %.4f"
		   ", \"iothread_submits_per_req\": %.4f",
		kicks / reqs, irqs / reqs, supp / reqs, loops / reqs, submits / reqs);
	{
		uint64_t n, ns;

		ratelimit_stats(virtio_blk_ratelimit(L.dev), &n, &ns);
		fprintf(f, ", \"rate_throttled\": %llu, \"rate_wait_ms\": %.1f",
			(unsigned long long)n, (double)ns / 1e6);
	}
}

static void lv_teardown(void)
{
	if (L.v.t)
		vpci_quiesce(L.v.t);
	for (unsigned int i = 0; i < L.nr_io; i++)
		iothread_stop(L.io[i]);
	vpci_destroy(L.v.t);
	L.v.t = NULL;
	virtio_blk_destroy(L.dev);
	for (unsigned int i = 0; i < L.nr_io; i++)
		iothread_destroy(L.io[i]);
	fv_destroy(&L.v);
	if (L.null_fd >= 0)
		close(L.null_fd);
}

const struct db_target db_libvmm_target = {
	.setup = lv_setup,
	.snapshot = lv_snapshot,
	.json = lv_json,
	.teardown = lv_teardown,
};
