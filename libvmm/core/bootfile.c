/* SPDX-License-Identifier: MIT */
/* Boot images opened for loading (see bootfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootfile.h"
#include "log.h"

int boot_file_open(const char *what, const char *path, int *fd,
		   uint64_t *len)
{
	struct stat st;
	int ret, fl;

	*fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (*fd < 0) {
		ret = -errno;
		vmm_err("cannot open %s %s: %s", what, path, strerror(errno));
		return ret;
	}
	if (fstat(*fd, &st) < 0) {
		ret = -errno;
		vmm_err("cannot stat %s %s: %s", what, path, strerror(errno));
		goto err;
	}
	if (!S_ISREG(st.st_mode)) {
		vmm_err("%s %s is not a regular file (%s)", what, path,
			S_ISFIFO(st.st_mode) ? "a FIFO" :
			S_ISCHR(st.st_mode)  ? "a character device" :
			S_ISBLK(st.st_mode)  ? "a block device" :
			S_ISDIR(st.st_mode)  ? "a directory" :
			S_ISSOCK(st.st_mode) ? "a socket" : "not a file");
		ret = -EINVAL;
		goto err;
	}
	fl = fcntl(*fd, F_GETFL);
	if (fl < 0 || fcntl(*fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		ret = -errno;
		goto err;
	}
	*len = (uint64_t)st.st_size;
	return 0;
err:
	close(*fd);
	*fd = -1;
	return ret;
}
