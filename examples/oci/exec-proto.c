/* SPDX-License-Identifier: MIT */
/* The exec channel's frames (see exec-proto.h).  Host and guest init. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec-proto.h"

int exec_frame_check(enum exec_side side, uint8_t type, uint32_t len,
		     const char **why)
{
	bool to_guest = type < EXEC_MSG_STARTED;
	uint32_t lo = 0, hi = 0;

	switch (type) {
	case EXEC_MSG_EXEC: lo = 4; hi = EXEC_MAX_FRAME - 1; break;
	case EXEC_MSG_PS: lo = hi = 4; break;
	case EXEC_MSG_STDIN:
	case EXEC_MSG_STDOUT:
	case EXEC_MSG_STDERR: lo = 1; hi = EXEC_MAX_DATA; break;
	case EXEC_MSG_STDIN_EOF: break;
	case EXEC_MSG_RESIZE:
	case EXEC_MSG_SIGNAL:
	case EXEC_MSG_STARTED: lo = hi = 4; break;
	case EXEC_MSG_ERROR: lo = 1; hi = 1 + 500; break;
	case EXEC_MSG_EXIT: lo = hi = 5; break;
	case EXEC_MSG_PS_LIST: hi = EXEC_MAX_FRAME - 1; break;
	default:
		*why = "unknown frame type";
		return -1;
	}
	if (to_guest != (side == EXEC_SIDE_GUEST)) {
		*why = "frame type not allowed in this direction";
		return -1;
	}
	if (len < lo || len > hi) {
		*why = "frame length out of range for its type";
		return -1;
	}
	return 0;
}

void exec_reader_init(struct exec_reader *r, enum exec_side side)
{
	r->side = side;
	r->have = r->off = 0;
	r->err = NULL;
}

uint8_t *exec_reader_space(struct exec_reader *r, size_t *len)
{
	if (r->off) { /* what was taken goes; the rest moves to the front */
		memmove(r->buf, r->buf + r->off, r->have - r->off);
		r->have -= r->off;
		r->off = 0;
	}
	*len = r->err ? 0 : sizeof(r->buf) - r->have;
	return r->buf + r->have;
}

void exec_reader_commit(struct exec_reader *r, size_t n)
{
	r->have += n;
}

int exec_reader_next(struct exec_reader *r, uint8_t *type, const uint8_t **p,
		     uint32_t *len)
{
	const uint8_t *h = r->buf + r->off;
	size_t avail = r->have - r->off;
	uint32_t n;

	if (r->err)
		return -1;
	if (avail < EXEC_HDR)
		return 0;
	n = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 |
	    (uint32_t)h[3] << 24;
	if (n < 1 || n > EXEC_MAX_FRAME) {
		r->err = "frame length 0 or over the limit";
		return -1;
	}
	if (exec_frame_check(r->side, h[4], n - 1, &r->err))
		return -1;
	if (avail < 4u + n)
		return 0;
	*type = h[4];
	*p = h + EXEC_HDR;
	*len = n - 1;
	r->off += 4u + n;
	return 1;
}

bool exec_outq_fits(const struct exec_outq *q, size_t n)
{
	return n < EXEC_MAX_FRAME &&
	       (q->len - q->off) + EXEC_HDR + n <= sizeof(q->buf);
}

int exec_outq_put(struct exec_outq *q, uint8_t type, const void *p, size_t n)
{
	uint32_t l = (uint32_t)n + 1;
	uint8_t *d;

	if (n >= EXEC_MAX_FRAME)
		return -EINVAL;
	if (!exec_outq_fits(q, n))
		return -ENOSPC;
	if (q->len + EXEC_HDR + n > sizeof(q->buf)) {
		memmove(q->buf, q->buf + q->off, q->len - q->off);
		q->len -= q->off;
		q->off = 0;
	}
	d = q->buf + q->len;
	d[0] = (uint8_t)l;
	d[1] = (uint8_t)(l >> 8);
	d[2] = (uint8_t)(l >> 16);
	d[3] = (uint8_t)(l >> 24);
	d[4] = type;
	if (n)
		memcpy(d + EXEC_HDR, p, n);
	q->len += EXEC_HDR + n;
	return 0;
}

int exec_outq_flush(struct exec_outq *q, int fd)
{
	while (q->off < q->len) {
		ssize_t w = send(fd, q->buf + q->off, q->len - q->off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == ENOTSOCK)
			w = write(fd, q->buf + q->off, q->len - q->off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno == EAGAIN ? 0 : -errno;
		q->off += (size_t)w;
	}
	q->off = q->len = 0;
	return 0;
}

void exec_exit_encode(int wstatus, uint8_t out[5])
{
	bool sig = WIFSIGNALED(wstatus);
	uint32_t v = sig ? (uint32_t)WTERMSIG(wstatus) : (uint32_t)WEXITSTATUS(wstatus);

	out[0] = sig;
	out[1] = (uint8_t)v;
	out[2] = (uint8_t)(v >> 8);
	out[3] = (uint8_t)(v >> 16);
	out[4] = (uint8_t)(v >> 24);
}

int exec_exit_code(const uint8_t p[5])
{
	uint32_t v = (uint32_t)p[1] | (uint32_t)p[2] << 8 | (uint32_t)p[3] << 16 |
		     (uint32_t)p[4] << 24;

	if (p[0])
		return 128 + (int)(v & 0x7f);
	return (int)(v & 0xff);
}
