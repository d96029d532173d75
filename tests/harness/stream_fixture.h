/* SPDX-License-Identifier: MIT */
/*
 * A virtio-net queue on simulated guest memory and a stream back end
 * (devices/net/stream.h) on one end of a Unix stream socketpair, the test
 * playing the peer (passt) on the other: for the check_net_stream_* tests.
 */
#ifndef VMM_TESTS_STREAM_FIXTURE_H
#define VMM_TESTS_STREAM_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "fake_guest.h"
#include "net/stream.h"

struct stream_fixture {
	struct fake_guest g;
	struct fg_vq fvq;
	struct virtq vq;
	struct vnet_rxq *rq;
	struct virtq_chain *chain;
	struct vnet_pair_stats st;
	struct nstream *s;
	int dev_fd;  /* the device's end (s->fd), non-blocking */
	int peer_fd; /* the test's end, non-blocking */
};

/* 0 or -1.  Queue of @qsize entries. */
int sfx_init(struct stream_fixture *f, uint16_t qsize);
void sfx_fini(struct stream_fixture *f);
/* Post @n writable buffers of @len bytes (one chain each). */
void sfx_post_rx(struct stream_fixture *f, unsigned int n, uint32_t len,
		 uint64_t *gpa);
/* Post a TX chain: a virtio-net header (@hdr_flags, @gso) and @len bytes,
 * byte i = i * 3 + @seed.  Returns the frame's guest address. */
uint64_t sfx_post_tx(struct stream_fixture *f, uint32_t len, uint8_t hdr_flags,
		     uint8_t gso, uint8_t seed);
/* @len bytes of frame (byte i = i * 7 + @seed) with its length word, into
 * @buf (at least 4 + len).  Returns 4 + len. */
size_t sfx_frame(uint8_t *buf, uint32_t len, uint8_t seed);
/* Send @len bytes of @buf to the device, all of them (MSG_NOSIGNAL,
 * bounded retries).  0 or -1. */
int sfx_send(struct stream_fixture *f, const void *buf, size_t len);

#endif
