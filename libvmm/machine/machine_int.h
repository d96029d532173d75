/* SPDX-License-Identifier: MIT */
/*
 * Inside the machine layer: what machine.c (arch-neutral assembly: memory,
 * disks, ports, I/O threads, the start/stop sequence, statistics) shares
 * with the platform's assembly (machine/<arch>/: the interrupt controller,
 * firmware tables and boot image, the platform's own devices, the PCI host
 * bridge's windows, vCPU set-up).  machine_start() calls the platform's
 * hooks in the order they are declared here.
 */
#ifndef VMM_MACHINE_INT_H
#define VMM_MACHINE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "util/compiler.h"

struct vmm;
struct vblk_dev;
struct virtio_transport;
struct vcon;
struct iothread;
struct pci_bus;
struct serial_host;
struct machine_arch; /* the platform's own state (machine/<arch>/) */
struct irq_platform;

struct machine_disk {
	struct vblk_dev *dev;
	struct virtio_transport *transport;
	unsigned int nq; /* its queues (disk_queues_in()) */
};

struct machine {
	struct machine_disk *disks; /* vm->nr_disks of them */
	/* virtio-console with the vmm_add_port() ports, if any. */
	struct vcon *ports;
	struct virtio_transport *ports_transport;
	struct iothread **iothreads;
	unsigned int nr_iothreads;
	/* The PCI bus the virtio devices sit on: built by the platform (it
	 * knows the host bridge and its windows). */
	struct pci_bus *pci;
	/* Host side of the serial console: the console fds and the
	 * "vmm-console" thread; the platform's UART writes into it. */
	struct serial_host *console;
	struct machine_arch *arch;
	/* KVM can coalesce MMIO writes (vm_coalesced_ring_offset()): the
	 * virtio devices register zones, so the ring is mapped before the
	 * vCPUs run. */
	bool coalesce_mmio;
};

/* ---- the platform's hooks (one implementation per arch) ---------------- */

/* The VM's interrupt controller and whatever must exist before guest RAM
 * and vCPUs; allocates m->arch. */
int machine_arch_create(struct vmm *vm, struct machine *m) __must_check;
/* Firmware tables and the boot image (kernel, initrd, command line) into
 * guest RAM; remembers the entry state for machine_arch_setup_vcpus(). */
int machine_arch_load_boot(struct vmm *vm, struct machine *m) __must_check;
/* The platform's devices (serial UART into m->console, reset, clock,
 * power) and the PCI bus m->pci. */
int machine_arch_setup_devices(struct vmm *vm, struct machine *m) __must_check;
/* Create the vCPUs in vm->vcpus[] (allocated by machine.c, every fd -1):
 * vcpu_create() and the arch's register state. */
int machine_arch_setup_vcpus(struct vmm *vm, struct machine *m) __must_check;
/* Optional speed-ups once the vCPUs exist (e.g. coalesced registers). */
void machine_arch_late(struct vmm *vm, struct machine *m);
/* KVM capabilities the platform needs besides the core's (kvm.h);
 * checked at vmm_create(). */
struct kvm_cap_name;
const struct kvm_cap_name *machine_arch_kvm_caps(size_t *n);
/* Where guest RAM goes (memory.h). */
struct guest_layout;
const struct guest_layout *machine_arch_guest_layout(void);
/* The interrupt controller as the GSI routing table sees it (irq.h). */
const struct irq_platform *machine_arch_irq_platform(void);
/* Context: console thread.  Guest input for the serial UART. */
size_t machine_arch_console_input(struct vmm *vm, const void *buf, size_t len);
/* Free the platform's devices and m->arch.  NULL-safe, after the vCPUs
 * are joined. */
void machine_arch_destroy(struct vmm *vm, struct machine *m);

/* ---- what machine.c gives the platform -------------------------------- */

/* Device callbacks ending the VM (opaque: struct vmm).  Context: vCPU
 * thread. */
void machine_guest_reset(void *opaque);
void machine_guest_poweroff(void *opaque);
void machine_guest_exit(void *opaque, uint32_t status);
/* The serial UART's transmit callback (uart8250_tx_fn) into m->console
 * (opaque).  Context: vCPU thread, the UART's lock held; never blocks. */
void machine_console_output(void *opaque, const uint8_t *buf, size_t len);

#endif
