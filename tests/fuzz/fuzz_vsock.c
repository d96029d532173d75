/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the hybrid vsock's guest-facing packet parser and
 * connection layer (devices/vsock/vsock.c), driven through fake rings
 * (tests/harness/vsock_drv.h) with real host sockets.  The input is a
 * program of action records:
 *
 *   0 tx packet: every header field from the input (CIDs, ports near the
 *     ones in use, type, op, flags, len against a payload of its own
 *     length, buf_alloc, fwd_cnt)
 *   1 post receive buffers      2 host events and rx, used buffers taken
 *   3 a host client connects and writes a line of the input's bytes
 *   4 a host socket writes      5 the listener at PATH_1000 accepts
 *   6 a host socket closes      7 a host socket reads
 *
 * Checked: no crash or sanitizer report, rings never reported malformed
 * (the driver here is correct), never more connections than the limit,
 * no descriptor leaked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "vsock_drv.h"

#define MAX_HOST 8
#define LIMIT 6

struct fz {
	struct vsock_drv d;
	int lfd;
	int host[MAX_HOST];
	unsigned int nh;
	uint32_t ports[4]; /* host ports the device chose (REQUESTs seen) */
};

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_vsock: %s\n", what);
		abort();
	}
}

/* A host socket may refuse (full, reset): that is the device's to handle. */
static void ignore(ssize_t r)
{
	(void)r;
}

static void add_host(struct fz *z, int fd)
{
	if (fd < 0)
		return;
	if (z->nh == MAX_HOST) {
		close(fd);
		return;
	}
	fcntl(fd, F_SETFL, O_NONBLOCK);
	z->host[z->nh++] = fd;
}

/* Fields are read one statement at a time: the order of evaluation
 * inside an initializer is unspecified, and an input must decode the same
 * with every compiler. */
static void tx_packet(struct fz *z, struct fuzz_in *in)
{
	static uint8_t payload[8192];
	uint8_t b = fi_u8(in);
	struct vsock_hdr h = { 0 };
	uint32_t plen;

	h.src_cid = (b & 1) ? VD_CID : fi_u64(in);
	h.dst_cid = (b & 2) ? VSOCK_HOST_CID : fi_u64(in);
	h.src_port = 2000 + fi_u8(in) % 4;
	h.type = (b & 4) ? VSOCK_TYPE_STREAM : fi_u8(in) % 4;
	h.op = fi_u8(in) % 9;
	h.flags = fi_u8(in) % 5;
	h.buf_alloc = (b & 8) ? 65536 : fi_u32(in);
	h.fwd_cnt = fi_u32(in);
	plen = fi_u16(in) % sizeof(payload);
	if (b & 16)
		h.dst_port = 1000;
	else if (b & 32)
		h.dst_port = z->ports[fi_u8(in) % 4];
	else
		h.dst_port = fi_u32(in);
	h.len = (b & 64) ? plen : fi_u32(in) % (2 * plen + 2);
	fi_bytes(in, payload, plen);
	check(vd_send_hdr(&z->d, &h, payload, plen) == 0, "tx ring reported malformed");
}

static void pump(struct fz *z)
{
	struct vsock_stats st;
	struct vsock_hdr h;

	check(vd_pump(&z->d) == 0, "rx ring reported malformed");
	while (vd_recv(&z->d, &h, NULL, 0) == 1) {
		check(h.src_cid == VSOCK_HOST_CID && h.dst_cid == VD_CID, "wrong CIDs sent");
		check(h.type == VSOCK_TYPE_STREAM, "not a stream packet");
		if (h.op == VSOCK_OP_REQUEST)
			z->ports[h.dst_port % 4] = h.src_port;
	}
	vsock_get_stats(z->d.v, &st);
	check(st.conns_open <= LIMIT, "more connections than the limit");
}

static void host_action(struct fz *z, unsigned int a, struct fuzz_in *in)
{
	uint8_t buf[256];
	unsigned int k = z->nh ? fi_u8(in) % z->nh : 0;
	size_t n;

	switch (a) {
	case 3: /* a client and its line */
		n = fi_u8(in) % 48;
		fi_bytes(in, buf, n);
		if (z->nh < MAX_HOST) {
			int fd = vd_host_connect(&z->d);

			if (fd >= 0 && n)
				ignore(send(fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL));
			add_host(z, fd);
		}
		break;
	case 4:
		n = fi_u8(in);
		fi_bytes(in, buf, n);
		if (z->nh)
			ignore(send(z->host[k], buf, n, MSG_DONTWAIT | MSG_NOSIGNAL));
		break;
	case 5:
		add_host(z, accept4(z->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC));
		break;
	case 6:
		if (z->nh) {
			close(z->host[k]);
			z->host[k] = z->host[--z->nh];
		}
		break;
	case 7:
		if (z->nh)
			ignore(read(z->host[k], buf, sizeof(buf)));
		break;
	}
}

int fuzz_vsock(const uint8_t *data, size_t size)
{
	static struct fz z;
	struct fuzz_in in = { data, size };
	int probe;

	fuzz_quiet_logs();
	probe = fuzz_probe_fd();
	memset(&z, 0, sizeof(z));
	vd_init(&z.d, LIMIT, 4096u << (fi_u8(&in) % 4));
	z.lfd = vd_host_listen(&z.d, 1000);
	fcntl(z.lfd, F_SETFL, O_NONBLOCK);
	for (int step = 0; step < 96 && fi_left(&in); step++) {
		unsigned int a = fi_u8(&in) % 8;

		if (a == 0)
			tx_packet(&z, &in);
		else if (a == 1)
			vd_post_rx(&z.d, MIN(fi_u8(&in) % 16u, z.d.nr_free));
		else if (a == 2)
			pump(&z);
		else
			host_action(&z, a, &in);
	}
	pump(&z);
	for (unsigned int i = 0; i < z.nh; i++)
		close(z.host[i]);
	close(z.lfd);
	vd_fini(&z.d);
	check(fuzz_probe_fd() == probe, "a descriptor leaked");
	return 0;
}

FUZZ_TARGET(fuzz_vsock)
