/* SPDX-License-Identifier: MIT */
/* /dev/kvm: open, API version and capability checks. */
#ifndef VMM_KVM_H
#define VMM_KVM_H

#include "util/compiler.h"

struct kvm_sys {
	int fd;		      /* /dev/kvm */
	int vcpu_mmap_size;   /* size of each vCPU's struct kvm_run mapping */
	int max_vcpus;	      /* KVM_CAP_MAX_VCPUS (or NR_VCPUS) */
};

/*
 * Open /dev/kvm and check every capability libvmm relies on.
 * Logs "KVM is not available: /dev/kvm: <strerror>" or names the missing
 * capability.  Returns 0, -ENOENT, -EACCES, -EPERM, -ENOTSUP or -EIO.
 */
int kvm_sys_open(struct kvm_sys *kvm) __must_check;
void kvm_sys_close(struct kvm_sys *kvm);

/* KVM_CHECK_EXTENSION on @fd (system or VM fd): the value, 0 if absent. */
int kvm_check_cap(int fd, long cap);

#endif
