/* SPDX-License-Identifier: MIT */
/*
 * The x86 platform's in-kernel interrupt controllers as the GSI routing
 * table sees them (KVM_CREATE_IRQCHIP: a PIC pair and an IOAPIC), and how
 * an MSI address reaches KVM (irq.h's struct irq_platform).
 */
#ifndef VMM_X86_IRQCHIP_H
#define VMM_X86_IRQCHIP_H

#include <stdint.h>

#include "irq.h"

/* GSIs 0..23 are the PIC/IOAPIC pins; MSI routes use GSIs from here on. */
#define X86_IRQ_FIRST_MSI_GSI 24u
/* Routes of the PIC and IOAPIC pins: 24 IOAPIC pins, and the 16 PIC pins
 * on GSIs 0..15 too, always in the table. */
#define X86_IRQ_CHIP_ROUTES 40u

const struct irq_platform *x86_irq_platform(void);

#endif
