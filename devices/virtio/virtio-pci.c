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
 *    those threads.  The one exception is a TRYlock: see "MSI-X rewrites".
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
 * (ops->start()/ops->stop() -> iothread_call_sync(), possibly for another
 * transport served by the same thread).  Holding t->lock, the flush only
 * takes the irq lock (order t->lock -> irq lock, as on the vCPU path) and
 * makes KVM ioctls and eventfd writes; no holder of the irq lock waits for
 * an I/O thread, and the flush never takes the PCI or MMIO bus lock, calls
 * a device op or waits for a thread.  So no cycle: at worst a vCPU waits
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
#include "virtio/virtio-pci.h"

/* Transport features we do not implement (virtio 1.2 section 6): never
 * offered, whatever the device says. */
#define VPCI_F_ACCESS_PLATFORM 33
#define VPCI_F_RING_PACKED 34
#define VPCI_F_SR_IOV 37
#define VPCI_F_NOTIFICATION_DATA 38
#define VPCI_F_NOTIF_CONFIG_DATA 39
#define VPCI_F_RING_RESET 40
#define VPCI_F_ADMIN_VQ 41
#define VPCI_UNSUPPORTED_FEATURES                                     \
	((1ull << VPCI_F_ACCESS_PLATFORM) | (1ull << VPCI_F_RING_PACKED) | \
	 (1ull << VPCI_F_SR_IOV) | (1ull << VPCI_F_NOTIFICATION_DATA) |    \
	 (1ull << VPCI_F_NOTIF_CONFIG_DATA) | (1ull << VPCI_F_RING_RESET) | \
	 (1ull << VPCI_F_ADMIN_VQ))

#define VPCI_CLASS_STORAGE_OTHER 0x018000
#define VPCI_CLASS_NET_OTHER 0x020000
#define VPCI_CLASS_COMM_OTHER 0x078000
#define VPCI_CLASS_OTHER 0xff0000

#define VPCI_UNWIRED UINT64_MAX /* no ioeventfd registered */

#define VPCI_CAP_VNDR_LEN 16	/* struct virtio_pci_cap */
#define VPCI_CAP_NOTIFY_LEN 20	/* struct virtio_pci_notify_cap */
#define VPCI_CAP_PCICFG_LEN 20	/* struct virtio_pci_cfg_cap */
#define VPCI_CAP_PCICFG_DATA 16 /* pci_cfg_data in it */

/* Transport side of one queue. */
struct vpci_vq {
	/* Driver-written (t->lock).  Guest-controlled: size validated on
	 * write, the addresses by virtq_start() at DRIVER_OK. */
	uint16_t size;
	uint64_t desc, avail, used;
	/* Wiring (t->lock). */
	uint64_t kick_addr; /* where kick_fd is an ioeventfd, or VPCI_UNWIRED
			       (see "Notify ioeventfds" above vpci_place_kicks()) */
	bool irq_wired;	    /* route + irqfd installed for gsi/call_fd */
	uint64_t interrupts; /* __atomic only */
};

/* One MSI-X vector as the queues' KVM routes see it. */
struct vpci_vec {
	/* t->lock. */
	unsigned int users; /* wired queues using it */
	int fire_fd;	    /* call_fd of one of them */
	uint64_t addr;	    /* message installed in their routes */
	uint32_t data;
	bool flush;	    /* scratch for vpci_flush_routes() */
	uint64_t new_addr;
	uint32_t new_data;
	/* Mask state at the last vector_changed call: an unmask is a change
	 * from masked to unmasked (t->lock). */
	bool seen_masked;
	/* __atomic only: the table message differs from the routes.  Set
	 * and cleared under t->lock, read by virtio_queue_notify(). */
	uint8_t dirty;
	/* __atomic only: interrupts sent with KVM_SIGNAL_MSI since the
	 * vector became dirty (a heuristic: races only shift the flush). */
	uint32_t dirty_uses;
};

struct virtio_transport {
	struct pci_device pci;
	struct msix msix;
	/* Constant after create. */
	struct pci_bus *bus;
	struct vm_irq *irq;
	const struct guest_mem *mem;
	const struct virtio_device_ops *ops;
	void *dev;
	unsigned int nq, nv;
	uint16_t max_qsize;
	bool any_len;
	uint64_t host_features;
	uint32_t bar_size, notify_len;
	unsigned int pcicfg_cap;

	/* Protects the fields up to the atomics below (see top of file). */
	pthread_mutex_t lock;
	uint64_t bar_gpa; /* from bar_moved(); PCI_BAR_UNMAPPED if off */
	uint32_t dfselect, gfselect;
	uint64_t driver_features;
	uint16_t queue_select;
	bool live;    /* wired (and started, unless bus mastering is off) */
	bool started; /* ops->start() succeeded, ops->stop() not called yet */
	bool master;  /* COMMAND.MASTER as last seen (see vpci_bus_master()) */
	unsigned int nr_dirty;
	struct virtio_queue *queues; /* [nq], handed to ops->start() */
	struct vpci_vq *vqs;	     /* [nq] */
	struct vpci_vec *vecs;	     /* [nv] */

	/* __atomic only.  Written by the driver path under t->lock and by
	 * virtio_transport_needs_reset() from any thread. */
	uint8_t status;
	uint64_t lazy_next_ns;	/* no I/O-thread route flush before this */
	uint8_t generation;
	uint8_t isr;
	uint16_t config_vector;
	struct vpci_stats st;

	/*
	 * Every message the guest can cause goes through one of these (log.h:
	 * the first of a burst in full, then "N more ..." summaries), so a
	 * driver that loops on a mistake cannot flood the log.  Own locks;
	 * usable from any thread.
	 */
	struct log_limit log_reset;  /* "device needs reset: ..." */
	struct log_limit log_driver; /* driver mistakes: bad ring, features,
					register misuse */
	struct log_limit log_msi;    /* MSI deliveries KVM refused */
	struct log_limit log_kvm;    /* wiring KVM refused (host trouble a
					guest can repeat at will) */
};

static void stat_add(uint64_t *c, uint64_t n)
{
	/* Relaxed: a statistic, orders nothing. */
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/* A guest-triggerable message, rate-limited through @l. */
static void vpci_log(struct virtio_transport *t, struct log_limit *l,
		     int level, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void vpci_log(struct virtio_transport *t, struct log_limit *l,
		     int level, const char *fmt, ...)
{
	char subject[32];
	va_list ap;

	snprintf(subject, sizeof(subject), "virtio-pci 00:%02x.%u", t->pci.slot,
		 t->pci.fn);
	va_start(ap, fmt);
	log_vlimited(l, level, subject, fmt, ap);
	va_end(ap);
}

static uint8_t vpci_status(const struct virtio_transport *t)
{
	return __atomic_load_n(&t->status, __ATOMIC_SEQ_CST);
}

/* Store a driver-written status, keeping a NEEDS_RESET that a device
 * thread may set concurrently (pairs with the fetch_or in
 * vpci_set_needs_reset()). */
static void vpci_store_status(struct virtio_transport *t, uint8_t val)
{
	uint8_t old = vpci_status(t);

	while (!__atomic_compare_exchange_n(
		&t->status, &old,
		(uint8_t)(val | (old & VIRTIO_CONFIG_S_NEEDS_RESET)), false,
		__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
}

/* ---- interrupts ---------------------------------------------------------- */

static void vpci_send_msi(struct virtio_transport *t, unsigned int vec)
{
	uint64_t addr;
	uint32_t data;
	int ret;

	msix_get_msg(&t->msix, vec, &addr, &data);
	ret = irq_signal_msi(t->irq, addr, data);
	/* KVM refuses (-EPERM, -EINVAL) what the guest's message asks for:
	 * rate-limited, the guest may make every interrupt fail. */
	if (ret)
		vpci_log(t, &t->log_msi, VMM_LOG_WARN,
			 "MSI for vector %u (0x%llx/0x%x): %s", vec,
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
	uint64_t addr;
	uint32_t data;
	int ret;

	msix_get_msg(&t->msix, vec, &addr, &data);
	ret = irq_signal_msi(t->irq, addr, data);
	/* KVM fails it (-EPERM) when no vCPU matches the destination, which
	 * a guest chooses: rate-limited, not per interrupt (an irqfd would
	 * drop it silently). */
	if (ret)
		vpci_log(t, &t->log_msi, VMM_LOG_WARN,
			 "MSI for rewritten vector %u (0x%llx/0x%x): %s", vec,
			 (unsigned long long)addr, data, strerror(-ret));
	stat_add(&t->st.interrupts_direct, 1);
}

static void vpci_write_eventfd(int fd)
{
	/* Fails only if the counter would overflow (2^64 - 2 unread
	 * signals): the guest is interrupted anyway. */
	if (eventfd_write(fd, 1))
		vmm_dbg("virtio-pci: eventfd %d write failed", fd);
}

/* Send vector @vec's interrupt now that it is known to be unmasked and its
 * pending bit was taken.  Context: t->lock held. */
static void vpci_deliver(struct virtio_transport *t, unsigned int vec)
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
	vpci_send_msi(t, vec);
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
	vpci_send_msi(t, vec);
	stat_add(&t->st.config_interrupts, 1);
}

void vpci_config_changed(struct virtio_transport *t)
{
	/* Seq-cst: a driver that reads the generation after the config
	 * interrupt sees the new value. */
	__atomic_fetch_add(&t->generation, 1, __ATOMIC_SEQ_CST);
	vpci_config_irq(t);
}

static void vpci_set_needs_reset(struct virtio_transport *t, const char *why)
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

static uint64_t vpci_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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
static const struct virtio_transport_ops vpci_transport_ops = {
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
				wiring_route(txn, q->gsi, false, 0, 0);
			any = true;
		}
	}
	return any;
}

/* Remove every irqfd and route in one transaction, then release.
 * Context: t->lock held, device stopped. */
static void vpci_unwire(struct virtio_transport *t)
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

static void vpci_place_kicks(struct virtio_transport *t);

/*
 * DRIVER_OK: start the rings, wire every enabled queue's interrupt (route
 * + irqfd) in one transaction, start the device.  The notify ioeventfds
 * are already in place (vpci_place_kicks()), so this is one
 * KVM_SET_GSI_ROUTING and an irqfd per vectored queue.  On failure no
 * interrupt is left wired.  Returns 0 or -errno, with *why set for the
 * log.  Context: vCPU thread, t->lock held.
 */
static int vpci_go_live(struct virtio_transport *t, const char **why)
{
	bool event_idx = t->driver_features & (1ull << VIRTIO_RING_F_EVENT_IDX);
	bool indirect = t->driver_features & (1ull << VIRTIO_RING_F_INDIRECT_DESC);
	struct wiring_txn txn;
	int ret;

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
		wiring_route(&txn, q->gsi, true, v->addr, v->data);
		wiring_irqfd(&txn, q->call_fd, q->gsi, true);
	}
	ret = vpci_commit(t, &txn);
	if (ret) {
		*why = "KVM refused the interrupt/notification wiring";
		goto err_release;
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
			wiring_route(&txn, q->gsi, true, v->new_addr, v->new_data);
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
static void vpci_vector_changed(void *opaque, unsigned int vec)
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
static void vpci_drop_kicks(struct virtio_transport *t)
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
static void vpci_place_kicks(struct virtio_transport *t)
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

/* ---- state machine ----------------------------------------------------- */

static void vpci_queue_defaults(struct virtio_transport *t)
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
static void vpci_stop(struct virtio_transport *t)
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
static void vpci_write_status(struct virtio_transport *t, uint8_t val)
{
	uint8_t old = vpci_status(t), added;
	const char *why = NULL;

	if (val == 0) {
		vpci_reset(t);
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
		if (vpci_go_live(t, &why)) {
			vpci_set_needs_reset(t, why);
			return;
		}
		val |= VIRTIO_CONFIG_S_DRIVER_OK;
	}
	if ((added & VIRTIO_CONFIG_S_FAILED) && t->live)
		vpci_stop(t); /* the driver gave up: stop using its memory */
	vpci_store_status(t, val);
}

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

/* Write of a whole field (natural width checked by the caller).
 * Context: vCPU thread, t->lock held.  @v is guest-controlled: each case
 * validates it. */
static void vpci_common_write_field(struct virtio_transport *t, uint32_t off,
				    uint32_t v)
{
	bool qok = t->queue_select < t->nq;
	struct virtio_queue *q = qok ? &t->queues[t->queue_select] : NULL;
	struct vpci_vq *vq = qok ? &t->vqs[t->queue_select] : NULL;

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
		break;
	}

	/* Per-queue registers. */
	if (!qok)
		return;
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
static void vpci_bar_access(void *opaque, uint64_t off, void *data,
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
		if (t->live && t->queues[i].enabled)
			vpci_write_eventfd(t->queues[i].kick_fd);
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
 * without it makes no memory requests: no DMA and no MSI-X (PCI 3.0; QEMU
 * disables the function's bus-master address space and stops virtio
 * processing).  Here, while it is off:
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
	if (!t->live)
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
		if (t->vecs[vec].users && msix_try_fire(&t->msix, vec))
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
	pthread_mutex_unlock(&t->lock);
}

/* Another BAR was mapped over our parked notify ioeventfds.  Context: as
 * vpci_bar_moved(). */
static void vpci_bar_range_taken(struct pci_device *pdev, unsigned int bar,
				 uint64_t gpa)
{
	struct virtio_transport *t = pdev->priv;

	(void)gpa;
	if (bar != VPCI_BAR)
		return;
	pthread_mutex_lock(&t->lock);
	if (t->bar_gpa == PCI_BAR_UNMAPPED)
		vpci_drop_kicks(t);
	pthread_mutex_unlock(&t->lock);
}

static const struct pci_device_ops vpci_pci_ops = {
	.cfg_write = vpci_cfg_write,
	.cfg_read = vpci_cfg_read,
	.bar_moved = vpci_bar_moved,
	.bar_range_taken = vpci_bar_range_taken,
};

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
	 * them) and ioeventfd with it.  Deassigned one by one they cost an
	 * SRCU grace period per ioeventfd and a workqueue flush per irqfd:
	 * seconds at 384 queues.  vpci_release() (from vpci_destroy()) then
	 * closes the call eventfds, which KVM still references until then.
	 */
	for (unsigned int i = 0; i < t->nq; i++) {
		t->vqs[i].kick_addr = VPCI_UNWIRED;
		t->vqs[i].irq_wired = false;
	}
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
