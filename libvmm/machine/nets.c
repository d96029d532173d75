/* SPDX-License-Identifier: MIT */
/*
 * The NICs of vmm_add_net() as machine devices (machine-int.h): a tap's
 * queue files, its virtio-net device on the VM's I/O threads, and a
 * virtio-pci function for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "machine-config.h"
#include "machine-int.h"
#include "pci-params.h"
#include "rates.h"
#include "machine.h"
#include "net/net-backend.h"
#include "net/stream.h"
#include "net/tap.h"
#include "net/vhost-net.h"
#include "net/virtio-net.h"
#include "virtio/virtio-pci.h"
#include "vm.h"

/* FNV-1a of the interface's name: the seed of a NIC's derived MAC. */
static uint64_t net_name_seed(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *name; name++) {
		h ^= (uint8_t)*name;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* @pairs tap queue files for NIC @c into @fds: opened by name, or dups
 * of the inherited ones (the device owns and closes what it gets). */
static int net_open_tap(const struct vmm_net_config *c, unsigned int id,
			unsigned int pairs, int *fds)
{
	int ret;

	if (c->tap) {
		ret = tap_open(c->tap, pairs, fds);
		if (ret)
			vmm_err("net %u: cannot open tap %s with %u queues: %s", id,
				c->tap, pairs, strerror(-ret));
		return ret;
	}
	for (unsigned int i = 0; i < pairs; i++) {
		ret = tap_adopt(c->fds[i]);
		fds[i] = ret ? -1 : fcntl(c->fds[i], F_DUPFD_CLOEXEC, 0);
		if (fds[i] < 0) {
			vmm_err("net %u: fd %d is not a tap with a virtio-net "
				"header (IFF_TAP|IFF_NO_PI|IFF_VNET_HDR)", id, c->fds[i]);
			while (i--)
				close(fds[i]);
			return ret ? ret : -EBADF;
		}
	}
	return 0;
}

/* vhost=on: one vhost-net file per pair, owner set and guest RAM mapped
 * (vhost-net.h).  0, or -errno logged with what failed. */
static int net_open_vhost(struct vmm *vm, unsigned int id, unsigned int pairs,
			  int *vfds, uint64_t *features)
{
	const char *what = "";
	int ret = 0;

	for (unsigned int i = 0; i < pairs; i++) {
		ret = vhost_net_open(VHOST_NET_DEV, &vm->mem, &vfds[i], features,
				     &what);
		if (!ret)
			continue;
		vmm_err("net %u: vhost=on: %s %s failed: %s%s", id, what,
			VHOST_NET_DEV, strerror(-ret),
			ret == -ENOENT ? " (load the vhost_net module, or use "
					 "vhost=off)" : "");
		while (i--)
			close(vfds[i]);
		break;
	}
	return ret;
}

/* The stream back end's sockets: the path connected, or dups of the
 * connected sockets given. */
static int net_open_stream(const struct vmm_net_config *c, unsigned int id,
			   unsigned int pairs, int *fds)
{
	int ret;

	if (c->stream) {
		ret = nstream_connect(c->stream, &fds[0]);
		if (ret)
			vmm_err("net %u: cannot connect to stream socket %s: %s", id,
				c->stream, strerror(-ret));
		return ret;
	}
	for (unsigned int i = 0; i < pairs; i++) {
		ret = nstream_adopt(c->fds[i]);
		fds[i] = ret ? -1 : fcntl(c->fds[i], F_DUPFD_CLOEXEC, 0);
		if (fds[i] < 0) {
			vmm_err("net %u: fd %d is not a connected stream socket", id,
				c->fds[i]);
			while (i--)
				close(fds[i]);
			return ret ? ret : -EBADF;
		}
	}
	return 0;
}

static bool net_is_stream(const struct vmm_net_config *c)
{
	return c->stream || (c->flags & VMM_NET_STREAM);
}

/* The link went down or up (the back end lost its peer, or
 * vmm_set_net_link()): the driver reads the link status again.  Context:
 * an I/O thread of the NIC's (the device's transport exists by then:
 * vmm_set_net_link() reaches the device only once the machine has it). */
static void net_link_changed(void *opaque)
{
	struct machine_device *d = opaque;

	vpci_config_changed(d->transport);
}

/* The interface's name, the stream's path, or "netN": for messages and
 * the derived MAC. */
static void net_name(const struct vmm_net_config *c, unsigned int id, int fd,
		     char *name, size_t len)
{
	if (c->stream)
		snprintf(name, len, "%s", c->stream);
	else if (net_is_stream(c) || tap_ifname(fd, name))
		snprintf(name, len, "net%u", id);
}

static int net_create(struct vmm *vm, struct machine *m, struct machine_device *d)
{
	const struct vmm_net_config *c = &vm->config->nets[d->id].cfg;
	unsigned int pairs = (d->nq - 1) / 2;
	static const uint8_t zero[6];
	struct vpci_params tp;
	struct virtio_net_params np = {
		.net = { .max_pairs = (uint16_t)pairs, .mtu = c->mtu },
		.queue_size = c->queue_size,
		.iothreads = m->iothreads,
		.nr_iothreads = m->nr_iothreads,
	};
	int fds[VMM_MAX_NET_PAIRS] = { -1 }, vfds[VMM_MAX_NET_PAIRS];
	bool vhost = c->flags & VMM_NET_VHOST;
	struct ratelimit_cfg rate;
	char name[112];
	struct virtio_device vd;
	struct virtio_net *dev;
	int ret;

	ret = net_is_stream(c) ? net_open_stream(c, d->id, pairs, fds) :
				 net_open_tap(c, d->id, pairs, fds);
	if (!ret && vhost) {
		ret = net_open_vhost(vm, d->id, pairs, vfds, &np.vhost_features);
		for (unsigned int i = 0; ret && i < pairs; i++)
			close(fds[i]);
		np.vhost_fds = vfds;
	}
	if (ret)
		return ret;
	net_name(c, d->id, fds[0], name, sizeof(name));
	if (net_is_stream(c))
		np.backend = &net_stream_backend;
	np.link_changed = net_link_changed;
	np.link_opaque = d;
	np.link_down = vm->config->nets[d->id].link_down;
	memcpy(np.net.mac, c->mac, 6);
	if (!memcmp(c->mac, zero, 6))
		vnet_mac_derive(net_name_seed(name), d->id, np.net.mac);
	np.fds = fds;
	machine_rate_cfg(&vm->config->nets[d->id].rate, &rate);
	np.rate = &rate;
	ret = virtio_net_create(&np, &dev);
	if (ret) {
		for (unsigned int i = 0; i < pairs; i++) {
			close(fds[i]);
			if (vhost)
				close(vfds[i]);
		}
		return ret;
	}
	d->dev = dev;
	virtio_net_virtio(dev, &vd);
	machine_vpci_params(vm, m, &tp);
	vpci_params_set_device(&tp, &vd);
	ret = vpci_create(&tp, &d->transport);
	if (ret) {
		vmm_err("net %u: cannot create its virtio-pci device: %s", d->id,
			strerror(-ret));
		return ret;
	}
	vmm_info("net %u: %s %s, %u queue pairs of %u%s, mac "
		 "%02x:%02x:%02x:%02x:%02x:%02x", d->id,
		 net_is_stream(c) ? "stream" : "tap", name, pairs,
		 tp.max_queue_size, vhost ? " on vhost-net" : "", np.net.mac[0], np.net.mac[1], np.net.mac[2],
		 np.net.mac[3], np.net.mac[4], np.net.mac[5]);
	return 0;
}

static void net_destroy(struct machine_device *d)
{
	vpci_destroy(d->transport);
	d->transport = NULL;
	virtio_net_destroy(d->dev);
	d->dev = NULL;
}

const struct machine_device_ops machine_net_ops = {
	.create = net_create,
	.stop = machine_vpci_stop, /* disks.c */
	.destroy = net_destroy,
};

/* The machine's NIC @id, or NULL (no machine, or not built).  Context:
 * under vm->lock. */
static struct virtio_net *net_dev(struct vmm *vm, unsigned int id)
{
	struct machine *m = vm->machine;

	for (unsigned int i = 0; m && i < m->nr_devs; i++)
		if (m->devs[i].ops == &machine_net_ops && m->devs[i].id == id)
			return m->devs[i].dev;
	return NULL;
}

int machine_net_set_link(struct vmm *vm, unsigned int id, bool up)
{
	struct virtio_net *dev;
	int ret = 0;

	/* The device changes its link on I/O thread 0 (vhost=on: here,
	 * ordered with the rings' start and stop): not once the machine's
	 * I/O threads are stopping (the VM ended; recorded only). */
	dev = vm->machine && !vm->machine->io_stopped ? net_dev(vm, id) : NULL;
	if (dev)
		ret = virtio_net_set_link(dev, up);
	/* Recorded for a later start too (a NIC whose peer went away stays
	 * as the operator asked: the next start connects again). */
	if (!ret)
		vm->config->nets[id].link_down = !up;
	return ret;
}

int machine_net_link(struct vmm *vm, unsigned int id)
{
	struct virtio_net *dev = net_dev(vm, id);

	if (dev)
		return virtio_net_link_up(dev);
	return !vm->config->nets[id].link_down;
}

int machine_net_stats(struct vmm *vm, unsigned int id, unsigned int pair,
		      struct vmm_net_pair_stats *st)
{
	struct virtio_net_pair_stats ps;
	struct virtio_net *dev = net_dev(vm, id);
	int ret;

	if (!dev)
		return -ENOENT;
	ret = virtio_net_pair_stats(dev, pair, &ps);
	if (ret)
		return ret;
	*st = (struct vmm_net_pair_stats){
		.rx_packets = ps.net.rx_packets,
		.rx_bytes = ps.net.rx_bytes,
		.tx_packets = ps.net.tx_packets,
		.tx_bytes = ps.net.tx_bytes,
		.rx_drops = ps.net.rx_drops,
		.tx_drops = ps.net.tx_drops,
		.rx_kicks = ps.rx.kicks,
		.tx_kicks = ps.tx.kicks,
		.rx_interrupts = ps.rx.interrupts,
		.tx_interrupts = ps.tx.interrupts,
		.iothread = ps.rx.iothread,
		.pairs = virtio_net_pairs(dev),
	};
	return 0;
}
