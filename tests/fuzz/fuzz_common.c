/* SPDX-License-Identifier: MIT */
/* Shared helpers of the fuzz targets; see fuzz.h. */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "vmm/vmm.h"

static void drop_log(int level, const char *msg, void *opaque)
{
	(void)level;
	(void)msg;
	(void)opaque;
}

void fuzz_quiet_logs(void)
{
	static int done;

	if (done)
		return;
	done = 1;
	if (!getenv("FUZZ_VERBOSE"))
		vmm_set_log(drop_log, NULL, VMM_LOG_ERROR);
}

int fuzz_image(uint64_t size)
{
	static int fd = -1;

	if (fd < 0) {
		fd = memfd_create("libvmm-fuzz-image", MFD_CLOEXEC);
		if (fd < 0)
			return -errno;
	}
	/* Drop every block written by the previous input. */
	if (ftruncate(fd, 0) < 0 || ftruncate(fd, (off_t)size) < 0)
		return -errno;
	return fd;
}
