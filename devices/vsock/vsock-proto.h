/* SPDX-License-Identifier: MIT */
/*
 * virtio-vsock on the wire (virtio 1.2, section 5.10): the packet header
 * every packet on the rx and tx queues starts with, its types and
 * operations, and the device's configuration space.  All little-endian.
 */
#ifndef VMM_DEVICES_VSOCK_VSOCK_PROTO_H
#define VMM_DEVICES_VSOCK_VSOCK_PROTO_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

#define VSOCK_DEVICE_ID 19	/* VIRTIO_ID_VSOCK */
#define VSOCK_HOST_CID 2ull	/* VMADDR_CID_HOST */
#define VSOCK_MIN_GUEST_CID 3ull /* 0..2 are reserved */

/* Queues. */
#define VSOCK_QUEUE_RX 0
#define VSOCK_QUEUE_TX 1
#define VSOCK_QUEUE_EVENT 2
#define VSOCK_NUM_QUEUES 3

/* Feature bits of the device (none offered: stream sockets only). */
#define VSOCK_F_STREAM 0
#define VSOCK_F_SEQPACKET 1

/* hdr.type */
#define VSOCK_TYPE_STREAM 1
#define VSOCK_TYPE_SEQPACKET 2

/* hdr.op */
enum vsock_op {
	VSOCK_OP_INVALID = 0,
	VSOCK_OP_REQUEST = 1,
	VSOCK_OP_RESPONSE = 2,
	VSOCK_OP_RST = 3,
	VSOCK_OP_SHUTDOWN = 4,
	VSOCK_OP_RW = 5,
	VSOCK_OP_CREDIT_UPDATE = 6,
	VSOCK_OP_CREDIT_REQUEST = 7,
};

/* hdr.flags of a SHUTDOWN */
#define VSOCK_SHUTDOWN_RCV 1u  /* the sender will receive no more */
#define VSOCK_SHUTDOWN_SEND 2u /* the sender will send no more */

struct vsock_hdr {
	uint64_t src_cid;
	uint64_t dst_cid;
	uint32_t src_port;
	uint32_t dst_port;
	uint32_t len;	    /* payload bytes after the header (RW) */
	uint16_t type;
	uint16_t op;
	uint32_t flags;
	uint32_t buf_alloc; /* the sender's receive buffer for this stream */
	uint32_t fwd_cnt;   /* bytes the sender has taken out of it */
} __attribute__((packed));

_Static_assert(sizeof(struct vsock_hdr) == 44, "virtio_vsock_hdr");

/* A header as read from a ring, in host byte order. */
static inline void vsock_hdr_from_le(struct vsock_hdr *h)
{
	h->src_cid = le64toh(h->src_cid);
	h->dst_cid = le64toh(h->dst_cid);
	h->src_port = le32toh(h->src_port);
	h->dst_port = le32toh(h->dst_port);
	h->len = le32toh(h->len);
	h->type = le16toh(h->type);
	h->op = le16toh(h->op);
	h->flags = le32toh(h->flags);
	h->buf_alloc = le32toh(h->buf_alloc);
	h->fwd_cnt = le32toh(h->fwd_cnt);
}

struct vsock_config {
	uint64_t guest_cid;
} __attribute__((packed));

/* A driver's read of @len bytes at @off of the configuration space of
 * guest @cid (both host sides); out of range reads zeros.  Writes are
 * ignored: guest_cid is read-only, as the spec allows. */
static inline void vsock_config_read(uint64_t cid, uint32_t off, void *buf,
				     uint32_t len)
{
	struct vsock_config c = { .guest_cid = htole64(cid) };

	if (off > sizeof(c) || len > sizeof(c) - off) {
		memset(buf, 0, len);
		return;
	}
	memcpy(buf, (uint8_t *)&c + off, len);
}

/* Largest payload of one packet a Linux driver sends (64 KiB,
 * VIRTIO_VSOCK_MAX_PKT_BUF_SIZE); a larger len is a bad packet. */
#define VSOCK_MAX_PKT_PAYLOAD (64u * 1024)

#endif
