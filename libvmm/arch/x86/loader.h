/* SPDX-License-Identifier: MIT */
/*
 * Loading a Linux kernel -- a bzImage, or an uncompressed vmlinux (ELF) for
 * PVH boot (x86/pvh.h), told apart by the file's first bytes -- an
 * optional initrd and the command line from files into guest RAM (direct
 * kernel boot).  The files are untrusted:
 * anything may be named (a FIFO, a device, a directory), and a file may be
 * rewritten or truncated while it is read.
 *  - Opened O_RDONLY | O_NONBLOCK | O_NOCTTY, so that opening cannot block
 *    (an O_RDONLY open of a FIFO waits for a writer) or acquire a
 *    terminal; then anything but a regular file is refused.
 *  - Never mapped: the kernel's header is parsed from a pread() copy of its
 *    head (bzimage_parse_head()), the payload and the initrd are pread()
 *    into guest RAM (guest_mem_load_fd()).  A file truncated meanwhile is
 *    an error (-EINVAL / -EIO), never a SIGBUS in the embedder.
 * KVM-free: only guest memory is touched.
 */
#ifndef VMM_X86_LOADER_H
#define VMM_X86_LOADER_H

#include "memory.h"
#include "util/compiler.h"
#include "x86/boot.h"

/*
 * x86_load_files() - x86_boot_setup_files() from paths.
 * @kernel: bzImage or PVH vmlinux path; @initrd: path or NULL; @cmdline:
 *          may be NULL;
 * @acpi_rsdp: x86_boot_config.acpi_rsdp (0: no ACPI tables)
 *
 * Returns: 0; -EINVAL (not a regular file, not a bootable bzImage, an ELF
 * file that is not an x86-64 vmlinux with a PVH entry note, does not fit:
 * see x86_boot_setup()); open()'s -errno (-ENOENT, -EACCES, ...);
 * -EIO if a file shrank while it was read; -ENOMEM.  Every failure is
 * logged with the file's name.
 */
int x86_load_files(struct guest_mem *mem, const char *kernel,
		   const char *initrd, const char *cmdline,
		   unsigned int nr_vcpus, uint64_t acpi_rsdp,
		   struct x86_boot_entry *entry) __must_check;

#endif
