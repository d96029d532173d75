/* SPDX-License-Identifier: MIT */
/* A virtio-vsock driver for unit tests (vsock_drv.h). */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "vsock/vsock-host.h"
#include "vsock_drv.h"

/* Not assert(): the build defines NDEBUG, and these have side effects. */
#define VD_CHECK(x)                                                          \
	do {                                                                 \
		if (!(x)) {                                                  \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #x); \
			abort();                                             \
		}                                                            \
	} while (0)

#define RAM (4ull << 20)

void vd_init(struct vsock_drv *d, unsigned int max_conns, uint32_t buf_alloc)
{
	vd_init_timeout(d, max_conns, buf_alloc, 0);
}

void vd_init_timeout(struct vsock_drv *d, unsigned int max_conns, uint32_t buf_alloc,
		     unsigned int setup_timeout_ms)
{
	struct vsock_params p = { .guest_cid = VD_CID, .max_conns = max_conns,
				  .buf_alloc = buf_alloc,
				  .setup_timeout_ms = setup_timeout_ms };
	int fd;

	memset(d, 0, sizeof(*d));
	snprintf(d->dir, sizeof(d->dir), "/tmp/vsock-test-XXXXXX");
	VD_CHECK(mkdtemp(d->dir));
	snprintf(d->path, sizeof(d->path), "%s/v.sock", d->dir);
	VD_CHECK(!fg_init(&d->g, RAM));
	VD_CHECK(!fg_vq_init(&d->g, &d->rx, VD_QSIZE, 0));
	VD_CHECK(!fg_vq_init(&d->g, &d->tx, VD_QSIZE, 0));
	VD_CHECK(!fg_vq_attach(&d->rx, &d->drx));
	VD_CHECK(!fg_vq_attach(&d->tx, &d->dtx));
	d->tx_gpa = fg_alloc(&d->g, 2 * (VSOCK_MAX_PKT_PAYLOAD + 64), 64);
	VD_CHECK(d->tx_gpa);
	for (unsigned int i = 0; i < VD_QSIZE; i++) {
		d->pool[i] = fg_alloc(&d->g, VD_RXBUF, 64);
		VD_CHECK(d->pool[i]);
		d->free[d->nr_free++] = i;
	}
	VD_CHECK(!vsock_host_listen(d->path, &fd));
	p.path = d->path;
	p.listen_fd = fd;
	VD_CHECK(!vsock_create(&p, &d->v));
	vsock_set_active(d->v, true);
}

void vd_fini(struct vsock_drv *d)
{
	char p[160];

	vsock_destroy(d->v);
	fg_vq_destroy(&d->rx);
	fg_vq_destroy(&d->tx);
	fg_destroy(&d->g);
	unlink(d->path);
	for (unsigned int i = 0; i < d->nr_listen; i++) {
		snprintf(p, sizeof(p), "%s_%u", d->path, d->listen_port[i]);
		unlink(p);
	}
	VD_CHECK(!rmdir(d->dir));
}

void vd_post_rx(struct vsock_drv *d, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		unsigned int k;
		struct fg_buf b;
		int head;

		VD_CHECK(d->nr_free);
		k = d->free[--d->nr_free];
		b = (struct fg_buf){ d->pool[k], VD_RXBUF, true };
		head = fg_vq_add(&d->rx, &b, 1, false);
		VD_CHECK(head >= 0);
		d->rx_buf[head] = k;
		d->rx_posted++;
	}
	fg_vq_publish(&d->rx);
}

int vd_send_hdr(struct vsock_drv *d, const struct vsock_hdr *hh,
		const void *data, uint32_t len)
{
	struct vsock_hdr h = {
		.src_cid = htole64(hh->src_cid), .dst_cid = htole64(hh->dst_cid),
		.src_port = htole32(hh->src_port), .dst_port = htole32(hh->dst_port),
		.len = htole32(hh->len), .type = htole16(hh->type),
		.op = htole16(hh->op), .flags = htole32(hh->flags),
		.buf_alloc = htole32(hh->buf_alloc), .fwd_cnt = htole32(hh->fwd_cnt),
	};
	struct fg_buf b[2] = { { d->tx_gpa, sizeof(h), false },
			       { d->tx_gpa + 64, len, false } };
	bool pushed = false;
	uint32_t id, ulen;
	int r;

	VD_CHECK(len <= 2 * VSOCK_MAX_PKT_PAYLOAD);
	memcpy(fg_ptr(&d->g, d->tx_gpa, sizeof(h)), &h, sizeof(h));
	if (len)
		memcpy(fg_ptr(&d->g, d->tx_gpa + 64, len), data, len);
	VD_CHECK(fg_vq_add(&d->tx, b, len ? 2 : 1, false) >= 0);
	fg_vq_publish(&d->tx);
	r = vsock_tx_process(d->v, &d->dtx, &pushed);
	while (fg_vq_get_used(&d->tx, &id, &ulen))
		;
	return r;
}

int vd_send(struct vsock_drv *d, uint16_t op, uint32_t src_port,
	    uint32_t dst_port, const void *data, uint32_t len, uint32_t flags,
	    uint32_t buf_alloc, uint32_t fwd_cnt)
{
	struct vsock_hdr h = {
		.src_cid = VD_CID, .dst_cid = VSOCK_HOST_CID,
		.src_port = src_port, .dst_port = dst_port, .len = len,
		.type = VSOCK_TYPE_STREAM, .op = op, .flags = flags,
		.buf_alloc = buf_alloc, .fwd_cnt = fwd_cnt,
	};

	return vd_send_hdr(d, &h, data, len);
}

int vd_pump(struct vsock_drv *d)
{
	bool pushed = false;

	vsock_host_events(d->v);
	return vsock_rx_process(d->v, &d->drx, &pushed);
}

int vd_recv(struct vsock_drv *d, struct vsock_hdr *h, void *data, size_t max)
{
	uint32_t id, len;
	uint8_t *p;

	if (!fg_vq_get_used(&d->rx, &id, &len))
		return 0;
	d->rx_posted--;
	VD_CHECK(len >= sizeof(*h) && len <= VD_RXBUF);
	p = fg_ptr(&d->g, d->pool[d->rx_buf[id]], VD_RXBUF);
	d->free[d->nr_free++] = d->rx_buf[id];
	memcpy(h, p, sizeof(*h));
	vsock_hdr_from_le(h);
	VD_CHECK(h->len == len - sizeof(*h));
	if (data)
		memcpy(data, p + sizeof(*h), MIN((size_t)h->len, max));
	return 1;
}

int vd_host_connect(struct vsock_drv *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	VD_CHECK(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d->path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -errno;
	}
	return fd;
}

int vd_host_listen(struct vsock_drv *d, uint32_t port)
{
	char p[128];
	int fd;

	snprintf(p, sizeof(p), "%s_%u", d->path, port);
	VD_CHECK(!vsock_host_listen(p, &fd));
	VD_CHECK(d->nr_listen < VD_MAX_LISTEN);
	d->listen_port[d->nr_listen++] = port;
	return fd;
}

int vd_guest_connect(struct vsock_drv *d, int lfd, uint32_t gport,
		     uint32_t hport, uint32_t buf_alloc)
{
	struct vsock_hdr h;

	VD_CHECK(!vd_send(d, VSOCK_OP_REQUEST, gport, hport, NULL, 0, 0, buf_alloc, 0));
	VD_CHECK(!vd_pump(d));
	VD_CHECK(vd_recv(d, &h, NULL, 0) == 1);
	VD_CHECK(h.src_port == hport && h.dst_port == gport);
	if (h.op == VSOCK_OP_RST)
		return -1;
	VD_CHECK(h.op == VSOCK_OP_RESPONSE);
	return accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
}

int vd_host_open(struct vsock_drv *d, uint32_t gport, uint32_t buf_alloc,
		 uint32_t *hport)
{
	char line[64], want[64];
	struct vsock_hdr h;
	int fd = vd_host_connect(d);
	ssize_t n;

	VD_CHECK(fd >= 0);
	n = snprintf(line, sizeof(line), "CONNECT %u\n", gport);
	VD_CHECK(write(fd, line, (size_t)n) == n);
	VD_CHECK(!vd_pump(d));
	VD_CHECK(vd_recv(d, &h, NULL, 0) == 1);
	VD_CHECK(h.op == VSOCK_OP_REQUEST && h.dst_port == gport);
	VD_CHECK(!vd_send(d, VSOCK_OP_RESPONSE, gport, h.src_port, NULL, 0, 0,
			buf_alloc, 0));
	n = snprintf(want, sizeof(want), "OK %u\n", h.src_port);
	VD_CHECK(vd_host_read(fd, line, (size_t)n) == n);
	VD_CHECK(!memcmp(line, want, (size_t)n));
	*hport = h.src_port;
	return fd;
}

ssize_t vd_host_read(int fd, void *buf, size_t len)
{
	struct timeval tv = { .tv_sec = 1 };

	VD_CHECK(!setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	return read(fd, buf, len);
}
