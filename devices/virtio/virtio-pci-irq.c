/* SPDX-License-Identifier: MIT */
/*
 * virtio-pci transport: interrupt delivery and the KVM wiring (the queues'
 * MSI routes, irqfds and notify ioeventfds), see virtio-pci-int.h; the
 * locking rules are at the top of virtio-pci.c.
 *
 * MSI-X rewrites.  A KVM route update (KVM_SET_GSI_ROUTING) costs an SRCU
 * grace period in the host kernel, so a message change never costs one per
 * table write:
 *  - rewritten while masked (what Linux does): the vector is marked dirty
 *    and every dirty vector is flushed in ONE transaction at the next
 *    unmask (entry mask, function mask or MSI-X enable) of any vector;
 *  - rewritten while unmasked (other guests; a hostile one looping on it):
 *    the vector is marked dirty and NOTHING else happens on the vCPU.
 *    While a vector is dirty its interrupts are sent with KVM_SIGNAL_MSI
 *    and the live table message (virtio_queue_notify(), vpci_deliver())
 *    instead of through the irqfd and its stale route: one decision per
 *    interrupt, so each is delivered exactly once, with the message the
 *    table holds.  The route is refreshed by the next unmask, or by the I/O
 *    thread once the vector has sent VPCI_LAZY_FLUSH_USES interrupts while
 *    dirty, at most once per VPCI_LAZY_FLUSH_INTERVAL_NS per transport
 *    (vpci_lazy_flush()).  10,000 unmasked rewrites thus cost no routing
 *    update at all, and a guest interleaving rewrites and interrupts gets
 *    at most one per VPCI_LAZY_FLUSH_USES interrupts and per interval.
 *
 * The I/O thread's flush takes t->lock with pthread_mutex_trylock(), never
 * blocking: a vCPU may hold t->lock while it waits for that very I/O thread
 * (ops->start()/ops->stop() post calls to I/O threads and wait for them,
 * possibly for another transport served by the same thread).  Holding
 * t->lock, the flush only takes the irq lock (order t->lock -> irq lock, as
 * on the vCPU path) and makes KVM ioctls and eventfd writes; no holder of
 * the irq lock waits for an I/O thread, and the flush never takes the PCI
 * or MMIO bus lock, calls a device op or waits for a thread.  So no cycle: at worst a vCPU waits
 * for one routing update.  A failed trylock just leaves the vector dirty.
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

/* ---- interrupts ---------------------------------------------------------- */

/* Our PCI requester ID (bus 0): the device ID an ITS knows our MSIs by
 * (the device tree's msi-map is the identity). */
static uint32_t vpci_devid(const struct virtio_transport *t)
{
	return PCI_DEVFN(t->pci.slot, t->pci.fn);
}

/*
 * KVM_SIGNAL_MSI with the message vector @vec holds now.  KVM refuses
 * (-EPERM, -EINVAL) what the guest's message asks for -- no vCPU matches
 * its destination, say -- which a guest chooses: rate-limited, not per
 * interrupt (an irqfd would drop it silently).  @what names the vector in
 * the message ("" or "rewritten ").
 */
static void vpci_send_msi(struct virtio_transport *t, unsigned int vec,
			  const char *what)
{
	uint64_t addr;
	uint32_t data;
	int ret;

	msix_get_msg(&t->msix, vec, &addr, &data);
	ret = irq_signal_msi(t->irq, addr, data, vpci_devid(t));
	if (ret)
		vpci_log(t, &t->log_msi, VMM_LOG_WARN,
			 "MSI for %svector %u (0x%llx/0x%x): %s", what, vec,
			 (unsigned long long)addr, data, strerror(-ret));
}

/*
 * Send an interrupt of dirty vector @vec with the message the table holds
 * now (its route is stale).  Context: any thread.  The caller loaded
 * v->dirty == 1 with a seq-cst (acquire) load, which pairs with the seq-cst
 * store in vpci_vector_changed() made after the guest's message stores on
 * that vCPU: the message read here is at least that new.
 */
static void vpci_send_direct(struct virtio_transport *t, unsigned int vec)
{
	vpci_send_msi(t, vec, "rewritten ");
	stat_add(&t->st.interrupts_direct, 1);
}

void vpci_write_eventfd(int fd)
{
	/* Fails only if the counter would overflow (2^64 - 2 unread
	 * signals): the guest is interrupted anyway. */
	if (eventfd_write(fd, 1))
		vmm_dbg("virtio-pci: eventfd %d write failed", fd);
}

/* Send vector @vec's interrupt now that it is known to be unmasked and its
 * pending bit was taken.  Context: t->lock held. */
void vpci_deliver(struct virtio_transport *t, unsigned int vec)
{
	struct vpci_vec *v = &t->vecs[vec];

	if (t->live && v->users) {
		if (__atomic_load_n(&v->dirty, __ATOMIC_SEQ_CST))
			vpci_send_direct(t, vec); /* the route is stale */
		else /* through the irqfd: KVM uses the installed route */
			vpci_write_eventfd(v->fire_fd);
		stat_add(&t->st.interrupts, 1);
		return;
	}
	vpci_send_msi(t, vec, "");
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
	vpci_send_msi(t, vec, "");
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

static void vpci_flush_routes(struct virtio_transport *t);

/*
 * Dirty vector @v just sent an interrupt with KVM_SIGNAL_MSI: once it has
 * sent VPCI_LAZY_FLUSH_USES of them, refresh the routes of every dirty,
 * unmasked vector in one transaction, so that the following interrupts go
 * through the irqfds again -- at most once per VPCI_LAZY_FLUSH_INTERVAL_NS
 * per transport, whatever the guest does.  Context: the queue's I/O thread
 * (or a thread draining the device); never blocks on t->lock (trylock: see
 * "MSI-X rewrites" at the top of this file for the lock-order argument).
 */
static void vpci_lazy_flush(struct virtio_transport *t, struct vpci_vec *v)
{
	uint64_t now;

	/* Relaxed: counters and a time gate, ordering nothing; t->lock
	 * orders the flush itself. */
	if (__atomic_add_fetch(&v->dirty_uses, 1, __ATOMIC_RELAXED) <
	    VPCI_LAZY_FLUSH_USES)
		return;
	now = vpci_now_ns();
	if (now < __atomic_load_n(&t->lazy_next_ns, __ATOMIC_RELAXED))
		return;
	if (pthread_mutex_trylock(&t->lock))
		return; /* a vCPU is in the transport: next time */
	/* Not after a failed route update (NEEDS_RESET): the vectors stay
	 * dirty, their interrupts direct, until the driver resets. */
	if (t->live && t->nr_dirty &&
	    !(vpci_status(t) & VIRTIO_CONFIG_S_NEEDS_RESET)) {
		__atomic_store_n(&t->lazy_next_ns,
				 now + VPCI_LAZY_FLUSH_INTERVAL_NS,
				 __ATOMIC_RELAXED);
		stat_add(&t->st.route_flushes_lazy, 1);
		vpci_flush_routes(t);
	}
	pthread_mutex_unlock(&t->lock);
}

/*
 * Context: the queue's I/O thread; lock-free except vpci_lazy_flush()'s
 * trylock.  @q->vector and @q->call_fd are fixed from before ops->start()
 * until ops->stop() returns.
 *
 * Race with the guest masking the vector: msix_try_fire() checks the mask
 * after publishing a pending bit, so an interrupt that races with a mask is
 * either sent (before the mask took effect, as on real hardware) or left
 * pending and sent by vpci_vector_changed() at the unmask, exactly once.
 *
 * Race with a message change: once msix_try_fire() said "send it", this
 * interrupt is ours alone and exactly one of two things sends it:
 *  - the vector is dirty (seq-cst load; pairs with the seq-cst stores in
 *    vpci_vector_changed() and vpci_flush_routes()): KVM_SIGNAL_MSI with
 *    the table's message, at least as new as the change that made it
 *    dirty (vpci_send_direct());
 *  - it is clean: the irqfd, whose route vpci_flush_routes() installed
 *    (KVM_SET_GSI_ROUTING had returned) before it stored dirty = 0.
 * A change whose table store we raced with but whose vector_changed has
 * not marked the vector dirty yet is concurrent with this interrupt, which
 * goes out with the previous message, as hardware may do.  That includes
 * the masked path: the guest rewrites a masked vector (dirty) and unmasks
 * it; between the unmask store and the flush, interrupts go direct.  (A
 * guest that changes the data and unmasks in ONE 8-byte table write is
 * marked dirty only after the unmask store: an interrupt in that window
 * uses the old message.)
 */
static void vpci_queue_notify(struct virtio_queue *q)
{
	struct virtio_transport *t = q->t;
	unsigned int vec = q->vector;
	struct vpci_vec *v;

	if (vec >= t->nv || q->call_fd < 0) /* poll queue */
		return;
	if (!msix_try_fire(&t->msix, vec)) {
		stat_add(&t->st.interrupts_masked, 1);
		return;
	}
	v = &t->vecs[vec];
	if (__atomic_load_n(&v->dirty, __ATOMIC_SEQ_CST)) {
		vpci_send_direct(t, vec);
		vpci_lazy_flush(t, v);
	} else {
		vpci_write_eventfd(q->call_fd);
	}
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

/* ---- wiring -------------------------------------------------------------- */

static uint32_t vpci_kick_len(const struct virtio_transport *t)
{
	return t->any_len ? 0 : 2; /* Linux's vp_notify() is iowrite16 */
}

static uint64_t vpci_notify_addr(const struct virtio_transport *t,
				 unsigned int i)
{
	return t->bar_gpa + VPCI_NOTIFY_OFF + (uint64_t)i * VPCI_NOTIFY_MULT;
}

/* Commit and account.  Context: t->lock held. */
static int vpci_commit(struct virtio_transport *t, struct wiring_txn *txn)
{
	struct irq_stats is;
	int ret = wiring_commit(txn);

	/* last_* belong to this commit unless another device committed in
	 * between (then the numbers are approximate). */
	irq_get_stats(t->irq, &is);
	stat_add(&t->st.wiring_commits, 1);
	stat_add(&t->st.wiring_ioctls, is.last_ioctls);
	stat_add(&t->st.wiring_ns, is.last_ns);
	return ret;
}

/*
 * Close the call eventfds, free the GSIs (unless their routes may still be
 * installed: @keep_gsis) and reset the rings.  No irqfd may be registered
 * with KVM any more (or, after a failed teardown, it is leaked there).
 * The kick eventfds and their ioeventfds stay (virtio-pci.h).
 * Context: t->lock held, device stopped.
 */
static void vpci_release(struct virtio_transport *t, bool keep_gsis)
{
	for (unsigned int i = 0; i < t->nq; i++) {
		struct virtio_queue *q = &t->queues[i];
		struct vpci_vq *vq = &t->vqs[i];

		if (q->call_fd >= 0)
			close(q->call_fd);
		q->call_fd = -1;
		if (q->gsi_valid && !keep_gsis)
			irq_gsi_free(t->irq, q->gsi);
		q->gsi_valid = false;
		vq->irq_wired = false; /* kick_addr: the ioeventfds stay */
		virtq_reset(&q->vq);
	}
	for (unsigned int v = 0; v < t->nv; v++) {
		t->vecs[v].users = 0;
		t->vecs[v].fire_fd = -1;
		t->vecs[v].flush = false;
		/* No notifier runs: the device is stopped. */
		__atomic_store_n(&t->vecs[v].dirty, 0, __ATOMIC_SEQ_CST);
	}
	t->nr_dirty = 0;
	t->live = false;
}

/* Stage the removal of every irqfd, and of the MSI routes if @routes
 * (the ioeventfds follow the BAR, not the driver).  Returns whether
 * anything was staged.  t->lock held. */
static bool vpci_stage_unwire(struct virtio_transport *t,
			      struct wiring_txn *txn, bool routes)
{
	bool any = false;

	for (unsigned int i = 0; i < t->nq; i++) {
		struct virtio_queue *q = &t->queues[i];
		struct vpci_vq *vq = &t->vqs[i];

		if (vq->irq_wired) {
			wiring_irqfd(txn, q->call_fd, q->gsi, false);
			if (routes)
				wiring_route(txn, q->gsi, false, 0, 0, 0);
			any = true;
		}
	}
	return any;
}

/* Remove every irqfd and route in one transaction, then release.
 * Context: t->lock held, device stopped. */
void vpci_unwire(struct virtio_transport *t)
{
	struct wiring_txn txn;
	int ret = 0;

	wiring_begin(&txn, t->irq);
	if (vpci_stage_unwire(t, &txn, true))
		ret = vpci_commit(t, &txn);
	else
		wiring_abort(&txn);
	if (ret) {
		/*
		 * The route update failed (KVM_SET_GSI_ROUTING: -ENOMEM) and
		 * the commit rolled the irqfd deassigns back.  Deassigning
		 * alone cannot fail for fds KVM holds: do it, so no irqfd
		 * stays on an eventfd we close.  Only the routes stay (found
		 * by tests/fuzz/fuzz_virtio_pci).
		 */
		wiring_begin(&txn, t->irq);
		vpci_stage_unwire(t, &txn, false);
		if (vpci_commit(t, &txn))
			vpci_log(t, &t->log_kvm, VMM_LOG_ERROR,
				 "removing the KVM irqfds failed");
		vpci_log(t, &t->log_kvm, VMM_LOG_ERROR,
			 "removing the KVM routes failed (%s); their GSIs are "
			 "leaked until the VM is destroyed", strerror(-ret));
	}
	vpci_release(t, ret != 0);
}


/*
 * DRIVER_OK: start the rings, wire every enabled queue's interrupt (route
 * + irqfd) in one transaction, start the device.  The notify ioeventfds
 * are already in place (vpci_place_kicks()), so this is one
 * KVM_SET_GSI_ROUTING and an irqfd per vectored queue (with
 * per_vector_wiring: one transaction, so one KVM_SET_GSI_ROUTING, per
 * vectored queue).  On failure no interrupt is left wired.  Returns 0 or
 * -errno, with *why set for the log.  Context: vCPU thread, t->lock held.
 */
int vpci_go_live(struct virtio_transport *t, const char **why)
{
	bool event_idx = t->driver_features & (1ull << VIRTIO_RING_F_EVENT_IDX);
	bool indirect = t->driver_features & (1ull << VIRTIO_RING_F_INDIRECT_DESC);
	struct wiring_txn txn;
	int ret;

	/* Table writes act at once from here on ("Coalesced registers"). */
	ret = vpci_unzone_table(t);
	if (ret) {
		*why = "KVM did not let the MSI-X table go uncoalesced";
		return ret;
	}
	for (unsigned int i = 0; i < t->nq; i++) {
		struct virtio_queue *q = &t->queues[i];
		struct vpci_vq *vq = &t->vqs[i];

		if (!q->enabled)
			continue;
		/* The guest's ring addresses are validated here (alignment,
		 * inside RAM for the whole ring). */
		ret = virtq_start(&q->vq, t->mem, vq->size, vq->desc, vq->avail,
				  vq->used, event_idx, indirect);
		if (ret) {
			vpci_log(t, &t->log_driver, VMM_LOG_ERROR,
				 "queue %u: bad ring (size %u desc 0x%llx "
				 "avail 0x%llx used 0x%llx)", i, vq->size,
				(unsigned long long)vq->desc,
				(unsigned long long)vq->avail,
				(unsigned long long)vq->used);
			*why = "ring address outside guest RAM or misaligned";
			goto err_release;
		}
		if (q->vector == VIRTIO_NO_VECTOR)
			continue; /* poll queue: no GSI, no irqfd */
		q->call_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (q->call_fd < 0) {
			ret = -errno;
			*why = "out of eventfds";
			goto err_release;
		}
		ret = irq_gsi_alloc(t->irq, &q->gsi);
		if (ret) {
			*why = "out of GSIs";
			goto err_release;
		}
		q->gsi_valid = true;
	}

	/* Only if an earlier placement failed (kicks then take the MMIO
	 * path, which works): try again, outside this transaction. */
	vpci_place_kicks(t);
	wiring_begin(&txn, t->irq);
	for (unsigned int i = 0; i < t->nq; i++) {
		struct virtio_queue *q = &t->queues[i];
		struct vpci_vec *v;

		if (!q->enabled || !q->gsi_valid)
			continue;
		v = &t->vecs[q->vector];
		if (!v->users++) {
			v->fire_fd = q->call_fd;
			msix_get_msg(&t->msix, q->vector, &v->addr, &v->data);
		}
		wiring_route(&txn, q->gsi, true, v->addr, v->data, vpci_devid(t));
		wiring_irqfd(&txn, q->call_fd, q->gsi, true);
		if (!t->per_vector)
			continue;
		/* The per-vector way, for comparisons: this queue alone,
		 * the whole route table resent.  On failure the queues
		 * already committed are unwired in one transaction. */
		ret = vpci_commit(t, &txn);
		if (ret) {
			*why = "KVM refused the interrupt/notification wiring";
			vpci_unwire(t);
			return ret;
		}
		t->vqs[i].irq_wired = true;
		wiring_begin(&txn, t->irq);
	}
	if (t->per_vector) {
		wiring_abort(&txn); /* empty */
	} else {
		ret = vpci_commit(t, &txn);
		if (ret) {
			*why = "KVM refused the interrupt/notification wiring";
			goto err_release;
		}
	}
	for (unsigned int i = 0; i < t->nq; i++) {
		struct virtio_queue *q = &t->queues[i];

		if (q->enabled)
			t->vqs[i].irq_wired = q->gsi_valid;
	}
	t->live = true;
	/* Bus mastering off: the device may not touch guest memory yet; it
	 * starts when the driver turns mastering on (vpci_bus_master()). */
	if (!t->master)
		return 0;
	/* A failing start cleans up after itself (vblk_dev_start() does):
	 * no ops->stop() here. */
	ret = t->ops->start(t->dev, t->queues, t->nq);
	if (ret) {
		*why = "the device failed to start";
		vpci_unwire(t);
		return ret;
	}
	t->started = true;
	return 0;

err_release:
	vpci_release(t, false);
	return ret;
}

/*
 * Route updates for every dirty vector that is now unmasked, in one
 * transaction; then deliver what they had pending.  Context: t->lock held.
 */
static void vpci_flush_routes(struct virtio_transport *t)
{
	struct wiring_txn txn;
	unsigned int nr = 0;
	int ret;

	for (unsigned int vec = 0; vec < t->nv; vec++) {
		struct vpci_vec *v = &t->vecs[vec];

		v->flush = __atomic_load_n(&v->dirty, __ATOMIC_RELAXED) &&
			   !msix_vector_masked(&t->msix, vec);
		if (!v->flush)
			continue;
		msix_get_msg(&t->msix, vec, &v->new_addr, &v->new_data);
		nr++;
	}
	if (!nr)
		return;
	wiring_begin(&txn, t->irq);
	for (unsigned int i = 0; i < t->nq; i++) {
		struct virtio_queue *q = &t->queues[i];
		struct vpci_vec *v;

		if (!t->vqs[i].irq_wired)
			continue;
		v = &t->vecs[q->vector];
		if (v->flush)
			wiring_route(&txn, q->gsi, true, v->new_addr, v->new_data,
				     vpci_devid(t));
	}
	ret = vpci_commit(t, &txn);
	if (ret) {
		/* The vectors stay dirty: their interrupts go direct. */
		vpci_set_needs_reset(t, "KVM refused an MSI-X route update");
		return;
	}
	stat_add(&t->st.route_flushes, 1);
	for (unsigned int vec = 0; vec < t->nv; vec++) {
		struct vpci_vec *v = &t->vecs[vec];

		if (!v->flush)
			continue;
		v->flush = false;
		v->addr = v->new_addr;
		v->data = v->new_data;
		/* Seq-cst store after the route is installed: a notifier
		 * that sees it clean uses the new route (argument above
		 * virtio_queue_notify()). */
		__atomic_store_n(&v->dirty, 0, __ATOMIC_SEQ_CST);
		t->nr_dirty--;
		/* Interrupts left pending while it was masked (it is
		 * unmasked now: second step of msix.c's unmask side). */
		if (msix_take_pending(&t->msix, vec))
			vpci_deliver(t, vec);
	}
}

/*
 * msix.c's notifier: @vec's message or effective mask changed.  Context:
 * vCPU thread, from a table write (MMIO, t->lock not held) or a message
 * control write (PCI bus lock held).
 *
 * A message change only marks the vector dirty, masked or not ("MSI-X
 * rewrites" at the top of this file).  An unmask -- this vector seen masked
 * at the previous call and unmasked now -- flushes every dirty unmasked
 * vector in one transaction (a function-mask clear or MSI-X enable calls
 * us for every vector: the first call flushes them all, the others find
 * nothing), then delivers what the vector had pending.
 */
void vpci_vector_changed(void *opaque, unsigned int vec)
{
	struct virtio_transport *t = opaque;
	struct vpci_vec *v = &t->vecs[vec];
	bool masked, unmasked;

	pthread_mutex_lock(&t->lock);
	if (t->live && v->users &&
	    !__atomic_load_n(&v->dirty, __ATOMIC_RELAXED)) {
		uint64_t addr;
		uint32_t data;

		msix_get_msg(&t->msix, vec, &addr, &data);
		if (addr != v->addr || data != v->data) {
			__atomic_store_n(&v->dirty_uses, 0, __ATOMIC_RELAXED);
			/* Seq-cst (a release of the message the guest
			 * stored before calling us): pairs with the load in
			 * virtio_queue_notify(); also seen there before the
			 * guest's later unmask (a seq-cst store). */
			__atomic_store_n(&v->dirty, 1, __ATOMIC_SEQ_CST);
			t->nr_dirty++;
		}
	}
	masked = msix_vector_masked(&t->msix, vec);
	unmasked = v->seen_masked && !masked;
	v->seen_masked = masked;
	if (!masked) {
		if (unmasked && t->nr_dirty)
			vpci_flush_routes(t);
		/* Second step of the unmask side (msix.c).  Still dirty (the
		 * flush failed, or no unmask): vpci_deliver() goes direct. */
		if (msix_take_pending(&t->msix, vec))
			vpci_deliver(t, vec);
	}
	pthread_mutex_unlock(&t->lock);
}

/*
 * Notify ioeventfds.  Every queue's kick eventfd exists from vpci_create()
 * and is registered with KVM (KVM_IOEVENTFD) on its notify address as soon
 * as the BAR is mapped -- at pci_register_device(), before the guest runs
 * -- enabled or not, whatever the driver does.  Each registration copies
 * KVM's I/O bus and waits for an SRCU grace period (~0.2 ms each in the
 * rig: 72 ms at 384 queues), which made up nearly all of a DRIVER_OK;
 * done before the vCPUs run, the grace periods have no reader to wait for,
 * and DRIVER_OK only commits routes and irqfds.  A kick that arrives while
 * the queue is not running just counts up in its eventfd: the device reads
 * it as one spurious notification when it starts (harmless in virtio).
 *
 * They move only when the BAR really moves.  Linux clears COMMAND.MEM
 * around the sizing of every BAR slot of every function at enumeration
 * (7 times per function) and then restores the same address: undoing and
 * redoing the registrations each time would cost 14 per queue.  So an
 * unmapped BAR leaves them "parked" where they are; remapped at the same
 * address nothing happens, elsewhere one transaction moves them.  A
 * parked range must not swallow another device's accesses: the PCI bus
 * calls vpci_bar_range_taken() when any other BAR is mapped over it, and
 * they are dropped first.  While parked they can only catch writes to an
 * address nothing decodes (discarded on real hardware): at worst a
 * spurious notification.
 */

/* Stage the deregistration of every registered notify ioeventfd.  Returns
 * whether anything was staged.  t->lock held. */
static bool vpci_stage_drop_kicks(struct virtio_transport *t,
				  struct wiring_txn *txn)
{
	bool any = false;

	for (unsigned int i = 0; i < t->nq; i++) {
		if (t->vqs[i].kick_addr == VPCI_UNWIRED)
			continue;
		wiring_ioeventfd(txn, t->queues[i].kick_fd, t->vqs[i].kick_addr,
				 vpci_kick_len(t), false, false);
		any = true;
	}
	return any;
}

/* Deregister every notify ioeventfd (cannot fail for fds KVM holds).
 * Context: t->lock held. */
void vpci_drop_kicks(struct virtio_transport *t)
{
	struct wiring_txn txn;

	wiring_begin(&txn, t->irq);
	if (!vpci_stage_drop_kicks(t, &txn)) {
		wiring_abort(&txn);
		return;
	}
	if (vpci_commit(t, &txn))
		vpci_log(t, &t->log_kvm, VMM_LOG_ERROR,
			 "removing the notify ioeventfds failed");
	for (unsigned int i = 0; i < t->nq; i++)
		t->vqs[i].kick_addr = VPCI_UNWIRED;
}

/*
 * Bring the notify ioeventfds to the BAR's address, in one transaction
 * (deregistrations first, so a move onto an overlapping range works).  An
 * unmapped BAR parks them (above).  If KVM refuses, none is left anywhere:
 * kicks then take the MMIO path (vpci_bar_access(), slower but complete)
 * and the next DRIVER_OK tries again.  Context: t->lock held.
 */
void vpci_place_kicks(struct virtio_transport *t)
{
	struct wiring_txn txn;
	bool any = false;
	int ret;

	if (t->bar_gpa == PCI_BAR_UNMAPPED)
		return;
	wiring_begin(&txn, t->irq);
	for (unsigned int i = 0; i < t->nq; i++) {
		struct vpci_vq *vq = &t->vqs[i];
		int fd = t->queues[i].kick_fd;

		if (vq->kick_addr == vpci_notify_addr(t, i))
			continue;
		if (vq->kick_addr != VPCI_UNWIRED)
			wiring_ioeventfd(&txn, fd, vq->kick_addr,
					 vpci_kick_len(t), false, false);
		wiring_ioeventfd(&txn, fd, vpci_notify_addr(t, i),
				 vpci_kick_len(t), false, true);
		any = true;
	}
	if (!any) {
		wiring_abort(&txn);
		return;
	}
	ret = vpci_commit(t, &txn);
	if (ret) {
		vpci_log(t, &t->log_kvm, VMM_LOG_WARN,
			 "placing notify ioeventfds at 0x%llx failed (%s); kicks "
			 "take the slow path", (unsigned long long)t->bar_gpa,
			 strerror(-ret));
		vpci_drop_kicks(t); /* none left on an old address */
		return;
	}
	for (unsigned int i = 0; i < t->nq; i++)
		t->vqs[i].kick_addr = vpci_notify_addr(t, i);
}

/*
 * Coalesced registers.  The Linux driver sets each queue up with about 35
 * register accesses -- queue_select again before each field, the size, the
 * vector, three ring addresses in two halves, the enable, and the MSI-X
 * entry -- each an exit to us: 3,232 queues (101 disks x 32) are ~113,000
 * exits, most of the boot time one queue per vCPU adds in the rig.  A
 * write nothing can observe before the guest's next exit to us may be
 * logged by KVM in the coalesced ring instead of exiting: every exit
 * drains the ring, in order, before it is handled (vm.h).  Two zones per
 * device (KVM allows 1000 devices on a VM's bus, zones included, so never
 * one per queue or per vector):
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
 *    probe (activation and affinity: address, upper address, data, around
 *    a mask when unmasked) and unmasks each vector: 32 vCPUs x 101 disks
 *    boot with 33,633 MMIO exits instead of 70,296, ~11 fewer a queue of
 *    its ~22 (the reads stay exits).  vpci_go_live() removes
 *    the zone before the queues can raise anything, so from DRIVER_OK on
 *    every table write exits and acts at once; a reset brings it back.
 *    (A table write another vCPU makes between the DRIVER_OK write's drain
 *    and the zone's removal is applied at the next exit: only a guest that
 *    races its own DRIVER_OK that way delays its own interrupts.)
 *
 * Each zone follows the BAR like the notify ioeventfds (parked while the
 * BAR is unmapped, dropped when another BAR takes the range).  If KVM
 * refuses one, the registers simply exit as before, for good.
 */
#define VPCI_QREGS_OFF (VPCI_COMMON_OFF + VIRTIO_PCI_COMMON_Q_SELECT)
#define VPCI_QREGS_LEN \
	(VIRTIO_PCI_COMMON_Q_USEDHI + 4 - VIRTIO_PCI_COMMON_Q_SELECT)

static uint32_t vpci_zone_len(const struct virtio_transport *t, unsigned int z)
{
	return z == VPCI_ZONE_QREGS ? VPCI_QREGS_LEN : msix_table_size(t->nv);
}

/* Where zone @z belongs with the BAR mapped.  t->lock held. */
static uint64_t vpci_zone_want(const struct virtio_transport *t,
			       unsigned int z)
{
	if (z == VPCI_ZONE_QREGS)
		return t->bar_gpa + VPCI_QREGS_OFF;
	return t->live ? VPCI_UNWIRED : t->bar_gpa + t->msix.table_off;
}

/* Stage moving zone @z from where it is to @want (VPCI_UNWIRED:
 * nowhere).  Returns whether anything was staged. */
static bool vpci_stage_zone(struct virtio_transport *t, struct wiring_txn *txn,
			    unsigned int z, uint64_t want)
{
	uint32_t len = vpci_zone_len(t, z);

	if (t->zone_gpa[z] == want)
		return false;
	if (t->zone_gpa[z] != VPCI_UNWIRED)
		wiring_coalesce(txn, t->zone_gpa[z], len, false);
	if (want != VPCI_UNWIRED)
		wiring_coalesce(txn, want, len, true);
	return true;
}

/* Remove the zones, wherever they are (cannot fail for zones KVM holds).
 * Context: t->lock held. */
void vpci_drop_zone(struct virtio_transport *t)
{
	struct wiring_txn txn;
	bool any = false;

	wiring_begin(&txn, t->irq);
	for (unsigned int z = 0; z < VPCI_NR_ZONES; z++)
		any |= vpci_stage_zone(t, &txn, z, VPCI_UNWIRED);
	if (!any) {
		wiring_abort(&txn);
		return;
	}
	if (vpci_commit(t, &txn))
		vpci_log(t, &t->log_kvm, VMM_LOG_ERROR,
			 "removing the coalesced zones failed");
	for (unsigned int z = 0; z < VPCI_NR_ZONES; z++)
		t->zone_gpa[z] = VPCI_UNWIRED;
}

/* Stop coalescing the MSI-X table: before DRIVER_OK lets the queues raise
 * interrupts (see above).  0 or -errno (the zone is still there).
 * Context: t->lock held. */
int vpci_unzone_table(struct virtio_transport *t)
{
	struct wiring_txn txn;
	int ret;

	wiring_begin(&txn, t->irq);
	if (!vpci_stage_zone(t, &txn, VPCI_ZONE_TABLE, VPCI_UNWIRED)) {
		wiring_abort(&txn);
		return 0;
	}
	ret = vpci_commit(t, &txn);
	if (!ret)
		t->zone_gpa[VPCI_ZONE_TABLE] = VPCI_UNWIRED;
	return ret;
}

/* Bring the zones to the BAR in one transaction (parked while it is
 * unmapped; the table's only while the device is not live).  Context:
 * t->lock held. */
void vpci_place_zone(struct virtio_transport *t)
{
	uint64_t want[VPCI_NR_ZONES];
	struct wiring_txn txn;
	bool any = false;
	int ret;

	if (!t->coalesce || t->bar_gpa == PCI_BAR_UNMAPPED)
		return;
	wiring_begin(&txn, t->irq);
	for (unsigned int z = 0; z < VPCI_NR_ZONES; z++) {
		want[z] = vpci_zone_want(t, z);
		any |= vpci_stage_zone(t, &txn, z, want[z]);
	}
	if (!any) {
		wiring_abort(&txn);
		return;
	}
	ret = vpci_commit(t, &txn);
	if (!ret) {
		for (unsigned int z = 0; z < VPCI_NR_ZONES; z++)
			t->zone_gpa[z] = want[z];
		return;
	}
	vpci_log(t, &t->log_kvm, VMM_LOG_INFO,
		 "coalescing registers at 0x%llx failed (%s); they exit as "
		 "usual", (unsigned long long)t->bar_gpa, strerror(-ret));
	t->coalesce = false;
	vpci_drop_zone(t); /* the rollback kept the old ones */
}
