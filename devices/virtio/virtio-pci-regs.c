/* SPDX-License-Identifier: MIT */
/*
 * virtio-pci transport: the register file -- the common configuration
 * structure, the BAR (common, ISR, device-specific, notify) and the PCI
 * configuration space hooks (the PCI_CFG capability window, bus
 * mastering, BAR moves), see virtio-pci-int.h for the files' order; the
 * locking rules are at the top of virtio-pci.c.
 */
#include <errno.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_pci.h>
#include <linux/virtio_ring.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "pci/msix.h"
#include "virtio/virtio-pci-int.h"
#include "virtio/virtio-pci.h"

/* ---- common configuration -------------------------------------------- */

/* The aligned dword at @off of the common configuration.  t->lock held. */
static uint32_t vpci_common_dword(struct virtio_transport *t, uint32_t off)
{
	bool qok = t->queue_select < t->nq;
	struct virtio_queue *q = qok ? &t->queues[t->queue_select] : NULL;
	struct vpci_vq *vq = qok ? &t->vqs[t->queue_select] : NULL;

	switch (off) {
	case VIRTIO_PCI_COMMON_DFSELECT:
		return t->dfselect;
	case VIRTIO_PCI_COMMON_DF:
		return t->dfselect < 2 ?
			       (uint32_t)(t->host_features >> (32 * t->dfselect)) :
			       0;
	case VIRTIO_PCI_COMMON_GFSELECT:
		return t->gfselect;
	case VIRTIO_PCI_COMMON_GF:
		return t->gfselect < 2 ? (uint32_t)(t->driver_features >>
						    (32 * t->gfselect)) :
					 0;
	case VIRTIO_PCI_COMMON_MSIX: /* + num_queues */
		return __atomic_load_n(&t->config_vector, __ATOMIC_RELAXED) |
		       (uint32_t)t->nq << 16;
	case VIRTIO_PCI_COMMON_STATUS: /* + generation + queue_select */
		return vpci_status(t) |
		       (uint32_t)__atomic_load_n(&t->generation,
						 __ATOMIC_SEQ_CST) << 8 |
		       (uint32_t)t->queue_select << 16;
	case VIRTIO_PCI_COMMON_Q_SIZE: /* + queue_msix_vector */
		return qok ? vq->size | (uint32_t)q->vector << 16 :
			     (uint32_t)VIRTIO_NO_VECTOR << 16;
	case VIRTIO_PCI_COMMON_Q_ENABLE: /* + queue_notify_off */
		return qok ? (uint32_t)q->enabled | (uint32_t)t->queue_select << 16 :
			     0;
	case VIRTIO_PCI_COMMON_Q_DESCLO:
		return qok ? (uint32_t)vq->desc : 0;
	case VIRTIO_PCI_COMMON_Q_DESCHI:
		return qok ? (uint32_t)(vq->desc >> 32) : 0;
	case VIRTIO_PCI_COMMON_Q_AVAILLO:
		return qok ? (uint32_t)vq->avail : 0;
	case VIRTIO_PCI_COMMON_Q_AVAILHI:
		return qok ? (uint32_t)(vq->avail >> 32) : 0;
	case VIRTIO_PCI_COMMON_Q_USEDLO:
		return qok ? (uint32_t)vq->used : 0;
	case VIRTIO_PCI_COMMON_Q_USEDHI:
		return qok ? (uint32_t)(vq->used >> 32) : 0;
	default:
		return 0;
	}
}

/* Natural width of the field at @off (0: no field starts there). */
static unsigned int vpci_common_width(uint32_t off)
{
	switch (off) {
	case VIRTIO_PCI_COMMON_DFSELECT:
	case VIRTIO_PCI_COMMON_DF:
	case VIRTIO_PCI_COMMON_GFSELECT:
	case VIRTIO_PCI_COMMON_GF:
	case VIRTIO_PCI_COMMON_Q_DESCLO:
	case VIRTIO_PCI_COMMON_Q_DESCHI:
	case VIRTIO_PCI_COMMON_Q_AVAILLO:
	case VIRTIO_PCI_COMMON_Q_AVAILHI:
	case VIRTIO_PCI_COMMON_Q_USEDLO:
	case VIRTIO_PCI_COMMON_Q_USEDHI:
		return 4;
	case VIRTIO_PCI_COMMON_MSIX:
	case VIRTIO_PCI_COMMON_NUMQ:
	case VIRTIO_PCI_COMMON_Q_SELECT:
	case VIRTIO_PCI_COMMON_Q_SIZE:
	case VIRTIO_PCI_COMMON_Q_MSIX:
	case VIRTIO_PCI_COMMON_Q_ENABLE:
	case VIRTIO_PCI_COMMON_Q_NOFF:
		return 2;
	case VIRTIO_PCI_COMMON_STATUS:
	case VIRTIO_PCI_COMMON_CFGGENERATION:
		return 1;
	default:
		return 0;
	}
}

static void vpci_set_addr_half(uint64_t *a, bool hi, uint32_t v)
{
	if (hi)
		*a = (*a & 0xffffffffull) | (uint64_t)v << 32;
	else
		*a = (*a & ~0xffffffffull) | v;
}

/* Write of a whole per-queue field, of the selected queue (natural width
 * checked by the caller).  Context: vCPU thread, t->lock held.  @v is
 * guest-controlled: each case validates it. */
static void vpci_queue_write_field(struct virtio_transport *t, uint32_t off,
				   uint32_t v)
{
	struct virtio_queue *q;
	struct vpci_vq *vq;

	if (t->queue_select >= t->nq)
		return;
	q = &t->queues[t->queue_select];
	vq = &t->vqs[t->queue_select];
	if (vpci_status(t) & VIRTIO_CONFIG_S_DRIVER_OK) {
		/* 4.1.4.3.2: the driver must not change a queue while the
		 * device is live; the rings are already in use. */
		vpci_log(t, &t->log_driver, VMM_LOG_WARN,
			 "queue %u configured after DRIVER_OK; ignored",
			 t->queue_select);
		return;
	}
	switch (off) {
	case VIRTIO_PCI_COMMON_Q_SIZE:
		if (!v || (v & (v - 1)) || v > t->max_qsize) {
			vpci_set_needs_reset(t, "queue_size not a power of two "
						"or above the maximum");
			return;
		}
		vq->size = (uint16_t)v;
		return;
	case VIRTIO_PCI_COMMON_Q_MSIX:
		q->vector = v < t->nv ? (uint16_t)v : VIRTIO_NO_VECTOR;
		return;
	case VIRTIO_PCI_COMMON_Q_ENABLE:
		if (v == 1) {
			q->enabled = true;
		} else {
			/* Writing 0 is reserved without VIRTIO_F_RING_RESET. */
			vpci_log(t, &t->log_driver, VMM_LOG_WARN,
				 "queue_enable %u ignored", v);
		}
		return;
	case VIRTIO_PCI_COMMON_Q_DESCLO:
	case VIRTIO_PCI_COMMON_Q_DESCHI:
		vpci_set_addr_half(&vq->desc, off == VIRTIO_PCI_COMMON_Q_DESCHI, v);
		return;
	case VIRTIO_PCI_COMMON_Q_AVAILLO:
	case VIRTIO_PCI_COMMON_Q_AVAILHI:
		vpci_set_addr_half(&vq->avail, off == VIRTIO_PCI_COMMON_Q_AVAILHI,
				   v);
		return;
	case VIRTIO_PCI_COMMON_Q_USEDLO:
	case VIRTIO_PCI_COMMON_Q_USEDHI:
		vpci_set_addr_half(&vq->used, off == VIRTIO_PCI_COMMON_Q_USEDHI, v);
		return;
	default:
		return; /* read-only */
	}
}

/* Write of a whole field (natural width checked by the caller).
 * Context: vCPU thread, t->lock held.  @v is guest-controlled: each case
 * validates it. */
static void vpci_common_write_field(struct virtio_transport *t, uint32_t off,
				    uint32_t v)
{
	switch (off) {
	case VIRTIO_PCI_COMMON_DFSELECT:
		t->dfselect = v; /* any value; >= 2 reads 0 */
		return;
	case VIRTIO_PCI_COMMON_GFSELECT:
		t->gfselect = v;
		return;
	case VIRTIO_PCI_COMMON_GF:
		/* Checked against the offer at FEATURES_OK; frozen after. */
		if (t->gfselect < 2 &&
		    !(vpci_status(t) & VIRTIO_CONFIG_S_FEATURES_OK))
			vpci_set_addr_half(&t->driver_features,
					   t->gfselect == 1, v);
		return;
	case VIRTIO_PCI_COMMON_MSIX:
		/* An unsupported vector reads back NO_VECTOR (4.1.4.3). */
		__atomic_store_n(&t->config_vector,
				 v < t->nv ? (uint16_t)v : VIRTIO_NO_VECTOR,
				 __ATOMIC_SEQ_CST);
		return;
	case VIRTIO_PCI_COMMON_STATUS:
		vpci_write_status(t, (uint8_t)v);
		return;
	case VIRTIO_PCI_COMMON_Q_SELECT:
		t->queue_select = (uint16_t)v; /* >= nq: queue fields read 0 */
		return;
	default:
		vpci_queue_write_field(t, off, v);
		return;
	}
}

/* Context: vCPU thread.  @off < VPCI_ISR_OFF, @len <= 8 (iobus). */
static void vpci_common_access(struct virtio_transport *t, uint32_t off,
			       uint8_t *data, uint32_t len, bool is_write)
{
	pthread_mutex_lock(&t->lock);
	if (!is_write) {
		/* Reads of any width and alignment: the bytes as laid out. */
		for (uint32_t i = 0; i < len; i++) {
			uint32_t b = off + i;

			data[i] = (uint8_t)(vpci_common_dword(t, b & ~3u) >>
					    (8 * (b & 3)));
		}
	} else if (len == 8 && (off == VIRTIO_PCI_COMMON_Q_DESCLO ||
				off == VIRTIO_PCI_COMMON_Q_AVAILLO ||
				off == VIRTIO_PCI_COMMON_Q_USEDLO)) {
		/* A 64-bit field in one access: as two halves. */
		uint32_t lo, hi;

		memcpy(&lo, data, 4);
		memcpy(&hi, data + 4, 4);
		vpci_common_write_field(t, off, lo);
		vpci_common_write_field(t, off + 4, hi);
	} else if (vpci_common_width(off) == len) {
		uint32_t v = 0;

		memcpy(&v, data, len);
		vpci_common_write_field(t, off, v);
	} else {
		/* 4.1.3.1: fields are written with their natural width. */
		vpci_log(t, &t->log_driver, VMM_LOG_WARN,
			 "%u-byte write at common+0x%x ignored", len, off);
	}
	pthread_mutex_unlock(&t->lock);
}

/* ---- BAR --------------------------------------------------------------- */

/* Context: vCPU thread, under the MMIO bus's read lock (or the PCI bus lock
 * through the PCI_CFG window).  @off is inside the BAR (iobus checked);
 * @len <= 8. */
void vpci_bar_access(void *opaque, uint64_t off, void *data,
			    uint32_t len, bool is_write)
{
	struct virtio_transport *t = opaque;
	uint8_t *p = data;

	/* Without t->lock: the table write may call vpci_vector_changed(). */
	if (msix_bar_access(&t->msix, off, data, len, is_write))
		return;
	if (!is_write)
		memset(data, 0, len);

	if (off < VPCI_ISR_OFF) {
		vpci_common_access(t, (uint32_t)off, p, len, is_write);
	} else if (off < VPCI_DEVCFG_OFF) {
		if (off == VPCI_ISR_OFF && !is_write)
			/* Read-to-clear; pairs with the fetch_or in
			 * vpci_config_irq(). */
			p[0] = __atomic_exchange_n(&t->isr, 0, __ATOMIC_SEQ_CST);
	} else if (off < VPCI_NOTIFY_OFF) {
		uint64_t c = off - VPCI_DEVCFG_OFF;

		/* Guest-controlled offset/length: bounds-checked here. */
		if (c >= t->ops->config_size || len > t->ops->config_size - c)
			return;
		pthread_mutex_lock(&t->lock);
		if (is_write)
			t->ops->config_write(t->dev, (uint32_t)c, data, len);
		else
			t->ops->config_read(t->dev, (uint32_t)c, data, len);
		pthread_mutex_unlock(&t->lock);
	} else if (off < VPCI_NOTIFY_OFF + t->notify_len && is_write) {
		/* A kick KVM did not catch (a width other than the
		 * ioeventfd's, or KVM refused the ioeventfds): forward it. */
		/* < nq: @off is inside the notify area (checked above). */
		uint64_t i = (off - VPCI_NOTIFY_OFF) / VPCI_NOTIFY_MULT;

		pthread_mutex_lock(&t->lock);
		if (t->w.live && t->queues[i].enabled)
			vqw_write_eventfd(t->queues[i].kick_fd);
		pthread_mutex_unlock(&t->lock);
	}
}

/* ---- PCI config space hooks ------------------------------------------- */

/*
 * VIRTIO_PCI_CAP_PCI_CFG window: an access to pci_cfg_data performs an
 * access of cap.length bytes at cap.offset in BAR cap.bar.  Context: vCPU
 * thread, PCI bus lock held.
 */
static void vpci_pcicfg_access(struct virtio_transport *t, bool is_write)
{
	unsigned int cap = t->pcicfg_cap;
	uint8_t bar = pci_cfg_get8(&t->pci, cap + VIRTIO_PCI_CAP_BAR);
	uint32_t off = pci_cfg_get32(&t->pci, cap + VIRTIO_PCI_CAP_OFFSET);
	uint32_t len = pci_cfg_get32(&t->pci, cap + VIRTIO_PCI_CAP_LENGTH);
	uint8_t *win = &t->pci.cfg[cap + VPCI_CAP_PCICFG_DATA];
	uint8_t buf[4];

	/* All three are guest-written: validated here (4.1.4.9.1). */
	if (bar != VPCI_BAR || (len != 1 && len != 2 && len != 4) ||
	    off % len || off >= t->bar_size || len > t->bar_size - off)
		return;
	if (is_write) {
		memcpy(buf, win, len);
		vpci_bar_access(t, off, buf, len, true);
	} else {
		vpci_bar_access(t, off, buf, len, false);
		memcpy(win, buf, len);
	}
}

static bool vpci_overlaps(uint32_t off, uint32_t len, uint32_t start,
			  uint32_t size)
{
	return off < start + size && start < off + len;
}

/*
 * The driver set or cleared COMMAND.MASTER (bus mastering).  A function
 * without it makes no memory requests: no DMA and no MSI-X (PCI 3.0).
 * Here, while it is off:
 *  - interrupts: every vector counts as masked (msix.h), so interrupts
 *    raised meanwhile are latched in the PBA and sent when mastering comes
 *    back; the irqfds stay wired but are only ever written after
 *    msix_try_fire() allowed it;
 *  - DMA: a live device is stopped (ops->stop(): in-flight requests are
 *    finished or cancelled -- virtio-blk completes a cancelled one with
 *    VIRTIO_BLK_S_IOERR, as at a reset -- and written to the used rings
 *    BEFORE this config write returns; nothing is popped or written
 *    afterwards); its wiring, ring positions and
 *    status (DRIVER_OK stays set) are kept.  Kicks meanwhile still reach
 *    the kick eventfds.  A DRIVER_OK while it is off wires the queues but
 *    starts nothing.
 * Turning it on again starts the device on the same queues (ops->start()
 * serves what is already available, kicks that came meanwhile included)
 * and sends every wired vector one interrupt: completions written by the
 * stop interrupted nobody (a stopped device drops them), and a virtio
 * driver takes a spurious interrupt in its stride.  If the device cannot
 * restart, it is unwired and NEEDS_RESET is set.  A reset keeps the
 * setting (it is the PCI function's, not the virtio device's).
 * Context: vCPU thread, PCI bus lock held (after msix_cfg_write()).
 */
static void vpci_bus_master(struct virtio_transport *t, bool on)
{
	int ret;

	pthread_mutex_lock(&t->lock);
	if (on == t->master)
		goto out;
	t->master = on;
	if (!t->w.live)
		goto out;
	if (!on) {
		if (t->started)
			t->ops->stop(t->dev); /* drains: see above */
		t->started = false;
		goto out;
	}
	ret = t->ops->start(t->dev, t->queues, t->nq);
	if (ret) {
		vpci_unwire(t);
		vpci_set_needs_reset(t, "the device failed to restart when bus "
					"mastering was turned back on");
		goto out;
	}
	t->started = true;
	for (unsigned int vec = 0; vec < t->nv; vec++)
		if (t->w.vecs[vec].users && msix_try_fire(&t->msix, vec))
			vpci_deliver(t, vec);
out:
	pthread_mutex_unlock(&t->lock);
}

static void vpci_cfg_write(struct pci_device *pdev, uint32_t off, uint32_t len)
{
	struct virtio_transport *t = pdev->priv;

	/* MSI-X first: with mastering off its vectors are masked before the
	 * device is stopped (its last interrupts are latched), and on again
	 * they are unmasked (and what was latched sent) before it starts. */
	msix_cfg_write(&t->msix, off, len);
	if (vpci_overlaps(off, len, PCI_CFG_COMMAND, 2))
		vpci_bus_master(t, pci_cfg_get16(pdev, PCI_CFG_COMMAND) &
					   PCI_CMD_MASTER);
	if (vpci_overlaps(off, len, t->pcicfg_cap + VPCI_CAP_PCICFG_DATA, 4))
		vpci_pcicfg_access(t, true);
}

static void vpci_cfg_read(struct pci_device *pdev, uint32_t off, uint32_t len,
			  uint32_t *val)
{
	struct virtio_transport *t = pdev->priv;

	if (!vpci_overlaps(off, len, t->pcicfg_cap + VPCI_CAP_PCICFG_DATA, 4))
		return;
	vpci_pcicfg_access(t, false);
	*val = 0;
	for (uint32_t i = 0; i < len; i++)
		*val |= (uint32_t)pdev->cfg[off + i] << (8 * i);
}

/* Context: vCPU thread or the (un)registering thread, PCI bus lock held. */
static void vpci_bar_moved(struct pci_device *pdev, unsigned int bar,
			   uint64_t old_gpa, uint64_t new_gpa)
{
	struct virtio_transport *t = pdev->priv;

	(void)old_gpa; /* we track where our ioeventfds really are */
	if (bar != VPCI_BAR)
		return;
	pthread_mutex_lock(&t->lock);
	t->bar_gpa = new_gpa;
	vpci_place_kicks(t); /* parks them if unmapped */
	vpci_place_zones(t); /* the same */
	pthread_mutex_unlock(&t->lock);
}

/* Another BAR was mapped over our parked notify ioeventfds and coalesced
 * zone.  Context: as vpci_bar_moved(). */
static void vpci_bar_range_taken(struct pci_device *pdev, unsigned int bar,
				 uint64_t gpa)
{
	struct virtio_transport *t = pdev->priv;

	(void)gpa;
	if (bar != VPCI_BAR)
		return;
	pthread_mutex_lock(&t->lock);
	if (t->bar_gpa == PCI_BAR_UNMAPPED)
		vpci_drop_wiring(t);
	pthread_mutex_unlock(&t->lock);
}

const struct pci_device_ops vpci_pci_ops = {
	.cfg_write = vpci_cfg_write,
	.cfg_read = vpci_cfg_read,
	.bar_moved = vpci_bar_moved,
	.bar_range_taken = vpci_bar_range_taken,
};
