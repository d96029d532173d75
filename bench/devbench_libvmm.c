/* SPDX-License-Identifier: MIT */
/*
 * devbench target "libvmm": the real virtio-blk device (vblk_dev), its
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

#define MMIO_BASE 0xc0000000ull
#define MMIO_SIZE 0x20000000ull
#define MAX_FDS 4096
#define MAXQ 64

static struct {
	/* fake KVM */
	uint64_t ioev_addr[MAX_FDS];
	bool ioev[MAX_FDS];
	int irqfd_gsi[MAX_FDS];
	uint32_t route_data[IRQ_MAX_ROUTES];
	bool route_valid[IRQ_MAX_ROUTES];
	/* machine */
	struct iobus pio, mmio;
	struct pci_bus *bus;
	struct vm_irq *irq;
	struct guest_mem mem;
	struct iothread *io[MAXQ];
	unsigned int nr_io;
	struct vblk_dev *dev;
	struct virtio_transport *t;
	int null_fd;
	/* driver's view */
	unsigned int slot;
	uint64_t bar;
	uint32_t common, notify, mult, table;
	unsigned int msix;
	unsigned int nq;
	/* device counters at the window start */
	struct vblk_dev_queue_stats st0[MAXQ], st1[MAXQ];
	struct iothread_stats it0[MAXQ], it1[MAXQ];
} L;

static int fake_ioctl(void *opaque, int fd, unsigned long req, void *arg)
{
	(void)opaque;
	(void)fd;
	if (req == KVM_SET_GSI_ROUTING) {
		struct kvm_irq_routing *r = arg;

		memset(L.route_valid, 0, sizeof(L.route_valid));
		for (unsigned int i = 0; i < r->nr; i++) {
			struct kvm_irq_routing_entry *e = &r->entries[i];

			if (e->type != KVM_IRQ_ROUTING_MSI || e->gsi >= IRQ_MAX_ROUTES)
				continue;
			L.route_valid[e->gsi] = true;
			L.route_data[e->gsi] = e->u.msi.data;
		}
		return 0;
	}
	if (req == KVM_IRQFD) {
		struct kvm_irqfd *a = arg;

		if (a->fd >= MAX_FDS)
			return -EMFILE;
		L.irqfd_gsi[a->fd] = (a->flags & KVM_IRQFD_FLAG_DEASSIGN) ? -1 : (int)a->gsi;
		return 0;
	}
	if (req == KVM_IOEVENTFD) {
		struct kvm_ioeventfd *a = arg;

		if (a->fd < 0 || a->fd >= MAX_FDS)
			return -EMFILE;
		L.ioev[a->fd] = !(a->flags & KVM_IOEVENTFD_FLAG_DEASSIGN);
		L.ioev_addr[a->fd] = a->addr;
		return 0;
	}
	if (req == KVM_SIGNAL_MSI)
		return 1;
	return -ENOTTY;
}

/* ---- the Linux driver's side of PCI ---------------------------------- */

static void cfg_select(unsigned int off)
{
	uint32_t a = 0x80000000u | L.slot << 11 | (off & 0xfc);

	(void)iobus_dispatch(&L.pio, 0xcf8, &a, 4, true);
}

static uint32_t cfg_rd(unsigned int off, unsigned int len)
{
	uint32_t v = 0;

	cfg_select(off);
	(void)iobus_dispatch(&L.pio, 0xcfc + (off & 3), &v, len, false);
	return v;
}

static void cfg_wr(unsigned int off, uint32_t v, unsigned int len)
{
	cfg_select(off);
	(void)iobus_dispatch(&L.pio, 0xcfc + (off & 3), &v, len, true);
}

static uint64_t mr(uint32_t off, unsigned int len)
{
	uint64_t v = 0;

	(void)iobus_dispatch(&L.mmio, L.bar + off, &v, len, false);
	return v;
}

static void mw(uint32_t off, uint64_t v, unsigned int len)
{
	(void)iobus_dispatch(&L.mmio, L.bar + off, &v, len, true);
}

#define COMMON_RD(f, len) mr(L.common + VIRTIO_PCI_COMMON_##f, len)
#define COMMON_WR(f, v, len) mw(L.common + VIRTIO_PCI_COMMON_##f, v, len)

static void status_add(uint8_t bits)
{
	COMMON_WR(STATUS, COMMON_RD(STATUS, 1) | bits, 1);
}

static int probe(void)
{
	unsigned int ptr, n = 0;

	for (L.slot = 1; L.slot < PCI_MAX_SLOTS; L.slot++)
		if (cfg_rd(PCI_CFG_VENDOR_ID, 2) == VPCI_VENDOR_ID)
			break;
	if (L.slot == PCI_MAX_SLOTS)
		return -ENODEV;
	L.bar = cfg_rd(PCI_CFG_BAR0, 4) & ~0xfu;
	L.common = L.notify = UINT32_MAX;
	for (ptr = cfg_rd(PCI_CFG_CAP_PTR, 1); ptr && n < 16;
	     ptr = cfg_rd(ptr + 1, 1), n++) {
		unsigned int id = cfg_rd(ptr, 1);

		if (id == PCI_CAPID_MSIX) {
			L.msix = ptr;
			L.table = cfg_rd(ptr + MSIX_CAP_TABLE, 4) & ~7u;
			continue;
		}
		if (id != PCI_CAPID_VNDR)
			continue;
		switch (cfg_rd(ptr + VIRTIO_PCI_CAP_CFG_TYPE, 1)) {
		case VIRTIO_PCI_CAP_COMMON_CFG:
			L.common = cfg_rd(ptr + VIRTIO_PCI_CAP_OFFSET, 4);
			break;
		case VIRTIO_PCI_CAP_NOTIFY_CFG:
			L.notify = cfg_rd(ptr + VIRTIO_PCI_CAP_OFFSET, 4);
			L.mult = cfg_rd(ptr + VIRTIO_PCI_NOTIFY_CAP_MULT, 4);
			break;
		default:
			break;
		}
	}
	if (L.common == UINT32_MAX || L.notify == UINT32_MAX || !L.msix)
		return -ENODEV;
	L.nq = (unsigned int)COMMON_RD(NUMQ, 2);
	return 0;
}

/* Vector v: a distinct MSI message whose data is 0x4000 + v. */
static void msix_setup(unsigned int nvec)
{
	cfg_wr(L.msix + MSIX_CAP_CTRL, MSIX_CTRL_ENABLE | MSIX_CTRL_MASKALL, 2);
	for (unsigned int v = 0; v < nvec; v++) {
		uint32_t e = L.table + v * MSIX_ENTRY_SIZE;

		mw(e + MSIX_ENTRY_ADDR_LO, 0xfee00000u, 4);
		mw(e + MSIX_ENTRY_ADDR_HI, 0, 4);
		mw(e + MSIX_ENTRY_DATA, 0x4000u + v, 4);
		mw(e + MSIX_ENTRY_CTRL, 0, 4);
	}
	cfg_wr(L.msix + MSIX_CAP_CTRL, MSIX_CTRL_ENABLE, 2);
}

static int bring_up(const struct db_cfg *c, struct db_queue *q)
{
	uint64_t offered, want;

	COMMON_WR(STATUS, 0, 1);
	status_add(VIRTIO_CONFIG_S_ACKNOWLEDGE);
	status_add(VIRTIO_CONFIG_S_DRIVER);
	COMMON_WR(DFSELECT, 0, 4);
	offered = COMMON_RD(DF, 4);
	COMMON_WR(DFSELECT, 1, 4);
	offered |= COMMON_RD(DF, 4) << 32;
	want = (1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_INDIRECT_DESC);
	if (c->event_idx)
		want |= 1ull << VIRTIO_RING_F_EVENT_IDX;
	if ((offered & want) != want) {
		fprintf(stderr, "devbench: device lacks features %#llx\n",
			(unsigned long long)(want & ~offered));
		return -ENOTSUP;
	}
	COMMON_WR(GFSELECT, 0, 4);
	COMMON_WR(GF, (uint32_t)want, 4);
	COMMON_WR(GFSELECT, 1, 4);
	COMMON_WR(GF, (uint32_t)(want >> 32), 4);
	status_add(VIRTIO_CONFIG_S_FEATURES_OK);
	if (!(COMMON_RD(STATUS, 1) & VIRTIO_CONFIG_S_FEATURES_OK))
		return -EIO;
	msix_setup(c->queues + 1);
	COMMON_WR(MSIX, 0, 2);
	for (unsigned int i = 0; i < c->queues; i++) {
		COMMON_WR(Q_SELECT, i, 2);
		COMMON_WR(Q_SIZE, q[i].size, 2);
		COMMON_WR(Q_DESCLO, q[i].desc_gpa, 8);
		COMMON_WR(Q_AVAILLO, q[i].avail_gpa, 8);
		COMMON_WR(Q_USEDLO, q[i].used_gpa, 8);
		COMMON_WR(Q_MSIX, i + 1, 2);
		COMMON_WR(Q_ENABLE, 1, 2);
	}
	status_add(VIRTIO_CONFIG_S_DRIVER_OK);
	if (COMMON_RD(STATUS, 1) & VIRTIO_CONFIG_S_NEEDS_RESET)
		return -EIO;
	/* Find each queue's kick and interrupt eventfds in the fake KVM. */
	for (unsigned int i = 0; i < c->queues; i++) {
		uint64_t addr;

		COMMON_WR(Q_SELECT, i, 2);
		addr = L.bar + L.notify + COMMON_RD(Q_NOFF, 2) * L.mult;
		for (int fd = 0; fd < MAX_FDS; fd++) {
			int gsi = L.irqfd_gsi[fd];

			if (L.ioev[fd] && L.ioev_addr[fd] == addr)
				q[i].kick_fd = fd;
			if (gsi >= 0 && gsi < (int)IRQ_MAX_ROUTES && L.route_valid[gsi] &&
			    L.route_data[gsi] == 0x4000u + i + 1)
				q[i].call_fd = fd;
		}
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

	for (int i = 0; i < MAX_FDS; i++)
		L.irqfd_gsi[i] = -1;
	L.null_fd = -1;
	if (c->queues > MAXQ || c->iothreads > MAXQ || !c->iothreads)
		return -EINVAL;
	guest_mem_init_buf(&L.mem, ram->base, ram->size);
	if ((ret = iobus_init(&L.pio, "pio")) || (ret = iobus_init(&L.mmio, "mmio")) ||
	    (ret = pci_bus_create(&L.pio, &L.mmio, MMIO_BASE, MMIO_SIZE, &L.bus)) ||
	    (ret = irq_create(-1, fake_ioctl, NULL, &L.irq)))
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
	cap = vblk_capacity(blk) * 512;
	for (unsigned int i = 0; i < c->iothreads; i++) {
		if ((ret = iothread_create(i, 512, &L.io[i])))
			return ret;
		L.nr_io++;
		if ((ret = iothread_start(L.io[i])))
			return ret;
	}
	{
		struct vblk_dev_params dp = {
			.blk = blk,
			.iothreads = L.io,
			.nr_iothreads = L.nr_io,
			.poll_us = c->poll_us,
			.null_engine = null,
		};
		struct vpci_params tp = {
			.irq = L.irq,
			.mem = &L.mem,
			.ops = vblk_dev_ops(),
			.num_queues = c->queues,
			.ioeventfd_any_length = true,
		};

		if ((ret = vblk_dev_create(&dp, &L.dev))) {
			vblk_close(blk);
			return ret;
		}
		tp.bus = L.bus;
		tp.dev = L.dev;
		tp.max_queue_size = vblk_queue_size(blk);
		if ((ret = vpci_create(&tp, &L.t)))
			return ret;
	}
	if ((ret = probe()))
		return ret;
	if (L.nq != c->queues)
		return -EIO;
	for (unsigned int i = 0; i < c->queues; i++)
		if ((ret = db_queue_init(&q[i], ram, i, (uint16_t)c->queue_size, c->qd,
					 cap, c->event_idx, stop)))
			return ret;
	return bring_up(c, q);
}

static void lv_snapshot(bool end)
{
	for (unsigned int i = 0; i < L.nq && i < MAXQ; i++)
		(void)vblk_dev_queue_stats(L.dev, i, end ? &L.st1[i] : &L.st0[i]);
	for (unsigned int i = 0; i < L.nr_io; i++)
		iothread_get_stats(L.io[i], end ? &L.it1[i] : &L.it0[i]);
}

static void lv_json(FILE *f, double secs, double reqs)
{
	uint64_t kicks = 0, irqs = 0, supp = 0, loops = 0, submits = 0;

	(void)secs;
	for (unsigned int i = 0; i < L.nq && i < MAXQ; i++) {
		kicks += L.st1[i].kicks - L.st0[i].kicks;
		irqs += L.st1[i].interrupts - L.st0[i].interrupts;
		supp += L.st1[i].suppressed - L.st0[i].suppressed;
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
}

static void lv_teardown(void)
{
	if (L.t)
		vpci_quiesce(L.t);
	for (unsigned int i = 0; i < L.nr_io; i++)
		iothread_stop(L.io[i]);
	vpci_destroy(L.t);
	vblk_dev_destroy(L.dev);
	for (unsigned int i = 0; i < L.nr_io; i++)
		iothread_destroy(L.io[i]);
	pci_bus_destroy(L.bus);
	irq_destroy(L.irq);
	iobus_destroy(&L.mmio);
	iobus_destroy(&L.pio);
	if (L.null_fd >= 0)
		close(L.null_fd);
}

const struct db_target db_libvmm_target = {
	.setup = lv_setup,
	.snapshot = lv_snapshot,
	.json = lv_json,
	.teardown = lv_teardown,
};
