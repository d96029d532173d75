/* SPDX-License-Identifier: MIT */
/*
 * vCPUs: one thread each ("vmm-vcpuN") looping on KVM_RUN and dispatching
 * exits to the PIO/MMIO buses.  A vCPU is kicked out of KVM_RUN by setting
 * run->immediate_exit and sending VMM_KICK_SIGNAL to its thread: the flag
 * covers a kick that lands before the thread enters KVM_RUN, the signal one
 * that lands while it is inside.
 */
#ifndef VMM_VCPU_H
#define VMM_VCPU_H

#include <linux/kvm.h>
#include <pthread.h>
#include <stdbool.h>

#include "kvmstats.h"
#include "util/compiler.h"

struct vmm;

/* Counters read from each vCPU's KVM stats fd (struct vmm_kvm_stats). */
enum vcpu_stat {
	VCPU_STAT_EXITS,
	VCPU_STAT_IO_EXITS,
	VCPU_STAT_MMIO_EXITS,
	VCPU_STAT_HALT_EXITS,
	VCPU_STAT_IRQ_EXITS,
	VCPU_STAT_IRQ_INJECTIONS,
	VCPU_STAT_SIGNAL_EXITS,
	VCPU_STAT_NR,
};

struct vcpu {
	struct vmm *vm;
	unsigned int index;
	int fd;
	struct kvm_run *run;
	pthread_t thread;
	bool thread_started;
	struct kvmstats stats; /* fd -1 without KVM_CAP_BINARY_STATS_FD */
};

/*
 * KVM_CREATE_VCPU, mmap of kvm_run, CPUID (@cpuid from
 * KVM_GET_SUPPORTED_CPUID, fixed up here for this vCPU's APIC id), FPU and
 * LAPIC LINT0/LINT1 set up as the MP table describes.  Returns 0 or -errno.
 */
struct kvm_cpuid2;
int vcpu_create(struct vmm *vm, unsigned int index,
		const struct kvm_cpuid2 *cpuid, struct vcpu *vcpu) __must_check;
/* Long-mode entry state for the boot processor. */
int vcpu_set_boot_regs(struct vcpu *vcpu, const struct kvm_regs *regs,
		       const struct kvm_sregs *sregs) __must_check;
int vcpu_get_sregs(struct vcpu *vcpu, struct kvm_sregs *sregs) __must_check;
int vcpu_start(struct vcpu *vcpu) __must_check;
void vcpu_kick(struct vcpu *vcpu);
void vcpu_join(struct vcpu *vcpu);
void vcpu_destroy(struct vcpu *vcpu);
/* Add this vCPU's counters (enum vcpu_stat order) to @sum. -ENOTSUP if
 * KVM has no binary stats. */
int vcpu_add_stats(struct vcpu *vcpu, uint64_t *sum);

/* Install the no-op VMM_KICK_SIGNAL handler if the signal has none. */
int vcpu_signal_setup(void) __must_check;

#endif
