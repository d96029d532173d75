/* SPDX-License-Identifier: MIT */
/*
 * devbench: device throughput without KVM.  One measurement per run: a
 * simulated driver (devbench_driver.h) drives either libvmm's real
 * virtio-blk device (virtio-pci transport, I/O threads, io_uring or null
 * engine; devbench_libvmm.c) or a vhost-user-blk back end such as
 * qemu-storage-daemon (vhost_user.c), and prints one JSON record.
 */
#ifndef DEVBENCH_H
#define DEVBENCH_H

#include <stdio.h>

#include "devbench_driver.h"

struct db_cfg {
	const char *target;  /* "libvmm" or "vhost" */
	const char *backend; /* "null" or "file" (label; libvmm: engine) */
	const char *file;    /* image (libvmm file backend) */
	const char *sock;    /* vhost-user socket */
	const char *peer;    /* peer label for vhost ("qsd") */
	int peer_pid;	     /* back-end process, for its CPU time */
	unsigned int qd, queues, iothreads, queue_size, poll_us, rep;
	unsigned int peer_iothreads;
	int event_idx;
	double seconds, warmup;
	unsigned long long capacity; /* vhost: bytes (0: GET_CONFIG) */
	/* libvmm: the disk's rate limits (ratelimit.h; 0 = unlimited). */
	unsigned long long rate_bw, rate_bw_burst, rate_ops, rate_ops_burst;
};

/* A device under test.  setup() learns the capacity, initialises the
 * c->queues driver queues (db_queue_init) and brings the device up on them
 * (filling q[i].kick_fd / call_fd); teardown() runs after the driver
 * threads ended. */
struct db_target {
	int (*setup)(const struct db_cfg *c, struct db_ram *ram,
		     struct db_queue *q, volatile int *stop);
	/* Device-side counters in JSON (", \"k\": v" ...); may be NULL.
	 * Called at the start (@end false) and end of the window. */
	void (*snapshot)(bool end);
	void (*json)(FILE *f, double secs, double reqs);
	void (*teardown)(void);
};

extern const struct db_target db_libvmm_target;
extern const struct db_target db_vhost_target;

#endif
