/* SPDX-License-Identifier: MIT */
/*
 * Per-vCPU CPUID.  KVM_GET_SUPPORTED_CPUID describes the host (host APIC
 * ids, host core/thread counts, host cache sharing); a guest that believed
 * those would compute wrong package/core ids, or see every vCPU with the
 * same APIC id and bring up only one CPU.  This rewrites the topology
 * fields for a simple model: one package, nr_vcpus cores, one thread per core, APIC id
 * == vCPU index.  The core level's APIC id width is
 * order = ceil(log2(nr_vcpus)), so the package id (APIC id >> order) is 0
 * for every vCPU.
 *
 * Left alone on purpose: leaf 6 (KVM already reports only ARAT), leaf 0xA
 * (KVM's PMU emulation is what it reports) and every feature bit except
 * HYPERVISOR and HTT.  TSC_DEADLINE, which KVM supports but never reports,
 * is cpuid_set_tsc_deadline()'s.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "util/compiler.h"
#include "x86/cpuid.h"

#define CPUID_1_EBX_APIC_ID_SHIFT 24
#define CPUID_1_EBX_LOGICAL_SHIFT 16
#define CPUID_1_ECX_TSC_DEADLINE (1u << 24)
#define CPUID_1_ECX_HYPERVISOR (1u << 31)
#define CPUID_1_EDX_HTT (1u << 28)

#define LEVEL_TYPE_INVALID 0
#define LEVEL_TYPE_SMT 1
#define LEVEL_TYPE_CORE 2

/* APIC IDs a guest can address with KVM_FEATURE_MSI_EXT_DEST_ID: 15 bits. */
#define CPUID_MAX_VCPUS 32768u
#define CPUID_KVM_FEATURES 0x40000001u
#define KVM_FEATURE_MSI_EXT_DEST_ID_BIT (1u << 15)

/* ceil(log2(n)) for n >= 1: bits needed for ids 0..n-1. */
static unsigned int id_order(unsigned int n)
{
	unsigned int order = 0;

	while ((1u << order) < n)
		order++;
	return order;
}

static uint32_t set_field(uint32_t reg, unsigned int shift, unsigned int bits,
			  uint32_t val)
{
	uint32_t mask = (bits >= 32 ? ~0u : ((1u << bits) - 1)) << shift;

	return (reg & ~mask) | ((val << shift) & mask);
}

static bool vendor_is_amd(const struct kvm_cpuid2 *cpuid)
{
	for (uint32_t i = 0; i < cpuid->nent; i++) {
		const struct kvm_cpuid_entry2 *e = &cpuid->entries[i];
		char v[12];

		if (e->function != 0)
			continue;
		memcpy(v, &e->ebx, 4);
		memcpy(v + 4, &e->edx, 4);
		memcpy(v + 8, &e->ecx, 4);
		return !memcmp(v, "AuthenticAMD", 12) ||
		       !memcmp(v, "HygonGenuine", 12);
	}
	return false;
}

/* Deterministic cache parameters: leaf 4 (Intel) and 0x8000001D (AMD). */
static bool has_kvm_signature(const struct kvm_cpuid2 *cpuid)
{
	for (uint32_t i = 0; i < cpuid->nent; i++) {
		const struct kvm_cpuid_entry2 *e = &cpuid->entries[i];
		char v[12];

		if (e->function != 0x40000000u)
			continue;
		memcpy(v, &e->ebx, 4);
		memcpy(v + 4, &e->ecx, 4);
		memcpy(v + 8, &e->edx, 4);
		return !memcmp(v, "KVMKVMKVM\0\0\0", 12);
	}
	return false;
}

static void fix_cache_leaf(struct kvm_cpuid_entry2 *e, unsigned int pkg_ids,
			   bool cores_field)
{
	unsigned int type = e->eax & 0x1f, level = (e->eax >> 5) & 0x7;
	/*
	 * Threads sharing the cache, minus one.  L1/L2 are private to a core
	 * and there is one thread per core; L3 is shared by the package.  The
	 * host value would pair vCPUs that are not siblings at all.
	 */
	unsigned int sharing = level >= 3 ? MIN(pkg_ids - 1, 0xfffu) : 0;

	if (type == 0)	/* no more caches */
		return;
	e->eax = set_field(e->eax, 14, 12, sharing);
	/* Intel only: addressable core ids in the package, minus one. */
	if (cores_field)
		e->eax = set_field(e->eax, 26, 6, MIN(pkg_ids - 1, 63u));
}

/* Extended topology: leaf 0xB and its superset 0x1F. */
static void fix_topology_leaf(struct kvm_cpuid_entry2 *e, unsigned int apic_id,
			      unsigned int nr_vcpus, unsigned int order)
{
	unsigned int sub = e->index;

	switch (sub) {
	case 0:		/* SMT: one thread per core */
		e->eax = 0;	/* shift to the next level's id */
		e->ebx = 1;
		e->ecx = sub | LEVEL_TYPE_SMT << 8;
		break;
	case 1:		/* core: every vCPU of the package */
		e->eax = order;
		e->ebx = nr_vcpus;
		e->ecx = sub | LEVEL_TYPE_CORE << 8;
		break;
	default:	/* no die/module/... levels: end of enumeration */
		e->eax = 0;
		e->ebx = 0;
		e->ecx = sub & 0xff;
		break;
	}
	/* Every subleaf reports this vCPU's x2APIC id. */
	e->edx = apic_id;
}

/* Leaf 1: this vCPU's APIC id, the package's id count, HTT, hypervisor. */
static void fix_leaf1(struct kvm_cpuid_entry2 *e, unsigned int vcpu_index,
		      unsigned int nr_vcpus, unsigned int pkg_ids)
{
	/* 8 bits: the low byte of an x2APIC id, as on hardware; leaf 0xB has
	 * it whole. */
	e->ebx = set_field(e->ebx, CPUID_1_EBX_APIC_ID_SHIFT, 8,
			   vcpu_index & 0xff);
	/* Addressable logical processor ids in the package: a power of two
	 * like the APIC id space, capped to the 8-bit field. */
	e->ebx = set_field(e->ebx, CPUID_1_EBX_LOGICAL_SHIFT, 8,
			   MIN(pkg_ids, 255u));
	/* HTT means "the count above is valid", not SMT. */
	if (nr_vcpus > 1)
		e->edx |= CPUID_1_EDX_HTT;
	else
		e->edx &= ~CPUID_1_EDX_HTT;
	e->ecx |= CPUID_1_ECX_HYPERVISOR;
}

/* AMD leaf 0x8000001e: extended APIC id, core and node ids. */
static void fix_amd_ext_apic_leaf(struct kvm_cpuid_entry2 *e,
				  unsigned int vcpu_index)
{
	e->eax = vcpu_index;	/* extended APIC id */
	/* Core id = index; threads per core - 1 = 0. */
	e->ebx = set_field(e->ebx, 0, 16, vcpu_index & 0xff);
	/* Node id 0; nodes per processor - 1 = 0. */
	e->ecx = set_field(e->ecx, 0, 11, 0);
}

int cpuid_fixup(struct kvm_cpuid2 *cpuid, unsigned int vcpu_index,
		unsigned int nr_vcpus)
{
	unsigned int order, pkg_ids;
	bool amd, kvm_leaves;

	if (!cpuid || nr_vcpus == 0 || nr_vcpus > CPUID_MAX_VCPUS ||
	    vcpu_index >= nr_vcpus)
		return -EINVAL;

	order = id_order(nr_vcpus);
	pkg_ids = 1u << order;	/* APIC ids reserved for the package */
	amd = vendor_is_amd(cpuid);
	kvm_leaves = has_kvm_signature(cpuid);

	for (uint32_t i = 0; i < cpuid->nent; i++) {
		struct kvm_cpuid_entry2 *e = &cpuid->entries[i];

		switch (e->function) {
		case 1:
			fix_leaf1(e, vcpu_index, nr_vcpus, pkg_ids);
			break;
		case 4:
			fix_cache_leaf(e, pkg_ids, true);
			break;
		case 0xb:
		case 0x1f:
			fix_topology_leaf(e, vcpu_index, nr_vcpus, order);
			break;
		case 0x80000008:
			/* On Intel ECX is reserved. */
			if (!amd)
				break;
			/* NC: cores - 1; ApicIdCoreIdSize: id bits for cores. */
			e->ecx = set_field(e->ecx, 0, 8, MIN(nr_vcpus - 1, 255u));
			e->ecx = set_field(e->ecx, 12, 4, order);
			break;
		case CPUID_KVM_FEATURES:
			/*
			 * KVM does not report it (it is the VMM's promise):
			 * MSI addresses may carry destination bits 8-14 in
			 * bits 11:5, which irq.c moves to where KVM reads
			 * them.  Linux then uses APIC ids up to 32767 without
			 * an IOMMU.  Only KVM's own leaf, found by its
			 * signature in 0x40000000, is touched.
			 */
			if (kvm_leaves)
				e->eax |= KVM_FEATURE_MSI_EXT_DEST_ID_BIT;
			break;
		case 0x8000001d:
			if (amd)
				fix_cache_leaf(e, pkg_ids, false);
			break;
		case 0x8000001e:
			if (amd)
				fix_amd_ext_apic_leaf(e, vcpu_index);
			break;
		default:
			break;
		}
	}
	return 0;
}

void cpuid_set_tsc_deadline(struct kvm_cpuid2 *cpuid)
{
	for (uint32_t i = 0; cpuid && i < cpuid->nent; i++)
		if (cpuid->entries[i].function == 1)
			cpuid->entries[i].ecx |= CPUID_1_ECX_TSC_DEADLINE;
}
