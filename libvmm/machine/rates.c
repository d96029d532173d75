/* SPDX-License-Identifier: MIT */
/*
 * Rate limits of disks and NICs: recorded in the configuration (what a
 * later vmm_start() applies) and, while the machine has the device, set
 * on its limiter (ratelimit.h), which the I/O threads read atomically.
 */
#include <errno.h>
#include <string.h>

#include "blk/virtio-blk.h"
#include "machine-config.h"
#include "machine-int.h"
#include "net/virtio-net.h"
#include "rates.h"
#include "vm.h"

int machine_rate_in(const struct vmm_rate_limit *in, struct vmm_rate_limit *out)
{
	struct ratelimit_cfg c;

	memset(out, 0, sizeof(*out));
	if (!in)
		return 0;
	if (in->struct_size < sizeof(*in) || in->flags)
		return -EINVAL;
	machine_rate_cfg(in, &c);
	if (ratelimit_check(&c))
		return -EINVAL;
	*out = *in;
	out->struct_size = sizeof(*out);
	return 0;
}

void machine_rate_cfg(const struct vmm_rate_limit *in, struct ratelimit_cfg *out)
{
	*out = (struct ratelimit_cfg){
		.bw = { in->bw, in->bw_burst, in->bw_one_time },
		.ops = { in->ops, in->ops_burst, in->ops_one_time },
	};
}

bool machine_rate_any(const struct vmm_rate_limit *r)
{
	return r->bw || r->ops;
}

/* The machine's device @id of kind @ops while it has one, else NULL.
 * Context: under vm->lock. */
static void *rate_device(struct vmm *vm, const struct machine_device_ops *ops,
			 unsigned int id)
{
	struct machine *m = vm->machine;

	for (unsigned int i = 0; m && i < m->nr_devs; i++)
		if (m->devs[i].ops == ops && m->devs[i].id == id)
			return m->devs[i].dev;
	return NULL;
}

int vmm_set_disk_rate_limit(struct vmm *vm, unsigned int id,
			    const struct vmm_rate_limit *rl)
{
	struct vmm_rate_limit c;
	struct ratelimit_cfg rc;
	struct virtio_blk *dev;
	int ret = 0;

	if (!vm || !rl || machine_rate_in(rl, &c))
		return -EINVAL;
	machine_rate_cfg(&c, &rc);
	pthread_mutex_lock(&vm->lock);
	if (id >= vm->config->nr_disks) {
		ret = -ENOENT;
	} else {
		vm->config->disks[id].rate = c;
		dev = rate_device(vm, &machine_disk_ops, id);
		if (dev)
			ratelimit_set(virtio_blk_ratelimit(dev), &rc);
	}
	pthread_mutex_unlock(&vm->lock);
	return ret;
}

int vmm_set_net_rate_limit(struct vmm *vm, unsigned int id,
			   const struct vmm_rate_limit *rl)
{
	struct vmm_rate_limit c;
	struct ratelimit_cfg rc;
	struct virtio_net *dev;
	int ret = 0;

	if (!vm || !rl || machine_rate_in(rl, &c))
		return -EINVAL;
	machine_rate_cfg(&c, &rc);
	pthread_mutex_lock(&vm->lock);
	if (id >= vm->config->nr_nets) {
		ret = -ENOENT;
	} else if (vm->config->nets[id].cfg.flags & VMM_NET_VHOST) {
		ret = -EOPNOTSUPP;
	} else {
		vm->config->nets[id].rate = c;
		dev = rate_device(vm, &machine_net_ops, id);
		if (dev) {
			ratelimit_set(virtio_net_ratelimit(dev, false), &rc);
			ratelimit_set(virtio_net_ratelimit(dev, true), &rc);
		}
	}
	pthread_mutex_unlock(&vm->lock);
	return ret;
}

#define RATE_STATS_SIZE_VER0 56u
_Static_assert(sizeof(struct vmm_rate_stats) == RATE_STATS_SIZE_VER0,
	       "the published layout of struct vmm_rate_stats");

/* Fill what fits of @full (limits set, counters added) into @st. */
static void rate_stats_out(struct vmm_rate_stats *st, struct vmm_rate_stats *full,
			   const struct vmm_rate_limit *r)
{
	uint32_t n = st->struct_size < sizeof(*full) ? st->struct_size :
						       (uint32_t)sizeof(*full);

	full->struct_size = n;
	full->bw = r->bw;
	full->bw_burst = r->bw_burst;
	full->ops = r->ops;
	full->ops_burst = r->ops_burst;
	memcpy(st, full, n);
}

static void rate_add(struct vmm_rate_stats *full, struct ratelimit *rl)
{
	uint64_t n, ns;

	ratelimit_stats(rl, &n, &ns);
	full->throttled += n;
	full->throttled_ns += ns;
}

int vmm_get_disk_rate_stats(struct vmm *vm, unsigned int id,
			    struct vmm_rate_stats *st)
{
	struct vmm_rate_stats full = { 0 };
	struct virtio_blk *dev;

	if (!vm || !st || st->struct_size < RATE_STATS_SIZE_VER0)
		return -EINVAL;
	pthread_mutex_lock(&vm->lock);
	if (id >= vm->config->nr_disks) {
		pthread_mutex_unlock(&vm->lock);
		return -ENOENT;
	}
	dev = rate_device(vm, &machine_disk_ops, id);
	if (dev)
		rate_add(&full, virtio_blk_ratelimit(dev));
	rate_stats_out(st, &full, &vm->config->disks[id].rate);
	pthread_mutex_unlock(&vm->lock);
	return 0;
}

int vmm_get_net_rate_stats(struct vmm *vm, unsigned int id,
			   struct vmm_rate_stats *st)
{
	struct vmm_rate_stats full = { 0 };
	struct virtio_net *dev;

	if (!vm || !st || st->struct_size < RATE_STATS_SIZE_VER0)
		return -EINVAL;
	pthread_mutex_lock(&vm->lock);
	if (id >= vm->config->nr_nets) {
		pthread_mutex_unlock(&vm->lock);
		return -ENOENT;
	}
	dev = rate_device(vm, &machine_net_ops, id);
	if (dev) {
		rate_add(&full, virtio_net_ratelimit(dev, false));
		rate_add(&full, virtio_net_ratelimit(dev, true));
	}
	rate_stats_out(st, &full, &vm->config->nets[id].rate);
	pthread_mutex_unlock(&vm->lock);
	return 0;
}
