/* SPDX-License-Identifier: MIT */
/*
 * The ports of vmm_add_port() as one machine device (machine-int.h): a
 * virtio-console device with a port each, on a virtio-pci function.
 */
#include <fcntl.h>
#include <string.h>

#include "machine-config.h"
#include "confine.h"
#include "console/vcon.h"
#include "log.h"
#include "machine-int.h"
#include "pci-params.h"
#include "virtio/virtio-pci.h"
#include "vm.h"

/* Its own copies of the fds (the configuration keeps its own, so a
 * failed start can be retried). */
static int ports_create(struct vmm *vm, struct machine *m, struct machine_device *d)
{
	const struct machine_config *cfg = vm->config;
	struct vcon_port_params pp[VCON_MAX_PORTS];
	struct vcon_params cp = {
		.ports = pp,
		.nr_ports = cfg->nr_ports,
		.thread_init = confine_port_thread,
		.thread_opaque = vm->seccomp, /* NULL: no filter */
	};
	struct vpci_params tp;
	struct virtio_device vd;
	struct vcon *c;
	int ret;

	for (unsigned int i = 0; i < cfg->nr_ports; i++) {
		const struct machine_port_config *pc = &cfg->ports[i];

		pp[i].name = pc->name;
		pp[i].in_fd = pc->in_fd >= 0 ? fcntl(pc->in_fd, F_DUPFD_CLOEXEC, 0) : -1;
		pp[i].out_fd = pc->out_fd >= 0 ? fcntl(pc->out_fd, F_DUPFD_CLOEXEC, 0) : -1;
	}
	ret = vcon_create(&cp, &c); /* owns the dups, even on failure */
	if (ret)
		return ret;
	d->dev = c;
	vcon_virtio(c, &vd);
	machine_vpci_params(vm, m, &tp);
	vpci_params_set_device(&tp, &vd);
	ret = vpci_create(&tp, &d->transport);
	if (ret)
		vmm_err("cannot create the virtio-console device: %s", strerror(-ret));
	return ret;
}

static int ports_start(struct machine_device *d)
{
	return vcon_start_threads(d->dev);
}

/* Writes out what the guest queued on its ports (vcon.h); the wiring goes
 * with the VM fd, as the disks' (vpci_shutdown()). */
static void ports_stop(struct machine_device *d)
{
	if (d->transport)
		vpci_shutdown(d->transport);
}

static void ports_destroy(struct machine_device *d)
{
	vpci_destroy(d->transport); /* stops the device first */
	d->transport = NULL;
	vcon_destroy(d->dev);
	d->dev = NULL;
}

const struct machine_device_ops machine_ports_ops = {
	.create = ports_create,
	.start = ports_start,
	.stop = ports_stop,
	.destroy = ports_destroy,
};
