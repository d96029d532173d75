/* SPDX-License-Identifier: MIT */
/*
 * virtio-pci transport: the device status state machine -- reset,
 * FEATURES_OK, DRIVER_OK (the rings started, the queues wired in one
 * transaction, the device started) -- see virtio-pci-int.h for the files'
 * order; the locking rules are at the top of virtio-pci.c.
 */
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <pthread.h>

#include "log.h"
#include "pci/msix.h"
#include "virtio/virtio-pci-int.h"
#include "virtio/virtio-pci.h"

void vpci_queue_defaults(struct virtio_transport *t)
{
	for (unsigned int i = 0; i < t->nq; i++) {
		struct virtio_queue *q = &t->queues[i];
		struct vpci_vq *vq = &t->vqs[i];

		q->enabled = false;
		q->vector = VIRTIO_NO_VECTOR;
		vq->size = t->max_qsize;
		vq->desc = vq->avail = vq->used = 0;
	}
}

static void vpci_reset_rings(struct virtio_transport *t)
{
	for (unsigned int i = 0; i < t->nq; i++)
		virtq_reset(&t->queues[i].vq);
}

/* Remove the interrupt wiring in one transaction and reset the rings (the
 * kick eventfds and their ioeventfds stay: virtio-pci.h).  Context:
 * t->lock held, device stopped. */
void vpci_unwire(struct virtio_transport *t)
{
	vqw_unwire(&t->w);
	vpci_reset_rings(t);
}

/* Device reset (status 0, FAILED, destroy).  Context: t->lock held. */
void vpci_stop(struct virtio_transport *t)
{
	if (t->started)
		t->ops->stop(t->dev); /* drains; no device thread runs after */
	t->started = false;
	vpci_unwire(t);
}

static void vpci_reset(struct virtio_transport *t)
{
	vpci_stop(t);
	vpci_queue_defaults(t);
	t->dfselect = t->gfselect = 0;
	t->driver_features = 0;
	t->queue_select = 0;
	/* Interrupts the old driver instance had pending are moot; sending
	 * them to the next one would be spurious. */
	for (unsigned int v = 0; v < t->nv; v++)
		msix_take_pending(&t->msix, v);
	__atomic_store_n(&t->config_vector, VIRTIO_NO_VECTOR, __ATOMIC_SEQ_CST);
	__atomic_store_n(&t->isr, 0, __ATOMIC_SEQ_CST);
	/* No device thread runs any more, so nothing sets NEEDS_RESET
	 * concurrently (vpci_store_status()'s CAS is not needed): reset
	 * clears it. */
	__atomic_store_n(&t->status, 0, __ATOMIC_SEQ_CST);
	stat_add(&t->st.resets, 1);
}

/* FEATURES_OK: may the driver's selection stick?  Context: t->lock held. */
static bool vpci_features_ok(struct virtio_transport *t)
{
	uint64_t f = t->driver_features; /* guest-controlled: checked here */

	if (!(f & (1ull << VIRTIO_F_VERSION_1))) {
		vpci_log(t, &t->log_driver, VMM_LOG_INFO,
			 "driver did not accept VIRTIO_F_VERSION_1 (legacy "
			 "drivers unsupported)");
		return false;
	}
	if (f & ~t->host_features) {
		vpci_log(t, &t->log_driver, VMM_LOG_INFO,
			 "driver accepted features 0x%llx that were not offered",
			 (unsigned long long)(f & ~t->host_features));
		return false;
	}
	if (t->ops->set_features && t->ops->set_features(t->dev, f)) {
		vpci_log(t, &t->log_driver, VMM_LOG_INFO,
			 "device refused features 0x%llx", (unsigned long long)f);
		return false;
	}
	return true;
}

/* Start every enabled queue's ring; the guest's ring addresses are
 * validated here (alignment, inside RAM for the whole ring).  0 or -errno
 * with *why set.  Context: t->lock held. */
static int vpci_start_rings(struct virtio_transport *t, const char **why)
{
	bool event_idx = t->driver_features & (1ull << VIRTIO_RING_F_EVENT_IDX);
	bool indirect = t->driver_features & (1ull << VIRTIO_RING_F_INDIRECT_DESC);

	for (unsigned int i = 0; i < t->nq; i++) {
		struct virtio_queue *q = &t->queues[i];
		struct vpci_vq *vq = &t->vqs[i];
		int ret;

		if (!q->enabled)
			continue;
		ret = virtq_start(&q->vq, t->mem, vq->size, vq->desc, vq->avail,
				  vq->used, event_idx, indirect);
		if (!ret)
			continue;
		vpci_log(t, &t->log_driver, VMM_LOG_ERROR,
			 "queue %u: bad ring (size %u desc 0x%llx avail 0x%llx "
			 "used 0x%llx)", i, vq->size,
			 (unsigned long long)vq->desc,
			 (unsigned long long)vq->avail,
			 (unsigned long long)vq->used);
		*why = "ring address outside guest RAM or misaligned";
		return ret;
	}
	return 0;
}

/*
 * DRIVER_OK: start the rings, wire every enabled queue's interrupt (route
 * + irqfd) in one transaction, start the device.  The notify ioeventfds
 * are already in place (vpci_place_kicks()), so this is one
 * KVM_SET_GSI_ROUTING and an irqfd per vectored queue (vqw_wire()).  On
 * failure no interrupt is left wired.  Returns 0 or -errno, with *why set
 * for the log.  Context: vCPU thread, t->lock held.
 */
static int vpci_go_live(struct virtio_transport *t, const char **why)
{
	int ret;

	/* Table writes act at once from here on ("Coalesced registers" in
	 * virtio-pci-irq.c). */
	ret = vqw_move_zone(&t->w, VPCI_ZONE_TABLE, VQW_UNWIRED);
	if (ret) {
		*why = "KVM did not let the MSI-X table go uncoalesced";
		return ret;
	}
	ret = vpci_start_rings(t, why);
	if (ret) {
		vqw_release(&t->w, false);
		vpci_reset_rings(t);
		return ret;
	}
	/* Only if an earlier placement failed (kicks then take the MMIO
	 * path, which works): try again, outside the wiring transaction. */
	vpci_place_kicks(t);
	ret = vqw_wire(&t->w, why);
	if (ret) {
		vpci_reset_rings(t); /* the wiring is undone already */
		return ret;
	}
	/* Bus mastering off: the device may not touch guest memory yet; it
	 * starts when the driver turns mastering on (vpci_bus_master()). */
	if (!t->master)
		return 0;
	/* A failing start cleans up after itself (virtio_device_ops.start):
	 * no ops->stop() here. */
	ret = t->ops->start(t->dev, t->queues, t->nq);
	if (ret) {
		*why = "the device failed to start";
		vpci_unwire(t);
		return ret;
	}
	t->started = true;
	return 0;
}

/* DRIVER_OK written: go live, timed.  0 or -errno with *why set. */
static int vpci_driver_ok(struct virtio_transport *t, const char **why)
{
	uint64_t t0 = vpci_now_ns(), ns;
	int ret = vpci_go_live(t, why);

	ns = vpci_now_ns() - t0;
	/* Written under t->lock only; relaxed: a statistic. */
	if (ns > __atomic_load_n(&t->st.driver_ok_ns_max, __ATOMIC_RELAXED))
		__atomic_store_n(&t->st.driver_ok_ns_max, ns, __ATOMIC_RELAXED);
	return ret;
}

/* Context: vCPU thread, t->lock held.  @val is guest-controlled. */
void vpci_write_status(struct virtio_transport *t, uint8_t val)
{
	uint8_t old = vpci_status(t), added;
	const char *why = NULL;

	if (val == 0) {
		vpci_reset(t);
		vpci_place_zones(t); /* the MSI-X table's, for the next probe */
		return;
	}
	val &= (uint8_t)~VIRTIO_CONFIG_S_NEEDS_RESET; /* the device's bit */
	if (old & ~val & (uint8_t)~VIRTIO_CONFIG_S_NEEDS_RESET) {
		vpci_set_needs_reset(t, "driver cleared status bits without a reset");
		return;
	}
	added = val & (uint8_t)~old;
	if ((added & VIRTIO_CONFIG_S_FEATURES_OK) && !vpci_features_ok(t))
		val &= (uint8_t)~VIRTIO_CONFIG_S_FEATURES_OK;
	if (added & VIRTIO_CONFIG_S_DRIVER_OK) {
		val &= (uint8_t)~VIRTIO_CONFIG_S_DRIVER_OK;
		if (!(val & VIRTIO_CONFIG_S_FEATURES_OK) ||
		    (val & VIRTIO_CONFIG_S_FAILED)) {
			vpci_store_status(t, val);
			vpci_set_needs_reset(t, "DRIVER_OK without FEATURES_OK");
			return;
		}
		vpci_store_status(t, val);
		if (vpci_driver_ok(t, &why)) {
			vpci_set_needs_reset(t, why);
			return;
		}
		val |= VIRTIO_CONFIG_S_DRIVER_OK;
	}
	if ((added & VIRTIO_CONFIG_S_FAILED) && t->w.live)
		vpci_stop(t); /* the driver gave up: stop using its memory */
	vpci_store_status(t, val);
}
