/* SPDX-License-Identifier: MIT */
/* Boot images from files into guest RAM (see loader.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootfile.h"
#include "log.h"
#include "x86/bzimage.h"
#include "x86/loader.h"
#include "x86/pvh.h"

/*
 * A vmlinux for PVH: program headers from @head (the file's first @n of
 * @klen bytes), the entry from the notes, each read with pread into a
 * bounded buffer.  0 or -errno, with a message naming @kernel.
 */
static int parse_pvh(const char *kernel, int fd, const uint8_t *head,
		     size_t n, uint64_t klen, struct pvh_kernel *k)
{
	const char *why = NULL;
	uint8_t *note;
	int ret = -ENOENT;

	if (pvh_parse_head(head, n, klen, k, &why)) {
		vmm_err("kernel %s: %s", kernel, why);
		return -EINVAL;
	}
	note = malloc(PVH_MAX_NOTE_SIZE);
	if (!note)
		return -ENOMEM;
	for (unsigned int i = 0; i < k->nr_notes && ret == -ENOENT; i++) {
		ssize_t got = pread(fd, note, k->notes[i].size, (off_t)k->notes[i].offset);

		if (got != (ssize_t)k->notes[i].size) {
			vmm_err("kernel %s: cannot read its ELF notes%s%s", kernel,
				got < 0 ? ": " : " (file shrank)",
				got < 0 ? strerror(errno) : "");
			free(note);
			return -EIO;
		}
		ret = pvh_find_entry(note, (size_t)got, &k->entry);
	}
	free(note);
	if (ret == -ENOENT) {
		vmm_err("kernel %s: ELF file without a PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY): a vmlinux built without CONFIG_PVH? boot the bzImage",
			kernel);
		return -EINVAL;
	}
	if (ret) {
		vmm_err("kernel %s: malformed ELF note", kernel);
		return -EINVAL;
	}
	for (unsigned int i = 0; i < k->nr_segs; i++)
		if (k->entry >= k->segs[i].paddr &&
		    k->entry - k->segs[i].paddr < k->segs[i].filesz)
			return 0;
	vmm_err("kernel %s: PVH entry 0x%x is not in a loaded segment", kernel,
		k->entry);
	return -EINVAL;
}

/*
 * The kernel's header is parsed from a copy of its head, read with pread:
 * see loader.h.
 */
int x86_load_files(struct guest_mem *mem, const char *kernel,
		   const char *initrd, const char *cmdline,
		   unsigned int nr_vcpus, uint64_t acpi_rsdp,
		   struct x86_boot_entry *entry)
{
	struct x86_boot_files files = { .kernel_fd = -1, .initrd_fd = -1 };
	struct x86_boot_config bc = { 0 };
	uint64_t klen, ilen = 0;
	const char *why = NULL;
	struct bzimage bz;
	struct pvh_kernel pvh;
	uint8_t *head = NULL;
	size_t hlen;
	ssize_t n;
	int ret;

	ret = boot_file_open("kernel", kernel, &files.kernel_fd, &klen);
	if (ret)
		return ret;
	hlen = (size_t)MIN(klen, (uint64_t)BZ_MAX_SETUP_SIZE);
	head = malloc(hlen ? hlen : 1);
	if (!head) {
		ret = -ENOMEM;
		goto out;
	}
	n = pread(files.kernel_fd, head, hlen, 0);
	if (n < 0) {
		ret = -errno;
		vmm_err("reading kernel %s: %s", kernel, strerror(errno));
		goto out;
	}
	/* Fewer bytes than measured: the file is being truncated; it is
	 * as long as what we got. */
	if ((size_t)n < hlen)
		klen = (uint64_t)n;
	if (pvh_is_elf(head, (size_t)n)) {
		ret = parse_pvh(kernel, files.kernel_fd, head, (size_t)n, klen,
				&pvh);
		if (ret)
			goto out;
		bc.pvh = &pvh;
	} else {
		ret = bzimage_parse_head(head, (size_t)n, klen, &bz, &why);
		if (ret) {
			vmm_err("kernel %s: %s", kernel, why ? why : "invalid");
			ret = -EINVAL;
			goto out;
		}
		bc.kernel = &bz;
	}
	if (initrd) {
		ret = boot_file_open("initrd", initrd, &files.initrd_fd, &ilen);
		if (ret)
			goto out;
	}
	bc.initrd_size = (size_t)ilen;
	bc.cmdline = cmdline;
	bc.nr_vcpus = nr_vcpus;
	bc.acpi_rsdp = acpi_rsdp;
	ret = x86_boot_setup_files(mem, &bc, &files, entry);
out:
	free(head);
	if (files.kernel_fd >= 0)
		close(files.kernel_fd);
	if (files.initrd_fd >= 0)
		close(files.initrd_fd);
	return ret;
}
