/* SPDX-License-Identifier: MIT */
/*
 * Inside the machine layer: what machine.c (the start sequence) shares
 * with the files it is made of (plan.c, disks.c, ports.c, confine.c,
 * stats.c) and with the platform's assembly (machine/<arch>/: the
 * interrupt controller, firmware tables and boot image, the platform's
 * own devices, the PCI host bridge's windows, vCPU set-up), whose hooks
 * are platform.h.
 */
#ifndef VMM_MACHINE_INT_H
#define VMM_MACHINE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "platform.h"
#include "util/compiler.h"

struct vmm;
struct machine;
struct virtio_transport;
struct iothread;
struct pci_bus;
struct serial_host;
struct machine_arch; /* the platform's own state (machine/<arch>/) */
struct machine_device;

/*
 * One kind of device (disks.c, ports.c): what machine.c calls of it, in
 * this order.  Context: the thread of vmm_start() / vmm_wait() /
 * vmm_destroy().
 */
struct machine_device_ops {
	/* Build the device model and its transport with d->nq queues (the
	 * plan's), on m->pci and, if it asked for them, m->iothreads. */
	int (*create)(struct vmm *vm, struct machine *m, struct machine_device *d);
	/* Start its own threads (NULL: none).  After the embedder's start
	 * hook: threads confined before a uid drop would die on glibc's
	 * set*id broadcast. */
	int (*start)(struct machine_device *d);
	/* No more guest I/O: in-flight requests drained, what the guest
	 * queued written out.  Before the I/O threads stop.  Idempotent. */
	void (*stop)(struct machine_device *d);
	/* Free it.  After stop() and the vCPUs; safe on a half-built one. */
	void (*destroy)(struct machine_device *d);
};

/* One device of the machine, in the plan's order (the disks by id, then
 * the ports' virtio-console device). */
struct machine_device {
	const struct machine_device_ops *ops;
	unsigned int id;  /* among its kind (the disk id) */
	unsigned int nq;  /* its queues: the plan's */
	void *dev;	  /* the device model (struct virtio_blk, struct vcon) */
	struct virtio_transport *transport;
};

extern const struct machine_device_ops machine_disk_ops;  /* disks.c */
extern const struct machine_device_ops machine_ports_ops; /* ports.c */
extern const struct machine_device_ops machine_net_ops;   /* nets.c */
/* The stop of a device that is a virtio-pci function and nothing more
 * (disks.c): vpci_shutdown(). */
void machine_vpci_stop(struct machine_device *d);
extern const struct machine_device_ops machine_fs_ops;	  /* fs.c */
extern const struct machine_device_ops machine_vsock_ops; /* vsocks.c */


struct machine {
	struct machine_plan plan; /* computed once, by vmm_start() */
	struct machine_device *devs; /* plan.nr_devices of them */
	unsigned int nr_devs;	     /* created so far */
	struct iothread **iothreads;
	unsigned int nr_iothreads;
	/* The I/O threads were told to stop (machine_join(), under
	 * vm->lock): no call may be posted to them any more (one posted while
	 * a thread ends would never run).  vmm_set_net_link() checks it. */
	bool io_stopped;
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
	/* KVM_CAP_IOEVENTFD_ANY_LENGTH, for the devices' transports. */
	bool ioeventfd_any_length;
	/* The vsock device (vsocks.c), NULL: none; its I/O thread also
	 * serves host sockets (its seccomp class: confine.c). */
	struct machine_device *vsock;
	unsigned int vsock_iothread;
};

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
