/* SPDX-License-Identifier: MIT */
/*
 * Direct boot of a Linux bzImage through the 64-bit boot protocol
 * (Documentation/arch/x86/boot.rst, "64-bit Boot Protocol"), without
 * firmware: the VMM writes the zero page, page tables, GDT, MP table,
 * command line, kernel and initrd, then starts the BSP in long mode at
 * startup_64.  Or of an uncompressed vmlinux through PVH (x86/pvh.h): the
 * same layout with hvm_start_info in place of the zero page, no page
 * tables, and the BSP in 32-bit protected mode at the PVH entry.
 *
 * Guest-physical layout (low memory):
 *   0x00500  GDT
 *   0x07000  boot_params ("zero page"), or PVH: hvm_start_info, then the
 *            module list (+0x40) and the memory map (+0x80)
 *   0x08ff0  initial stack pointer (grows down towards 0x8000)
 *   0x09000  PML4, 0x0a000 PDPT, 0x0b000..0x0efff four PDs (4 GiB, 2 MiB pages)
 *   0x20000  command line
 *   0xe0000  ACPI tables, written by the caller (x86/acpi.h)
 *   0xf0000  MP tables (MPTABLE_GPA), for up to MPTABLE_MAX_CPUS vCPUs
 *   pref_address (usually 16 MiB)  kernel
 *   top of low RAM                 initrd
 */
#ifndef VMM_X86_BOOT_H
#define VMM_X86_BOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/kvm.h>

#include "memory.h"
#include "x86/bzimage.h"

#define X86_BOOT_GDT_GPA 0x500ull
#define X86_BOOT_ZERO_PAGE_GPA 0x7000ull
#define X86_BOOT_STACK_GPA 0x8ff0ull
#define X86_BOOT_PML4_GPA 0x9000ull
#define X86_BOOT_PDPT_GPA 0xa000ull
#define X86_BOOT_PD_GPA 0xb000ull	/* 4 pages */
#define X86_BOOT_CMDLINE_GPA 0x20000ull
#define X86_BOOT_MAX_VCPUS 32768u	/* x2APIC IDs with extended MSI ids */

/* GDT selectors, matching Linux's __BOOT_CS / __BOOT_DS. */
#define X86_BOOT_CS 0x10
#define X86_BOOT_DS 0x18
#define X86_BOOT_TSS 0x20	/* 16-byte system descriptor: entries 4 and 5 */
#define X86_BOOT_GDT_ENTRIES 6

/*
 * The files the @kernel and @initrd of struct x86_boot_config come from:
 * the kernel payload is kernel_fd's bytes from bz->setup_size on, the
 * initrd the first initrd_size bytes of initrd_fd.  With them the bulk is
 * copied into guest RAM by guest_mem_load_fd() (pread: a file that shrank
 * meanwhile is an error, not a fault) rather than with memcpy() from
 * in-memory images; the kernel may then be parsed from its head only
 * (bzimage_parse_head()) and x86_boot_config.initrd may be NULL.
 */
struct x86_boot_files {
	int kernel_fd;
	int initrd_fd;			/* -1 when there is no initrd */
};

struct pvh_kernel;

struct x86_boot_config {
	const struct bzimage *kernel;	/* a bzImage, or @pvh */
	const void *initrd;		/* may be NULL (always, with files) */
	size_t initrd_size;
	const char *cmdline;		/* may be NULL */
	unsigned int nr_vcpus;
	uint64_t acpi_rsdp;		/* RSDP written by the caller; 0: none */
	const struct pvh_kernel *pvh;	/* a vmlinux for PVH (files only) */
};

/* The BSP's entry state, computed by x86_boot_setup(). */
struct x86_boot_entry {
	bool pvh;		/* 32-bit PVH entry, else 64-bit */
	uint64_t rip;		/* kernel load address + 0x200 (startup_64),
				   or the PVH entry */
	uint64_t rsi;		/* boot_params gpa (64-bit) */
	uint64_t rbx;		/* hvm_start_info gpa (PVH) */
	uint64_t rsp;
	uint64_t cr3;		/* PML4 gpa */
	uint64_t gdt_base;
	uint16_t gdt_limit;
	uint64_t initrd_gpa;	/* 0 if none */
	uint64_t kernel_gpa;
};

/**
 * x86_boot_setup() - lay a Linux kernel into guest RAM
 * @mem: guest RAM (layout of memory.h); must be at least 1 MiB
 * @cfg: kernel (parsed with bzimage_parse()), optional initrd and command
 *       line, number of vCPUs (for the MP table), the RSDP address of ACPI
 *       tables already in guest RAM (boot_params.acpi_rsdp_addr)
 * @entry: filled with the BSP entry state on success
 *
 * Writes the GDT, zero page (setup header copied from the image, e820 map,
 * command line and initrd pointers), identity page tables for the first
 * 4 GiB, the MP table (up to MPTABLE_MAX_CPUS vCPUs), the kernel at its
 * preferred (aligned) address and
 * the initrd page-aligned at the top of low RAM.  Every write goes through
 * guest_mem_ptr().  On failure guest RAM may be partly written.
 *
 * Returns: 0; -EINVAL (after a vmm_err() message) if an argument is NULL,
 * the command line is longer than the kernel accepts, the kernel or initrd
 * does not fit in guest RAM, or @cfg->nr_vcpus is 0, above
 * X86_BOOT_MAX_VCPUS, or above MPTABLE_MAX_CPUS without ACPI tables.
 */
int x86_boot_setup(struct guest_mem *mem, const struct x86_boot_config *cfg,
		   struct x86_boot_entry *entry);

/**
 * x86_boot_setup_files() - x86_boot_setup(), copying the kernel payload and
 * the initrd from @files (the files @cfg's images were read from) with
 * guest_mem_load_fd() instead of from memory; @files NULL: the same as
 * x86_boot_setup().  Also returns -EIO or -errno (after a message) when
 * reading a file fails or it ends before its image does.
 *
 * With @cfg->pvh (and @files) instead of @cfg->kernel: PVH boot of a
 * vmlinux (x86/pvh.h): its load segments at their addresses (the part
 * beyond a segment's file size zeroed), the initrd page-aligned at the top
 * of low RAM below 4 GiB, hvm_start_info (command line of at most 2047
 * bytes, the initrd as module 0, the e820 map, the RSDP), a flat 32-bit
 * GDT, the MP table; the entry state is for x86_boot_regs().  -EINVAL
 * (after a message) if a segment or the initrd does not fit in low RAM.
 */
int x86_boot_setup_files(struct guest_mem *mem,
			 const struct x86_boot_config *cfg,
			 const struct x86_boot_files *files,
			 struct x86_boot_entry *entry);

/**
 * x86_boot_regs() - BSP registers for the 64-bit (or PVH) entry
 * @e: entry state from x86_boot_setup()
 * @regs: overwritten: rip, rsi, rsp/rbp, rflags = 2, everything else 0;
 *        PVH: rip, rbx, rflags = 2, everything else 0
 * @sregs: as read with KVM_GET_SREGS; updated for long mode (CR0/CR3/CR4,
 *         EFER, flat CS/DS/ES/FS/GS/SS, busy 64-bit TSS, GDT, empty IDT)
 *         -- PVH: flat 32-bit protected mode, paging off (CR0 = PE|ET|NE,
 *         CR3 = CR4 = EFER = 0, busy 32-bit TSS) -- and meant for
 *         KVM_SET_SREGS.  APIC base and the interrupt bitmap are left as
 *         they are.
 *
 * Pure function: no KVM calls.
 */
void x86_boot_regs(const struct x86_boot_entry *e, struct kvm_regs *regs,
		   struct kvm_sregs *sregs);

#endif
