/* SPDX-License-Identifier: MIT */
/*
 * The vhost-user protocol, back-end side: message layout and constants,
 * written from the vhost-user specification (docs/design-notes.md says
 * where it lives).  Every message is a 12-byte header (request, flags,
 * payload size) and a payload whose shape the request fixes; file
 * descriptors travel with the header as SCM_RIGHTS ancillary data.  All values are in host byte order (the
 * protocol is local).
 *
 * What the block back end (vu-backend.c) implements and what the front
 * end (vu-frontend.c) sends: the requests, the protocol features.
 */
#ifndef VMM_DEVICES_VHOST_USER_VHOST_USER_H
#define VMM_DEVICES_VHOST_USER_VHOST_USER_H

#include <stdint.h>

/* Front-end requests. */
enum vhost_user_request {
	VHOST_USER_GET_FEATURES = 1,
	VHOST_USER_SET_FEATURES = 2,
	VHOST_USER_SET_OWNER = 3,
	VHOST_USER_RESET_OWNER = 4,
	VHOST_USER_SET_MEM_TABLE = 5,
	VHOST_USER_SET_LOG_BASE = 6,
	VHOST_USER_SET_LOG_FD = 7,
	VHOST_USER_SET_VRING_NUM = 8,
	VHOST_USER_SET_VRING_ADDR = 9,
	VHOST_USER_SET_VRING_BASE = 10,
	VHOST_USER_GET_VRING_BASE = 11,
	VHOST_USER_SET_VRING_KICK = 12,
	VHOST_USER_SET_VRING_CALL = 13,
	VHOST_USER_SET_VRING_ERR = 14,
	VHOST_USER_GET_PROTOCOL_FEATURES = 15,
	VHOST_USER_SET_PROTOCOL_FEATURES = 16,
	VHOST_USER_GET_QUEUE_NUM = 17,
	VHOST_USER_SET_VRING_ENABLE = 18,
	VHOST_USER_GET_CONFIG = 24,
	VHOST_USER_SET_CONFIG = 25,
	VHOST_USER_GET_INFLIGHT_FD = 31,
	VHOST_USER_SET_INFLIGHT_FD = 32,
	VHOST_USER_RESET_DEVICE = 34,
	VHOST_USER_GET_MAX_MEM_SLOTS = 36,
	VHOST_USER_ADD_MEM_REG = 37,
	VHOST_USER_MAX_REQUEST = 64, /* beyond any request defined so far */
};

/* Header flags. */
#define VHOST_USER_VERSION_MASK 0x3u
#define VHOST_USER_VERSION 0x1u
#define VHOST_USER_REPLY 0x4u	   /* set in every reply */
#define VHOST_USER_NEED_REPLY 0x8u /* REPLY_ACK: acknowledge this request */

/* Virtio feature bit 30 in GET_FEATURES: protocol features exist. */
#define VHOST_USER_F_PROTOCOL_FEATURES 30

/* Protocol features (GET/SET_PROTOCOL_FEATURES bit numbers). */
#define VHOST_USER_PROTOCOL_F_MQ 0
#define VHOST_USER_PROTOCOL_F_REPLY_ACK 3
#define VHOST_USER_PROTOCOL_F_CONFIG 9
#define VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD 12
#define VHOST_USER_PROTOCOL_F_RESET_DEVICE 13
#define VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS 15

/* SET_VRING_KICK/CALL/ERR payload: ring index in bits 0-7; bit 8 set
 * means "no file descriptor" (polling; for CALL/ERR: no notification). */
#define VHOST_USER_VRING_IDX_MASK 0xffull
#define VHOST_USER_VRING_NOFD_MASK (1ull << 8)

/* SET_VRING_ADDR flags. */
#define VHOST_VRING_F_LOG 0x1u

/* At most this many memory regions per SET_MEM_TABLE (and fds per
 * message): VHOST_MEMORY_BASELINE_NREGIONS of the specification. */
#define VHOST_USER_MAX_REGIONS 8u
/* Largest config space GET/SET_CONFIG may move. */
#define VHOST_USER_MAX_CONFIG_SIZE 256u

struct vhost_user_hdr {
	uint32_t request;
	uint32_t flags;
	uint32_t size; /* payload bytes after the header */
} __attribute__((packed));

struct vhost_user_vring_state {
	uint32_t index;
	uint32_t num;
};

struct vhost_user_vring_addr {
	uint32_t index;
	uint32_t flags; /* VHOST_VRING_F_LOG */
	/* Front-end virtual addresses (translated through the memory table). */
	uint64_t desc_user_addr;
	uint64_t used_user_addr;
	uint64_t avail_user_addr;
	uint64_t log_guest_addr;
};

struct vhost_user_mem_region {
	uint64_t guest_phys_addr;
	uint64_t memory_size;
	uint64_t userspace_addr; /* the front end's mapping of it */
	uint64_t mmap_offset;	 /* where the region starts in its fd */
};

struct vhost_user_memory {
	uint32_t nregions;
	uint32_t padding;
	struct vhost_user_mem_region regions[VHOST_USER_MAX_REGIONS];
};

/* ADD_MEM_REG (CONFIGURE_MEM_SLOTS): one region, its fd with it. */
struct vhost_user_mem_reg {
	uint64_t padding;
	struct vhost_user_mem_region region;
};

struct vhost_user_config {
	uint32_t offset;
	uint32_t size;
	uint32_t flags;
	uint8_t region[VHOST_USER_MAX_CONFIG_SIZE];
};
#define VHOST_USER_CONFIG_HDR_SIZE 12u

/* GET/SET_INFLIGHT_FD: the shared buffer tracking in-flight requests
 * (layout: struct virtq_inflight_region in virtio/virtqueue.h; a front end
 * sends num_queues and queue_size in GET, all four in SET). */
struct vhost_user_inflight {
	uint64_t mmap_size;
	uint64_t mmap_offset;
	uint16_t num_queues;
	uint16_t queue_size;
};

union vhost_user_payload {
	uint64_t u64;
	struct vhost_user_vring_state state;
	struct vhost_user_vring_addr addr;
	struct vhost_user_memory memory;
	struct vhost_user_mem_reg mem_reg;
	struct vhost_user_config config;
	struct vhost_user_inflight inflight;
};

_Static_assert(sizeof(struct vhost_user_hdr) == 12, "vhost-user header");
_Static_assert(sizeof(struct vhost_user_vring_addr) == 40, "vring addr");
_Static_assert(sizeof(struct vhost_user_mem_region) == 32, "memory region");
_Static_assert(sizeof(struct vhost_user_inflight) == 24, "inflight");

#endif
