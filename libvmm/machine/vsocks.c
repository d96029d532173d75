/* SPDX-License-Identifier: MIT */
/*
 * The vsock of vmm_add_vsock() as a machine device (machine-int.h): the
 * listening socket at its path, the virtio-vsock device on one of the
 * VM's I/O threads, and a virtio-pci function for it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "machine-config.h"
#include "log.h"
#include "machine-int.h"
#include "pci-params.h"
#include "machine.h"
#include "virtio/virtio-pci.h"
#include "vm.h"
#include "vsock/virtio-vsock.h"
#include "vsock/vsock-host.h"
#include "vsock/vhost-vsock.h"

/* The path this start created: removed by destroy, unless seccomp
 * confines the thread that destroys (unlink is on no list: the next start
 * replaces the stale socket). */
struct machine_vsock {
	struct virtio_vsock *dev;
	struct vhost_vsock *vh; /* VMM_VSOCK_VHOST: instead of dev */
	unsigned int iothread; /* serving its queues and host sockets */
	const char *path; /* the configuration's */
	bool created, unlink;
};

static int mvsock_dev_create(struct vmm *vm, struct machine *m,
			     struct machine_vsock *mv)
{
	const struct vmm_vsock_config *c = &vm->config->vsock->cfg;
	struct virtio_vsock_params p = {
		.vsock = { .guest_cid = c->guest_cid, .path = c->socket_path },
		.iothreads = m->iothreads,
		.nr_iothreads = m->nr_iothreads,
		/* After the disks' queue 0s, which start at thread 0. */
		.iothread = vm->config->nr_disks,
	};
	int ret = vsock_host_listen(c->socket_path, &p.vsock.listen_fd);

	mv->iothread = p.iothread % m->nr_iothreads;

	if (ret) {
		vmm_err("vsock: cannot listen on %s: %s%s", c->socket_path,
			strerror(-ret), ret == -EADDRINUSE ?
			" (remove it if no VMM uses it)" : "");
		return ret;
	}
	mv->created = true;
	ret = virtio_vsock_create(&p, &mv->dev); /* owns listen_fd */
	if (ret)
		vmm_err("vsock: cannot create the device: %s", strerror(-ret));
	return ret;
}

/* VMM_VSOCK_VHOST: the kernel's vhost-vsock, opened here (vmm_start(),
 * before confinement) so a missing module or a CID in use fails the
 * start with its error. */
static int mvsock_vhost_create(struct vmm *vm, struct machine_vsock *mv,
			       struct virtio_device *vd)
{
	uint64_t cid = vm->config->vsock->cfg.guest_cid;
	const char *what = "";
	int ret = vhost_vsock_create(VHOST_VSOCK_DEV, &vm->mem, cid, &mv->vh, &what);

	if (ret) {
		vmm_err("vsock: vhost=on: %s %s failed: %s%s", what,
			VHOST_VSOCK_DEV, strerror(-ret),
			ret == -ENOENT ? " (load the vhost_vsock module)" :
			ret == -EADDRINUSE ? " (guest CID in use by another VM)" : "");
		return ret;
	}
	vhost_vsock_virtio(mv->vh, vd);
	return 0;
}

static int mvsock_create(struct vmm *vm, struct machine *m, struct machine_device *d)
{
	struct machine_vsock *mv = calloc(1, sizeof(*mv));
	struct vpci_params tp;
	struct virtio_device vd;
	int ret;

	if (!mv)
		return -ENOMEM;
	d->dev = mv;
	mv->path = vm->config->vsock->cfg.socket_path;
	mv->unlink = vm->config->seccomp_mode == VMM_SECCOMP_OFF;
	if (vm->config->vsock->cfg.flags & VMM_VSOCK_VHOST) {
		ret = mvsock_vhost_create(vm, mv, &vd);
		if (ret)
			return ret;
		mv->path = VHOST_VSOCK_DEV;
	} else {
		ret = mvsock_dev_create(vm, m, mv);
		if (ret)
			return ret;
		m->vsock = d;
		m->vsock_iothread = mv->iothread;
		virtio_vsock_virtio(mv->dev, &vd);
	}
	machine_vpci_params(vm, m, &tp);
	vpci_params_set_device(&tp, &vd);
	ret = vpci_create(&tp, &d->transport);
	if (ret) {
		vmm_err("vsock: cannot create its virtio-pci device: %s",
			strerror(-ret));
		return ret;
	}
	vmm_info("vsock: guest CID %llu, host side %s",
		 (unsigned long long)vm->config->vsock->cfg.guest_cid, mv->path);
	return 0;
}

static void mvsock_stop(struct machine_device *d)
{
	if (d->transport)
		vpci_shutdown(d->transport);
}

static void mvsock_destroy(struct machine_device *d)
{
	struct machine_vsock *mv = d->dev;

	vpci_destroy(d->transport); /* stops the device first */
	d->transport = NULL;
	if (mv) {
		virtio_vsock_destroy(mv->dev);
		vhost_vsock_destroy(mv->vh);
		if (mv->created && mv->unlink)
			unlink(mv->path);
		free(mv);
	}
	d->dev = NULL;
}

const struct machine_device_ops machine_vsock_ops = {
	.create = mvsock_create,
	.stop = mvsock_stop,
	.destroy = mvsock_destroy,
};

void machine_vsock_stats(struct vmm *vm, struct vmm_vsock_stats *st)
{
	struct machine *m = vm->machine;
	struct machine_vsock *mv;
	struct virtio_vsock_stats s;

	if (!m || !m->vsock || !(mv = m->vsock->dev) || !mv->dev)
		return;
	virtio_vsock_get_stats(mv->dev, &s);
	st->connections_open = s.vsock.conns_open;
	st->connections = s.vsock.conns_total;
	st->refused = s.vsock.conns_refused;
	st->bytes_to_guest = s.vsock.bytes_to_guest;
	st->bytes_from_guest = s.vsock.bytes_from_guest;
	st->packets_to_guest = s.vsock.packets_to_guest;
	st->packets_from_guest = s.vsock.packets_from_guest;
	st->resets = s.vsock.resets;
	st->bad_packets = s.vsock.bad_packets;
	st->kicks = s.kicks;
	st->interrupts = s.interrupts;
}
