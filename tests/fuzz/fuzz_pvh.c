/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: PVH boot of a vmlinux (x86/pvh.h) through the real loader,
 * x86_load_files(), the path a user-supplied ELF kernel takes: ELF and
 * program headers, notes and the PVH entry, segment placement, the initrd,
 * hvm_start_info and the command line.
 *
 * Input: [ram u8][fix u8][initrd u16][cmdline len u16][cmdline bytes]
 *        [kernel file bytes...]
 * The kernel bytes become a file (a memfd opened through /proc/self/fd).
 * Bits of `fix` get the fuzzer past each check independently: 1 a valid
 * x86-64 ET_EXEC identity with program headers at 64; 2 at most 8 of them;
 * 4 every PT_LOAD address moved to 1..32 MiB.  The guest RAM is 2..64 MiB.
 * After a successful load the entry must be inside RAM and inside a loaded
 * segment, and hvm_start_info must carry its magic.
 */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "memory.h"
#include "x86/boot.h"
#include "x86/loader.h"
#include "x86/pvh.h"

/* The most guest RAM an input can ask for (ram below: 2 MiB + 255 x 256 KiB). */
#define RAM_MAX ((2u << 20) + 255u * (256u << 10))
#define KERNEL_MAX (1u << 20)

static uint8_t *guest_ram(void)
{
	static uint8_t *r;

	/* Heap (not mmap) so ASan sees any write past the end of RAM. */
	if (!r && posix_memalign((void **)&r, 4096, RAM_MAX))
		abort();
	return r;
}

/* A memfd holding @len bytes of @b; its /proc path in @path. */
static void as_file(const char *name, const uint8_t *b, size_t len,
		    char *path, size_t path_len, int *cache)
{
	if (*cache < 0) {
		*cache = memfd_create(name, MFD_CLOEXEC);
		if (*cache < 0)
			abort();
	}
	if (ftruncate(*cache, 0) || (len && pwrite(*cache, b, len, 0) != (ssize_t)len))
		abort();
	snprintf(path, path_len, "/proc/self/fd/%d", *cache);
}

int fuzz_pvh(const uint8_t *data, size_t size)
{
	static int kfd = -1, ifd = -1;
	struct fuzz_in in = { data, size };
	struct x86_boot_entry e;
	struct guest_mem mem;
	char kpath[64], ipath[64];
	uint8_t ram_sel = fi_u8(&in), fix = fi_u8(&in);
	uint16_t initrd_len = fi_u16(&in);
	size_t cl_len = fi_u16(&in) % 4096, klen;
	uint64_t ram = (2u << 20) + (uint64_t)ram_sel * (256u << 10);
	char *cmdline;
	uint8_t *k, *rd;

	fuzz_quiet_logs();
	cmdline = malloc(cl_len + 1);
	if (!cmdline)
		abort();
	fi_bytes(&in, cmdline, cl_len);
	cmdline[cl_len] = '\0';
	klen = fi_left(&in) < KERNEL_MAX ? fi_left(&in) : KERNEL_MAX;
	if ((fix & 1) && klen < sizeof(Elf64_Ehdr))
		klen = sizeof(Elf64_Ehdr);
	k = calloc(1, klen ? klen : 1);
	if (!k)
		abort();
	fi_bytes(&in, k, klen);
	if (fix & 1) {
		Elf64_Ehdr eh;

		memcpy(&eh, k, sizeof(eh));
		memcpy(eh.e_ident, ELFMAG, SELFMAG);
		eh.e_ident[EI_CLASS] = ELFCLASS64;
		eh.e_ident[EI_DATA] = ELFDATA2LSB;
		eh.e_type = ET_EXEC;
		eh.e_machine = EM_X86_64;
		eh.e_phentsize = sizeof(Elf64_Phdr);
		eh.e_phoff = sizeof(Elf64_Ehdr);
		if (fix & 2)
			eh.e_phnum = (uint16_t)(1 + eh.e_phnum % 8);
		memcpy(k, &eh, sizeof(eh));
		for (unsigned int i = 0; (fix & 4) && i < eh.e_phnum &&
			sizeof(eh) + (i + 1) * sizeof(Elf64_Phdr) <= klen; i++) {
			Elf64_Phdr ph;
			uint8_t *at = k + sizeof(eh) + i * sizeof(ph);

			memcpy(&ph, at, sizeof(ph));
			if (ph.p_type == PT_LOAD) {
				ph.p_paddr = (1ull << 20) + ph.p_paddr % (31u << 20);
				ph.p_memsz %= 4u << 20;
				memcpy(at, &ph, sizeof(ph));
			}
		}
	}
	rd = calloc(1, initrd_len ? initrd_len : 1);
	if (!rd)
		abort();
	as_file("fuzz_pvh_kernel", k, klen, kpath, sizeof(kpath), &kfd);
	as_file("fuzz_pvh_initrd", rd, initrd_len, ipath, sizeof(ipath), &ifd);
	guest_mem_init_buf(&mem, guest_ram(), ram);
	if (x86_load_files(&mem, kpath, initrd_len ? ipath : NULL, cmdline,
			   1 + ram_sel % 4, 0, &e) == 0 && e.pvh) {
		uint32_t magic = 0;
		struct kvm_regs regs;
		struct kvm_sregs sregs;

		if (!guest_mem_ptr(&mem, e.rip, 1) ||
		    guest_mem_read(&mem, e.rbx, &magic, sizeof(magic)) ||
		    magic != PVH_START_MAGIC)
			abort();
		memset(&sregs, 0, sizeof(sregs));
		x86_boot_regs(&e, &regs, &sregs);
	}
	free(rd);
	free(k);
	free(cmdline);
	return 0;
}

FUZZ_TARGET(fuzz_pvh)
