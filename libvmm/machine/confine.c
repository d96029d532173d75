/* SPDX-License-Identifier: MIT */
/* Seccomp confinement of the VM's threads (confine.h). */
#include <string.h>

#include "machine-config.h"
#include "confine.h"
#include "iothread.h"
#include "log.h"
#include "machine-int.h"
#include "sandbox.h"
#include "vm.h"

int confine_build(struct vmm *vm)
{
	if (vm->config->seccomp_mode == VMM_SECCOMP_OFF)
		return 0;
	return sandbox_build(vm->config->seccomp_mode, &vm->seccomp);
}

void confine_free(struct vmm *vm)
{
	sandbox_free(vm->seccomp);
	vm->seccomp = NULL;
}

int confine_port_thread(void *seccomp)
{
	return sandbox_install(seccomp, SANDBOX_CLASS_CONSOLE);
}

/* Context: I/O thread (iothread_call_sync). */
static int confine_iothread(void *seccomp)
{
	return sandbox_install(seccomp, SANDBOX_CLASS_IO);
}

int confine_iothreads(struct vmm *vm, struct machine *m)
{
	int ret;

	for (unsigned int i = 0; vm->seccomp && i < m->nr_iothreads; i++) {
		ret = iothread_call_sync(m->iothreads[i], confine_iothread,
					 vm->seccomp);
		if (ret) {
			vmm_err("seccomp: cannot confine I/O thread %u: %s", i,
				strerror(-ret));
			return ret;
		}
	}
	return 0;
}
