/* SPDX-License-Identifier: MIT */
/* A listening Unix socket whose path appears only once it listens. */
#include "unix-listen.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int unix_listen(const char *path, int type_flags, int backlog, int mask, int *fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	bool in_place, bound = false;
	struct stat st;
	mode_t old = 0;
	int s, n, ret = 0;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	if (!lstat(path, &st) && !S_ISSOCK(st.st_mode))
		return -EEXIST;
	n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s.%d~", path, (int)getpid());
	in_place = n < 0 || (size_t)n >= sizeof(sa.sun_path);
	if (in_place) {
		unlink(path); /* a socket nobody serves any more */
		strcpy(sa.sun_path, path);
	} else {
		unlink(sa.sun_path); /* ours from an earlier, killed run */
	}
	s = socket(AF_UNIX, SOCK_STREAM | type_flags, 0);
	if (s < 0)
		return -errno;
	if (mask >= 0)
		old = umask((mode_t)mask);
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)))
		ret = -errno;
	else
		bound = true;
	if (mask >= 0)
		umask(old);
	if (!ret && listen(s, backlog))
		ret = -errno;
	if (!ret && !in_place && rename(sa.sun_path, path))
		ret = -errno;
	if (ret) {
		if (bound)
			unlink(sa.sun_path);
		close(s);
		return ret;
	}
	*fd = s;
	return 0;
}
