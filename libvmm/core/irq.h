/* SPDX-License-Identifier: MIT */
/*
 * Interrupt and notification plumbing of a VM, applied in batches.
 *
 * KVM_SET_GSI_ROUTING replaces the VM's whole GSI routing table and ends in
 * an SRCU grace period on every call, so resending the full table once per
 * MSI-X vector costs O(vectors^2) work and one grace period per vector
 * (docs/design-notes.md, "Core").  Here a device stages
 * everything it needs -- MSI routes, irqfds, ioeventfds -- in a struct
 * wiring_txn, and wiring_commit() applies it with at most ONE
 * KVM_SET_GSI_ROUTING for the whole table plus one KVM_IRQFD / KVM_IOEVENTFD
 * per fd (the kernel has no batched form of those), O(1) userspace work per
 * item.  If any step fails, every step already done is undone in reverse
 * order and the routing table is restored: the VM is left exactly as before
 * the commit.
 *
 * Locking: one mutex per VM serialises commits and route-table changes; it
 * is taken by vCPU threads (device register writes) and the API thread.
 */
#ifndef VMM_IRQ_H
#define VMM_IRQ_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/compiler.h"

/* KVM_MAX_IRQ_ROUTES in the kernel (include/linux/kvm_host.h; what
 * KVM_CHECK_EXTENSION(KVM_CAP_IRQ_ROUTING) reports): entries of the whole
 * table, and one past the highest GSI. */
#define IRQ_MAX_ROUTES 4096u

struct kvm_irq_routing_entry;

/*
 * What the platform's interrupt controller asks of the routing table (the
 * core knows no PIC, IOAPIC or GIC; arch/<arch>/ describes its own).
 */
struct irq_platform {
	/* Routes the table always holds besides the MSI ones (x86: the
	 * PIC and IOAPIC pins); KVM_SET_GSI_ROUTING replaces everything. */
	const struct kvm_irq_routing_entry *chip_routes;
	unsigned int nr_chip_routes;
	/* MSI routes use GSIs from here on (past the chip's pins). */
	uint32_t first_msi_gsi;
	/* The MSI address as KVM reads it, from the one the guest
	 * programmed (x86: the extended destination ID); NULL: as is. */
	void (*msi_address)(uint64_t addr, uint32_t *lo, uint32_t *hi);
	/* The interrupt controller needs the requester ID of each MSI
	 * (arm64's ITS: KVM_MSI_VALID_DEVID on routes and KVM_SIGNAL_MSI). */
	bool msi_devid;
};

/*
 * How the module talks to KVM: ioctl(2) on the VM fd, returning 0/-errno.
 * Unit tests substitute a fake to count calls and inject failures.
 */
typedef int (*irq_ioctl_fn)(void *opaque, int fd, unsigned long req, void *arg);

struct irq_stats {
	uint64_t commits;	  /* successful wiring_commit() calls */
	uint64_t failed_commits;  /* rolled back */
	uint64_t set_gsi_routing; /* KVM_SET_GSI_ROUTING calls, all time */
	uint64_t irqfd_calls;	  /* KVM_IRQFD calls, all time */
	uint64_t ioeventfd_calls; /* KVM_IOEVENTFD calls, all time */
	uint64_t coalesced_calls; /* KVM_(UN)REGISTER_COALESCED_MMIO, all time */
	uint64_t commit_ns;	  /* total wall time inside wiring_commit() */
	uint64_t last_ioctls;	  /* KVM ioctls of the last commit */
	uint64_t last_ns;	  /* wall time of the last commit */
	uint32_t msi_routes;	  /* MSI routes currently installed */
};

struct vm_irq;

/* @plat must outlive the irq (a platform's static description).  Returns
 * 0, -EINVAL (a chip table that cannot fit), -ENOMEM. */
int irq_create(int vm_fd, const struct irq_platform *plat, irq_ioctl_fn fn,
	       void *opaque, struct vm_irq **out) __must_check;
void irq_destroy(struct vm_irq *irq);

/* Reserve / release a GSI for an MSI route (no KVM call: the route itself
 * is installed by the next commit that stages it). */
int irq_gsi_alloc(struct vm_irq *irq, uint32_t *gsi) __must_check;
void irq_gsi_free(struct vm_irq *irq, uint32_t gsi);

/* Inject one MSI directly (KVM_SIGNAL_MSI), e.g. a config-change interrupt,
 * from requester @devid (bus << 8 | devfn; used where the platform wants
 * it).  Returns 0 or -errno. */
int irq_signal_msi(struct vm_irq *irq, uint64_t addr, uint32_t data,
		   uint32_t devid);

void irq_get_stats(struct vm_irq *irq, struct irq_stats *st);

/* ---- transactions ---- */

enum wiring_op_kind {
	WIRING_IOEVENTFD,
	WIRING_IRQFD,
	WIRING_COALESCED, /* a coalesced MMIO zone (no fd) */
};

struct wiring_fd_op {
	enum wiring_op_kind kind;
	bool assign;	/* false: deassign */
	int fd;		/* not for a coalesced zone */
	uint32_t gsi;	/* irqfd */
	uint64_t addr;	/* ioeventfd, coalesced zone: guest address */
	uint32_t len;	/* ioeventfd: 0 (any length), 1, 2, 4 or 8; zone: bytes */
	bool pio;	/* ioeventfd on the port bus */
};

struct wiring_route_op {
	uint32_t gsi;
	bool valid;	/* false: remove the route */
	uint64_t addr;
	uint32_t data;
	uint32_t devid;	/* requester ID (irq_platform.msi_devid) */
};

struct wiring_txn {
	struct vm_irq *irq;
	struct wiring_fd_op *fds;
	unsigned int nr_fds, cap_fds;
	struct wiring_route_op *routes;
	unsigned int nr_routes, cap_routes;
	int error; /* first staging error (-ENOMEM/-EINVAL), reported by commit */
};

void wiring_begin(struct wiring_txn *t, struct vm_irq *irq);
/* Stage: set (valid) or remove (!valid) the MSI route of @gsi, for MSIs
 * of requester @devid (bus << 8 | devfn). */
void wiring_route(struct wiring_txn *t, uint32_t gsi, bool valid, uint64_t addr,
		  uint32_t data, uint32_t devid);
void wiring_irqfd(struct wiring_txn *t, int fd, uint32_t gsi, bool assign);
void wiring_ioeventfd(struct wiring_txn *t, int fd, uint64_t addr, uint32_t len,
		      bool pio, bool assign);
/* Register (@assign) or remove the coalesced MMIO zone [@addr, @addr +
 * @len): KVM logs guest writes there in the VM's coalesced ring instead of
 * exiting (vm.h: only for registers whose writes the guest cannot observe
 * before its next exit, and only where the VM drains that ring).  Staged
 * with the ioeventfds: removals first, registrations last. */
void wiring_coalesce(struct wiring_txn *t, uint64_t addr, uint32_t len,
		     bool assign);
/*
 * Apply everything staged, in this order: ioeventfd, zone and irqfd
 * deassigns, the route table (one KVM_SET_GSI_ROUTING, only if a route
 * changed), irqfd assigns, ioeventfd and zone assigns.  On failure everything is undone and the
 * error returned.  Frees the transaction either way.  Returns 0, -ENOMEM,
 * -EINVAL (bad staging) or the failing ioctl's -errno.
 */
int wiring_commit(struct wiring_txn *t) __must_check;
/* Drop a staged transaction without applying it. */
void wiring_abort(struct wiring_txn *t);

#endif
