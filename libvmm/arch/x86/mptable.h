/* SPDX-License-Identifier: MIT */
/*
 * Intel MultiProcessor Specification 1.4 tables: how a guest kernel without
 * ACPI (CONFIG_X86_MPPARSE) learns about its vCPUs, the IOAPIC and the ISA
 * interrupt routing.
 */
#ifndef VMM_X86_MPTABLE_H
#define VMM_X86_MPTABLE_H

#include <stddef.h>
#include <stdint.h>

/* Guest-physical address of the floating pointer: start of the BIOS area,
 * one of the places Linux scans (smp_scan_config(0xF0000, 0x10000)). */
#define MPTABLE_GPA 0xF0000
#define MPTABLE_MAX_CPUS 254	/* 8-bit APIC ids; 0xff is broadcast */

#define MPTABLE_LAPIC_ADDR 0xFEE00000u
#define MPTABLE_IOAPIC_ADDR 0xFEC00000u

/**
 * mptable_size() - bytes mptable_write() needs for @nr_cpus vCPUs
 * @nr_cpus: number of vCPUs (not range-checked; see mptable_write())
 *
 * Returns: the size of the floating pointer plus the configuration table.
 */
size_t mptable_size(unsigned int nr_cpus);

/**
 * mptable_write() - write MP tables for @nr_cpus vCPUs
 * @dst: host view of the guest memory at @gpa
 * @room: bytes available at @dst
 * @gpa: guest-physical address of @dst (16-byte aligned, below 4 GiB)
 * @nr_cpus: 1..MPTABLE_MAX_CPUS; vCPU i gets APIC id i, the IOAPIC gets
 *           id @nr_cpus
 *
 * The floating pointer is at @gpa and the configuration table right after
 * it.  Both checksums are filled in; there is no extended table.
 *
 * Returns: bytes written (== mptable_size(@nr_cpus)); -EINVAL if @dst is
 * NULL, @nr_cpus is out of range or @gpa is misaligned; -ENOSPC if @room is
 * too small.
 */
long mptable_write(void *dst, size_t room, uint32_t gpa, unsigned int nr_cpus);

#endif
