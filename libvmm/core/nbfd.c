/* SPDX-License-Identifier: MIT */
/* Non-blocking output to an embedder's fd (see nbfd.h).  libc only: also
 * compiled into minivmm-oci (examples/oci), whose logging needs the same. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nbfd.h"

void nbfd_open_out(struct nbfd *e, int fd)
{
	struct stat st;
	char path[32];
	int fl, nfd;

	*e = (struct nbfd){ .fd = fd };
	if (fd < 0 || fstat(fd, &st))
		return;
	if (S_ISSOCK(st.st_mode)) {
		e->sock = true;
		return;
	}
	/* Regular files and block devices never wait for a reader. */
	if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
		return;
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && (fl & O_NONBLOCK))
		return;
	/* O_NOCTTY: never become our controlling terminal. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	nfd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (nfd >= 0) {
		e->fd = nfd;
		e->own = true;
		return;
	}
	e->poll_first = true;
}

ssize_t nbfd_write(const struct nbfd *e, const void *buf, size_t len)
{
	if (e->fd < 0) {
		errno = EBADF;
		return -1;
	}
	if (e->sock)
		return send(e->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (e->poll_first) {
		struct pollfd p = { .fd = e->fd, .events = POLLOUT };
		int r = poll(&p, 1, 0);

		if (r < 0)
			return -1;
		if (r == 0 || !(p.revents & (POLLOUT | POLLERR | POLLHUP))) {
			errno = EAGAIN;
			return -1;
		}
		/* A pipe with room takes PIPE_BUF bytes without waiting. */
		if (len > PIPE_BUF)
			len = PIPE_BUF;
	}
	return write(e->fd, buf, len);
}

void nbfd_close(struct nbfd *e)
{
	if (e->own && e->fd >= 0)
		close(e->fd);
	e->fd = -1;
	e->own = false;
}
