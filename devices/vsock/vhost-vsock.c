/* SPDX-License-Identifier: MIT */
/* virtio-vsock on the kernel's vhost-vsock (vhost-vsock.h). */
#include <endian.h>
#include <errno.h>
#include <linux/vhost.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "vhost/vhost-kern.h"
#include "vsock/vhost-vsock.h"
#include "vsock/vsock-proto.h"

struct vhost_vsock {
	int fd;
	uint64_t cid;
	uint64_t vhost_features; /* the kernel's */
	uint64_t acked;		 /* the driver's, at FEATURES_OK */
	/* Context: the transport's thread, for those below. */
	struct virtio_queue *qs; /* the transport's, while handed over */
	bool running;
	struct log_limit log;
};

static int vhv_running(struct vhost_vsock *d, int on, const char **what)
{
	return vhost_kern_ioctl(d->fd, VHOST_VSOCK_SET_RUNNING, &on,
				"VHOST_VSOCK_SET_RUNNING", what);
}

/* Take the rings back, where each stopped kept for a restart. */
static void vhv_stop(void *dev)
{
	struct vhost_vsock *d = dev;
	const char *what = "";
	int r;

	if (!d->qs)
		return;
	r = d->running ? vhv_running(d, 0, &what) : 0;
	d->running = false;
	for (unsigned int i = VSOCK_QUEUE_RX; i <= VSOCK_QUEUE_TX; i++) {
		int r2 = vhost_kern_ring_base(d->fd, i, &d->qs[i]);

		if (!r && r2) {
			r = r2;
			what = "VHOST_GET_VRING_BASE";
		}
	}
	if (r)
		log_limited(&d->log, VMM_LOG_ERROR, "vsock",
			    "vhost: stopping failed: %s: %s", what, strerror(-r));
	d->qs = NULL;
}

/* DRIVER_OK: the receive and transmit rings to the kernel (the event
 * queue stays here, unserved), then running. */
static int vhv_start(void *dev, struct virtio_queue *qs, unsigned int nr)
{
	struct vhost_vsock *d = dev;
	const char *what = "";
	int ret;

	if (nr <= VSOCK_QUEUE_TX || !qs[VSOCK_QUEUE_RX].enabled ||
	    !qs[VSOCK_QUEUE_TX].enabled)
		return -EINVAL;
	d->qs = qs;
	if (!(ret = vhost_kern_set_features(d->fd, d->acked, &what)) &&
	    !(ret = vhost_kern_ring(d->fd, VSOCK_QUEUE_RX, &qs[VSOCK_QUEUE_RX], &what)) &&
	    !(ret = vhost_kern_ring(d->fd, VSOCK_QUEUE_TX, &qs[VSOCK_QUEUE_TX], &what)) &&
	    !(ret = vhv_running(d, 1, &what)))
		d->running = true;
	if (ret) {
		log_limited(&d->log, VMM_LOG_ERROR, "vsock",
			    "vhost: %s failed: %s", what, strerror(-ret));
		vhv_stop(d);
	}
	return ret;
}

static uint64_t vhv_features(void *dev)
{
	return vhost_vsock_offer(((struct vhost_vsock *)dev)->vhost_features);
}

/* Context: vCPU thread, at FEATURES_OK (the rings are stopped). */
static int vhv_set_features(void *dev, uint64_t f)
{
	struct vhost_vsock *d = dev;

	if (!(f & (1ull << 32)) || (f & ~vhv_features(d)))
		return -EINVAL;
	d->acked = f;
	return 0;
}

static void vhv_config_read(void *dev, uint32_t off, void *buf, uint32_t len)
{
	vsock_config_read(((struct vhost_vsock *)dev)->cid, off, buf, len);
}

static void vhv_config_write(void *dev, uint32_t off, const void *buf, uint32_t len)
{
	(void)dev, (void)off, (void)buf, (void)len; /* vsock_config_read() */
}

static const struct virtio_device_ops vhv_ops = {
	.device_id = VSOCK_DEVICE_ID,
	.config_size = sizeof(struct vsock_config),
	.features = vhv_features,
	.set_features = vhv_set_features,
	.config_read = vhv_config_read,
	.config_write = vhv_config_write,
	.start = vhv_start,
	.stop = vhv_stop,
};

void vhost_vsock_virtio(struct vhost_vsock *d, struct virtio_device *out)
{
	*out = (struct virtio_device){
		.ops = &vhv_ops,
		.dev = d,
		.num_queues = VSOCK_NUM_QUEUES,
		.queue_size = 256,
		/* The kernel writes the rings' call eventfds. */
		.external_queues = true,
	};
}

int vhost_vsock_create(const char *path, const struct guest_mem *mem,
		       uint64_t cid, struct vhost_vsock **out, const char **what)
{
	struct vhost_vsock *d = calloc(1, sizeof(*d));
	int ret;

	*what = "allocation";
	if (!d)
		return -ENOMEM;
	d->cid = cid;
	ret = vhost_kern_open(path, mem, &d->fd, &d->vhost_features, what);
	if (ret) {
		free(d);
		return ret;
	}
	/* Here rather than at DRIVER_OK: a CID in use fails the start. */
	ret = vhost_kern_ioctl(d->fd, VHOST_VSOCK_SET_GUEST_CID, &d->cid,
			       "VHOST_VSOCK_SET_GUEST_CID", what);
	if (ret) {
		close(d->fd);
		free(d);
		return ret;
	}
	log_limit_init(&d->log, "vhost-vsock errors");
	*out = d;
	return 0;
}

void vhost_vsock_destroy(struct vhost_vsock *d)
{
	if (!d)
		return;
	vhv_stop(d);
	close(d->fd);
	log_limit_destroy(&d->log, "until the vsock was removed");
	free(d);
}
