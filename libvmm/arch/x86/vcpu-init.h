/* SPDX-License-Identifier: MIT */
/*
 * The x86 half of a vCPU's set-up: what core/vcpu.c's arch-neutral
 * vcpu_create() leaves to the platform before the thread starts.
 */
#ifndef VMM_X86_VCPU_INIT_H
#define VMM_X86_VCPU_INIT_H

#include <linux/kvm.h>

#include "util/compiler.h"
#include "vcpu.h"
#include "x86/boot.h"

/* More vCPUs than this: APIC IDs reach 255 (xAPIC's broadcast), so every
 * vCPU starts in x2APIC mode (x86_vcpu_init()). */
#define X86_MAX_XAPIC_VCPUS 255u
#define X86_APIC_BASE_X2APIC (1ull << 10) /* IA32_APIC_BASE.EXTD */
#define X86_APIC_BASE_ENABLE (1ull << 11) /* IA32_APIC_BASE.EN */

/*
 * CPUID (@cpuid from KVM_GET_SUPPORTED_CPUID, fixed up here for this vCPU's
 * APIC id out of vcpu->vm->nr_vcpus), FPU, LAPIC LINT0/LINT1 as the MP
 * table and the MADT describe them; with more than X86_MAX_XAPIC_VCPUS
 * vCPUs, x2APIC mode on.  Context: vmm_start(), after vcpu_create(),
 * before vcpu_start().  Returns 0, -ENOMEM, or -EIO (logged).
 */
int x86_vcpu_init(struct vcpu *vcpu, const struct kvm_cpuid2 *cpuid) __must_check;

/* The entry state of @entry (x86_boot_regs()) into @vcpu, the boot
 * processor.  Returns 0 or -EIO (logged). */
int x86_vcpu_set_entry(struct vcpu *vcpu, const struct x86_boot_entry *entry) __must_check;

#endif
