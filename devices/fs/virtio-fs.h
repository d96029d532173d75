/* SPDX-License-Identifier: MIT */
/*
 * virtio-fs (virtio 1.2, section 5.11; device id 26) on a vhost-user back
 * end (virtiofsd): the device model is its configuration space (the tag
 * the guest mounts, the number of request queues) and a vhost-user front
 * end (vhost-user/vu-frontend.h) that hands the queues -- hiprio, then the
 * request queues -- to the back end at DRIVER_OK and takes them back at
 * reset.  No VMM thread serves them: the back end reads the kick eventfds
 * (KVM ioeventfds) and writes the call eventfds (KVM irqfds) itself, so
 * the device declares external_queues to its transport.
 *
 * The config space is the device's own (the user's tag, the request
 * queues negotiated) unless the back end supplies one: a back end that
 * offers VHOST_USER_PROTOCOL_F_CONFIG (Debian's rust virtiofsd >= 1.11
 * started with --tag; not QEMU 7.2's C virtiofsd) is read with GET_CONFIG
 * at create.  Its tag, if not empty, must equal the user's, else the
 * create fails with -EINVAL and an error naming both (a back end that
 * exports its share under another name is a set-up mistake: the guest
 * would mount a tag nobody asked for, or fail to find the one it was
 * told).  Its num_request_queues, if smaller than ours, is what the guest
 * sees.  The config stays read-only; no SET_CONFIG.
 *
 * A back end that goes away while the guest runs: the watch thread sets
 * NEEDS_RESET on the device (Linux's driver ignores it) and then answers
 * every request on the rings itself with EIO (a fuse_out_header; nothing
 * for requests that take no reply, e.g. FORGET), those the back end left
 * unanswered first, so the guest's file operations fail instead of
 * waiting forever; the VM runs on.
 *
 * Context: create/destroy on the API thread; the ops on the transport's
 * thread (vCPU, its lock held).
 */
#ifndef VMM_DEVICES_FS_VIRTIO_FS_H
#define VMM_DEVICES_FS_VIRTIO_FS_H

#include <stdint.h>

#include "memory.h"
#include "util/compiler.h"
#include "vhost-user/vu-frontend.h"
#include "virtio/virtio.h"

#define VIRTIO_FS_TAG_MAX 36u /* bytes of the config's tag, NUL not needed */

struct virtio_fs;

struct virtio_fs_params {
	const char *tag;	     /* 1..VIRTIO_FS_TAG_MAX bytes */
	const char *socket;	     /* the back end's vhost-user socket */
	const struct guest_mem *mem; /* shareable guest RAM */
	/* Transport queues: 1 (hiprio) + at most this many request queues;
	 * the back end may serve fewer (GET_QUEUE_NUM). */
	unsigned int num_queues;
	uint16_t queue_size;	     /* power of two */
	int timeout_ms;		     /* per vhost-user reply; 0: default */
	const char *name;	     /* for the log ("fs 0") */
};

/* Connect to the back end and negotiate (vu_fe_open()'s errors), or
 * -EINVAL (bad tag, num_queues < 2, the back end's tag (CONFIG) another
 * one). */
int virtio_fs_create(const struct virtio_fs_params *p, struct virtio_fs **out)
	__must_check;
/* Start the watch thread (vu_fe_watch()): 0 or -errno. */
int virtio_fs_watch(struct virtio_fs *fs, int (*thread_init)(void *arg),
		    void *arg) __must_check;
/* Stop the watch thread (before the transport goes).  Idempotent. */
void virtio_fs_unwatch(struct virtio_fs *fs);
void virtio_fs_destroy(struct virtio_fs *fs);
/* Its declaration for a transport (virtio.h). */
void virtio_fs_virtio(struct virtio_fs *fs, struct virtio_device *vd);
/* Request queues the guest is told about (config num_request_queues). */
unsigned int virtio_fs_request_queues(const struct virtio_fs *fs);
void virtio_fs_get_stats(struct virtio_fs *fs, struct vu_fe_stats *st);

#endif
