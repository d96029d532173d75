/* SPDX-License-Identifier: MIT */
/* The statistics behind vmm_get_*_stats() (machine.h). */
#include <errno.h>
#include <string.h>

#include "blk/virtio-blk.h"
#include "iothread.h"
#include "machine-config.h"
#include "serial-host.h"
#include "machine-int.h"
#include "machine.h"
#include "plan.h"
#include "vcpu.h"
#include "virtio/virtio-pci.h"
#include "vm.h"

/* Disk @id's device as vmm_start() built it, or NULL. */
static struct machine_device *stats_disk(struct vmm *vm, unsigned int id)
{
	struct machine *m = vm->machine;

	if (!m || id >= m->nr_devs || m->devs[id].ops != &machine_disk_ops ||
	    !m->devs[id].dev)
		return NULL;
	return &m->devs[id];
}

/* Queues of disk @id: the plan of the start, or the plan a start would
 * make (the same function, the same limits). */
static unsigned int stats_disk_queues(struct vmm *vm, unsigned int id)
{
	struct machine_plan plan;

	if (vm->machine && id < vm->machine->plan.nr_devices)
		return vm->machine->plan.queues[id];
	(void)plan_of_vm(vm, &plan); /* -ENOSPC: the counts as they would be */
	return id < plan.nr_devices ? plan.queues[id] : 0;
}

/* The transport's figures of disk @d into @st. */
static void stats_disk_transport(const struct machine_device *d,
				 struct vmm_disk_stats *st)
{
	struct vpci_stats ts;

	vpci_get_stats(d->transport, &ts);
	st->wiring_commits = ts.wiring_commits;
	st->wiring_ioctls = ts.wiring_ioctls;
	st->wiring_ns = ts.wiring_ns;
	st->masked_interrupts = ts.interrupts_masked;
	st->resets = ts.resets;
	st->needs_reset = ts.needs_reset;
	st->config_interrupts = ts.config_interrupts;
	st->interrupts_direct = ts.interrupts_direct;
	st->route_flushes = ts.route_flushes;
	st->route_flushes_lazy = ts.route_flushes_lazy;
	st->driver_ok_ns_max = ts.driver_ok_ns_max;
}

int machine_disk_stats(struct vmm *vm, unsigned int id, struct vmm_disk_stats *st)
{
	struct machine_device *d = stats_disk(vm, id);
	struct vmm_queue_stats q;

	st->num_queues = stats_disk_queues(vm, id);
	if (!d)
		return 0; /* never started: all zero */
	stats_disk_transport(d, st);
	for (unsigned int i = 0; i < st->num_queues; i++) {
		struct virtio_blk_queue_stats ds;

		if (virtio_blk_queue_stats(d->dev, i, &ds) ||
		    machine_queue_stats(vm, id, i, &q))
			continue;
		st->doorbells += ds.svc.doorbells;
		st->cancelled += ds.blk.cancelled;
		for (unsigned int t = 0; t < VMM_REQ_TYPES; t++)
			st->total.requests[t] += q.requests[t];
		st->total.bytes_read += q.bytes_read;
		st->total.bytes_written += q.bytes_written;
		st->total.io_errors += q.io_errors;
		st->total.unsupported += q.unsupported;
		st->total.kicks += q.kicks;
		st->total.interrupts += q.interrupts;
		st->total.suppressed += q.suppressed;
	}
	return 0;
}

int machine_queue_stats(struct vmm *vm, unsigned int id, unsigned int q,
			struct vmm_queue_stats *st)
{
	struct machine_device *d = stats_disk(vm, id);
	struct virtio_blk_queue_stats ds;
	int ret;

	if (!d)
		return -ENOENT;
	ret = virtio_blk_queue_stats(d->dev, q, &ds);
	if (ret)
		return ret;
	memset(st, 0, sizeof(*st));
	/* enum vmm_req_type and enum vblk_stat_type list the same types in
	 * the same order. */
	for (unsigned int t = 0; t < VMM_REQ_TYPES && t < VBLK_STAT_NR; t++)
		st->requests[t] = ds.blk.reqs[t];
	st->bytes_read = ds.blk.bytes_read;
	st->bytes_written = ds.blk.bytes_written;
	st->io_errors = ds.blk.io_errors;
	st->unsupported = ds.blk.unsupported;
	st->kicks = ds.svc.kicks;
	st->interrupts = ds.svc.interrupts;
	st->suppressed = ds.svc.suppressed;
	st->iothread = ds.svc.iothread;
	return 0;
}

int machine_kvm_stats(struct vmm *vm, struct vmm_kvm_stats *st)
{
	uint64_t sum[VCPU_STAT_NR] = { 0 };
	int ret;

	if (!vm->vcpus)
		return -EBUSY;
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		ret = vcpu_add_stats(&vm->vcpus[i], sum);
		if (ret)
			return ret;
	}
	st->nr_vcpus = vm->nr_vcpus;
	st->exits = sum[VCPU_STAT_EXITS];
	st->io_exits = sum[VCPU_STAT_IO_EXITS];
	st->mmio_exits = sum[VCPU_STAT_MMIO_EXITS];
	st->halt_exits = sum[VCPU_STAT_HALT_EXITS];
	st->irq_exits = sum[VCPU_STAT_IRQ_EXITS];
	st->irq_injections = sum[VCPU_STAT_IRQ_INJECTIONS];
	st->signal_exits = sum[VCPU_STAT_SIGNAL_EXITS];
	return 0;
}

void machine_console_stats(struct vmm *vm, struct vmm_console_stats *st)
{
	struct machine *m = vm->machine;
	struct serial_host_stats cs;

	if (!m || !m->console)
		return;
	serial_host_get_stats(m->console, &cs);
	st->bytes_out = cs.bytes_out;
	st->bytes_dropped = cs.bytes_dropped;
	st->bytes_in = cs.bytes_in;
}

int machine_iothread_stats(struct vmm *vm, unsigned int index,
			   struct vmm_iothread_stats *st)
{
	struct machine *m = vm->machine;
	struct iothread_stats is;

	if (!m || index >= m->nr_iothreads)
		return -ENOENT;
	iothread_get_stats(m->iothreads[index], &is);
	st->sched = is.sched_batch ? VMM_IOTHREAD_SCHED_BATCH :
				     VMM_IOTHREAD_SCHED_NORMAL;
	st->loops = is.loops;
	st->waits = is.waits;
	st->completions = is.cqes;
	st->submits = is.submits;
	st->sched_switches = is.sched_switches;
	st->sched_normal_ns = is.sched_normal_ns;
	return 0;
}
