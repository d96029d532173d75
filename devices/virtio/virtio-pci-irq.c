/* SPDX-License-Identifier: MIT */
/*
 * virtio-pci transport, bottom layer: logging, interrupt delivery, and
 * where the queues' KVM wiring (vq-wiring.h) goes with the BAR.  See
 * virtio-pci-int.h for the files' order; the locking rules are at the top
 * of virtio-pci.c.
 *
 * Notify ioeventfds.  Every queue's kick eventfd exists from vpci_create()
 * and is registered with KVM (KVM_IOEVENTFD) on its notify address as soon
 * as the BAR is mapped -- at pci_register_device(), before the guest runs
 * -- enabled or not, whatever the driver does.  Each registration copies
 * KVM's I/O bus and waits for an SRCU grace period, which would make up
 * nearly all of a DRIVER_OK; done before the vCPUs run, the grace periods
 * have no reader to wait for, and DRIVER_OK only commits routes and
 * irqfds.  A kick that arrives while the queue is not running just counts
 * up in its eventfd: the device reads it as one spurious notification when
 * it starts (harmless in virtio).
 *
 * They move only when the BAR really moves.  Linux clears COMMAND.MEM
 * around the sizing of every BAR slot of every function at enumeration
 * and then restores the same address: undoing and redoing the
 * registrations each time would cost two per queue and BAR slot.  So an
 * unmapped BAR leaves them "parked" where they are; remapped at the same
 * address nothing happens, elsewhere one transaction moves them.  A parked
 * range must not swallow another device's accesses: the PCI bus calls
 * vpci_bar_range_taken() when any other BAR is mapped over it, and they
 * are dropped first.  While parked they can only catch writes to an
 * address nothing decodes (discarded on real hardware): at worst a
 * spurious notification.
 *
 * Coalesced registers.  The Linux driver sets each queue up with about 35
 * register accesses -- queue_select again before each field, the size, the
 * vector, three ring addresses in two halves, the enable, and the MSI-X
 * entry -- each an exit to us, which with one queue per vCPU and many
 * disks is most of the boot time the queues add.  A write nothing can
 * observe before the guest's next exit to us may be logged by KVM in the
 * coalesced ring instead of exiting: every exit drains the ring, in order,
 * before it is handled (vm.h).  Two zones per device (KVM allows 1000
 * devices on a VM's bus, zones included, so never one per queue or per
 * vector):
 *
 *  - the common configuration's queue registers, queue_select up to
 *    queue_device, always: they only store what the driver writes until a
 *    later access reads it back (an exit) or a status write (an exit:
 *    DRIVER_OK, reset) acts on it.  device_status and the notify area stay
 *    out (they act at once).
 *
 *  - the MSI-X table, only while the device is not live (from reset to
 *    DRIVER_OK).  A table write acts when an interrupt is raised: a mask
 *    must hold back the next one, an unmask must send what is pending.
 *    Before DRIVER_OK no queue runs, so the only interrupt the device can
 *    raise is a configuration change (vpci_config_irq(), from any thread),
 *    and the driver waits for none before DRIVER_OK.  One raised while an
 *    unmask still sits in the ring finds the vector masked and is left
 *    pending; the drain that applies the unmask (the guest's next exit --
 *    at the latest its DRIVER_OK write) sends it, as any unmask does
 *    (vpci_vector_changed()).  One raised while a mask or a message write
 *    sits in the ring goes out with the state before it, as on hardware
 *    when the interrupt is raised before the write arrives.  Linux masks
 *    the whole table, writes each queue's entry at least twice during its
 *    probe (activation and affinity) and unmasks each vector: about half
 *    of a queue's setup exits go.  vpci_go_live() removes the zone before
 *    the queues can raise anything, so from DRIVER_OK on every table write
 *    exits and acts at once; a reset brings it back.  (A table write
 *    another vCPU makes between the DRIVER_OK write's drain and the zone's
 *    removal is applied at the next exit: only a guest that races its own
 *    DRIVER_OK that way delays its own interrupts.)
 *
 * Each zone follows the BAR like the notify ioeventfds (parked while the
 * BAR is unmapped, dropped when another BAR takes the range).  If KVM
 * refuses one, the registers simply exit as before, for good.
 */
#include <linux/virtio_config.h>
#include <linux/virtio_pci.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "pci/msix.h"
#include "virtio/virtio-pci-int.h"
#include "virtio/virtio-pci.h"

static void vpci_vlog(struct virtio_transport *t, struct log_limit *l,
		      int level, const char *fmt, va_list ap)
{
	char subject[32];

	snprintf(subject, sizeof(subject), "virtio-pci 00:%02x.%u", t->pci.slot,
		 t->pci.fn);
	log_vlimited(l, level, subject, fmt, ap);
}

void vpci_log(struct virtio_transport *t, struct log_limit *l, int level,
	      const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vpci_vlog(t, l, level, fmt, ap);
	va_end(ap);
}

/* ---- what the wiring asks (struct vqw_owner_ops) --------------------------- */

static void vpci_w_get_msg(void *owner, unsigned int vec, uint64_t *addr,
			   uint32_t *data)
{
	struct virtio_transport *t = owner;

	msix_get_msg(&t->msix, vec, addr, data);
}

static bool vpci_w_masked(void *owner, unsigned int vec)
{
	struct virtio_transport *t = owner;

	return msix_vector_masked(&t->msix, vec);
}

/* Flushed and unmasked: second step of msix.c's unmask side. */
static void vpci_w_flushed(void *owner, unsigned int vec)
{
	struct virtio_transport *t = owner;

	if (msix_take_pending(&t->msix, vec))
		vpci_deliver(t, vec);
}

static void vpci_w_flush_failed(void *owner)
{
	vpci_set_needs_reset(owner, "KVM refused an MSI-X route update");
}

/* Not after a failed route update (NEEDS_RESET): the vectors stay dirty,
 * their interrupts direct, until the driver resets. */
static bool vpci_w_may_flush(void *owner)
{
	return !(vpci_status(owner) & VIRTIO_CONFIG_S_NEEDS_RESET);
}

/* Our PCI requester ID (bus 0): the device ID an ITS knows our MSIs by
 * (the device tree's msi-map is the identity). */
static uint32_t vpci_w_devid(void *owner)
{
	struct virtio_transport *t = owner;

	return PCI_DEVFN(t->pci.slot, t->pci.fn);
}

static void vpci_w_vlog(void *owner, struct log_limit *l, int level,
			const char *fmt, va_list ap)
{
	vpci_vlog(owner, l, level, fmt, ap);
}

const struct vqw_owner_ops vpci_wiring_ops = {
	.get_msg = vpci_w_get_msg,
	.masked = vpci_w_masked,
	.flushed = vpci_w_flushed,
	.flush_failed = vpci_w_flush_failed,
	.may_flush = vpci_w_may_flush,
	.devid = vpci_w_devid,
	.vlog = vpci_w_vlog,
};

/* ---- interrupts ---------------------------------------------------------- */

/* Send vector @vec's interrupt now that it is known to be unmasked and its
 * pending bit was taken.  Context: t->lock held. */
void vpci_deliver(struct virtio_transport *t, unsigned int vec)
{
	if (vqw_deliver(&t->w, vec)) {
		stat_add(&t->st.interrupts, 1);
		return;
	}
	vqw_send_msi(&t->w, vec, "");
	if (vec == __atomic_load_n(&t->config_vector, __ATOMIC_RELAXED))
		stat_add(&t->st.config_interrupts, 1);
	else
		stat_add(&t->st.interrupts, 1);
}

/* Configuration-change interrupt.  Context: any thread, lock-free. */
static void vpci_config_irq(struct virtio_transport *t)
{
	uint16_t vec;

	/* Seq-cst RMW: a vCPU's ISR read-and-clear (exchange) either sees
	 * the bit or clears an older one; nothing is ordered around it. */
	__atomic_fetch_or(&t->isr, VIRTIO_PCI_ISR_CONFIG, __ATOMIC_SEQ_CST);
	vec = __atomic_load_n(&t->config_vector, __ATOMIC_SEQ_CST);
	if (vec >= t->nv) /* VIRTIO_NO_VECTOR: no INTx to fall back to */
		return;
	/* Masked: left pending; vpci_vector_changed() sends it on unmask
	 * (msix.c explains why the race with the unmask cannot lose it). */
	if (!msix_try_fire(&t->msix, vec))
		return;
	vqw_send_msi(&t->w, vec, "");
	stat_add(&t->st.config_interrupts, 1);
}

void vpci_config_changed(struct virtio_transport *t)
{
	/* Seq-cst: a driver that reads the generation after the config
	 * interrupt sees the new value. */
	__atomic_fetch_add(&t->generation, 1, __ATOMIC_SEQ_CST);
	vpci_config_irq(t);
}

void vpci_set_needs_reset(struct virtio_transport *t, const char *why)
{
	uint8_t old;

	/* Seq-cst RMW; pairs with the CAS in vpci_store_status(). */
	old = __atomic_fetch_or(&t->status, VIRTIO_CONFIG_S_NEEDS_RESET,
				__ATOMIC_SEQ_CST);
	if (old & VIRTIO_CONFIG_S_NEEDS_RESET)
		return; /* logged once until reset */
	stat_add(&t->st.needs_reset, 1);
	/* The driver first (ISR and interrupt right behind the status bit),
	 * the log after.  Once per reset, and a guest may reset in a loop:
	 * rate-limited. */
	vpci_config_changed(t);
	vpci_log(t, &t->log_reset, VMM_LOG_ERROR, "device needs reset: %s", why);
}

void virtio_transport_needs_reset(struct virtio_transport *t, const char *why)
{
	vpci_set_needs_reset(t, why);
}

/*
 * Context: the queue's I/O thread; lock-free except the wiring's lazy
 * flush trylock.  @q->vector and @q->call_fd are fixed from before
 * ops->start() until ops->stop() returns.
 *
 * Race with the guest masking the vector: msix_try_fire() checks the mask
 * after publishing a pending bit, so an interrupt that races with a mask is
 * either sent (before the mask took effect, as on real hardware) or left
 * pending and sent by vpci_vector_changed() at the unmask, exactly once.
 * Once msix_try_fire() said "send it", this interrupt is ours alone;
 * vqw_fire() has the race with a message change.
 */
static void vpci_queue_notify(struct virtio_queue *q)
{
	struct virtio_transport *t = q->t;
	unsigned int vec = q->vector;

	if (vec >= t->nv || q->call_fd < 0) /* poll queue */
		return;
	if (!msix_try_fire(&t->msix, vec)) {
		stat_add(&t->st.interrupts_masked, 1);
		return;
	}
	vqw_fire(&t->w, vec, q->call_fd);
	stat_add(&t->st.interrupts, 1);
	stat_add(&t->vqs[q->index].interrupts, 1);
}

static void vpci_queue_needs_reset(struct virtio_queue *q, const char *why)
{
	vpci_set_needs_reset(q->t, why);
}

/* What the device calls through its queues (virtio.h). */
const struct virtio_transport_ops vpci_transport_ops = {
	.queue_notify = vpci_queue_notify,
	.needs_reset = vpci_queue_needs_reset,
};

/*
 * msix.c's notifier: @vec's message or effective mask changed.  Context:
 * vCPU thread, from a table write (MMIO, t->lock not held) or a message
 * control write (PCI bus lock held).  The wiring marks a changed message
 * dirty and, at an unmask, refreshes the routes (vqw_vector_changed());
 * then what the vector had pending goes out.
 */
void vpci_vector_changed(void *opaque, unsigned int vec)
{
	struct virtio_transport *t = opaque;
	bool masked;

	pthread_mutex_lock(&t->lock);
	masked = msix_vector_masked(&t->msix, vec);
	vqw_vector_changed(&t->w, vec, masked);
	/* Second step of the unmask side (msix.c).  Still dirty (the flush
	 * failed, or no unmask): vpci_deliver() goes direct. */
	if (!masked && msix_take_pending(&t->msix, vec))
		vpci_deliver(t, vec);
	pthread_mutex_unlock(&t->lock);
}

/* ---- where the wiring goes ----------------------------------------------- */

/*
 * Bring the notify ioeventfds to the BAR's address, in one transaction.  An
 * unmapped BAR parks them (above).  If KVM refuses, none is left anywhere:
 * kicks then take the MMIO path (vpci_bar_access(), slower but complete)
 * and the next DRIVER_OK tries again.  Context: t->lock held.
 */
void vpci_place_kicks(struct virtio_transport *t)
{
	int ret;

	if (t->bar_gpa == PCI_BAR_UNMAPPED)
		return;
	ret = vqw_place_kicks(&t->w, t->bar_gpa + VPCI_NOTIFY_OFF,
			      VPCI_NOTIFY_MULT);
	if (!ret)
		return;
	vpci_log(t, &t->w.log_kvm, VMM_LOG_WARN,
		 "placing notify ioeventfds at 0x%llx failed (%s); kicks "
		 "take the slow path", (unsigned long long)t->bar_gpa,
		 strerror(-ret));
	vqw_drop_kicks(&t->w); /* none left on an old address */
}

/* Bring the zones to the BAR in one transaction (parked while it is
 * unmapped; the table's only while the device is not live).  Context:
 * t->lock held. */
void vpci_place_zones(struct virtio_transport *t)
{
	uint64_t want[VPCI_NR_ZONES];
	int ret;

	if (t->bar_gpa == PCI_BAR_UNMAPPED)
		return;
	want[VPCI_ZONE_QREGS] = t->bar_gpa + VPCI_QREGS_OFF;
	want[VPCI_ZONE_TABLE] =
		t->w.live ? VQW_UNWIRED : t->bar_gpa + t->msix.table_off;
	ret = vqw_place_zones(&t->w, want);
	if (!ret)
		return;
	vpci_log(t, &t->w.log_kvm, VMM_LOG_INFO,
		 "coalescing registers at 0x%llx failed (%s); they exit as "
		 "usual", (unsigned long long)t->bar_gpa, strerror(-ret));
	vqw_stop_coalescing(&t->w); /* the rollback kept the old ones */
}

/* Another BAR took our parked range, or the transport goes: drop the
 * notify ioeventfds and the zones.  Context: t->lock held. */
void vpci_drop_wiring(struct virtio_transport *t)
{
	vqw_drop_kicks(&t->w);
	vqw_drop_zones(&t->w);
}
