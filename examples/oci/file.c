/* SPDX-License-Identifier: MIT */
/*
 * Creating a file as root in a directory another user may be able to write
 * (console_dir, the directory of --pid-file): never through a link planted
 * there.  See oci_file_create() and oci_file_write_atomic() in oci.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
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

int oci_file_write_atomic(const char *path, const char *text)
{
	char tmp[PATH_MAX + 8];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	/* The pid file's directory may be writable by others: never through
	 * a link planted at PATH.tmp.  (rename() replaces PATH itself, link
	 * or not, without following it.) */
	fd = oci_file_create(tmp, 0644);
	if (fd < 0) {
		errno = -fd;
		return -1;
	}
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		close(fd);
		unlink(tmp);
		return -1;
	}
	close(fd);
	return rename(tmp, path);
}
