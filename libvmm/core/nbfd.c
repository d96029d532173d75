/* SPDX-License-Identifier: MIT */
/* Non-blocking use of a borrowed fd (see nbfd.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nbfd.h"

int nbfd_open(int fd, int acc, struct nbfd *e)
{
	struct stat st;
	char path[32];
	int fl, nfd;

	e->fd = fd;
	e->own = false;
	e->mode = NBFD_NONE;
	if (fd < 0)
		return 0;
	e->mode = NBFD_DIRECT;
	if (fstat(fd, &st) == 0) {
		/* Regular files and block devices never wait for a reader. */
		if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
			return 0;
		if (S_ISSOCK(st.st_mode)) {
			e->mode = NBFD_SOCKET;
			return 0;
		}
	}
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && (fl & O_NONBLOCK))
		return 0;
	/* A new open file description of the same pipe / terminal / device,
	 * non-blocking; O_NOCTTY: never become our controlling terminal. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	nfd = open(path, acc | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (nfd >= 0) {
		e->fd = nfd;
		e->own = true;
		e->mode = NBFD_REOPEN;
		return 0;
	}
	e->mode = NBFD_POLL;
	return errno;
}

void nbfd_close(struct nbfd *e)
{
	if (e->own && e->fd >= 0)
		close(e->fd);
	e->fd = -1;
	e->own = false;
	e->mode = NBFD_NONE;
}

ssize_t nbfd_write(const struct nbfd *e, const void *buf, size_t len)
{
	ssize_t n;

	if (e->fd < 0 || e->mode == NBFD_NONE)
		return -EBADF;
	if (e->mode == NBFD_POLL) {
		struct pollfd pfd = { .fd = e->fd, .events = POLLOUT };
		int r;

		do
			r = poll(&pfd, 1, 0);
		while (r < 0 && errno == EINTR);
		if (r < 0)
			return -errno;
		/* POLLERR/POLLHUP: the write below says what it is. */
		if (!r)
			return -EAGAIN;
		if (len > NBFD_POLL_CHUNK)
			len = NBFD_POLL_CHUNK;
	}
	do {
		if (e->mode == NBFD_SOCKET)
			n = send(e->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		else
			n = write(e->fd, buf, len);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	if (n == 0 && len)
		return -EIO;
	return n;
}

size_t nbfd_write_all(const struct nbfd *e, const void *buf, size_t len,
		      int timeout_ms, int *err)
{
	const char *p = buf;
	size_t off = 0;

	*err = 0;
	while (off < len) {
		ssize_t n = nbfd_write(e, p + off, len - off);
		struct pollfd pfd = { .fd = e->fd, .events = POLLOUT };
		int r;

		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		*err = (int)n;
		if (n != -EAGAIN || timeout_ms <= 0)
			break;
		do
			r = poll(&pfd, 1, timeout_ms);
		while (r < 0 && errno == EINTR);
		if (r <= 0)
			break;
		*err = 0;
	}
	return off;
}
