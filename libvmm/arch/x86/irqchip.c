/* SPDX-License-Identifier: MIT */
/* The x86 platform's irqchip routes and MSI addresses (see irqchip.h). */
#include <linux/kvm.h>

#include "x86/irqchip.h"

/* KVM's default_routing[] (virt/kvm/irqchip.c): what KVM_CREATE_IRQCHIP
 * installs and KVM_SET_GSI_ROUTING would drop if we left it out. */
#define IOAPIC(p)                                                 \
	{ .gsi = (p), .type = KVM_IRQ_ROUTING_IRQCHIP,             \
	  .u.irqchip = { .irqchip = KVM_IRQCHIP_IOAPIC, .pin = (p) } }
#define PIC(p)                                                    \
	{ .gsi = (p), .type = KVM_IRQ_ROUTING_IRQCHIP,             \
	  .u.irqchip = { .irqchip = (p) < 8 ? KVM_IRQCHIP_PIC_MASTER \
					    : KVM_IRQCHIP_PIC_SLAVE, \
			 .pin = (p) % 8 } }
#define BOTH(p) IOAPIC(p), PIC(p)

static const struct kvm_irq_routing_entry chip_routes[] = {
	BOTH(0), BOTH(1), BOTH(2), BOTH(3), BOTH(4), BOTH(5), BOTH(6),
	BOTH(7), BOTH(8), BOTH(9), BOTH(10), BOTH(11), BOTH(12), BOTH(13),
	BOTH(14), BOTH(15), IOAPIC(16), IOAPIC(17), IOAPIC(18), IOAPIC(19),
	IOAPIC(20), IOAPIC(21), IOAPIC(22), IOAPIC(23),
};
_Static_assert(sizeof(chip_routes) / sizeof(chip_routes[0]) == X86_IRQ_CHIP_ROUTES,
	       "24 IOAPIC pins + 16 PIC pins");

/*
 * A guest told KVM_FEATURE_MSI_EXT_DEST_ID (cpuid.h) puts bits 8-14 of the
 * destination APIC ID in address bits 11:5, which real hardware reserves
 * ("extended destination ID").  KVM reads them from address_hi bits 14:8
 * instead (its x2APIC format, KVM_CAP_X2APIC_API), and would otherwise
 * send vCPU 300's completion to APIC ID 300 & 0xff.  Addresses without those bits (every destination below 256)
 * are unchanged.
 */
static void x86_msi_address(uint64_t addr, uint32_t *lo, uint32_t *hi)
{
	uint32_t ext = ((uint32_t)addr >> 5) & 0x7f;

	*lo = (uint32_t)addr;
	*hi = (uint32_t)(addr >> 32);
	if (ext && *hi == 0 && (*lo & 0xfff00000u) == 0xfee00000u) {
		*lo &= ~(0x7fu << 5);
		*hi = ext << 8;
	}
}

static const struct irq_platform x86_irq = {
	.chip_routes = chip_routes,
	.nr_chip_routes = X86_IRQ_CHIP_ROUTES,
	.first_msi_gsi = X86_IRQ_FIRST_MSI_GSI,
	.msi_address = x86_msi_address,
};

const struct irq_platform *x86_irq_platform(void)
{
	return &x86_irq;
}
