/* SPDX-License-Identifier: MIT */
/*
 * The virtio-fs devices of vmm_add_fs() as machine devices (machine-int.h):
 * a vhost-user front end to the configured back end (devices/fs), on a
 * virtio-pci function; no I/O threads (the back end serves the queues).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confine.h"
#include "fs/virtio-fs.h"
#include "log.h"
#include "machine-config.h"
#include "machine-int.h"
#include "pci-params.h"
#include "machine.h"
#include "virtio/virtio-pci.h"
#include "vm.h"

#define FS_QUEUE_SIZE 1024u /* default: what virtiofsd takes */

/* d->dev of a virtio-fs machine device. */
struct machine_fs {
	struct virtio_fs *fs;
	void *seccomp; /* the watch thread's filter (vm->seccomp) */
};

static int fs_create(struct vmm *vm, struct machine *m, struct machine_device *d)
{
	const struct vmm_fs_config *c = &vm->config->fs[d->id].cfg;
	char name[16];
	struct virtio_fs_params fp = {
		.tag = c->tag, .socket = c->socket, .mem = &vm->mem,
		.num_queues = d->nq,
		.queue_size = c->queue_size ? c->queue_size : FS_QUEUE_SIZE,
		.timeout_ms = (int)MIN(c->timeout_ms, (uint32_t)INT32_MAX),
		.name = name,
	};
	struct vpci_params tp;
	struct machine_fs *mf = calloc(1, sizeof(*mf));
	struct virtio_device vd;
	int ret;

	if (!mf)
		return -ENOMEM;
	d->dev = mf;
	mf->seccomp = vm->seccomp;
	snprintf(name, sizeof(name), "fs %u", d->id);
	ret = virtio_fs_create(&fp, &mf->fs);
	if (ret) {
		vmm_err("fs %u (tag %s): vhost-user back end at %s: %s", d->id,
			c->tag, c->socket, strerror(-ret));
		return ret;
	}
	virtio_fs_virtio(mf->fs, &vd);
	machine_vpci_params(vm, m, &tp);
	vpci_params_set_device(&tp, &vd);
	ret = vpci_create(&tp, &d->transport);
	if (ret) {
		vmm_err("fs %u: cannot create its virtio-pci device: %s", d->id,
			strerror(-ret));
		return ret;
	}
	vmm_info("fs %u: tag %s on %s, %u request queue(s) of %u", d->id, c->tag,
		 c->socket, virtio_fs_request_queues(mf->fs), tp.max_queue_size);
	return 0;
}

/* The watch thread, confined as the port threads are (poll, eventfd
 * read, KVM_SIGNAL_MSI-class calls of virtio_queue_needs_reset()). */
static int fs_start(struct machine_device *d)
{
	struct machine_fs *mf = d->dev;

	return virtio_fs_watch(mf->fs, mf->seccomp ? confine_port_thread : NULL,
			       mf->seccomp);
}

/* The back end stops at GET_VRING_BASE (vpci_shutdown() stops the
 * device); the watch thread goes first, the transport still whole. */
static void fs_stop(struct machine_device *d)
{
	struct machine_fs *mf = d->dev;

	if (mf)
		virtio_fs_unwatch(mf->fs);
	if (d->transport)
		vpci_shutdown(d->transport);
}

static void fs_destroy(struct machine_device *d)
{
	struct machine_fs *mf = d->dev;

	if (mf)
		virtio_fs_unwatch(mf->fs);
	vpci_destroy(d->transport);
	d->transport = NULL;
	if (mf)
		virtio_fs_destroy(mf->fs);
	free(mf);
	d->dev = NULL;
}

const struct machine_device_ops machine_fs_ops = {
	.create = fs_create,
	.start = fs_start,
	.stop = fs_stop,
	.destroy = fs_destroy,
};

void machine_fs_stats(struct vmm *vm, unsigned int id, struct vmm_fs_stats *st)
{
	struct machine *m = vm->machine;
	struct vpci_stats ts;
	struct vu_fe_stats fs;

	for (unsigned int i = 0; m && i < m->nr_devs; i++) {
		struct machine_device *d = &m->devs[i];
		struct machine_fs *mf = d->dev;

		if (d->ops != &machine_fs_ops || d->id != id || !mf || !mf->fs)
			continue;
		virtio_fs_get_stats(mf->fs, &fs);
		st->request_queues = virtio_fs_request_queues(mf->fs);
		st->messages = fs.messages;
		st->timeouts = fs.timeouts;
		st->disconnects = fs.disconnects;
		st->starts = fs.starts;
		st->stops = fs.stops;
		st->orphaned = fs.orphaned;
		if (d->transport) {
			vpci_get_stats(d->transport, &ts);
			st->needs_reset = ts.needs_reset;
		}
		return;
	}
}
