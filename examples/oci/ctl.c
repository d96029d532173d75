/* SPDX-License-Identifier: MIT */
/*
 * The commands' side of ROOT/ID/ctl.sock (start, kill): one request line,
 * one answer line, within a time limit, so that a VMM process that does
 * not answer (stuck, stopped with SIGSTOP, or not a minivmm-oci VMM at
 * all) costs the caller an error, never a hang.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "oci.h"

/* Connect to DIR/ctl.sock (by a relative path: the absolute one may not
 * fit in sun_path), non-blocking.  The fd or -errno. */
static int ctl_connect(const char *dir, uint64_t deadline)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd, ret;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || cwd < 0) {
		ret = -errno;
		goto out;
	}
	snprintf(a.sun_path, sizeof(a.sun_path), "ctl.sock");
	if (chdir(dir)) {
		ret = -errno;
		goto out;
	}
	/* A full backlog: EAGAIN on a non-blocking AF_UNIX socket. */
	while ((ret = connect(fd, (struct sockaddr *)&a, sizeof(a)) ? -errno : 0) ==
		       -EAGAIN &&
	       oci_now_ns() < deadline)
		usleep(10000);
	if (ret == -EAGAIN)
		ret = -ETIMEDOUT;
	if (fchdir(cwd) && !ret)
		ret = -errno;
out:
	if (cwd >= 0)
		close(cwd);
	if (ret) {
		if (fd >= 0)
			close(fd);
		return ret;
	}
	return fd;
}

int oci_ctl_request(const char *dir, const char *req, char *ans, size_t len,
		    int timeout_ms)
{
	uint64_t deadline = oci_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	int fd = ctl_connect(dir, deadline), ret = 0;
	size_t have = 0;

	ans[0] = 0;
	if (fd < 0)
		return fd;
	/* A few bytes into an empty socket buffer: never EAGAIN. */
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req)) {
		close(fd);
		return -EIO;
	}
	while (have + 1 < len && !memchr(ans, '\n', have)) {
		uint64_t now = oci_now_ns();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int r;

		if (now >= deadline) {
			ret = -ETIMEDOUT;
			break;
		}
		r = poll(&p, 1, (int)((deadline - now + 999999) / 1000000));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = -errno;
			break;
		}
		if (r == 0)
			continue; /* the deadline check above ends it */
		n = recv(fd, ans + have, len - 1 - have, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			ret = have ? 0 : -EIO;
			break;
		}
		have += (size_t)n;
		ans[have] = 0;
	}
	close(fd);
	ans[have] = 0;
	ans[strcspn(ans, "\n")] = 0;
	if (!ret && !have)
		ret = -EIO;
	return ret;
}

int oci_ctl_command(const char *dir, const char *id, const char *req, int timeout_ms)
{
	char ans[1024];
	int ret = oci_ctl_request(dir, req, ans, sizeof(ans), timeout_ms);

	if (ret) {
		oci_err("container %s: its VMM process does not answer (%s)", id,
			strerror(-ret));
		return 1;
	}
	if (strcmp(ans, "ok")) {
		oci_err("%s", !strncmp(ans, "error: ", 7) ? ans + 7 : ans);
		return 1;
	}
	return 0;
}
