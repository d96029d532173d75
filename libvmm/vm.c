/* SPDX-License-Identifier: MIT */
/* VM lifecycle plumbing shared by the API and the vCPU threads. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "vcpu.h"
#include "vm.h"

void vm_request_exit(struct vmm *vm, int reason)
{
	int none = VMM_EXIT_NONE;
	uint64_t one = 1;

	/* First reason wins; later ones (e.g. vmm_stop() racing a guest
	 * reset) are ignored. */
	if (!__atomic_compare_exchange_n(&vm->exit_reason, &none, reason, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	/* Release: exit_reason is visible to whoever sees stopping; pairs
	 * with the acquire in vm_stopping(). */
	__atomic_store_n(&vm->stopping, true, __ATOMIC_RELEASE);
	if (vm->vcpus)
		for (unsigned int i = 0; i < vm->nr_vcpus; i++)
			vcpu_kick(&vm->vcpus[i]);
	if (write(vm->exit_efd, &one, sizeof(one)) < 0)
		vmm_warn("signalling the exit eventfd: %s", strerror(errno));
}
