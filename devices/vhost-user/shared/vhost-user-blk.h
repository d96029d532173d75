/* SPDX-License-Identifier: MIT */
/*
 * A vhost-user-blk back end, assembled from the library's own pieces: the
 * disk and its virtio-blk device (devices/blk), one I/O thread per
 * requested slot (one io_uring each, SCHED_BATCH or not), the vhost-user
 * transport (devices/vhost-user) and the seccomp classes "io" (the I/O
 * threads) and "vhost" (the control thread).
 *
 * This header is all minivmm-blkd sees of the library's inside (its build
 * target, vmm_vu_blk, gives it only this folder and include/): the daemon
 * keeps its command line, listening socket and signals.  It is not
 * installed and not part of the ABI.  Messages go through the library's
 * log (vmm_set_log()).
 */
#ifndef VMM_DEVICES_VHOST_USER_SHARED_VHOST_USER_BLK_H
#define VMM_DEVICES_VHOST_USER_SHARED_VHOST_USER_BLK_H

#include "vmm/vmm.h"

struct vu_blk;

struct vu_blk_params {
	/* path, flags, num_queues (the most a front end may use; not 0),
	 * queue_size (the largest ring), serial, poll_us; fd is not used */
	const struct vmm_disk_config *disk;
	unsigned int nr_iothreads; /* queue q is served by thread q mod N */
	int io_sched;		   /* enum vmm_iothread_sched */
	int stats_fd;		   /* vu_blk_print_stats()'s fd, or -1 */
};

/* Open the image, start the I/O threads, create the device and the
 * transport.  0 or -errno (logged). */
int vu_blk_create(const struct vu_blk_params *p, struct vu_blk **out);
/* Confine the I/O threads (each on itself), then the calling thread, with
 * seccomp in kill mode.  0 or -errno. */
int vu_blk_confine(struct vu_blk *b);
/* Serve one front end on the connected socket @conn until it disconnects,
 * or until @stop_fd (a signalfd) is readable: then -ESHUTDOWN, the signal
 * still queued.  0 or another -errno when the connection ended otherwise. */
int vu_blk_serve(struct vu_blk *b, int conn, int stop_fd);
/* The device's counters since the start, per queue only those a front end
 * started, as one JSON line on stats_fd (never blocking over a second).
 * Context: the control thread, between front ends. */
void vu_blk_print_stats(struct vu_blk *b);
/* Stop and free everything.  NULL-safe. */
void vu_blk_destroy(struct vu_blk *b);

#endif
