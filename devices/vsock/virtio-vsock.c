/* SPDX-License-Identifier: MIT */
/* The virtio-vsock device on the queue service (virtio-vsock.h). */
#include <endian.h>
#include <errno.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "virtio/vq-service.h"
#include "vsock/virtio-vsock.h"
#include "vsock/vsock-proto.h"

struct virtio_vsock {
	struct vsock *v;
	struct vqs *service;
	unsigned int iothread;
	uint64_t cid;
	/* Context: the serving I/O thread, for all below. */
	unsigned int attached; /* mask of attached queues */
	struct iothread *io;
	struct iothread_file ep_file; /* the epoll set, registered once */
	struct iothread_fd ep_watch;
};

/* Context: the I/O thread.  Host sockets ready: take what they have, then
 * serve the receive queue at the end of the batch. */
static void vv_host_events(void *opaque)
{
	struct virtio_vsock *d = opaque;
	struct vqs_queue *rx = vqs_queue(d->service, VSOCK_QUEUE_RX);

	vsock_host_events(d->v);
	if (vsock_rx_pending(d->v) && vqs_active(rx))
		vqs_kick(rx);
}

static int vv_process(void *dev, struct vqs_queue *q)
{
	struct virtio_vsock *d = dev;
	struct vqs_queue *rx = vqs_queue(d->service, VSOCK_QUEUE_RX);
	bool pushed = false;
	int r = 0;

	switch (vqs_index(q)) {
	case VSOCK_QUEUE_RX:
		r = vsock_rx_process(d->v, vqs_virtq(q), &pushed);
		break;
	case VSOCK_QUEUE_TX:
		r = vsock_tx_process(d->v, vqs_virtq(q), &pushed);
		/* Answers (RESPONSE, RST, credit) and data the guest's
		 * credit now allows go out on the receive queue. */
		if (vsock_rx_pending(d->v) && vqs_active(rx))
			vqs_kick(rx);
		break;
	default: /* event queue: its buffers wait for events never sent */
		break;
	}
	if (pushed)
		vqs_pushed(q);
	return r < 0 ? -EPROTO : 0;
}

/* The first queue attached (DRIVER_OK) starts the host side. */
static int vv_attach(void *dev, struct vqs_queue *q)
{
	struct virtio_vsock *d = dev;
	int ret;

	if (d->attached) {
		d->attached |= 1u << vqs_index(q);
		return 0;
	}
	d->io = vqs_iothread(q);
	if (!d->ep_file.held) {
		ret = iothread_file_get(d->io, vsock_epoll_fd(d->v), &d->ep_file);
		if (ret)
			return ret;
	}
	d->ep_watch = (struct iothread_fd){ .fd = vsock_epoll_fd(d->v),
					    .file = &d->ep_file,
					    .fn = vv_host_events, .opaque = d };
	ret = iothread_watch_fd(d->io, &d->ep_watch);
	if (ret)
		return ret;
	vsock_set_active(d->v, true);
	d->attached |= 1u << vqs_index(q);
	return 0;
}

/* The last queue stopped (reset): every connection ends; host clients
 * wait in the listen backlog until the next DRIVER_OK. */
static void vv_quiesce(void *dev, struct vqs_queue *q, bool cancel)
{
	struct virtio_vsock *d = dev;

	(void)cancel; /* nothing is ever in flight: packets are copied */
	if (!(d->attached & (1u << vqs_index(q))))
		return;
	d->attached &= ~(1u << vqs_index(q));
	if (d->attached)
		return;
	iothread_unwatch_fd(d->io, &d->ep_watch);
	vsock_set_active(d->v, false);
}

/* Every queue on one thread: the connections' state is that thread's. */
static unsigned int vv_iothread_of(void *dev, unsigned int index,
				   unsigned int nr_iothreads)
{
	(void)index;
	return ((struct virtio_vsock *)dev)->iothread % nr_iothreads;
}

/* RX (0) and event (2) hold buffers the device fills; TX (1) carries
 * the guest's packets. */
static bool vv_fills(void *dev, unsigned int index)
{
	(void)dev;
	return index != 1;
}

static const struct vqs_ops vv_vqs_ops = {
	.process = vv_process,
	.attach = vv_attach,
	.quiesce = vv_quiesce,
	.iothread_of = vv_iothread_of,
	.fills = vv_fills,
};

static uint64_t vv_features(void *dev)
{
	(void)dev;
	return (1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX);
}

static int vv_set_features(void *dev, uint64_t f)
{
	if (!(f & (1ull << VIRTIO_F_VERSION_1)) || (f & ~vv_features(dev)))
		return -EINVAL;
	return 0;
}

static void vv_config_read(void *dev, uint32_t off, void *buf, uint32_t len)
{
	vsock_config_read(((struct virtio_vsock *)dev)->cid, off, buf, len);
}

static void vv_config_write(void *dev, uint32_t off, const void *buf, uint32_t len)
{
	/* guest_cid is read-only: ignored, as the spec allows. */
	(void)dev, (void)off, (void)buf, (void)len;
}

static int vv_start(void *dev, struct virtio_queue *queues, unsigned int nr)
{
	return vqs_start(((struct virtio_vsock *)dev)->service, queues, nr);
}

static void vv_stop(void *dev)
{
	vqs_stop(((struct virtio_vsock *)dev)->service);
}

static const struct virtio_device_ops vv_ops = {
	.device_id = VSOCK_DEVICE_ID,
	.config_size = sizeof(struct vsock_config),
	.features = vv_features,
	.set_features = vv_set_features,
	.config_read = vv_config_read,
	.config_write = vv_config_write,
	.start = vv_start,
	.stop = vv_stop,
};

void virtio_vsock_virtio(struct virtio_vsock *d, struct virtio_device *out)
{
	*out = (struct virtio_device){
		.ops = &vv_ops,
		.dev = d,
		.num_queues = VSOCK_NUM_QUEUES,
		.queue_size = VIRTIO_VSOCK_QUEUE_SIZE,
	};
}

int virtio_vsock_create(const struct virtio_vsock_params *p,
			struct virtio_vsock **out)
{
	struct vqs_params sp = {
		.ops = &vv_vqs_ops,
		.name = "virtio-vsock",
		.nr_queues = VSOCK_NUM_QUEUES,
		.iothreads = p->iothreads,
		.nr_iothreads = p->nr_iothreads,
	};
	struct virtio_vsock *d = calloc(1, sizeof(*d));
	int ret;

	if (!d) {
		if (p->vsock.listen_fd >= 0)
			close(p->vsock.listen_fd);
		return -ENOMEM;
	}
	d->cid = p->vsock.guest_cid;
	d->iothread = p->iothread;
	sp.dev = d;
	ret = vsock_create(&p->vsock, &d->v);
	if (ret) {
		if (p->vsock.listen_fd >= 0)
			close(p->vsock.listen_fd);
		free(d);
		return ret;
	}
	ret = vqs_create(&sp, &d->service);
	if (ret) {
		virtio_vsock_destroy(d);
		return ret;
	}
	*out = d;
	return 0;
}

void virtio_vsock_destroy(struct virtio_vsock *d)
{
	if (!d)
		return;
	vqs_destroy(d->service); /* stops the queues: nothing runs after */
	if (d->ep_file.held)
		iothread_file_put(d->io, &d->ep_file);
	vsock_destroy(d->v);
	free(d);
}

void virtio_vsock_get_stats(struct virtio_vsock *d, struct virtio_vsock_stats *st)
{
	memset(st, 0, sizeof(*st));
	vsock_get_stats(d->v, &st->vsock);
	for (unsigned int i = 0; i < VSOCK_NUM_QUEUES; i++) {
		struct vqs_queue_stats qs;

		if (d->service && !vqs_queue_stats(d->service, i, &qs)) {
			st->kicks += qs.kicks;
			st->interrupts += qs.interrupts;
		}
	}
}
