/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the arm64 boot path a user's kernel, initrd, command line,
 * vCPU count and RAM size reach (libvmm/arch/arm64): the Image header
 * (arm64_image_parse), its placement in RAM (arm64_image_place), the
 * loader through real files (arm64_load_files, memfds opened through
 * /proc/self/fd) and the device tree (arm64_fdt_write).
 *
 * Input (little-endian; reading past the end yields zeroes):
 *   [ram u8 (+u16|u64)]   size: 0..63 MiB, 1..64 MiB minus a few bytes,
 *                         1..64 GiB, or any u64
 *   [base u8 (+u32|u64)]  0x4000_0000 (virt.c's), 2 MiB-aligned, unaligned
 *                         above 1 GiB, or any u64
 *   [nr_cpus u16]         % 4201: 0, the 4096 limit and beyond
 *   [flags u8]            1 MPIDR overrides, 2 no command line, 4 fuzzed
 *                         device ranges, 8 run the loader, 0x10 fix the
 *                         magic and endianness, 0x20 fix image_size,
 *                         0x40 fuzzed blob buffer size, 0x80 fix text_offset
 *   [cmdline len u16][bytes]  len % 2560: past VMM_MAX_CMDLINE
 *   [initrd u8][fields]   device tree's initrd: none, inside RAM, across its
 *                         end, below it, any, or where the loader put it;
 *                         then [u32] the loader's initrd file size class
 *   [if 1: n u8, n x (cpu u16, mode u8, value u64)]  MPIDR overrides
 *   [if 4: 6 x (sel u8 [fields]), uart_spi u16, last_bus u16]
 *   [if 0x40: sel u8, u32]  blob buffer: 2 MiB, small, or "bigger" (the
 *                         real buffer is 2 MiB: the writer must cap)
 *   [file u8 (+u32|u64)]  the kernel file's size: its bytes, a sparse tail,
 *                         or any u64 (header parse only)
 *   [Image bytes...]      at most 1 MiB
 *
 * Checked beyond the sanitizers (fail(): a message and abort()):
 * every result is a documented one and matches an independent oracle in
 * 128-bit arithmetic (parse: -ENOEXEC exactly without the magic; place:
 * success exactly when the image fits, at the lowest 2 MiB-aligned base
 * plus text_offset, inside RAM; the loader: the expected result for the
 * layout loader.h describes, the kernel's bytes in RAM, the initrd between
 * the kernel and the device tree's block); a written blob passes
 * fdt_check_full(), is at most ARM64_FDT_MAX_SIZE and the buffer given,
 * is -ENOSPC exactly when a 2 MiB write is bigger than the buffer, and
 * says what the config said (/chosen bootargs, initrd, stdout-path, RAM,
 * one cpu node per vCPU with its MPIDR and no two alike, phandles).
 */
#include <errno.h>
#include <libfdt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arm64/fdt.h"
#include "arm64/gic.h"
#include "arm64/image.h"
#include "arm64/loader.h"
#include "fuzz.h"
#include "memory.h"
#include "vmm/vmm.h"

#define MiB (1ull << 20)
#define RAM_MAX (64 * MiB)	 /* the loader's guest RAM */
#define KERNEL_MAX (1u << 20)	 /* Image bytes taken from the input */
#define CPUS_MAX 4200u
#define CMDLINE_MAX (VMM_MAX_CMDLINE + 513)
#define ALIGN2M ARM64_IMAGE_BASE_ALIGN

/* The guest-physical map of libvmm/machine/arm64/virt.c. */
#define VIRT_GICD_BASE 0x08000000ull
#define VIRT_GITS_BASE 0x08080000ull
#define VIRT_UART_BASE 0x09000000ull
#define VIRT_UART_SIZE 0x1000ull
#define VIRT_GICR_BASE 0x0a000000ull
#define VIRT_PCI_MMIO_BASE 0x10000000ull
#define VIRT_PCI_MMIO_SIZE 0x2f000000ull
#define VIRT_ECAM_BASE 0x3f000000ull
#define VIRT_ECAM_BUS_SIZE MiB
#define VIRT_RAM_BASE 0x40000000ull

#define MPIDR_AFF3 (0xffull << 32)
#define MPIDR_AFF_MASK 0xff00ffffffull
#define MPIDR_RES1 (1ull << 31) /* what KVM_GET_ONE_REG gives besides */

typedef unsigned __int128 u128;

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_arm64_boot: %s\n", what);
	abort();
}

static void *heap_buf(uint8_t **cache, size_t len)
{
	/* Heap (not mmap) so ASan sees any access past the end. */
	if (!*cache && posix_memalign((void **)cache, 4096, len))
		abort();
	return *cache;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A memfd with @len bytes of @b, then zeroes up to @size; its /proc path. */
static void as_file(const char *name, const uint8_t *b, size_t len,
		    uint64_t size, char *path, size_t path_len, int *cache)
{
	if (*cache < 0) {
		*cache = memfd_create(name, MFD_CLOEXEC);
		if (*cache < 0)
			abort();
	}
	if (ftruncate(*cache, 0) ||
	    (len && pwrite(*cache, b, len, 0) != (ssize_t)len) ||
	    ftruncate(*cache, (off_t)size))
		abort();
	snprintf(path, path_len, "/proc/self/fd/%d", *cache);
}

/* ---- decoding ---------------------------------------------------------- */

static uint64_t dec_ram_size(struct fuzz_in *in)
{
	uint8_t s = fi_u8(in);
	uint64_t n = s & 63;

	switch (s >> 6) {
	case 0:
		return n * MiB;
	case 1:
		return (n + 1) * MiB - fi_u16(in);
	case 2:
		return (n + 1) << 30;
	default:
		return fi_u64(in);
	}
}

static uint64_t dec_ram_base(struct fuzz_in *in)
{
	uint8_t s = fi_u8(in);

	switch (s & 3) {
	case 0:
		return VIRT_RAM_BASE;
	case 1:
		return (uint64_t)(s >> 2) * ALIGN2M;
	case 2:
		return VIRT_RAM_BASE + fi_u32(in);
	default:
		return fi_u64(in);
	}
}

struct input {
	uint64_t ram_base, ram_size;
	unsigned int nr_cpus;
	uint8_t flags;
	char *cmdline;
	uint8_t initrd_sel;
	struct arm64_fdt_range initrd;
	uint64_t loader_initrd; /* file size; UINT64_MAX: none */
	uint64_t *mpidr;	/* NULL: KVM's default numbering */
	size_t fdt_size;
	uint64_t file_size;
	uint8_t *k;
	size_t klen;
};

#define F_MPIDR 0x01
#define F_NO_CMDLINE 0x02
#define F_RANGES 0x04
#define F_LOADER 0x08
#define F_FIX_MAGIC 0x10
#define F_FIX_SIZE 0x20
#define F_FDT_SIZE 0x40
#define F_FIX_TEXT 0x80

static void dec_initrd(struct fuzz_in *in, struct input *x)
{
	uint64_t base = x->ram_base, size = x->ram_size, off;
	uint32_t l;

	x->initrd_sel = fi_u8(in) % 6;
	switch (x->initrd_sel) {
	case 1: /* inside RAM */
		off = size ? fi_u32(in) % size : 0;
		x->initrd.base = base + off;
		x->initrd.size = size ? 1 + fi_u32(in) % (size - off) : 1;
		break;
	case 2: /* across the end of RAM, or just inside */
		x->initrd.base = base + size - fi_u16(in);
		x->initrd.size = fi_u32(in);
		break;
	case 3: /* below RAM, maybe reaching in */
		x->initrd.base = base - fi_u32(in);
		x->initrd.size = fi_u32(in);
		break;
	case 4:
		x->initrd.base = fi_u64(in);
		x->initrd.size = fi_u64(in);
		break;
	default: /* 0: none; 5: the loader's, once it ran */
		break;
	}
	l = fi_u32(in);
	switch (l >> 30) {
	case 0:
		x->loader_initrd = UINT64_MAX;
		break;
	case 1:
		x->loader_initrd = l & 0xffff;
		break;
	case 2:
		x->loader_initrd = l % (RAM_MAX + 1);
		break;
	default:
		x->loader_initrd = 0; /* an empty file */
		break;
	}
}

static void dec_mpidr(struct fuzz_in *in, struct input *x)
{
	unsigned int n = fi_u8(in);

	x->mpidr = calloc(x->nr_cpus ? x->nr_cpus : 1, sizeof(*x->mpidr));
	if (!x->mpidr)
		abort();
	for (unsigned int i = 0; i < x->nr_cpus; i++)
		x->mpidr[i] = arm64_fdt_default_mpidr(i) | MPIDR_RES1;
	while (n--) {
		unsigned int cpu = fi_u16(in);
		uint8_t mode = fi_u8(in);
		uint64_t v = fi_u64(in);

		if (!x->nr_cpus)
			continue;
		cpu %= x->nr_cpus;
		if (mode & 1) /* as is: Aff3, MT, U, anything */
			x->mpidr[cpu] = v;
		else if (mode & 2) /* another vCPU's */
			x->mpidr[cpu] = x->mpidr[v % x->nr_cpus];
		else /* Aff0..Aff2 only */
			x->mpidr[cpu] = (v & 0xffffff) | MPIDR_RES1;
	}
}

static void dec_ranges(struct fuzz_in *in, struct arm64_fdt_config *c)
{
	struct arm64_fdt_range *r[] = { &c->gicd, &c->gicr, &c->its,
					&c->uart, &c->ecam, &c->pci_mmio };
	const struct arm64_fdt_range *all[] = { &c->ram, &c->gicd, &c->gicr,
						&c->its, &c->uart, &c->ecam,
						&c->pci_mmio };

	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		uint8_t s = fi_u8(in);

		switch (s & 3) {
		case 1: /* anywhere */
			r[i]->base = fi_u64(in);
			r[i]->size = fi_u32(in);
			break;
		case 2: /* on top of another one */
			*r[i] = *all[(s >> 2) % 7];
			r[i]->base += fi_u16(in);
			break;
		case 3: /* moved by pages */
			r[i]->base += (uint64_t)fi_u16(in) << 12;
			break;
		default:
			break;
		}
	}
	c->uart_spi = fi_u16(in);
	c->last_bus = fi_u16(in) % 300;
}

static void dec_fdt_size(struct fuzz_in *in, struct input *x)
{
	uint8_t s;
	uint32_t v;

	x->fdt_size = ARM64_FDT_MAX_SIZE;
	if (!(x->flags & F_FDT_SIZE))
		return;
	s = fi_u8(in);
	v = fi_u32(in);
	switch (s % 3) {
	case 1: /* small: -ENOSPC or just enough */
		x->fdt_size = v % (64u << 10);
		break;
	case 2: /* claims more than the 2 MiB the blob may use */
		x->fdt_size = ARM64_FDT_MAX_SIZE + (size_t)v;
		break;
	default:
		break;
	}
}

static void dec_kernel(struct fuzz_in *in, struct input *x)
{
	uint8_t s = fi_u8(in);
	uint64_t extra = s % 3 == 1 ? fi_u32(in) : s % 3 == 2 ? fi_u64(in) : 0;
	uint8_t *h;

	x->klen = fi_left(in) < KERNEL_MAX ? fi_left(in) : KERNEL_MAX;
	if ((x->flags & (F_FIX_MAGIC | F_FIX_SIZE | F_FIX_TEXT)) &&
	    x->klen < ARM64_IMAGE_HEADER_SIZE)
		x->klen = ARM64_IMAGE_HEADER_SIZE;
	x->k = calloc(1, x->klen ? x->klen : 1);
	if (!x->k)
		abort();
	fi_bytes(in, x->k, x->klen);
	x->file_size = s % 3 == 1 ? x->klen + extra : s % 3 == 2 ? extra : x->klen;
	h = x->k;
	if (x->flags & F_FIX_MAGIC) {
		memcpy(h + 56, "ARM\x64", 4);
		h[24] &= (uint8_t)~1; /* little-endian */
	}
	if (x->flags & F_FIX_SIZE) { /* odd: 0 (before 3.17), else fits */
		uint64_t v = le64(h + 16);

		put64(h + 16, v & 1 ? 0 : x->file_size + (v >> 1) % (16 * MiB));
	}
	if (x->flags & F_FIX_TEXT)
		put64(h + 8, le64(h + 8) % ALIGN2M);
}

/* ---- oracles ----------------------------------------------------------- */

/* Where booting.rst puts @img in RAM, or false. */
static bool expect_place(const struct arm64_image *img, uint64_t ram_base,
			 uint64_t ram_size, uint64_t *gpa)
{
	u128 end = (u128)ram_base + ram_size;
	u128 base = ((u128)ram_base + ALIGN2M - 1) & ~(u128)(ALIGN2M - 1);

	if (!img->anywhere && base != ram_base)
		return false;
	if (base + img->text_offset + img->image_size > end)
		return false;
	*gpa = (uint64_t)(base + img->text_offset);
	return true;
}

static void check_place(const struct arm64_image *img, uint64_t ram_base,
			uint64_t ram_size, int *rc_out, uint64_t *gpa_out)
{
	uint64_t gpa = 0, want = 0;
	int rc = arm64_image_place(img, ram_base, ram_size, &gpa);
	bool fits = expect_place(img, ram_base, ram_size, &want);
	bool wraps = (u128)ram_base + ram_size > UINT64_MAX;

	if (rc && rc != -ENOSPC && !(rc == -EINVAL && wraps))
		fail("arm64_image_place: undocumented error");
	if (rc == 0 && !fits)
		fail("arm64_image_place: placed an image that does not fit in RAM");
	if (rc == 0 && gpa != want)
		fail("arm64_image_place: not the lowest 2 MiB-aligned base + text_offset");
	if (rc == 0 && ((gpa - img->text_offset) % ALIGN2M ||
			gpa - img->text_offset < ram_base ||
			(u128)gpa + img->image_size > (u128)ram_base + ram_size))
		fail("arm64_image_place: image not aligned or not in RAM");
	if (rc && fits && !wraps)
		fail("arm64_image_place: refused an image that fits");
	*rc_out = rc;
	*gpa_out = gpa;
}

static bool range_fine(const struct arm64_fdt_range *r)
{
	/* A range must be non-empty and end below 2^64 (fdt.h). */
	return r->size && (u128)r->base + r->size <= UINT64_MAX;
}

static bool ranges_meet(const struct arm64_fdt_range *a,
			const struct arm64_fdt_range *b)
{
	return (u128)a->base < (u128)b->base + b->size &&
	       (u128)b->base < (u128)a->base + a->size;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* What fdt.h documents as -EINVAL. */
static bool expect_config_ok(const struct arm64_fdt_config *c)
{
	const struct arm64_fdt_range *r[] = { &c->ram, &c->gicd, &c->gicr,
					      &c->its, &c->uart, &c->ecam,
					      &c->pci_mmio };

	if (!c->nr_cpus || c->nr_cpus > ARM64_FDT_MAX_CPUS)
		return false;
	for (size_t i = 0; i < 7; i++) {
		if (!range_fine(r[i]))
			return false;
		for (size_t j = 0; j < i; j++)
			if (ranges_meet(r[i], r[j]))
				return false;
	}
	if (c->last_bus > 255 || c->ecam.size < ((u128)c->last_bus + 1) * MiB)
		return false;
	if (c->initrd.size &&
	    (!range_fine(&c->initrd) || c->initrd.base < c->ram.base ||
	     (u128)c->initrd.base + c->initrd.size > (u128)c->ram.base + c->ram.size))
		return false;
	for (unsigned int i = 0; c->mpidr && i < c->nr_cpus; i++)
		if (c->mpidr[i] & MPIDR_AFF3)
			return false;
	if (c->mpidr) { /* no two vCPUs with one MPIDR (as the tree says it) */
		uint64_t *aff = malloc(c->nr_cpus * sizeof(*aff));
		bool dup = false;

		if (!aff)
			abort();
		for (unsigned int i = 0; i < c->nr_cpus; i++)
			aff[i] = c->mpidr[i] & MPIDR_AFF_MASK;
		qsort(aff, c->nr_cpus, sizeof(*aff), cmp_u64);
		for (unsigned int i = 1; i < c->nr_cpus && !dup; i++)
			dup = aff[i] == aff[i - 1];
		free(aff);
		if (dup)
			return false;
	}
	return true;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Big-endian cells at 4-byte alignment (property values are no more). */
static uint64_t be64_at(const void *p)
{
	fdt64_t v;

	memcpy(&v, p, sizeof(v));
	return fdt64_to_cpu(v);
}

static uint64_t prop_u64(const void *fdt, int node, const char *name, int *ok)
{
	int len;
	const void *p = fdt_getprop(fdt, node, name, &len);

	if (!p || len != 8) {
		*ok = 0;
		return 0;
	}
	return be64_at(p);
}

/* The blob says what @c said. */
static void check_blob(const void *fdt, long n, const struct arm64_fdt_config *c)
{
	char name[64];
	const uint8_t *reg;
	const char *s;
	uint32_t *regs;
	unsigned int count = 0;
	int node, len, ok = 1;

	if (n <= 0 || (unsigned long)n > ARM64_FDT_MAX_SIZE ||
	    fdt_totalsize(fdt) != (uint32_t)n)
		fail("arm64_fdt_write: size not the blob's, or over 2 MiB");
	if (fdt_check_full(fdt, (size_t)n))
		fail("arm64_fdt_write: fdt_check_full() refuses the blob");

	node = fdt_path_offset(fdt, "/chosen");
	if (node < 0)
		fail("no /chosen");
	s = fdt_getprop(fdt, node, "bootargs", &len);
	if (c->cmdline ? !s || len != (int)strlen(c->cmdline) + 1 ||
				 strcmp(s, c->cmdline)
		       : s != NULL)
		fail("/chosen bootargs is not the command line given");
	if (c->initrd.size) {
		if (prop_u64(fdt, node, "linux,initrd-start", &ok) != c->initrd.base ||
		    prop_u64(fdt, node, "linux,initrd-end", &ok) !=
			    c->initrd.base + c->initrd.size || !ok)
			fail("/chosen initrd is not the one given");
	} else if (fdt_getprop(fdt, node, "linux,initrd-start", NULL)) {
		fail("/chosen has an initrd none was given");
	}
	s = fdt_getprop(fdt, node, "stdout-path", NULL);
	if (!s || fdt_path_offset(fdt, s) < 0)
		fail("/chosen stdout-path names no node");

	snprintf(name, sizeof(name), "/memory@%llx", (unsigned long long)c->ram.base);
	node = fdt_path_offset(fdt, name);
	reg = node < 0 ? NULL : fdt_getprop(fdt, node, "reg", &len);
	if (!reg || len != 16 || be64_at(reg) != c->ram.base ||
	    be64_at(reg + 8) != c->ram.size)
		fail("/memory is not the RAM given");

	if (fdt_node_offset_by_phandle(fdt, 1) < 0 ||
	    fdt_node_offset_by_phandle(fdt, 2) < 0)
		fail("the GIC's or the ITS's phandle is missing");

	/* One cpu node per vCPU, in order, with its MPIDR; none alike. */
	node = fdt_path_offset(fdt, "/cpus");
	if (node < 0)
		fail("no /cpus");
	regs = calloc(c->nr_cpus, sizeof(*regs));
	if (!regs)
		abort();
	for (int cpu = fdt_first_subnode(fdt, node); cpu >= 0;
	     cpu = fdt_next_subnode(fdt, cpu)) {
		const fdt32_t *r = fdt_getprop(fdt, cpu, "reg", &len);
		uint64_t want;

		if (count >= c->nr_cpus)
			fail("more cpu nodes than vCPUs");
		want = (c->mpidr ? c->mpidr[count] : arm64_fdt_default_mpidr(count)) &
		       MPIDR_AFF_MASK;
		if (!r || len != 4 || fdt32_to_cpu(*r) != want)
			fail("a cpu node's reg is not its vCPU's MPIDR");
		regs[count++] = fdt32_to_cpu(*r);
	}
	if (count != c->nr_cpus)
		fail("fewer cpu nodes than vCPUs");
	qsort(regs, count, sizeof(*regs), cmp_u32);
	for (unsigned int i = 1; i < count; i++)
		if (regs[i] == regs[i - 1])
			fail("two cpu nodes with the same MPIDR (and node name)");
	free(regs);
}

/* ---- the loader -------------------------------------------------------- */

static int expect_load(const struct input *x, int parse_rc,
		       const struct arm64_image *img)
{
	uint64_t gpa, end, fdt, initrd;

	if (x->ram_size < 2 * ALIGN2M)
		return -ENOSPC;
	if (parse_rc)
		return -EINVAL; /* -ENOEXEC becomes vmm_start()'s -EINVAL */
	if (!expect_place(img, x->ram_base, x->ram_size, &gpa))
		return -ENOSPC;
	end = gpa + img->image_size;
	fdt = (x->ram_base + x->ram_size - ARM64_FDT_MAX_SIZE) & ~(ALIGN2M - 1);
	if (end > fdt)
		return -ENOSPC;
	if (x->loader_initrd == UINT64_MAX)
		return 0;
	initrd = (end + 4095) & ~4095ull;
	return x->loader_initrd > fdt - initrd ? -ENOSPC : 0;
}

static void run_loader(const struct input *x, int parse_rc,
		       const struct arm64_image *img, struct arm64_boot *b,
		       bool *loaded)
{
	static uint8_t *ram;
	static int kfd = -1, ifd = -1;
	struct guest_mem mem;
	char kpath[64], ipath[64];
	bool with_initrd = x->loader_initrd != UINT64_MAX;
	uint8_t *p;
	int rc, want;

	*loaded = false;
	if (x->ram_size > RAM_MAX || (u128)x->ram_base + x->ram_size > UINT64_MAX ||
	    x->file_size > RAM_MAX + KERNEL_MAX)
		return;
	guest_mem_init_buf(&mem, heap_buf(&ram, RAM_MAX), x->ram_size);
	mem.regions[0].gpa = x->ram_base; /* the machine's RAM base */
	as_file("fuzz_arm64_kernel", x->k, x->klen, x->file_size, kpath,
		sizeof(kpath), &kfd);
	if (with_initrd)
		as_file("fuzz_arm64_initrd", (const uint8_t *)"initrd", 6 < x->loader_initrd ? 6 : x->loader_initrd,
			x->loader_initrd, ipath, sizeof(ipath), &ifd);
	rc = arm64_load_files(&mem, x->ram_base, kpath, with_initrd ? ipath : NULL, b);
	want = expect_load(x, parse_rc, img);
	if (rc != want) {
		fprintf(stderr, "fuzz_arm64_boot: loader %d, expected %d\n", rc, want);
		fail("arm64_load_files: not the documented result");
	}
	if (rc)
		return;
	if (b->entry - img->text_offset < x->ram_base ||
	    (b->entry - img->text_offset) % ALIGN2M ||
	    b->kernel_end != b->entry + img->image_size ||
	    b->kernel_end > b->fdt_gpa || b->fdt_gpa % ALIGN2M ||
	    !guest_mem_ptr(&mem, b->fdt_gpa, ARM64_FDT_MAX_SIZE))
		fail("arm64_load_files: kernel or device tree block misplaced");
	p = guest_mem_ptr(&mem, b->entry, x->file_size);
	if (!p || memcmp(p, x->k, x->klen < x->file_size ? x->klen : x->file_size))
		fail("arm64_load_files: the kernel's bytes are not in RAM");
	if (with_initrd) {
		if (b->initrd_size != x->loader_initrd || b->initrd_gpa < b->kernel_end ||
		    b->initrd_gpa % 4096 || b->initrd_gpa + b->initrd_size > b->fdt_gpa)
			fail("arm64_load_files: initrd misplaced");
		p = guest_mem_ptr(&mem, b->initrd_gpa, b->initrd_size);
		if (!p || memcmp(p, "initrd", 6 < b->initrd_size ? 6 : b->initrd_size))
			fail("arm64_load_files: the initrd's bytes are not in RAM");
	} else if (b->initrd_gpa || b->initrd_size) {
		fail("arm64_load_files: an initrd from nowhere");
	}
	*loaded = true;
}

/* ---- the target -------------------------------------------------------- */

int fuzz_arm64_boot(const uint8_t *data, size_t size)
{
	static uint8_t *fdt_buf;
	struct fuzz_in in = { data, size };
	struct input x = { 0 };
	struct arm64_fdt_config c;
	struct arm64_image img = { 0 };
	struct arm64_boot boot = { 0 };
	bool loaded = false;
	size_t cl_len;
	int parse_rc, rc;
	uint64_t gpa;
	long n;

	fuzz_quiet_logs();
	x.ram_size = dec_ram_size(&in);
	x.ram_base = dec_ram_base(&in);
	x.nr_cpus = fi_u16(&in) % (CPUS_MAX + 1);
	x.flags = fi_u8(&in);
	cl_len = fi_u16(&in) % CMDLINE_MAX;
	x.cmdline = malloc(cl_len + 1);
	if (!x.cmdline)
		abort();
	fi_bytes(&in, x.cmdline, cl_len);
	x.cmdline[cl_len] = '\0';
	dec_initrd(&in, &x);
	if (x.flags & F_MPIDR)
		dec_mpidr(&in, &x);

	c = (struct arm64_fdt_config){
		.nr_cpus = x.nr_cpus,
		.mpidr = x.mpidr,
		.ram = { x.ram_base, x.ram_size },
		.cmdline = x.flags & F_NO_CMDLINE ? NULL : x.cmdline,
		.gicd = { VIRT_GICD_BASE, ARM64_GICD_SIZE },
		.gicr = { VIRT_GICR_BASE, ARM64_GICR_SIZE_PER_CPU * x.nr_cpus },
		.its = { VIRT_GITS_BASE, ARM64_GITS_SIZE },
		.uart = { VIRT_UART_BASE, VIRT_UART_SIZE },
		.uart_spi = 1,
		.uart_clock_hz = 1843200,
		.ecam = { VIRT_ECAM_BASE, VIRT_ECAM_BUS_SIZE },
		.last_bus = 0,
		.pci_mmio = { VIRT_PCI_MMIO_BASE, VIRT_PCI_MMIO_SIZE },
	};
	if (x.flags & F_RANGES)
		dec_ranges(&in, &c);
	dec_fdt_size(&in, &x);
	dec_kernel(&in, &x);

	/* The Image header: a documented answer, -ENOEXEC exactly without
	 * the magic. */
	parse_rc = arm64_image_parse(x.k, x.klen, x.file_size, &img);
	if (parse_rc && parse_rc != -ENOEXEC && parse_rc != -EINVAL)
		fail("arm64_image_parse: undocumented error");
	if ((parse_rc == -ENOEXEC) !=
	    (x.klen < ARM64_IMAGE_HEADER_SIZE || x.file_size < ARM64_IMAGE_HEADER_SIZE ||
	     memcmp(x.k + 56, "ARM\x64", 4)))
		fail("arm64_image_parse: -ENOEXEC is for a missing magic");
	if (!parse_rc && (img.text_offset >= ALIGN2M || img.image_size < x.file_size))
		fail("arm64_image_parse: text_offset or image_size out of range");
	if (!parse_rc) {
		struct arm64_image other = img;

		check_place(&img, x.ram_base, x.ram_size, &rc, &gpa);
		other.anywhere = !other.anywhere;
		check_place(&other, x.ram_base, x.ram_size, &rc, &gpa);
	}

	if (x.flags & F_LOADER)
		run_loader(&x, parse_rc, &img, &boot, &loaded);

	/* The device tree. */
	if (x.initrd_sel == 5 && loaded)
		c.initrd = (struct arm64_fdt_range){ boot.initrd_gpa, boot.initrd_size };
	else if (x.initrd_sel != 5)
		c.initrd = x.initrd;
	heap_buf(&fdt_buf, ARM64_FDT_MAX_SIZE);
	n = arm64_fdt_write(fdt_buf, x.fdt_size, &c);
	if (n < 0 && n != -EINVAL && n != -ENOSPC)
		fail("arm64_fdt_write: undocumented error");
	if ((n == -EINVAL) != !expect_config_ok(&c))
		fail("arm64_fdt_write: -EINVAL is not for the documented configs");
	if (n > 0 && (size_t)n > x.fdt_size)
		fail("arm64_fdt_write: a blob bigger than its buffer");
	if (n > 0)
		check_blob(fdt_buf, n, &c);
	if ((n > 0 || n == -ENOSPC) && x.fdt_size < ARM64_FDT_MAX_SIZE) {
		/* -ENOSPC exactly when the whole blob is bigger. */
		long full = arm64_fdt_write(fdt_buf, ARM64_FDT_MAX_SIZE, &c);

		if (full <= 0)
			fail("arm64_fdt_write: a config fails in 2 MiB");
		if ((n == -ENOSPC) != ((size_t)full > x.fdt_size) ||
		    (n > 0 && n != full))
			fail("arm64_fdt_write: -ENOSPC with room, or a different blob");
		check_blob(fdt_buf, full, &c);
	} else if (n == -ENOSPC) {
		fail("arm64_fdt_write: -ENOSPC in 2 MiB");
	}

	free(x.k);
	free(x.mpidr);
	free(x.cmdline);
	return 0;
}

FUZZ_TARGET(fuzz_arm64_boot)
