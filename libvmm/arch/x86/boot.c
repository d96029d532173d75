/* SPDX-License-Identifier: MIT */
/*
 * Linux 64-bit direct boot (Documentation/arch/x86/boot.rst): the VMM does
 * what a boot loader plus the kernel's real-mode setup code would do, and
 * enters startup_64 (kernel + 0x200) in long mode with %rsi pointing at
 * boot_params.  The layout is in boot.h.
 *
 * The kernel image is untrusted input: its header was validated by
 * bzimage_parse(), and every address derived from it is range-checked here
 * before anything is copied.  All writes go through guest_mem_ptr().
 */
#include <errno.h>
#include <string.h>
#include <asm/bootparam.h>

#include "log.h"
#include "util/compiler.h"
#include "x86/boot.h"
#include "x86/e820.h"
#include "x86/fwtable.h"
#include "x86/mptable.h"
#include "x86/pvh.h"

#define PAGE_SIZE_4K 0x1000ull
#define PAGE_SIZE_2M 0x200000ull
#define PTE_PRESENT (1ull << 0)
#define PTE_RW (1ull << 1)
#define PTE_PS (1ull << 7)	/* 2 MiB page in a PD entry */
#define PT_ENTRIES 512
#define NR_PDS 4		/* 4 x 1 GiB: identity map of the first 4 GiB */

#define STARTUP_64_OFFSET 0x200
#define LOADER_TYPE_UNDEFINED 0xff	/* boot.rst: no assigned loader id */

/* Legacy fallback when a header leaves pref_address 0. */
#define DEFAULT_KERNEL_GPA 0x100000ull

#define X86_CR0_PE (1ull << 0)
#define X86_CR0_ET (1ull << 4)
#define X86_CR0_NE (1ull << 5)
#define X86_CR0_PG (1ull << 31)
#define X86_CR4_PAE (1ull << 5)
#define EFER_LME (1ull << 8)
#define EFER_LMA (1ull << 10)
#define X86_RFLAGS_RESERVED 0x2	/* bit 1 always reads as 1 */

/*
 * Flat descriptors, base 0.  Code: G=1, L=1, D=0, P=1, S=1, type 0xb
 * (execute/read, accessed).  Data: G=1, D/B=1, P=1, S=1, type 3
 * (read/write, accessed).  TSS: P=1, S=0, type 0xb (busy 64-bit TSS),
 * limit 0x67 (the minimum size of a TSS), G=0; in long mode it is a 16-byte
 * descriptor whose second half (base[63:32]) is zero.
 */
#define GDT_CODE64 0x00af9b000000ffffull
#define GDT_DATA 0x00cf93000000ffffull
#define GDT_TSS64_LO 0x00008b0000000067ull
#define GDT_TSS64_HI 0x0ull
#define TSS_LIMIT 0x67
/* PVH (32-bit): code G=1, D=1, L=0, type 0xb; TSS type 0xb = busy 32-bit. */
#define GDT_CODE32 0x00cf9b000000ffffull
#define GDT_TSS32 0x00008b0000000067ull

/* PVH: hvm_start_info where the zero page goes, then its two tables. */
#define PVH_START_INFO_GPA X86_BOOT_ZERO_PAGE_GPA
#define PVH_MODLIST_GPA (X86_BOOT_ZERO_PAGE_GPA + 0x40)
#define PVH_MEMMAP_GPA (X86_BOOT_ZERO_PAGE_GPA + 0x80)
#define PVH_CMDLINE_MAX 2047u	/* Linux's COMMAND_LINE_SIZE - 1 */

/* Host pointer for [gpa, gpa + len) or NULL; logs which range failed. */
static void *gmem(struct guest_mem *mem, uint64_t gpa, uint64_t len,
		  const char *what)
{
	void *p = guest_mem_ptr(mem, gpa, len);

	if (!p)
		vmm_err("x86 boot: %s [0x%llx, +0x%llx) is not guest RAM", what,
			(unsigned long long)gpa, (unsigned long long)len);
	return p;
}

/* Alignment-agnostic 64-bit store (guest pointers carry no alignment). */
static void put_u64(uint8_t *p, unsigned int idx, uint64_t v)
{
	memcpy(p + (size_t)idx * sizeof(v), &v, sizeof(v));
}

static int write_gdt(struct guest_mem *mem, bool pvh)
{
	const uint64_t gdt[X86_BOOT_GDT_ENTRIES] = {
		0,		/* null */
		0,		/* unused: keeps CS/DS at Linux's 0x10/0x18 */
		pvh ? GDT_CODE32 : GDT_CODE64,	/* 0x10 __BOOT_CS */
		GDT_DATA,	/* 0x18 __BOOT_DS */
		pvh ? GDT_TSS32 : GDT_TSS64_LO,	/* 0x20 TR */
		GDT_TSS64_HI,	/* (PVH: an unused null entry) */
	};
	uint8_t *p = gmem(mem, X86_BOOT_GDT_GPA, sizeof(gdt), "GDT");

	if (!p)
		return -EINVAL;
	memcpy(p, gdt, sizeof(gdt));
	return 0;
}

/* PML4[0] -> PDPT[0..3] -> 4 PDs of 2 MiB pages: identity map of 4 GiB. */
static int write_page_tables(struct guest_mem *mem)
{
	uint64_t len = X86_BOOT_PD_GPA + NR_PDS * PAGE_SIZE_4K - X86_BOOT_PML4_GPA;
	uint8_t *base = gmem(mem, X86_BOOT_PML4_GPA, len, "page tables");
	uint8_t *pml4, *pdpt, *pd;

	if (!base)
		return -EINVAL;
	memset(base, 0, len);
	pml4 = base;
	pdpt = base + (X86_BOOT_PDPT_GPA - X86_BOOT_PML4_GPA);
	pd = base + (X86_BOOT_PD_GPA - X86_BOOT_PML4_GPA);

	put_u64(pml4, 0, X86_BOOT_PDPT_GPA | PTE_PRESENT | PTE_RW);
	for (unsigned int i = 0; i < NR_PDS; i++)
		put_u64(pdpt, i, (X86_BOOT_PD_GPA + i * PAGE_SIZE_4K) |
				 PTE_PRESENT | PTE_RW);
	for (unsigned int i = 0; i < NR_PDS * PT_ENTRIES; i++)
		put_u64(pd, i, (uint64_t)i * PAGE_SIZE_2M |
			       PTE_PRESENT | PTE_RW | PTE_PS);
	return 0;
}

/*
 * Where the kernel goes: pref_address, rounded up to kernel_alignment for a
 * relocatable kernel (boot.rst), which must leave init_size bytes of low
 * RAM from there (the kernel decompresses in place within init_size).
 */
static int place_kernel(const struct bzimage *bz, uint64_t low_end,
			uint64_t *gpa, uint64_t *end)
{
	uint64_t addr = bz->pref_address ? bz->pref_address : DEFAULT_KERNEL_GPA;
	uint64_t need = MAX((uint64_t)bz->init_size, (uint64_t)bz->kernel_size);

	if (bz->relocatable && bz->kernel_alignment && addr < low_end)
		addr = ALIGN_UP(addr, (uint64_t)bz->kernel_alignment);
	/* Below 1 MiB the kernel would overwrite the boot structures. */
	if (addr < E820_HIGH_MEM || addr >= low_end || need > low_end - addr) {
		vmm_err("x86 boot: kernel needs 0x%llx bytes at 0x%llx but low guest RAM ends at 0x%llx",
			(unsigned long long)need, (unsigned long long)addr,
			(unsigned long long)low_end);
		return -EINVAL;
	}
	*gpa = addr;
	*end = addr + need;
	return 0;
}

/*
 * The initrd goes page-aligned at the top of low RAM, below the kernel's
 * initrd_addr_max (an inclusive limit) and above everything the kernel
 * needs, as boot loaders do.
 */
static int place_initrd(const struct bzimage *bz, size_t size, uint64_t low_end,
			uint64_t kernel_end, uint64_t *gpa)
{
	uint64_t top = MIN((uint64_t)bz->initrd_addr_max + 1, low_end);
	uint64_t addr = size <= top ? ALIGN_DOWN(top - size, PAGE_SIZE_4K) : 0;

	if (size > top || addr < kernel_end) {
		vmm_err("x86 boot: initrd too large for guest RAM (%zu bytes, room 0x%llx-0x%llx)",
			size, (unsigned long long)kernel_end,
			(unsigned long long)top);
		return -EINVAL;
	}
	*gpa = addr;
	return 0;
}

/* @max: the longest command line the kernel accepts. */
static int write_cmdline(struct guest_mem *mem, uint32_t max,
			 const char *cmdline)
{
	/* The command line area ends where the EBDA starts. */
	const uint64_t room = E820_EBDA_START - X86_BOOT_CMDLINE_GPA;
	size_t len = cmdline ? strlen(cmdline) : 0;
	char *p;

	if (len > max || len + 1 > room) {
		vmm_err("x86 boot: command line is %zu bytes, the kernel accepts at most %u",
			len, (unsigned int)MIN((uint64_t)max, room - 1));
		return -EINVAL;
	}
	p = gmem(mem, X86_BOOT_CMDLINE_GPA, len + 1, "command line");
	if (!p)
		return -EINVAL;
	if (len)
		memcpy(p, cmdline, len);
	p[len] = '\0';
	return 0;
}

static int write_zero_page(struct guest_mem *mem, const struct bzimage *bz,
			   uint64_t initrd_gpa, size_t initrd_size,
			   uint64_t acpi_rsdp)
{
	struct boot_params *bp;
	size_t hdr_end, copy;
	int n;

	bp = gmem(mem, X86_BOOT_ZERO_PAGE_GPA, sizeof(*bp), "boot_params");
	if (!bp)
		return -EINVAL;
	memset(bp, 0, sizeof(*bp));

	/*
	 * The setup header ends at 0x202 + the jump offset byte at 0x201;
	 * copy it whole (newer fields we do not know included) but never more
	 * than struct setup_header or the image holds.
	 */
	if (bz->image_size <= BZ_JUMP_OFFSET + 1) {
		vmm_err("x86 boot: kernel image has no setup header");
		return -EINVAL;
	}
	hdr_end = BZ_HEADER_OFFSET + (size_t)bz->image[BZ_JUMP_OFFSET + 1];
	hdr_end = MIN(hdr_end, BZ_SETUP_HDR_OFFSET + sizeof(bp->hdr));
	hdr_end = MIN(hdr_end, bz->image_size);
	copy = hdr_end - BZ_SETUP_HDR_OFFSET;
	memcpy(&bp->hdr, bz->image + BZ_SETUP_HDR_OFFSET, copy);

	bp->hdr.type_of_loader = LOADER_TYPE_UNDEFINED;
	/* Protected-mode code is above 1 MiB; no heap: setup code never runs. */
	bp->hdr.loadflags = (uint8_t)((bp->hdr.loadflags | LOADED_HIGH) &
				      ~(CAN_USE_HEAP | KEEP_SEGMENTS));
	bp->hdr.cmd_line_ptr = (uint32_t)X86_BOOT_CMDLINE_GPA;
	bp->ext_cmd_line_ptr = 0;
	/* place_initrd() keeps the initrd below 3 GiB: 32 bits suffice. */
	bp->hdr.ramdisk_image = (uint32_t)initrd_gpa;
	bp->hdr.ramdisk_size = (uint32_t)initrd_size;
	/* Boot protocol 2.14: the guest need not scan for the RSDP (it still
	 * finds it at 0xe0000 if it does: older kernels, acpi_rsdp=...). */
	bp->acpi_rsdp_addr = acpi_rsdp;

	n = e820_build(mem->size, bp->e820_table, E820_MAX_ENTRIES_ZEROPAGE);
	if (n < 0) {
		vmm_err("x86 boot: cannot build the e820 map (%d)", n);
		return -EINVAL;
	}
	bp->e820_entries = (uint8_t)n;
	return 0;
}

/* Beside the ACPI tables too, for guests booted with acpi=off; it cannot
 * describe more than MPTABLE_MAX_CPUS. */
static int write_mptable(struct guest_mem *mem, unsigned int nr_vcpus)
{
	uint8_t *p;
	long mp;

	if (nr_vcpus > MPTABLE_MAX_CPUS)
		return 0;
	p = gmem(mem, MPTABLE_GPA, E820_HIGH_MEM - MPTABLE_GPA, "MP table");
	if (!p)
		return -EINVAL;
	mp = mptable_write(p, E820_HIGH_MEM - MPTABLE_GPA, MPTABLE_GPA, nr_vcpus);
	if (mp < 0) {
		vmm_err("x86 boot: cannot write the MP table (%ld)", mp);
		return -EINVAL;
	}
	return 0;
}

/*
 * hvm_start_info, the module list (the initrd) and the memory map (the e820
 * map, entry by entry), built locally and copied in (fwtable_put(): guest
 * RAM carries no alignment).  Linux turns them back into a zero page
 * (init_pvh_bootparams()).
 */
static int write_start_info(struct guest_mem *mem, uint64_t initrd_gpa,
			    uint64_t initrd_size, uint64_t acpi_rsdp)
{
	struct boot_e820_entry e820[E820_MAX_ENTRIES_ZEROPAGE];
	int n = e820_build(mem->size, e820, E820_MAX_ENTRIES_ZEROPAGE);
	struct pvh_start_info si = {
		.magic = PVH_START_MAGIC,
		.version = 1,
		.nr_modules = initrd_size ? 1 : 0,
		.modlist_paddr = initrd_size ? PVH_MODLIST_GPA : 0,
		.cmdline_paddr = X86_BOOT_CMDLINE_GPA,
		.rsdp_paddr = acpi_rsdp,
		.memmap_paddr = PVH_MEMMAP_GPA,
	};
	struct pvh_modlist_entry mod = { .paddr = initrd_gpa, .size = initrd_size };
	uint8_t *psi, *pmod, *pmap;

	if (n < 0) {
		vmm_err("x86 boot: cannot build the e820 map (%d)", n);
		return -EINVAL;
	}
	si.memmap_entries = (uint32_t)n;
	/* The map must end before the boot stack page (0x8000). */
	if (PVH_MEMMAP_GPA + (uint64_t)n * sizeof(struct pvh_memmap_entry) > 0x8000) {
		vmm_err("x86 boot: e820 map too long for PVH (%d entries)", n);
		return -EINVAL;
	}
	psi = gmem(mem, PVH_START_INFO_GPA, sizeof(si), "start info");
	pmod = gmem(mem, PVH_MODLIST_GPA, sizeof(mod), "module list");
	pmap = gmem(mem, PVH_MEMMAP_GPA, (uint64_t)n * sizeof(struct pvh_memmap_entry),
		    "memory map");
	if (!psi || !pmod || !pmap)
		return -EINVAL;
	fwtable_put(psi, &si, sizeof(si));
	fwtable_put(pmod, &mod, sizeof(mod));
	for (int i = 0; i < n; i++) {
		struct pvh_memmap_entry e = {
			.addr = e820[i].addr, .size = e820[i].size, .type = e820[i].type,
		};

		pmap = fwtable_put(pmap, &e, sizeof(e));
	}
	return 0;
}

/* PVH: see x86_boot_setup_files() in boot.h.  @low_end: end of low RAM. */
static int setup_pvh(struct guest_mem *mem, const struct x86_boot_config *cfg,
		     const struct x86_boot_files *files, uint64_t low_end,
		     struct x86_boot_entry *entry)
{
	const struct pvh_kernel *k = cfg->pvh;
	uint64_t initrd_gpa = 0, top = MIN(low_end, 1ull << 32);
	int ret;

	if (!files || files->kernel_fd < 0) {
		vmm_err("x86 boot: PVH boot needs the kernel file");
		return -EINVAL;
	}
	if (k->end > low_end) {
		vmm_err("x86 boot: kernel needs [0x%llx, 0x%llx) but low guest RAM ends at 0x%llx",
			(unsigned long long)k->start, (unsigned long long)k->end,
			(unsigned long long)low_end);
		return -EINVAL;
	}
	if (cfg->initrd_size) {
		if (cfg->initrd_size > top - k->end) {
			vmm_err("x86 boot: initrd too large for guest RAM (%zu bytes, room 0x%llx-0x%llx)",
				cfg->initrd_size, (unsigned long long)k->end,
				(unsigned long long)top);
			return -EINVAL;
		}
		initrd_gpa = ALIGN_DOWN(top - cfg->initrd_size, PAGE_SIZE_4K);
	}
	ret = write_cmdline(mem, PVH_CMDLINE_MAX, cfg->cmdline);
	if (!ret)
		ret = write_start_info(mem, initrd_gpa, cfg->initrd_size,
				       cfg->acpi_rsdp);
	if (!ret)
		ret = write_gdt(mem, true);
	if (!ret)
		ret = write_mptable(mem, cfg->nr_vcpus);
	for (unsigned int i = 0; !ret && i < k->nr_segs; i++) {
		const struct pvh_seg *s = &k->segs[i];
		uint8_t *bss;

		/* The bulk of the start-up cost: see guest_mem_load_fd(). */
		ret = guest_mem_load_fd(mem, s->paddr, files->kernel_fd,
					s->offset, s->filesz);
		if (ret) {
			vmm_err("x86 boot: loading kernel segment %u: %s", i,
				strerror(-ret));
			return ret;
		}
		if (s->memsz == s->filesz)
			continue;
		bss = gmem(mem, s->paddr + s->filesz, s->memsz - s->filesz,
			   "kernel segment");
		if (!bss)
			return -EINVAL;
		memset(bss, 0, s->memsz - s->filesz);
	}
	if (ret)
		return ret;
	if (cfg->initrd_size) {
		ret = guest_mem_load_fd(mem, initrd_gpa, files->initrd_fd, 0,
					cfg->initrd_size);
		if (ret) {
			vmm_err("x86 boot: loading the initrd: %s", strerror(-ret));
			return ret;
		}
	}
	memset(entry, 0, sizeof(*entry));
	entry->pvh = true;
	entry->rip = k->entry;
	entry->rbx = PVH_START_INFO_GPA;
	entry->gdt_base = X86_BOOT_GDT_GPA;
	entry->gdt_limit = X86_BOOT_GDT_ENTRIES * 8 - 1;
	entry->initrd_gpa = initrd_gpa;
	entry->kernel_gpa = k->start;
	vmm_dbg("x86 boot: PVH kernel [0x%llx, 0x%llx) entry 0x%x, initrd at 0x%llx",
		(unsigned long long)k->start, (unsigned long long)k->end,
		k->entry, (unsigned long long)initrd_gpa);
	return 0;
}

int x86_boot_setup(struct guest_mem *mem, const struct x86_boot_config *cfg,
		   struct x86_boot_entry *entry)
{
	return x86_boot_setup_files(mem, cfg, NULL, entry);
}

/* The kernel payload (and the initrd) into guest RAM at @kernel_gpa
 * (@initrd_gpa): read from @files, or copied from @cfg's buffers. */
static int load_bzimage(struct guest_mem *mem, const struct x86_boot_config *cfg,
			const struct x86_boot_files *files, uint64_t kernel_gpa,
			uint64_t initrd_gpa)
{
	const struct bzimage *bz = cfg->kernel;
	size_t initrd_size = cfg->initrd_size;
	uint8_t *p;
	int ret;

	p = gmem(mem, kernel_gpa, bz->kernel_size, "kernel");
	if (!p)
		return -EINVAL;
	if (initrd_size && !gmem(mem, initrd_gpa, initrd_size, "initrd"))
		return -EINVAL;
	if (!files) {
		memcpy(p, bz->kernel, bz->kernel_size);
		if (initrd_size)
			memcpy(guest_mem_ptr(mem, initrd_gpa, initrd_size),
			       cfg->initrd, initrd_size);
		return 0;
	}
	/* The bulk of the start-up cost: see guest_mem_load_fd(). */
	ret = guest_mem_load_fd(mem, kernel_gpa, files->kernel_fd,
				bz->setup_size, bz->kernel_size);
	if (ret) {
		vmm_err("x86 boot: loading the kernel: %s", strerror(-ret));
		return ret;
	}
	if (initrd_size)
		ret = guest_mem_load_fd(mem, initrd_gpa, files->initrd_fd, 0,
					initrd_size);
	if (ret)
		vmm_err("x86 boot: loading the initrd: %s", strerror(-ret));
	return ret;
}

/* bzImage: see x86_boot_setup_files() in boot.h.  @low_end: end of low
 * RAM. */
static int setup_bzimage(struct guest_mem *mem, const struct x86_boot_config *cfg,
			 const struct x86_boot_files *files, uint64_t low_end,
			 struct x86_boot_entry *entry)
{
	const struct bzimage *bz = cfg->kernel;
	uint64_t kernel_gpa, kernel_end, initrd_gpa = 0;
	size_t initrd_size = cfg->initrd_size;
	int ret;

	ret = place_kernel(bz, low_end, &kernel_gpa, &kernel_end);
	if (!ret && initrd_size)
		ret = place_initrd(bz, initrd_size, low_end, kernel_end,
				   &initrd_gpa);
	if (!ret)
		ret = write_cmdline(mem, bz->cmdline_size, cfg->cmdline);
	if (!ret)
		ret = write_zero_page(mem, bz, initrd_gpa, initrd_size,
				      cfg->acpi_rsdp);
	if (!ret)
		ret = write_gdt(mem, false);
	if (!ret)
		ret = write_page_tables(mem);
	if (!ret)
		ret = write_mptable(mem, cfg->nr_vcpus);
	if (!ret)
		ret = load_bzimage(mem, cfg, files, kernel_gpa, initrd_gpa);
	if (ret)
		return ret;

	memset(entry, 0, sizeof(*entry));
	entry->rip = kernel_gpa + STARTUP_64_OFFSET;
	entry->rsi = X86_BOOT_ZERO_PAGE_GPA;
	entry->rsp = X86_BOOT_STACK_GPA;
	entry->cr3 = X86_BOOT_PML4_GPA;
	entry->gdt_base = X86_BOOT_GDT_GPA;
	entry->gdt_limit = X86_BOOT_GDT_ENTRIES * 8 - 1;
	entry->initrd_gpa = initrd_gpa;
	entry->kernel_gpa = kernel_gpa;
	vmm_dbg("x86 boot: kernel at 0x%llx, initrd at 0x%llx (%zu bytes)",
		(unsigned long long)kernel_gpa, (unsigned long long)initrd_gpa,
		initrd_size);
	return 0;
}

/* The arguments of x86_boot_setup_files(), and the end of low RAM in
 * @low_end.  Returns 0 or -EINVAL (after a message). */
static int check_config(const struct guest_mem *mem,
			const struct x86_boot_config *cfg,
			const struct x86_boot_files *files,
			const struct x86_boot_entry *entry, uint64_t *low_end)
{
	/* From memory, the kernel payload and initrd must be there; from
	 * files (bzimage_parse_head()), they are read from the fds.  PVH:
	 * files only. */
	if (!mem || !cfg || !entry || !!cfg->kernel == !!cfg->pvh ||
	    (cfg->kernel && (!cfg->kernel->image ||
			     (!files && !cfg->kernel->kernel)))) {
		vmm_err("x86 boot: invalid arguments");
		return -EINVAL;
	}
	if (cfg->nr_vcpus < 1 || cfg->nr_vcpus > X86_BOOT_MAX_VCPUS ||
	    (!cfg->acpi_rsdp && cfg->nr_vcpus > MPTABLE_MAX_CPUS)) {
		vmm_err("x86 boot: %u vCPUs (1..%u; %u without ACPI tables)",
			cfg->nr_vcpus, X86_BOOT_MAX_VCPUS, MPTABLE_MAX_CPUS);
		return -EINVAL;
	}
	if (cfg->initrd_size && (files ? files->initrd_fd < 0 : !cfg->initrd)) {
		vmm_err("x86 boot: initrd size without initrd");
		return -EINVAL;
	}
	/* Everything the boot places is in low RAM, which starts at gpa 0. */
	*low_end = MIN(mem->size, X86_PCI_HOLE_START);
	if (*low_end < E820_HIGH_MEM || !guest_mem_ptr(mem, 0, *low_end)) {
		vmm_err("x86 boot: guest RAM (0x%llx bytes) is too small",
			(unsigned long long)mem->size);
		return -EINVAL;
	}
	return 0;
}

int x86_boot_setup_files(struct guest_mem *mem,
			 const struct x86_boot_config *cfg,
			 const struct x86_boot_files *files,
			 struct x86_boot_entry *entry)
{
	uint64_t low_end;
	int ret;

	ret = check_config(mem, cfg, files, entry, &low_end);
	if (ret)
		return ret;
	if (cfg->pvh)
		return setup_pvh(mem, cfg, files, low_end, entry);
	return setup_bzimage(mem, cfg, files, low_end, entry);
}

static void flat_segment(struct kvm_segment *s, uint16_t selector, uint8_t type,
			 bool code64)
{
	memset(s, 0, sizeof(*s));
	s->base = 0;
	s->limit = 0xffffffff;
	s->selector = selector;
	s->type = type;
	s->present = 1;
	s->s = 1;
	s->g = 1;
	s->l = code64;
	s->db = !code64;	/* L=1 requires D=0 */
}

void x86_boot_regs(const struct x86_boot_entry *e, struct kvm_regs *regs,
		   struct kvm_sregs *sregs)
{
	memset(regs, 0, sizeof(*regs));
	regs->rip = e->rip;
	regs->rflags = X86_RFLAGS_RESERVED;	/* IF, TF, VM clear */

	/*
	 * CR0/CR4/EFER are assigned, not OR-ed: the reset value of CR0 has
	 * CD|NW set, which would leave the guest running with caches off.
	 * NE: native FPU error reporting, required under VMX.
	 */
	sregs->cr0 = X86_CR0_PE | X86_CR0_ET | X86_CR0_NE;
	if (e->pvh) {
		/* PVH ABI (pvh.h): flat 32-bit protected mode, paging off,
		 * CR4 and EFER clear, %ebx -> hvm_start_info. */
		regs->rbx = e->rbx;
		sregs->cr3 = 0;
		sregs->cr4 = 0;
		sregs->efer = 0;
	} else {
		regs->rsi = e->rsi;
		regs->rsp = e->rsp;
		regs->rbp = e->rsp;
		sregs->cr0 |= X86_CR0_PG;
		sregs->cr3 = e->cr3;
		sregs->cr4 = X86_CR4_PAE;
		sregs->efer = EFER_LME | EFER_LMA;
	}

	flat_segment(&sregs->cs, X86_BOOT_CS, 0xb, !e->pvh);
	flat_segment(&sregs->ds, X86_BOOT_DS, 0x3, false);
	sregs->es = sregs->ds;
	sregs->fs = sregs->ds;
	sregs->gs = sregs->ds;
	sregs->ss = sregs->ds;

	/*
	 * VM entry checks want a usable busy TSS in TR even though Linux
	 * loads its own before it could ever use one; it matches GDT entry 4.
	 * Type 0xb is a busy TSS both as a 64-bit one and, for PVH (whose
	 * ABI asks for it: base 0, limit 0x67), as a 32-bit one.
	 */
	memset(&sregs->tr, 0, sizeof(sregs->tr));
	sregs->tr.base = 0;
	sregs->tr.limit = TSS_LIMIT;
	sregs->tr.selector = X86_BOOT_TSS;
	sregs->tr.type = 0xb;
	sregs->tr.present = 1;

	sregs->gdt.base = e->gdt_base;
	sregs->gdt.limit = e->gdt_limit;
	/* No IDT: interrupts stay off until the kernel installs its own. */
	sregs->idt.base = 0;
	sregs->idt.limit = 0;
}
