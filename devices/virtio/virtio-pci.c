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
 *    ioeventfd addresses, installed MSI messages, t->live), whether the
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
 *    those threads.  The one exception is a TRYlock: see "MSI-X rewrites" in
 *    virtio-pci-irq.c.
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

void vpci_log(struct virtio_transport *t, struct log_limit *l, int level,
	      const char *fmt, ...)
{
	char subject[32];
	va_list ap;

	snprintf(subject, sizeof(subject), "virtio-pci 00:%02x.%u", t->pci.slot,
		 t->pci.fn);
	va_start(ap, fmt);
	log_vlimited(l, level, subject, fmt, ap);
	va_end(ap);
}

/* ---- state machine ----------------------------------------------------- */

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

/* Context: vCPU thread, t->lock held.  @val is guest-controlled. */
void vpci_write_status(struct virtio_transport *t, uint8_t val)
{
	uint8_t old = vpci_status(t), added;
	const char *why = NULL;
	uint64_t t0, ns;
	int ret;

	if (val == 0) {
		vpci_reset(t);
		vpci_place_zone(t); /* the MSI-X table's, for the next probe */
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
		t0 = vpci_now_ns();
		ret = vpci_go_live(t, &why);
		ns = vpci_now_ns() - t0;
		/* Written under t->lock only; relaxed: a statistic. */
		if (ns > __atomic_load_n(&t->st.driver_ok_ns_max, __ATOMIC_RELAXED))
			__atomic_store_n(&t->st.driver_ok_ns_max, ns,
					 __ATOMIC_RELAXED);
		if (ret) {
			vpci_set_needs_reset(t, why);
			return;
		}
		val |= VIRTIO_CONFIG_S_DRIVER_OK;
	}
	if ((added & VIRTIO_CONFIG_S_FAILED) && t->live)
		vpci_stop(t); /* the driver gave up: stop using its memory */
	vpci_store_status(t, val);
}

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
	log_limit_init(&t->log_msi, "failed MSI deliveries");
	log_limit_init(&t->log_kvm, "KVM wiring failures");
}

/* Summaries of what is still counted go out with the device. */
static void vpci_logs_destroy(struct virtio_transport *t)
{
	log_limit_destroy(&t->log_reset, "until the device was removed");
	log_limit_destroy(&t->log_driver, "until the device was removed");
	log_limit_destroy(&t->log_msi, "until the device was removed");
	log_limit_destroy(&t->log_kvm, "until the device was removed");
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

int vpci_create(const struct vpci_params *p, struct virtio_transport **out)
{
	struct virtio_transport *t;
	uint32_t table_off, pba_off, end, notify_end;
	unsigned int cap;
	uint16_t pci_id;
	int ret;

	if (!out || !vpci_params_ok(p))
		return -EINVAL;
	t = calloc(1, sizeof(*t));
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
	t->any_len = p->ioeventfd_any_length;
	t->per_vector = p->per_vector_wiring;
	t->coalesce = p->coalesce_queue_regs;
	for (unsigned int z = 0; z < VPCI_NR_ZONES; z++)
		t->zone_gpa[z] = VPCI_UNWIRED;
	t->host_features = p->ops->features(p->dev) & ~VPCI_UNSUPPORTED_FEATURES;
	if (!(t->host_features & (1ull << VIRTIO_F_VERSION_1))) {
		vpci_logs_destroy(t);
		free(t);
		return -EINVAL;
	}
	t->bar_gpa = PCI_BAR_UNMAPPED;
	t->master = true; /* pci_register_device() sets COMMAND.MASTER */
	t->config_vector = VIRTIO_NO_VECTOR;
	t->queues = calloc(t->nq, sizeof(*t->queues));
	t->vqs = calloc(t->nq, sizeof(*t->vqs));
	t->vecs = calloc(t->nv, sizeof(*t->vecs));
	if (!t->queues || !t->vqs || !t->vecs) {
		ret = -ENOMEM;
		goto err_free;
	}
	for (unsigned int i = 0; i < t->nq; i++) {
		t->queues[i].t = t;
		t->queues[i].t_ops = &vpci_transport_ops;
		t->queues[i].index = i;
		t->queues[i].kick_fd = t->queues[i].call_fd = -1;
		t->vqs[i].kick_addr = VPCI_UNWIRED;
	}
	for (unsigned int v = 0; v < t->nv; v++) {
		t->vecs[v].fire_fd = -1;
		t->vecs[v].seen_masked = true; /* msix_init() masks them all */
	}
	/* The same file for the transport's life: its ioeventfd is placed
	 * with the BAR, and a device may register it (e.g. with an io_uring
	 * file table) once. */
	for (unsigned int i = 0; i < t->nq; i++) {
		t->queues[i].kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (t->queues[i].kick_fd < 0) {
			ret = -errno;
			goto err_fds;
		}
	}
	vpci_queue_defaults(t);
	ret = -pthread_mutex_init(&t->lock, NULL);
	if (ret)
		goto err_fds;

	/* BAR layout: see virtio-pci.h. */
	t->notify_len = t->nq * VPCI_NOTIFY_MULT;
	notify_end = ALIGN_UP(VPCI_NOTIFY_OFF + t->notify_len, 4096u);
	table_off = notify_end;
	pba_off = ALIGN_UP(table_off + msix_table_size(t->nv), 4096u);
	end = pba_off + msix_pba_size(t->nv);
	for (t->bar_size = 4096; t->bar_size < end; t->bar_size <<= 1)
		;

	pci_id = (uint16_t)(VPCI_DEVICE_ID_BASE + p->ops->device_id);
	pci_device_init(&t->pci, VPCI_VENDOR_ID, pci_id,
			vpci_class(p->ops->device_id), VPCI_REVISION,
			&vpci_pci_ops, t);
	pci_cfg_set16(&t->pci, PCI_CFG_SUBSYS_VENDOR, VPCI_VENDOR_ID);
	pci_cfg_set16(&t->pci, PCI_CFG_SUBSYS_ID,
		      p->subsystem_id ? p->subsystem_id : pci_id);
	ret = pci_device_set_bar(&t->pci, VPCI_BAR, t->bar_size, 0,
				 vpci_bar_access, t);
	if (ret)
		goto err_mutex;

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
	if (!ret && p->ops->config_size)
		ret = vpci_add_vndr_cap(t, VIRTIO_PCI_CAP_DEVICE_CFG,
					VPCI_CAP_VNDR_LEN, VPCI_DEVCFG_OFF,
					p->ops->config_size, &cap);
	if (!ret)
		ret = vpci_add_vndr_cap(t, VIRTIO_PCI_CAP_PCI_CFG,
					VPCI_CAP_PCICFG_LEN, 0, 0,
					&t->pcicfg_cap);
	if (ret)
		goto err_mutex;
	/* The window's bar/offset/length/data are driver-writable. */
	pci_cfg_set_wmask(&t->pci, t->pcicfg_cap + VIRTIO_PCI_CAP_BAR, 1, 0xff);
	pci_cfg_set_wmask(&t->pci, t->pcicfg_cap + VIRTIO_PCI_CAP_OFFSET, 4,
			  0xffffffffu);
	pci_cfg_set_wmask(&t->pci, t->pcicfg_cap + VIRTIO_PCI_CAP_LENGTH, 4,
			  0xffffffffu);
	pci_cfg_set_wmask(&t->pci, t->pcicfg_cap + VPCI_CAP_PCICFG_DATA, 4,
			  0xffffffffu);

	ret = msix_init(&t->msix, &t->pci, t->nv, VPCI_BAR, table_off, pba_off);
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
err_fds:
	for (unsigned int i = 0; i < t->nq; i++)
		if (t->queues[i].kick_fd >= 0)
			close(t->queues[i].kick_fd);
err_free:
	vpci_logs_destroy(t);
	free(t->queues);
	free(t->vqs);
	free(t->vecs);
	free(t);
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
	vpci_drop_kicks(t);
	vpci_drop_zone(t);
	pthread_mutex_unlock(&t->lock);
	for (unsigned int i = 0; i < t->nq; i++)
		if (t->queues[i].kick_fd >= 0)
			close(t->queues[i].kick_fd);
	msix_exit(&t->msix);
	pthread_mutex_destroy(&t->lock);
	vpci_logs_destroy(t);
	free(t->queues);
	free(t->vqs);
	free(t->vecs);
	free(t);
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
	 * flush per irqfd: seconds at 384 queues.  vpci_release() (from
	 * vpci_destroy()) then closes the call eventfds, which KVM still
	 * references until then.
	 */
	for (unsigned int i = 0; i < t->nq; i++) {
		t->vqs[i].kick_addr = VPCI_UNWIRED;
		t->vqs[i].irq_wired = false;
	}
	/* The coalesced zones go with the VM too. */
	for (unsigned int z = 0; z < VPCI_NR_ZONES; z++)
		t->zone_gpa[z] = VPCI_UNWIRED;
	t->live = false;
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
	st->wiring_commits = __atomic_load_n(&t->st.wiring_commits, __ATOMIC_RELAXED);
	st->wiring_ioctls = __atomic_load_n(&t->st.wiring_ioctls, __ATOMIC_RELAXED);
	st->wiring_ns = __atomic_load_n(&t->st.wiring_ns, __ATOMIC_RELAXED);
	st->interrupts = __atomic_load_n(&t->st.interrupts, __ATOMIC_RELAXED);
	st->interrupts_masked =
		__atomic_load_n(&t->st.interrupts_masked, __ATOMIC_RELAXED);
	st->config_interrupts =
		__atomic_load_n(&t->st.config_interrupts, __ATOMIC_RELAXED);
	st->interrupts_direct =
		__atomic_load_n(&t->st.interrupts_direct, __ATOMIC_RELAXED);
	st->route_flushes = __atomic_load_n(&t->st.route_flushes, __ATOMIC_RELAXED);
	st->route_flushes_lazy =
		__atomic_load_n(&t->st.route_flushes_lazy, __ATOMIC_RELAXED);
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
