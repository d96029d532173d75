/* SPDX-License-Identifier: MIT */
/* The plan of a VM's resources (plan.h). */
#include <dirent.h>
#include <errno.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/resource.h>

#include "machine-config.h"
#include "console/vcon.h"
#include "irq.h"
#include "kvm.h"
#include "log.h"
#include "plan.h"
#include "platform.h"
#include "virtio/virtio-pci.h"
#include "vm.h"

int plan_build(const struct plan_request *req, unsigned int n,
	       unsigned int nr_vcpus, const struct plan_limits *lim,
	       struct machine_plan *plan)
{
	unsigned int own = 0, defaults = 0, share;
	bool iothreads = false;

	memset(plan, 0, sizeof(*plan));
	plan->nr_devices = MIN(n, (unsigned int)PLAN_MAX_DEVICES);
	plan->budget = lim->routes > lim->chip_routes ?
			       lim->routes - lim->chip_routes : 0;
	plan->budget = MIN(plan->budget, (unsigned int)VMM_MAX_QUEUES);
	for (unsigned int i = 0; i < plan->nr_devices; i++) {
		if (req[i].queues)
			own += req[i].queues;
		else
			defaults++;
		plan->need += VPCI_MSI_ROUTES(req[i].queues ? req[i].queues : 1);
		iothreads |= req[i].iothreads;
	}
	share = defaults && own < plan->budget ?
			(plan->budget - own) / defaults : 0;
	/* Every queue holds two eventfds (kick, interrupt) and every device
	 * two more fds; every vCPU two (its own, its statistics) and every
	 * I/O thread three (io_uring, two eventfds); 64 of slack. */
	plan->fds = 64 + 5ull * nr_vcpus;
	for (unsigned int i = 0; i < plan->nr_devices; i++) {
		unsigned int q = req[i].queues;

		if (!q)
			q = MAX(1u, MIN(nr_vcpus, MIN((unsigned int)VMM_MAX_DISK_QUEUES,
						      share)));
		plan->queues[i] = q;
		plan->fds += 2ull * q + 2 + req[i].fds;
	}
	/* One I/O thread per vCPU: queue i of every device is served by
	 * thread i mod nr_vcpus, so by default queue, vector and thread
	 * match one vCPU. */
	plan->nr_iothreads = iothreads ? nr_vcpus : 0;
	return plan->need > plan->budget ? -ENOSPC : 0;
}

unsigned int plan_net_pairs(const struct vmm_net_config *c, unsigned int nr_vcpus)
{
	if (c->fds)
		return c->nr_fds;
	if (c->stream) /* one socket, one pair */
		return 1;
	if (c->queue_pairs)
		return c->queue_pairs;
	return MAX(1u, MIN(nr_vcpus, (unsigned int)VMM_MAX_NET_PAIRS));
}

/* The configured devices as plan requests: the disks by id, the NICs by
 * id, then the virtio-console device of the ports.  Returns their number. */
static unsigned int plan_requests(const struct machine_config *cfg,
				  struct plan_request *req)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < cfg->nr_disks && n < PLAN_MAX_DEVICES; i++)
		req[n++] = (struct plan_request){
			.queues = cfg->disks[i].cfg.num_queues,
			.iothreads = true,
		};
	for (unsigned int i = 0; i < cfg->nr_nets && n < PLAN_MAX_DEVICES; i++)
		req[n++] = (struct plan_request){
			.queues = 2 * plan_net_pairs(&cfg->nets[i].cfg, cfg->nr_vcpus) + 1,
			.iothreads = true,
		};
	if (cfg->nr_ports && n < PLAN_MAX_DEVICES)
		req[n++] = (struct plan_request){
			.queues = VCON_NUM_QUEUES(cfg->nr_ports),
		};
	/* virtio-fs: hiprio and the request queues, served by the back end
	 * (no I/O threads); the default one per vCPU is an upper bound, the
	 * back end may serve fewer (fs.c). */
	for (unsigned int i = 0; i < cfg->nr_fs && n < PLAN_MAX_DEVICES; i++) {
		unsigned int rq = cfg->fs[i].cfg.num_queues;

		req[n++] = (struct plan_request){
			.queues = 1 + (rq ? rq : MIN(cfg->nr_vcpus,
						     (unsigned int)VMM_MAX_FS_QUEUES)),
		};
	}
	/* The vsock: rx, tx, event; its listener and epoll set, and host
	 * sockets for some connections (more take what the limit leaves). */
	if (cfg->vsock && n < PLAN_MAX_DEVICES)
		req[n++] = (cfg->vsock->cfg.flags & VMM_VSOCK_VHOST) ?
			/* vhost=on: the kernel serves the rings; one file. */
			(struct plan_request){ .queues = 3, .fds = 1 } :
			(struct plan_request){
				.queues = 3, .iothreads = true, .fds = 64,
			};
	return n;
}

/* KVM's routing table on this host: what it reports for
 * KVM_CAP_IRQ_ROUTING, at most IRQ_MAX_ROUTES. */
static void plan_limits_of(const struct vmm *vm, struct plan_limits *lim)
{
	int cap = kvm_check_cap(vm->kvm.fd, KVM_CAP_IRQ_ROUTING);

	lim->routes = IRQ_MAX_ROUTES;
	if (cap > 0 && (unsigned int)cap < lim->routes)
		lim->routes = (unsigned int)cap;
	lim->chip_routes = machine_arch_irq_platform()->nr_chip_routes;
}

int plan_of_vm(const struct vmm *vm, struct machine_plan *plan)
{
	struct plan_request req[PLAN_MAX_DEVICES];
	struct plan_limits lim;
	unsigned int n = plan_requests(vm->config, req);

	plan_limits_of(vm, &lim);
	return plan_build(req, n, vm->config->nr_vcpus, &lim, plan);
}

/* Descriptors this process has open now, or 0 when /proc cannot say. */
static unsigned int plan_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned int n = 0;

	if (!d)
		return 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n > 3 ? n - 3 : 0; /* ".", ".." and the DIR's own fd */
}

/*
 * Without room for the plan's descriptors a device would fail at the
 * guest's DRIVER_OK ("out of eventfds", a device reset in the middle of
 * its boot): say so now.  Compared with RLIMIT_NOFILE's soft limit
 * (minivmm raises it to the hard one).
 */
static int plan_check_fds(const struct vmm *vm, const struct machine_plan *plan)
{
	unsigned long long queues = 0;
	struct rlimit rl;
	unsigned int open;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	open = plan_open_fds();
	if (open + plan->fds <= rl.rlim_cur)
		return 0;
	for (unsigned int i = 0; i < plan->nr_devices; i++)
		queues += plan->queues[i];
	vmm_err("%u vCPUs and %u devices (%llu queues, two eventfds each) need "
		"about %llu more file descriptors; %u are open and "
		"RLIMIT_NOFILE is %llu: raise it (ulimit -n) or lower "
		"num_queues", vm->config->nr_vcpus, plan->nr_devices, queues,
		plan->fds, open, (unsigned long long)rl.rlim_cur);
	return -EMFILE;
}

/*
 * Every queue of every device gets an MSI route, and KVM's table must
 * hold them next to the irqchip's routes: a configuration that cannot fit
 * fails here, not as a NEEDS_RESET at the guest's DRIVER_OK.
 */
int plan_for_start(struct vmm *vm, struct machine_plan *plan)
{
	int ret = plan_of_vm(vm, plan);

	if (ret) {
		vmm_err("the devices need %u queues (one KVM MSI route each; "
			"the disks' and %u for the console ports) but KVM's "
			"routing table leaves room for %u: lower num_queues",
			plan->need,
			vm->config->nr_ports ? plan->queues[vm->config->nr_disks] : 0,
			plan->budget);
		return ret;
	}
	return plan_check_fds(vm, plan);
}

int plan_check_new_disk(const struct machine_config *cfg,
			unsigned int num_queues)
{
	static const struct plan_limits lim = { .routes = VMM_MAX_QUEUES };
	struct plan_request req[PLAN_MAX_DEVICES];
	struct machine_plan plan;
	unsigned int n = 0;

	for (unsigned int i = 0; i < cfg->nr_disks && n < PLAN_MAX_DEVICES - 1; i++)
		req[n++] = (struct plan_request){ .queues = cfg->disks[i].cfg.num_queues };
	req[n++] = (struct plan_request){ .queues = num_queues };
	if (!plan_build(req, n, 1, &lim, &plan))
		return 0;
	vmm_err("disk: the disks would have %u queues (num_queues; at least 1 "
		"for a default) but KVM's MSI routes allow %d in all",
		plan.need, VMM_MAX_QUEUES);
	return -ENOSPC;
}
