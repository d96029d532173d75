/* SPDX-License-Identifier: MIT */
/*
 * minivmm-blkd driven without KVM: the daemon runs as a child process on a
 * temporary image, and the test plays QEMU and the guest at once -- the
 * vhost-user front end (vu_front.h) on its socket, guest RAM in a memfd
 * (fake_guest.h, fg_init_memfd()), the driver side of the split rings, a
 * kick eventfd per ring (what KVM would signal) and a call eventfd per ring
 * (what the guest's interrupt would be).  For the check_vhost_user*
 * tests.  Check-free like the rest of the harness: set-up steps return 0 or
 * -errno.
 */
#ifndef VMM_TESTS_HARNESS_VU_RIG_H
#define VMM_TESTS_HARNESS_VU_RIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fake_guest.h"
#include "vu_front.h"

#define VR_MAX_Q 64

struct vr_opts {
	uint64_t img_size;	/* 0: 16 MiB, filled with vr_pat() */
	const char *disk_extra; /* appended to "path=IMG": ",ro=on,..." */
	const char *const *args; /* more daemon arguments, NULL-terminated */
	unsigned int cpus;	/* run it on this many of our CPUs (its
				   affinity mask, as taskset would); 0: all */
};

struct vr_q {
	struct fg_vq vq;
	bool inited;
	int kick, call;
};

struct vr {
	pid_t pid;
	char dir[64], sock[128], img[128], log[128];
	uint64_t img_size;
	/* One front end's connection (vr_connect() .. vr_disconnect()). */
	struct vuf f;
	struct fake_guest g;
	bool have_g;
	unsigned int nq;
	uint16_t qsize;
	uint64_t features;
	struct vr_q q[VR_MAX_Q];
};

/* Image content before any write. */
uint8_t vr_pat(uint64_t off);

/* Make the image and start @bin on it; 0 or -errno. */
int vr_spawn(struct vr *r, const char *bin, const struct vr_opts *o);
/* SIGTERM the daemon and reap it: its wait status (-1 if it was gone);
 * removes the image and socket.  Safe after a failed vr_spawn(). */
int vr_stop(struct vr *r);
/* Whether the daemon still runs (reaps it if not: *status then). */
bool vr_alive(struct vr *r, int *status);
/* Its open file descriptors and resident memory (/proc). */
int vr_fd_count(const struct vr *r);
/* Its threads whose name starts with @prefix ("vmm-io": the I/O threads),
 * or -errno. */
int vr_thread_count(const struct vr *r, const char *prefix);
long vr_rss_kib(const struct vr *r);
/* The daemon's stderr so far (for failure messages), NUL-terminated. */
void vr_log_tail(const struct vr *r, char *buf, unsigned int len);
/*
 * The end of a test: disconnect, then the daemon must still run and exit
 * 0 on SIGTERM (vr_stop()).  Returns 0, or -1 with what went wrong (and
 * the log's tail if it died) in @why.
 */
int vr_end(struct vr *r, char *why, unsigned int len);
/*
 * The @nth (1-based) --stats-json line ({"blkd":...}) the daemon printed,
 * waited for up to 5 s, without its newline, in @out.  Returns 0,
 * -ETIMEDOUT (not there in time) or -E2BIG (longer than @len - 1).
 */
int vr_stats_line(struct vr *r, unsigned int nth, char *out, size_t len);

/*
 * Connect as a front end and bring up @nq rings of @qsize entries on fresh
 * guest RAM (@ram bytes, 0: 16 MiB) the way QEMU does: init with MQ,
 * REPLY_ACK and CONFIG, SET_FEATURES(@features & offered), SET_MEM_TABLE,
 * then per ring NUM/BASE/ADDR/KICK/CALL/ENABLE.
 */
int vr_connect(struct vr *r, unsigned int nq, uint16_t qsize, uint64_t features,
	       uint64_t ram);
/* Only the connection and the negotiation (no RAM, no rings). */
int vr_connect_bare(struct vr *r);
/* Close the socket (as a killed QEMU would) and free RAM and rings. */
void vr_disconnect(struct vr *r);

/* Make what was added visible and kick ring @q (regardless of EVENT_IDX). */
void vr_kick(struct vr *r, unsigned int q);
/* Collect used entries of ring @q until @n came or @timeout_ms passed
 * (waiting on the call eventfd); returns how many came. */
unsigned int vr_wait_used(struct vr *r, unsigned int q, unsigned int n,
			  uint32_t *ids, unsigned int timeout_ms);

/*
 * One request on ring @q, waited for: @type at @sector with @len bytes of
 * data (IN: read into @buf; OUT: from @buf; 0 and NULL for FLUSH/GET_ID
 * with @len for GET_ID's 20 bytes; DISCARD/WRITE_ZEROES: @buf is the
 * 16-byte range).  Returns the status byte (VIRTIO_BLK_S_*), or -errno
 * (-ETIMEDOUT: no completion).
 */
int vr_req(struct vr *r, unsigned int q, uint32_t type, uint64_t sector,
	   void *buf, uint32_t len);

/* Read @len bytes of the image at @off (host side). */
int vr_img_read(struct vr *r, uint64_t off, void *buf, uint32_t len);

#endif
