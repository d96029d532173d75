/* SPDX-License-Identifier: MIT */
/*
 * The arm64 platform's interrupt controller: KVM's in-kernel GICv3
 * (KVM_DEV_TYPE_ARM_VGIC_V3: distributor + one redistributor per vCPU)
 * and its ITS (KVM_DEV_TYPE_ARM_VGIC_ITS), through which every PCI MSI-X
 * vector is an LPI.  The ITS translates (device ID, event ID) pairs, so
 * KVM wants the requester ID of each MSI: KVM_MSI_VALID_DEVID on routes and
 * on KVM_SIGNAL_MSI (arm64_irq_platform()).  An SPI (the UART's) is raised
 * with KVM_IRQ_LINE, which needs no route.
 *
 * Two steps, because KVM wants the GIC before the vCPUs and its
 * initialisation after them: arm64_gic_create() (devices and their
 * addresses) before the first KVM_CREATE_VCPU, arm64_gic_init() once all
 * vCPUs exist and before any runs.
 */
#ifndef VMM_ARM64_GIC_H
#define VMM_ARM64_GIC_H

#include <stdint.h>

#include "irq.h"
#include "util/compiler.h"

/* KVM_VGIC_V3_DIST_SIZE, KVM_VGIC_V3_REDIST_SIZE (two 64 KiB frames per
 * vCPU), KVM_VGIC_V3_ITS_SIZE (uapi asm/kvm.h; spelled out so that the
 * x86 build's tests can include this header). */
#define ARM64_GICD_SIZE 0x10000ull
#define ARM64_GICR_SIZE_PER_CPU 0x20000ull
#define ARM64_GITS_SIZE 0x20000ull
/* Interrupt IDs the distributor implements: 32 private (SGI, PPI) plus the
 * SPIs, a multiple of 32 (KVM_DEV_ARM_VGIC_GRP_NR_IRQS). */
#define ARM64_GIC_NR_IRQS 128u
#define ARM64_GIC_SPI_BASE 32u

struct arm64_gic {
	int gic_fd; /* the vGIC v3 device, -1 when none */
	int its_fd; /* its ITS, -1 when none */
};

/*
 * arm64_gic_create() - the vGIC v3 (distributor at @gicd, redistributors
 * from @gicr, ARM64_GICR_SIZE_PER_CPU each) and its ITS at @its, on VM
 * @vm_fd, before any vCPU exists.  Returns 0, -ENOTSUP (no GICv3 or no
 * ITS on this host), or -EIO (logged); on failure nothing is left open.
 */
int arm64_gic_create(int vm_fd, uint64_t gicd, uint64_t gicr, uint64_t its,
		     struct arm64_gic *g) __must_check;

/*
 * arm64_gic_init() - ARM64_GIC_NR_IRQS interrupt IDs, then
 * KVM_DEV_ARM_VGIC_CTRL_INIT on the GIC and on the ITS: after every vCPU
 * was created (KVM sizes the redistributors by them), before any runs.
 * Returns 0 or -EIO (logged).
 */
int arm64_gic_init(struct arm64_gic *g) __must_check;

/* Raise/lower SPI @spi (0-based: INTID ARM64_GIC_SPI_BASE + @spi) on VM
 * @vm_fd.  Returns 0 or -errno. */
int arm64_gic_set_spi(int vm_fd, unsigned int spi, int level);

/* Close the devices (KVM keeps them for the VM's life).  NULL-safe. */
void arm64_gic_destroy(struct arm64_gic *g);

/* The GIC as the GSI routing table sees it: no chip routes, MSIs with
 * device IDs. */
const struct irq_platform *arm64_irq_platform(void);

#endif
