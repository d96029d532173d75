/* SPDX-License-Identifier: MIT */
/*
 * PVH boot of a vmlinux (x86/pvh.h): x86_load_files() on synthetic ELF
 * files over malloc'd guest RAM -- segments at their addresses, the bss
 * zeroed, hvm_start_info with the command line, initrd module, e820 map and
 * RSDP, the 32-bit entry registers -- and every malformed image refused
 * with -EINVAL, never loaded.
 */
#include <check.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memory.h"
#include "x86/boot.h"
#include "x86/e820.h"
#include "x86/loader.h"
#include "x86/mptable.h"
#include "x86/pvh.h"

#define MiB (1ull << 20)
#define RAM_SIZE (64 * MiB)
#define TEXT_GPA (16 * MiB)
#define DATA_GPA (TEXT_GPA + 64 * 1024)
#define TEXT_OFF 0x1000u
#define TEXT_LEN 0x2000u
#define DATA_OFF 0x3000u
#define DATA_FILE 0x1000u
#define DATA_MEM 0x3000u
#define NOTE_OFF 0x200u
#define ENTRY (TEXT_GPA + 0x40)
#define FILE_LEN (DATA_OFF + DATA_FILE)
#define RSDP 0xe0000ull

struct image {
	uint8_t b[FILE_LEN];
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph; /* [0] text, [1] data, [2] notes */
	size_t note_len;
};

static uint8_t *ram;
static struct guest_mem mem;
static char kpath[64], ipath[64];

static void setup(void)
{
	ram = malloc(RAM_SIZE);
	ck_assert_ptr_nonnull(ram);
	memset(ram, 0xaa, RAM_SIZE); /* so that the bss must be zeroed */
	guest_mem_init_buf(&mem, ram, RAM_SIZE);
	kpath[0] = ipath[0] = '\0';
}

static void teardown(void)
{
	free(ram);
	if (kpath[0])
		unlink(kpath);
	if (ipath[0])
		unlink(ipath);
}

/* Append one note (name "Xen", padded) at @off; returns the next offset. */
static size_t add_note(uint8_t *b, size_t off, uint32_t type, const void *desc,
		       uint32_t descsz)
{
	Elf64_Nhdr nh = { .n_namesz = 4, .n_descsz = descsz, .n_type = type };

	memcpy(b + off, &nh, sizeof(nh));
	memcpy(b + off + sizeof(nh), "Xen", 4);
	memcpy(b + off + sizeof(nh) + 4, desc, descsz);
	return off + sizeof(nh) + 4 + ((descsz + 3) & ~3u);
}

/* A vmlinux-like image: text, data + bss, a note segment with an
 * unrelated Xen note and then the PHYS32 entry. */
static void make_image(struct image *im)
{
	uint32_t entry = ENTRY;
	const char guest_os[] = "linux";
	size_t end;

	memset(im, 0, sizeof(*im));
	im->eh = (Elf64_Ehdr *)im->b;
	im->ph = (Elf64_Phdr *)(im->b + sizeof(Elf64_Ehdr));
	memcpy(im->eh->e_ident, ELFMAG, SELFMAG);
	im->eh->e_ident[EI_CLASS] = ELFCLASS64;
	im->eh->e_ident[EI_DATA] = ELFDATA2LSB;
	im->eh->e_ident[EI_VERSION] = EV_CURRENT;
	im->eh->e_type = ET_EXEC;
	im->eh->e_machine = EM_X86_64;
	im->eh->e_version = EV_CURRENT;
	im->eh->e_entry = 0xffffffff81000000ull;
	im->eh->e_phoff = sizeof(Elf64_Ehdr);
	im->eh->e_ehsize = sizeof(Elf64_Ehdr);
	im->eh->e_phentsize = sizeof(Elf64_Phdr);
	im->eh->e_phnum = 3;
	im->ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_offset = TEXT_OFF,
				  .p_paddr = TEXT_GPA,
				  .p_vaddr = 0xffffffff81000000ull,
				  .p_filesz = TEXT_LEN, .p_memsz = TEXT_LEN };
	im->ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_offset = DATA_OFF,
				  .p_paddr = DATA_GPA, .p_filesz = DATA_FILE,
				  .p_memsz = DATA_MEM };
	end = add_note(im->b, NOTE_OFF, 6, guest_os, sizeof(guest_os));
	end = add_note(im->b, end, XEN_ELFNOTE_PHYS32_ENTRY, &entry, 4);
	im->note_len = end - NOTE_OFF;
	im->ph[2] = (Elf64_Phdr){ .p_type = PT_NOTE, .p_offset = NOTE_OFF,
				  .p_filesz = im->note_len,
				  .p_memsz = im->note_len };
	for (size_t i = 0; i < TEXT_LEN; i++)
		im->b[TEXT_OFF + i] = (uint8_t)(i * 7 + 3);
	for (size_t i = 0; i < DATA_FILE; i++)
		im->b[DATA_OFF + i] = (uint8_t)(i * 5 + 1);
}

static void write_file(char *path, const char *tmpl, const void *b, size_t len)
{
	int fd;

	strcpy(path, tmpl);
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, b, len), (ssize_t)len);
	close(fd);
}

static int load(const struct image *im, size_t len, const char *cmdline,
		size_t initrd_len, struct x86_boot_entry *e)
{
	if (!kpath[0])
		write_file(kpath, "/tmp/check_pvh.k.XXXXXX", im->b, len);
	if (initrd_len && !ipath[0]) {
		uint8_t *rd = malloc(initrd_len);

		ck_assert_ptr_nonnull(rd);
		for (size_t i = 0; i < initrd_len; i++)
			rd[i] = (uint8_t)(i * 11 + 2);
		write_file(ipath, "/tmp/check_pvh.i.XXXXXX", rd, initrd_len);
		free(rd);
	}
	return x86_load_files(&mem, kpath, initrd_len ? ipath : NULL, cmdline,
			      2, RSDP, e);
}

static uint32_t rd32(uint64_t gpa)
{
	uint32_t v;

	ck_assert_int_eq(guest_mem_read(&mem, gpa, &v, sizeof(v)), 0);
	return v;
}

static uint64_t rd64(uint64_t gpa)
{
	uint64_t v;

	ck_assert_int_eq(guest_mem_read(&mem, gpa, &v, sizeof(v)), 0);
	return v;
}

START_TEST(loads_segments_and_start_info)
{
	struct image im;
	struct x86_boot_entry e;
	struct boot_e820_entry want[E820_MAX_ENTRIES_ZEROPAGE];
	const char *cl = "console=ttyS0 quiet";
	uint64_t si = X86_BOOT_ZERO_PAGE_GPA, mod, map, rd;
	int n = e820_build(RAM_SIZE, want, E820_MAX_ENTRIES_ZEROPAGE);

	make_image(&im);
	ck_assert_int_eq(load(&im, FILE_LEN, cl, 5000, &e), 0);
	ck_assert(e.pvh);
	ck_assert_uint_eq(e.rip, ENTRY);
	ck_assert_uint_eq(e.rbx, si);
	ck_assert_uint_eq(e.kernel_gpa, TEXT_GPA);

	/* Segments at their physical addresses, the bss zeroed. */
	ck_assert_mem_eq(ram + TEXT_GPA, im.b + TEXT_OFF, TEXT_LEN);
	ck_assert_mem_eq(ram + DATA_GPA, im.b + DATA_OFF, DATA_FILE);
	for (size_t i = DATA_FILE; i < DATA_MEM; i++)
		ck_assert_uint_eq(ram[DATA_GPA + i], 0);
	ck_assert_uint_eq(ram[DATA_GPA + DATA_MEM], 0xaa); /* not beyond */

	/* hvm_start_info, version 1. */
	ck_assert_uint_eq(rd32(si), PVH_START_MAGIC);
	ck_assert_uint_eq(rd32(si + 4), 1);
	ck_assert_uint_eq(rd32(si + 12), 1); /* the initrd */
	ck_assert_str_eq((const char *)ram + rd64(si + 24), cl);
	ck_assert_uint_eq(rd64(si + 32), RSDP);
	ck_assert_int_gt(n, 0);
	ck_assert_uint_eq(rd32(si + 48), (uint32_t)n);
	ck_assert_uint_eq(rd32(si + 52), 0);

	mod = rd64(si + 16);
	rd = rd64(mod);
	ck_assert_uint_eq(rd64(mod + 8), 5000);
	ck_assert_uint_eq(rd % 4096, 0);
	ck_assert_uint_ge(rd, DATA_GPA + DATA_MEM);
	ck_assert_uint_le(rd + 5000, RAM_SIZE);
	for (size_t i = 0; i < 5000; i++)
		ck_assert_uint_eq(ram[rd + i], (uint8_t)(i * 11 + 2));

	map = rd64(si + 40);
	for (int i = 0; i < n; i++) {
		uint64_t ent = map + (uint64_t)i * 24; /* the ABI's entry size */

		ck_assert_uint_eq(rd64(ent), want[i].addr);
		ck_assert_uint_eq(rd64(ent + 8), want[i].size);
		ck_assert_uint_eq(rd32(ent + 16), want[i].type);
		ck_assert_uint_eq(rd32(ent + 20), 0);
	}
	/* The MP table too, for acpi=off guests. */
	ck_assert_mem_eq(ram + MPTABLE_GPA, "_MP_", 4);
}
END_TEST

START_TEST(no_initrd_no_module)
{
	struct image im;
	struct x86_boot_entry e;

	make_image(&im);
	ck_assert_int_eq(load(&im, FILE_LEN, NULL, 0, &e), 0);
	ck_assert_uint_eq(rd32(X86_BOOT_ZERO_PAGE_GPA + 12), 0);
	ck_assert_uint_eq(rd64(X86_BOOT_ZERO_PAGE_GPA + 16), 0);
	ck_assert_str_eq((const char *)ram + rd64(X86_BOOT_ZERO_PAGE_GPA + 24), "");
	ck_assert_uint_eq(e.initrd_gpa, 0);
}
END_TEST

/* The PVH ABI's entry state: flat 32-bit protected mode, no paging. */
START_TEST(entry_registers)
{
	struct image im;
	struct x86_boot_entry e;
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	uint64_t gdt[X86_BOOT_GDT_ENTRIES];

	make_image(&im);
	ck_assert_int_eq(load(&im, FILE_LEN, "x", 0, &e), 0);
	memset(&sregs, 0x5a, sizeof(sregs));
	x86_boot_regs(&e, &regs, &sregs);
	ck_assert_uint_eq(regs.rip, ENTRY);
	ck_assert_uint_eq(regs.rbx, X86_BOOT_ZERO_PAGE_GPA);
	ck_assert_uint_eq(regs.rflags, 2); /* IF, TF, VM clear */
	ck_assert_uint_eq(sregs.cr0 & 1, 1);
	ck_assert_uint_eq(sregs.cr0 >> 31, 0);
	ck_assert_uint_eq(sregs.cr4, 0);
	ck_assert_uint_eq(sregs.efer, 0);
	ck_assert_uint_eq(sregs.cs.base, 0);
	ck_assert_uint_eq(sregs.cs.limit, 0xffffffffu);
	ck_assert_uint_eq(sregs.cs.db, 1);
	ck_assert_uint_eq(sregs.cs.l, 0);
	ck_assert_uint_eq(sregs.cs.type, 0xb);
	ck_assert_uint_eq(sregs.ss.type, 0x3);
	ck_assert_uint_eq(sregs.ds.db, 1);
	ck_assert_uint_eq(sregs.tr.type, 0xb);
	ck_assert_uint_eq(sregs.tr.limit, 0x67);
	/* The GDT in RAM says the same: 32-bit code (D=1, L=0). */
	ck_assert_int_eq(guest_mem_read(&mem, sregs.gdt.base, gdt, sizeof(gdt)), 0);
	ck_assert_uint_eq(sregs.gdt.limit, sizeof(gdt) - 1);
	ck_assert_uint_eq((gdt[X86_BOOT_CS / 8] >> 53) & 1, 0); /* L */
	ck_assert_uint_eq((gdt[X86_BOOT_CS / 8] >> 54) & 1, 1); /* D */
}
END_TEST

/* ---- malformed images: each refused, nothing loaded -------------------- */

enum bad {
	BAD_CLASS, BAD_MACHINE, BAD_TYPE, BAD_PHENTSIZE, BAD_PHOFF,
	BAD_SEG_PAST_FILE, BAD_FILESZ, BAD_LOW, BAD_HIGH, BAD_WRAP,
	BAD_NO_NOTES, BAD_NO_ENTRY, BAD_NOTE_OVERRUN, BAD_ENTRY_SIZE,
	BAD_ENTRY_OUTSIDE, BAD_TOO_BIG_FOR_RAM, NR_BAD
};

START_TEST(malformed_refused)
{
	struct image im;
	struct x86_boot_entry e;
	Elf64_Nhdr nh;
	size_t len = FILE_LEN;
	uint32_t entry;

	make_image(&im);
	switch ((enum bad)_i) {
	case BAD_CLASS: im.eh->e_ident[EI_CLASS] = ELFCLASS32; break;
	case BAD_MACHINE: im.eh->e_machine = EM_386; break;
	case BAD_TYPE: im.eh->e_type = ET_DYN; break;
	case BAD_PHENTSIZE: im.eh->e_phentsize = 32; break;
	case BAD_PHOFF: im.eh->e_phoff = FILE_LEN - 8; break;
	case BAD_SEG_PAST_FILE: im.ph[1].p_filesz = DATA_FILE + 1;
		im.ph[1].p_memsz = DATA_MEM; break;
	case BAD_FILESZ: im.ph[1].p_filesz = DATA_MEM + 0x1000;
		im.ph[1].p_offset = 0; break;
	case BAD_LOW: im.ph[0].p_paddr = 0x9f000; break;
	case BAD_HIGH: im.ph[1].p_paddr = 0xfffff000ull; break;
	case BAD_WRAP: im.ph[1].p_paddr = UINT64_MAX - 0x1000; break;
	case BAD_NO_NOTES: im.ph[2].p_type = PT_NULL; break;
	case BAD_NO_ENTRY: /* only the first (guest OS) note remains */
		memcpy(&nh, im.b + NOTE_OFF, sizeof(nh));
		im.ph[2].p_filesz = sizeof(nh) + 4 + ((nh.n_descsz + 3) & ~3u);
		break;
	case BAD_NOTE_OVERRUN: /* the first note claims a huge descriptor */
		memcpy(&nh, im.b + NOTE_OFF, sizeof(nh));
		nh.n_descsz = 0xfffffff0u;
		memcpy(im.b + NOTE_OFF, &nh, sizeof(nh));
		break;
	case BAD_ENTRY_SIZE: /* the entry note with a 2-byte descriptor */
		entry = ENTRY;
		add_note(im.b, NOTE_OFF, XEN_ELFNOTE_PHYS32_ENTRY, &entry, 2);
		break;
	case BAD_ENTRY_OUTSIDE:
		entry = TEXT_GPA - 16;
		add_note(im.b, NOTE_OFF, XEN_ELFNOTE_PHYS32_ENTRY, &entry, 4);
		break;
	case BAD_TOO_BIG_FOR_RAM: im.ph[1].p_memsz = RAM_SIZE; break;
	case NR_BAD: break;
	}
	ck_assert_int_eq(load(&im, len, "", 0, &e), -EINVAL);
	/* Refused before anything was read into RAM. */
	ck_assert_uint_eq(ram[TEXT_GPA], 0xaa);
}
END_TEST

START_TEST(long_cmdline_refused)
{
	struct image im;
	struct x86_boot_entry e;
	char cl[2049];

	make_image(&im);
	memset(cl, 'a', sizeof(cl) - 1);
	cl[sizeof(cl) - 1] = '\0';
	ck_assert_int_eq(load(&im, FILE_LEN, cl, 0, &e), -EINVAL);
	cl[2047] = '\0'; /* 2047 bytes: Linux's limit */
	ck_assert_int_eq(load(&im, FILE_LEN, cl, 0, &e), 0);
}
END_TEST

/* A file cut short: the headers still parse, the segments do not fit. */
START_TEST(truncated_file_refused)
{
	struct image im;
	struct x86_boot_entry e;

	make_image(&im);
	ck_assert_int_eq(load(&im, DATA_OFF + 16, "", 0, &e), -EINVAL);
}
END_TEST

START_TEST(find_entry_forms)
{
	uint8_t b[64];
	uint64_t v64 = 0x1234567;
	uint32_t entry = 0;

	/* An 8-byte descriptor holding a 32-bit address is accepted. */
	ck_assert_uint_eq(add_note(b, 0, XEN_ELFNOTE_PHYS32_ENTRY, &v64, 8), 24);
	ck_assert_int_eq(pvh_find_entry(b, 24, &entry), 0);
	ck_assert_uint_eq(entry, 0x1234567);
	/* Not when the address needs more than 32 bits. */
	v64 = 1ull << 32;
	add_note(b, 0, XEN_ELFNOTE_PHYS32_ENTRY, &v64, 8);
	ck_assert_int_eq(pvh_find_entry(b, 24, &entry), -EINVAL);
	/* Cut inside the note: malformed; empty: none. */
	ck_assert_int_eq(pvh_find_entry(b, 20, &entry), -EINVAL);
	ck_assert_int_eq(pvh_find_entry(b, 0, &entry), -ENOENT);
	ck_assert(!pvh_is_elf(b, 3));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("pvh");
	TCase *tc = tcase_create("pvh");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, loads_segments_and_start_info);
	tcase_add_test(tc, no_initrd_no_module);
	tcase_add_test(tc, entry_registers);
	tcase_add_loop_test(tc, malformed_refused, 0, NR_BAD);
	tcase_add_test(tc, long_cmdline_refused);
	tcase_add_test(tc, truncated_file_refused);
	tcase_add_test(tc, find_entry_forms);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
