/* SPDX-License-Identifier: MIT */
/*
 * Modern virtio-pci transport (see virtio-pci.h).
 *
 * BAR choice.  One 32-bit, non-prefetchable memory BAR holds everything:
 *  - non-prefetchable because ISR reads have a side effect (read-to-clear)
 *    and notify writes must never be merged or combined;
 *  - 32-bit because non-prefetchable windows behind bridges are 32-bit
 *    anyway and the bus always has a 32-bit window; the BAR is at most
 *    64 KiB (1024 queues), so it costs nothing there;
 *  - one BAR because one region is one iobus range and one bar_moved():
 *    a BAR move moves every notify ioeventfd in one transaction.  The MSI-X
 *    table and PBA still get pages of their own.
 *
 * INTx is not implemented (interrupt pin 0): queue interrupts need MSI-X,
 * so the ISR's queue bit (bit 0) is never set; bit 1 (configuration
 * change) is, and reading the ISR clears it.
 *
 * Locking (see also virtio-pci.h):
 *  - t->lock protects the driver-visible configuration (feature selects,
 *    driver features, queue configuration), the wiring (eventfds, GSIs,
 *    ioeventfd addresses, installed MSI messages, t->w.live), whether the
 *    device runs (t->started, t->master) and the cached BAR address.
 *    Lock order: PCI bus lock -> t->lock -> irq lock.  The MMIO handler
 *    runs under the MMIO bus's read lock and takes t->lock;
 *    with t->lock held we never call into the PCI bus (pci_bar_gpa() would
 *    deadlock against a vCPU moving a BAR), hence t->bar_gpa.
 *  - MSI-X table/PBA accesses are dispatched WITHOUT t->lock: msix.c calls
 *    vpci_vector_changed(), which takes it.
 *  - status, config_generation, isr, config_vector, the per-vector dirty
 *    flags and the counters are atomics so that the device's threads
 *    (virtio_queue_notify(), virtio_transport_needs_reset()) never block on
 *    t->lock: ops->stop() and ops->start() run with it held and wait for
 *    those threads.  The one exception is a TRYlock: see "Locking" in
 *    vq-wiring.h.
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

/* ---- create / destroy ------------------------------------------------- */

static int vpci_add_vndr_cap(struct virtio_transport *t, uint8_t type,
			     unsigned int size, uint32_t off, uint32_t len,
			     unsigned int *cap)
{
	int ret = pci_add_capability(&t->pci, PCI_CAPID_VNDR, size, cap);

	if (ret)
		return ret;
	pci_cfg_set8(&t->pci, *cap + VIRTIO_PCI_CAP_LEN, (uint8_t)size);
	pci_cfg_set8(&t->pci, *cap + VIRTIO_PCI_CAP_CFG_TYPE, type);
	pci_cfg_set8(&t->pci, *cap + VIRTIO_PCI_CAP_BAR, VPCI_BAR);
	pci_cfg_set32(&t->pci, *cap + VIRTIO_PCI_CAP_OFFSET, off);
	pci_cfg_set32(&t->pci, *cap + VIRTIO_PCI_CAP_LENGTH, len);
	return 0;
}

static uint32_t vpci_class(uint32_t device_id)
{
	switch (device_id) {
	case VIRTIO_ID_BLOCK:
		return VPCI_CLASS_STORAGE_OTHER;
	case VIRTIO_ID_NET:
		return VPCI_CLASS_NET_OTHER;
	case VIRTIO_ID_CONSOLE:
		return VPCI_CLASS_COMM_OTHER;
	default:
		return VPCI_CLASS_OTHER;
	}
}

static void vpci_logs_init(struct virtio_transport *t)
{
	log_limit_init(&t->log_reset, "'device needs reset' events");
	log_limit_init(&t->log_driver, "driver errors");
}

/* Summaries of what is still counted go out with the device. */
static void vpci_logs_destroy(struct virtio_transport *t)
{
	log_limit_destroy(&t->log_reset, "until the device was removed");
	log_limit_destroy(&t->log_driver, "until the device was removed");
}

static bool vpci_params_ok(const struct vpci_params *p)
{
	const struct virtio_device_ops *ops = p ? p->ops : NULL;

	if (!p || !p->bus || !p->irq || !p->mem || !ops || !ops->start ||
	    !ops->stop || !ops->features)
		return false;
	if (!p->num_queues || p->num_queues > VPCI_MAX_QUEUES ||
	    p->num_queues + 1 > MSIX_MAX_VECTORS)
		return false;
	if (!p->max_queue_size || p->max_queue_size > VIRTQ_MAX_SIZE ||
	    (p->max_queue_size & (p->max_queue_size - 1)))
		return false;
	if (ops->device_id > 0x3f || ops->config_size > VPCI_DEVCFG_MAX ||
	    (ops->config_size && (!ops->config_read || !ops->config_write)))
		return false;
	return true;
}

static void vpci_free(struct virtio_transport *t)
{
	vpci_logs_destroy(t);
	vqw_destroy(&t->w); /* the wiring's logs after the transport's */
	free(t->queues);
	free(t->vqs);
	free(t);
}

/* The transport's memory, its queues' kick eventfds and wiring state. */
static int vpci_alloc(const struct vpci_params *p, struct virtio_transport **out)
{
	struct virtio_transport *t = calloc(1, sizeof(*t));
	struct vqw_params wp = {
		.irq = p->irq,
		.ops = &vpci_wiring_ops,
		.any_len = p->ioeventfd_any_length,
		.per_vector = p->per_vector_wiring,
		.external = p->external_queues,
		.nr_zones = VPCI_NR_ZONES,
		.zone_len = { [VPCI_ZONE_QREGS] = VPCI_QREGS_LEN,
			      [VPCI_ZONE_TABLE] =
				      msix_table_size(p->num_queues + 1) },
		.coalesce = p->coalesce_queue_regs,
	};
	int ret;

	if (!t)
		return -ENOMEM;
	vpci_logs_init(t);
	t->bus = p->bus;
	t->irq = p->irq;
	t->mem = p->mem;
	t->ops = p->ops;
	t->dev = p->dev;
	t->nq = p->num_queues;
	t->nv = p->num_queues + 1;
	t->max_qsize = p->max_queue_size;
	t->bar_gpa = PCI_BAR_UNMAPPED;
	t->master = true; /* pci_register_device() sets COMMAND.MASTER */
	t->config_vector = VIRTIO_NO_VECTOR;
	t->queues = calloc(t->nq, sizeof(*t->queues));
	t->vqs = calloc(t->nq, sizeof(*t->vqs));
	wp.owner = t;
	wp.lock = &t->lock;
	wp.queues = t->queues;
	wp.nq = t->nq;
	wp.nv = t->nv;
	ret = t->queues && t->vqs ? vqw_init(&t->w, &wp) : -ENOMEM;
	if (ret) {
		vpci_free(t);
		return ret;
	}
	for (unsigned int i = 0; i < t->nq; i++) {
		t->queues[i].t = t;
		t->queues[i].t_ops = &vpci_transport_ops;
		t->queues[i].index = i;
	}
	vpci_queue_defaults(t);
	*out = t;
	return 0;
}

/* The virtio capabilities (common, notify, ISR, device, PCI_CFG window). */
static int vpci_add_caps(struct virtio_transport *t)
{
	unsigned int cap;
	int ret;

	ret = vpci_add_vndr_cap(t, VIRTIO_PCI_CAP_COMMON_CFG, VPCI_CAP_VNDR_LEN,
				VPCI_COMMON_OFF, VPCI_COMMON_LEN, &cap);
	if (!ret)
		ret = vpci_add_vndr_cap(t, VIRTIO_PCI_CAP_NOTIFY_CFG,
					VPCI_CAP_NOTIFY_LEN, VPCI_NOTIFY_OFF,
					t->notify_len, &cap);
	if (!ret) {
		pci_cfg_set32(&t->pci, cap + VIRTIO_PCI_NOTIFY_CAP_MULT,
			      VPCI_NOTIFY_MULT);
		ret = vpci_add_vndr_cap(t, VIRTIO_PCI_CAP_ISR_CFG,
					VPCI_CAP_VNDR_LEN, VPCI_ISR_OFF, 1, &cap);
	}
	if (!ret && t->ops->config_size)
		ret = vpci_add_vndr_cap(t, VIRTIO_PCI_CAP_DEVICE_CFG,
					VPCI_CAP_VNDR_LEN, VPCI_DEVCFG_OFF,
					t->ops->config_size, &cap);
	if (!ret)
		ret = vpci_add_vndr_cap(t, VIRTIO_PCI_CAP_PCI_CFG,
					VPCI_CAP_PCICFG_LEN, 0, 0,
					&t->pcicfg_cap);
	if (ret)
		return ret;
	/* The window's bar/offset/length/data are driver-writable. */
	pci_cfg_set_wmask(&t->pci, t->pcicfg_cap + VIRTIO_PCI_CAP_BAR, 1, 0xff);
	pci_cfg_set_wmask(&t->pci, t->pcicfg_cap + VIRTIO_PCI_CAP_OFFSET, 4,
			  0xffffffffu);
	pci_cfg_set_wmask(&t->pci, t->pcicfg_cap + VIRTIO_PCI_CAP_LENGTH, 4,
			  0xffffffffu);
	pci_cfg_set_wmask(&t->pci, t->pcicfg_cap + VPCI_CAP_PCICFG_DATA, 4,
			  0xffffffffu);
	return 0;
}

/* The PCI function: IDs, the BAR (layout: virtio-pci.h), capabilities,
 * MSI-X.  0 or -errno (then msix_init() has not run). */
static int vpci_build_function(struct virtio_transport *t, uint16_t subsys)
{
	uint32_t table_off, pba_off, end;
	uint16_t pci_id = (uint16_t)(VPCI_DEVICE_ID_BASE + t->ops->device_id);
	int ret;

	t->notify_len = t->nq * VPCI_NOTIFY_MULT;
	table_off = ALIGN_UP(VPCI_NOTIFY_OFF + t->notify_len, 4096u);
	pba_off = ALIGN_UP(table_off + msix_table_size(t->nv), 4096u);
	end = pba_off + msix_pba_size(t->nv);
	for (t->bar_size = 4096; t->bar_size < end; t->bar_size <<= 1)
		;

	pci_device_init(&t->pci, VPCI_VENDOR_ID, pci_id,
			vpci_class(t->ops->device_id), VPCI_REVISION,
			&vpci_pci_ops, t);
	pci_cfg_set16(&t->pci, PCI_CFG_SUBSYS_VENDOR, VPCI_VENDOR_ID);
	pci_cfg_set16(&t->pci, PCI_CFG_SUBSYS_ID, subsys ? subsys : pci_id);
	ret = pci_device_set_bar(&t->pci, VPCI_BAR, t->bar_size, 0,
				 vpci_bar_access, t);
	if (!ret)
		ret = vpci_add_caps(t);
	if (!ret)
		ret = msix_init(&t->msix, &t->pci, t->nv, VPCI_BAR, table_off,
				pba_off);
	return ret;
}

int vpci_create(const struct vpci_params *p, struct virtio_transport **out)
{
	struct virtio_transport *t;
	int ret;

	if (!out || !vpci_params_ok(p))
		return -EINVAL;
	ret = vpci_alloc(p, &t);
	if (ret)
		return ret;
	t->host_features = p->ops->features(p->dev) & ~VPCI_UNSUPPORTED_FEATURES;
	if (!(t->host_features & (1ull << VIRTIO_F_VERSION_1))) {
		vpci_free(t);
		return -EINVAL;
	}
	ret = -pthread_mutex_init(&t->lock, NULL);
	if (ret) {
		vpci_free(t);
		return ret;
	}
	ret = vpci_build_function(t, p->subsystem_id);
	if (ret)
		goto err_mutex;
	msix_set_notifier(&t->msix, vpci_vector_changed, t);
	ret = pci_register_device(p->bus, &t->pci);
	if (ret)
		goto err_msix;
	*out = t;
	return 0;

err_msix:
	msix_exit(&t->msix);
err_mutex:
	pthread_mutex_destroy(&t->lock);
	vpci_free(t);
	return ret;
}

void vpci_destroy(struct virtio_transport *t)
{
	if (!t)
		return;
	/* First off the bus (no more guest accesses; the notify ioeventfds
	 * are parked by bar_moved), then stop, unwire and drop them. */
	pci_unregister_device(t->bus, &t->pci);
	pthread_mutex_lock(&t->lock);
	vpci_stop(t);
	vpci_drop_wiring(t);
	pthread_mutex_unlock(&t->lock);
	msix_exit(&t->msix);
	pthread_mutex_destroy(&t->lock);
	vpci_free(t); /* closes the kick eventfds */
}

void vpci_shutdown(struct virtio_transport *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	if (t->started)
		t->ops->stop(t->dev); /* drains; no device thread runs after */
	t->started = false;
	/*
	 * Forget the registrations instead of undoing them: the VM fd they
	 * live in is closed next (vmm_destroy(), or a failed start's fresh
	 * VM), and KVM drops every irqfd (one workqueue flush for all of
	 * them), ioeventfd and coalesced zone with it.  Deassigned one by
	 * one they cost an SRCU grace period per ioeventfd and a workqueue
	 * flush per irqfd, which adds up to seconds with hundreds of queues.
	 * vqw_release() (from vpci_destroy()) then closes the call eventfds,
	 * which KVM still references until then.  The coalesced zones go
	 * with the VM too.
	 */
	vqw_forget(&t->w);
	pthread_mutex_unlock(&t->lock);
}

void vpci_quiesce(struct virtio_transport *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	vpci_stop(t);
	pthread_mutex_unlock(&t->lock);
}

void vpci_get_stats(struct virtio_transport *t, struct vpci_stats *st)
{
	struct vqw_stats ws;

	vqw_stats_read(&t->w, &ws);
	st->wiring_commits = ws.commits;
	st->wiring_ioctls = ws.ioctls;
	st->wiring_ns = ws.ns;
	st->interrupts_direct = ws.interrupts_direct;
	st->route_flushes = ws.route_flushes;
	st->route_flushes_lazy = ws.route_flushes_lazy;
	st->interrupts = __atomic_load_n(&t->st.interrupts, __ATOMIC_RELAXED);
	st->interrupts_masked =
		__atomic_load_n(&t->st.interrupts_masked, __ATOMIC_RELAXED);
	st->config_interrupts =
		__atomic_load_n(&t->st.config_interrupts, __ATOMIC_RELAXED);
	st->resets = __atomic_load_n(&t->st.resets, __ATOMIC_RELAXED);
	st->needs_reset = __atomic_load_n(&t->st.needs_reset, __ATOMIC_RELAXED);
	st->driver_ok_ns_max =
		__atomic_load_n(&t->st.driver_ok_ns_max, __ATOMIC_RELAXED);
}

int vpci_kick_fd(struct virtio_transport *t, unsigned int q)
{
	return q < t->nq ? t->queues[q].kick_fd : -1;
}

uint64_t vpci_queue_interrupts(struct virtio_transport *t, unsigned int q)
{
	if (q >= t->nq)
		return 0;
	return __atomic_load_n(&t->vqs[q].interrupts, __ATOMIC_RELAXED);
}

struct pci_device *vpci_pci_device(struct virtio_transport *t)
{
	return &t->pci;
}
