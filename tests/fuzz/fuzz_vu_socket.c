/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: vhost-user's socket layer (devices/vhost-user/vu-msg.c
 * vu_msg_recv(), vu_msg_reply(), and vu_backend_serve() around them) fed
 * through a real AF_UNIX stream socketpair, as a front end's bytes arrive:
 * messages cut into chunks at input-chosen places (headers split, a
 * payload shorter or longer than the header says, a size past any
 * payload), each chunk a sendmsg() that may carry file descriptors
 * (SCM_RIGHTS: on a message's first byte as QEMU sends them, on a later
 * chunk, or more than a message may carry: MSG_CTRUNC), raw byte chunks,
 * the connection ending anywhere (a truncated header or payload),
 * reconnections, and the back end's stop eventfd.  Behind the socket: the
 * back end and the stub device of fuzz_vhost_user (fuzz_vu_stub.h).
 *
 * Per connection, the input's chunks are all written (non-blocking: they
 * fit the socket's buffer, so the back end sees the same bytes whatever
 * the timing) and the write side shut down before vu_backend_serve() runs
 * on this thread; a helper thread reads the replies (closing the fds they
 * carry) so that the back end never blocks on them.
 *
 * Input: [setup u8] then records [kind u8][fields] (fuzz.h):
 *  message: [op u8 (as fuzz_vhost_user)][flags u8][size u16][mode u8]
 *           [split u8][payload]: mode bits 0-3 fds (0..15), bit 4 useful
 *           payload, bit 5 a raw u32 header size follows, bits 6-7 how many
 *           payload bytes to leave out or add; split: bits 0-1 chunks
 *           (1..4, cut points follow as u8 each), bits 2-3 which chunk
 *           carries the fds;
 *  raw:     [len u8][nfds u8][bytes];
 *  reconnect, stop (the stop eventfd is written before the next serve).
 *
 * Checked beyond the sanitizers (abort()): vu_backend_serve() returns 0,
 * -EPROTO, -ESHUTDOWN (only after a stop) or a socket error; every file
 * descriptor sent is closed again by the end of the connection (the
 * process's open fd count); the stub device's checks (rings started and
 * stopped in pairs, in mapped RAM).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "fuzz_vu_stub.h"
#include "vhost-user/vu-backend.h"

#define MAX_CHUNKS 64
#define MAX_BYTES (16u << 10) /* per connection: fits a socket's buffer */
#define MAX_FDS 15
#define MAX_CONN_FDS 128
#define MAX_RECORDS 96
#define INFLIGHT_SIZE (64u << 10)

enum { R_MSG, R_RAW, R_RECONNECT, R_STOP, R_NR };

struct chunk {
	uint32_t off, len;
	unsigned int nfds;
	int fd_kind; /* which fds to attach: see make_fd() */
};

struct conn {
	uint8_t bytes[MAX_BYTES + sizeof(struct vu_msg)];
	uint32_t len;
	struct chunk chunks[MAX_CHUNKS];
	unsigned int nchunks, nfds;
	bool stop;
};

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_vu_socket: %s\n", what);
	abort();
}

/* The in-flight buffer a front end keeps (created once per process). */
static int inflight_memfd(void)
{
	static int fd = -1;

	return fvu_memfd(&fd, "fuzz-vu-inflight", INFLIGHT_SIZE);
}

/* A descriptor of the kind request @kind carries (-1: raw bytes). */
static int make_fd(int kind)
{
	if (kind == VHOST_USER_SET_MEM_TABLE)
		return dup(fvu_ram_fd());
	if (kind == VHOST_USER_SET_INFLIGHT_FD)
		return dup(inflight_memfd());
	return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

static void add_chunk(struct conn *c, uint32_t off, uint32_t len,
		      unsigned int nfds, int kind)
{
	if (!len || c->nchunks == MAX_CHUNKS)
		return;
	/* Descriptors in flight count against RLIMIT_NOFILE (the kernel
	 * refuses more with ETOOMANYREFS): a budget per connection. */
	if (c->nfds + nfds > MAX_CONN_FDS)
		nfds = 0;
	c->nfds += nfds;
	c->chunks[c->nchunks++] = (struct chunk){ off, len, nfds, kind };
}

/* One message record: serialized, then cut into chunks. */
static void add_msg(struct fuzz_in *in, struct conn *c)
{
	uint8_t op = fi_u8(in), mode, split;
	struct vu_msg m;
	uint32_t plen, wire, off = c->len, cuts[4], ncut, fdchunk;

	memset(&m, 0, sizeof(m));
	m.hdr.request = op < 0x80 ? fvu_known[op % fvu_nknown] : fi_u8(in);
	m.hdr.flags = fi_u8(in) ^ VHOST_USER_VERSION;
	m.hdr.size = fi_u16(in) % 300;
	mode = fi_u8(in);
	split = fi_u8(in);
	plen = MIN(m.hdr.size, (uint32_t)sizeof(m.p));
	fi_bytes(in, &m.p, plen);
	if (mode & 0x10)
		fvu_fixup(&m);
	if (mode & 0x20) /* what the header claims: anything */
		m.hdr.size = fi_u32(in);
	/* The payload on the wire: short of, at, or past the claim. */
	switch (mode >> 6) {
	case 1:
		plen = plen ? plen - 1 : 0;
		break;
	case 2:
		plen = plen / 2;
		break;
	case 3:
		plen = MIN(plen + 8, (uint32_t)sizeof(m.p));
		break;
	}
	wire = (uint32_t)sizeof(m.hdr) + plen;
	if (c->len + wire > MAX_BYTES)
		return;
	memcpy(c->bytes + c->len, &m.hdr, sizeof(m.hdr));
	memcpy(c->bytes + c->len + sizeof(m.hdr), &m.p, plen);
	c->len += wire;
	ncut = split & 3;
	fdchunk = ((split >> 2) & 3) % (ncut + 1);
	for (uint32_t i = 0; i < ncut; i++)
		cuts[i] = fi_u8(in) % wire;
	/* Sorted cut points (insertion sort of at most three). */
	for (uint32_t i = 1; i < ncut; i++)
		for (uint32_t k = i; k && cuts[k - 1] > cuts[k]; k--) {
			uint32_t t = cuts[k];

			cuts[k] = cuts[k - 1];
			cuts[k - 1] = t;
		}
	for (uint32_t i = 0, from = 0; i <= ncut; i++) {
		uint32_t to = i < ncut ? cuts[i] : wire;

		add_chunk(c, off + from, to - from, i == fdchunk ? MIN(mode & 0xfu, MAX_FDS) : 0,
			  (int)m.hdr.request);
		from = to;
	}
}

static void add_raw(struct fuzz_in *in, struct conn *c)
{
	uint32_t len = fi_u8(in);
	unsigned int nfds = fi_u8(in) % (MAX_FDS + 1);

	if (c->len + len > MAX_BYTES)
		return;
	len = (uint32_t)fi_bytes(in, c->bytes + c->len, len);
	add_chunk(c, c->len, len, nfds, -1);
	c->len += len;
}

/* Send @k, its fds attached.  Returns false if the socket is full. */
static bool send_chunk(int sock, const struct conn *c, const struct chunk *k)
{
	char cbuf[CMSG_SPACE(MAX_FDS * sizeof(int))];
	struct iovec iov = { (void *)(c->bytes + k->off), k->len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[MAX_FDS];
	ssize_t n;

	for (unsigned int i = 0; i < k->nfds; i++)
		if ((fds[i] = make_fd(k->fd_kind)) < 0)
			abort();
	if (k->nfds) {
		struct cmsghdr *cm;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(k->nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(k->nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, k->nfds * sizeof(int));
	}
	n = sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	/* In flight, the socket holds its own references. */
	for (unsigned int i = 0; i < k->nfds; i++)
		close(fds[i]);
	if (n >= 0 && (size_t)n != k->len)
		fail("a short send: chunks must fit the socket's buffer");
	return n >= 0;
}

/* The front end's reader: replies, and the fds they carry, until EOF. */
static void *drain(void *arg)
{
	int sock = *(int *)arg;

	for (;;) {
		char buf[512], cbuf[CMSG_SPACE(VHOST_USER_MAX_REGIONS * sizeof(int))];
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
		ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);

		if (n <= 0 && !(n < 0 && errno == EINTR))
			return NULL;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			unsigned int k = (unsigned int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));

			for (unsigned int i = 0; cm->cmsg_type == SCM_RIGHTS && i < k; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
				close(fd);
			}
		}
	}
}

/* One connection: write everything, then serve it to its end. */
static void run_conn(struct vu_backend *b, struct conn *c, int stop_efd)
{
	int sv[2], ret, fds_before = fvu_open_fds();
	uint64_t one = 1;
	pthread_t t;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	for (unsigned int i = 0; i < c->nchunks; i++)
		if (!send_chunk(sv[1], c, &c->chunks[i]))
			fail("the socket's buffer is full");
	shutdown(sv[1], SHUT_WR);
	if (c->stop && write(stop_efd, &one, sizeof(one)) != sizeof(one))
		abort();
	if (pthread_create(&t, NULL, drain, &sv[1]))
		abort();
	ret = vu_backend_serve(b, sv[0], stop_efd);
	if (ret && ret != -EPROTO && ret != -EPIPE && ret != -ECONNRESET &&
	    !(ret == -ESHUTDOWN && c->stop))
		fail("vu_backend_serve: an unexpected result");
	close(sv[0]); /* the reader sees EOF */
	pthread_join(t, NULL);
	close(sv[1]);
	if (c->stop && read(stop_efd, &one, sizeof(one)) != sizeof(one))
		abort();
	if (fds_before >= 0 && fvu_open_fds() != fds_before)
		fail("a file descriptor sent was not closed by the end of the connection");
	c->len = 0;
	c->nchunks = c->nfds = 0;
	c->stop = false;
}

int fuzz_vu_socket(const uint8_t *data, size_t size)
{
	static struct conn c; /* large: not on the stack */
	struct fuzz_in in = { data, size };
	struct fvu_stub dev = { .cfg = { 1, 2, 3 } };
	struct vu_backend *b;
	int stop_efd;

	fuzz_quiet_logs();
	fvu_ram_fd(); /* the caches, before any fd count */
	inflight_memfd();
	memset(&c, 0, sizeof(c));
	stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (stop_efd < 0)
		abort();
	b = fvu_backend(&dev);
	(void)fi_u8(&in); /* setup: reserved */
	for (unsigned int rec = 0; rec < MAX_RECORDS && fi_left(&in); rec++) {
		switch (fi_u8(&in) % R_NR) {
		case R_MSG:
			add_msg(&in, &c);
			break;
		case R_RAW:
			add_raw(&in, &c);
			break;
		case R_RECONNECT:
			run_conn(b, &c, stop_efd);
			break;
		case R_STOP:
			c.stop = true;
			break;
		}
	}
	run_conn(b, &c, stop_efd);
	vu_backend_destroy(b);
	close(stop_efd);
	for (unsigned int i = 0; i < FVU_NQ; i++)
		if (dev.started[i])
			fail("a ring left running after the disconnect");
	return 0;
}

FUZZ_TARGET(fuzz_vu_socket)
