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
	unsigned int classes = (1u << SANDBOX_CLASS_VCPU) | (1u << SANDBOX_CLASS_IO) |
			       (1u << SANDBOX_CLASS_CONSOLE) |
			       (1u << SANDBOX_CLASS_CONTROL);

	if (vm->config->seccomp_mode == VMM_SECCOMP_OFF)
		return 0;
	if (vm->config->vsock) /* its I/O thread's list */
		classes |= 1u << SANDBOX_CLASS_IO_SOCK;
	return sandbox_build_classes(vm->config->seccomp_mode, classes, &vm->seccomp);
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

/* The one that also serves the vsock's host sockets. */
static int confine_iothread_sock(void *seccomp)
{
	return sandbox_install(seccomp, SANDBOX_CLASS_IO_SOCK);
}

int confine_iothreads(struct vmm *vm, struct machine *m)
{
	int ret;

	for (unsigned int i = 0; vm->seccomp && i < m->nr_iothreads; i++) {
		ret = iothread_call_sync(m->iothreads[i],
					 m->vsock && i == m->vsock_iothread ?
						 confine_iothread_sock :
						 confine_iothread,
					 vm->seccomp);
		if (ret) {
			vmm_err("seccomp: cannot confine I/O thread %u: %s", i,
				strerror(-ret));
			return ret;
		}
	}
	return 0;
}
