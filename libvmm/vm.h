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
struct machine;
struct vm_irq;
struct sandbox;

enum vm_state {
	VM_CONFIG,  /* configurable; nothing runs */
	VM_RUNNING, /* vmm_start() succeeded; threads may be running */
	VM_STOPPED, /* vmm_wait() joined every thread */
};

/* A disk as configured through vmm_add_disk() (copied strings). */
struct vm_disk_cfg {
	struct vmm_disk_config cfg; /* path/serial point into the copies below */
	char *path;
	char *serial;
	int fd; /* dup of cfg.fd, or -1 */
};

struct vmm {
	/*
	 * lock protects state and the configuration; held briefly (never
	 * while waiting for the guest).  join_lock serialises vmm_wait()
	 * callers while they join the VM's threads.
	 */
	pthread_mutex_t lock;
	pthread_mutex_t join_lock;
	enum vm_state state;

	/* Configuration (state CONFIG). */
	unsigned int nr_vcpus;
	uint64_t ram_size;
	char *kernel_path, *initrd_path, *cmdline;
	int console_in, console_out;
	struct vm_disk_cfg *disks;
	unsigned int nr_disks;
	int seccomp_mode; /* enum vmm_seccomp_mode */
	vmm_start_hook_fn start_hook; /* vmm_set_start_hook(), or NULL */
	void *start_hook_opaque;
	int iothread_sched; /* enum vmm_iothread_sched */

	/* KVM. */
	struct kvm_sys kvm;
	int vm_fd;

	/* Runtime (built by vmm_start()). */
	struct guest_mem mem;
	struct iobus pio, mmio;
	struct vcpu *vcpus;
	struct vm_irq *irq;	 /* GSI routing + batched wiring */
	struct machine *machine; /* devices, owned by machine.c */
	struct sandbox *seccomp; /* built by vmm_start(); NULL = off */

	/*
	 * Exit protocol: the first vm_request_exit() wins (exit_reason goes
	 * from VMM_EXIT_NONE once, by compare-and-swap), sets stopping, kicks
	 * every vCPU and signals exit_efd.
	 */
	int exit_reason;
	bool stopping;
	int exit_efd;
};

/* Ask the whole VM to stop with @reason (first caller wins). Any thread. */
void vm_request_exit(struct vmm *vm, int reason);
static inline bool vm_stopping(struct vmm *vm)
{
	/* Pairs with the release store in vm_request_exit(). */
	return __atomic_load_n(&vm->stopping, __ATOMIC_ACQUIRE);
}

#endif
