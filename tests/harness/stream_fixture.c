/* SPDX-License-Identifier: MIT */
/* The stream back end's test fixture (stream_fixture.h). */
#include <errno.h>
#include <linux/virtio_ring.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "stream_fixture.h"

#define RAM_SIZE (16u << 20)

int sfx_init(struct stream_fixture *f, uint16_t qsize)
{
	int sv[2];

	memset(f, 0, sizeof(*f));
	if (fg_init(&f->g, RAM_SIZE) ||
	    fg_vq_init(&f->g, &f->fvq, qsize, 1ull << VIRTIO_RING_F_EVENT_IDX) ||
	    fg_vq_attach(&f->fvq, &f->vq))
		return -1;
	f->rq = calloc(1, sizeof(*f->rq));
	f->chain = malloc(sizeof(*f->chain));
	if (!f->rq || !f->chain ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv))
		return -1;
	f->dev_fd = sv[0];
	f->peer_fd = sv[1];
	if (nstream_adopt(f->dev_fd) || nstream_create(f->dev_fd, &f->s))
		return -1;
	return 0;
}

void sfx_fini(struct stream_fixture *f)
{
	nstream_destroy(f->s);
	close(f->dev_fd);
	if (f->peer_fd >= 0)
		close(f->peer_fd);
	free(f->rq);
	free(f->chain);
	fg_vq_destroy(&f->fvq);
	fg_destroy(&f->g);
}

void sfx_post_rx(struct stream_fixture *f, unsigned int n, uint32_t len,
		 uint64_t *gpa)
{
	for (unsigned int i = 0; i < n; i++) {
		struct fg_buf b = { fg_alloc(&f->g, len, 8), len, true };

		if (gpa)
			gpa[i] = b.gpa;
		memset(fg_ptr(&f->g, b.gpa, len), 0xee, len);
		if (fg_vq_add(&f->fvq, &b, 1, false) < 0)
			abort();
	}
	fg_vq_publish(&f->fvq);
}

uint64_t sfx_post_tx(struct stream_fixture *f, uint32_t len, uint8_t hdr_flags,
		     uint8_t gso, uint8_t seed)
{
	struct fg_buf b[2] = {
		{ fg_alloc(&f->g, VNET_HDR_LEN, 8), VNET_HDR_LEN, false },
		{ fg_alloc(&f->g, len ? len : 1, 8), len, false },
	};
	uint8_t *h = fg_ptr(&f->g, b[0].gpa, VNET_HDR_LEN);
	uint8_t *p = fg_ptr(&f->g, b[1].gpa, len ? len : 1);

	memset(h, 0, VNET_HDR_LEN);
	h[0] = hdr_flags;
	h[1] = gso;
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 3 + seed);
	if (fg_vq_add(&f->fvq, b, len ? 2 : 1, false) < 0)
		abort();
	fg_vq_publish(&f->fvq);
	return b[1].gpa;
}

size_t sfx_frame(uint8_t *buf, uint32_t len, uint8_t seed)
{
	buf[0] = (uint8_t)(len >> 24);
	buf[1] = (uint8_t)(len >> 16);
	buf[2] = (uint8_t)(len >> 8);
	buf[3] = (uint8_t)len;
	for (uint32_t i = 0; i < len; i++)
		buf[4 + i] = (uint8_t)(i * 7 + seed);
	return 4 + (size_t)len;
}

int sfx_send(struct stream_fixture *f, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	for (int tries = 0; len && tries < 1000; tries++) {
		ssize_t w = send(f->peer_fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w > 0) {
			p += w;
			len -= (size_t)w;
		} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
			return -1;
		} else {
			struct pollfd pf = { f->peer_fd, POLLOUT, 0 };

			(void)poll(&pf, 1, 10);
		}
	}
	return len ? -1 : 0;
}
