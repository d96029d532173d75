/* SPDX-License-Identifier: MIT */
#include "listen_race.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

int listen_race_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), ret;

	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ret = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	close(fd);
	return ret;
}

int listen_race_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Wait on inotify @in until an entry named @name is created or moved in:
 * 0, or -ETIMEDOUT after 30 s. */
static int wait_name(int in, const char *name)
{
	char buf[4096] __attribute__((aligned(8)));

	for (;;) {
		struct pollfd p = { .fd = in, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 30000) != 1)
			return -ETIMEDOUT;
		n = read(in, buf, sizeof(buf));
		for (char *c = buf; n > 0 && c < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)c;

			if (ev->len && !strcmp(ev->name, name))
				return 0;
			c += sizeof(*ev) + ev->len;
		}
	}
}

int listen_race_rounds(const char *path, int (*listen_fn)(const char *path),
		       int rounds, int *err)
{
	char d[PATH_MAX], b[PATH_MAX];
	const char *dir, *name;

	snprintf(d, sizeof(d), "%s", path);
	snprintf(b, sizeof(b), "%s", path);
	dir = dirname(d);
	name = basename(b);
	for (int round = 0; round < rounds; round++) {
		int in = inotify_init1(IN_CLOEXEC), ret;
		pid_t pid;

		if (in < 0) {
			*err = -errno;
			return round;
		}
		unlink(path);
		if (inotify_add_watch(in, dir, IN_CREATE | IN_MOVED_TO) < 0) {
			*err = -errno;
			close(in);
			return round;
		}
		/* The listener in a child: this process connects the moment
		 * the name appears, while the child may still be between
		 * bind() and listen(). */
		pid = fork();
		if (pid < 0) {
			*err = -errno;
			close(in);
			return round;
		}
		if (!pid) {
			if (listen_fn(path))
				_exit(1);
			pause();
			_exit(0);
		}
		ret = wait_name(in, name);
		if (!ret)
			ret = listen_race_connect(path);
		if (!ret && listen_race_entries(dir) != 1)
			ret = -EEXIST; /* a temporary name left beside it */
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(in);
		if (ret) {
			*err = ret;
			return round;
		}
	}
	return -1;
}
