/* SPDX-License-Identifier: MIT */
/* The kernel's vhost-net as a queue pair's data path (vhost-net.h), on
 * the device-neutral vhost file (vhost/vhost-kern.h). */
#include <errno.h>
#include <linux/vhost.h>

#include "net/vhost-net.h"
#include "vhost/vhost-kern.h"

/* vhost-net's ring numbers within one file. */
#define VHOST_RX 0u
#define VHOST_TX 1u

int vhost_net_open(const char *path, const struct guest_mem *mem, int *fd,
		   uint64_t *features, const char **what)
{
	return vhost_kern_open(path, mem, fd, features, what);
}

static int vh_backend(int fd, unsigned int idx, int tap, const char **what)
{
	struct vhost_vring_file b = { idx, tap };

	return vhost_kern_ioctl(fd, VHOST_NET_SET_BACKEND, &b,
				"VHOST_NET_SET_BACKEND", what);
}

int vhost_net_start(int fd, uint64_t features, struct virtio_queue *rx,
		    struct virtio_queue *tx, int tap, const char **what)
{
	int ret;

	if ((ret = vhost_kern_set_features(fd, vhost_net_acked(features), what)) ||
	    (ret = vhost_kern_ring(fd, VHOST_RX, rx, what)) ||
	    (ret = vhost_kern_ring(fd, VHOST_TX, tx, what)))
		return ret; /* no backend yet: the kernel serves nothing */
	if ((ret = vh_backend(fd, VHOST_RX, tap, what)) ||
	    (ret = vh_backend(fd, VHOST_TX, tap, what)))
		(void)vhost_net_stop(fd, rx, tx);
	return ret;
}

int vhost_net_backend(int fd, int tap, const char **what)
{
	int ret = vh_backend(fd, VHOST_RX, tap, what);

	return ret ? ret : vh_backend(fd, VHOST_TX, tap, what);
}

/* Stop vhost ring @idx and keep where it stopped in @q. */
static int vh_stop_ring(int fd, unsigned int idx, struct virtio_queue *q)
{
	const char *what;
	int ret = vh_backend(fd, idx, -1, &what);
	int r2 = vhost_kern_ring_base(fd, idx, q);

	return ret ? ret : r2;
}

int vhost_net_stop(int fd, struct virtio_queue *rx, struct virtio_queue *tx)
{
	int r1 = vh_stop_ring(fd, VHOST_RX, rx);
	int r2 = vh_stop_ring(fd, VHOST_TX, tx);

	return r1 ? r1 : r2;
}
