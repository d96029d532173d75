/* SPDX-License-Identifier: MIT */
/* x86_boot_setup() / x86_boot_regs() over malloc'd guest RAM. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <asm/bootparam.h>

#include "memory.h"
#include "x86/boot.h"
#include "x86/e820.h"
#include "x86/mptable.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define RAM_SIZE (64 * MiB)
#define PAYLOAD (256 * 1024)
#define INIT_SIZE (8 * MiB)
#define KERNEL_GPA 0x1000000ull

#define HDR(f) (0x1f1 + offsetof(struct setup_header, f))

struct fixture {
	uint8_t *image;
	size_t image_len;
	struct bzimage bz;
	uint8_t *ram;
	uint64_t ram_size;
	bool mapped;
	struct guest_mem mem;
};

static void put16(uint8_t *p, size_t off, uint16_t v)
{
	p[off] = (uint8_t)v;
	p[off + 1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, size_t off, uint32_t v)
{
	put16(p, off, (uint16_t)v);
	put16(p, off + 2, (uint16_t)(v >> 16));
}

static void put64(uint8_t *p, size_t off, uint64_t v)
{
	put32(p, off, (uint32_t)v);
	put32(p, off + 4, (uint32_t)(v >> 32));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* A synthetic bzImage; @tweak may edit the header before parsing. */
static void fx_image(struct fixture *fx, void (*tweak)(uint8_t *))
{
	size_t setup = 5 * 512;
	uint8_t *p = calloc(1, setup + PAYLOAD);
	const char *why = NULL;

	ck_assert_ptr_nonnull(p);
	p[HDR(setup_sects)] = 4;
	put32(p, HDR(syssize), PAYLOAD / 16);
	put16(p, HDR(boot_flag), 0xAA55);
	p[0x200] = 0xeb;
	p[0x201] = 0x6a;
	memcpy(p + 0x202, "HdrS", 4);
	put16(p, HDR(version), 0x020f);
	p[HDR(loadflags)] = LOADED_HIGH;
	put16(p, HDR(vid_mode), 0xffff);
	put32(p, HDR(initrd_addr_max), 0x7fffffff);
	put32(p, HDR(kernel_alignment), 0x200000);
	p[HDR(relocatable_kernel)] = 1;
	put16(p, HDR(xloadflags), XLF_KERNEL_64 | XLF_CAN_BE_LOADED_ABOVE_4G);
	put32(p, HDR(cmdline_size), 2047);
	put64(p, HDR(pref_address), KERNEL_GPA);
	put32(p, HDR(init_size), INIT_SIZE);
	for (size_t i = 0; i < PAYLOAD; i++)
		p[setup + i] = (uint8_t)(i * 13 + 1);
	if (tweak)
		tweak(p);
	fx->image = p;
	fx->image_len = setup + PAYLOAD;
	ck_assert_msg(bzimage_parse(p, fx->image_len, &fx->bz, &why) == 0, "%s", why);
}

/* Returns false (test skipped) only if a large mapping is refused. */
static bool fx_ram(struct fixture *fx, uint64_t size)
{
	fx->ram_size = size;
	if (size > 256 * MiB) {
		/* Only the pages written are ever touched. */
		void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (p == MAP_FAILED)
			return false;
		fx->ram = p;
		fx->mapped = true;
	} else {
		fx->ram = calloc(1, size);
	}
	ck_assert_ptr_nonnull(fx->ram);
	guest_mem_init_buf(&fx->mem, fx->ram, size);
	return true;
}

static void fx_free(struct fixture *fx)
{
	if (fx->mapped)
		munmap(fx->ram, fx->ram_size);
	else
		free(fx->ram);
	free(fx->image);
}

static const struct boot_params *zero_page(struct fixture *fx)
{
	return guest_mem_ptr(&fx->mem, X86_BOOT_ZERO_PAGE_GPA,
			     sizeof(struct boot_params));
}

/* Walk the guest page tables like the MMU (4-level, 2 MiB leaves). */
static uint64_t translate(struct fixture *fx, uint64_t va)
{
	uint64_t pml4e, pdpte, pde;

	pml4e = get64(fx->ram + X86_BOOT_PML4_GPA + ((va >> 39) & 511) * 8);
	ck_assert(pml4e & 1);
	pdpte = get64(fx->ram + (pml4e & ~0xfffull) + ((va >> 30) & 511) * 8);
	ck_assert(pdpte & 1);
	ck_assert(!(pdpte & 0x80));
	pde = get64(fx->ram + (pdpte & ~0xfffull) + ((va >> 21) & 511) * 8);
	ck_assert(pde & 1);
	ck_assert(pde & 2);
	ck_assert(pde & 0x80);
	return (pde & ~(2 * MiB - 1) & ((1ull << 52) - 1)) | (va & (2 * MiB - 1));
}

START_TEST(test_layout)
{
	struct fixture fx = { 0 };
	struct x86_boot_entry e;
	const char *cmdline = "console=ttyS0 root=/dev/vda rw";
	size_t initrd_size = MiB + 123;
	uint8_t *initrd = malloc(initrd_size);
	struct x86_boot_config cfg;
	const struct boot_params *bp;
	struct boot_e820_entry want[8];
	const uint8_t *p;
	int n;

	ck_assert_ptr_nonnull(initrd);
	for (size_t i = 0; i < initrd_size; i++)
		initrd[i] = (uint8_t)(i * 31 + 7);
	fx_image(&fx, NULL);
	fx_ram(&fx, RAM_SIZE);
	cfg = (struct x86_boot_config){ &fx.bz, initrd, initrd_size, cmdline, 4, 0, NULL };
	ck_assert_int_eq(x86_boot_setup(&fx.mem, &cfg, &e), 0);

	/* Kernel */
	ck_assert_uint_eq(e.kernel_gpa, KERNEL_GPA);
	ck_assert_uint_eq(e.rip, KERNEL_GPA + 0x200);
	ck_assert_mem_eq(fx.ram + KERNEL_GPA, fx.image + 5 * 512, PAYLOAD);
	ck_assert_uint_eq(e.rsi, X86_BOOT_ZERO_PAGE_GPA);
	ck_assert_uint_eq(e.cr3, X86_BOOT_PML4_GPA);
	ck_assert_uint_eq(e.rsp, X86_BOOT_STACK_GPA);
	ck_assert_uint_eq(e.gdt_base, X86_BOOT_GDT_GPA);
	ck_assert_uint_eq(e.gdt_limit, X86_BOOT_GDT_ENTRIES * 8 - 1);

	/* Zero page */
	bp = zero_page(&fx);
	ck_assert_ptr_nonnull(bp);
	ck_assert_uint_eq(bp->hdr.header, 0x53726448);	/* "HdrS" */
	ck_assert_uint_eq(bp->hdr.boot_flag, 0xAA55);
	ck_assert_uint_eq(bp->hdr.version, 0x020f);
	ck_assert_uint_eq(bp->hdr.type_of_loader, 0xff);
	ck_assert(bp->hdr.loadflags & LOADED_HIGH);
	ck_assert_uint_eq(bp->hdr.vid_mode, 0xffff);
	ck_assert_uint_eq(bp->hdr.init_size, INIT_SIZE);
	ck_assert_uint_eq(bp->hdr.xloadflags & XLF_KERNEL_64, XLF_KERNEL_64);
	ck_assert_uint_eq(bp->hdr.cmd_line_ptr, X86_BOOT_CMDLINE_GPA);
	ck_assert_uint_eq(bp->ext_cmd_line_ptr, 0);
	ck_assert_uint_eq(bp->acpi_rsdp_addr, 0);

	/* Command line */
	p = fx.ram + X86_BOOT_CMDLINE_GPA;
	ck_assert_str_eq((const char *)p, cmdline);
	ck_assert_uint_eq(p[strlen(cmdline)], 0);

	/* Initrd: page-aligned at the top of RAM, above the kernel. */
	ck_assert_uint_eq(bp->hdr.ramdisk_image, e.initrd_gpa);
	ck_assert_uint_eq(bp->hdr.ramdisk_size, initrd_size);
	ck_assert_uint_eq(e.initrd_gpa % 4096, 0);
	ck_assert_uint_le(e.initrd_gpa + initrd_size, RAM_SIZE);
	ck_assert_uint_lt(RAM_SIZE - (e.initrd_gpa + initrd_size), 4096);
	ck_assert_uint_ge(e.initrd_gpa, KERNEL_GPA + INIT_SIZE);
	ck_assert_mem_eq(fx.ram + e.initrd_gpa, initrd, initrd_size);

	/* e820 */
	n = e820_build(RAM_SIZE, want, 8);
	ck_assert_int_eq(bp->e820_entries, n);
	ck_assert_mem_eq(bp->e820_table, want, (size_t)n * sizeof(want[0]));

	/* Identity map of the first 4 GiB. */
	{
		static const uint64_t vas[] = {
			0, 0x7000, KERNEL_GPA + 0x1234, 0x3fffffff, 0x40000000,
			0x80000000 + 0x1fffff, 0xfee00000, 0xffffffff,
		};

		for (size_t i = 0; i < sizeof(vas) / sizeof(vas[0]); i++)
			ck_assert_uint_eq(translate(&fx, vas[i]), vas[i]);
	}

	/* GDT */
	p = fx.ram + X86_BOOT_GDT_GPA;
	ck_assert_uint_eq(get64(p), 0);
	ck_assert_uint_eq(get64(p + 8), 0);
	{
		uint64_t cs = get64(p + X86_BOOT_CS), ds = get64(p + X86_BOOT_DS);
		uint64_t tss = get64(p + X86_BOOT_TSS);

		ck_assert_uint_eq((cs >> 40) & 0xf, 0xb);	/* code, R, A */
		ck_assert(cs & (1ull << 44));			/* S */
		ck_assert(cs & (1ull << 47));			/* P */
		ck_assert(cs & (1ull << 53));			/* L */
		ck_assert(!(cs & (1ull << 54)));		/* D */
		ck_assert_uint_eq((ds >> 40) & 0xf, 0x3);	/* data, W, A */
		ck_assert(ds & (1ull << 47));
		ck_assert(ds & (1ull << 54));			/* B */
		ck_assert_uint_eq((tss >> 40) & 0xf, 0xb);	/* busy TSS */
		ck_assert(!(tss & (1ull << 44)));		/* system */
		ck_assert(tss & (1ull << 47));
		ck_assert_uint_eq(get64(p + X86_BOOT_TSS + 8), 0);
	}

	/* MP table */
	ck_assert_mem_eq(fx.ram + MPTABLE_GPA, "_MP_", 4);
	free(initrd);
	fx_free(&fx);
}
END_TEST

START_TEST(test_no_initrd_no_cmdline)
{
	struct fixture fx = { 0 };
	struct x86_boot_entry e;
	struct x86_boot_config cfg;
	const struct boot_params *bp;

	fx_image(&fx, NULL);
	fx_ram(&fx, RAM_SIZE);
	cfg = (struct x86_boot_config){ &fx.bz, NULL, 0, NULL, 1, 0, NULL };
	ck_assert_int_eq(x86_boot_setup(&fx.mem, &cfg, &e), 0);
	bp = zero_page(&fx);
	ck_assert_uint_eq(bp->hdr.ramdisk_image, 0);
	ck_assert_uint_eq(bp->hdr.ramdisk_size, 0);
	ck_assert_uint_eq(e.initrd_gpa, 0);
	ck_assert_uint_eq(fx.ram[X86_BOOT_CMDLINE_GPA], 0);
	ck_assert_uint_eq(bp->acpi_rsdp_addr, 0);
	fx_free(&fx);
}
END_TEST

/* With ACPI tables: boot_params points at the RSDP; beyond the MP table's
 * 254 vCPUs the MP table is left out (the ACPI MADT describes them). */
START_TEST(test_acpi_rsdp)
{
	static const unsigned int counts[] = { 254, 255, 1024 };

	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		struct fixture fx = { 0 };
		struct x86_boot_entry e;
		struct x86_boot_config cfg;

		fx_image(&fx, NULL);
		fx_ram(&fx, RAM_SIZE);
		cfg = (struct x86_boot_config){ &fx.bz, NULL, 0, NULL, counts[i],
						0xe0000, NULL };
		ck_assert_int_eq(x86_boot_setup(&fx.mem, &cfg, &e), 0);
		ck_assert_uint_eq(zero_page(&fx)->acpi_rsdp_addr, 0xe0000);
		ck_assert_int_eq(memcmp(fx.ram + MPTABLE_GPA, "_MP_", 4) == 0,
				 counts[i] <= 254);
		fx_free(&fx);
	}
}
END_TEST

static void unaligned_pref(uint8_t *p)
{
	put64(p, HDR(pref_address), KERNEL_GPA + 0x100000);
}

START_TEST(test_alignment)
{
	struct fixture fx = { 0 };
	struct x86_boot_entry e;
	struct x86_boot_config cfg;

	fx_image(&fx, unaligned_pref);
	fx_ram(&fx, RAM_SIZE);
	cfg = (struct x86_boot_config){ &fx.bz, NULL, 0, NULL, 1, 0, NULL };
	/* Relocatable: rounded up to kernel_alignment. */
	ck_assert_int_eq(x86_boot_setup(&fx.mem, &cfg, &e), 0);
	ck_assert_uint_eq(e.kernel_gpa, KERNEL_GPA + 0x200000);
	ck_assert_mem_eq(fx.ram + e.kernel_gpa, fx.bz.kernel, PAYLOAD);
	/* Not relocatable: exactly where the kernel asks. */
	fx.bz.relocatable = false;
	ck_assert_int_eq(x86_boot_setup(&fx.mem, &cfg, &e), 0);
	ck_assert_uint_eq(e.kernel_gpa, KERNEL_GPA + 0x100000);
	fx_free(&fx);
}
END_TEST

static void low_initrd_max(uint8_t *p)
{
	put32(p, HDR(initrd_addr_max), 0x2ffffff);
}

START_TEST(test_initrd_addr_max)
{
	struct fixture fx = { 0 };
	struct x86_boot_entry e;
	struct x86_boot_config cfg;
	static const uint8_t rd[5000] = { 1, 2, 3 };

	fx_image(&fx, low_initrd_max);
	fx_ram(&fx, RAM_SIZE);
	cfg = (struct x86_boot_config){ &fx.bz, rd, sizeof(rd), "", 1, 0, NULL };
	ck_assert_int_eq(x86_boot_setup(&fx.mem, &cfg, &e), 0);
	ck_assert_uint_le(e.initrd_gpa + sizeof(rd), 0x3000000);
	ck_assert_uint_eq(e.initrd_gpa, 0x3000000 - 8192);
	fx_free(&fx);
}
END_TEST

START_TEST(test_big_ram)
{
	struct fixture fx = { 0 };
	struct x86_boot_entry e;
	struct x86_boot_config cfg;
	const struct boot_params *bp;
	static const uint8_t rd[4096] = { 9 };
	uint64_t ram = 4 * GiB + 16 * MiB;	/* 3 GiB low, 1 GiB + 16 MiB high */

	fx_image(&fx, NULL);
	if (!fx_ram(&fx, ram)) {	/* no overcommit here: skip */
		free(fx.image);
		return;
	}
	cfg = (struct x86_boot_config){ &fx.bz, rd, sizeof(rd), "x", 2, 0, NULL };
	ck_assert_int_eq(x86_boot_setup(&fx.mem, &cfg, &e), 0);
	bp = zero_page(&fx);
	ck_assert_uint_eq(bp->e820_entries, 5);
	ck_assert_uint_eq(bp->e820_table[4].addr, 4 * GiB);
	ck_assert_uint_eq(bp->e820_table[4].size, ram - 3 * GiB);
	/* Below initrd_addr_max (2 GiB - 1), not at the top of low RAM. */
	ck_assert_uint_eq(e.initrd_gpa, 2 * GiB - 4096);
	ck_assert_uint_eq(((const uint8_t *)guest_mem_ptr(&fx.mem, e.initrd_gpa, 1))[0], 9);
	fx_free(&fx);
}
END_TEST

START_TEST(test_cmdline_too_long)
{
	struct fixture fx = { 0 };
	struct x86_boot_entry e;
	struct x86_boot_config cfg;
	char *cl = malloc(4096);

	ck_assert_ptr_nonnull(cl);
	fx_image(&fx, NULL);
	fx_ram(&fx, RAM_SIZE);
	memset(cl, 'a', 2047);
	cl[2047] = '\0';
	cfg = (struct x86_boot_config){ &fx.bz, NULL, 0, cl, 1, 0, NULL };
	ck_assert_int_eq(x86_boot_setup(&fx.mem, &cfg, &e), 0);	/* exactly max */
	ck_assert_uint_eq(strlen((char *)fx.ram + X86_BOOT_CMDLINE_GPA), 2047);
	memset(cl, 'a', 2048);
	cl[2048] = '\0';
	ck_assert_int_eq(x86_boot_setup(&fx.mem, &cfg, &e), -EINVAL);
	free(cl);
	fx_free(&fx);
}
END_TEST

START_TEST(test_initrd_too_big)
{
	struct fixture fx = { 0 };
	struct x86_boot_entry e;
	struct x86_boot_config cfg;
	/* Only 64 MiB - (16 + 8) MiB fit above the kernel's init_size. */
	size_t size = 40 * MiB + 1;
	uint8_t *rd = calloc(1, size);

	ck_assert_ptr_nonnull(rd);
	fx_image(&fx, NULL);
	fx_ram(&fx, RAM_SIZE);
	cfg = (struct x86_boot_config){ &fx.bz, rd, size, NULL, 1, 0, NULL };
	ck_assert_int_eq(x86_boot_setup(&fx.mem, &cfg, &e), -EINVAL);
	cfg.initrd_size = 40 * MiB;
	ck_assert_int_eq(x86_boot_setup(&fx.mem, &cfg, &e), 0);
	ck_assert_uint_eq(e.initrd_gpa, KERNEL_GPA + INIT_SIZE);
	cfg.initrd_size = 2 * RAM_SIZE;	/* larger than RAM itself */
	ck_assert_int_eq(x86_boot_setup(&fx.mem, &cfg, &e), -EINVAL);
	free(rd);
	fx_free(&fx);
}
END_TEST

START_TEST(test_ram_too_small)
{
	static const uint64_t sizes[] = { 16 * MiB, 24 * MiB - 1, MiB, 512 * 1024 };
	struct x86_boot_entry e;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct fixture fx = { 0 };
		struct x86_boot_config cfg;

		fx_image(&fx, NULL);
		fx_ram(&fx, sizes[i]);
		cfg = (struct x86_boot_config){ &fx.bz, NULL, 0, NULL, 1, 0, NULL };
		ck_assert_int_eq(x86_boot_setup(&fx.mem, &cfg, &e), -EINVAL);
		fx_free(&fx);
	}
	/* Exactly enough for the kernel's init_size. */
	{
		struct fixture fx = { 0 };
		struct x86_boot_config cfg;

		fx_image(&fx, NULL);
		fx_ram(&fx, KERNEL_GPA + INIT_SIZE);
		cfg = (struct x86_boot_config){ &fx.bz, NULL, 0, NULL, 1, 0, NULL };
		ck_assert_int_eq(x86_boot_setup(&fx.mem, &cfg, &e), 0);
		fx_free(&fx);
	}
}
END_TEST

START_TEST(test_bad_args)
{
	struct fixture fx = { 0 };
	struct x86_boot_entry e;
	struct x86_boot_config cfg;

	fx_image(&fx, NULL);
	fx_ram(&fx, RAM_SIZE);
	cfg = (struct x86_boot_config){ &fx.bz, NULL, 0, NULL, 0, 0, NULL };
	ck_assert_int_eq(x86_boot_setup(&fx.mem, &cfg, &e), -EINVAL);
	cfg.nr_vcpus = 255; /* beyond the MP table, and no ACPI tables */
	ck_assert_int_eq(x86_boot_setup(&fx.mem, &cfg, &e), -EINVAL);
	cfg.acpi_rsdp = 0xe0000;
	cfg.nr_vcpus = X86_BOOT_MAX_VCPUS + 1;
	ck_assert_int_eq(x86_boot_setup(&fx.mem, &cfg, &e), -EINVAL);
	cfg.acpi_rsdp = 0;
	cfg.nr_vcpus = 1;
	cfg.initrd_size = 10;	/* size without data */
	ck_assert_int_eq(x86_boot_setup(&fx.mem, &cfg, &e), -EINVAL);
	cfg.initrd_size = 0;
	ck_assert_int_eq(x86_boot_setup(NULL, &cfg, &e), -EINVAL);
	ck_assert_int_eq(x86_boot_setup(&fx.mem, NULL, &e), -EINVAL);
	ck_assert_int_eq(x86_boot_setup(&fx.mem, &cfg, NULL), -EINVAL);
	cfg.kernel = NULL;
	ck_assert_int_eq(x86_boot_setup(&fx.mem, &cfg, &e), -EINVAL);
	fx_free(&fx);
}
END_TEST

START_TEST(test_regs)
{
	struct x86_boot_entry e = {
		.rip = KERNEL_GPA + 0x200, .rsi = 0x7000, .rsp = 0x8ff0,
		.cr3 = 0x9000, .gdt_base = 0x500, .gdt_limit = 47,
	};
	struct kvm_regs regs;
	struct kvm_sregs sregs;

	memset(&regs, 0xa5, sizeof(regs));
	memset(&sregs, 0, sizeof(sregs));
	sregs.cr0 = 0x60000010;		/* reset value: CD | NW | ET */
	sregs.apic_base = 0xfee00900;
	x86_boot_regs(&e, &regs, &sregs);

	ck_assert_uint_eq(regs.rip, KERNEL_GPA + 0x200);
	ck_assert_uint_eq(regs.rsi, 0x7000);
	ck_assert_uint_eq(regs.rsp, 0x8ff0);
	ck_assert_uint_eq(regs.rflags, 2);
	ck_assert_uint_eq(regs.rax, 0);
	ck_assert_uint_eq(regs.rdi, 0);

	ck_assert_uint_eq(sregs.cr0 & 0x80000031, 0x80000031);	/* PG NE ET PE */
	ck_assert_uint_eq(sregs.cr0 & 0x60000000, 0);		/* caches on */
	ck_assert_uint_eq(sregs.cr4 & 0x20, 0x20);		/* PAE */
	ck_assert_uint_eq(sregs.efer & 0x500, 0x500);		/* LME LMA */
	ck_assert_uint_eq(sregs.cr3, 0x9000);
	ck_assert_uint_eq(sregs.apic_base, 0xfee00900);		/* untouched */

	ck_assert_uint_eq(sregs.cs.selector, 0x10);
	ck_assert_uint_eq(sregs.cs.l, 1);
	ck_assert_uint_eq(sregs.cs.db, 0);
	ck_assert_uint_eq(sregs.cs.present, 1);
	ck_assert_uint_eq(sregs.cs.s, 1);
	ck_assert_uint_eq(sregs.cs.type, 0xb);
	{
		const struct kvm_segment *d[] = { &sregs.ds, &sregs.es, &sregs.fs,
						  &sregs.gs, &sregs.ss };

		for (size_t i = 0; i < 5; i++) {
			ck_assert_uint_eq(d[i]->selector, 0x18);
			ck_assert_uint_eq(d[i]->type, 0x3);
			ck_assert_uint_eq(d[i]->present, 1);
			ck_assert_uint_eq(d[i]->s, 1);
			ck_assert_uint_eq(d[i]->l, 0);
			ck_assert_uint_eq(d[i]->db, 1);
			ck_assert_uint_eq(d[i]->base, 0);
		}
	}
	ck_assert_uint_eq(sregs.tr.selector, 0x20);
	ck_assert_uint_eq(sregs.tr.type, 0xb);
	ck_assert_uint_eq(sregs.tr.present, 1);
	ck_assert_uint_eq(sregs.tr.s, 0);
	ck_assert_uint_eq(sregs.gdt.base, 0x500);
	ck_assert_uint_eq(sregs.gdt.limit, 47);
	ck_assert_uint_eq(sregs.idt.base, 0);
	ck_assert_uint_eq(sregs.idt.limit, 0);
}
END_TEST

static Suite *x86boot_suite(void)
{
	Suite *s = suite_create("x86boot");
	TCase *tc = tcase_create("setup");

	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_no_initrd_no_cmdline);
	tcase_add_test(tc, test_acpi_rsdp);
	tcase_add_test(tc, test_alignment);
	tcase_add_test(tc, test_initrd_addr_max);
	tcase_add_test(tc, test_big_ram);
	tcase_add_test(tc, test_cmdline_too_long);
	tcase_add_test(tc, test_initrd_too_big);
	tcase_add_test(tc, test_ram_too_small);
	tcase_add_test(tc, test_bad_args);
	tcase_add_test(tc, test_regs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(x86boot_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
