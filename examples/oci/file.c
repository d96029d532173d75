/* SPDX-License-Identifier: MIT */
/*
 * Creating a file as root in a directory another user may be able to write
 * (console_dir, the directory of --pid-file): never through a link planted
 * there.  See oci_file_create() in oci.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oci.h"

int oci_file_create(const char *path, mode_t mode)
{
	int fd;

	/* Whatever is there goes: a file we made before, or a symlink or
	 * hard link someone planted (unlink() removes the link itself).
	 * In a sticky directory another user's entry cannot be removed:
	 * then the O_EXCL open below fails, as it should. */
	if (unlink(path) && errno != ENOENT && errno != EPERM && errno != EACCES)
		return -errno;
	/* O_EXCL (with O_CREAT it never follows a final symlink) makes the
	 * file ours and new; O_NOFOLLOW says so twice. */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	return fd < 0 ? -errno : fd;
}
