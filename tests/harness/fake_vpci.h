/* SPDX-License-Identifier: MIT */
/*
 * Driving the modern virtio-pci transport the way the Linux driver does,
 * without KVM: real PIO/MMIO buses, a real PCI bus and MSI-X emulation, and
 * the real wiring transaction over a fake KVM ioctl function that records
 * what would be registered (KVM_IOEVENTFD per notify address, KVM_IRQFD per
 * GSI, KVM_SET_GSI_ROUTING's MSI routes) and fails on demand.
 *
 * Shared by the unit tests (check_virtio_pci, check_abuse,
 * check_blk_iothread), the virtio-pci fuzz target and devbench.  It does
 * not depend on Check: a broken KVM contract (double assign, deassign of
 * nothing, two ioeventfds on one address, fd or GSI out of range) prints
 * what happened and abort()s, from any thread; accessors named *_rd/_wr
 * abort when the bus refuses an access.  fv_probe() returns an error
 * instead, so the caller can report it as its own failure.
 *
 * The fake KVM is thread-safe: every ioctl and every lookup runs under its
 * lock (I/O threads raise configuration interrupts with KVM_SIGNAL_MSI).
 * Tests read the counters directly when no other thread can call it, and
 * through fv_kvm_get() otherwise.
 */
#ifndef VMM_TESTS_HARNESS_FAKE_VPCI_H
#define VMM_TESTS_HARNESS_FAKE_VPCI_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <linux/virtio_pci.h>

#include "iobus.h"
#include "irq.h"
#include "memory.h"
#include "pci/pci.h"
#include "virtio/virtio-pci.h"

#define FV_MAX_FD 16384
#define FV_MAX_ZONES 64
#define FV_MMIO_BASE 0xc0000000ull
#define FV_MMIO_SIZE 0x20000000ull
#define FV_RING_ENTRIES 170 /* as many as a 4 KiB page holds in KVM */

struct fv_kvm {
	pthread_mutex_t lock;
	/* Failure injection: the fail_at-th call (1-based; 0 = never) returns
	 * -ENOSPC.  Deassigns are spared unless fail_deassign is set (KVM
	 * cannot fail to deassign an fd it holds). */
	unsigned int calls, fail_at;
	bool fail_deassign;
	unsigned int routing_calls, irqfd_calls, ioeventfd_calls, msi_calls;
	unsigned int unknown_calls;
	/* KVM_SET_GSI_ROUTING: the MSI routes of the last table. */
	unsigned int nr_msi, max_gsi;
	bool route_valid[IRQ_MAX_ROUTES];
	uint64_t route_addr[IRQ_MAX_ROUTES];
	uint32_t route_data[IRQ_MAX_ROUTES];
	/* The route's requester ID, or -1 without KVM_MSI_VALID_DEVID. */
	int64_t route_devid[IRQ_MAX_ROUTES];
	/* KVM_IOEVENTFD, per eventfd. */
	bool ioev[FV_MAX_FD];
	uint64_t ioev_addr[FV_MAX_FD];
	uint32_t ioev_len[FV_MAX_FD];
	int ioev_end; /* above the highest fd ever assigned: scans stop here */
	/* KVM_IRQFD, per eventfd: its GSI, -1 when none. */
	int irqfd_gsi[FV_MAX_FD];
	unsigned int live_ioev, live_irqfd;
	/* The last KVM_SIGNAL_MSI. */
	uint64_t msi_addr;
	uint32_t msi_data;
	int64_t msi_devid; /* -1 without KVM_MSI_VALID_DEVID */
	/* Non-zero: every KVM_SIGNAL_MSI fails with it (e.g. -EINVAL). */
	int msi_fail;
	/* KVM_(UN)REGISTER_COALESCED_MMIO: the registered zones (an
	 * unregister must name one exactly, as the transport does). */
	unsigned int zone_calls, nr_zones;
	uint64_t zone_addr[FV_MAX_ZONES];
	uint32_t zone_len[FV_MAX_ZONES];
};

/* The fake ioctl (irq_create()'s kvm_ioctl_fn); @opaque is a struct fv_kvm. */
int fv_kvm_ioctl(void *opaque, int fd, unsigned long req, void *arg);
/* The eventfd KVM would signal on a write to @addr, or -1. */
int fv_kvm_kick_fd(struct fv_kvm *k, uint64_t addr);
/* The irqfd whose GSI routes to MSI message (@addr, @data), or -1. */
int fv_kvm_call_fd(struct fv_kvm *k, uint64_t addr, uint32_t data);
/* Read one counter of @k under its lock. */
unsigned int fv_kvm_get(struct fv_kvm *k, const unsigned int *field);

/* The machine, and what the driver found while probing. */
struct fv {
	struct fv_kvm *kvm;
	struct iobus pio, mmio;
	struct pci_bus *bus;
	struct vm_irq *irq;
	struct guest_mem *mem; /* guest RAM (the caller's) */
	struct virtio_transport *t;
	uint64_t mmio_base;

	unsigned int slot;
	uint64_t bar;
	uint32_t common, notify, notify_len, mult, isr, devcfg, devcfg_len;
	unsigned int pcicfg, msix;
	unsigned int nr_vectors;
	uint32_t table, pba;
	unsigned int nq;

	/*
	 * KVM's coalesced MMIO ring, if @defer: a BAR write (fv_mw()) that
	 * lands in a zone registered with the fake KVM is logged here
	 * instead of dispatched, and every other access -- an exit: a BAR
	 * read or a write outside the zones, a config access -- first
	 * dispatches what is logged, in order (fv_drain()), as a vCPU does.
	 * A full ring makes the write exit, as in KVM.  @exits counts the
	 * BAR accesses that exited.
	 */
	bool defer;
	unsigned int nr_logged, exits;
	struct {
		uint64_t addr, val;
		unsigned int len;
	} logged[FV_RING_ENTRIES];
};

/*
 * Fake KVM, buses, PCI bus (MMIO window [mmio_base, +mmio_size)) and irq
 * (irq_create(@vm_fd, fv_kvm_ioctl, ...)) for the transport, over guest
 * RAM @mem, with the interrupt controller of the platform the library was
 * built for (machine_arch_irq_platform()).  0 or -errno; fv_destroy()
 * cleans up after a partial init.
 */
int fv_init(struct fv *v, int vm_fd, uint64_t mmio_base, uint64_t mmio_size,
	    struct guest_mem *mem);
/* The same with another interrupt controller (fv_init()). */
struct irq_platform;
int fv_init_platform(struct fv *v, int vm_fd, const struct irq_platform *plat,
		     uint64_t mmio_base, uint64_t mmio_size, struct guest_mem *mem);
/* vpci_destroy(v->t) (if still there), then the machine. */
void fv_destroy(struct fv *v);
/* vpci_params with the machine's bus, irq and RAM filled in. */
struct vpci_params fv_params(struct fv *v);
/* vpci_create() with @p (bus/irq/mem filled in if unset) and fv_probe(). */
int fv_create(struct fv *v, struct vpci_params *p);

/*
 * Find the virtio function and walk its capabilities as virtio_pci_modern
 * does; fills in the driver's view.  -ENODEV: no function or a capability
 * missing; -EPROTO: a malformed one (reported on stderr).
 */
int fv_probe(struct fv *v);

/* Config space of slot @slot through 0xCF8/0xCFC: first failing dispatch. */
int fv_cfg_access(struct fv *v, unsigned int slot, unsigned int off,
		  uint32_t *val, unsigned int len, bool write);
/* ... of the probed function; abort if the bus refuses. */
uint32_t fv_cfg_rd(struct fv *v, unsigned int off, unsigned int len);
void fv_cfg_wr(struct fv *v, unsigned int off, uint32_t val, unsigned int len);
/* Dispatch the writes logged in the fake coalesced ring (see struct fv). */
void fv_drain(struct fv *v);
/* BAR 0 MMIO at @off; abort if the bus refuses. */
uint64_t fv_mr(struct fv *v, uint32_t off, unsigned int len);
void fv_mw(struct fv *v, uint32_t off, uint64_t val, unsigned int len);

#define FV_COMMON_RD(v, field, len) \
	fv_mr(v, (v)->common + VIRTIO_PCI_COMMON_##field, len)
#define FV_COMMON_WR(v, field, val, len) \
	fv_mw(v, (v)->common + VIRTIO_PCI_COMMON_##field, val, len)

uint8_t fv_status(struct fv *v);
void fv_status_add(struct fv *v, uint8_t bits);

/* MSI-X: message control, one entry's message, its mask bit, PBA. */
void fv_msix_ctrl(struct fv *v, uint16_t bits);
void fv_msix_write(struct fv *v, unsigned int vec, uint64_t addr, uint32_t data);
void fv_msix_mask(struct fv *v, unsigned int vec, bool masked);
bool fv_pba_bit(struct fv *v, unsigned int vec);

/* The notify address of queue @q (selects it). */
uint64_t fv_notify_addr(struct fv *v, unsigned int q);

/*
 * Reset (status must read 0), ACKNOWLEDGE, DRIVER, read the offered
 * features (into *@offered if non-NULL), write @want, FEATURES_OK.
 * 0; -EIO: status not 0 after reset or FEATURES_OK did not stick;
 * -ENOTSUP: @want is not offered (nothing written).
 */
int fv_negotiate(struct fv *v, uint64_t want, uint64_t *offered);
/* Select queue @q, set size, rings, vector, enable.  Returns the vector
 * the device accepted (read back before enabling). */
uint16_t fv_queue_setup(struct fv *v, unsigned int q, uint16_t size,
			uint64_t desc, uint64_t avail, uint64_t used,
			uint16_t vector);

#endif
