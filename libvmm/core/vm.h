/* SPDX-License-Identifier: MIT */
/*
 * struct vmm: one VM.  Everything a VM owns hangs off this struct; there is
 * no process-global VM state (several VMs per process work side by side).
 */
#ifndef VMM_VM_H
#define VMM_VM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "iobus.h"
#include "kvm.h"
#include "memory.h"
#include "vmm/vmm.h"

struct vcpu;
struct kvm_run;
struct machine;
struct machine_config;
struct vm_irq;
struct sandbox;

enum vm_state {
	VM_CONFIG,  /* configurable; nothing runs */
	VM_RUNNING, /* vmm_start() succeeded; threads may be running */
	VM_STOPPED, /* vmm_wait() joined every thread */
};

struct vmm {
	/*
	 * lock protects state and *config; held briefly (never
	 * while waiting for the guest).  join_lock serialises vmm_wait()
	 * callers while they join the VM's threads.
	 */
	pthread_mutex_t lock;
	pthread_mutex_t join_lock;
	enum vm_state state;

	/*
	 * The API's configuration (struct machine_config, machine/machine-config.h):
	 * owned and read by machine/ alone; the core never looks inside.
	 */
	struct machine_config *config;

	/* KVM. */
	struct kvm_sys kvm;
	int vm_fd;

	/* Runtime (built by vmm_start()). */
	unsigned int nr_vcpus; /* of vcpus[]: the configuration's, at start */
	struct guest_mem mem;
	struct iobus pio, mmio;
	struct vcpu *vcpus;
	struct vm_irq *irq;	 /* GSI routing + batched wiring */
	struct machine *machine; /* devices, owned by machine.c */
	struct sandbox *seccomp; /* built by vmm_start(); NULL = off */
	/*
	 * Coalesced port I/O and MMIO (vm_coalesce_pio(), and the zones
	 * devices register with wiring_coalesce()): KVM logs writes there in
	 * this ring, shared by all vCPUs, instead of exiting; every exit
	 * drains it (vm_flush_coalesced()) before it is handled, under
	 * coalesced_lock.  NULL when nothing may be coalesced.
	 */
	struct kvm_coalesced_mmio_ring *coalesced_ring;
	uint32_t coalesced_max; /* ring entries */
	pthread_mutex_t coalesced_lock;

	/*
	 * Exit protocol: the first vcpu_stop_all() wins (vm_set_exit():
	 * exit_reason goes from VMM_EXIT_NONE once, by compare-and-swap),
	 * sets stopping, kicks every vCPU and signals exit_efd.
	 */
	int exit_reason;
	bool stopping;
	int exit_efd;
	/* The exit port's value, stored before vcpu_stop_all() with
	 * VMM_EXIT_GUEST_STATUS (whose compare-and-swap publishes it) and
	 * read only once exit_reason says so (vmm_get_guest_status()).
	 * guest_status_claimed (compare-and-swap) lets only the first write
	 * store it, whichever vCPU makes it. */
	uint32_t guest_status;
	bool guest_status_claimed;

	/*
	 * Pause protocol (vcpu_pause_all(), vcpu_resume_all()): pause_req
	 * asks every vCPU thread to park before its next KVM_RUN; each one
	 * counts itself in parked and waits on pause_cond until pause_req is
	 * cleared or the VM stops.  live_vcpus counts the vCPU threads in
	 * their run loop.  All under pause_lock, which is held only briefly.
	 */
	pthread_mutex_t pause_lock;
	pthread_cond_t pause_cond;
	/* Serialises vmm_pause() and vmm_resume() callers (held across the
	 * wait for the vCPUs, so not vm->lock). */
	pthread_mutex_t pause_call;
	bool pause_req;
	unsigned int parked;
	unsigned int live_vcpus;
};

/*
 * The exit protocol's first half: record @reason if none is yet (first
 * caller wins) and set stopping.  Returns whether this call set it; the
 * caller then kicks the vCPUs and calls vm_signal_exit()
 * (vcpu_stop_all() does all three).  Any thread.
 */
bool vm_set_exit(struct vmm *vm, int reason);
/* Wake whoever polls the exit eventfd (vmm_get_exit_eventfd()). */
void vm_signal_exit(struct vmm *vm);
static inline bool vm_stopping(struct vmm *vm)
{
	/* Pairs with the release store in vm_set_exit(). */
	return __atomic_load_n(&vm->stopping, __ATOMIC_ACQUIRE);
}
/* Initialise and destroy the pause protocol's lock and condition
 * (vmm_create(), vmm_destroy()). */
void vm_pause_init(struct vmm *vm);
void vm_pause_destroy(struct vmm *vm);

/*
 * vm_coalesce_pio() - let KVM log guest writes to ports [@port, @port +
 * @len) in the coalesced ring instead of exiting to us for each.  Only for
 * registers whose writes have no effect the guest can see before its next
 * exit to us: the ring is drained, in order, before any exit is handled.
 * Context: vmm_start(), after vm_coalesced_ring_map(), before the vCPUs
 * run.  Returns 0; -ENOTSUP without KVM_CAP_COALESCED_PIO or without the
 * ring; -errno of the ioctl.
 */
int vm_coalesce_pio(struct vmm *vm, uint64_t port, uint32_t len) __must_check;
/*
 * vm_coalesced_ring_offset() - whether KVM can coalesce MMIO writes into a
 * ring we can map: the ring's page offset in the vCPU mapping (> 0), or
 * -ENOTSUP.  Devices may register zones only when this succeeds, and then
 * vm_coalesced_ring_map() must run before any vCPU does.
 */
int vm_coalesced_ring_offset(struct vmm *vm);
/* Map the ring: @run is vCPU 0's kvm_run mapping (the same page for all).
 * Context: vmm_start(), after the vCPUs exist, before they run.  Returns
 * 0, -ENOTSUP (see above), -EINVAL (no vCPU yet: @run NULL). */
int vm_coalesced_ring_map(struct vmm *vm, struct kvm_run *run) __must_check;
/* Dispatch the writes KVM logged for coalesced ports and MMIO zones.
 * Context: vCPU thread, before it handles an exit.  Cheap when the ring
 * is empty. */
void vm_flush_coalesced(struct vmm *vm);

#endif
