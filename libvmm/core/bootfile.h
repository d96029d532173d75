/* SPDX-License-Identifier: MIT */
/* Boot images (kernel, initrd) opened for loading into guest RAM. */
#ifndef VMM_BOOTFILE_H
#define VMM_BOOTFILE_H

#include <stdint.h>

#include "util/compiler.h"

/*
 * boot_file_open() - open @path (a @what: "kernel", "initrd") read-only
 * without ever blocking: O_NONBLOCK so that a FIFO (or a device) named by
 * mistake cannot hang vmm_start() in open(), O_NOCTTY so that a terminal
 * cannot become our controlling one; then only a regular file is accepted,
 * and O_NONBLOCK is dropped again.  Returns 0 with *@fd and its size in
 * *@len, or -errno (-EINVAL: not a regular file) with a message.
 */
int boot_file_open(const char *what, const char *path, int *fd,
		   uint64_t *len) __must_check;

#endif
