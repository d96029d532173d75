/* SPDX-License-Identifier: MIT */
/* The arm64 boot image into guest RAM (see loader.h). */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "arm64/fdt.h"
#include "arm64/image.h"
#include "arm64/loader.h"
#include "bootfile.h"
#include "log.h"

#define PAGE_SIZE_4K 4096ull

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* The Image: header checked, file into RAM at its place. */
static int load_kernel(struct guest_mem *mem, uint64_t ram_base,
		       const char *kernel, struct arm64_boot *out)
{
	uint8_t hdr[ARM64_IMAGE_HEADER_SIZE];
	struct arm64_image img;
	uint64_t klen;
	ssize_t n;
	int fd, ret;

	ret = boot_file_open("kernel", kernel, &fd, &klen);
	if (ret)
		return ret;
	n = pread(fd, hdr, sizeof(hdr), 0);
	if (n < 0) {
		ret = -errno;
		vmm_err("reading kernel %s: %s", kernel, strerror(errno));
		goto out;
	}
	ret = arm64_image_parse(hdr, (size_t)n, klen, &img);
	if (ret == -ENOEXEC) {
		vmm_err("kernel %s is not an arm64 Image (no \"ARM\\x64\" magic "
			"at offset 56; a compressed vmlinuz.gz or another "
			"architecture's kernel?)", kernel);
		ret = -EINVAL; /* vmm_start()'s "not a valid image" */
		goto out;
	}
	if (ret) {
		vmm_err("kernel %s: malformed arm64 Image header", kernel);
		goto out;
	}
	ret = arm64_image_place(&img, ram_base, mem->size, &out->entry);
	if (ret) {
		vmm_err("kernel %s (%llu bytes with its BSS) does not fit in "
			"%llu MiB of RAM", kernel,
			(unsigned long long)img.image_size,
			(unsigned long long)(mem->size >> 20));
		goto out;
	}
	out->kernel_end = out->entry + img.image_size;
	ret = guest_mem_load_fd(mem, out->entry, fd, 0, klen);
	if (ret)
		vmm_err("loading kernel %s: %s", kernel, strerror(-ret));
out:
	close(fd);
	return ret;
}

int arm64_load_files(struct guest_mem *mem, uint64_t ram_base,
		     const char *kernel, const char *initrd,
		     struct arm64_boot *out)
{
	uint64_t ram_end = ram_base + mem->size, ilen = 0;
	int fd = -1, ret;

	memset(out, 0, sizeof(*out));
	if (mem->size < 2 * ARM64_IMAGE_BASE_ALIGN) {
		vmm_err("arm64 boot: %llu bytes of RAM is too small",
			(unsigned long long)mem->size);
		return -ENOSPC;
	}
	/* The device tree's 2 MiB block at the top of RAM. */
	out->fdt_gpa = (ram_end - ARM64_FDT_MAX_SIZE) & ~(ARM64_IMAGE_BASE_ALIGN - 1);
	ret = load_kernel(mem, ram_base, kernel, out);
	if (ret)
		return ret;
	if (out->kernel_end > out->fdt_gpa) {
		vmm_err("kernel %s leaves no room for the device tree in %llu "
			"MiB of RAM", kernel, (unsigned long long)(mem->size >> 20));
		return -ENOSPC;
	}
	if (!initrd)
		return 0;
	ret = boot_file_open("initrd", initrd, &fd, &ilen);
	if (ret)
		return ret;
	out->initrd_gpa = align_up(out->kernel_end, PAGE_SIZE_4K);
	out->initrd_size = ilen;
	if (ilen > out->fdt_gpa - out->initrd_gpa) {
		vmm_err("initrd %s (%llu MiB) does not fit in RAM above the "
			"kernel (%llu MiB left)", initrd,
			(unsigned long long)(ilen >> 20),
			(unsigned long long)((out->fdt_gpa - out->initrd_gpa) >> 20));
		ret = -ENOSPC;
	} else {
		ret = guest_mem_load_fd(mem, out->initrd_gpa, fd, 0, ilen);
		if (ret)
			vmm_err("loading initrd %s: %s", initrd, strerror(-ret));
	}
	close(fd);
	return ret;
}
