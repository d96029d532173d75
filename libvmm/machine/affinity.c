/* SPDX-License-Identifier: MIT */
/*
 * vmm_set_cpu_affinity()'s list (kept in the configuration by api.c)
 * applied by vmm_start() (affinity.h).  vCPU i's queues are served by I/O
 * thread i (the plan: one I/O thread per vCPU), so both share a host CPU:
 * a request is submitted, served and completed there.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "affinity.h"
#include "iothread.h"
#include "log.h"
#include "machine-config.h"
#include "machine-int.h"
#include "vcpu.h"
#include "vm.h"

int affinity_check(const struct vmm *vm)
{
	const struct machine_config *c = vm->config;
	cpu_set_t allowed;

	if (!c->nr_cpu_affinity)
		return 0;
	if (sched_getaffinity(0, sizeof(allowed), &allowed)) {
		int err = errno;

		vmm_err("cpu affinity: sched_getaffinity: %s", strerror(err));
		return -err;
	}
	for (unsigned int i = 0; i < c->nr_cpu_affinity; i++)
		if (!CPU_ISSET(c->cpu_affinity[i], &allowed)) {
			vmm_err("cpu affinity: CPU %u is not one this process may run on",
				c->cpu_affinity[i]);
			return -EINVAL;
		}
	return 0;
}

static void one_cpu(cpu_set_t *set, unsigned int cpu)
{
	CPU_ZERO(set);
	CPU_SET(cpu, set);
}

void affinity_pin(struct vmm *vm, struct machine *m)
{
	const struct machine_config *c = vm->config;
	unsigned int n = c->nr_cpu_affinity;
	cpu_set_t set;
	int ret;

	for (unsigned int i = 0; n && i < m->nr_iothreads; i++) {
		one_cpu(&set, c->cpu_affinity[i % n]);
		if ((ret = iothread_set_affinity(m->iothreads[i], &set)))
			vmm_warn("cpu affinity: I/O thread %u on CPU %u: %s", i,
				 c->cpu_affinity[i % n], strerror(-ret));
	}
	for (unsigned int i = 0; n && i < vm->nr_vcpus; i++) {
		one_cpu(&set, c->cpu_affinity[i % n]);
		if ((ret = vcpu_set_affinity(&vm->vcpus[i], &set)))
			vmm_warn("cpu affinity: vCPU %u on CPU %u: %s", i,
				 c->cpu_affinity[i % n], strerror(-ret));
	}
}
