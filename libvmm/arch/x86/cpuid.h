/* SPDX-License-Identifier: MIT */
/* Per-vCPU CPUID fixups on top of KVM_GET_SUPPORTED_CPUID. */
#ifndef VMM_X86_CPUID_H
#define VMM_X86_CPUID_H

#include <linux/kvm.h>

/**
 * cpuid_fixup() - make a supported-CPUID table describe one vCPU
 * @cpuid: table from KVM_GET_SUPPORTED_CPUID, edited in place (entries are
 *         changed, never added or removed)
 * @vcpu_index: this vCPU; it becomes its (x2)APIC id
 * @nr_vcpus: vCPUs in the VM, 1..32768
 *
 * Topology model: one package with @nr_vcpus cores of one thread each.
 * Leaf 1 gets the APIC id, the logical processor count, HTT and the
 * HYPERVISOR bit; leaves 0xB/0x1F the x2APIC topology (only the subleaves
 * present in @cpuid: 0 = SMT, 1 = core, the rest are marked invalid);
 * leaf 4 and AMD leaf 0x8000001D the cache sharing counts; AMD leaves
 * 0x80000008 and 0x8000001E the core count and ids; KVM's feature leaf
 * (0x40000001, when 0x40000000 has KVM's signature) the
 * KVM_FEATURE_MSI_EXT_DEST_ID bit, which this VMM honours (irq.c).  Leaf 1
 * holds the low 8 bits of an APIC id above 255.
 *
 * Pure function: no KVM calls.
 *
 * Returns: 0; -EINVAL if @cpuid is NULL, @nr_vcpus is 0 or above 32768, or
 * @vcpu_index >= @nr_vcpus.
 */
int cpuid_fixup(struct kvm_cpuid2 *cpuid, unsigned int vcpu_index,
		unsigned int nr_vcpus);

/**
 * cpuid_set_tsc_deadline() - advertise the TSC-deadline timer (leaf 1,
 * ECX bit 24) in @cpuid, a KVM_GET_SUPPORTED_CPUID table.
 *
 * KVM never reports it there, because it is emulated by the in-kernel
 * LAPIC: the VMM enables it when KVM_CHECK_EXTENSION says
 * KVM_CAP_TSC_DEADLINE_TIMER and it created the irqchip (KVM's api.rst).
 * Pure function: no KVM calls.  A table without leaf 1 is left alone.
 */
void cpuid_set_tsc_deadline(struct kvm_cpuid2 *cpuid);

#endif
