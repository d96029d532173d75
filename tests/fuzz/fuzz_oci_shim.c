/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: minivmm-oci's VMM process as its guest and its clients see
 * it -- the real control plane (examples/oci/shim-ctl.c, what shim.c's
 * loop drives: frames from the guest init on minivmm.ctl, frames queued to
 * it, ctl.sock clients, forwarded signals) over real sockets, without a VM.
 *
 * Input: action records ([action u8][fields], fuzz.h), each followed by
 * turns of the loop (poll without waiting, handle) until nothing is ready:
 *   0 guest writes [len u16][bytes] on minivmm.ctl (what it does not take
 *     now is skipped: the test never waits)
 *   1 guest writes a well-formed frame [type u8][len u16][payload]
 *   2 guest reads up to [len u16 * 16] bytes of what the shim sent
 *   3 a client connects and sends [len u8][bytes] (up to 8 at once)
 *   4 client [i u8] closes
 *   5 the process gets signal [sig u8 % 65]
 * and at the end the VM "ends": shim_ctl_finish().
 *
 * Checked beyond the sanitizers (abort()): the queue to the guest never
 * exceeds SHIM_OUT_MAX; at most SHIM_MAX_CLIENTS clients; what the guest
 * reads is a well-formed frame stream of types the shim sends; a broken
 * stream (malformed frame) stopped the VM; guest_error is printable; no
 * call waits (a blocked call is a libFuzzer timeout).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fuzz.h"
#include "oci.h"
#include "proto.h"
#include "shimctl.h"

#define MAX_FUZZ_CLIENTS 8

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_oci_shim: %s\n", what);
	abort();
}

static void stop_vm(void *opaque)
{
	(*(unsigned int *)opaque)++;
}

struct rig {
	struct shim_ctl s;
	int guest;
	struct sockaddr_un addr;
	socklen_t addr_len;
	int clients[MAX_FUZZ_CLIENTS];
	unsigned int nclients, stops;
	struct proto_reader seen; /* what the guest read from the shim */
};

static void turns(struct rig *r)
{
	for (int i = 0; i < 64; i++) {
		struct pollfd pfd[SHIM_CTL_NFDS];
		int n = shim_ctl_pollfds(&r->s, pfd);

		if (poll(pfd, (nfds_t)n, 0) <= 0)
			break;
		shim_ctl_handle(&r->s, pfd);
		if (r->s.out_len - r->s.out_off > SHIM_OUT_MAX)
			fail("the queue to the guest outgrew SHIM_OUT_MAX");
		if (r->s.nclients > SHIM_MAX_CLIENTS)
			fail("more clients than SHIM_MAX_CLIENTS");
		if (r->s.broken && !r->stops)
			fail("a broken stream did not stop the VM");
	}
}

static void guest_read(struct rig *r, size_t max)
{
	uint8_t buf[4096];

	while (max) {
		ssize_t n = recv(r->guest, buf, max < sizeof(buf) ? max : sizeof(buf),
				 MSG_DONTWAIT);

		if (n <= 0)
			return;
		max -= (size_t)n;
		for (size_t off = 0; off < (size_t)n;) {
			const uint8_t *pl;
			uint32_t len;
			uint8_t type;
			int got;

			off += proto_reader_feed(&r->seen, buf + off, (size_t)n - off, &got,
						 &type, &pl, &len);
			if (r->seen.err)
				fail("the shim sent a malformed frame");
			if (got && type != PROTO_MSG_CONFIG && type != PROTO_MSG_SIGNAL &&
			    type != PROTO_MSG_RESIZE)
				fail("the shim sent a frame of a type it never sends");
			if (got && type != PROTO_MSG_CONFIG && len != 4)
				fail("a SIGNAL/RESIZE frame of the wrong size");
		}
	}
}

static void client_new(struct rig *r, const uint8_t *line, size_t len)
{
	int fd;

	if (r->nclients >= MAX_FUZZ_CLIENTS)
		return;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return;
	if (connect(fd, (struct sockaddr *)&r->addr, r->addr_len) < 0) {
		close(fd);
		return;
	}
	if (len && send(fd, line, len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		errno = 0; /* the shim may have refused it already */
	r->clients[r->nclients++] = fd;
}

static void check_error_text(const struct shim_ctl *s)
{
	size_t n = strnlen(s->guest_error, sizeof(s->guest_error));

	if (n == sizeof(s->guest_error))
		fail("guest_error is not terminated");
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s->guest_error[i] < 0x20 || s->guest_error[i] == 0x7f)
			fail("guest_error holds a control byte");
}

int fuzz_oci_shim(const uint8_t *data, size_t size)
{
	static unsigned long serial;
	static const struct oci_settings set = { 0 };
	static char *args[] = { (char *)"/bin/sh", NULL };
	static struct oci_spec spec = { .args = args, .nargs = 1, .cwd = (char *)"/",
					.rows = 24, .cols = 80 };
	struct oci_shim_params p = { .spec = &spec, .set = &set,
				     .state_dir = "/fuzz/c1", .tty_slave = -1,
				     .ready_fd = -1 };
	struct fuzz_in in = { data, size };
	struct rig r = { .addr = { .sun_family = AF_UNIX } };
	int sp[2], l;

	fuzz_quiet_logs();
	if (!getenv("FUZZ_VERBOSE"))
		oci_log_quiet_stderr(true);
	signal(SIGPIPE, SIG_IGN);
	/* An abstract socket per input: nothing on disk, nothing shared. */
	r.addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				 (size_t)snprintf(r.addr.sun_path + 1,
						  sizeof(r.addr.sun_path) - 1,
						  "fuzz_oci_shim.%d.%lu", (int)getpid(),
						  serial++));
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&r.addr, r.addr_len) ||
	    listen(l, 32) || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp)) {
		if (l >= 0)
			close(l);
		return 0;
	}
	p.listen_fd = l;
	r.guest = sp[1];
	shim_ctl_init(&r.s, &p, sp[0], stop_vm, &r.stops);

	while (fi_left(&in)) {
		uint8_t buf[65536];
		size_t n;

		switch (fi_u8(&in) % 6) {
		case 0:
			n = fi_u16(&in);
			n = fi_bytes(&in, buf, n);
			if (n && send(r.guest, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
				errno = 0; /* full: skipped */
			break;
		case 1: {
			struct proto_buf b = { 0 };
			uint8_t type = fi_u8(&in);

			n = fi_bytes(&in, buf, fi_u16(&in));
			proto_frame(&b, type, buf, n);
			if (!b.err && send(r.guest, b.data, b.len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
				errno = 0;
			proto_buf_free(&b);
			break;
		}
		case 2:
			guest_read(&r, (size_t)fi_u16(&in) * 16);
			break;
		case 3:
			n = fi_bytes(&in, buf, fi_u8(&in));
			client_new(&r, buf, n);
			break;
		case 4: {
			unsigned int i = fi_u8(&in);

			if (r.nclients) {
				i %= r.nclients;
				close(r.clients[i]);
				r.clients[i] = r.clients[--r.nclients];
			}
			break;
		}
		case 5: {
			int sig = fi_u8(&in) % 65;

			if (sig)
				shim_ctl_signal(&r.s, sig);
			break;
		}
		}
		turns(&r);
		check_error_text(&r.s);
	}
	guest_read(&r, SIZE_MAX);
	shim_ctl_finish(&r.s);
	check_error_text(&r.s);
	while (r.nclients)
		close(r.clients[--r.nclients]);
	proto_reader_free(&r.seen);
	close(sp[0]);
	close(sp[1]);
	close(l);
	return 0;
}

FUZZ_TARGET(fuzz_oci_shim)
