/* SPDX-License-Identifier: MIT */
/*
 * The arm64 half of a vCPU's set-up (what core/vcpu.c's arch-neutral
 * vcpu_create() leaves to the platform): KVM_ARM_VCPU_INIT with the
 * host's preferred target and PSCI 0.2+ (KVM's in-kernel PSCI: secondary
 * vCPUs start powered off and come up through CPU_ON; SYSTEM_OFF and
 * SYSTEM_RESET end KVM_RUN with KVM_EXIT_SYSTEM_EVENT), and the boot
 * vCPU's entry registers per Documentation/arm64/booting.rst.
 */
#ifndef VMM_ARM64_VCPU_INIT_H
#define VMM_ARM64_VCPU_INIT_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/compiler.h"
#include "vcpu.h"

/*
 * arm64_vcpu_target() - KVM_ARM_PREFERRED_TARGET on VM @vm_fd into @init
 * (once per VM: every vCPU gets the same target).  Returns 0 or -EIO.
 */
int arm64_vcpu_target(int vm_fd, struct kvm_vcpu_init *init) __must_check;

/*
 * arm64_vcpu_init() - KVM_ARM_VCPU_INIT of @vcpu with @target and PSCI
 * 0.2; every vCPU but the boot one (@boot false) starts powered off.
 * Returns 0, -ENOTSUP (KVM refuses PSCI 0.2) or -EIO (logged).
 */
int arm64_vcpu_init(struct vcpu *vcpu, const struct kvm_vcpu_init *target,
		    bool boot) __must_check;

/* @vcpu's MPIDR_EL1 affinity (Aff3..Aff0), what the device tree's cpu
 * "reg" must say.  Returns 0 or -EIO. */
int arm64_vcpu_mpidr(struct vcpu *vcpu, uint64_t *mpidr) __must_check;

/*
 * arm64_vcpu_set_entry() - the boot vCPU enters the kernel at @pc with the
 * device tree's address in x0 and x1-x3 zero; KVM's reset state already is
 * EL1h with DAIF masked and the MMU off.  Returns 0 or -EIO.
 */
int arm64_vcpu_set_entry(struct vcpu *vcpu, uint64_t pc, uint64_t fdt_gpa) __must_check;

#endif
