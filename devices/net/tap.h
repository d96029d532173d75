/* SPDX-License-Identifier: MIT */
/*
 * Tap back end of virtio-net: one file per queue pair of a multi-queue
 * tap (IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | IFF_MULTI_QUEUE), each read
 * and written one frame at a time after a 12-byte virtio-net header
 * (vnet.h), non-blocking.
 */
#ifndef VMM_DEVICES_NET_TAP_H
#define VMM_DEVICES_NET_TAP_H

#include <stdbool.h>

#include "util/compiler.h"

/*
 * Open @nr queues of tap @name (created if it does not exist and we may),
 * into @fds.  Returns 0, -EINVAL (a name too long), or the kernel's error
 * (-ENOENT: no /dev/net/tun; -EPERM: no CAP_NET_ADMIN to create it or not
 * its owner; -EBUSY: a tap of another kind, or one without multi-queue
 * already attached).  Context: the device's creator.
 */
int tap_open(const char *name, unsigned int nr, int *fds) __must_check;
/* Take an inherited tap file: set the header size (12) and O_NONBLOCK,
 * check it has a virtio-net header.  0, -EBADF or -EINVAL. */
int tap_adopt(int fd) __must_check;
/* The interface's name (at least 16 bytes), for messages and a stable
 * MAC.  0 or -errno. */
int tap_ifname(int fd, char *name) __must_check;
/* TUNSETOFFLOAD with TUN_F_* @offloads.  0 or -errno. */
int tap_set_offload(int fd, unsigned int offloads) __must_check;
/* Attach (@on) or detach one queue file of a multi-queue tap: the kernel
 * steers no frame to a detached queue.  0 or -errno (-EINVAL from a tap
 * without multi-queue, which has just one queue: ignored by callers). */
int tap_set_queue(int fd, bool on);

#endif
