/* SPDX-License-Identifier: MIT */
/*
 * Inside the vhost-user back end: the state vu-backend.c (the device's
 * side, rings, life cycle) and vu-requests.c (the front end's messages)
 * share.
 */
#ifndef VMM_VHOST_USER_VU_BACKEND_INT_H
#define VMM_VHOST_USER_VU_BACKEND_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "vhost-user/vu-backend.h"
#include "vhost-user/vu-mem.h"

/* What we offer: no migration logging, no back-end-initiated messages.
 * (REPLY_ACK and CONFIG are what a vhost-user-blk front end needs for
 * sizes and acknowledgements, MQ for queues, RESET_DEVICE for a guest's
 * device reset, INFLIGHT_SHMFD for requests that survive a back-end
 * restart.) */
#define VU_PROTOCOL_FEATURES                                              \
	(BIT(VHOST_USER_PROTOCOL_F_MQ) | BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK) | \
	 BIT(VHOST_USER_PROTOCOL_F_CONFIG) |                              \
	 BIT(VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD) |                      \
	 BIT(VHOST_USER_PROTOCOL_F_RESET_DEVICE))

struct vu_ring {
	struct vu_backend *b;
	/* Handed to the device (its vq is the started split ring). */
	struct virtio_queue q;
	/* Front-end state for this ring (control thread). */
	uint16_t num;		 /* SET_VRING_NUM, 0: not yet */
	uint16_t next_avail;	 /* SET_VRING_BASE; GET_VRING_BASE answer */
	bool has_addr;
	struct vhost_user_vring_addr addr;
	int kick_fd;		 /* -1: none */
	bool enable;		 /* SET_VRING_ENABLE */
	bool started;		 /* ops->start_queue() succeeded */
	/*
	 * fd_lock protects call_fd and err_fd, which the device's I/O thread
	 * writes (vu_queue_notify(), vu_queue_needs_reset()) while the
	 * control thread may swap them (SET_VRING_CALL/ERR come at any time:
	 * a front end masks and unmasks a ring's interrupt that way): an old fd is
	 * closed only after the swap, under the lock, so a notify never
	 * writes a closed or reused fd number.  Never held across a wait.
	 */
	pthread_mutex_t fd_lock;
	int call_fd, err_fd;	 /* -1: none */
	bool broken_logged;	 /* needs_reset logged (fd_lock) */
};

struct vu_backend {
	const struct virtio_device_ops *ops;
	void *dev;
	char name[64];
	unsigned int nq;
	uint16_t max_qsize;
	uint64_t offered;	   /* GET_FEATURES */
	/* Connection state (control thread). */
	bool owner;
	uint64_t acked;		   /* SET_FEATURES */
	bool features_set;
	uint64_t acked_protocol;   /* SET_PROTOCOL_FEATURES */
	struct vu_mem mem;
	/* SET_INFLIGHT_FD: the front end's in-flight buffer, mapped (NULL:
	 * none; the rings then run untracked).  The fd is closed at once:
	 * the mapping keeps the file, the front end keeps its own fd. */
	uint8_t *inflight;
	size_t inflight_len;
	uint16_t inflight_nq, inflight_qsize;
	/* What GET_INFLIGHT_FD hands out: one sealed memfd for nq regions of
	 * max_qsize entries, made at create (before minivmm-blkd confines
	 * this thread: its seccomp class has no memfd_create/ftruncate),
	 * zeroed at each GET.  One is enough: one front end at a time, and
	 * a front end asks again only after it let go of its buffer (at a
	 * device reset).  -1 / NULL: none (GET answers size 0). */
	int own_fd;
	uint8_t *own_buf;
	size_t own_len;
	struct vu_ring *rings;
	/*
	 * Per ring, its in-flight tracker while it runs on the front end's
	 * buffer (SET_INFLIGHT_FD): rings[i].q.vq.inflight points to trk[i].
	 * Apart from the rings (2 KiB each, most of it a resubmission list)
	 * and written only when a ring is tracked: minivmm-blkd offers 1024
	 * rings, and calloc maps the pages of those never tracked lazily.
	 */
	struct virtq_inflight *trk;
};

/* vu-backend.c: rings and the device, for the message handlers. */
void vu_device_reset(struct vu_backend *b);
bool vu_inflight_acked(const struct vu_backend *b);
void vu_inflight_unmap(struct vu_backend *b);
void vu_ring_stop(struct vu_ring *r, bool cancel);
int vu_ring_try_start(struct vu_ring *r);
void vu_swap_fd(struct vu_ring *r, int *slot, int fd);

#endif
