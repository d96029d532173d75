/* SPDX-License-Identifier: MIT */
/* The hybrid vsock's Unix sockets and CONNECT line (vsock-host.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "vsock/vsock-host.h"

int vsock_parse_connect(const char *buf, size_t len, uint32_t *port,
			size_t *line_len)
{
	static const char verb[] = "CONNECT ";
	const size_t vl = sizeof(verb) - 1;
	/* Out of bytes: a line still to come, unless it is too long already. */
	const int more = len < VSOCK_LINE_MAX ? 0 : -EINVAL;
	uint64_t v = 0;
	size_t i, digits = 0;

	/* What has arrived must be a prefix of a valid line. */
	for (i = 0; i < len && i < vl; i++)
		if (buf[i] != verb[i])
			return -EINVAL;
	for (; i < len && buf[i] >= '0' && buf[i] <= '9'; i++) {
		v = v * 10 + (uint64_t)(buf[i] - '0');
		if (v > UINT32_MAX || ++digits > 10)
			return -EINVAL;
	}
	if (i < len && buf[i] == '\r')
		i++;
	if (i == len)
		return more;
	if (buf[i] != '\n' || !digits)
		return -EINVAL;
	*port = (uint32_t)v;
	*line_len = i + 1;
	return 1;
}

static int vsock_addr(const char *path, uint32_t port, bool with_port,
		      struct sockaddr_un *sa)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) > VSOCK_PATH_MAX)
		return -ENAMETOOLONG;
	if (with_port)
		n = snprintf(sa->sun_path, sizeof(sa->sun_path), "%s_%u", path, port);
	else
		n = snprintf(sa->sun_path, sizeof(sa->sun_path), "%s", path);
	return n < 0 || (size_t)n >= sizeof(sa->sun_path) ? -ENAMETOOLONG : 0;
}

/* Whether nobody listens on the socket at @sa (connect() refused). */
static bool vsock_stale(const struct sockaddr_un *sa)
{
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	bool stale;

	if (s < 0)
		return false;
	stale = connect(s, (const struct sockaddr *)sa, sizeof(*sa)) &&
		errno == ECONNREFUSED;
	close(s);
	return stale;
}

int vsock_host_listen(const char *path, int *fd)
{
	struct sockaddr_un sa, tmp = { .sun_family = AF_UNIX };
	struct stat st;
	int s, n, ret = vsock_addr(path, 0, false, &sa);

	if (ret)
		return ret;
	/* Never replace a file, nor a socket someone listens on; a socket
	 * nobody listens on (a VMM that ended without removing it) goes, in
	 * the rename below. */
	if (!lstat(path, &st) && (!S_ISSOCK(st.st_mode) || !vsock_stale(&sa)))
		return -EADDRINUSE;
	/* Bound and listening under a temporary name, then renamed onto
	 * @path: the path appears only once it listens, so a host program
	 * that connects the moment it appears is never refused (bound in
	 * place, it would exist between bind() and listen()).  The name
	 * fits: VSOCK_PATH_MAX leaves 11 bytes, ".PID~" takes at most 9. */
	n = snprintf(tmp.sun_path, sizeof(tmp.sun_path), "%s.%d~", path, (int)getpid());
	if (n < 0 || (size_t)n >= sizeof(tmp.sun_path))
		return -ENAMETOOLONG;
	unlink(tmp.sun_path); /* ours from an earlier, killed run */
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (bind(s, (struct sockaddr *)&tmp, sizeof(tmp))) {
		ret = -errno;
		close(s);
		return ret;
	}
	if (listen(s, 128) || rename(tmp.sun_path, path)) {
		ret = -errno;
		unlink(tmp.sun_path);
		close(s);
		return ret;
	}
	*fd = s;
	return 0;
}

int vsock_host_connect(const char *path, uint32_t port, int *fd)
{
	struct sockaddr_un sa;
	int s, ret = vsock_addr(path, port, true, &sa);

	if (ret)
		return ret;
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	/* A Unix stream connect completes at once or fails: EAGAIN is a
	 * full backlog, not a connection in progress. */
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		close(s);
		return ret;
	}
	*fd = s;
	return 0;
}
