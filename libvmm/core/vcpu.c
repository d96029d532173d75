/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "sandbox.h"
#include "thread.h"
#include "vcpu.h"
#include "vm.h"

/* Names in KVM's binary stats, in enum vcpu_stat order (kvm_stat's), as
 * x86|arm64 name them (kvmstats.h); arm64 has no port I/O exits and counts
 * neither host-interrupt exits nor injections: unknown there. */
static const char *const stat_names[VCPU_STAT_NR] = {
	"exits", "io_exits", "mmio_exits|mmio_exit_user", "halt_exits|wfi_exit_stat",
	"irq_exits", "irq_injections", "signal_exits",
};

int vcpu_add_stats(struct vcpu *vcpu, uint64_t *sum)
{
	uint64_t v[VCPU_STAT_NR];
	int ret;

	if (vcpu->stats.fd < 0)
		return -ENOTSUP;
	ret = kvmstats_read(&vcpu->stats, v);
	if (ret)
		return ret;
	for (unsigned int i = 0; i < VCPU_STAT_NR; i++)
		sum[i] = v[i] == UINT64_MAX || sum[i] == UINT64_MAX ? UINT64_MAX
								   : sum[i] + v[i];
	return 0;
}

int vcpu_create(struct vmm *vm, unsigned int index, struct vcpu *vcpu)
{
	int ret;

	memset(vcpu, 0, sizeof(*vcpu));
	vcpu->stats.fd = -1;
	vcpu->vm = vm;
	vcpu->index = index;
	ret = -pthread_mutex_init(&vcpu->kick_lock, NULL);
	if (ret) {
		vcpu->fd = -1;
		return ret;
	}
	vcpu->lock_ready = true;
	vcpu->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, (unsigned long)index);
	if (vcpu->fd < 0) {
		ret = -errno;
		vmm_err("KVM_CREATE_VCPU %u: %s", index, strerror(errno));
		vcpu->fd = -1;
		return ret == -EINVAL ? -ENOTSUP : ret;
	}
	vcpu->run = mmap(NULL, (size_t)vm->kvm.vcpu_mmap_size,
			 PROT_READ | PROT_WRITE, MAP_SHARED, vcpu->fd, 0);
	if (vcpu->run == MAP_FAILED) {
		ret = -errno;
		vmm_err("vCPU %u: mmap kvm_run: %s", index, strerror(errno));
		vcpu->run = NULL;
		vcpu_destroy(vcpu);
		return ret;
	}
	/* Statistics are optional (Linux 5.14+): without them only the
	 * exit-count figures are missing. */
	if (kvmstats_open(&vcpu->stats, vcpu->fd, stat_names, VCPU_STAT_NR))
		vcpu->stats.fd = -1;
	return 0;
}

static void vcpu_handle_io(struct vcpu *vcpu)
{
	struct kvm_run *run = vcpu->run;
	uint8_t *data = (uint8_t *)run + run->io.data_offset;
	bool is_write = run->io.direction == KVM_EXIT_IO_OUT;

	/* String I/O (rep outs/ins) arrives as count back-to-back items. */
	for (uint32_t i = 0; i < run->io.count; i++) {
		iobus_dispatch(&vcpu->vm->pio, run->io.port, data, run->io.size,
			       is_write);
		data += run->io.size;
	}
}

static const char *exit_name(uint32_t r)
{
	switch (r) {
	case KVM_EXIT_FAIL_ENTRY: return "KVM_EXIT_FAIL_ENTRY";
	case KVM_EXIT_INTERNAL_ERROR: return "KVM_EXIT_INTERNAL_ERROR";
	case KVM_EXIT_HLT: return "KVM_EXIT_HLT";
	case KVM_EXIT_EXCEPTION: return "KVM_EXIT_EXCEPTION";
	default: return "unexpected exit";
	}
}

/* Context: vCPU thread. Returns false when the loop must end. */
static bool vcpu_handle_exit(struct vcpu *vcpu)
{
	struct kvm_run *run = vcpu->run;
	struct vmm *vm = vcpu->vm;

	/* Writes KVM logged instead of exiting happened before this exit
	 * (on any vCPU): apply them first, whatever the exit is. */
	vm_flush_coalesced(vm);
	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		vcpu_handle_io(vcpu);
		return true;
	case KVM_EXIT_MMIO:
		iobus_dispatch(&vm->mmio, run->mmio.phys_addr, run->mmio.data,
			       MIN(run->mmio.len, 8u), run->mmio.is_write);
		return true;
	case KVM_EXIT_INTR:
		return true;
	case KVM_EXIT_SHUTDOWN:
		vmm_info("vCPU %u: triple fault (KVM_EXIT_SHUTDOWN)", vcpu->index);
		vcpu_stop_all(vm, VMM_EXIT_TRIPLE_FAULT);
		return false;
	case KVM_EXIT_SYSTEM_EVENT:
		/* arm64: PSCI SYSTEM_RESET / SYSTEM_OFF, handled by KVM and
		 * reported here; a crash is the guest's, not ours. */
		switch (run->system_event.type) {
		case KVM_SYSTEM_EVENT_RESET:
			vmm_info("guest requested a reset (vCPU %u)", vcpu->index);
			vcpu_stop_all(vm, VMM_EXIT_GUEST_RESET);
			return false;
		case KVM_SYSTEM_EVENT_SHUTDOWN:
			vmm_info("guest powered off (vCPU %u)", vcpu->index);
			vcpu_stop_all(vm, VMM_EXIT_POWEROFF);
			return false;
		case KVM_SYSTEM_EVENT_CRASH:
			vmm_info("vCPU %u: guest crashed (system event)", vcpu->index);
			vcpu_stop_all(vm, VMM_EXIT_TRIPLE_FAULT);
			return false;
		}
		vmm_err("vCPU %u: system event %u", vcpu->index,
			run->system_event.type);
		break;
	case KVM_EXIT_FAIL_ENTRY:
		vmm_err("vCPU %u: %s, hardware reason 0x%llx", vcpu->index,
			exit_name(run->exit_reason),
			(unsigned long long)run->fail_entry.hardware_entry_failure_reason);
		break;
	case KVM_EXIT_INTERNAL_ERROR:
		vmm_err("vCPU %u: %s, suberror %u", vcpu->index,
			exit_name(run->exit_reason), run->internal.suberror);
		break;
	default:
		vmm_err("vCPU %u: %s %u", vcpu->index, exit_name(run->exit_reason),
			run->exit_reason);
		break;
	}
	vcpu_stop_all(vm, VMM_EXIT_ERROR);
	return false;
}

/*
 * The signal mask inside KVM_RUN: this thread's mask (every asynchronous
 * signal blocked, thread.h) without VMM_KICK_SIGNAL.  KVM swaps it in for
 * the duration of KVM_RUN and keeps the user mask in real_blocked, so a
 * kick pending from before the ioctl makes it return -EINTR at once, and
 * one sent during it interrupts it; in both cases the signal stays pending
 * (blocked again) for vcpu_take_kicks().
 */
static int vcpu_set_run_sigmask(struct vcpu *vcpu)
{
	union {
		struct kvm_signal_mask m;
		uint8_t buf[sizeof(struct kvm_signal_mask) + 8];
	} km;
	sigset_t set;
	int ret;

	ret = pthread_sigmask(SIG_BLOCK, NULL, &set);
	if (ret)
		return -ret;
	sigdelset(&set, VMM_KICK_SIGNAL);
	/* The kernel's sigset is 64 bits on x86_64: signals 1..64, the first
	 * word of glibc's sigset_t. */
	km.m.len = 8;
	memcpy(km.m.sigset, &set, 8);
	if (ioctl(vcpu->fd, KVM_SET_SIGNAL_MASK, &km.m) < 0) {
		ret = -errno;
		vmm_err("vCPU %u: KVM_SET_SIGNAL_MASK: %s", vcpu->index,
			strerror(errno));
		return ret;
	}
	return 0;
}

/*
 * Consume this thread's pending VMM_KICK_SIGNALs (blocked here, so they
 * stay pending after KVM_RUN returns; left there, every KVM_RUN would fail
 * with -EINTR at once).  A kick is a pthread_kill() from this process
 * (SI_TKILL, our pid).  Anything else is a process-directed signal of the
 * embedder's (kill(2), sigqueue(3)) that the kernel handed to this thread
 * because it was the one in KVM_RUN with the signal unblocked: it is
 * passed on to the main thread (tgkill; the sender's siginfo is not kept),
 * never to the process again, which could hand it back to a vCPU.
 * Context: vCPU thread.
 */
static void vcpu_take_kicks(void)
{
	static const struct timespec poll_only = { 0, 0 };
	sigset_t set;
	siginfo_t si;

	sigemptyset(&set);
	sigaddset(&set, VMM_KICK_SIGNAL);
	/* The system call itself: glibc's sigtimedwait() reports SI_TKILL as
	 * SI_USER, and that difference is what tells a kick from a kill(2).
	 * 8: the kernel's sigset size. */
	while (syscall(SYS_rt_sigtimedwait, &set, &si, &poll_only, 8) ==
	       VMM_KICK_SIGNAL) {
		if (si.si_code == SI_TKILL && si.si_pid == getpid())
			continue;
		if (syscall(SYS_tgkill, getpid(), getpid(), VMM_KICK_SIGNAL) < 0)
			vmm_warn("passing signal %d on to the main thread: %s",
				 VMM_KICK_SIGNAL, strerror(errno));
	}
}

/*
 * Context: vCPU thread, between two KVM_RUNs.  Park while a pause is in
 * effect: counted in vm->parked (vcpu_pause_all() waits for every live
 * vCPU), woken by vcpu_resume_all() or a stop.
 */
static void vcpu_park(struct vmm *vm)
{
	pthread_mutex_lock(&vm->pause_lock);
	vm->parked++;
	pthread_cond_broadcast(&vm->pause_cond);
	while (vm->pause_req && !vm_stopping(vm))
		pthread_cond_wait(&vm->pause_cond, &vm->pause_lock);
	vm->parked--;
	pthread_mutex_unlock(&vm->pause_lock);
}

/* Context: vCPU thread.  Count it among the live vCPUs (or no longer). */
static void vcpu_live(struct vmm *vm, bool live)
{
	pthread_mutex_lock(&vm->pause_lock);
	if (live)
		vm->live_vcpus++;
	else
		vm->live_vcpus--;
	pthread_cond_broadcast(&vm->pause_cond);
	pthread_mutex_unlock(&vm->pause_lock);
}

/* Context: vCPU thread. */
static void vcpu_run_loop(struct vcpu *vcpu)
{
	char name[16];

	snprintf(name, sizeof(name), "vmm-vcpu%u", vcpu->index);
	pthread_setname_np(pthread_self(), name);
	if (vcpu_set_run_sigmask(vcpu)) {
		vcpu_stop_all(vcpu->vm, VMM_EXIT_ERROR);
		return;
	}
	/* Everything is set up: from here on only the vCPU allow-list. */
	if (sandbox_install(vcpu->vm->seccomp, SANDBOX_CLASS_VCPU)) {
		vmm_err("seccomp: cannot confine vCPU %u", vcpu->index);
		vcpu_stop_all(vcpu->vm, VMM_EXIT_ERROR);
		return;
	}

	/* A kick sent after this check stays pending (blocked) until the
	 * next KVM_RUN unblocks it: nothing is lost in between. */
	while (!vm_stopping(vcpu->vm)) {
		/* Relaxed read: a pause set after it kicks us (immediate_exit
		 * or the signal), and the next round sees it under the lock. */
		if (__atomic_load_n(&vcpu->vm->pause_req, __ATOMIC_RELAXED)) {
			vcpu_park(vcpu->vm);
			continue;
		}
		if (ioctl(vcpu->fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN) {
				/* Kicked: clear the flag set by vcpu_kick(),
				 * consume the signal, re-check why. */
				__atomic_store_n(&vcpu->run->immediate_exit, 0,
						 __ATOMIC_RELAXED);
				vcpu_take_kicks();
				continue;
			}
			vmm_err("vCPU %u: KVM_RUN: %s", vcpu->index,
				strerror(errno));
			vcpu_stop_all(vcpu->vm, VMM_EXIT_ERROR);
			break;
		}
		if (!vcpu_handle_exit(vcpu))
			break;
	}
}

static void *vcpu_thread(void *arg)
{
	struct vcpu *vcpu = arg;

	vcpu_live(vcpu->vm, true);
	vcpu_run_loop(vcpu);
	vcpu_live(vcpu->vm, false);
	/* From here on no kick signals this thread: once it returns, a
	 * joiner may release it, and pthread_kill() on it would be
	 * undefined.  Pairs with the check in vcpu_kick(). */
	pthread_mutex_lock(&vcpu->kick_lock);
	vcpu->thread_exited = true;
	pthread_mutex_unlock(&vcpu->kick_lock);
	return NULL;
}

int vcpu_start(struct vcpu *vcpu)
{
	int ret;

	/* Held across the creation: a kick (a guest exit on another vCPU)
	 * waits for thread_started and then signals the new thread, whose
	 * mask blocks the signal from its first instruction, so the kick
	 * stays pending for its first KVM_RUN. */
	pthread_mutex_lock(&vcpu->kick_lock);
	ret = thread_spawn(&vcpu->thread, vcpu_thread, vcpu);
	if (!ret)
		vcpu->thread_started = true;
	pthread_mutex_unlock(&vcpu->kick_lock);
	if (ret)
		vmm_err("creating vCPU %u thread: %s", vcpu->index, strerror(-ret));
	return ret;
}

static void vcpu_kick_all(struct vmm *vm)
{
	if (vm->vcpus)
		for (unsigned int i = 0; i < vm->nr_vcpus; i++)
			vcpu_kick(&vm->vcpus[i]);
}

void vcpu_stop_all(struct vmm *vm, int reason)
{
	if (!vm_set_exit(vm, reason))
		return;
	vcpu_kick_all(vm);
	/* Parked vCPUs wait on the pause condition: stopping ends that. */
	pthread_mutex_lock(&vm->pause_lock);
	pthread_cond_broadcast(&vm->pause_cond);
	pthread_mutex_unlock(&vm->pause_lock);
	vm_signal_exit(vm);
}

int vcpu_pause_all(struct vmm *vm, unsigned int timeout_ms)
{
	struct timespec dl;
	int ret = 0;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&vm->pause_lock);
	/* Relaxed store under the lock: the vCPUs' unlocked read of it is a
	 * hint, vcpu_park() re-reads it under the lock. */
	__atomic_store_n(&vm->pause_req, true, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&vm->pause_lock);
	/* After the store: a vCPU kicked now re-checks pause_req before it
	 * enters KVM_RUN again (vcpu_kick()'s lock orders the two). */
	vcpu_kick_all(vm);
	pthread_mutex_lock(&vm->pause_lock);
	while (vm->parked < vm->live_vcpus && !vm_stopping(vm) && !ret)
		ret = -pthread_cond_timedwait(&vm->pause_cond, &vm->pause_lock, &dl);
	if (vm_stopping(vm))
		ret = -ESHUTDOWN;
	if (ret) {
		__atomic_store_n(&vm->pause_req, false, __ATOMIC_RELAXED);
		pthread_cond_broadcast(&vm->pause_cond);
	}
	pthread_mutex_unlock(&vm->pause_lock);
	return ret;
}

void vcpu_resume_all(struct vmm *vm)
{
	pthread_mutex_lock(&vm->pause_lock);
	__atomic_store_n(&vm->pause_req, false, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&vm->pause_cond);
	pthread_mutex_unlock(&vm->pause_lock);
}

bool vcpu_paused(struct vmm *vm)
{
	bool p;

	pthread_mutex_lock(&vm->pause_lock);
	p = vm->pause_req;
	pthread_mutex_unlock(&vm->pause_lock);
	return p;
}

void vcpu_kick(struct vcpu *vcpu)
{
	if (!vcpu->lock_ready)
		return;
	/* Seen by KVM on the next entry if the thread is not in KVM_RUN yet;
	 * vm->stopping (set before the kick, release) is re-checked after. */
	if (vcpu->run)
		__atomic_store_n(&vcpu->run->immediate_exit, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&vcpu->kick_lock);
	if (vcpu->thread_started && !vcpu->thread_exited)
		pthread_kill(vcpu->thread, VMM_KICK_SIGNAL);
	pthread_mutex_unlock(&vcpu->kick_lock);
}

void vcpu_join(struct vcpu *vcpu)
{
	bool join;

	if (!vcpu->lock_ready)
		return;
	pthread_mutex_lock(&vcpu->kick_lock);
	join = vcpu->thread_started && !vcpu->thread_joined;
	pthread_mutex_unlock(&vcpu->kick_lock);
	if (!join)
		return;
	/* Not under kick_lock: the thread takes it on its way out. */
	pthread_join(vcpu->thread, NULL);
	pthread_mutex_lock(&vcpu->kick_lock);
	vcpu->thread_joined = true;
	pthread_mutex_unlock(&vcpu->kick_lock);
}

void vcpu_destroy(struct vcpu *vcpu)
{
	vcpu_join(vcpu);
	if (vcpu->run)
		munmap(vcpu->run, (size_t)vcpu->vm->kvm.vcpu_mmap_size);
	kvmstats_close(&vcpu->stats);
	if (vcpu->fd >= 0)
		close(vcpu->fd);
	vcpu->run = NULL;
	vcpu->fd = -1;
	if (vcpu->lock_ready) {
		pthread_mutex_destroy(&vcpu->kick_lock);
		vcpu->lock_ready = false;
	}
}

int vcpu_set_affinity(struct vcpu *vcpu, const cpu_set_t *set)
{
	int ret = -ESRCH;

	pthread_mutex_lock(&vcpu->kick_lock);
	if (vcpu->thread_started && !vcpu->thread_exited)
		ret = -pthread_setaffinity_np(vcpu->thread, sizeof(*set), set);
	pthread_mutex_unlock(&vcpu->kick_lock);
	return ret;
}
