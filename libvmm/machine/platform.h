/* SPDX-License-Identifier: MIT */
/*
 * The platform's hooks: one implementation per arch (machine/x86/pc.c,
 * machine/arm64/virt.c).  machine_start() calls them in the order they
 * are declared here; the platform's state is struct machine_arch, its own.
 */
#ifndef VMM_MACHINE_PLATFORM_H
#define VMM_MACHINE_PLATFORM_H

#include <stddef.h>

#include "util/compiler.h"

struct vmm;
struct machine;
struct machine_arch;
struct irq_platform;

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
/* The guest clock across a pause (vmm_pause()): called with every vCPU
 * parked, pause before they were, resume before they run again.  Context:
 * the API caller's thread.  Failures are logged, never fatal. */
void machine_arch_pause(struct vmm *vm, struct machine *m);
void machine_arch_resume(struct vmm *vm, struct machine *m);
/* Press the machine's power button (vmm_shutdown()).  Returns 0 or
 * -ENOTSUP (the platform has none).  Context: any thread. */
int machine_arch_power_button(struct vmm *vm, struct machine *m);
/* Free the platform's devices, the PCI bus m->pci (after the devices on
 * it) and m->arch.  NULL-safe, after the vCPUs are joined. */
void machine_arch_destroy(struct vmm *vm, struct machine *m);

#endif
