/* SPDX-License-Identifier: MIT */
/*
 * vCPUs: one thread each ("vmm-vcpuN") looping on KVM_RUN and dispatching
 * exits to the PIO/MMIO buses.
 *
 * Kicks.  A vCPU is kicked out of KVM_RUN by setting run->immediate_exit
 * and sending VMM_KICK_SIGNAL to its thread (pthread_kill).  The thread
 * keeps that signal blocked in user space (thread.h: it starts with every
 * asynchronous signal blocked) and unblocks it only inside KVM_RUN, through
 * KVM_SET_SIGNAL_MASK.  So a kick is never delivered to a handler: it stays
 * pending until the thread consumes it with sigtimedwait() after KVM_RUN
 * returns -EINTR, and
 *  - a kick sent while the thread is outside KVM_RUN (between its check
 *    of vm_stopping() and the ioctl) makes the next KVM_RUN return at once;
 *  - the process's disposition of the signal does not matter: the kernel
 *    discards an ignored signal only if the thread does not block it, and
 *    while in KVM_RUN the thread's user mask counts as blocking
 *    (real_blocked), so SIG_IGN, SIG_DFL, the embedder's handler or a
 *    mask the creator inherited all work; the library never changes it.
 * immediate_exit stays as a second line: it catches a kick whose signal
 * was flushed (the embedder setting SIG_IGN discards pending signals).
 *
 * Thread lifetime.  kick_lock orders kicks against the thread's start and
 * end: vcpu_start() sets thread_started under it (so a kick during
 * pthread_create() waits and then signals the new thread), and the thread
 * sets thread_exited under it before it returns (so no kick signals a
 * thread that may already be joined).
 */
#ifndef VMM_VCPU_H
#define VMM_VCPU_H

#include <linux/kvm.h>
#include <pthread.h>
#include <sched.h>
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
	/*
	 * kick_lock protects thread, thread_started, thread_exited and
	 * thread_joined; held across pthread_create() and pthread_kill().
	 * Initialised by vcpu_create() (lock_ready).
	 */
	pthread_mutex_t kick_lock;
	bool lock_ready;
	pthread_t thread;
	bool thread_started; /* pthread_create() succeeded */
	bool thread_exited;  /* the thread no longer takes kicks */
	bool thread_joined;
	struct kvmstats stats; /* fd -1 without KVM_CAP_BINARY_STATS_FD */
};

/*
 * KVM_CREATE_VCPU, mmap of kvm_run and the stats fd: the arch-neutral part.
 * The platform sets up registers, CPUID, interrupt controller state before
 * the thread starts (arch/x86/vcpu.h).  On failure nothing is left open.
 * Returns 0, -ENOTSUP (KVM refuses the index) or -errno.
 */
int vcpu_create(struct vmm *vm, unsigned int index, struct vcpu *vcpu) __must_check;
/* Start the vCPU thread.  Returns 0 or -errno. */
int vcpu_start(struct vcpu *vcpu) __must_check;
/* Ask the whole VM to stop with @reason (first caller wins, vm_set_exit()):
 * kick every vCPU of @vm, then signal its exit eventfd.  Any thread. */
void vcpu_stop_all(struct vmm *vm, int reason);
/*
 * vcpu_pause_all() - park every vCPU thread of @vm out of KVM_RUN and wait
 * until they all are (a vCPU in the middle of an exit finishes it first).
 * A vCPU thread not in its run loop yet parks before its first KVM_RUN.
 * Idempotent.  Context: any thread but a vCPU's.  Returns 0, -ESHUTDOWN
 * (the VM is stopping), -ETIMEDOUT (not all parked within @timeout_ms:
 * the pause is undone).
 */
int vcpu_pause_all(struct vmm *vm, unsigned int timeout_ms) __must_check;
/* Let parked vCPUs run again (a no-op when not paused).  Any thread. */
void vcpu_resume_all(struct vmm *vm);
/* Whether a pause is in effect (requested and not resumed).  Any thread. */
bool vcpu_paused(struct vmm *vm);
/* Make the thread leave KVM_RUN (or not enter it) and re-check
 * vm_stopping().  Context: any thread; a no-op once the thread has ended
 * or before vcpu_create(). */
void vcpu_kick(struct vcpu *vcpu);
/* Wait for the thread to end (it does once the VM is stopping).  One
 * joiner at a time; idempotent. */
void vcpu_join(struct vcpu *vcpu);
void vcpu_destroy(struct vcpu *vcpu);
/* Add this vCPU's counters (enum vcpu_stat order) to @sum. -ENOTSUP if
 * KVM has no binary stats. */
int vcpu_add_stats(struct vcpu *vcpu, uint64_t *sum);

/* Pin the vCPU's running thread to @set (pthread_setaffinity_np()).
 * Returns 0, -ESRCH when the thread is not running, or the call's -errno.
 * Context: a thread the library does not confine (the one in vmm_start()). */
int vcpu_set_affinity(struct vcpu *vcpu, const cpu_set_t *set);

#endif
