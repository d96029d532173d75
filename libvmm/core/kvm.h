/* SPDX-License-Identifier: MIT */
/* /dev/kvm: open, API version and capability checks. */
#ifndef VMM_KVM_H
#define VMM_KVM_H

#include <stddef.h>

#include "util/compiler.h"

struct kvm_sys {
	int fd;		      /* /dev/kvm */
	int vcpu_mmap_size;   /* size of each vCPU's struct kvm_run mapping */
	int max_vcpus;	      /* KVM_CAP_MAX_VCPUS (or NR_VCPUS) */
};

/* A capability and its name, for messages. */
struct kvm_cap_name {
	long cap;
	const char *name;
};
#define KVM_CAP_NAME(c) { (c), #c }

/*
 * Open /dev/kvm and check every capability libvmm relies on: the core's
 * (memory slots, an in-kernel irqchip, GSI routing, irqfd, ioeventfd,
 * KVM_SIGNAL_MSI, immediate_exit) and the platform's @extra.
 * Logs "KVM is not available: /dev/kvm: <strerror>" or names the missing
 * capability.  Returns 0, -ENOENT, -EACCES, -EPERM, -ENOTSUP or -EIO.
 */
int kvm_sys_open(struct kvm_sys *kvm, const struct kvm_cap_name *extra,
		 size_t nr_extra) __must_check;
void kvm_sys_close(struct kvm_sys *kvm);

/* KVM_CHECK_EXTENSION on @fd (system or VM fd): the value, 0 if absent. */
int kvm_check_cap(int fd, long cap);

#endif
