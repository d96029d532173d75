/* SPDX-License-Identifier: MIT */
/*
 * Machine assembly: turns a configured struct vmm (its struct
 * machine_config, machine-config.h) into a running machine (interrupt
 * controller, RAM, boot image, vCPUs, serial console, PCI bus and its
 * devices; on x86 a PC-like one, machine/x86/pc.c).  This is the one layer
 * above the devices and the platforms: the core (libvmm/core) never
 * includes a device or an arch header (tests/layering.sh).
 */
#ifndef VMM_MACHINE_H
#define VMM_MACHINE_H

#include <stdbool.h>

#include "util/compiler.h"

struct vmm;

/* Build everything and start the vCPU threads. On failure nothing is left
 * running or allocated. Returns 0 or -errno (reason logged). */
int machine_start(struct vmm *vm) __must_check;
/* Stop and join every thread (vCPUs, console, I/O threads). Idempotent.
 * Takes vm->lock briefly (to mark the I/O threads stopping) unless
 * machine->io_stopped is set already: a caller holding vm->lock sets it
 * first. */
void machine_join(struct vmm *vm);
/* Free what machine_start() built. Call after machine_join(). */
void machine_destroy(struct vmm *vm);

/* Statistics behind vmm_get_*_stats() (stats.c); @id is a valid disk id.
 * Before vmm_start() a disk's num_queues is the plan's (plan.h). */
struct vmm_disk_stats;
struct vmm_queue_stats;
struct vmm_kvm_stats;
int machine_disk_stats(struct vmm *vm, unsigned int id, struct vmm_disk_stats *st);
int machine_queue_stats(struct vmm *vm, unsigned int id, unsigned int q,
			struct vmm_queue_stats *st);
int machine_kvm_stats(struct vmm *vm, struct vmm_kvm_stats *st);
/* NIC @id's pair @pair (nets.c); -ENOENT before a start. */
struct vmm_net_pair_stats;
int machine_net_stats(struct vmm *vm, unsigned int id, unsigned int pair,
		      struct vmm_net_pair_stats *st);
/* vmm_set_net_link(), vmm_get_net_link() (nets.c); @id is a valid NIC
 * id, vm->lock held. */
int machine_net_set_link(struct vmm *vm, unsigned int id, bool up);
int machine_net_link(struct vmm *vm, unsigned int id);
/* Console counters into @st (left as they are if no console was built). */
struct vmm_fs_stats;
/* vmm_get_fs_stats() (fs.c): zeros before vmm_start().  @id is valid. */
void machine_fs_stats(struct vmm *vm, unsigned int id, struct vmm_fs_stats *st);
struct vmm_console_stats;
void machine_console_stats(struct vmm *vm, struct vmm_console_stats *st);
struct vmm_iothread_stats;
/* vmm_get_iothread_stats(): -ENOENT where I/O thread @index is not there
 * (none before vmm_start()). */
int machine_iothread_stats(struct vmm *vm, unsigned int index,
			   struct vmm_iothread_stats *st);
/* The vsock device's counters into @st (zero before vmm_start()). */
struct vmm_vsock_stats;
void machine_vsock_stats(struct vmm *vm, struct vmm_vsock_stats *st);

#endif
