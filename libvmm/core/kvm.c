/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "kvm.h"
#include "log.h"

#define KVM_DEV "/dev/kvm"

/* Every platform's (the platform names its own: kvm_sys_open()). */
static const struct kvm_cap_name required_caps[] = {
	KVM_CAP_NAME(KVM_CAP_USER_MEMORY),
	KVM_CAP_NAME(KVM_CAP_IRQCHIP),
	KVM_CAP_NAME(KVM_CAP_IRQ_ROUTING),
	KVM_CAP_NAME(KVM_CAP_IRQFD),
	KVM_CAP_NAME(KVM_CAP_IOEVENTFD),
	KVM_CAP_NAME(KVM_CAP_SIGNAL_MSI),
	KVM_CAP_NAME(KVM_CAP_IMMEDIATE_EXIT),
};

static int kvm_missing_cap(int fd, const struct kvm_cap_name *caps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!kvm_check_cap(fd, caps[i].cap)) {
			vmm_err("KVM lacks a required capability: %s",
				caps[i].name);
			return -ENOTSUP;
		}
	}
	return 0;
}

int kvm_check_cap(int fd, long cap)
{
	int r = ioctl(fd, KVM_CHECK_EXTENSION, cap);

	return r < 0 ? 0 : r;
}

int kvm_sys_open(struct kvm_sys *kvm, const struct kvm_cap_name *extra,
		 size_t nr_extra)
{
	int fd, ret, v;

	kvm->fd = -1;
	fd = open(KVM_DEV, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		vmm_err("KVM is not available: %s: %s", KVM_DEV, strerror(errno));
		return ret == -ENODEV || ret == -ENXIO ? -ENOENT : ret;
	}
	v = ioctl(fd, KVM_GET_API_VERSION, 0);
	if (v != KVM_API_VERSION) {
		vmm_err("KVM API version %d is not supported (need %d)", v,
			KVM_API_VERSION);
		close(fd);
		return -ENOTSUP;
	}
	if (kvm_missing_cap(fd, required_caps, ARRAY_SIZE(required_caps)) ||
	    kvm_missing_cap(fd, extra, nr_extra)) {
		close(fd);
		return -ENOTSUP;
	}
	kvm->vcpu_mmap_size = ioctl(fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (kvm->vcpu_mmap_size < (int)sizeof(struct kvm_run)) {
		vmm_err("KVM_GET_VCPU_MMAP_SIZE: %s", strerror(errno));
		close(fd);
		return -EIO;
	}
	kvm->max_vcpus = kvm_check_cap(fd, KVM_CAP_MAX_VCPUS);
	if (kvm->max_vcpus <= 0)
		kvm->max_vcpus = kvm_check_cap(fd, KVM_CAP_NR_VCPUS);
	if (kvm->max_vcpus <= 0)
		kvm->max_vcpus = 4; /* the documented default without the cap */
	kvm->fd = fd;
	return 0;
}

void kvm_sys_close(struct kvm_sys *kvm)
{
	if (kvm->fd >= 0)
		close(kvm->fd);
	kvm->fd = -1;
}
