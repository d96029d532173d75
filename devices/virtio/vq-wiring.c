/* SPDX-License-Identifier: MIT */
/*
 * The KVM wiring of a virtio device's queues (see vq-wiring.h: the MSI-X
 * rewrite policy and the locking rules).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "virtio/vq-wiring.h"

static uint64_t vqw_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void vqw_stat_add(uint64_t *c, uint64_t n)
{
	/* Relaxed: a statistic, orders nothing. */
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

static void vqw_log(struct vqw *w, struct log_limit *l, int level,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void vqw_log(struct vqw *w, struct log_limit *l, int level,
		    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	w->p.ops->vlog(w->p.owner, l, level, fmt, ap);
	va_end(ap);
}

/* ---- life cycle ---------------------------------------------------------- */

int vqw_init(struct vqw *w, const struct vqw_params *p)
{
	memset(w, 0, sizeof(*w));
	w->p = *p;
	log_limit_init(&w->log_msi, "failed MSI deliveries");
	log_limit_init(&w->log_kvm, "KVM wiring failures");
	for (unsigned int z = 0; z < VQW_MAX_ZONES; z++)
		w->zone_gpa[z] = VQW_UNWIRED;
	for (unsigned int i = 0; i < p->nq; i++)
		p->queues[i].kick_fd = p->queues[i].call_fd = -1;
	w->qs = calloc(p->nq, sizeof(*w->qs));
	w->vecs = calloc(p->nv, sizeof(*w->vecs));
	if (!w->qs || !w->vecs)
		return -ENOMEM;
	for (unsigned int i = 0; i < p->nq; i++)
		w->qs[i].kick_addr = VQW_UNWIRED;
	for (unsigned int v = 0; v < p->nv; v++) {
		w->vecs[v].fire_fd = -1;
		w->vecs[v].seen_masked = true; /* MSI-X starts masked */
	}
	for (unsigned int i = 0; i < p->nq; i++) {
		p->queues[i].kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (p->queues[i].kick_fd < 0)
			return -errno;
	}
	return 0;
}

void vqw_destroy(struct vqw *w)
{
	if (!w->p.ops)
		return; /* zeroed, never initialised */
	for (unsigned int i = 0; w->p.queues && i < w->p.nq; i++)
		if (w->p.queues[i].kick_fd >= 0)
			close(w->p.queues[i].kick_fd);
	log_limit_destroy(&w->log_msi, "until the device was removed");
	log_limit_destroy(&w->log_kvm, "until the device was removed");
	free(w->qs);
	free(w->vecs);
	w->qs = NULL;
	w->vecs = NULL;
}

void vqw_stats_read(struct vqw *w, struct vqw_stats *st)
{
	st->commits = __atomic_load_n(&w->st.commits, __ATOMIC_RELAXED);
	st->ioctls = __atomic_load_n(&w->st.ioctls, __ATOMIC_RELAXED);
	st->ns = __atomic_load_n(&w->st.ns, __ATOMIC_RELAXED);
	st->interrupts_direct =
		__atomic_load_n(&w->st.interrupts_direct, __ATOMIC_RELAXED);
	st->route_flushes = __atomic_load_n(&w->st.route_flushes, __ATOMIC_RELAXED);
	st->route_flushes_lazy =
		__atomic_load_n(&w->st.route_flushes_lazy, __ATOMIC_RELAXED);
}

/* Commit and account.  Context: owner's lock held. */
static int vqw_commit(struct vqw *w, struct wiring_txn *txn)
{
	struct irq_stats is;
	int ret = wiring_commit(txn);

	/* last_* belong to this commit unless another device committed in
	 * between (then the numbers are approximate). */
	irq_get_stats(w->p.irq, &is);
	vqw_stat_add(&w->st.commits, 1);
	vqw_stat_add(&w->st.ioctls, is.last_ioctls);
	vqw_stat_add(&w->st.ns, is.last_ns);
	return ret;
}

/* Commit @txn if anything was staged (@any), else drop it: 0 or -errno
 * (rolled back as a whole).  Context: owner's lock held. */
static int vqw_finish(struct vqw *w, struct wiring_txn *txn, bool any)
{
	if (!any) {
		wiring_abort(txn);
		return 0;
	}
	return vqw_commit(w, txn);
}

/* ---- interrupts ---------------------------------------------------------- */

/*
 * KVM refuses (-EPERM, -EINVAL) what the guest's message asks for -- no
 * vCPU matches its destination, say -- which a guest chooses: rate-limited,
 * not per interrupt (an irqfd would drop it silently).
 */
void vqw_send_msi(struct vqw *w, unsigned int vec, const char *what)
{
	uint64_t addr;
	uint32_t data;
	int ret;

	w->p.ops->get_msg(w->p.owner, vec, &addr, &data);
	ret = irq_signal_msi(w->p.irq, addr, data, w->p.ops->devid(w->p.owner));
	if (ret)
		vqw_log(w, &w->log_msi, VMM_LOG_WARN,
			"MSI for %svector %u (0x%llx/0x%x): %s", what, vec,
			(unsigned long long)addr, data, strerror(-ret));
}

/*
 * Send an interrupt of dirty vector @vec with the message the table holds
 * now (its route is stale).  Context: any thread.  The caller loaded
 * v->dirty == 1 with a seq-cst (acquire) load, which pairs with the seq-cst
 * store in vqw_vector_changed() made after the guest's message stores on
 * that vCPU: the message read here is at least that new.
 */
static void vqw_send_direct(struct vqw *w, unsigned int vec)
{
	vqw_send_msi(w, vec, "rewritten ");
	vqw_stat_add(&w->st.interrupts_direct, 1);
}

bool vqw_deliver(struct vqw *w, unsigned int vec)
{
	struct vqw_vec *v = &w->vecs[vec];

	if (!w->live || !v->users)
		return false;
	if (__atomic_load_n(&v->dirty, __ATOMIC_SEQ_CST))
		vqw_send_direct(w, vec); /* the route is stale */
	else /* through the irqfd: KVM uses the installed route */
		vqw_write_eventfd(v->fire_fd);
	return true;
}

/*
 * Dirty vector @v just sent an interrupt with KVM_SIGNAL_MSI: once it has
 * sent VQW_LAZY_FLUSH_USES of them, refresh the routes of every dirty,
 * unmasked vector in one transaction, so that the following interrupts go
 * through the irqfds again -- at most once per VQW_LAZY_FLUSH_INTERVAL_NS
 * per device, whatever the guest does.  Context: the queue's I/O thread
 * (or a thread draining the device); never blocks on the owner's lock
 * (trylock: see "Locking" in vq-wiring.h for the lock-order argument).
 */
static void vqw_lazy_flush(struct vqw *w, struct vqw_vec *v)
{
	uint64_t now;

	/* Relaxed: counters and a time gate, ordering nothing; the owner's
	 * lock orders the flush itself. */
	if (__atomic_add_fetch(&v->dirty_uses, 1, __ATOMIC_RELAXED) <
	    VQW_LAZY_FLUSH_USES)
		return;
	now = vqw_now_ns();
	if (now < __atomic_load_n(&w->lazy_next_ns, __ATOMIC_RELAXED))
		return;
	if (pthread_mutex_trylock(w->p.lock))
		return; /* a vCPU is in the device: next time */
	/* Not after a failed route update (the owner says): the vectors
	 * stay dirty, their interrupts direct, until it unwires. */
	if (w->live && w->nr_dirty && w->p.ops->may_flush(w->p.owner)) {
		__atomic_store_n(&w->lazy_next_ns,
				 now + VQW_LAZY_FLUSH_INTERVAL_NS,
				 __ATOMIC_RELAXED);
		vqw_stat_add(&w->st.route_flushes_lazy, 1);
		vqw_flush_routes(w);
	}
	pthread_mutex_unlock(w->p.lock);
}

void vqw_fire_direct(struct vqw *w, unsigned int vec)
{
	vqw_send_direct(w, vec);
	vqw_lazy_flush(w, &w->vecs[vec]);
}

/* Which vectors to flush: dirty and unmasked; their new messages read.
 * Returns how many.  Owner's lock held. */
static unsigned int vqw_pick_flush(struct vqw *w)
{
	unsigned int nr = 0;

	for (unsigned int vec = 0; vec < w->p.nv; vec++) {
		struct vqw_vec *v = &w->vecs[vec];

		v->flush = __atomic_load_n(&v->dirty, __ATOMIC_RELAXED) &&
			   !w->p.ops->masked(w->p.owner, vec);
		if (!v->flush)
			continue;
		w->p.ops->get_msg(w->p.owner, vec, &v->new_addr, &v->new_data);
		nr++;
	}
	return nr;
}

/*
 * Route updates for every dirty vector that is now unmasked, in one
 * transaction; then the owner delivers what they had pending.  Context:
 * owner's lock held.
 */
void vqw_flush_routes(struct vqw *w)
{
	struct wiring_txn txn;

	if (!vqw_pick_flush(w))
		return;
	wiring_begin(&txn, w->p.irq);
	for (unsigned int i = 0; i < w->p.nq; i++) {
		struct virtio_queue *q = &w->p.queues[i];
		struct vqw_vec *v;

		if (!w->qs[i].irq_wired)
			continue;
		v = &w->vecs[q->vector];
		if (v->flush)
			wiring_route(&txn, q->gsi, true, v->new_addr, v->new_data,
				     w->p.ops->devid(w->p.owner));
	}
	if (vqw_commit(w, &txn)) {
		/* The vectors stay dirty: their interrupts go direct. */
		w->p.ops->flush_failed(w->p.owner);
		return;
	}
	vqw_stat_add(&w->st.route_flushes, 1);
	for (unsigned int vec = 0; vec < w->p.nv; vec++) {
		struct vqw_vec *v = &w->vecs[vec];

		if (!v->flush)
			continue;
		v->flush = false;
		v->addr = v->new_addr;
		v->data = v->new_data;
		/* Seq-cst store after the route is installed: a notifier
		 * that sees it clean uses the new route (argument above
		 * vqw_fire()). */
		__atomic_store_n(&v->dirty, 0, __ATOMIC_SEQ_CST);
		w->nr_dirty--;
		/* Interrupts left pending while it was masked (it is
		 * unmasked now): the owner sends them. */
		w->p.ops->flushed(w->p.owner, vec);
	}
}

/*
 * External notifiers: the irqfds of @vec's queues follow its mask (see
 * vq-wiring.h): deassigned while masked, reassigned at the unmask (after
 * the route refresh), in one transaction.  Context: owner's lock held.
 */
static void vqw_external_mask(struct vqw *w, unsigned int vec, bool masked)
{
	struct wiring_txn txn;
	bool any = false;

	if (!masked && w->nr_dirty)
		vqw_flush_routes(w); /* a rewrite while unmasked: now */
	wiring_begin(&txn, w->p.irq);
	for (unsigned int i = 0; i < w->p.nq; i++) {
		struct virtio_queue *q = &w->p.queues[i];

		if (!w->qs[i].irq_wired || q->vector != vec ||
		    w->qs[i].irqfd_on == !masked)
			continue;
		wiring_irqfd(&txn, q->call_fd, q->gsi, !masked);
		any = true;
	}
	if (vqw_finish(w, &txn, any)) {
		vqw_log(w, &w->log_kvm, VMM_LOG_ERROR,
			"%s the irqfds of MSI-X vector %u failed",
			masked ? "removing" : "restoring", vec);
		return;
	}
	for (unsigned int i = 0; i < w->p.nq; i++)
		if (w->qs[i].irq_wired && w->p.queues[i].vector == vec)
			w->qs[i].irqfd_on = !masked;
}

void vqw_vector_changed(struct vqw *w, unsigned int vec, bool masked)
{
	struct vqw_vec *v = &w->vecs[vec];
	bool unmasked;

	if (w->live && v->users && !__atomic_load_n(&v->dirty, __ATOMIC_RELAXED)) {
		uint64_t addr;
		uint32_t data;

		w->p.ops->get_msg(w->p.owner, vec, &addr, &data);
		if (addr != v->addr || data != v->data) {
			__atomic_store_n(&v->dirty_uses, 0, __ATOMIC_RELAXED);
			/* Seq-cst (a release of the message the guest
			 * stored before calling us): pairs with the load in
			 * vqw_fire(); also seen there before the guest's
			 * later unmask (a seq-cst store). */
			__atomic_store_n(&v->dirty, 1, __ATOMIC_SEQ_CST);
			w->nr_dirty++;
		}
	}
	unmasked = v->seen_masked && !masked;
	v->seen_masked = masked;
	if (unmasked && w->nr_dirty)
		vqw_flush_routes(w);
	if (w->p.external && w->live && v->users)
		vqw_external_mask(w, vec, masked);
}

/* ---- interrupt wiring ---------------------------------------------------- */

void vqw_release(struct vqw *w, bool keep_gsis)
{
	for (unsigned int i = 0; i < w->p.nq; i++) {
		struct virtio_queue *q = &w->p.queues[i];

		if (q->call_fd >= 0)
			close(q->call_fd);
		q->call_fd = -1;
		if (q->gsi_valid && !keep_gsis)
			irq_gsi_free(w->p.irq, q->gsi);
		q->gsi_valid = false;
		w->qs[i].irq_wired = false; /* kick_addr: the ioeventfds stay */
		w->qs[i].irqfd_on = false;
	}
	for (unsigned int v = 0; v < w->p.nv; v++) {
		w->vecs[v].users = 0;
		w->vecs[v].fire_fd = -1;
		w->vecs[v].flush = false;
		/* No notifier runs: the device is stopped. */
		__atomic_store_n(&w->vecs[v].dirty, 0, __ATOMIC_SEQ_CST);
	}
	w->nr_dirty = 0;
	w->live = false;
}

/* Stage the removal of every irqfd, and of the MSI routes if @routes
 * (the ioeventfds follow the registers, not the driver).  Returns whether
 * anything was staged. */
static bool vqw_stage_unwire(struct vqw *w, struct wiring_txn *txn,
			     bool routes)
{
	bool any = false;

	for (unsigned int i = 0; i < w->p.nq; i++) {
		struct virtio_queue *q = &w->p.queues[i];

		if (w->qs[i].irq_wired) {
			if (w->qs[i].irqfd_on)
				wiring_irqfd(txn, q->call_fd, q->gsi, false);
			if (routes)
				wiring_route(txn, q->gsi, false, 0, 0, 0);
			any = true;
		}
	}
	return any;
}

void vqw_unwire(struct vqw *w)
{
	struct wiring_txn txn;
	int ret;

	wiring_begin(&txn, w->p.irq);
	ret = vqw_finish(w, &txn, vqw_stage_unwire(w, &txn, true));
	if (ret) {
		/*
		 * The route update failed (KVM_SET_GSI_ROUTING: -ENOMEM) and
		 * the commit rolled the irqfd deassigns back.  Deassigning
		 * alone cannot fail for fds KVM holds: do it, so no irqfd
		 * stays on an eventfd we close.  Only the routes stay (found
		 * by tests/fuzz/fuzz_virtio_pci).
		 */
		wiring_begin(&txn, w->p.irq);
		vqw_stage_unwire(w, &txn, false);
		if (vqw_commit(w, &txn))
			vqw_log(w, &w->log_kvm, VMM_LOG_ERROR,
				"removing the KVM irqfds failed");
		vqw_log(w, &w->log_kvm, VMM_LOG_ERROR,
			"removing the KVM routes failed (%s); their GSIs are "
			"leaked until the VM is destroyed", strerror(-ret));
	}
	vqw_release(w, ret != 0);
}

/* A call eventfd and a GSI for every enabled queue that has a vector.
 * 0 or -errno with *why set (the caller releases). */
static int vqw_alloc(struct vqw *w, const char **why)
{
	for (unsigned int i = 0; i < w->p.nq; i++) {
		struct virtio_queue *q = &w->p.queues[i];
		int ret;

		if (!q->enabled || q->vector == VIRTIO_NO_VECTOR)
			continue; /* poll queue: no GSI, no irqfd */
		q->call_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (q->call_fd < 0) {
			*why = "out of eventfds";
			return -errno;
		}
		ret = irq_gsi_alloc(w->p.irq, &q->gsi);
		if (ret) {
			*why = "out of GSIs";
			return ret;
		}
		q->gsi_valid = true;
	}
	return 0;
}

/* Stage queue @i's route and irqfd, counting it as a user of its vector. */
static void vqw_stage_queue(struct vqw *w, struct wiring_txn *txn,
			    unsigned int i)
{
	struct virtio_queue *q = &w->p.queues[i];
	struct vqw_vec *v = &w->vecs[q->vector];

	if (!v->users++) {
		v->fire_fd = q->call_fd;
		w->p.ops->get_msg(w->p.owner, q->vector, &v->addr, &v->data);
	}
	wiring_route(txn, q->gsi, true, v->addr, v->data,
		     w->p.ops->devid(w->p.owner));
	/* External notifier on a masked vector: no irqfd until the unmask
	 * ("External notifiers").  Undone by vqw_release() on failure. */
	if (w->p.external && w->p.ops->masked(w->p.owner, q->vector))
		return;
	wiring_irqfd(txn, q->call_fd, q->gsi, true);
	w->qs[i].irqfd_on = true;
}

/* The unbatched way, for comparisons: each queue alone, the whole route
 * table resent each time.  On failure the queues already committed are
 * unwired in one transaction. */
static int vqw_wire_per_vector(struct vqw *w)
{
	struct wiring_txn txn;
	int ret;

	for (unsigned int i = 0; i < w->p.nq; i++) {
		if (!w->p.queues[i].enabled || !w->p.queues[i].gsi_valid)
			continue;
		wiring_begin(&txn, w->p.irq);
		vqw_stage_queue(w, &txn, i);
		ret = vqw_commit(w, &txn);
		if (ret) {
			vqw_unwire(w);
			return ret;
		}
		w->qs[i].irq_wired = true;
	}
	return 0;
}

int vqw_wire(struct vqw *w, const char **why)
{
	struct wiring_txn txn;
	int ret = vqw_alloc(w, why);

	if (ret)
		goto err_release;
	if (w->p.per_vector) {
		ret = vqw_wire_per_vector(w);
		if (ret) {
			*why = "KVM refused the interrupt/notification wiring";
			return ret; /* unwired and released */
		}
	} else {
		wiring_begin(&txn, w->p.irq);
		for (unsigned int i = 0; i < w->p.nq; i++)
			if (w->p.queues[i].enabled && w->p.queues[i].gsi_valid)
				vqw_stage_queue(w, &txn, i);
		ret = vqw_commit(w, &txn);
		if (ret) {
			*why = "KVM refused the interrupt/notification wiring";
			goto err_release;
		}
	}
	for (unsigned int i = 0; i < w->p.nq; i++)
		if (w->p.queues[i].enabled)
			w->qs[i].irq_wired = w->p.queues[i].gsi_valid;
	w->live = true;
	return 0;

err_release:
	vqw_release(w, false);
	return ret;
}

void vqw_forget(struct vqw *w)
{
	for (unsigned int i = 0; i < w->p.nq; i++) {
		w->qs[i].kick_addr = VQW_UNWIRED;
		w->qs[i].irq_wired = false;
	}
	for (unsigned int z = 0; z < VQW_MAX_ZONES; z++)
		w->zone_gpa[z] = VQW_UNWIRED;
	w->live = false;
}

/* ---- notify ioeventfds --------------------------------------------------- */

static uint32_t vqw_kick_len(const struct vqw *w)
{
	return w->p.any_len ? 0 : 2; /* Linux's vp_notify() is iowrite16 */
}

/* Stage the deregistration of every registered notify ioeventfd.  Returns
 * whether anything was staged. */
static bool vqw_stage_drop_kicks(struct vqw *w, struct wiring_txn *txn)
{
	bool any = false;

	for (unsigned int i = 0; i < w->p.nq; i++) {
		if (w->qs[i].kick_addr == VQW_UNWIRED)
			continue;
		wiring_ioeventfd(txn, w->p.queues[i].kick_fd, w->qs[i].kick_addr,
				 vqw_kick_len(w), false, false);
		any = true;
	}
	return any;
}

/* Deregister every notify ioeventfd (cannot fail for fds KVM holds). */
void vqw_drop_kicks(struct vqw *w)
{
	struct wiring_txn txn;

	wiring_begin(&txn, w->p.irq);
	if (vqw_finish(w, &txn, vqw_stage_drop_kicks(w, &txn)))
		vqw_log(w, &w->log_kvm, VMM_LOG_ERROR,
			"removing the notify ioeventfds failed");
	for (unsigned int i = 0; i < w->p.nq; i++)
		w->qs[i].kick_addr = VQW_UNWIRED;
}

int vqw_place_kicks(struct vqw *w, uint64_t base, uint32_t stride)
{
	struct wiring_txn txn;
	bool any = false;
	int ret;

	wiring_begin(&txn, w->p.irq);
	for (unsigned int i = 0; i < w->p.nq; i++) {
		struct vqw_queue *wq = &w->qs[i];
		uint64_t addr = base + (uint64_t)i * stride;
		int fd = w->p.queues[i].kick_fd;

		if (wq->kick_addr == addr)
			continue;
		if (wq->kick_addr != VQW_UNWIRED)
			wiring_ioeventfd(&txn, fd, wq->kick_addr,
					 vqw_kick_len(w), false, false);
		wiring_ioeventfd(&txn, fd, addr, vqw_kick_len(w), false, true);
		any = true;
	}
	ret = vqw_finish(w, &txn, any);
	if (ret)
		return ret; /* rolled back: still where they were */
	for (unsigned int i = 0; i < w->p.nq; i++)
		w->qs[i].kick_addr = base + (uint64_t)i * stride;
	return 0;
}

/* ---- coalesced zones ----------------------------------------------------- */

/* Stage moving zone @z from where it is to @want (VQW_UNWIRED: nowhere).
 * Returns whether anything was staged. */
static bool vqw_stage_zone(struct vqw *w, struct wiring_txn *txn,
			   unsigned int z, uint64_t want)
{
	uint32_t len = w->p.zone_len[z];

	if (w->zone_gpa[z] == want)
		return false;
	if (w->zone_gpa[z] != VQW_UNWIRED)
		wiring_coalesce(txn, w->zone_gpa[z], len, false);
	if (want != VQW_UNWIRED)
		wiring_coalesce(txn, want, len, true);
	return true;
}

/* Remove the zones, wherever they are (cannot fail for zones KVM holds). */
void vqw_drop_zones(struct vqw *w)
{
	struct wiring_txn txn;
	bool any = false;

	wiring_begin(&txn, w->p.irq);
	for (unsigned int z = 0; z < w->p.nr_zones; z++)
		any |= vqw_stage_zone(w, &txn, z, VQW_UNWIRED);
	if (vqw_finish(w, &txn, any))
		vqw_log(w, &w->log_kvm, VMM_LOG_ERROR,
			"removing the coalesced zones failed");
	for (unsigned int z = 0; z < w->p.nr_zones; z++)
		w->zone_gpa[z] = VQW_UNWIRED;
}

int vqw_move_zone(struct vqw *w, unsigned int z, uint64_t want)
{
	struct wiring_txn txn;
	int ret;

	wiring_begin(&txn, w->p.irq);
	ret = vqw_finish(w, &txn, vqw_stage_zone(w, &txn, z, want));
	if (!ret)
		w->zone_gpa[z] = want;
	return ret;
}

int vqw_place_zones(struct vqw *w, const uint64_t *want)
{
	struct wiring_txn txn;
	bool any = false;
	int ret;

	if (!w->p.coalesce)
		return 0;
	wiring_begin(&txn, w->p.irq);
	for (unsigned int z = 0; z < w->p.nr_zones; z++)
		any |= vqw_stage_zone(w, &txn, z, want[z]);
	ret = vqw_finish(w, &txn, any);
	if (ret)
		return ret; /* rolled back: still where they were */
	for (unsigned int z = 0; z < w->p.nr_zones; z++)
		w->zone_gpa[z] = want[z];
	return 0;
}

void vqw_stop_coalescing(struct vqw *w)
{
	w->p.coalesce = false;
	vqw_drop_zones(w);
}
