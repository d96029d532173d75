/* SPDX-License-Identifier: MIT */
/*
 * The disks of vmm_add_disk() as machine devices (machine-int.h): an image
 * (vblk), its virtio-blk device on the VM's I/O threads, and a virtio-pci
 * function for it.
 */
#include <errno.h>
#include <string.h>

#include "blk/vblk.h"
#include "blk/virtio-blk.h"
#include "machine-config.h"
#include "log.h"
#include "machine-int.h"
#include "pci-params.h"
#include "rates.h"
#include "virtio/virtio-pci.h"
#include "vm.h"
#include "vmm/vmm-bench.h"

/* vmm_disk_config.flags are handed to vblk as they are. */
_Static_assert(VMM_DISK_READONLY == VBLK_OPT_READONLY &&
		       VMM_DISK_DIRECT == VBLK_OPT_DIRECT &&
		       VMM_DISK_NO_FLUSH == VBLK_OPT_NO_FLUSH &&
		       VMM_DISK_NO_EVENT_IDX == VBLK_OPT_NO_EVENT_IDX &&
		       VMM_DISK_NO_LOCK == VBLK_OPT_NO_LOCK,
	       "disk flag values differ");

static int disk_create(struct vmm *vm, struct machine *m, struct machine_device *d)
{
	const struct machine_disk_config *dc = &vm->config->disks[d->id];
	const struct vmm_disk_config *c = &dc->cfg;
	struct vblk_options o = {
		.path = c->path,
		.fd = dc->fd,
		/* The wiring flag is the transport's, not vblk's. */
		.flags = c->flags & ~VMM_DISK_PER_VECTOR_WIRING,
		.num_queues = (uint16_t)d->nq,
		.queue_size = c->queue_size,
		.serial = c->serial,
	};
	struct virtio_blk_params dp = {
		.iothreads = m->iothreads,
		.nr_iothreads = m->nr_iothreads,
		.poll_us = c->poll_us,
	};
	struct ratelimit_cfg rate;
	struct vpci_params tp;
	struct virtio_device vd;
	struct virtio_blk *dev;
	struct vblk *blk;
	int ret;

	if (!c->num_queues && d->nq < MIN(vm->nr_vcpus,
					  (unsigned int)VMM_MAX_DISK_QUEUES))
		vmm_info("disk %u: %u queues instead of one per vCPU, so that "
			 "every disk's queues fit in KVM's MSI routes", d->id, d->nq);
	ret = vblk_open(&o, &blk);
	if (ret) {
		vmm_err("disk %u (%s): cannot open the image: %s", d->id,
			c->path ? c->path : "fd", strerror(-ret));
		return ret;
	}
	dp.blk = blk;
	machine_rate_cfg(&dc->rate, &rate);
	dp.rate = &rate;
	ret = virtio_blk_create(&dp, &dev);
	if (ret) {
		vblk_close(blk);
		return ret;
	}
	d->dev = dev;
	virtio_blk_virtio(dev, &vd);
	machine_vpci_params(vm, m, &tp);
	tp.per_vector_wiring = c->flags & VMM_DISK_PER_VECTOR_WIRING;
	vpci_params_set_device(&tp, &vd);
	ret = vpci_create(&tp, &d->transport);
	if (ret) {
		vmm_err("disk %u: cannot create its virtio-pci device: %s", d->id,
			strerror(-ret));
		return ret;
	}
	vmm_info("disk %u: %s, %u queues of %u, %llu sectors", d->id,
		 c->path ? c->path : "fd", d->nq, tp.max_queue_size,
		 (unsigned long long)disk_capacity(vblk_disk(blk)));
	return 0;
}

/* Drain in-flight I/O.  The VM fd goes next (machine_join() is never
 * followed by another run of it): its KVM wiring is left for KVM to drop
 * (vpci_shutdown()).  Also the NICs' stop (nets.c). */
void machine_vpci_stop(struct machine_device *d)
{
	if (d->transport)
		vpci_shutdown(d->transport);
}

static void disk_destroy(struct machine_device *d)
{
	vpci_destroy(d->transport);
	d->transport = NULL;
	virtio_blk_destroy(d->dev);
	d->dev = NULL;
}

const struct machine_device_ops machine_disk_ops = {
	.create = disk_create,
	.stop = machine_vpci_stop,
	.destroy = disk_destroy,
};
