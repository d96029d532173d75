/* SPDX-License-Identifier: MIT */
/* vmm_pause(), vmm_resume(): the public side of the vCPUs' pause protocol
 * (core/vcpu.h) and the platform's guest clock (platform.h); vmm_shutdown(),
 * the platform's power button. */
#include <errno.h>

#include "machine-int.h"
#include "platform.h"
#include "vcpu.h"
#include "vm.h"
#include "vmm/vmm.h"

/* How long vmm_pause() waits for every vCPU to finish its exit: an exit is
 * handled in microseconds; seconds mean a vCPU is stuck, and the caller
 * gets an error rather than a hang. */
#define PAUSE_TIMEOUT_MS 5000

static int running(struct vmm *vm)
{
	/* Pairs with the release store in vmm_start(). */
	if (__atomic_load_n(&vm->state, __ATOMIC_ACQUIRE) != VM_RUNNING ||
	    vm_stopping(vm))
		return -EBUSY;
	return 0;
}

int vmm_pause(struct vmm *vm)
{
	int ret;

	if (!vm)
		return -EINVAL;
	pthread_mutex_lock(&vm->pause_call);
	ret = running(vm);
	if (!ret && !vcpu_paused(vm)) {
		ret = vcpu_pause_all(vm, PAUSE_TIMEOUT_MS);
		if (ret == -ESHUTDOWN)
			ret = -EBUSY;
		if (!ret)
			machine_arch_pause(vm, vm->machine);
	}
	pthread_mutex_unlock(&vm->pause_call);
	return ret;
}

int vmm_resume(struct vmm *vm)
{
	int ret;

	if (!vm)
		return -EINVAL;
	pthread_mutex_lock(&vm->pause_call);
	ret = running(vm);
	if (!ret && vcpu_paused(vm)) {
		machine_arch_resume(vm, vm->machine);
		vcpu_resume_all(vm);
	}
	pthread_mutex_unlock(&vm->pause_call);
	return ret;
}

int vmm_is_paused(struct vmm *vm)
{
	if (!vm)
		return -EINVAL;
	if (__atomic_load_n(&vm->state, __ATOMIC_ACQUIRE) == VM_CONFIG)
		return -EBUSY;
	return vcpu_paused(vm) && !vm_stopping(vm) ? 1 : 0;
}

int vmm_shutdown(struct vmm *vm)
{
	int ret;

	if (!vm)
		return -EINVAL;
	ret = running(vm);
	return ret ? ret : machine_arch_power_button(vm, vm->machine);
}
