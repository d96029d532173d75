/* SPDX-License-Identifier: MIT */
/* arm64 vCPU set-up (see vcpu-init.h). */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>

#include "arm64/vcpu-init.h"
#include "log.h"

/* A 64-bit core register (struct kvm_regs) as a KVM_{GET,SET}_ONE_REG id:
 * its offset in 32-bit words (Documentation/virt/kvm/api.rst). */
#define CORE_REG(field)                                                    \
	(KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_CORE |             \
	 (offsetof(struct kvm_regs, field) / sizeof(uint32_t)))
/* MPIDR_EL1: op0 3, op1 0, CRn 0, CRm 0, op2 5. */
#define SYSREG_MPIDR_EL1 ARM64_SYS_REG(3, 0, 0, 0, 5)
/* MPIDR_EL1 affinity fields: Aff3 (39:32), Aff2..Aff0 (23:0). */
#define MPIDR_AFF_MASK 0xff00ffffffull

int arm64_vcpu_target(int vm_fd, struct kvm_vcpu_init *init)
{
	memset(init, 0, sizeof(*init));
	if (ioctl(vm_fd, KVM_ARM_PREFERRED_TARGET, init) < 0) {
		vmm_err("KVM_ARM_PREFERRED_TARGET: %s", strerror(errno));
		return -EIO;
	}
	return 0;
}

int arm64_vcpu_init(struct vcpu *vcpu, const struct kvm_vcpu_init *target,
		    bool boot)
{
	struct kvm_vcpu_init init = *target;

	init.features[0] |= 1u << KVM_ARM_VCPU_PSCI_0_2;
	if (!boot)
		init.features[0] |= 1u << KVM_ARM_VCPU_POWER_OFF;
	if (ioctl(vcpu->fd, KVM_ARM_VCPU_INIT, &init) < 0) {
		int ret = errno;

		vmm_err("vCPU %u: KVM_ARM_VCPU_INIT: %s", vcpu->index,
			strerror(ret));
		return ret == EINVAL ? -ENOTSUP : -EIO;
	}
	return 0;
}

static int set_reg(struct vcpu *vcpu, uint64_t id, uint64_t val,
		   const char *what)
{
	struct kvm_one_reg r = { .id = id, .addr = (uint64_t)(uintptr_t)&val };

	if (ioctl(vcpu->fd, KVM_SET_ONE_REG, &r) < 0) {
		vmm_err("vCPU %u: setting %s: %s", vcpu->index, what,
			strerror(errno));
		return -EIO;
	}
	return 0;
}

int arm64_vcpu_mpidr(struct vcpu *vcpu, uint64_t *mpidr)
{
	uint64_t val = 0;
	struct kvm_one_reg r = {
		.id = SYSREG_MPIDR_EL1,
		.addr = (uint64_t)(uintptr_t)&val,
	};

	if (ioctl(vcpu->fd, KVM_GET_ONE_REG, &r) < 0) {
		vmm_err("vCPU %u: reading MPIDR_EL1: %s", vcpu->index,
			strerror(errno));
		return -EIO;
	}
	*mpidr = val & MPIDR_AFF_MASK;
	return 0;
}

int arm64_vcpu_set_entry(struct vcpu *vcpu, uint64_t pc, uint64_t fdt_gpa)
{
	int ret = set_reg(vcpu, CORE_REG(regs.pc), pc, "pc");

	if (!ret)
		ret = set_reg(vcpu, CORE_REG(regs.regs[0]), fdt_gpa, "x0");
	/* x1-x3: consecutive 64-bit registers, two id units apart. */
	for (uint64_t i = 1; i <= 3 && !ret; i++)
		ret = set_reg(vcpu, CORE_REG(regs.regs[0]) + 2 * i, 0, "x1-x3");
	return ret;
}
