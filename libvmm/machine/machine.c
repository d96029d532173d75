/* SPDX-License-Identifier: MIT */
/*
 * Machine assembly (see machine.h): the start sequence, read as the boot
 * of a PC -- plan, memory, interrupt controller, platform devices, the
 * virtio devices and their I/O threads, vCPUs, confinement, go -- and its
 * undoing.  The plan is plan.c's, the devices are a list (disks.c,
 * ports.c) called through their ops, confinement is confine.c's and the
 * statistics stats.c's.  The platform's half (interrupt controller,
 * firmware tables, boot image, its own devices, the PCI host bridge, vCPU
 * registers) is machine/<arch>/, behind machine-int.h's hooks.
 */
#include <errno.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "machine-config.h"
#include "affinity.h"
#include "confine.h"
#include "serial-host.h"
#include "iothread.h"
#include "irq.h"
#include "kvm.h"
#include "log.h"
#include "machine-int.h"
#include "machine.h"
#include "pci/msix.h"
#include "pci/pci.h"
#include "vcpu.h"
#include "virtio/virtio-pci.h"
#include "vm.h"

/* Queue caps: per device at most VIRTIO_QUEUE_MAX queues and an MSI-X
 * table of 2048 entries including the configuration vector; over all
 * devices what KVM's route table holds besides the irqchip's routes (one
 * MSI route per queue, plan.c). */
_Static_assert(VMM_MAX_DISK_QUEUES <= VPCI_MAX_QUEUES &&
		       VMM_MAX_DISK_QUEUES + 1 <= MSIX_MAX_VECTORS,
	       "per-disk queue cap");
_Static_assert(VMM_MAX_DISKS < (PCI_MAX_SLOTS - 1) * PCI_MAX_FUNCTIONS,
	       "a PCI function for every disk and the console device");

/* io_uring entries per I/O thread (CQ is 4x): room for a few queues' worth
 * of requests per submit batch. */
#define IOTHREAD_RING_ENTRIES 512u

/* ---- callbacks of the platform's devices ------------------------------ */

void machine_guest_reset(void *opaque)
{
	vmm_info("guest requested a reset");
	vcpu_stop_all(opaque, VMM_EXIT_GUEST_RESET);
}

/* Context: vCPU thread.  ACPI S5. */
void machine_guest_poweroff(void *opaque)
{
	vmm_info("guest powered off");
	vcpu_stop_all(opaque, VMM_EXIT_POWEROFF);
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
	vcpu_stop_all(vm, VMM_EXIT_GUEST_STATUS);
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
	vcpu_stop_all(opaque, VMM_EXIT_ERROR);
}

/* ---- the start sequence's steps --------------------------------------- */

/* Guest RAM and its KVM memslots. */
static int machine_setup_memory(struct vmm *vm)
{
	int ret = guest_mem_init(&vm->mem, vm->config->ram_size,
				 vm->config->mem_backend,
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

/* The host side of the serial console, the platform's devices and its PCI
 * bus, with room for every planned device. */
static int machine_setup_platform(struct vmm *vm, struct machine *m)
{
	struct serial_host_params cp = {
		.in_fd = vm->config->console_in,
		.out_fd = vm->config->console_out,
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
	if (m->plan.nr_devices > PCI_MAX_SLOTS - 1)
		return pci_bus_set_functions_per_slot(m->pci, PCI_MAX_FUNCTIONS);
	return 0;
}

/* The plan's I/O threads, running (unconfined until confine_iothreads()). */
static int machine_start_iothreads(struct vmm *vm, struct machine *m)
{
	unsigned int n = m->plan.nr_iothreads;
	int ret;

	if (!n)
		return 0;
	m->iothreads = calloc(n, sizeof(*m->iothreads));
	if (!m->iothreads)
		return -ENOMEM;
	for (unsigned int i = 0; i < n; i++) {
		ret = iothread_create(i, IOTHREAD_RING_ENTRIES, &m->iothreads[i]);
		if (ret)
			return ret;
		m->nr_iothreads++;
		iothread_set_batch(m->iothreads[i], vm->config->iothread_sched ==
							    VMM_IOTHREAD_SCHED_BATCH);
		iothread_set_adaptive(m->iothreads[i], vm->config->iothread_sched ==
						       VMM_IOTHREAD_SCHED_ADAPTIVE);
		ret = iothread_start(m->iothreads[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* The planned devices, in the plan's order (the PCI functions' order):
 * the disks by id, the NICs by id, the ports' virtio-console device, the
 * virtio-fs devices, then the vsock device. */
static int machine_setup_devices(struct vmm *vm, struct machine *m)
{
	int ret;

	m->devs = calloc(m->plan.nr_devices ? m->plan.nr_devices : 1,
			 sizeof(*m->devs));
	if (!m->devs)
		return -ENOMEM;
	m->coalesce_mmio = vm_coalesced_ring_offset(vm) > 0;
	m->ioeventfd_any_length =
		kvm_check_cap(vm->vm_fd, KVM_CAP_IOEVENTFD_ANY_LENGTH) > 0;
	ret = machine_start_iothreads(vm, m);
	for (unsigned int i = 0; !ret && i < m->plan.nr_devices; i++) {
		struct machine_device *d = &m->devs[m->nr_devs++];
		unsigned int nd = vm->config->nr_disks, nn = vm->config->nr_nets,
			     first_fs = nd + nn + (vm->config->nr_ports ? 1 : 0);

		d->ops = i < nd ? &machine_disk_ops :
			 i < nd + nn ? &machine_net_ops : &machine_ports_ops;
		d->id = i < nd ? i : i < nd + nn ? i - nd : 0;
		if (i >= first_fs) { /* then the virtio-fs devices */
			d->ops = &machine_fs_ops;
			d->id = i - first_fs;
		}
		if (i >= first_fs + vm->config->nr_fs) /* the vsock, last */
			d->ops = &machine_vsock_ops;
		d->nq = m->plan.queues[i];
		ret = d->ops->create(vm, m, d);
	}
	return ret;
}

/* vm->vcpus[], nothing open yet (vcpu_destroy() skips fd -1): the
 * platform creates each; then the coalesced ring, which the devices'
 * zones log into from the first KVM_RUN (drained before every exit,
 * vcpu.c), and the platform's optional speed-ups. */
static int machine_setup_vcpus(struct vmm *vm, struct machine *m)
{
	int ret;

	vm->vcpus = calloc(vm->nr_vcpus, sizeof(*vm->vcpus));
	if (!vm->vcpus)
		return -ENOMEM;
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		vm->vcpus[i].fd = -1;
		vm->vcpus[i].stats.fd = -1;
	}
	ret = machine_arch_setup_vcpus(vm, m);
	if (ret)
		return ret;
	if (m->coalesce_mmio) {
		ret = vm_coalesced_ring_map(vm, vm->vcpus[0].run);
		if (ret)
			return ret;
	}
	machine_arch_late(vm, m);
	return 0;
}

/* Every file is open; no thread is confined or runs the guest yet: the
 * embedder's hook, e.g. a uid/gid drop (vmm_set_start_hook()). */
static int machine_run_start_hook(struct vmm *vm)
{
	int ret;

	if (!vm->config->start_hook)
		return 0;
	ret = vm->config->start_hook(vm->config->start_hook_opaque);
	if (!ret)
		return 0;
	ret = ret < 0 ? ret : -ECANCELED;
	vmm_err("start hook: %s", strerror(-ret));
	return ret;
}

/* The console's thread, the devices' own threads, then the vCPUs. */
static int machine_go(struct vmm *vm, struct machine *m)
{
	int ret = serial_host_start(m->console);

	for (unsigned int i = 0; !ret && i < m->nr_devs; i++)
		if (m->devs[i].ops->start)
			ret = m->devs[i].ops->start(&m->devs[i]);
	for (unsigned int i = 0; !ret && i < vm->nr_vcpus; i++) {
		ret = vcpu_start(&vm->vcpus[i]);
		if (ret)
			vcpu_stop_all(vm, VMM_EXIT_ERROR);
	}
	return ret;
}

int machine_start(struct vmm *vm)
{
	struct machine *m;
	int ret;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	vm->machine = m;
	vm->nr_vcpus = vm->config->nr_vcpus;

	ret = plan_for_start(vm, &m->plan);
	if (!ret)
		ret = affinity_check(vm);
	if (!ret)
		ret = confine_build(vm);
	if (!ret)
		ret = machine_arch_create(vm, m); /* the interrupt controller */
	if (!ret)
		ret = machine_setup_memory(vm);
	if (!ret)
		ret = machine_arch_load_boot(vm, m); /* firmware tables, kernel */
	if (!ret)
		ret = irq_create(vm->vm_fd, machine_arch_irq_platform(), NULL,
				 NULL, &vm->irq);
	if (!ret)
		ret = machine_setup_platform(vm, m);
	if (!ret)
		ret = machine_setup_devices(vm, m);
	if (!ret)
		ret = machine_setup_vcpus(vm, m);
	if (!ret)
		ret = machine_run_start_hook(vm);
	/* After the start hook: threads confined before a uid drop would
	 * die on glibc's set*id broadcast. */
	if (!ret)
		ret = confine_iothreads(vm, m);
	if (!ret)
		ret = machine_go(vm, m);
	if (!ret)
		affinity_pin(vm, m);
	if (ret) {
		/* vmm_start() holds vm->lock: machine_join() must not take it. */
		if (vm->machine)
			vm->machine->io_stopped = true;
		machine_join(vm);
		machine_destroy(vm);
	}
	return ret;
}

void machine_join(struct vmm *vm)
{
	struct machine *m = vm->machine;

	/* vCPU threads end by themselves once the VM is stopping
	 * (vcpu_stop_all() kicked them); joining them is the wait. */
	if (vm->vcpus)
		for (unsigned int i = 0; i < vm->nr_vcpus; i++)
			vcpu_join(&vm->vcpus[i]);
	if (!m)
		return;
	for (unsigned int i = 0; i < m->nr_devs; i++)
		m->devs[i].ops->stop(&m->devs[i]);
	/* A caller that posts to the I/O threads under vm->lock
	 * (vmm_set_net_link()) is done before this, and posts none after.
	 * (A failed start holds vm->lock and has set it already.) */
	if (!m->io_stopped) {
		pthread_mutex_lock(&vm->lock);
		m->io_stopped = true;
		pthread_mutex_unlock(&vm->lock);
	}
	for (unsigned int i = 0; i < m->nr_iothreads; i++)
		iothread_stop(m->iothreads[i]);
	/* Last: the guest's final output is flushed (for a bounded time). */
	serial_host_stop(m->console);
}

/* The devices (before the bus they sit on, and before the I/O threads
 * their queues were served by), then the I/O threads. */
static void machine_destroy_devices(struct machine *m)
{
	for (unsigned int i = 0; i < m->nr_devs; i++)
		m->devs[i].ops->destroy(&m->devs[i]);
	free(m->devs);
	m->devs = NULL;
	m->nr_devs = 0;
	for (unsigned int i = 0; i < m->nr_iothreads; i++)
		iothread_destroy(m->iothreads[i]);
	free(m->iothreads);
	m->iothreads = NULL;
	m->nr_iothreads = 0;
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
		machine_destroy_devices(m);
		machine_arch_destroy(vm, m); /* and the PCI bus */
		serial_host_destroy(m->console);
		free(m);
		vm->machine = NULL;
	}
	irq_destroy(vm->irq);
	vm->irq = NULL;
	guest_mem_destroy(&vm->mem);
	confine_free(vm);
}
