/* SPDX-License-Identifier: MIT */
/*
 * The kernel's vhost-net as the data path of one virtio-net queue pair
 * (vhost=on): one /dev/vhost-net file per pair moves frames between the
 * pair's two rings and its tap queue file, in a kernel thread, with the
 * transport's kick eventfd (the KVM ioeventfd) and call eventfd (the KVM
 * irqfd) handed over; no VMM thread sees the pair's data.  The control
 * queue stays with the device model (virtio-net.c).
 *
 * What vhost-net does is the ring work: the features it implements are
 * the ring layout and transport ones (VERSION_1, EVENT_IDX,
 * INDIRECT_DESC) and MRG_RXBUF; everything else (offloads, MQ, control
 * queue, MTU, MAC, link) is the tap's and the device model's.  The tap
 * carries the 12-byte virtio 1.x header itself (TUNSETVNETHDRSZ 12,
 * tap.h), so vhost adds none (VHOST_NET_F_VIRTIO_NET_HDR not acked).
 *
 * Context: vhost_net_open() on the device's creator (the API thread,
 * before confinement: open, VHOST_SET_OWNER, VHOST_SET_MEM_TABLE);
 * vhost_net_start()/vhost_net_stop() on the transport's thread (a vCPU
 * at DRIVER_OK and reset, or the control thread at the VM's end);
 * vhost_net_backend() on the thread that changes the link (the control
 * thread or an embedder's), ordered with them by the device.
 */
#ifndef VMM_DEVICES_NET_VHOST_NET_H
#define VMM_DEVICES_NET_VHOST_NET_H

#include <stdint.h>

#include "memory.h"
#include "util/compiler.h"
#include "virtio/virtio.h"

#define VHOST_NET_DEV "/dev/vhost-net"

/* Feature bits vhost-net must implement for the driver to get them: the
 * ring and transport ones and MRG_RXBUF (virtio bit numbers). */
#define VHOST_NET_DATA_FEATURES                                              \
	((1ull << 32 /* VIRTIO_F_VERSION_1 */) |                            \
	 (1ull << 29 /* VIRTIO_RING_F_EVENT_IDX */) |                       \
	 (1ull << 28 /* VIRTIO_RING_F_INDIRECT_DESC */) |                   \
	 (1ull << 15 /* VIRTIO_NET_F_MRG_RXBUF */))

/* What the device may offer the driver with a vhost-net whose
 * VHOST_GET_FEATURES said @vhost: the model's @model less the data-path
 * features vhost-net lacks. */
static inline uint64_t vhost_net_offer(uint64_t model, uint64_t vhost)
{
	return model & (~VHOST_NET_DATA_FEATURES | vhost);
}

/* What VHOST_SET_FEATURES gets of the driver's @features. */
static inline uint64_t vhost_net_acked(uint64_t features)
{
	return features & VHOST_NET_DATA_FEATURES;
}

/*
 * vhost_net_open - open @path (VHOST_NET_DEV; another path for tests),
 * VHOST_SET_OWNER, VHOST_GET_FEATURES into *@features, and
 * VHOST_SET_MEM_TABLE with @mem's RAM regions (guest-physical to our
 * addresses; any RAM backend).  Returns the file in *@fd and 0,
 * -ENOENT (no such device: vhost_net not loaded), -EACCES/-EPERM,
 * -EOPNOTSUPP (no VIRTIO_F_VERSION_1), -EINVAL (no regions), -ENOMEM, or
 * the kernel's error; nothing is left open on failure.  @what names the
 * failing step for the caller's message.
 */
int vhost_net_open(const char *path, const struct guest_mem *mem, int *fd,
		   uint64_t *features, const char **what) __must_check;

/*
 * vhost_net_start - hand pair (@rx, @tx) to vhost file @fd with backend
 * @tap: VHOST_SET_FEATURES (vhost_net_acked(@features)), then per ring
 * VHOST_SET_VRING_NUM, BASE (vq.last_avail_idx), ADDR, KICK, CALL (-1
 * for a queue without a vector), then VHOST_NET_SET_BACKEND (@tap -1:
 * parked, as vhost_net_backend()).  On failure
 * what was handed over is stopped again.  Returns 0 or the kernel's
 * -errno (@what: the failing request).
 */
int vhost_net_start(int fd, uint64_t features, struct virtio_queue *rx,
		    struct virtio_queue *tx, int tap, const char **what)
	__must_check;

/*
 * vhost_net_backend - VHOST_NET_SET_BACKEND @tap on both rings of a pair
 * vhost_net_start() handed over: -1 parks them (the kernel takes nothing
 * from either ring, which keep their state), the tap lets them run again
 * from where they were.  Returns 0 or the kernel's -errno (@what).
 */
int vhost_net_backend(int fd, int tap, const char **what) __must_check;

/*
 * vhost_net_stop - VHOST_NET_SET_BACKEND -1 on both rings (the kernel
 * stops and flushes them), then VHOST_GET_VRING_BASE: where each stopped
 * goes into its vq.last_avail_idx, so a restart (bus mastering back on)
 * continues there.  Returns the first error (the rings are stopped as
 * far as the kernel let us).
 */
int vhost_net_stop(int fd, struct virtio_queue *rx, struct virtio_queue *tx);

#endif
