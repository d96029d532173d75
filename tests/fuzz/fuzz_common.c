/* SPDX-License-Identifier: MIT */
/* Shared helpers of the fuzz targets; see fuzz.h. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
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

int fuzz_probe_fd(void)
{
	int fd = eventfd(0, EFD_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return fd;
}

int fuzz_argv(const uint8_t *data, size_t size, const char *argv0, char **strs,
	      int max, char **buf)
{
	int argc = 1;

	*buf = malloc(size + 1);
	if (!*buf)
		abort();
	if (size)
		memcpy(*buf, data, size);
	(*buf)[size] = '\0';
	strs[0] = (char *)argv0;
	for (size_t i = 0; i <= size && argc <= max; argc++) {
		strs[argc] = *buf + i;
		i += strlen(*buf + i) + 1;
	}
	strs[argc] = NULL;
	return argc;
}

static char tmpdir[256];

static int rm_one(const char *path, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void tmpdir_remove(void)
{
	nftw(tmpdir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

const char *fuzz_tmpdir(const char *name)
{
	const char *tmp = getenv("TMPDIR");

	if (tmpdir[0])
		return tmpdir;
	snprintf(tmpdir, sizeof(tmpdir), "%s/fuzz-%s-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp", name);
	if (!mkdtemp(tmpdir))
		abort();
	atexit(tmpdir_remove);
	return tmpdir;
}
