/* SPDX-License-Identifier: MIT */
/*
 * The device-neutral part of a kernel vhost device (/dev/vhost-net,
 * /dev/vhost-vsock): the file opened and owned, guest RAM as its memory
 * table, the features set, and a transport's rings handed over (size,
 * where to start, addresses, kick and call eventfds) and taken back.
 * What is device-specific (vhost-net's backend, vhost-vsock's CID and
 * running switch) stays with the device (net/vhost-net.c,
 * vsock/vhost-vsock.c).
 *
 * Each function names the failing request in *@what for the caller's
 * message and returns 0 or the kernel's -errno.
 *
 * Context: vhost_kern_open() on the device's creator (the API thread at
 * vmm_start(), before confinement: open, VHOST_SET_OWNER and the memory
 * table are on no seccomp list); the others on the transport's thread (a
 * vCPU at DRIVER_OK and reset, or the control thread at the VM's end).
 */
#ifndef VMM_DEVICES_VHOST_VHOST_KERN_H
#define VMM_DEVICES_VHOST_VHOST_KERN_H

#include <stdint.h>

#include "memory.h"
#include "util/compiler.h"
#include "virtio/virtio.h"

/* One ioctl on @fd; on failure *@what = @name and -errno. */
int vhost_kern_ioctl(int fd, unsigned long req, void *arg, const char *name,
		     const char **what) __must_check;

/*
 * vhost_kern_open - open @path, VHOST_SET_OWNER, VHOST_GET_FEATURES into
 * *@features (which must hold VIRTIO_F_VERSION_1), VHOST_SET_MEM_TABLE
 * with @mem's RAM regions (guest-physical to our addresses).  The file in
 * *@fd and 0, or -ENOENT (no such device: the module not loaded),
 * -EACCES/-EPERM, -EOPNOTSUPP (no VERSION_1), -EINVAL (no regions),
 * -ENOMEM or the kernel's error; nothing is left open on failure.
 */
int vhost_kern_open(const char *path, const struct guest_mem *mem, int *fd,
		    uint64_t *features, const char **what) __must_check;

/* VHOST_SET_FEATURES with @acked (what the driver accepted of the
 * kernel's). */
int vhost_kern_set_features(int fd, uint64_t acked, const char **what)
	__must_check;

/*
 * vhost_kern_ring - ring @q as vhost ring @idx: VHOST_SET_VRING_NUM,
 * BASE (q->vq.last_avail_idx), ADDR (inside guest RAM: the transport
 * validated the rings at its start), CALL (q->call_fd; -1: none), KICK.
 */
int vhost_kern_ring(int fd, unsigned int idx, struct virtio_queue *q,
		    const char **what) __must_check;

/* vhost_kern_ring_base - VHOST_GET_VRING_BASE of stopped ring @idx into
 * q->vq.last_avail_idx, so a restart continues where it stopped. */
int vhost_kern_ring_base(int fd, unsigned int idx, struct virtio_queue *q);

#endif
