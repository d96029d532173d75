/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the modern virtio-pci transport as a guest reaches it --
 * PCI configuration space through 0xCF8/0xCFC (capabilities, BAR moves,
 * MSI-X message control, the VIRTIO_PCI_CAP_PCI_CFG window), and BAR 0 by
 * MMIO (common configuration, ISR, device configuration, notify, MSI-X
 * table and PBA), with accesses of 1, 2, 4 and 8 bytes at offsets
 * normalised into and around each region.  The machine is the one of
 * tests/unit/check_virtio_pci.c: real PIO/MMIO buses, PCI bus, MSI-X and
 * wiring transactions over a fake KVM ioctl that fails on demand, fake
 * guest RAM, and a virtio-blk disk (vblk + the synchronous engine) behind
 * the transport, so DRIVER_OK with guest-chosen ring addresses leads to
 * real request processing.
 *
 * Input: [setup u8][fail_at u8] then action records [action u8][fields].
 *
 * Checked beyond the sanitizers (abort()):
 *  - KVM is never asked to assign an ioeventfd/irqfd twice, to deassign
 *    one it does not have, or to route a GSI out of range;
 *  - after vpci_destroy() no ioeventfd/irqfd is left assigned, and no file
 *    descriptor leaked;
 *  - the device's config accessors are only called inside its config size;
 *  - ops->start() gets queues that are indexed, and ready when enabled;
 *  - with coalesced registers (setup bit 7), the MSI-X table is never
 *    coalesced while the device is live (virtio-pci-irq.c, "Coalesced
 *    registers"), and the fake KVM is never asked to remove a zone it does
 *    not have or to register overlapping ones.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <linux/kvm.h>
#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>
#include <linux/virtio_pci.h>

#include "blk/blk-engine.h"
#include "blk/vblk.h"
#include "fake_vpci.h"
#include "fuzz.h"
#include "iobus.h"
#include "irq.h"
#include "memory.h"
#include "pci/msix.h"
#include "pci/pci.h"
#include "virtio/virtio-pci-int.h"
#include "virtio/virtio-pci.h"

#define RAM_SIZE (256u << 10)
#define IMG_SIZE (64u << 10)
#define MMIO_BASE 0xc0000000ull
#define MMIO_SIZE 0x10000000ull
/* The ECAM window (pci_bus_set_ecam()), apart from the BAR window. */
#define ECAM_BASE 0xb0000000ull
#define MAX_ACTIONS 512

/* The fake KVM (tests/harness/fake_vpci.c) aborts on a broken contract;
 * injected failures (fail_at) spare deassigns: KVM cannot fail to deassign
 * an fd it holds, and the transport documents that such wiring would stay
 * in KVM until the VM is destroyed. */

/* ---- the device behind the transport ------------------------------------ */

struct fdev {
	struct vblk *blk;
	struct blk_engine *eng;
	struct virtio_queue *queues;
	unsigned int nr;
	bool live;
	bool fail_start;
};

static uint64_t fd_features(void *d)
{
	return vblk_device_features(((struct fdev *)d)->blk);
}

static int fd_set_features(void *d, uint64_t f)
{
	return vblk_set_driver_features(((struct fdev *)d)->blk, f);
}

static void fd_config_read(void *d, uint32_t off, void *buf, uint32_t len)
{
	if (vblk_config_read(((struct fdev *)d)->blk, off, buf, len))
		abort(); /* the transport let an access past config_size through */
}

static void fd_config_write(void *d, uint32_t off, const void *buf,
			    uint32_t len)
{
	if (vblk_config_write(((struct fdev *)d)->blk, off, buf, len) == -EINVAL)
		abort();
}

static int fd_start(void *d, struct virtio_queue *queues, unsigned int nr)
{
	struct fdev *fd = d;

	for (unsigned int i = 0; i < nr; i++) {
		if (queues[i].index != i)
			abort();
		if (queues[i].enabled && (!queues[i].vq.ready || queues[i].kick_fd < 0))
			abort();
	}
	if (fd->fail_start)
		return -EIO;
	fd->queues = queues;
	fd->nr = nr;
	fd->live = true;
	return 0;
}

static void fd_stop(void *d)
{
	struct fdev *fd = d;

	if (!fd->live)
		abort(); /* stop without a successful start */
	for (unsigned int i = 0; i < fd->nr; i++)
		vblk_queue_reset(fd->blk, i);
	fd->live = false;
	fd->queues = NULL;
}

static const struct virtio_device_ops fd_ops = {
	.device_id = VIRTIO_ID_BLOCK,
	.config_size = sizeof(struct virtio_blk_config),
	.features = fd_features,
	.set_features = fd_set_features,
	.config_read = fd_config_read,
	.config_write = fd_config_write,
	.start = fd_start,
	.stop = fd_stop,
};

/* ---- the machine --------------------------------------------------------- */

enum {
	A_CFG,	      /* config space access through 0xCF8/0xCFC */
	A_PIO_RAW,    /* any access in 0xCF8..0xCFF, or in the ECAM window */
	A_MMIO,	      /* BAR 0 access in a chosen region */
	A_INIT,	      /* the Linux driver's probe/setup sequence */
	A_STATUS,     /* raw status write */
	A_FAIL,	      /* the next few KVM ioctls fail */
	A_KICK,	      /* device thread: serve a queue, interrupt */
	A_CFG_CHANGED,
	A_NEEDS_RESET,
	A_MSIX_CTRL,  /* MSI-X enable / function mask */
	A_BAR_MOVE,   /* move or unmap BAR 0 */
	A_NR,
};

struct fz {
	struct fuzz_in in;
	struct fv v; /* fake KVM, buses, PCI bus, irq, transport */
	struct guest_mem mem;
	struct fdev dev;
	struct pci_device *pdev;
	unsigned int nq, nv, msix_cap;
	uint32_t table_off, pba_off, bar_size;
	uint64_t bar; /* last known BAR 0 address */
};

static uint8_t *ram(void)
{
	static uint8_t *r;

	if (!r && posix_memalign((void **)&r, 4096, RAM_SIZE))
		abort();
	return r;
}

static unsigned int norm_len(uint8_t v)
{
	static const unsigned int lens[] = { 1, 2, 4, 8 };

	return lens[v & 3];
}

static void cfg_access(struct fz *f, unsigned int slot, unsigned int off,
		       unsigned int len, bool write, uint32_t val)
{
	(void)fv_cfg_access(&f->v, slot, off, &val, len, write);
}

static void mmio_access(struct fz *f, uint64_t off, unsigned int len,
			bool write, uint64_t val)
{
	uint64_t gpa = pci_bar_gpa(f->pdev, VPCI_BAR);

	if (gpa != PCI_BAR_UNMAPPED)
		f->bar = gpa;
	(void)iobus_dispatch(&f->v.mmio, f->bar + off, &val, len, write);
}

static void common_wr(struct fz *f, uint32_t off, uint64_t v, unsigned int len)
{
	mmio_access(f, VPCI_COMMON_OFF + off, len, true, v);
}

static uint64_t common_rd(struct fz *f, uint32_t off, unsigned int len)
{
	uint64_t v = 0, gpa = pci_bar_gpa(f->pdev, VPCI_BAR);

	if (gpa != PCI_BAR_UNMAPPED)
		f->bar = gpa;
	(void)iobus_dispatch(&f->v.mmio, f->bar + VPCI_COMMON_OFF + off, &v, len,
			     false);
	return v;
}

static void do_cfg(struct fz *f)
{
	uint8_t sel = fi_u8(&f->in), off = fi_u8(&f->in), m = fi_u8(&f->in);
	uint32_t val = fi_u32(&f->in);
	unsigned int slot = sel < 200 ? f->pdev->slot : sel < 230 ? 0 : sel % 32;

	cfg_access(f, slot, off, norm_len(m) > 4 ? 4 : norm_len(m), m & 4, val);
}

/* Any access in 0xCF8..0xCFF, or (port and mode bytes both 0xf8 and
 * above: a pattern older inputs seldom hold, so the regression inputs keep
 * their meaning) any access in the ECAM window, 8-byte and dword-crossing
 * ones included. */
static void do_pio_raw(struct fz *f)
{
	uint8_t port = fi_u8(&f->in), m = fi_u8(&f->in);
	uint32_t val = fi_u32(&f->in);

	if ((port & 0xf8) == 0xf8 && (m & 0xf8) == 0xf8) {
		uint8_t sel = fi_u8(&f->in);
		uint16_t reg = fi_u16(&f->in);
		unsigned int devfn = sel < 200 ? PCI_DEVFN(f->pdev->slot, f->pdev->fn) : sel;
		uint64_t v = (uint64_t)val << 32 | val;

		(void)iobus_dispatch(&f->v.mmio, ECAM_BASE + ((uint64_t)devfn << 12) +
					 (reg & 0xfff) % (4096 - 8),
				     &v, norm_len(m), m & 4);
		return;
	}
	(void)iobus_dispatch(&f->v.pio, 0xcf8 + (port & 7), &val,
			     norm_len(m) > 4 ? 4 : norm_len(m), m & 4);
}

static void do_mmio(struct fz *f)
{
	uint8_t region = fi_u8(&f->in), m = fi_u8(&f->in);
	uint16_t off = fi_u16(&f->in);
	uint64_t val = fi_u64(&f->in), o;

	switch (region % 8) {
	case 0:
		o = VPCI_COMMON_OFF + off % (VPCI_COMMON_LEN + 8);
		break;
	case 1:
		o = VPCI_ISR_OFF + off % (VPCI_ISR_LEN + 8);
		break;
	case 2:
		o = VPCI_DEVCFG_OFF + off % (sizeof(struct virtio_blk_config) + 8);
		break;
	case 3:
		o = VPCI_NOTIFY_OFF + off % (VPCI_NOTIFY_MULT * f->nq + 8);
		break;
	case 4:
		o = f->table_off + off % (MSIX_ENTRY_SIZE * f->nv + 8);
		break;
	case 5:
		o = f->pba_off + off % 24;
		break;
	case 6:
		o = off % f->bar_size;
		break;
	default:
		o = f->bar_size - 8 + off % 16; /* straddling the end */
		break;
	}
	mmio_access(f, o, norm_len(m), m & 4, val);
}

static uint64_t ring_addr(struct fz *f, uint32_t v)
{
	if (v & 0x80000000u)
		return (uint64_t)v << 8; /* outside RAM, maybe absurd */
	return (v % RAM_SIZE) & ~(uint64_t)(v & 0x40000000u ? 0 : 0xf);
}

/* What virtio_pci_modern + virtio_blk do at probe, with fuzzed values. */
static void do_init(struct fz *f)
{
	uint64_t want = fi_u64(&f->in), host;
	uint8_t m = fi_u8(&f->in);

	common_wr(f, VIRTIO_PCI_COMMON_STATUS, 0, 1);
	common_wr(f, VIRTIO_PCI_COMMON_STATUS, VIRTIO_CONFIG_S_ACKNOWLEDGE, 1);
	common_wr(f, VIRTIO_PCI_COMMON_STATUS,
		  VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER, 1);
	common_wr(f, VIRTIO_PCI_COMMON_DFSELECT, 0, 4);
	host = common_rd(f, VIRTIO_PCI_COMMON_DF, 4);
	common_wr(f, VIRTIO_PCI_COMMON_DFSELECT, 1, 4);
	host |= common_rd(f, VIRTIO_PCI_COMMON_DF, 4) << 32;
	if (!(m & 1)) /* else accept whatever was asked, offered or not */
		want = (want & host) | (1ull << VIRTIO_F_VERSION_1);
	common_wr(f, VIRTIO_PCI_COMMON_GFSELECT, 0, 4);
	common_wr(f, VIRTIO_PCI_COMMON_GF, (uint32_t)want, 4);
	common_wr(f, VIRTIO_PCI_COMMON_GFSELECT, 1, 4);
	common_wr(f, VIRTIO_PCI_COMMON_GF, want >> 32, 4);
	common_wr(f, VIRTIO_PCI_COMMON_STATUS,
		  VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
			  VIRTIO_CONFIG_S_FEATURES_OK, 1);
	if (m & 2) { /* MSI-X on, vectors unmasked with fuzzed messages */
		uint16_t ctrl = MSIX_CTRL_ENABLE;

		cfg_access(f, f->pdev->slot, f->msix_cap + MSIX_CAP_CTRL, 2,
			   true, ctrl);
		for (unsigned int v = 0; v < f->nv; v++) {
			uint64_t e = f->table_off + MSIX_ENTRY_SIZE * v;

			mmio_access(f, e + MSIX_ENTRY_ADDR_LO, 4, true,
				    0xfee00000u | (fi_u8(&f->in) << 12));
			mmio_access(f, e + MSIX_ENTRY_DATA, 4, true, fi_u16(&f->in));
			mmio_access(f, e + MSIX_ENTRY_CTRL, 4, true, fi_u8(&f->in) & 1);
		}
		common_wr(f, VIRTIO_PCI_COMMON_MSIX, fi_u8(&f->in) % (f->nv + 1), 2);
	}
	for (unsigned int q = 0; q < f->nq; q++) {
		uint8_t qm = fi_u8(&f->in);

		common_wr(f, VIRTIO_PCI_COMMON_Q_SELECT, q, 2);
		if (qm & 1)
			common_wr(f, VIRTIO_PCI_COMMON_Q_SIZE, fi_u16(&f->in), 2);
		common_wr(f, VIRTIO_PCI_COMMON_Q_DESCLO, ring_addr(f, fi_u32(&f->in)), 8);
		common_wr(f, VIRTIO_PCI_COMMON_Q_AVAILLO, ring_addr(f, fi_u32(&f->in)), 8);
		common_wr(f, VIRTIO_PCI_COMMON_Q_USEDLO, ring_addr(f, fi_u32(&f->in)), 8);
		common_wr(f, VIRTIO_PCI_COMMON_Q_MSIX,
			  qm & 2 ? VIRTIO_NO_VECTOR : fi_u8(&f->in) % (f->nv + 1), 2);
		if (!(qm & 4))
			common_wr(f, VIRTIO_PCI_COMMON_Q_ENABLE, 1, 2);
	}
	if (!(m & 4))
		common_wr(f, VIRTIO_PCI_COMMON_STATUS,
			  VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
				  VIRTIO_CONFIG_S_FEATURES_OK |
				  VIRTIO_CONFIG_S_DRIVER_OK, 1);
}

static void do_kick(struct fz *f)
{
	unsigned int q = fi_u8(&f->in);
	struct virtio_queue *vq;
	bool notify = false;
	int r;

	if (!f->dev.live)
		return;
	q %= f->dev.nr;
	vq = &f->dev.queues[q];
	if (!vq->enabled)
		return;
	r = vblk_process_queue(f->dev.blk, q, &vq->vq, f->dev.eng, &notify);
	if (r == -EPROTO)
		virtio_transport_needs_reset(vq->t, "fuzz: malformed ring");
	else if (r < 0)
		abort();
	if (notify)
		virtio_queue_notify(vq);
}

static void do_bar_move(struct fz *f)
{
	uint8_t m = fi_u8(&f->in);
	uint32_t v = fi_u32(&f->in);

	if (m & 1) { /* COMMAND.MEM off or on */
		cfg_access(f, f->pdev->slot, PCI_CFG_COMMAND, 2, true,
			   v & (PCI_CMD_MEM | PCI_CMD_MASTER));
		return;
	}
	if (m & 2) /* somewhere in the window, size-aligned */
		v = (uint32_t)(MMIO_BASE + (v % (MMIO_SIZE / f->bar_size)) * f->bar_size);
	cfg_access(f, f->pdev->slot, PCI_CFG_BAR0, 4, true, v);
}

static void find_msix(struct fz *f)
{
	unsigned int n = 0;

	for (unsigned int p = pci_cfg_get8(f->pdev, PCI_CFG_CAP_PTR);
	     p && n < 48; p = pci_cfg_get8(f->pdev, p + 1), n++) {
		if (pci_cfg_get8(f->pdev, p) != PCI_CAPID_MSIX)
			continue;
		f->msix_cap = p;
		f->table_off = pci_cfg_get32(f->pdev, p + MSIX_CAP_TABLE) & ~7u;
		f->pba_off = pci_cfg_get32(f->pdev, p + MSIX_CAP_PBA) & ~7u;
	}
	if (!f->msix_cap)
		abort();
	for (f->bar_size = 4096; f->bar_size < f->pba_off + 8 * ((f->nv + 63) / 64);)
		f->bar_size <<= 1;
}

int fuzz_virtio_pci(const uint8_t *data, size_t size)
{
	static struct blk_engine *eng;
	struct fz f;
	struct vblk_options o = { .num_queues = 1, .queue_size = 16 };
	struct vpci_params p;
	int fd_before;
	uint8_t setup, fail_at;

	fuzz_quiet_logs();
	if (!eng && blk_sync_engine_create(&eng))
		abort();
	memset(&f, 0, sizeof(f));
	f.in = (struct fuzz_in){ data, size };
	setup = fi_u8(&f.in);
	fail_at = fi_u8(&f.in);
	f.nq = 1 + (setup & 3);
	f.nv = f.nq + 1;
	memset(ram(), 0, RAM_SIZE);
	guest_mem_init_buf(&f.mem, ram(), RAM_SIZE);
	o.fd = fuzz_image(IMG_SIZE);
	o.num_queues = (uint16_t)f.nq;
	o.queue_size = (uint16_t)(4u << ((setup >> 2) & 3));
	if (o.fd < 0)
		abort();
	fd_before = fuzz_probe_fd(); /* after the image cache opened its memfd */
	if (vblk_open(&o, &f.dev.blk))
		abort();
	f.dev.eng = eng;
	f.dev.fail_start = (setup & 0xf0) == 0xf0;
	if (fv_init(&f.v, 3, MMIO_BASE, MMIO_SIZE, &f.mem) ||
	    pci_bus_set_ecam(f.v.bus, ECAM_BASE))
		abort();
	f.v.kvm->fail_at = fail_at;
	p = (struct vpci_params){
		.bus = f.v.bus, .irq = f.v.irq, .mem = &f.mem, .ops = &fd_ops,
		.dev = &f.dev, .num_queues = f.nq, .max_queue_size = o.queue_size,
		.ioeventfd_any_length = setup & 0x40,
		.coalesce_queue_regs = setup & 0x80,
	};
	if (vpci_create(&p, &f.v.t))
		abort();
	f.pdev = vpci_pci_device(f.v.t);
	f.bar = pci_bar_gpa(f.pdev, VPCI_BAR);
	find_msix(&f);

	for (unsigned int i = 0; i < MAX_ACTIONS && fi_left(&f.in); i++) {
		switch (fi_u8(&f.in) % A_NR) {
		case A_CFG:
			do_cfg(&f);
			break;
		case A_PIO_RAW:
			do_pio_raw(&f);
			break;
		case A_MMIO:
			do_mmio(&f);
			break;
		case A_INIT:
			do_init(&f);
			break;
		case A_STATUS:
			common_wr(&f, VIRTIO_PCI_COMMON_STATUS, fi_u8(&f.in), 1);
			break;
		case A_FAIL:
			f.v.kvm->fail_at = f.v.kvm->calls + 1 + fi_u8(&f.in) % 8;
			break;
		case A_KICK:
			do_kick(&f);
			break;
		case A_CFG_CHANGED:
			vpci_config_changed(f.v.t);
			break;
		case A_NEEDS_RESET:
			virtio_transport_needs_reset(f.v.t, "fuzz");
			break;
		case A_MSIX_CTRL:
			cfg_access(&f, f.pdev->slot, f.msix_cap + MSIX_CAP_CTRL, 2,
				   true, fi_u16(&f.in));
			break;
		case A_BAR_MOVE:
			do_bar_move(&f);
			break;
		}
		/* No vCPU thread runs here: the fields are stable. */
		if (f.v.t->w.live &&
		    f.v.t->w.zone_gpa[VPCI_ZONE_TABLE] != VQW_UNWIRED) {
			fprintf(stderr, "MSI-X table coalesced while live\n");
			abort();
		}
	}

	f.v.kvm->fail_at = 0; /* teardown must succeed */
	vpci_destroy(f.v.t);
	f.v.t = NULL;
	if (f.v.kvm->live_ioev || f.v.kvm->live_irqfd || f.dev.live) {
		/* KVM wiring or a started device outlived the transport */
		fprintf(stderr, "after vpci_destroy: %u ioeventfds, %u irqfds, device %s\n",
			f.v.kvm->live_ioev, f.v.kvm->live_irqfd,
			f.dev.live ? "started" : "stopped");
		abort();
	}
	fv_destroy(&f.v);
	vblk_close(f.dev.blk);
	if (fuzz_probe_fd() != fd_before)
		abort(); /* a file descriptor leaked */
	return 0;
}

FUZZ_TARGET(fuzz_virtio_pci)
