/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the bzImage parser and the x86 direct-boot loader, the parts
 * a user-supplied kernel, initrd and command line reach.
 *
 * Input: [ram u8][initrd u32][vcpus u8][fix u8][cmdline len u16]
 *        [cmdline bytes][kernel file bytes...]
 * The whole input is first parsed as a bzImage as is.  Then the kernel part
 * is parsed with optional fix-ups (bits of `fix`: signatures and protocol
 * version; setup size; syssize fitting the file; alignment and load
 * address) so the fuzzer gets past each check independently, and, if it
 * parses, laid into guest RAM of 1..64 MiB with x86_boot_setup(), with an
 * initrd of fuzzed size (none, small, around RAM size, or huge), the
 * command line and a vCPU count 0..255.  The initrd's bytes come from a
 * read-only zero mapping, so sizes up to 4 GiB are safe to pass.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fuzz.h"
#include "memory.h"
#include "x86/boot.h"
#include "x86/bzimage.h"

#define RAM_MAX (64u << 20)
#define INITRD_MAX (4ull << 30)
#define HDR_SETUP_SECTS 0x1f1
#define HDR_SYSSIZE 0x1f4
#define HDR_VERSION 0x206
#define HDR_INITRD_ADDR_MAX 0x22c
#define HDR_KERNEL_ALIGNMENT 0x230
#define HDR_RELOCATABLE 0x234
#define HDR_XLOADFLAGS 0x236
#define HDR_PREF_ADDRESS 0x258
#define MIN_FILE 0x800

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

static uint32_t get32(const uint8_t *p, size_t off)
{
	return (uint32_t)p[off] | (uint32_t)p[off + 1] << 8 |
	       (uint32_t)p[off + 2] << 16 | (uint32_t)p[off + 3] << 24;
}

static uint8_t *guest_ram(void)
{
	static uint8_t *r;

	/* Heap (not mmap) so ASan sees any write past the end of RAM. */
	if (!r && posix_memalign((void **)&r, 4096, RAM_MAX))
		abort();
	return r;
}

static const uint8_t *zero_initrd(void)
{
	static void *z;

	if (!z) {
		z = mmap(NULL, INITRD_MAX, PROT_READ,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (z == MAP_FAILED)
			abort();
	}
	return z;
}

static size_t norm_initrd(uint32_t v, uint64_t ram)
{
	switch (v >> 30) {
	case 0:
		return 0;
	case 1:
		return v % (64u << 10);
	case 2:
		return ram - (4u << 20) + v % (8u << 20); /* around the top */
	default:
		return v; /* up to 4 GiB */
	}
}

int fuzz_bzimage(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct bzimage bz;
	struct x86_boot_config cfg = { 0 };
	struct x86_boot_entry e;
	struct guest_mem mem;
	const char *why;
	uint8_t ram_sel = fi_u8(&in), vcpus, fix;
	uint32_t initrd_sel = fi_u32(&in);
	uint64_t ram = (1u << 20) + (uint64_t)ram_sel * (256u << 10);
	size_t cl_len, klen;
	char *cmdline;
	uint8_t *k;

	fuzz_quiet_logs();
	(void)bzimage_parse(data, size, &bz, &why);

	if (ram > RAM_MAX)
		ram = RAM_MAX;
	vcpus = fi_u8(&in);
	fix = fi_u8(&in);
	cl_len = fi_u16(&in) % 4096;
	cmdline = malloc(cl_len + 1);
	if (!cmdline)
		abort();
	fi_bytes(&in, cmdline, cl_len);
	cmdline[cl_len] = '\0';

	klen = fi_left(&in);
	if (fix && klen < MIN_FILE)
		klen = MIN_FILE;
	k = malloc(klen ? klen : 1);
	if (!k)
		abort();
	fi_bytes(&in, k, klen);
	if (fix & 1) { /* signatures, protocol 2.15, 64-bit entry */
		memcpy(k + 0x202, "HdrS", 4);
		put16(k, 0x1fe, 0xAA55);
		put16(k, HDR_VERSION, 0x020f);
		k[HDR_XLOADFLAGS] |= 1;
	}
	if (fix & 2) { /* one setup sector, header inside it */
		k[HDR_SETUP_SECTS] = 1 + k[HDR_SETUP_SECTS] % 2;
		k[0x201] = (uint8_t)(k[0x201] % 0x60);
	}
	if (fix & 4) { /* syssize fits the file */
		size_t setup = (size_t)(k[HDR_SETUP_SECTS] ? k[HDR_SETUP_SECTS] : 4) * 512 + 512;

		if (klen > setup + 16)
			put32(k, HDR_SYSSIZE,
			      1 + get32(k, HDR_SYSSIZE) % (uint32_t)((klen - setup) / 16));
	}
	if (fix & 8) { /* 2 MiB alignment, relocatable, load at 1..16 MiB */
		put32(k, HDR_KERNEL_ALIGNMENT, 0x200000);
		k[HDR_RELOCATABLE] = 1;
		put32(k, HDR_PREF_ADDRESS, (1u + k[HDR_PREF_ADDRESS] % 16) << 20);
		put32(k, HDR_PREF_ADDRESS + 4, 0);
	}
	if (fix & 0x10) /* initrd below 4 GiB, anywhere */
		put32(k, HDR_INITRD_ADDR_MAX, 0xffffffffu);

	if (bzimage_parse(k, klen, &bz, &why) == 0) {
		struct kvm_regs regs;
		struct kvm_sregs sregs;

		guest_mem_init_buf(&mem, guest_ram(), ram);
		cfg.kernel = &bz;
		cfg.initrd_size = norm_initrd(initrd_sel, ram);
		cfg.initrd = cfg.initrd_size || (fix & 0x20) ? zero_initrd() : NULL;
		cfg.cmdline = fix & 0x40 ? NULL : cmdline;
		cfg.nr_vcpus = vcpus;
		if (x86_boot_setup(&mem, &cfg, &e) == 0) {
			memset(&sregs, 0, sizeof(sregs));
			x86_boot_regs(&e, &regs, &sregs);
			/* The entry point is the loaded kernel, inside RAM. */
			if (!guest_mem_ptr(&mem, e.kernel_gpa, bz.kernel_size) ||
			    (e.initrd_gpa &&
			     !guest_mem_ptr(&mem, e.initrd_gpa, cfg.initrd_size)))
				abort();
		}
	}
	free(k);
	free(cmdline);
	return 0;
}

FUZZ_TARGET(fuzz_bzimage)
