/* SPDX-License-Identifier: MIT */
#include "readahead.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

int init_fs_readahead(const char *sysfs, const char *mountpoint, unsigned int kb)
{
	char path[4096], val[16];
	struct stat st;
	int fd, n, ret = 0;

	if (stat(mountpoint, &st))
		return -errno;
	if (snprintf(path, sizeof(path), "%s/class/bdi/%u:%u/read_ahead_kb", sysfs,
		     major(st.st_dev), minor(st.st_dev)) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	n = snprintf(val, sizeof(val), "%u\n", kb);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	errno = 0;
	if (write(fd, val, (size_t)n) != n)
		ret = errno ? -errno : -EIO;
	close(fd);
	return ret;
}
