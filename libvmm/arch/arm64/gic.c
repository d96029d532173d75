/* SPDX-License-Identifier: MIT */
/* The in-kernel GICv3 and ITS (see gic.h). */
#include <errno.h>
#include <linux/kvm.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "arm64/gic.h"
#include "log.h"

static int dev_create(int vm_fd, uint32_t type, const char *what, int *fd)
{
	struct kvm_create_device cd = { .type = type };

	if (ioctl(vm_fd, KVM_CREATE_DEVICE, &cd) < 0) {
		int ret = -errno;

		vmm_err("KVM_CREATE_DEVICE %s: %s", what, strerror(errno));
		/* ENODEV: this host's KVM has no such device model (a GICv2
		 * host, or no ITS support). */
		return ret == -ENODEV ? -ENOTSUP : -EIO;
	}
	*fd = (int)cd.fd;
	return 0;
}

static int dev_attr(int fd, uint32_t group, uint64_t attr, void *val,
		    const char *what)
{
	struct kvm_device_attr a = {
		.group = group,
		.attr = attr,
		.addr = (uint64_t)(uintptr_t)val,
	};

	if (ioctl(fd, KVM_SET_DEVICE_ATTR, &a) < 0) {
		vmm_err("vGIC: %s: %s", what, strerror(errno));
		return -EIO;
	}
	return 0;
}

int arm64_gic_create(int vm_fd, uint64_t gicd, uint64_t gicr, uint64_t its,
		     struct arm64_gic *g)
{
	int ret;

	g->gic_fd = g->its_fd = -1;
	ret = dev_create(vm_fd, KVM_DEV_TYPE_ARM_VGIC_V3, "GICv3", &g->gic_fd);
	if (ret)
		return ret;
	ret = dev_attr(g->gic_fd, KVM_DEV_ARM_VGIC_GRP_ADDR,
		       KVM_VGIC_V3_ADDR_TYPE_DIST, &gicd, "distributor address");
	if (!ret)
		ret = dev_attr(g->gic_fd, KVM_DEV_ARM_VGIC_GRP_ADDR,
			       KVM_VGIC_V3_ADDR_TYPE_REDIST, &gicr,
			       "redistributor address");
	if (!ret)
		ret = dev_create(vm_fd, KVM_DEV_TYPE_ARM_VGIC_ITS, "GICv3 ITS",
				 &g->its_fd);
	if (!ret)
		ret = dev_attr(g->its_fd, KVM_DEV_ARM_VGIC_GRP_ADDR,
			       KVM_VGIC_ITS_ADDR_TYPE, &its, "ITS address");
	if (ret)
		arm64_gic_destroy(g);
	return ret;
}

int arm64_gic_init(struct arm64_gic *g)
{
	uint32_t nr_irqs = ARM64_GIC_NR_IRQS;
	int ret;

	ret = dev_attr(g->gic_fd, KVM_DEV_ARM_VGIC_GRP_NR_IRQS, 0, &nr_irqs,
		       "number of interrupts");
	if (!ret)
		ret = dev_attr(g->gic_fd, KVM_DEV_ARM_VGIC_GRP_CTRL,
			       KVM_DEV_ARM_VGIC_CTRL_INIT, NULL, "GIC init");
	/* The ITS after the GIC: its init checks the distributor's. */
	if (!ret)
		ret = dev_attr(g->its_fd, KVM_DEV_ARM_VGIC_GRP_CTRL,
			       KVM_DEV_ARM_VGIC_CTRL_INIT, NULL, "ITS init");
	return ret;
}

int arm64_gic_set_spi(int vm_fd, unsigned int spi, int level)
{
	/* KVM_IRQ_LINE on arm64: type in bits 24-27, the INTID in 0-15
	 * (Documentation/virt/kvm/api.rst). */
	struct kvm_irq_level irq = {
		.irq = (KVM_ARM_IRQ_TYPE_SPI << KVM_ARM_IRQ_TYPE_SHIFT) |
		       (ARM64_GIC_SPI_BASE + spi),
		.level = (uint32_t)level,
	};

	return ioctl(vm_fd, KVM_IRQ_LINE, &irq) < 0 ? -errno : 0;
}

void arm64_gic_destroy(struct arm64_gic *g)
{
	if (!g)
		return;
	if (g->its_fd >= 0)
		close(g->its_fd);
	if (g->gic_fd >= 0)
		close(g->gic_fd);
	g->gic_fd = g->its_fd = -1;
}

const struct irq_platform *arm64_irq_platform(void)
{
	static const struct irq_platform plat = {
		.chip_routes = NULL,
		.nr_chip_routes = 0,
		.first_msi_gsi = 0,
		.msi_address = NULL,
		.msi_devid = true,
	};

	return &plat;
}
