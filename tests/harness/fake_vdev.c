/* SPDX-License-Identifier: MIT */
/* A virtio device model for transport tests (see fake_vdev.h). */
#include "fake_vdev.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/virtio_ids.h>
#include <linux/virtio_ring.h>

static void fvd_broken(const char *what, unsigned int a, unsigned int b)
{
	fprintf(stderr, "fake_vdev: transport broke the device contract: %s (%u, %u)\n",
		what, a, b);
	abort();
}

static uint64_t fvd_features(void *dev)
{
	return ((struct fvd *)dev)->features;
}

static int fvd_set_features(void *dev, uint64_t f)
{
	struct fvd *d = dev;

	d->set_features_calls++;
	if (d->refuse)
		return -EINVAL;
	d->accepted = f;
	return 0;
}

static void fvd_config_read(void *dev, uint32_t off, void *buf, uint32_t len)
{
	struct fvd *d = dev;

	if (off > FVD_CFG_SIZE || len > FVD_CFG_SIZE - off)
		fvd_broken("config read out of range", off, len);
	memcpy(buf, d->cfg + off, len);
}

static void fvd_config_write(void *dev, uint32_t off, const void *buf,
			     uint32_t len)
{
	struct fvd *d = dev;

	if (off > FVD_CFG_SIZE || len > FVD_CFG_SIZE - off)
		fvd_broken("config write out of range", off, len);
	memcpy(d->cfg + off, buf, len);
}

static int fvd_start(void *dev, struct virtio_queue *queues, unsigned int nr)
{
	struct fvd *d = dev;
	bool event_idx = d->accepted & (1ull << VIRTIO_RING_F_EVENT_IDX);

	d->start_calls++;
	d->queues = queues;
	d->nr = nr;
	d->started_enabled = 0;
	for (unsigned int i = 0; i < nr; i++) {
		struct virtio_queue *q = &queues[i];

		if (q->index != i)
			fvd_broken("queue out of index order", q->index, i);
		if (!q->enabled)
			continue;
		d->started_enabled++;
		if (!q->vq.ready)
			fvd_broken("enabled queue not ready", i, 0);
		if (q->kick_fd < 0)
			fvd_broken("enabled queue without a kick eventfd", i, 0);
		if (q->vq.event_idx != event_idx)
			fvd_broken("EVENT_IDX not as negotiated", i, event_idx);
	}
	return d->start_ret;
}

static void fvd_stop(void *dev)
{
	struct fvd *d = dev;

	d->stop_calls++;
	if (d->on_stop)
		d->on_stop(d);
}

const struct virtio_device_ops fvd_ops = {
	.device_id = VIRTIO_ID_BLOCK,
	.config_size = FVD_CFG_SIZE,
	.features = fvd_features,
	.set_features = fvd_set_features,
	.config_read = fvd_config_read,
	.config_write = fvd_config_write,
	.start = fvd_start,
	.stop = fvd_stop,
};

void fvd_init(struct fvd *d, uint64_t features)
{
	memset(d, 0, sizeof(*d));
	d->features = features;
}
