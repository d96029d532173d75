/* SPDX-License-Identifier: MIT */
/*
 * The arm64 machine's device tree, built with libfdt: what Linux learns of
 * the machine on arm64 (no ACPI here) -- memory, the vCPUs (MPIDRs, PSCI enable
 * method), PSCI 0.2+ over HVC, a GICv3 with its ITS, the architected
 * timer, an ns16550a UART, a generic ECAM PCI host bridge whose MSIs go to
 * the ITS (msi-map: requester ID = ITS device ID), and /chosen (command
 * line, initrd, stdout-path), and a PL061 GPIO controller with a gpio-keys
 * power key.
 *
 * Pure data: no KVM, no guest memory; the machine writes the blob into RAM
 * and hands its address to the kernel in x0 (Documentation/arm64/booting).
 */
#ifndef VMM_ARM64_FDT_H
#define VMM_ARM64_FDT_H

#include <stddef.h>
#include <stdint.h>

#include "util/compiler.h"

/* Documentation/arm64/booting.rst: the blob may not exceed 2 MiB. */
#define ARM64_FDT_MAX_SIZE (2u << 20)
/* MPIDR affinity levels 0-2 hold the vCPU index (KVM's default MPIDR:
 * Aff0 = index % 16, Aff1 = index / 16, ...): 4096 vCPUs would overflow
 * what the FDT's one-cell cpu reg can carry with Aff3 = 0.  KVM itself
 * stops far earlier (KVM_CAP_MAX_VCPUS; 512 on GICv3). */
#define ARM64_FDT_MAX_CPUS 4096u

/* Timer PPIs (the architected timer's interrupt numbers as a GIC PPI). */
#define ARM64_PPI_TIMER_SEC_PHYS 13
#define ARM64_PPI_TIMER_PHYS 14
#define ARM64_PPI_TIMER_VIRT 11
#define ARM64_PPI_TIMER_HYP 10

struct arm64_fdt_range {
	uint64_t base, size;
};

struct arm64_fdt_config {
	unsigned int nr_cpus;
	/* mpidr[i]: vCPU i's MPIDR_EL1 (KVM_GET_ONE_REG), affinity bits
	 * only; NULL: KVM's default numbering (arm64_fdt_default_mpidr()). */
	const uint64_t *mpidr;
	struct arm64_fdt_range ram;
	const char *cmdline; /* NULL: none */
	struct arm64_fdt_range initrd; /* size 0: none */
	/* GICv3: distributor, redistributors (128 KiB per vCPU), ITS. */
	struct arm64_fdt_range gicd, gicr, its;
	/* 8250/16550 UART: registers, SPI number (GIC INTID - 32), clock. */
	struct arm64_fdt_range uart;
	unsigned int uart_spi;
	uint32_t uart_clock_hz;
	/* Generic ECAM host bridge: config space for buses 0..last_bus,
	 * 32-bit non-prefetchable memory window (identity-mapped). */
	struct arm64_fdt_range ecam;
	unsigned int last_bus;
	struct arm64_fdt_range pci_mmio;
	/* PL061 GPIO controller (size 0: none) on SPI gpio_spi, with a
	 * gpio-keys power key (KEY_POWER) on its input line power_key_line,
	 * active high; its AMBA clock a fixed "apb_pclk". */
	struct arm64_fdt_range gpio;
	unsigned int gpio_spi;
	unsigned int power_key_line;
};

/* KVM's default MPIDR for vCPU @index (arch/arm64/kvm/sys_regs.c
 * reset_mpidr(): Aff0 = index & 0xf, Aff1 = (index >> 4) & 0xff,
 * Aff2 = (index >> 12) & 0xff). */
uint64_t arm64_fdt_default_mpidr(unsigned int index);

/*
 * arm64_fdt_write() - the device tree for @c into @buf (@size bytes, at
 * most ARM64_FDT_MAX_SIZE used).
 * Returns the blob's size (fdt_totalsize), or -EINVAL (a zero or
 * overlapping range, no vCPU, a power key line past 7, more than ARM64_FDT_MAX_CPUS, an MPIDR with
 * Aff3 set, two vCPUs with the same affinity bits, initrd outside RAM),
 * -ENOSPC (@size too small).
 */
long arm64_fdt_write(void *buf, size_t size, const struct arm64_fdt_config *c) __must_check;

#endif
