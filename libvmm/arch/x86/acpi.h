/* SPDX-License-Identifier: MIT */
/*
 * ACPI tables for an x86 guest: RSDP, XSDT, FACS, FADT, MADT and a small
 * DSDT (the PCI host bridge, COM1 and the S5 sleep state).
 *
 * The FADT is a full one, not hardware-reduced: it describes a PM1a event
 * and control block (devices/legacy/acpipm.h) and leaves the legacy PC
 * devices (PIT, PIC, i8042, RTC) to be probed the way Linux does with the
 * MP table.  SMI_CMD is 0, so the guest treats ACPI mode as always on.
 */
#ifndef VMM_X86_ACPI_H
#define VMM_X86_ACPI_H

#include <stddef.h>
#include <stdint.h>

/*
 * Where the tables go: [0xE0000, 0xF0000), the lower half of the BIOS area
 * that Linux and ACPICA scan for the RSDP (the MP table keeps 0xF0000).
 */
#define ACPI_TABLES_GPA 0xE0000u
#define ACPI_TABLES_ROOM 0x10000u
#define ACPI_MAX_CPUS 1024u
/* Value in the DSDT's \_S5_ package, written to PM1a_CNT.SLP_TYP. */
#define ACPI_SLP_TYP_S5 5

struct acpi_config {
	unsigned int nr_cpus;	/* 1..ACPI_MAX_CPUS; vCPU i has APIC ID i and ACPI processor UID i */
	uint16_t pm1a_evt_port;	/* PM1a event block: 4 bytes (PM1_STS at +0, PM1_EN at +2) */
	uint16_t pm1a_cnt_port;	/* PM1a control block: 2 bytes */
	uint8_t sci_irq;	/* ISA IRQ of the SCI (9) */
	uint16_t reset_port;	/* FADT RESET_REG (0xCF9) */
	uint8_t reset_value;	/* 6 */
	uint32_t ioapic_addr;	/* 0xFEC00000 */
	uint32_t lapic_addr;	/* 0xFEE00000 */
	uint64_t mmio32_base, mmio32_size;	/* PCI 32-bit MMIO window (BARs live there) */
	uint64_t mmio64_base, mmio64_size;	/* optional 64-bit window; size 0 = none */
	uint16_t com1_port;	/* 0x3F8 */
	uint8_t com1_irq;	/* 4 */
};

/**
 * acpi_size() - bytes acpi_write() needs for @cfg
 * @cfg: configuration (not range-checked; see acpi_write())
 *
 * Returns: the size of the tables with their alignment padding, or 0 if
 * @cfg is NULL (or on the -EOVERFLOW bug of acpi_write()).
 */
size_t acpi_size(const struct acpi_config *cfg);

/**
 * acpi_write() - write the ACPI tables described by @cfg
 * @dst: host view of the guest memory at @gpa
 * @room: bytes available at @dst
 * @gpa: guest-physical address of @dst (16-byte aligned); the tables must
 *       end below 4 GiB, since the FADT points at the FACS and DSDT with
 *       32-bit fields
 * @cfg: @nr_cpus in 1..ACPI_MAX_CPUS, ISA IRQs (@sci_irq, @com1_irq) below
 *       16, nonzero PM1a ports, a nonempty 32-bit MMIO window below 4 GiB,
 *       a 64-bit window (if any) that does not wrap
 *
 * The RSDP (revision 2, pointing at the XSDT) is at @gpa, so the guest's
 * RSDP address is @gpa itself; the other tables follow it, each 16-byte
 * aligned (the FACS 64-byte aligned).  Every checksum is filled in.
 *
 * Returns: bytes written (== acpi_size(@cfg)); -EINVAL for a NULL @dst or
 * @cfg, a @cfg out of range, a misaligned @gpa or tables that would cross
 * 4 GiB; -ENOSPC if @room is too small; -EOVERFLOW if the DSDT outgrew
 * its internal scratch buffer (a bug, which the unit test would catch).
 */
long acpi_write(void *dst, size_t room, uint32_t gpa,
		const struct acpi_config *cfg);

#endif
