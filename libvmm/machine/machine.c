/* SPDX-License-Identifier: MIT */
/*
 * Machine assembly (see machine.h), the arch-neutral half: guest RAM and
 * its KVM memslots, the host side of the console, virtio-blk disks with
 * their I/O threads, the virtio-console ports, the checks that must fail
 * at vmm_start() rather than at the guest's DRIVER_OK (route table, file
 * descriptors), seccomp confinement, the start/stop sequence and the
 * statistics.  The platform's half (interrupt controller, firmware tables,
 * boot image, its own devices, the PCI host bridge, vCPU registers) is
 * machine/<arch>/, behind machine_int.h's hooks.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blk/vblk.h"
#include "blk/virtio-blk.h"
#include "serial-host.h"
#include "console/vcon.h"
#include "irq.h"
#include "iothread.h"
#include "kvm.h"
#include "log.h"
#include "machine.h"
#include "machine_int.h"
#include "pci/msix.h"
#include "pci/pci.h"
#include "sandbox.h"
#include "virtio/virtio-pci.h"
#include "vcpu.h"
#include "vm.h"

/* Queue caps: per disk as QEMU's virtio_pci_optimal_num_queues() (at most
 * VIRTIO_QUEUE_MAX queues, an MSI-X table of 2048 entries including the
 * configuration vector); over all disks what KVM's route table holds
 * besides the irqchip's routes (one MSI route per queue). */
_Static_assert(VMM_MAX_DISK_QUEUES <= VPCI_MAX_QUEUES &&
		       VMM_MAX_DISK_QUEUES + 1 <= MSIX_MAX_VECTORS,
	       "per-disk queue cap");
_Static_assert(VMM_MAX_DISKS < (PCI_MAX_SLOTS - 1) * PCI_MAX_FUNCTIONS,
	       "a PCI function for every disk and the console device");

/* io_uring entries per I/O thread (CQ is 4x): room for a few queues' worth
 * of requests per submit batch. */
#define IOTHREAD_RING_ENTRIES 512u

/* vmm_disk_config.flags are handed to vblk as they are. */
_Static_assert(VMM_DISK_READONLY == VBLK_OPT_READONLY &&
		       VMM_DISK_DIRECT == VBLK_OPT_DIRECT &&
		       VMM_DISK_NO_FLUSH == VBLK_OPT_NO_FLUSH &&
		       VMM_DISK_NO_EVENT_IDX == VBLK_OPT_NO_EVENT_IDX &&
		       VMM_DISK_NO_LOCK == VBLK_OPT_NO_LOCK,
	       "disk flag values differ");

static int machine_setup_memory(struct vmm *vm)
{
	int ret = guest_mem_init(&vm->mem, vm->ram_size, vm->mem_backend,
				 machine_arch_guest_layout());

	if (ret)
		return ret;
	for (unsigned int i = 0; i < vm->mem.nr_regions; i++) {
		const struct guest_region *r = &vm->mem.regions[i];
		struct kvm_userspace_memory_region slot = {
			.slot = i,
			.guest_phys_addr = r->gpa,
			.memory_size = r->size,
			.userspace_addr = (uintptr_t)r->hva,
		};

		if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &slot) < 0) {
			ret = -errno;
			vmm_err("KVM_SET_USER_MEMORY_REGION slot %u: %s", i,
				strerror(errno));
			return ret == -ENOMEM ? ret : -EIO;
		}
	}
	return 0;
}

void machine_guest_reset(void *opaque)
{
	vmm_info("guest requested a reset");
	vm_request_exit(opaque, VMM_EXIT_GUEST_RESET);
}

/* Context: vCPU thread.  ACPI S5. */
void machine_guest_poweroff(void *opaque)
{
	vmm_info("guest powered off");
	vm_request_exit(opaque, VMM_EXIT_POWEROFF);
}

/* Context: vCPU thread.  The guest wrote its exit status (guest-controlled,
 * any value: only stored and reported). */
void machine_guest_exit(void *opaque, uint32_t status)
{
	struct vmm *vm = opaque;
	bool unclaimed = false;

	if (!__atomic_compare_exchange_n(&vm->guest_status_claimed, &unclaimed,
					 true, false, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED))
		return; /* a status was reported already */
	vm->guest_status = status;
	vmm_info("guest reported exit status %u", status);
	vm_request_exit(vm, VMM_EXIT_GUEST_STATUS);
}

void machine_console_output(void *opaque, const uint8_t *buf, size_t len)
{
	serial_host_write(opaque, buf, len);
}

/* Context: console thread.  Guest input for the platform's UART. */
static size_t machine_console_input(void *opaque, const void *buf, size_t len)
{
	return machine_arch_console_input(opaque, buf, len);
}

/* Context: console thread, which could not be confined. */
static void machine_console_failed(void *opaque)
{
	vm_request_exit(opaque, VMM_EXIT_ERROR);
}

static int machine_setup_devices(struct vmm *vm, struct machine *m)
{
	struct serial_host_params cp = {
		.in_fd = vm->console_in,
		.out_fd = vm->console_out,
		.push_input = machine_console_input,
		.opaque = vm,
		.seccomp = vm->seccomp,
		.failed = machine_console_failed,
	};
	int ret;

	ret = serial_host_create(&cp, &m->console);
	if (ret)
		return ret;
	ret = machine_arch_setup_devices(vm, m);
	if (ret)
		return ret;
	/* Up to 31 devices: one slot each, as always; more fill the slots
	 * 8 functions at a time, in the order they are added. */
	if (vm->nr_disks + (vm->nr_ports ? 1u : 0u) > PCI_MAX_SLOTS - 1)
		return pci_bus_set_functions_per_slot(m->pci, PCI_MAX_FUNCTIONS);
	return 0;
}

/*
 * How many queues disk @id gets when the disks may have @budget queues in
 * all: its num_queues, or by default one per vCPU up to
 * VMM_MAX_DISK_QUEUES, and no more than an equal share of what the explicit
 * counts leave of @budget among the disks that take the default.  At least
 * 1 (machine_check_queues() has checked that everything fits).
 */
static unsigned int disk_queues_in(const struct vmm *vm, unsigned int id,
				   unsigned int budget)
{
	const struct vmm_disk_config *c = &vm->disks[id].cfg;
	unsigned int explicit = 0, defaults = 0, share;

	if (c->num_queues)
		return c->num_queues;
	for (unsigned int i = 0; i < vm->nr_disks; i++) {
		if (vm->disks[i].cfg.num_queues)
			explicit += vm->disks[i].cfg.num_queues;
		else
			defaults++;
	}
	share = explicit < budget ? (budget - explicit) / defaults : 0;
	return MAX(1u, MIN(vm->nr_vcpus, MIN((unsigned int)VMM_MAX_DISK_QUEUES,
					     share)));
}

/* MSI routes of the virtio-console (vmm_add_port()), if it has ports. */
static unsigned int port_routes(const struct vmm *vm)
{
	return vm->nr_ports ? VPCI_MSI_ROUTES(VCON_NUM_QUEUES(vm->nr_ports)) : 0;
}

/* Queues of disk @id: as started, or as a start would make them. */
static unsigned int disk_num_queues(const struct vmm *vm, unsigned int id)
{
	const struct machine *m = vm->machine;

	if (m && m->disks && m->disks[id].nq)
		return m->disks[id].nq;
	return disk_queues_in(vm, id, VMM_MAX_QUEUES > port_routes(vm) ?
					      VMM_MAX_QUEUES - port_routes(vm) : 0);
}

/*
 * Before anything is built: every queue of every disk gets an MSI route,
 * and KVM's table (what this kernel reports for KVM_CAP_IRQ_ROUTING, at
 * most IRQ_MAX_ROUTES) must hold them next to the irqchip's routes.  A
 * configuration that cannot fit fails here, not as a NEEDS_RESET at the
 * guest's DRIVER_OK.  The virtio-console's queues (vmm_add_port()) take
 * routes too.  *@budget: the queues all disks may have.
 */
static int machine_check_queues(struct vmm *vm, unsigned int *budget)
{
	int cap = kvm_check_cap(vm->kvm.fd, KVM_CAP_IRQ_ROUTING);
	unsigned int routes = IRQ_MAX_ROUTES, need = 0;
	unsigned int chip = machine_arch_irq_platform()->nr_chip_routes;

	if (cap > 0 && (unsigned int)cap < routes)
		routes = (unsigned int)cap;
	*budget = routes > chip ? routes - chip : 0;
	*budget = MIN(*budget, (unsigned int)VMM_MAX_QUEUES);
	*budget = *budget > port_routes(vm) ? *budget - port_routes(vm) : 0;
	for (unsigned int i = 0; i < vm->nr_disks; i++) {
		unsigned int nq = vm->disks[i].cfg.num_queues;

		need += VPCI_MSI_ROUTES(nq ? nq : 1);
	}
	if (need > *budget) {
		vmm_err("the disks need %u queues (one KVM MSI route each) but "
			"KVM's routing table leaves room for %u (%u entries, %u "
			"for the interrupt controller, %u for the console ports): "
			"lower num_queues", need, *budget, routes,
			chip, port_routes(vm));
		return -ENOSPC;
	}
	return 0;
}

/* vm->vcpus[], nothing open yet (vcpu_destroy() skips fd -1): the
 * platform creates each (machine_arch_setup_vcpus()). */
static int machine_alloc_vcpus(struct vmm *vm)
{
	vm->vcpus = calloc(vm->nr_vcpus, sizeof(*vm->vcpus));
	if (!vm->vcpus)
		return -ENOMEM;
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		vm->vcpus[i].fd = -1;
		vm->vcpus[i].stats.fd = -1;
	}
	return 0;
}

/* Descriptors this process has open now, or 0 when /proc cannot say. */
static unsigned int machine_open_fds(void)
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
 * Every queue holds two eventfds (kick, interrupt), every vCPU two fds
 * (its own, its statistics), every I/O thread three (io_uring, two
 * eventfds).  Without room for them a disk would fail at the guest's
 * DRIVER_OK ("out of eventfds", a device reset in the middle of its boot):
 * say so now.  An estimate with some slack, compared with RLIMIT_NOFILE's
 * soft limit (minivmm raises it to the hard one).
 */
static int machine_check_fds(struct vmm *vm)
{
	unsigned long long need = 64, queues = 0;
	struct rlimit rl;
	unsigned int open;

	for (unsigned int i = 0; i < vm->nr_disks; i++)
		queues += disk_num_queues(vm, i);
	need += 2 * queues + 5ull * vm->nr_vcpus + 2ull * vm->nr_disks;
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	open = machine_open_fds();
	if (open + need <= rl.rlim_cur)
		return 0;
	vmm_err("%u vCPUs and %u disks (%llu queues, two eventfds each) need "
		"about %llu more file descriptors; %u are open and "
		"RLIMIT_NOFILE is %llu: raise it (ulimit -n) or lower "
		"num_queues", vm->nr_vcpus, vm->nr_disks, queues, need, open,
		(unsigned long long)rl.rlim_cur);
	return -EMFILE;
}

static int machine_setup_disks(struct vmm *vm, struct machine *m,
			       unsigned int budget)
{
	int ret;

	if (!vm->nr_disks)
		return 0;
	m->disks = calloc(vm->nr_disks, sizeof(*m->disks));
	m->iothreads = calloc(vm->nr_vcpus, sizeof(*m->iothreads));
	if (!m->disks || !m->iothreads)
		return -ENOMEM;
	/* One I/O thread per vCPU: queue i of every disk is served by thread
	 * i mod nr_vcpus, so by default queue, vector and thread match one
	 * vCPU. */
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		ret = iothread_create(i, IOTHREAD_RING_ENTRIES, &m->iothreads[i]);
		if (ret)
			return ret;
		m->nr_iothreads++;
		iothread_set_batch(m->iothreads[i],
				   vm->iothread_sched == VMM_IOTHREAD_SCHED_BATCH);
		ret = iothread_start(m->iothreads[i]);
		if (ret)
			return ret;
	}
	for (unsigned int i = 0; i < vm->nr_disks; i++) {
		const struct vmm_disk_config *c = &vm->disks[i].cfg;
		struct vblk_options o = {
			.path = c->path,
			.fd = vm->disks[i].fd,
			/* The wiring flag is the transport's, not vblk's. */
			.flags = c->flags & ~VMM_DISK_PER_VECTOR_WIRING,
			.num_queues = (uint16_t)disk_queues_in(vm, i, budget),
			.queue_size = c->queue_size,
			.serial = c->serial,
		};
		struct virtio_blk_params dp = {
			.iothreads = m->iothreads,
			.nr_iothreads = m->nr_iothreads,
			.poll_us = c->poll_us,
		};
		struct vpci_params tp = {
			.bus = m->pci,
			.irq = vm->irq,
			.mem = &vm->mem,
			.ioeventfd_any_length =
				kvm_check_cap(vm->vm_fd, KVM_CAP_IOEVENTFD_ANY_LENGTH) > 0,
			.per_vector_wiring = c->flags & VMM_DISK_PER_VECTOR_WIRING,
			.coalesce_queue_regs = m->coalesce_mmio,
		};
		struct virtio_device vd;
		struct vblk *blk;

		if (!c->num_queues && o.num_queues < MIN(vm->nr_vcpus,
							 (unsigned int)VMM_MAX_DISK_QUEUES))
			vmm_info("disk %u: %u queues instead of one per vCPU, so "
				 "that every disk's queues fit in KVM's MSI routes",
				 i, o.num_queues);
		m->disks[i].nq = o.num_queues;
		ret = vblk_open(&o, &blk);
		if (ret) {
			vmm_err("disk %u (%s): cannot open the image: %s", i,
				c->path ? c->path : "fd", strerror(-ret));
			return ret;
		}
		dp.blk = blk;
		ret = virtio_blk_create(&dp, &m->disks[i].dev);
		if (ret) {
			vblk_close(blk);
			return ret;
		}
		virtio_blk_virtio(m->disks[i].dev, &vd);
		vpci_params_set_device(&tp, &vd);
		ret = vpci_create(&tp, &m->disks[i].transport);
		if (ret) {
			vmm_err("disk %u: cannot create its virtio-pci device: %s", i,
				strerror(-ret));
			return ret;
		}
		vmm_info("disk %u: %s, %u queues of %u, %llu sectors", i,
			 c->path ? c->path : "fd", o.num_queues, tp.max_queue_size,
			 (unsigned long long)disk_capacity(vblk_disk(blk)));
	}
	return 0;
}

/* Port threads confine themselves (console class) before their loop. */
static int machine_confine_port_thread(void *opaque)
{
	return sandbox_install(opaque, SANDBOX_CLASS_CONSOLE);
}

/* The virtio-console device of vmm_add_port(): its own copies of the fds
 * (the configuration keeps its own, so a failed start can be retried). */
static int machine_setup_ports(struct vmm *vm, struct machine *m)
{
	struct vcon_port_params pp[VCON_MAX_PORTS];
	struct vcon_params cp = {
		.ports = pp,
		.nr_ports = vm->nr_ports,
		.thread_init = machine_confine_port_thread,
		.thread_opaque = vm->seccomp, /* NULL: no filter */
	};
	struct vpci_params tp = {
		.bus = m->pci,
		.irq = vm->irq,
		.mem = &vm->mem,
		.ioeventfd_any_length =
			kvm_check_cap(vm->vm_fd, KVM_CAP_IOEVENTFD_ANY_LENGTH) > 0,
		.coalesce_queue_regs = m->coalesce_mmio,
	};
	struct virtio_device vd;
	int ret;

	if (!vm->nr_ports)
		return 0;
	for (unsigned int i = 0; i < vm->nr_ports; i++) {
		const struct vm_port_cfg *c = &vm->ports[i];

		pp[i].name = c->name;
		pp[i].in_fd = c->in_fd >= 0 ? fcntl(c->in_fd, F_DUPFD_CLOEXEC, 0) : -1;
		pp[i].out_fd = c->out_fd >= 0 ? fcntl(c->out_fd, F_DUPFD_CLOEXEC, 0) : -1;
	}
	ret = vcon_create(&cp, &m->ports); /* owns the dups, even on failure */
	if (ret)
		return ret;
	vcon_virtio(m->ports, &vd);
	vpci_params_set_device(&tp, &vd);
	ret = vpci_create(&tp, &m->ports_transport);
	if (ret)
		vmm_err("cannot create the virtio-console device: %s", strerror(-ret));
	return ret;
}

/* Stop every disk (drain in-flight I/O) and then the I/O threads.  The
 * VM fd goes next (machine_join() is never followed by another run of
 * it): its KVM wiring is left for KVM to drop (vpci_shutdown()). */
static void machine_stop_disks(struct vmm *vm, struct machine *m)
{
	for (unsigned int i = 0; m->disks && i < vm->nr_disks; i++)
		if (m->disks[i].transport)
			vpci_shutdown(m->disks[i].transport);
	for (unsigned int i = 0; i < m->nr_iothreads; i++)
		iothread_stop(m->iothreads[i]);
}

static void machine_destroy_ports(struct machine *m)
{
	vpci_destroy(m->ports_transport); /* stops the device first */
	m->ports_transport = NULL;
	vcon_destroy(m->ports);
	m->ports = NULL;
}

static void machine_destroy_disks(struct vmm *vm, struct machine *m)
{
	for (unsigned int i = 0; m->disks && i < vm->nr_disks; i++) {
		vpci_destroy(m->disks[i].transport);
		virtio_blk_destroy(m->disks[i].dev);
	}
	free(m->disks);
	m->disks = NULL;
	for (unsigned int i = 0; i < m->nr_iothreads; i++)
		iothread_destroy(m->iothreads[i]);
	free(m->iothreads);
	m->iothreads = NULL;
	m->nr_iothreads = 0;
}

/* Context: I/O thread (iothread_call_sync). */
static int machine_confine_iothread(void *opaque)
{
	return sandbox_install(opaque, SANDBOX_CLASS_IO);
}

/* The I/O threads take their filter once every device exists (their setup
 * calls, e.g. watching ioeventfds, ran unconfined); vCPU and console
 * threads install theirs themselves. */
static int machine_confine_iothreads(struct vmm *vm, struct machine *m)
{
	int ret;

	for (unsigned int i = 0; vm->seccomp && i < m->nr_iothreads; i++) {
		ret = iothread_call_sync(m->iothreads[i], machine_confine_iothread,
					 vm->seccomp);
		if (ret) {
			vmm_err("seccomp: cannot confine I/O thread %u: %s", i,
				strerror(-ret));
			return ret;
		}
	}
	return 0;
}

int machine_start(struct vmm *vm)
{
	struct machine *m;
	unsigned int budget;
	int ret;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	vm->machine = m;

	ret = machine_check_queues(vm, &budget);
	if (!ret)
		ret = machine_check_fds(vm);
	if (ret)
		goto err;

	if (vm->seccomp_mode != VMM_SECCOMP_OFF) {
		ret = sandbox_build(vm->seccomp_mode, &vm->seccomp);
		if (ret)
			goto err;
	}
	ret = machine_arch_create(vm, m);
	if (ret)
		goto err;
	ret = machine_setup_memory(vm);
	if (ret)
		goto err;
	ret = machine_arch_load_boot(vm, m);
	if (ret)
		goto err;
	ret = irq_create(vm->vm_fd, machine_arch_irq_platform(), NULL, NULL,
			 &vm->irq);
	if (ret)
		goto err;
	ret = machine_setup_devices(vm, m);
	if (ret)
		goto err;
	m->coalesce_mmio = vm_coalesced_ring_offset(vm) > 0;
	ret = machine_setup_disks(vm, m, budget);
	if (ret)
		goto err;
	ret = machine_setup_ports(vm, m);
	if (ret)
		goto err;
	ret = machine_alloc_vcpus(vm);
	if (!ret)
		ret = machine_arch_setup_vcpus(vm, m);
	if (ret)
		goto err;
	/* The devices' coalesced zones log into the ring from the first
	 * KVM_RUN: drained before every exit (vcpu.c). */
	if (m->coalesce_mmio && (ret = vm_coalesced_ring_map(vm)))
		goto err;
	machine_arch_late(vm, m);
	/* Every file is open; no thread is confined or runs the guest yet:
	 * the embedder's hook, e.g. a uid/gid drop (vmm_set_start_hook()). */
	if (vm->start_hook && (ret = vm->start_hook(vm->start_hook_opaque))) {
		ret = ret < 0 ? ret : -ECANCELED;
		vmm_err("start hook: %s", strerror(-ret));
		goto err;
	}
	ret = machine_confine_iothreads(vm, m);
	if (ret)
		goto err;
	ret = serial_host_start(m->console);
	if (ret)
		goto err;
	/* After the start hook: threads confined before a uid drop would
	 * die on glibc's set*id broadcast. */
	if (m->ports) {
		ret = vcon_start_threads(m->ports);
		if (ret)
			goto err;
	}
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		ret = vcpu_start(&vm->vcpus[i]);
		if (ret) {
			vm_request_exit(vm, VMM_EXIT_ERROR);
			goto err;
		}
	}
	return 0;
err:
	machine_join(vm);
	machine_destroy(vm);
	return ret;
}

void machine_join(struct vmm *vm)
{
	struct machine *m = vm->machine;

	/* vCPU threads end by themselves once the VM is stopping
	 * (vm_request_exit() kicked them); joining them is the wait. */
	if (vm->vcpus)
		for (unsigned int i = 0; i < vm->nr_vcpus; i++)
			vcpu_join(&vm->vcpus[i]);
	if (m)
		machine_stop_disks(vm, m);
	/* Writes out what the guest queued on its ports (vcon.h); the
	 * wiring goes with the VM fd, as the disks' (vpci_shutdown()). */
	if (m && m->ports_transport)
		vpci_shutdown(m->ports_transport);
	/* Last: the guest's final output is flushed (for a bounded time). */
	if (m)
		serial_host_stop(m->console);
}

void machine_destroy(struct vmm *vm)
{
	struct machine *m = vm->machine;

	/* The ring lives in vCPU 0's mapping. */
	vm->coalesced_ring = NULL;
	if (vm->vcpus) {
		for (unsigned int i = 0; i < vm->nr_vcpus; i++)
			vcpu_destroy(&vm->vcpus[i]);
		free(vm->vcpus);
		vm->vcpus = NULL;
	}
	if (m) {
		/* Disks before the bus they sit on, and before the I/O
		 * threads their queues were served by. */
		machine_destroy_disks(vm, m);
		machine_destroy_ports(m);
		if (m->pci)
			pci_bus_destroy(m->pci);
		machine_arch_destroy(vm, m);
		serial_host_destroy(m->console);
		free(m);
		vm->machine = NULL;
	}
	irq_destroy(vm->irq);
	vm->irq = NULL;
	guest_mem_destroy(&vm->mem);
	sandbox_free(vm->seccomp);
	vm->seccomp = NULL;
}

int machine_disk_stats(struct vmm *vm, unsigned int id, struct vmm_disk_stats *st)
{
	struct machine *m = vm->machine;
	struct vpci_stats ts;
	struct vmm_queue_stats q;
	struct machine_disk *d;

	st->num_queues = disk_num_queues(vm, id);
	if (!m || !m->disks || !m->disks[id].dev)
		return 0; /* never started: all zero */
	d = &m->disks[id];
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
	for (unsigned int i = 0; i < st->num_queues; i++) {
		struct virtio_blk_queue_stats ds;

		if (virtio_blk_queue_stats(d->dev, i, &ds) ||
		    machine_queue_stats(vm, id, i, &q))
			continue;
		st->doorbells += ds.doorbells;
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
	struct machine *m = vm->machine;
	struct virtio_blk_queue_stats ds;
	int ret;

	if (!m || !m->disks || !m->disks[id].dev)
		return -ENOENT;
	ret = virtio_blk_queue_stats(m->disks[id].dev, q, &ds);
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
	st->kicks = ds.kicks;
	st->interrupts = ds.interrupts;
	st->suppressed = ds.suppressed;
	st->iothread = ds.iothread;
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
