/* SPDX-License-Identifier: MIT */
/* GSI routing table, MSI injection and batched wiring (see irq.h). */
#include <errno.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "irq.h"
#include "log.h"

struct irq_route {
	bool allocated;
	bool valid;
	uint64_t addr;
	uint32_t data;
	uint32_t devid; /* requester ID (irq_platform.msi_devid) */
};

struct vm_irq {
	pthread_mutex_t lock; /* protects everything below */
	int vm_fd;
	const struct irq_platform *plat; /* constant */
	irq_ioctl_fn ioctl_fn;
	void *ioctl_opaque;
	struct irq_route routes[IRQ_MAX_ROUTES]; /* indexed by GSI */
	uint32_t gsi_hint;  /* lowest possibly free MSI GSI */
	uint32_t gsi_limit; /* one past the highest allocated GSI */
	struct kvm_irq_routing *buf; /* reused KVM_SET_GSI_ROUTING buffer */
	struct irq_stats st;
	/* Wiring KVM refused: commits follow guest actions (DRIVER_OK,
	 * resets, MSI-X unmasks), so a guest can repeat a failing one at
	 * will.  Own lock (log.h). */
	struct log_limit log;
};

static int sys_ioctl(void *opaque, int fd, unsigned long req, void *arg)
{
	(void)opaque;
	return ioctl(fd, req, arg) < 0 ? -errno : 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int irq_create(int vm_fd, const struct irq_platform *plat, irq_ioctl_fn fn,
	       void *opaque, struct vm_irq **out)
{
	struct vm_irq *irq;

	if (!plat || plat->nr_chip_routes > IRQ_MAX_ROUTES ||
	    plat->first_msi_gsi >= IRQ_MAX_ROUTES ||
	    (plat->nr_chip_routes && !plat->chip_routes))
		return -EINVAL;
	irq = calloc(1, sizeof(*irq));
	if (!irq)
		return -ENOMEM;
	irq->buf = calloc(1, sizeof(*irq->buf) +
				     IRQ_MAX_ROUTES * 2 * sizeof(irq->buf->entries[0]));
	if (!irq->buf) {
		free(irq);
		return -ENOMEM;
	}
	pthread_mutex_init(&irq->lock, NULL);
	log_limit_init(&irq->log, "KVM wiring failures");
	irq->vm_fd = vm_fd;
	irq->plat = plat;
	irq->ioctl_fn = fn ? fn : sys_ioctl;
	irq->ioctl_opaque = opaque;
	irq->gsi_hint = irq->gsi_limit = plat->first_msi_gsi;
	*out = irq;
	return 0;
}

void irq_destroy(struct vm_irq *irq)
{
	if (!irq)
		return;
	pthread_mutex_destroy(&irq->lock);
	log_limit_destroy(&irq->log, "until the VM was destroyed");
	free(irq->buf);
	free(irq);
}

int irq_gsi_alloc(struct vm_irq *irq, uint32_t *gsi)
{
	int ret = -ENOSPC;

	pthread_mutex_lock(&irq->lock);
	for (uint32_t g = irq->gsi_hint; g < IRQ_MAX_ROUTES; g++) {
		if (!irq->routes[g].allocated) {
			irq->routes[g] = (struct irq_route){ .allocated = true };
			irq->gsi_hint = g + 1;
			irq->gsi_limit = MAX(irq->gsi_limit, g + 1);
			*gsi = g;
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&irq->lock);
	return ret;
}

void irq_gsi_free(struct vm_irq *irq, uint32_t gsi)
{
	if (gsi < irq->plat->first_msi_gsi || gsi >= IRQ_MAX_ROUTES)
		return;
	pthread_mutex_lock(&irq->lock);
	/* The route itself must have been removed by a commit first. */
	irq->routes[gsi].allocated = false;
	irq->gsi_hint = MIN(irq->gsi_hint, gsi);
	pthread_mutex_unlock(&irq->lock);
}

/* The MSI address as KVM wants it (the platform may translate). */
static void irq_msi_address(const struct vm_irq *irq, uint64_t addr,
			    uint32_t *lo, uint32_t *hi)
{
	*lo = (uint32_t)addr;
	*hi = (uint32_t)(addr >> 32);
	if (irq->plat->msi_address)
		irq->plat->msi_address(addr, lo, hi);
}

int irq_signal_msi(struct vm_irq *irq, uint64_t addr, uint32_t data,
		   uint32_t devid)
{
	struct kvm_msi msi = { .data = data };
	int r;

	irq_msi_address(irq, addr, &msi.address_lo, &msi.address_hi);
	if (irq->plat->msi_devid) {
		msi.flags = KVM_MSI_VALID_DEVID;
		msi.devid = devid;
	}
	r = irq->ioctl_fn(irq->ioctl_opaque, irq->vm_fd, KVM_SIGNAL_MSI, &msi);

	/* KVM_SIGNAL_MSI returns >0 when delivered, 0 when the guest
	 * blocked it: both are fine. */
	return r < 0 ? r : 0;
}

void irq_get_stats(struct vm_irq *irq, struct irq_stats *st)
{
	pthread_mutex_lock(&irq->lock);
	*st = irq->st;
	pthread_mutex_unlock(&irq->lock);
}

/*
 * The full table KVM gets: the platform's irqchip routes (x86: identical
 * to the kernel's default_routing[], which KVM_SET_GSI_ROUTING would
 * otherwise drop) plus every valid MSI route.  Caller holds irq->lock.
 */
static int irq_push_table(struct vm_irq *irq)
{
	struct kvm_irq_routing_entry *e = irq->buf->entries;
	unsigned int n = irq->plat->nr_chip_routes;
	int ret;

	if (n) /* no table at all without chip routes (memcpy's NULL) */
		memcpy(e, irq->plat->chip_routes, n * sizeof(*e));
	irq->st.msi_routes = 0;
	for (uint32_t g = irq->plat->first_msi_gsi; g < irq->gsi_limit; g++) {
		const struct irq_route *r = &irq->routes[g];

		if (!r->valid)
			continue;
		e[n] = (struct kvm_irq_routing_entry){
			.gsi = g,
			.type = KVM_IRQ_ROUTING_MSI,
			.u.msi = { .data = r->data },
		};
		irq_msi_address(irq, r->addr, &e[n].u.msi.address_lo,
				&e[n].u.msi.address_hi);
		if (irq->plat->msi_devid) {
			e[n].flags = KVM_MSI_VALID_DEVID;
			e[n].u.msi.devid = r->devid;
		}
		n++;
		irq->st.msi_routes++;
	}
	/* The chip's routes + at most IRQ_MAX_ROUTES of them in all: the
	 * machine keeps the disks' queues within that (machine_check_queues()). */
	irq->buf->nr = n;
	irq->buf->flags = 0;
	irq->st.set_gsi_routing++;
	ret = irq->ioctl_fn(irq->ioctl_opaque, irq->vm_fd, KVM_SET_GSI_ROUTING,
			    irq->buf);
	if (ret)
		log_limited(&irq->log, VMM_LOG_ERROR, "irq",
			    "KVM_SET_GSI_ROUTING (%u entries): %s", n,
			    strerror(-ret));
	return ret;
}

/* KVM ioctls the wiring made so far (routing, irqfd, ioeventfd, zones). */
static uint64_t irq_wiring_calls(const struct irq_stats *st)
{
	return st->set_gsi_routing + st->irqfd_calls + st->ioeventfd_calls +
	       st->coalesced_calls;
}

/* ---- transactions ---- */

void wiring_begin(struct wiring_txn *t, struct vm_irq *irq)
{
	memset(t, 0, sizeof(*t));
	t->irq = irq;
}

/* Grow an array geometrically: amortised O(1) per staged item. */
static bool grow(void **arr, unsigned int *cap, unsigned int nr, size_t elem)
{
	unsigned int ncap;
	void *n;

	if (nr < *cap)
		return true;
	ncap = *cap ? *cap * 2 : 32;
	n = realloc(*arr, ncap * elem);
	if (!n)
		return false;
	*arr = n;
	*cap = ncap;
	return true;
}

void wiring_route(struct wiring_txn *t, uint32_t gsi, bool valid, uint64_t addr,
		  uint32_t data, uint32_t devid)
{
	if (t->error)
		return;
	if (gsi < t->irq->plat->first_msi_gsi || gsi >= IRQ_MAX_ROUTES) {
		t->error = -EINVAL;
		return;
	}
	if (!grow((void **)&t->routes, &t->cap_routes, t->nr_routes,
		  sizeof(t->routes[0]))) {
		t->error = -ENOMEM;
		return;
	}
	t->routes[t->nr_routes++] =
		(struct wiring_route_op){ gsi, valid, addr, data, devid };
}

static void wiring_add_fd(struct wiring_txn *t, const struct wiring_fd_op *op)
{
	if (t->error)
		return;
	if (op->fd < 0) {
		t->error = -EINVAL;
		return;
	}
	if (!grow((void **)&t->fds, &t->cap_fds, t->nr_fds, sizeof(t->fds[0]))) {
		t->error = -ENOMEM;
		return;
	}
	t->fds[t->nr_fds++] = *op;
}

void wiring_irqfd(struct wiring_txn *t, int fd, uint32_t gsi, bool assign)
{
	struct wiring_fd_op op = { .kind = WIRING_IRQFD, .assign = assign,
				   .fd = fd, .gsi = gsi };

	wiring_add_fd(t, &op);
}

void wiring_ioeventfd(struct wiring_txn *t, int fd, uint64_t addr, uint32_t len,
		      bool pio, bool assign)
{
	struct wiring_fd_op op = { .kind = WIRING_IOEVENTFD, .assign = assign,
				   .fd = fd, .addr = addr, .len = len,
				   .pio = pio };

	if (len != 0 && len != 1 && len != 2 && len != 4 && len != 8) {
		t->error = t->error ? t->error : -EINVAL;
		return;
	}
	wiring_add_fd(t, &op);
}

void wiring_coalesce(struct wiring_txn *t, uint64_t addr, uint32_t len,
		     bool assign)
{
	if (t->error)
		return;
	if (!len) {
		t->error = -EINVAL;
		return;
	}
	if (!grow((void **)&t->fds, &t->cap_fds, t->nr_fds, sizeof(t->fds[0]))) {
		t->error = -ENOMEM;
		return;
	}
	t->fds[t->nr_fds++] = (struct wiring_fd_op){
		.kind = WIRING_COALESCED, .assign = assign, .fd = -1,
		.addr = addr, .len = len,
	};
}

void wiring_abort(struct wiring_txn *t)
{
	free(t->fds);
	free(t->routes);
	t->fds = NULL;
	t->routes = NULL;
	t->nr_fds = t->nr_routes = 0;
}

static const char *const wiring_op_name[] = {
	[WIRING_IOEVENTFD] = "KVM_IOEVENTFD",
	[WIRING_IRQFD] = "KVM_IRQFD",
	[WIRING_COALESCED] = "KVM_(UN)REGISTER_COALESCED_MMIO",
};

/* One KVM_IRQFD/KVM_IOEVENTFD/coalesced zone call; @assign may be the
 * inverse of op's. */
static int wiring_fd_apply(struct vm_irq *irq, const struct wiring_fd_op *op,
			   bool assign)
{
	int ret;

	if (op->kind == WIRING_COALESCED) {
		struct kvm_coalesced_mmio_zone z = { .addr = op->addr,
						     .size = op->len };

		irq->st.coalesced_calls++;
		ret = irq->ioctl_fn(irq->ioctl_opaque, irq->vm_fd,
				    assign ? KVM_REGISTER_COALESCED_MMIO
					   : KVM_UNREGISTER_COALESCED_MMIO, &z);
	} else if (op->kind == WIRING_IRQFD) {
		struct kvm_irqfd a = {
			.fd = (uint32_t)op->fd,
			.gsi = op->gsi,
			.flags = assign ? 0 : KVM_IRQFD_FLAG_DEASSIGN,
		};

		irq->st.irqfd_calls++;
		ret = irq->ioctl_fn(irq->ioctl_opaque, irq->vm_fd, KVM_IRQFD, &a);
	} else {
		struct kvm_ioeventfd a = {
			.addr = op->addr,
			.len = op->len,
			.fd = op->fd,
			.flags = (op->pio ? KVM_IOEVENTFD_FLAG_PIO : 0) |
				 (assign ? 0 : KVM_IOEVENTFD_FLAG_DEASSIGN),
		};

		irq->st.ioeventfd_calls++;
		ret = irq->ioctl_fn(irq->ioctl_opaque, irq->vm_fd, KVM_IOEVENTFD, &a);
	}
	if (ret && op->kind == WIRING_COALESCED) /* a zone has no fd */
		log_limited(&irq->log, VMM_LOG_ERROR, "irq",
			    "%s %s zone 0x%llx+0x%x: %s", wiring_op_name[op->kind],
			    assign ? "register" : "unregister",
			    (unsigned long long)op->addr, op->len, strerror(-ret));
	else if (ret)
		log_limited(&irq->log, VMM_LOG_ERROR, "irq",
			    "%s %s fd %d (%s 0x%llx): %s",
			    wiring_op_name[op->kind],
			    assign ? "assign" : "deassign", op->fd,
			    op->kind == WIRING_IRQFD ? "gsi" : "addr",
			    (unsigned long long)(op->kind == WIRING_IRQFD ? op->gsi
									  : op->addr),
			    strerror(-ret));
	return ret;
}

/* Phase of a fd op in the commit order (see wiring_commit()). */
static int fd_phase(const struct wiring_fd_op *op)
{
	if (!op->assign)
		return op->kind == WIRING_IRQFD ? 1 : 0;
	return op->kind == WIRING_IRQFD ? 3 : 4;
}

/*
 * Phase 2 of a commit: the transaction's routes into irq->routes, the old
 * entries saved in @undo (one per route op, counted in *@nr_undo), and the
 * table pushed to KVM if anything changed (*@pushed).  Context: irq->lock
 * held.  Returns 0 or the push's -errno.
 */
static int wiring_routes_apply(struct wiring_txn *t, struct wiring_route_op *undo,
			       unsigned int *nr_undo, bool *pushed)
{
	struct vm_irq *irq = t->irq;
	bool changed = false;

	for (unsigned int i = 0; i < t->nr_routes; i++) {
		struct wiring_route_op *op = &t->routes[i];
		struct irq_route *r = &irq->routes[op->gsi];

		undo[(*nr_undo)++] = (struct wiring_route_op){
			op->gsi, r->valid, r->addr, r->data, r->devid
		};
		if (r->valid == op->valid &&
		    (!op->valid || (r->addr == op->addr && r->data == op->data &&
				    r->devid == op->devid)))
			continue;
		r->valid = op->valid;
		r->addr = op->addr;
		r->data = op->data;
		r->devid = op->devid;
		if (op->valid)
			irq->gsi_limit = MAX(irq->gsi_limit, op->gsi + 1);
		changed = true;
	}
	if (!changed)
		return 0;
	*pushed = true;
	return irq_push_table(irq);
}

/*
 * Undo a failed commit in reverse order: the fd ops in @done (indexes into
 * t->fds, in the order applied) that assigned are deassigned, the routes
 * saved in @undo restored (one more KVM_SET_GSI_ROUTING if the table was
 * @pushed), then the deassigned fds re-assigned.  Context: irq->lock held.
 */
static void wiring_rollback(struct wiring_txn *t, const unsigned int *done,
			    unsigned int nr_done,
			    const struct wiring_route_op *undo,
			    unsigned int nr_undo, bool pushed)
{
	struct vm_irq *irq = t->irq;

	while (nr_done && t->fds[done[nr_done - 1]].assign)
		wiring_fd_apply(irq, &t->fds[done[--nr_done]], false);
	for (unsigned int i = nr_undo; i-- > 0;) {
		struct irq_route *r = &irq->routes[undo[i].gsi];

		r->valid = undo[i].valid;
		r->addr = undo[i].addr;
		r->data = undo[i].data;
		r->devid = undo[i].devid;
	}
	if (nr_undo && pushed && irq_push_table(irq))
		log_limited(&irq->log, VMM_LOG_ERROR, "irq",
			    "wiring rollback: could not restore the GSI "
			    "routing table");
	while (nr_done)
		wiring_fd_apply(irq, &t->fds[done[--nr_done]], true);
}

int wiring_commit(struct wiring_txn *t)
{
	struct vm_irq *irq = t->irq;
	struct wiring_route_op *undo = NULL;
	unsigned int *done = NULL, nr_done = 0, nr_undo = 0;
	uint64_t calls0, t0 = now_ns();
	bool routes_pushed = false;
	int ret = t->error;

	if (ret)
		goto out_free;
	done = malloc((t->nr_fds + 1) * sizeof(*done));
	undo = malloc((t->nr_routes + 1) * sizeof(*undo));
	if (!done || !undo) {
		ret = -ENOMEM;
		goto out_free;
	}

	pthread_mutex_lock(&irq->lock);
	calls0 = irq_wiring_calls(&irq->st);
	/* Phases 0/1: deassigns.  Phase 2: routes.  Phases 3/4: assigns. */
	for (int phase = 0; phase <= 4 && !ret; phase++) {
		if (phase == 2) {
			ret = wiring_routes_apply(t, undo, &nr_undo,
						  &routes_pushed);
			continue;
		}
		for (unsigned int i = 0; i < t->nr_fds && !ret; i++) {
			if (fd_phase(&t->fds[i]) != phase)
				continue;
			ret = wiring_fd_apply(irq, &t->fds[i], t->fds[i].assign);
			if (!ret)
				done[nr_done++] = i;
		}
	}

	if (ret) {
		wiring_rollback(t, done, nr_done, undo, nr_undo, routes_pushed);
		irq->st.failed_commits++;
	} else {
		irq->st.commits++;
	}
	irq->st.last_ioctls = irq_wiring_calls(&irq->st) - calls0;
	irq->st.last_ns = now_ns() - t0;
	irq->st.commit_ns += irq->st.last_ns;
	pthread_mutex_unlock(&irq->lock);
out_free:
	free(done);
	free(undo);
	wiring_abort(t);
	return ret;
}
