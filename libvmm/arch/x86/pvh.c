/* SPDX-License-Identifier: MIT */
/* Parsing a vmlinux for PVH boot (see pvh.h); guest RAM is boot.c's. */
#include <elf.h>
#include <errno.h>
#include <string.h>

#include "util/compiler.h"
#include "x86/e820.h"
#include "x86/pvh.h"

/* Note names are NUL-terminated and padded to 4 bytes (ELF gABI). */
#define NOTE_ALIGN(x) ALIGN_UP((uint64_t)(x), 4ull)

bool pvh_is_elf(const uint8_t *head, size_t len)
{
	return head && len >= SELFMAG && !memcmp(head, ELFMAG, SELFMAG);
}

/* [off, off + size) inside [0, limit), without wrapping. */
static bool inside(uint64_t off, uint64_t size, uint64_t limit)
{
	return off <= limit && size <= limit - off;
}

/* One program header: a note segment to search for the entry, or a load
 * segment, range-checked, added to @k. */
static int add_phdr(struct pvh_kernel *k, const Elf64_Phdr *ph,
		    uint64_t file_len, const char **why)
{
	if (ph->p_type == PT_NOTE) {
		if (!inside(ph->p_offset, ph->p_filesz, file_len)) {
			*why = "ELF note segment outside the file";
			return -EINVAL;
		}
		if (k->nr_notes < PVH_MAX_NOTES && ph->p_filesz) {
			k->notes[k->nr_notes].offset = ph->p_offset;
			k->notes[k->nr_notes].size =
				MIN(ph->p_filesz, (uint64_t)PVH_MAX_NOTE_SIZE);
			k->nr_notes++;
		}
		return 0;
	}
	if (ph->p_type != PT_LOAD || !ph->p_memsz)
		return 0;
	if (k->nr_segs == PVH_MAX_SEGS) {
		*why = "too many ELF load segments";
		return -EINVAL;
	}
	if (ph->p_filesz > ph->p_memsz ||
	    !inside(ph->p_offset, ph->p_filesz, file_len)) {
		*why = "ELF load segment outside the file or larger in the file than in memory";
		return -EINVAL;
	}
	/* Below 1 MiB live the boot structures (boot.h); a wrapping
	 * or 64-bit-only segment cannot be loaded at all. */
	if (ph->p_paddr < E820_HIGH_MEM ||
	    !inside(ph->p_paddr, ph->p_memsz, UINT32_MAX + 1ull)) {
		*why = "ELF load segment below 1 MiB or above 4 GiB";
		return -EINVAL;
	}
	k->segs[k->nr_segs++] = (struct pvh_seg){
		.offset = ph->p_offset, .filesz = ph->p_filesz,
		.memsz = ph->p_memsz, .paddr = ph->p_paddr,
	};
	k->start = MIN(k->start, ph->p_paddr);
	k->end = MAX(k->end, ph->p_paddr + ph->p_memsz);
	return 0;
}

int pvh_parse_head(const uint8_t *head, size_t len, uint64_t file_len,
		   struct pvh_kernel *k, const char **why)
{
	Elf64_Ehdr eh;
	int ret;

	memset(k, 0, sizeof(*k));
	k->start = UINT64_MAX;
	if (!pvh_is_elf(head, len) || len < sizeof(eh)) {
		*why = "not an ELF file";
		return -EINVAL;
	}
	memcpy(&eh, head, sizeof(eh)); /* the file carries no alignment */
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64) {
		*why = "not a 64-bit little-endian x86-64 ELF file";
		return -EINVAL;
	}
	if (eh.e_type != ET_EXEC) {
		*why = "ELF file is not an executable (ET_EXEC)";
		return -EINVAL;
	}
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || !eh.e_phnum ||
	    !inside(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr),
		    MIN((uint64_t)len, file_len))) {
		*why = "ELF program headers missing, malformed or too far into the file";
		return -EINVAL;
	}
	for (unsigned int i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, head + eh.e_phoff + (uint64_t)i * sizeof(ph),
		       sizeof(ph));
		ret = add_phdr(k, &ph, file_len, why);
		if (ret)
			return ret;
	}
	if (!k->nr_segs) {
		*why = "no ELF load segment";
		return -EINVAL;
	}
	if (!k->nr_notes) {
		*why = "no ELF notes, so no PVH entry point (a vmlinux built without CONFIG_PVH? boot the bzImage)";
		return -EINVAL;
	}
	return 0;
}

int pvh_find_entry(const uint8_t *note, size_t len, uint32_t *entry)
{
	uint64_t off = 0;

	/* Each note: namesz, descsz, type (4 bytes each), then the name and
	 * the descriptor, each padded to 4 bytes. */
	while (len - off >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		uint64_t name, desc, next;

		memcpy(&nh, note + off, sizeof(nh));
		name = off + sizeof(nh);
		desc = name + NOTE_ALIGN(nh.n_namesz);
		next = desc + NOTE_ALIGN(nh.n_descsz);
		if (desc > len || next > len)
			return -EINVAL; /* runs past the segment */
		if (nh.n_type == XEN_ELFNOTE_PHYS32_ENTRY && nh.n_namesz == 4 &&
		    !memcmp(note + name, "Xen", 4)) {
			/* Linux's is 4 bytes (.long); a 64-bit one must still
			 * be a 32-bit address. */
			uint64_t v = 0;

			if (nh.n_descsz != 4 && nh.n_descsz != 8)
				return -EINVAL;
			memcpy(&v, note + desc, nh.n_descsz);
			if (v > UINT32_MAX)
				return -EINVAL;
			*entry = (uint32_t)v;
			return 0;
		}
		off = next;
	}
	return -ENOENT;
}
