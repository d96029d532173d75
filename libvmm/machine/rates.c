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

/* The configuration's record of disk or NIC @id, or NULL (no such id).
 * Context: under vm->lock. */
static struct vmm_rate_limit *rate_slot(struct vmm *vm, bool net, unsigned int id)
{
	struct machine_config *c = vm->config;

	if (net)
		return id < c->nr_nets ? &c->nets[id].rate : NULL;
	return id < c->nr_disks ? &c->disks[id].rate : NULL;
}

/* The limiters of the machine's disk or NIC @id while it has the device
 * (a NIC's RX and TX); returns how many.  Context: under vm->lock. */
static unsigned int rate_limiters(struct vmm *vm, bool net, unsigned int id,
				  struct ratelimit *out[2])
{
	const struct machine_device_ops *ops = net ? &machine_net_ops : &machine_disk_ops;
	struct machine *m = vm->machine;

	for (unsigned int i = 0; m && i < m->nr_devs; i++) {
		void *dev = m->devs[i].dev;

		if (m->devs[i].ops != ops || m->devs[i].id != id || !dev)
			continue;
		if (!net) {
			out[0] = virtio_blk_ratelimit(dev);
			return 1;
		}
		out[0] = virtio_net_ratelimit(dev, false);
		out[1] = virtio_net_ratelimit(dev, true);
		return 2;
	}
	return 0;
}

static int rate_set(struct vmm *vm, bool net, unsigned int id,
		    const struct vmm_rate_limit *rl)
{
	struct vmm_rate_limit c, *slot;
	struct ratelimit *l[2];
	struct ratelimit_cfg rc;
	int ret = 0;

	if (!vm || !rl || machine_rate_in(rl, &c))
		return -EINVAL;
	machine_rate_cfg(&c, &rc);
	pthread_mutex_lock(&vm->lock);
	slot = rate_slot(vm, net, id);
	if (!slot) {
		ret = -ENOENT;
	} else if (net && (vm->config->nets[id].cfg.flags & VMM_NET_VHOST)) {
		ret = -EOPNOTSUPP;
	} else {
		*slot = c;
		for (unsigned int i = rate_limiters(vm, net, id, l); i--;)
			ratelimit_set(l[i], &rc);
	}
	pthread_mutex_unlock(&vm->lock);
	return ret;
}

int vmm_set_disk_rate_limit(struct vmm *vm, unsigned int id,
			    const struct vmm_rate_limit *rl)
{
	return rate_set(vm, false, id, rl);
}

int vmm_set_net_rate_limit(struct vmm *vm, unsigned int id,
			   const struct vmm_rate_limit *rl)
{
	return rate_set(vm, true, id, rl);
}

#define RATE_STATS_SIZE_VER0 56u
_Static_assert(sizeof(struct vmm_rate_stats) == RATE_STATS_SIZE_VER0,
	       "the published layout of struct vmm_rate_stats");

/* The limits in force and the limiters' counters, what fits into @st. */
static int rate_get(struct vmm *vm, bool net, unsigned int id,
		    struct vmm_rate_stats *st)
{
	struct vmm_rate_stats full = { 0 };
	const struct vmm_rate_limit *r;
	struct ratelimit *l[2];
	uint32_t n;

	if (!vm || !st || st->struct_size < RATE_STATS_SIZE_VER0)
		return -EINVAL;
	pthread_mutex_lock(&vm->lock);
	r = rate_slot(vm, net, id);
	if (!r) {
		pthread_mutex_unlock(&vm->lock);
		return -ENOENT;
	}
	full = (struct vmm_rate_stats){ .bw = r->bw, .bw_burst = r->bw_burst,
					.ops = r->ops, .ops_burst = r->ops_burst };
	for (unsigned int i = rate_limiters(vm, net, id, l); i--;) {
		uint64_t t, ns;

		ratelimit_stats(l[i], &t, &ns);
		full.throttled += t;
		full.throttled_ns += ns;
	}
	pthread_mutex_unlock(&vm->lock);
	n = st->struct_size < sizeof(full) ? st->struct_size : (uint32_t)sizeof(full);
	full.struct_size = n;
	memcpy(st, &full, n);
	return 0;
}

int vmm_get_disk_rate_stats(struct vmm *vm, unsigned int id,
			    struct vmm_rate_stats *st)
{
	return rate_get(vm, false, id, st);
}

int vmm_get_net_rate_stats(struct vmm *vm, unsigned int id,
			   struct vmm_rate_stats *st)
{
	return rate_get(vm, true, id, st);
}
