/* SPDX-License-Identifier: MIT */
/*
 * The virtio-vsock device with the kernel's vhost-vsock as its host side
 * (vmm_add_vsock() with VMM_VSOCK_VHOST): host programs use AF_VSOCK
 * directly.  One /dev/vhost-vsock file moves the packets of the receive
 * and transmit queues in a kernel thread, with the transport's kick
 * eventfds (KVM ioeventfds) and call eventfds (KVM irqfds) handed over:
 * no VMM thread sees the data, and the device declares its queues
 * external to the transport (virtio.h).  The event queue stays with the
 * device, which sends no events: its buffers wait, as with the hybrid
 * host side.
 *
 * The file is opened, owned, mapped and given the guest's CID at create
 * (vmm_start(), before confinement), so a CID another VM holds fails
 * there (-EADDRINUSE); DRIVER_OK hands the rings over and sets it
 * running; a reset (or the VM's end) stops it and keeps where each ring
 * stopped, so a driver re-initialising starts cleanly again.
 *
 * Context: vhost_vsock_create()/destroy() on the machine's creator;
 * the ops on the transport's thread (a vCPU, or the control thread at
 * the VM's end).
 */
#ifndef VMM_DEVICES_VSOCK_VHOST_VSOCK_H
#define VMM_DEVICES_VSOCK_VHOST_VSOCK_H

#include <stdint.h>

#include "memory.h"
#include "util/compiler.h"
#include "virtio/virtio.h"

#define VHOST_VSOCK_DEV "/dev/vhost-vsock"

/* Features the kernel must implement for the driver to get them (virtio
 * bit numbers): VERSION_1, EVENT_IDX, INDIRECT_DESC, SEQPACKET. */
#define VHOST_VSOCK_OFFER                                                    \
	((1ull << 32) | (1ull << 29) | (1ull << 28) | (1ull << 1))

/* What the device offers with a vhost-vsock whose VHOST_GET_FEATURES
 * said @vhost. */
static inline uint64_t vhost_vsock_offer(uint64_t vhost)
{
	return VHOST_VSOCK_OFFER & vhost;
}

struct vhost_vsock;

/*
 * vhost_vsock_create - open @path (VHOST_VSOCK_DEV; another for tests)
 * with guest RAM @mem (vhost-kern.h) and VHOST_VSOCK_SET_GUEST_CID @cid.
 * 0, or -ENOENT (no device: vhost_vsock not loaded), -EACCES/-EPERM,
 * -EADDRINUSE (another VM holds @cid), -EOPNOTSUPP, -EINVAL, -ENOMEM or
 * the kernel's error; *@what names the failing step.
 */
int vhost_vsock_create(const char *path, const struct guest_mem *mem,
		       uint64_t cid, struct vhost_vsock **out,
		       const char **what) __must_check;
/* Stops the rings if running; closes the file. */
void vhost_vsock_destroy(struct vhost_vsock *d);
/* @d as a virtio device (virtio.h), its queues external. */
void vhost_vsock_virtio(struct vhost_vsock *d, struct virtio_device *out);

#endif
