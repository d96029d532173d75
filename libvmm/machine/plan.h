/* SPDX-License-Identifier: MIT */
/*
 * The plan of a VM's resources: each device's queues, the I/O threads,
 * the KVM MSI routes and the file descriptors they take, computed by one
 * function (plan_build()) from a list of devices, each asking for queues.
 * vmm_add_disk()'s check, vmm_start() and the statistics all read a plan,
 * so the queue count a caller reads before vmm_start() is the one the
 * start assigns.
 *
 * Device-neutral: a device asks for a count of its own, or for one queue
 * per vCPU lowered to fit; every queue takes one KVM MSI route
 * (VPCI_MSI_ROUTES()) and two eventfds (kick, interrupt).
 */
#ifndef VMM_MACHINE_PLAN_H
#define VMM_MACHINE_PLAN_H

#include <stdbool.h>

#include "util/compiler.h"
#include "vmm/vmm.h"

struct vmm;
struct machine_config;

/* The disks, NICs, virtio-fs devices and the vsock device (VMM_MAX_DISKS
 * in all: api.c) and the virtio-console device of the ports. */
#define PLAN_MAX_DEVICES (VMM_MAX_DISKS + 1)

/* What one device asks for. */
struct plan_request {
	unsigned int queues; /* a count of its own; 0: one per vCPU, lowered
				so that every device fits, at least 1 */
	bool iothreads;	     /* its queues are served by the VM's I/O threads */
	unsigned int fds;    /* descriptors of its own beyond its queues' */
};

/* KVM's routing table as this host has it. */
struct plan_limits {
	unsigned int routes;	  /* entries in all */
	unsigned int chip_routes; /* taken by the interrupt controller */
};

struct machine_plan {
	unsigned int nr_devices;
	unsigned int queues[PLAN_MAX_DEVICES]; /* per device, in request order */
	unsigned int budget; /* queues (MSI routes) all devices may have */
	unsigned int need;   /* the counts of their own, 1 per default */
	unsigned int nr_iothreads;
	unsigned long long fds; /* descriptors a start opens (with slack) */
};

/*
 * The plan of @n devices (@req, n <= PLAN_MAX_DEVICES) on @nr_vcpus vCPUs
 * within @lim, into @plan.  A device with a count of its own gets it; the
 * others one per vCPU up to VMM_MAX_DISK_QUEUES, and no more than an equal
 * share of what the counts of their own leave.  One I/O thread per vCPU
 * when a device asks for them.  Pure.
 * Returns 0, or -ENOSPC when need > budget (@plan filled all the same).
 */
int plan_build(const struct plan_request *req, unsigned int n,
	       unsigned int nr_vcpus, const struct plan_limits *lim,
	       struct machine_plan *plan);

/* The plan of @vm's configured devices (the disks in order, then the
 * ports' device), within this host's KVM routing table: what vmm_start()
 * builds and what the statistics report before it.  Silent; 0 or
 * -ENOSPC as plan_build(). */
int plan_of_vm(const struct vmm *vm, struct machine_plan *plan);

/* vmm_start()'s checks before anything is built: the queues fit in KVM's
 * routing table (-ENOSPC), and the descriptors in RLIMIT_NOFILE
 * (-EMFILE).  Fills @plan; says what to lower when it fails. */
int plan_for_start(struct vmm *vm, struct machine_plan *plan) __must_check;

/* vmm_add_disk()'s check: the configured disks and one more asking for
 * @num_queues (0: default, counted as 1) within VMM_MAX_QUEUES.  Returns
 * 0 or -ENOSPC (logged). */
int plan_check_new_disk(const struct machine_config *cfg,
			unsigned int num_queues) __must_check;

/* Queue pairs of NIC @c on @nr_vcpus: its files, its count, or one per
 * vCPU up to VMM_MAX_NET_PAIRS.  Its queues: 2 x pairs + 1 (control). */
unsigned int plan_net_pairs(const struct vmm_net_config *c, unsigned int nr_vcpus);

#endif
