/* SPDX-License-Identifier: MIT */
/*
 * kvm-probe: what the arm64 rig's KVM offers, checked without any VMM of
 * ours (CTest rig/arm64_kvm runs it in the arm64 L1 through rig-run).
 * Built static for aarch64 (tests/rig/arm64/test-kvm.sh).
 *
 * Steps, in the order an arm64 VMM takes them (Documentation/virt/kvm/
 * devices/arm-vgic-v3.rst, arm-vgic-its.rst, api.rst):
 *   /dev/kvm, KVM_GET_API_VERSION, capabilities; KVM_CREATE_VM with the
 *   largest IPA size; the vGIC v3 (KVM_DEV_TYPE_ARM_VGIC_V3, before any
 *   vCPU) and its ITS; one vCPU: KVM_ARM_PREFERRED_TARGET + KVM_ARM_VCPU_INIT
 *   with PSCI 0.2; vGIC and ITS CTRL_INIT; an MSI route with a device ID
 *   (KVM_MSI_VALID_DEVID), an irqfd on it and an ioeventfd; then a guest of
 *   six instructions at 0x40000000 with the MMU off: one 8-byte MMIO store
 *   (KVM_EXIT_MMIO) and PSCI SYSTEM_OFF through HVC
 *   (KVM_EXIT_SYSTEM_EVENT, SHUTDOWN).
 * Prints "KVM-PROBE name=value" lines, then "KVM-PROBE-OK"; any failing
 * step prints "KVM-PROBE-FAIL: ..." and exits 1 (no /dev/kvm included:
 * never a silent pass).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef __aarch64__
#error "kvm-probe is an aarch64 program (aarch64-linux-gnu-gcc -static)"
#endif

/* Guest physical layout (QEMU virt-like, our own numbers). */
#define GIC_DIST 0x08000000ULL
#define GIC_ITS 0x08080000ULL /* 128 KiB, 64 KiB aligned */
#define GIC_REDIST 0x080a0000ULL /* 128 KiB per vCPU */
#define MMIO_PROBE 0x10000000ULL
#define IOEVENT_ADDR 0x10001000ULL
#define RAM_BASE 0x40000000ULL
#define RAM_SIZE 0x10000ULL
#define GITS_TRANSLATER 0x10040

static void fail(const char *what)
{
	printf("KVM-PROBE-FAIL: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void failx(const char *what)
{
	printf("KVM-PROBE-FAIL: %s\n", what);
	exit(1);
}

static int cap(int fd, long c)
{
	int r = ioctl(fd, KVM_CHECK_EXTENSION, c);

	return r < 0 ? 0 : r;
}

static void dev_attr(int dev, uint32_t group, uint64_t attr, void *val, const char *what)
{
	struct kvm_device_attr a = {
		.group = group,
		.attr = attr,
		.addr = (uint64_t)(uintptr_t)val,
	};

	if (ioctl(dev, KVM_SET_DEVICE_ATTR, &a) < 0)
		fail(what);
}

static int create_device(int vm, uint32_t type, const char *what)
{
	struct kvm_create_device d = { .type = type };

	if (ioctl(vm, KVM_CREATE_DEVICE, &d) < 0)
		fail(what);
	return (int)d.fd;
}

static void set_pc(int vcpu, uint64_t pc)
{
	struct kvm_one_reg r = {
		.id = KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_CORE |
		      (offsetof(struct kvm_regs, regs.pc) / sizeof(uint32_t)),
		.addr = (uint64_t)(uintptr_t)&pc,
	};

	if (ioctl(vcpu, KVM_SET_ONE_REG, &r) < 0)
		fail("KVM_SET_ONE_REG pc");
}

static const char *exit_name(uint32_t r)
{
	switch (r) {
	case KVM_EXIT_MMIO: return "MMIO";
	case KVM_EXIT_SYSTEM_EVENT: return "SYSTEM_EVENT";
	case KVM_EXIT_FAIL_ENTRY: return "FAIL_ENTRY";
	case KVM_EXIT_INTERNAL_ERROR: return "INTERNAL_ERROR";
	case KVM_EXIT_INTR: return "INTR";
	default: return "other";
	}
}

int main(void)
{
	/* mov x0,#0x42; mov x1,#0x10000000; str x0,[x1];
	 * mov w0,#8; movk w0,#0x8400,lsl #16 (PSCI SYSTEM_OFF); hvc #0; b . */
	static const uint32_t code[] = {
		0xd2800840, 0xd2a20001, 0xf9000020, 0x52800100, 0x72b08000, 0xd4000002, 0x14000000,
	};
	struct kvm_vcpu_init init;
	struct kvm_run *run;
	int kvm, vm, gic, its, vcpu, ipa, efd, ioefd;
	long mmap_size;
	uint64_t addr;
	uint32_t nr_irqs = 128;
	void *ram;

	setvbuf(stdout, NULL, _IOLBF, 0);
	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		fail("open /dev/kvm");
	errno = 0;
	if (ioctl(kvm, KVM_GET_API_VERSION, 0) != KVM_API_VERSION)
		fail("KVM_GET_API_VERSION is not 12");
	ipa = cap(kvm, KVM_CAP_ARM_VM_IPA_SIZE);
	printf("KVM-PROBE api=%d ipa_bits=%d nr_vcpus=%d max_vcpus=%d nr_memslots=%d\n", KVM_API_VERSION,
	       ipa, cap(kvm, KVM_CAP_NR_VCPUS), cap(kvm, KVM_CAP_MAX_VCPUS), cap(kvm, KVM_CAP_NR_MEMSLOTS));
	printf("KVM-PROBE caps psci_0_2=%d irqfd=%d ioeventfd=%d irq_routing=%d signal_msi=%d "
	       "one_reg=%d pmu_v3=%d sve=%d ptrauth=%d\n",
	       cap(kvm, KVM_CAP_ARM_PSCI_0_2), cap(kvm, KVM_CAP_IRQFD), cap(kvm, KVM_CAP_IOEVENTFD),
	       cap(kvm, KVM_CAP_IRQ_ROUTING), cap(kvm, KVM_CAP_SIGNAL_MSI), cap(kvm, KVM_CAP_ONE_REG),
	       cap(kvm, KVM_CAP_ARM_PMU_V3), cap(kvm, KVM_CAP_ARM_SVE),
	       cap(kvm, KVM_CAP_ARM_PTRAUTH_ADDRESS) && cap(kvm, KVM_CAP_ARM_PTRAUTH_GENERIC));
	if (!cap(kvm, KVM_CAP_ARM_PSCI_0_2) || !cap(kvm, KVM_CAP_IRQFD) || !cap(kvm, KVM_CAP_IOEVENTFD) ||
	    !cap(kvm, KVM_CAP_IRQ_ROUTING))
		failx("a capability the arm64 machine needs is missing (psci_0_2, irqfd, ioeventfd, irq_routing)");

	vm = ioctl(kvm, KVM_CREATE_VM, ipa > 0 ? KVM_VM_TYPE_ARM_IPA_SIZE(ipa) : 0);
	if (vm < 0)
		fail("KVM_CREATE_VM");

	/* The vGIC v3 comes before any vCPU, and its ITS. */
	gic = create_device(vm, KVM_DEV_TYPE_ARM_VGIC_V3, "KVM_CREATE_DEVICE vgic-v3");
	addr = GIC_DIST;
	dev_attr(gic, KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_V3_ADDR_TYPE_DIST, &addr, "vgic-v3 distributor address");
	addr = GIC_REDIST;
	dev_attr(gic, KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_V3_ADDR_TYPE_REDIST, &addr,
		 "vgic-v3 redistributor address");
	its = create_device(vm, KVM_DEV_TYPE_ARM_VGIC_ITS, "KVM_CREATE_DEVICE vgic-its");
	addr = GIC_ITS;
	dev_attr(its, KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_ITS_ADDR_TYPE, &addr, "vgic-its address");
	printf("KVM-PROBE vgic_v3=ok its=ok msi_devid=%d\n", cap(vm, KVM_CAP_MSI_DEVID));

	vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	if (vcpu < 0)
		fail("KVM_CREATE_VCPU");
	memset(&init, 0, sizeof(init));
	if (ioctl(vm, KVM_ARM_PREFERRED_TARGET, &init) < 0)
		fail("KVM_ARM_PREFERRED_TARGET");
	init.features[0] |= 1u << KVM_ARM_VCPU_PSCI_0_2;
	if (ioctl(vcpu, KVM_ARM_VCPU_INIT, &init) < 0)
		fail("KVM_ARM_VCPU_INIT (PSCI 0.2)");
	printf("KVM-PROBE vcpu target=%u psci_0_2=on\n", init.target);

	dev_attr(gic, KVM_DEV_ARM_VGIC_GRP_NR_IRQS, 0, &nr_irqs, "vgic-v3 NR_IRQS");
	dev_attr(gic, KVM_DEV_ARM_VGIC_GRP_CTRL, KVM_DEV_ARM_VGIC_CTRL_INIT, NULL, "vgic-v3 CTRL_INIT");
	dev_attr(its, KVM_DEV_ARM_VGIC_GRP_CTRL, KVM_DEV_ARM_VGIC_CTRL_INIT, NULL, "vgic-its CTRL_INIT");

	/* An MSI route carrying a PCI requester ID (00:01.0) as device ID,
	 * with an irqfd on it, and an ioeventfd: the virtio-pci wiring. */
	{
		struct {
			struct kvm_irq_routing hdr;
			struct kvm_irq_routing_entry e[1];
		} rt;

		memset(&rt, 0, sizeof(rt));
		rt.hdr.nr = 1;
		rt.e[0].gsi = 0;
		rt.e[0].type = KVM_IRQ_ROUTING_MSI;
		rt.e[0].flags = cap(vm, KVM_CAP_MSI_DEVID) ? KVM_MSI_VALID_DEVID : 0;
		rt.e[0].u.msi.address_lo = (uint32_t)(GIC_ITS + GITS_TRANSLATER);
		rt.e[0].u.msi.address_hi = (uint32_t)((GIC_ITS + GITS_TRANSLATER) >> 32);
		rt.e[0].u.msi.data = 0;
		rt.e[0].u.msi.devid = 0x8;
		if (ioctl(vm, KVM_SET_GSI_ROUTING, &rt) < 0)
			fail("KVM_SET_GSI_ROUTING (MSI with device ID)");
	}
	efd = eventfd(0, EFD_CLOEXEC);
	ioefd = eventfd(0, EFD_CLOEXEC);
	if (efd < 0 || ioefd < 0)
		fail("eventfd");
	{
		struct kvm_irqfd irqfd = { .fd = (uint32_t)efd, .gsi = 0 };
		struct kvm_ioeventfd ioe = { .addr = IOEVENT_ADDR, .len = 4, .fd = ioefd };

		if (ioctl(vm, KVM_IRQFD, &irqfd) < 0)
			fail("KVM_IRQFD on the MSI route");
		if (ioctl(vm, KVM_IOEVENTFD, &ioe) < 0)
			fail("KVM_IOEVENTFD");
	}
	printf("KVM-PROBE msi_route=ok irqfd=ok ioeventfd=ok\n");

	/* A tiny guest: RAM at 0x40000000, MMU off, PC at its start. */
	ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ram == MAP_FAILED)
		fail("mmap guest RAM");
	memcpy(ram, code, sizeof(code));
	{
		struct kvm_userspace_memory_region mr = {
			.slot = 0,
			.guest_phys_addr = RAM_BASE,
			.memory_size = RAM_SIZE,
			.userspace_addr = (uint64_t)(uintptr_t)ram,
		};

		if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &mr) < 0)
			fail("KVM_SET_USER_MEMORY_REGION");
	}
	set_pc(vcpu, RAM_BASE);
	mmap_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (mmap_size < (long)sizeof(*run))
		fail("KVM_GET_VCPU_MMAP_SIZE");
	run = mmap(NULL, (size_t)mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED)
		fail("mmap kvm_run");

	if (ioctl(vcpu, KVM_RUN, 0) < 0)
		fail("KVM_RUN (1)");
	if (run->exit_reason != KVM_EXIT_MMIO || !run->mmio.is_write || run->mmio.phys_addr != MMIO_PROBE ||
	    run->mmio.len != 8 || run->mmio.data[0] != 0x42) {
		printf("KVM-PROBE-FAIL: first exit %u (%s), expected an 8-byte MMIO write of 0x42 at 0x%llx\n",
		       run->exit_reason, exit_name(run->exit_reason), MMIO_PROBE);
		return 1;
	}
	printf("KVM-PROBE guest mmio_write=0x%llx len=%u data=0x%x\n", (unsigned long long)run->mmio.phys_addr,
	       run->mmio.len, run->mmio.data[0]);
	if (ioctl(vcpu, KVM_RUN, 0) < 0)
		fail("KVM_RUN (2)");
	if (run->exit_reason != KVM_EXIT_SYSTEM_EVENT || run->system_event.type != KVM_SYSTEM_EVENT_SHUTDOWN) {
		printf("KVM-PROBE-FAIL: second exit %u (%s), expected SYSTEM_EVENT SHUTDOWN (PSCI SYSTEM_OFF)\n",
		       run->exit_reason, exit_name(run->exit_reason));
		return 1;
	}
	printf("KVM-PROBE guest psci_system_off=ok\n");
	printf("KVM-PROBE-OK\n");
	return 0;
}
