/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "log.h"
#include "vm.h"
#include "x86/cpuid.h"
#include "x86/vcpu-init.h"

/* LAPIC register offsets and LVT delivery modes (Intel SDM vol. 3 10.5.1). */
#define APIC_LVT0 0x350
#define APIC_LVT1 0x360
#define APIC_MODE_NMI 0x4
#define APIC_MODE_EXTINT 0x7

static void lapic_set_lvt_mode(struct kvm_lapic_state *lapic, int reg,
			       uint32_t mode)
{
	uint32_t v;

	memcpy(&v, &lapic->regs[reg], sizeof(v));
	v = (v & ~0x700u) | (mode << 8);
	memcpy(&lapic->regs[reg], &v, sizeof(v));
}

static int x86_vcpu_setup_cpuid(struct vcpu *vcpu, const struct kvm_cpuid2 *base)
{
	size_t sz = sizeof(*base) + base->nent * sizeof(base->entries[0]);
	struct kvm_cpuid2 *c = malloc(sz);
	int ret;

	if (!c)
		return -ENOMEM;
	memcpy(c, base, sz);
	ret = cpuid_fixup(c, vcpu->index, vcpu->vm->nr_vcpus);
	if (!ret && ioctl(vcpu->fd, KVM_SET_CPUID2, c) < 0) {
		ret = -EIO;
		vmm_err("vCPU %u: KVM_SET_CPUID2: %s", vcpu->index, strerror(errno));
	}
	free(c);
	return ret;
}

static int x86_vcpu_get_sregs(struct vcpu *vcpu, struct kvm_sregs *sregs)
{
	if (ioctl(vcpu->fd, KVM_GET_SREGS, sregs) < 0) {
		vmm_err("vCPU %u: KVM_GET_SREGS: %s", vcpu->index, strerror(errno));
		return -EIO;
	}
	return 0;
}

/*
 * Start in x2APIC mode, as firmware leaves a machine with APIC IDs of 255
 * and more: an xAPIC ID has 8 bits (and 255 is its broadcast), and Linux
 * takes the MADT's x2APIC entries for IDs >= 255 only when x2APIC is
 * already on at boot ("x2apic: enabled by BIOS").  An INIT keeps the mode,
 * so the APs wake into it too.  KVM derives the x2APIC ID from the vCPU
 * id (KVM_CAP_X2APIC_API, enabled by the machine before any vCPU exists).
 */
static int x86_vcpu_enable_x2apic(struct vcpu *vcpu)
{
	struct kvm_sregs sregs;
	int ret = x86_vcpu_get_sregs(vcpu, &sregs);

	if (ret)
		return ret;
	sregs.apic_base |= X86_APIC_BASE_ENABLE | X86_APIC_BASE_X2APIC;
	if (ioctl(vcpu->fd, KVM_SET_SREGS, &sregs) < 0) {
		vmm_err("vCPU %u: cannot enable x2APIC mode: %s", vcpu->index,
			strerror(errno));
		return -EIO;
	}
	return 0;
}

int x86_vcpu_init(struct vcpu *vcpu, const struct kvm_cpuid2 *cpuid)
{
	struct kvm_lapic_state lapic;
	struct kvm_fpu fpu;
	int ret;

	ret = x86_vcpu_setup_cpuid(vcpu, cpuid);
	if (ret)
		return ret;

	/* x87 control word and MXCSR as after FNINIT / reset (Linux expects
	 * sane values before it initialises the FPU itself). */
	memset(&fpu, 0, sizeof(fpu));
	fpu.fcw = 0x37f;
	fpu.mxcsr = 0x1f80;
	if (ioctl(vcpu->fd, KVM_SET_FPU, &fpu) < 0)
		goto err_errno;

	/* Match the MP table's local interrupt entries: LINT0 is ExtINT (the
	 * 8259 behind it), LINT1 is NMI. */
	if (ioctl(vcpu->fd, KVM_GET_LAPIC, &lapic) < 0)
		goto err_errno;
	lapic_set_lvt_mode(&lapic, APIC_LVT0, APIC_MODE_EXTINT);
	lapic_set_lvt_mode(&lapic, APIC_LVT1, APIC_MODE_NMI);
	if (ioctl(vcpu->fd, KVM_SET_LAPIC, &lapic) < 0)
		goto err_errno;
	if (vcpu->vm->nr_vcpus > X86_MAX_XAPIC_VCPUS)
		return x86_vcpu_enable_x2apic(vcpu);
	return 0;

err_errno:
	vmm_err("vCPU %u setup: %s", vcpu->index, strerror(errno));
	return -EIO;
}

int x86_vcpu_set_entry(struct vcpu *vcpu, const struct x86_boot_entry *entry)
{
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	int ret = x86_vcpu_get_sregs(vcpu, &sregs);

	if (ret)
		return ret;
	memset(&regs, 0, sizeof(regs));
	x86_boot_regs(entry, &regs, &sregs);
	if (ioctl(vcpu->fd, KVM_SET_SREGS, &sregs) < 0 ||
	    ioctl(vcpu->fd, KVM_SET_REGS, &regs) < 0) {
		vmm_err("vCPU %u: setting boot registers: %s", vcpu->index,
			strerror(errno));
		return -EIO;
	}
	return 0;
}
