/* SPDX-License-Identifier: MIT */
/*
 * The KVM wiring of a virtio device's queues, whatever the transport: each
 * queue's kick eventfd as an ioeventfd on its notify address, each vectored
 * queue's call eventfd as an irqfd on a GSI with an MSI route, the
 * coalesced MMIO zones of the transport's registers, and the MSI messages
 * those routes carry, refreshed lazily.  Every change is ONE transaction
 * (libvmm/core/irq.h: one KVM_SET_GSI_ROUTING at most, rolled back as a
 * whole if KVM refuses a part).
 *
 * The owner (a transport: virtio-pci) knows where the registers are and
 * what an MSI vector holds; it tells the wiring through struct vqw_owner_ops
 * and the addresses it passes.  The wiring knows the queues (struct
 * virtio_queue: enabled, vector, kick_fd, call_fd, gsi) and libvmm/core's
 * irq; no bus.
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
 *    and the live table message (vqw_fire(), vqw_deliver()) instead of
 *    through the irqfd and its stale route: one decision per interrupt, so
 *    each is delivered exactly once, with the message the table holds.  The
 *    route is refreshed by the next unmask, or by the I/O thread once the
 *    vector has sent VQW_LAZY_FLUSH_USES interrupts while dirty, at most
 *    once per VQW_LAZY_FLUSH_INTERVAL_NS per device (vqw_lazy_flush()).
 *    Unmasked rewrites thus cost no routing update at all, and a guest
 *    interleaving rewrites and interrupts gets at most one per
 *    VQW_LAZY_FLUSH_USES interrupts and per interval.
 *
 * External notifiers.  A vhost-user back end writes a queue's call
 * eventfd itself, so the owner's mask check (the PBA) is bypassed and KVM
 * would deliver through the irqfd's route whatever the MSI-X table says:
 * an interrupt of a masked vector would reach the guest, and one of a
 * vector rewritten while unmasked would go to the old message.  With
 * params.external the wiring makes the irqfd itself follow the mask: a
 * masked vector's irqfds are deassigned (what the back end signals
 * meanwhile counts up in the eventfd, the interrupt held pending), and at
 * the unmask, once the route is refreshed, reassigned -- KVM polls the
 * eventfd at KVM_IRQFD and injects a pending count at once, so what was
 * held goes out exactly once, with the new message.  A message rewritten
 * while unmasked is flushed to the route at once (no lazy path: no
 * interrupt passes through us).  The PBA does not show such pending
 * interrupts.  Linux masks only around rewrites and at set-up: a few
 * irqfd changes per probe.
 *
 * Locking.  Everything here runs with the owner's lock held (@lock in
 * struct vqw_params), except vqw_fire(), vqw_send_msi() and vqw_stats_read(),
 * which are lock-free.  The I/O thread's flush takes the owner's lock with
 * pthread_mutex_trylock(), never blocking: a vCPU may hold it while it
 * waits for that very I/O thread (a device's start()/stop() post calls to
 * I/O threads and wait for them, possibly for another device served by the
 * same thread).  Holding it, the flush only takes the irq lock (order owner
 * lock -> irq lock, as on the vCPU path) and makes KVM ioctls and eventfd
 * writes; no holder of the irq lock waits for an I/O thread, and the flush
 * never takes a bus lock, calls a device op or waits for a thread -- the
 * owner's ops it calls must not either.  So no cycle: at worst a vCPU waits
 * for one routing update.  A failed trylock just leaves the vector dirty.
 */
#ifndef VMM_DEVICES_VIRTIO_VQ_WIRING_H
#define VMM_DEVICES_VIRTIO_VQ_WIRING_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/eventfd.h>

#include "irq.h"
#include "log.h"
#include "util/compiler.h"
#include "virtio/virtio.h"

#define VQW_UNWIRED UINT64_MAX /* no ioeventfd / zone registered */
#define VQW_MAX_ZONES 2u

/*
 * A vector rewritten while unmasked gets its route refreshed by the I/O
 * thread once it has sent this many interrupts with the live message
 * (KVM_SIGNAL_MSI), and at most once per interval per device: enough for a
 * guest that moved an interrupt once to get its irqfd path back soon,
 * while a guest that keeps rewriting forces at most ~1000 routing updates
 * a second, not one per table write.
 */
#define VQW_LAZY_FLUSH_USES 16u
#define VQW_LAZY_FLUSH_INTERVAL_NS 1000000ull /* 1 ms */

/* What the wiring asks its owner.  Context: the owner's lock held, except
 * get_msg and devid (also from vqw_send_msi(), any thread) and vlog. */
struct vqw_owner_ops {
	/* The message vector @vec holds now. */
	void (*get_msg)(void *owner, unsigned int vec, uint64_t *addr,
			uint32_t *data);
	bool (*masked)(void *owner, unsigned int vec);
	/* @vec's route was refreshed while it is unmasked: send what it
	 * held pending (vqw_deliver()). */
	void (*flushed)(void *owner, unsigned int vec);
	/* KVM refused a route refresh: the vectors stay dirty, their
	 * interrupts direct, until the owner unwires. */
	void (*flush_failed)(void *owner);
	/* May an I/O thread refresh routes now? */
	bool (*may_flush)(void *owner);
	/* Requester ID of the device's MSIs. */
	uint32_t (*devid)(void *owner);
	/* A message the guest can cause, rate-limited through @l. */
	void (*vlog)(void *owner, struct log_limit *l, int level,
		     const char *fmt, va_list ap);
};

struct vqw_params {
	struct vm_irq *irq;
	const struct vqw_owner_ops *ops;
	void *owner;
	pthread_mutex_t *lock;	    /* the owner's (see "Locking") */
	struct virtio_queue *queues; /* [nq], the owner's */
	unsigned int nq, nv;	    /* queues, MSI vectors */
	/* KVM_CAP_IOEVENTFD_ANY_LENGTH: kick ioeventfds of length 0 (any
	 * width); otherwise 2 (the 16-bit write the Linux driver does). */
	bool any_len;
	/* One commit per vectored queue at vqw_wire() instead of one for
	 * all: the unbatched way, kept to measure the difference. */
	bool per_vector;
	/* The call eventfds are written by another process (a vhost-user
	 * back end), not through the owner's queue_notify: see "External
	 * notifiers" above. */
	bool external;
	unsigned int nr_zones;		   /* <= VQW_MAX_ZONES */
	uint32_t zone_len[VQW_MAX_ZONES];
	bool coalesce;			   /* try the zones at all */
};

struct vqw_stats {
	uint64_t commits;	    /* transactions committed (or rolled back) */
	uint64_t ioctls;	    /* KVM ioctls they made */
	uint64_t ns;		    /* wall time inside them */
	uint64_t interrupts_direct; /* sent with KVM_SIGNAL_MSI, route stale */
	uint64_t route_flushes;	    /* MSI route refreshes committed */
	uint64_t route_flushes_lazy; /* of which started by an I/O thread */
};

/* Wiring of one queue (owner's lock). */
struct vqw_queue {
	uint64_t kick_addr; /* where kick_fd is an ioeventfd, or VQW_UNWIRED */
	bool irq_wired;	    /* route + irqfd installed for gsi/call_fd */
	bool irqfd_on;	    /* the irqfd is assigned (external: not while
			       its vector is masked) */
};

/* One MSI vector as the queues' KVM routes see it. */
struct vqw_vec {
	/* Owner's lock. */
	unsigned int users; /* wired queues using it */
	int fire_fd;	    /* call_fd of one of them */
	uint64_t addr;	    /* message installed in their routes */
	uint32_t data;
	bool flush;	    /* scratch for vqw_flush_routes() */
	uint64_t new_addr;
	uint32_t new_data;
	/* Mask state at the last vqw_vector_changed(): an unmask is a change
	 * from masked to unmasked. */
	bool seen_masked;
	/* __atomic only: the table message differs from the routes.  Set
	 * and cleared under the owner's lock, read by vqw_fire(). */
	uint8_t dirty;
	/* __atomic only: interrupts sent with KVM_SIGNAL_MSI since the
	 * vector became dirty (a heuristic: races only shift the flush). */
	uint32_t dirty_uses;
};

struct vqw {
	struct vqw_params p;
	/* Owner's lock. */
	bool live; /* interrupts wired (vqw_wire() .. vqw_release()) */
	unsigned int nr_dirty;
	uint64_t zone_gpa[VQW_MAX_ZONES]; /* VQW_UNWIRED: nowhere */
	struct vqw_queue *qs;		  /* [nq] */
	struct vqw_vec *vecs;		  /* [nv] */
	/* __atomic only. */
	uint64_t lazy_next_ns; /* no I/O-thread route flush before this */
	struct vqw_stats st;
	struct log_limit log_msi; /* MSI deliveries KVM refused */
	struct log_limit log_kvm; /* wiring KVM refused (host trouble a guest
				     can repeat at will) */
};

/*
 * vqw_init - set @w up for @p->nq queues and create each queue's kick
 * eventfd (queues[i].kick_fd: the same file until vqw_destroy(), so a
 * device may register it once, e.g. with an io_uring file table).
 * Returns 0, -ENOMEM, -EMFILE/-ENFILE.  Context: the owner's create.
 */
int vqw_init(struct vqw *w, const struct vqw_params *p) __must_check;
/* Close the kick eventfds and free (nothing may be registered with KVM
 * any more, or it is forgotten: vqw_forget()).  Safe after a failed init
 * and on a zeroed struct vqw. */
void vqw_destroy(struct vqw *w);

/*
 * vqw_wire - give every enabled queue that has a vector a call eventfd, a
 * GSI with an MSI route and an irqfd, in one transaction (per_vector: one
 * per queue), and go live.  On failure nothing is left wired (and *why
 * says what for the log).  The rings are the owner's.
 */
int vqw_wire(struct vqw *w, const char **why);
/* Remove every irqfd and route in one transaction, then vqw_release(). */
void vqw_unwire(struct vqw *w);
/* Close the call eventfds, free the GSIs (unless their routes may still be
 * installed: @keep_gsis), forget the vectors' state; no longer live.  No
 * irqfd may be registered any more.  The kick ioeventfds stay. */
void vqw_release(struct vqw *w, bool keep_gsis);
/* The VM's end: forget every registration (it goes with the VM fd). */
void vqw_forget(struct vqw *w);

/* Notify ioeventfds: queue i's at @base + i * @stride, in one transaction
 * (deregistrations first, so a move onto an overlapping range works).
 * 0, or -errno with the old ones still in place: the caller then drops
 * them (vqw_drop_kicks()), and kicks reach its notify handler. */
int vqw_place_kicks(struct vqw *w, uint64_t base, uint32_t stride)
	__must_check;
/* Deregister every notify ioeventfd (cannot fail for fds KVM holds). */
void vqw_drop_kicks(struct vqw *w);

/* Coalesced zones: move each zone z to @want[z] (VQW_UNWIRED: nowhere) in
 * one transaction.  0 (also once coalescing is off), or -errno with the
 * old ones still in place: the caller then gives up on them for good
 * (vqw_stop_coalescing(): the registers exit as usual). */
int vqw_place_zones(struct vqw *w, const uint64_t *want) __must_check;
void vqw_stop_coalescing(struct vqw *w);
/* Move zone @z alone: 0 or -errno (then it stays where it was). */
int vqw_move_zone(struct vqw *w, unsigned int z, uint64_t want);
/* Remove the zones, wherever they are (cannot fail for zones KVM holds). */
void vqw_drop_zones(struct vqw *w);

/*
 * The owner's MSI-X notifier: @vec's message or effective mask changed
 * (now @masked).  A message change marks the vector dirty ("MSI-X
 * rewrites"); an unmask (seen masked at the previous call) flushes every
 * dirty unmasked vector in one transaction.  The caller then delivers what
 * @vec had pending (vqw_deliver()).
 */
void vqw_vector_changed(struct vqw *w, unsigned int vec, bool masked);
/* Refresh the routes of every dirty unmasked vector now. */
void vqw_flush_routes(struct vqw *w);

/* KVM_SIGNAL_MSI with @vec's message now; @what names it in the log
 * ("" or "rewritten ").  Context: any thread. */
void vqw_send_msi(struct vqw *w, unsigned int vec, const char *what);
/* A dirty vector's interrupt, its route stale; then maybe a lazy flush.
 * Context: the queue's thread. */
void vqw_fire_direct(struct vqw *w, unsigned int vec);
/* Send @vec's interrupt through its wiring if it has wired users: true;
 * false if it has none (then the owner sends it another way). */
bool vqw_deliver(struct vqw *w, unsigned int vec);
void vqw_stats_read(struct vqw *w, struct vqw_stats *st);

static inline void vqw_write_eventfd(int fd)
{
	/* Fails only if the counter would overflow (2^64 - 2 unread
	 * signals): the guest is interrupted anyway. */
	if (eventfd_write(fd, 1))
		vmm_dbg("virtio: eventfd %d write failed", fd);
}

/*
 * vqw_fire - send an interrupt of @vec for a queue whose call eventfd is
 * @call_fd, once the owner knows it is unmasked (its pending bit was not
 * set instead).  Context: the queue's thread; lock-free but for the lazy
 * flush's trylock.
 *
 * Race with a message change: exactly one of two things sends it:
 *  - the vector is dirty (seq-cst load; pairs with the seq-cst stores in
 *    vqw_vector_changed() and vqw_flush_routes()): KVM_SIGNAL_MSI with
 *    the table's message, at least as new as the change that made it
 *    dirty (vqw_fire_direct());
 *  - it is clean: the irqfd, whose route vqw_flush_routes() installed
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
static inline void vqw_fire(struct vqw *w, unsigned int vec, int call_fd)
{
	if (__atomic_load_n(&w->vecs[vec].dirty, __ATOMIC_SEQ_CST))
		vqw_fire_direct(w, vec);
	else
		vqw_write_eventfd(call_fd);
}

#endif
