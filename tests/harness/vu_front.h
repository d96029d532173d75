/* SPDX-License-Identifier: MIT */
/*
 * A minimal vhost-user front end: the part of QEMU that talks to a
 * vhost-user-blk back end (qemu-storage-daemon, minivmm-blkd) over its Unix
 * socket.  Used by the device benchmark (bench/vhost_user.c: the simulated
 * driver on rings served by another process) and by the KVM-free unit tests
 * of minivmm-blkd (tests/unit/check_vhost_user*.c), which also send it
 * malformed messages through the raw calls.
 *
 * Protocol (docs/interop/vhost-user.rst), in QEMU's order: SET_OWNER,
 * GET_FEATURES, GET/SET_PROTOCOL_FEATURES, GET_QUEUE_NUM, GET_CONFIG,
 * SET_FEATURES, SET_MEM_TABLE (memfds with SCM_RIGHTS), then per ring
 * SET_VRING_NUM / BASE / ADDR / KICK / CALL and SET_VRING_ENABLE; ring
 * addresses are front-end virtual addresses.  Teardown: GET_VRING_BASE per
 * ring (stops it), close.  Calls return 0 (or a size) or -errno and print
 * nothing except a refused request's number on stderr.
 */
#ifndef VMM_TESTS_HARNESS_VU_FRONT_H
#define VMM_TESTS_HARNESS_VU_FRONT_H

#include <stdbool.h>
#include <stdint.h>

#include "vhost-user/vhost-user.h"

struct vuf {
	int sock;
	bool reply_ack;		/* REPLY_ACK negotiated: vuf_set() waits */
	uint64_t features;	/* GET_FEATURES */
	uint64_t protocol;	/* protocol features negotiated */
	uint64_t queue_num;	/* GET_QUEUE_NUM (MQ), else 1 */
};

/* Connect to the back end at @path, retrying for up to @timeout_ms while
 * it starts (or serves the previous front end). */
int vuf_connect(struct vuf *f, const char *path, unsigned int timeout_ms);
void vuf_close(struct vuf *f);

/* One message as is (any flags, any size, any fds). */
int vuf_send(struct vuf *f, uint32_t req, uint32_t flags, const void *payload,
	     uint32_t size, const int *fds, unsigned int nfds);
/* The reply to @req: its payload size (copied up to @max), or -errno
 * (-ECONNRESET: the back end closed the connection; -EPROTO: a bad reply). */
int vuf_recv(struct vuf *f, uint32_t req, void *payload, uint32_t max);
/* The same, for a reply that may carry one fd (GET_INFLIGHT_FD): *@fd
 * gets it, or -1. */
int vuf_recv_fd(struct vuf *f, uint32_t req, void *payload, uint32_t max, int *fd);
/* A request without a reply of its own; with REPLY_ACK, waits for the
 * acknowledgement: -EIO if the back end refused it. */
int vuf_set(struct vuf *f, uint32_t req, const void *payload, uint32_t size,
	    const int *fds, unsigned int nfds);
int vuf_get_u64(struct vuf *f, uint32_t req, uint64_t *v);
/* Whether the back end closes the connection within @timeout_ms (reads
 * and drops anything it sends first). */
bool vuf_peer_closed(struct vuf *f, unsigned int timeout_ms);

/*
 * SET_OWNER, GET_FEATURES, then (if offered) GET_PROTOCOL_FEATURES and
 * SET_PROTOCOL_FEATURES with @want_protocol & offered, GET_QUEUE_NUM.
 */
int vuf_init(struct vuf *f, uint64_t want_protocol);
/* GET_CONFIG of [@off, @off + @size) into @buf. */
int vuf_get_config(struct vuf *f, uint32_t off, uint32_t size, void *buf);
/* SET_FEATURES (@features | PROTOCOL_FEATURES when it was offered). */
int vuf_set_features(struct vuf *f, uint64_t features);
/* SET_MEM_TABLE of one region: @size bytes of memfd @fd from offset 0 at
 * guest-physical 0, mapped by us at @base. */
int vuf_set_mem_one(struct vuf *f, int fd, void *base, uint64_t size);
/* SET_VRING_NUM, BASE, ADDR (front-end addresses), KICK, CALL (-1: none). */
int vuf_ring_setup(struct vuf *f, unsigned int idx, unsigned int num,
		   unsigned int base, uint64_t desc, uint64_t avail, uint64_t used,
		   int kick_fd, int call_fd);
/* SET_VRING_ENABLE (only with protocol features; a no-op otherwise). */
int vuf_ring_enable(struct vuf *f, unsigned int idx, bool on);
/* GET_VRING_BASE: stops the ring; its next avail index in @base. */
int vuf_get_vring_base(struct vuf *f, unsigned int idx, uint32_t *base);

#endif
