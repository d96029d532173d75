/* SPDX-License-Identifier: MIT */
/* A vhost-user front end (see vu-frontend.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "thread.h"
#include "vhost-user/vhost-user.h"
#include "vhost-user/vu-frontend.h"
#include "vhost-user/vu-msg.h"

/* Protocol features the front end uses when offered. */
#define VU_FE_PROTOCOL_WANT                                                  \
	((1ull << VHOST_USER_PROTOCOL_F_MQ) |                                \
	 (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK) |                         \
	 (1ull << VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS))
/* ... and CONFIG, for a device that has a config space (config_size). */
#define VU_FE_PROTOCOL_CONFIG (1ull << VHOST_USER_PROTOCOL_F_CONFIG)

struct vu_fe {
	char name[32];
	int sock;
	int timeout_ms;
	const struct guest_mem *mem;
	uint64_t backend_features, features, protocol;
	unsigned int queue_num;
	/* GET_CONFIG's answer at set-up (CONFIG negotiated), else 0 bytes. */
	uint8_t config[VHOST_USER_MAX_CONFIG_SIZE];
	uint32_t config_len;
	/* Owned by whoever holds @lock (one request at a time). */
	pthread_mutex_t lock;
	struct virtio_queue *qs; /* the rings handed over, until vu_fe_stop() */
	bool handed[VU_FE_MAX_QUEUES];
	/* After the back end died (vu_fe_watch() with an orphan answer):
	 * rings the watch thread consumes now, and rings it gave up on (the
	 * driver broke them).  Under @lock. */
	bool adopted[VU_FE_MAX_QUEUES];
	bool orphan_off[VU_FE_MAX_QUEUES];
	/* __atomic: set by any thread that sees the back end gone. */
	bool broken;
	/* The watch thread. */
	pthread_t watch;
	bool watching;
	int stop_fd;
	void (*dead)(void *opaque);
	void *dead_opaque;
	vu_fe_orphan_fn orphan;
	struct virtq_chain *chain; /* the watch thread's, with @orphan */
	int (*thread_init)(void *arg);
	void *init_arg;
	struct vu_fe_stats st; /* __atomic, relaxed: statistics */
};

static void fe_stat(uint64_t *c)
{
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

static void fe_break(struct vu_fe *fe, const char *why, int err)
{
	/* Relaxed: a flag; whoever reads it only skips sending. */
	if (__atomic_exchange_n(&fe->broken, true, __ATOMIC_RELAXED))
		return;
	fe_stat(&fe->st.disconnects);
	vmm_err("%s: vhost-user back end %s (%s); the device needs a reset "
		"and the back end a restart", fe->name, why, strerror(-err));
}

bool vu_fe_broken(struct vu_fe *fe)
{
	return __atomic_load_n(&fe->broken, __ATOMIC_RELAXED);
}

/*
 * Send @req and, if @reply is not NULL or @ack, wait for its reply within
 * the timeout (@ack: a REPLY_ACK u64, 0 = success).  Any failure but a
 * refusal breaks the front end: the conversation is out of step.
 * Returns 0, -EPIPE (broken before), -ETIMEDOUT, -EPROTO or -errno.
 * Context: fe->lock held (or the API thread before anyone else runs).
 */
static int fe_call(struct vu_fe *fe, uint32_t req, const void *payload,
		   uint32_t size, const int *fds, unsigned int nfds,
		   struct vu_msg *reply)
{
	bool ack = !reply && (fe->protocol & (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK));
	uint32_t flags = VHOST_USER_VERSION | (ack ? VHOST_USER_NEED_REPLY : 0);
	struct vu_msg m;
	char nb[24];
	int ret;

	if (vu_fe_broken(fe))
		return -EPIPE;
	fe_stat(&fe->st.messages);
	ret = vu_msg_send(fe->sock, req, flags, payload, size, fds, nfds);
	if (ret) {
		fe_break(fe, "stopped taking requests", ret);
		return ret == -EAGAIN ? -ETIMEDOUT : ret;
	}
	if (!reply && !ack)
		return 0;
	ret = vu_msg_recv_timeout(fe->sock, fe->timeout_ms, &m);
	if (ret == -ETIMEDOUT)
		fe_stat(&fe->st.timeouts);
	if (!ret && (m.nfds || !(m.hdr.flags & VHOST_USER_REPLY) ||
		     m.hdr.request != req ||
		     (ack && m.hdr.size != sizeof(uint64_t)))) {
		vu_msg_close_fds(&m);
		ret = -EPROTO;
	}
	if (ret) {
		vmm_err("%s: no valid reply to %s", fe->name,
			vu_request_name(req, nb, sizeof(nb)));
		fe_break(fe, ret == -ETIMEDOUT ? "did not answer in time" :
						 "closed or broke the connection", ret);
		return ret == -ECONNRESET ? -EPIPE : ret;
	}
	if (ack) {
		if (m.p.u64) {
			vmm_err("%s: the back end refused %s", fe->name,
				vu_request_name(req, nb, sizeof(nb)));
			return -EPROTO;
		}
		return 0;
	}
	*reply = m;
	return 0;
}

/* A request answered by a u64 (GET_FEATURES and the like). */
static int fe_get_u64(struct vu_fe *fe, uint32_t req, uint64_t *v)
{
	struct vu_msg m;
	int ret = fe_call(fe, req, NULL, 0, NULL, 0, &m);

	if (ret)
		return ret;
	if (m.hdr.size != sizeof(uint64_t)) {
		fe_break(fe, "sent a reply of the wrong size", -EPROTO);
		return -EPROTO;
	}
	*v = m.p.u64;
	return 0;
}

static int fe_set_u64(struct vu_fe *fe, uint32_t req, uint64_t v)
{
	return fe_call(fe, req, &v, sizeof(v), NULL, 0, NULL);
}

static int fe_set_state(struct vu_fe *fe, uint32_t req, unsigned int index,
			uint32_t num)
{
	struct vhost_user_vring_state s = { index, num };

	return fe_call(fe, req, &s, sizeof(s), NULL, 0, NULL);
}

/* Connect to @path within the timeout: 0 or -errno. */
static int fe_connect(struct vu_fe *fe, const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct pollfd p;
	socklen_t len = sizeof(int);
	int err = 0;

	if (strlen(path) >= sizeof(a.sun_path))
		return -EINVAL;
	strcpy(a.sun_path, path);
	/* Non-blocking: a back end that stops reading makes a send fail
	 * (EAGAIN) instead of blocking a vCPU. */
	fe->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fe->sock < 0)
		return -errno;
	if (!connect(fe->sock, (struct sockaddr *)&a, sizeof(a)))
		return 0;
	if (errno != EINPROGRESS && errno != EAGAIN)
		return -errno;
	p = (struct pollfd){ .fd = fe->sock, .events = POLLOUT };
	if (poll(&p, 1, fe->timeout_ms) <= 0)
		return -ETIMEDOUT;
	if (getsockopt(fe->sock, SOL_SOCKET, SO_ERROR, &err, &len))
		return -errno;
	return -err;
}

/*
 * CONFIG negotiated: read the back end's config space, @size bytes from
 * offset 0, once at set-up (no SET_CONFIG: the only device on this front
 * end, virtio-fs, has no writable config field).  The reply must echo the
 * offset and size asked for.  Flags 0: the front end's own read, not a
 * migration's.
 */
static int fe_get_config(struct vu_fe *fe, uint32_t size)
{
	struct vhost_user_config c = { .offset = 0, .size = size };
	struct vu_msg m;
	int ret;

	ret = fe_call(fe, VHOST_USER_GET_CONFIG, &c,
		      VHOST_USER_CONFIG_HDR_SIZE + size, NULL, 0, &m);
	if (ret)
		return ret;
	if (m.hdr.size != VHOST_USER_CONFIG_HDR_SIZE + size ||
	    m.p.config.offset || m.p.config.size != size) {
		fe_break(fe, "sent a wrong GET_CONFIG reply", -EPROTO);
		return -EPROTO;
	}
	memcpy(fe->config, m.p.config.region, size);
	fe->config_len = size;
	return 0;
}

/* Features and protocol features, the queue count, SET_OWNER, the
 * config space (CONFIG). */
static int fe_negotiate(struct vu_fe *fe, const struct vu_fe_params *p)
{
	uint64_t proto = 0, n = p->num_queues;
	int ret;

	ret = fe_get_u64(fe, VHOST_USER_GET_FEATURES, &fe->backend_features);
	if (ret)
		return ret;
	fe->features = fe->backend_features & p->features;
	if (!(fe->features & (1ull << 32))) { /* VIRTIO_F_VERSION_1 */
		vmm_err("%s: the back end does not offer VIRTIO_F_VERSION_1",
			fe->name);
		return -EPROTO;
	}
	if (fe->backend_features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES)) {
		ret = fe_get_u64(fe, VHOST_USER_GET_PROTOCOL_FEATURES, &proto);
		if (ret)
			return ret;
		proto &= VU_FE_PROTOCOL_WANT |
			 (p->config_size ? VU_FE_PROTOCOL_CONFIG : 0);
		/* Not acknowledged yet: fe->protocol is still 0. */
		ret = fe_set_u64(fe, VHOST_USER_SET_PROTOCOL_FEATURES, proto);
		if (ret)
			return ret;
		fe->protocol = proto;
	}
	if (proto & (1ull << VHOST_USER_PROTOCOL_F_MQ)) {
		ret = fe_get_u64(fe, VHOST_USER_GET_QUEUE_NUM, &n);
		if (ret)
			return ret;
		if (!n) {
			vmm_err("%s: the back end serves no queue", fe->name);
			return -EPROTO;
		}
	}
	fe->queue_num = (unsigned int)MIN(n, (uint64_t)p->num_queues);
	ret = fe_call(fe, VHOST_USER_SET_OWNER, NULL, 0, NULL, 0, NULL);
	if (!ret && (proto & VU_FE_PROTOCOL_CONFIG))
		ret = fe_get_config(fe, p->config_size);
	return ret;
}

static void fe_region(const struct guest_mem *mem, unsigned int i,
		      struct vhost_user_mem_region *r)
{
	const struct guest_region *g = &mem->regions[i];

	r->guest_phys_addr = g->gpa;
	r->memory_size = g->size;
	r->userspace_addr = (uint64_t)(uintptr_t)g->hva;
	/* RAM is one mapping of the memfd from offset 0 (memory.h). */
	r->mmap_offset = (uint64_t)(g->hva - mem->base);
}

/* The guest RAM regions, all in the one memfd: one SET_MEM_TABLE, or one
 * ADD_MEM_REG each with CONFIGURE_MEM_SLOTS. */
static int fe_mem_table(struct vu_fe *fe)
{
	const struct guest_mem *mem = fe->mem;
	struct vhost_user_memory t = { .nregions = mem->nr_regions };
	int fds[VHOST_USER_MAX_REGIONS];
	uint64_t slots;
	int ret;

	if (fe->protocol & (1ull << VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS)) {
		ret = fe_get_u64(fe, VHOST_USER_GET_MAX_MEM_SLOTS, &slots);
		if (ret)
			return ret;
		if (slots < mem->nr_regions) {
			vmm_err("%s: the back end takes %llu memory regions, the "
				"guest has %u", fe->name,
				(unsigned long long)slots, mem->nr_regions);
			return -EPROTO;
		}
		for (unsigned int i = 0; i < mem->nr_regions; i++) {
			struct vhost_user_mem_reg r = { 0 };

			fe_region(mem, i, &r.region);
			ret = fe_call(fe, VHOST_USER_ADD_MEM_REG, &r, sizeof(r),
				      &mem->fd, 1, NULL);
			if (ret)
				return ret;
		}
		return 0;
	}
	for (unsigned int i = 0; i < mem->nr_regions; i++) {
		fe_region(mem, i, &t.regions[i]);
		fds[i] = mem->fd;
	}
	return fe_call(fe, VHOST_USER_SET_MEM_TABLE, &t,
		       8 + mem->nr_regions * sizeof(struct vhost_user_mem_region),
		       fds, mem->nr_regions, NULL);
}

static int fe_init(struct vu_fe *fe, const struct vu_fe_params *p)
{
	int ret;

	snprintf(fe->name, sizeof(fe->name), "%s", p->name ? p->name : "vhost-user");
	fe->sock = fe->stop_fd = -1;
	fe->mem = p->mem;
	fe->timeout_ms = p->timeout_ms > 0 ? p->timeout_ms : VU_FE_TIMEOUT_MS;
	ret = pthread_mutex_init(&fe->lock, NULL);
	if (ret)
		return -ret;
	ret = fe_connect(fe, p->path);
	if (ret) {
		vmm_err("%s: cannot connect to the vhost-user back end at %s: %s",
			fe->name, p->path, strerror(-ret));
		return ret;
	}
	ret = fe_negotiate(fe, p);
	if (!ret)
		ret = fe_mem_table(fe);
	if (ret)
		vmm_err("%s: vhost-user set-up with %s failed: %s", fe->name,
			p->path, strerror(-ret));
	return ret;
}

int vu_fe_open(const struct vu_fe_params *p, struct vu_fe **out)
{
	struct vu_fe *fe;
	int ret;

	*out = NULL;
	if (!p->path || !p->mem || !p->num_queues ||
	    p->num_queues > VU_FE_MAX_QUEUES || !p->mem->nr_regions ||
	    p->mem->nr_regions > VHOST_USER_MAX_REGIONS ||
	    p->config_size > VHOST_USER_MAX_CONFIG_SIZE)
		return -EINVAL;
	if (p->mem->fd < 0) {
		vmm_err("%s: a vhost-user back end needs shareable guest RAM "
			"(the memfd or hugetlb memory backend)",
			p->name ? p->name : "vhost-user");
		return -EINVAL;
	}
	fe = calloc(1, sizeof(*fe));
	if (!fe)
		return -ENOMEM;
	ret = fe_init(fe, p);
	if (ret) {
		if (fe->sock >= 0)
			close(fe->sock);
		pthread_mutex_destroy(&fe->lock);
		free(fe);
		return ret;
	}
	*out = fe;
	return 0;
}

uint64_t vu_fe_features(const struct vu_fe *fe)
{
	return fe->features;
}

unsigned int vu_fe_queue_num(const struct vu_fe *fe)
{
	return fe->queue_num;
}

uint64_t vu_fe_protocol_features(const struct vu_fe *fe)
{
	return fe->protocol;
}

const uint8_t *vu_fe_config(const struct vu_fe *fe, uint32_t *len)
{
	*len = fe->config_len;
	return fe->config_len ? fe->config : NULL;
}

/* Hand one ring over.  Context: fe->lock held. */
static int fe_start_ring(struct vu_fe *fe, struct virtio_queue *q)
{
	struct vhost_user_vring_addr a = {
		.index = q->index,
		/* The rings' host addresses: inside the mapping the memory
		 * table described (validated by the transport's start). */
		.desc_user_addr = (uint64_t)(uintptr_t)q->vq.desc,
		.avail_user_addr = (uint64_t)(uintptr_t)q->vq.avail,
		.used_user_addr = (uint64_t)(uintptr_t)q->vq.used,
	};
	uint64_t call = q->index;
	int ret;

	if ((ret = fe_set_state(fe, VHOST_USER_SET_VRING_NUM, q->index, q->vq.size)) ||
	    (ret = fe_set_state(fe, VHOST_USER_SET_VRING_BASE, q->index,
				q->vq.last_avail_idx)) ||
	    (ret = fe_call(fe, VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL, 0, NULL)))
		return ret;
	if (q->call_fd < 0) /* no vector: the driver polls */
		call |= VHOST_USER_VRING_NOFD_MASK;
	ret = fe_call(fe, VHOST_USER_SET_VRING_CALL, &call, sizeof(call),
		      &q->call_fd, q->call_fd >= 0, NULL);
	if (ret)
		return ret;
	/* The kick last but for the enable: a back end may start the ring
	 * when it gets it (the virtio-fs one does). */
	call = q->index;
	ret = fe_call(fe, VHOST_USER_SET_VRING_KICK, &call, sizeof(call),
		      &q->kick_fd, 1, NULL);
	if (ret)
		return ret;
	fe->handed[q->index] = true;
	/* With protocol features rings start disabled. */
	if (fe->backend_features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES))
		ret = fe_set_state(fe, VHOST_USER_SET_VRING_ENABLE, q->index, 1);
	return ret;
}

/* GET_VRING_BASE on every ring handed over.  Context: fe->lock held. */
static void fe_stop_rings(struct vu_fe *fe)
{
	for (unsigned int i = 0; fe->qs && i < VU_FE_MAX_QUEUES; i++) {
		struct vhost_user_vring_state s = { i, 0 };
		struct vu_msg m;

		if (!fe->handed[i])
			continue;
		fe->handed[i] = false;
		fe->adopted[i] = false;
		fe->orphan_off[i] = false;
		if (fe_call(fe, VHOST_USER_GET_VRING_BASE, &s, sizeof(s), NULL, 0, &m))
			continue; /* broken now: the rest are skipped quickly */
		if (m.hdr.size != sizeof(s) || m.p.state.index != i) {
			fe_break(fe, "sent a wrong GET_VRING_BASE reply", -EPROTO);
			continue;
		}
		/* Where the back end stopped: a restart resumes there. */
		fe->qs[i].vq.last_avail_idx = (uint16_t)m.p.state.num;
	}
	fe->qs = NULL;
}

int vu_fe_start(struct vu_fe *fe, uint64_t features, struct virtio_queue *qs,
		unsigned int nr)
{
	uint64_t f = features & fe->features;
	int ret = 0;

	if (fe->backend_features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES))
		f |= 1ull << VHOST_USER_F_PROTOCOL_FEATURES;
	pthread_mutex_lock(&fe->lock);
	fe_stop_rings(fe); /* none, unless a start was not stopped */
	fe->qs = qs;
	ret = fe_set_u64(fe, VHOST_USER_SET_FEATURES, f);
	for (unsigned int i = 0; !ret && i < nr; i++) {
		if (!qs[i].enabled)
			continue;
		if (i >= fe->queue_num || i >= VU_FE_MAX_QUEUES) {
			vmm_err("%s: queue %u enabled, the back end serves %u",
				fe->name, i, fe->queue_num);
			ret = -EINVAL;
			break;
		}
		ret = fe_start_ring(fe, &qs[i]);
	}
	if (ret)
		fe_stop_rings(fe);
	else
		fe_stat(&fe->st.starts);
	pthread_mutex_unlock(&fe->lock);
	return ret;
}

void vu_fe_stop(struct vu_fe *fe)
{
	pthread_mutex_lock(&fe->lock);
	if (fe->qs)
		fe_stat(&fe->st.stops);
	fe_stop_rings(fe);
	pthread_mutex_unlock(&fe->lock);
}

/*
 * Answer what ring @i holds with the device's orphan answer, at most a
 * ring's size of requests.  Returns true if it stopped at that bound with
 * more waiting.  Context: the watch thread, fe->lock held.
 */
static bool fe_orphan_ring(struct vu_fe *fe, unsigned int i)
{
	struct virtio_queue *q = &fe->qs[i];
	unsigned int budget = q->vq.size;
	bool pushed = false, more = false;
	int r;

	if (!fe->adopted[i]) {
		virtq_adopt(&q->vq);
		fe->adopted[i] = true;
	}
	for (;;) {
		r = virtq_pop(&q->vq, fe->chain);
		if (r < 0) {
			fe->orphan_off[i] = true;
			virtio_queue_needs_reset(q, "malformed ring");
			break;
		}
		/* Empty: kicks stay on (virtq_adopt()), and a pop that
		 * finds the ring empty re-checks it after a full barrier,
		 * so the next entry brings a kick. */
		if (!r)
			break;
		virtq_push(&q->vq, fe->chain->head,
			   fe->orphan(fe->dead_opaque, i, fe->chain));
		fe_stat(&fe->st.orphaned);
		pushed = true;
		if (!--budget) {
			more = true;
			break;
		}
	}
	if (pushed && q->call_fd >= 0 && virtq_should_notify(&q->vq) &&
	    eventfd_write(q->call_fd, 1))
		vmm_dbg("%s: ring %u: interrupt failed", fe->name, i);
	return more;
}

/*
 * The back end is gone: serve its rings with the device's answer until
 * the stop eventfd.  Each turn serves every ring (the device's stop may
 * take them away between turns: fe->qs NULL), then sleeps on their kick
 * eventfds (KVM ioeventfds: a notify write signals them) and the stop.
 * Context: the watch thread.
 */
static void fe_orphan_serve(struct vu_fe *fe)
{
	struct pollfd p[1 + VU_FE_MAX_QUEUES];
	bool logged = false;

	for (;;) {
		unsigned int n = 1;
		bool more = false;

		p[0] = (struct pollfd){ .fd = fe->stop_fd, .events = POLLIN };
		pthread_mutex_lock(&fe->lock);
		for (unsigned int i = 0; fe->qs && i < VU_FE_MAX_QUEUES; i++) {
			if (!fe->handed[i] || fe->orphan_off[i])
				continue;
			if (!logged) {
				vmm_err("%s: answering the guest's requests "
					"with errors from now on", fe->name);
				logged = true;
			}
			more |= fe_orphan_ring(fe, i);
			p[n++] = (struct pollfd){ .fd = fe->qs[i].kick_fd,
						  .events = POLLIN };
		}
		pthread_mutex_unlock(&fe->lock);
		/* The kick fds stay open while the transport lives, which
		 * outlives this thread (vu_fe_unwatch() first). */
		if (poll(p, n, more ? 0 : -1) < 0 && errno != EINTR)
			return;
		if (p[0].revents)
			return;
		for (unsigned int k = 1; k < n; k++) {
			eventfd_t v;

			if ((p[k].revents & POLLIN) && eventfd_read(p[k].fd, &v))
				vmm_dbg("%s: kick read failed", fe->name);
		}
	}
}

/* Context: the watch thread.  Waits for the back end's hang-up (not its
 * replies: POLLIN is not asked for, so a reply in the socket does not
 * wake it) or the stop eventfd. */
static void *fe_watch(void *arg)
{
	struct vu_fe *fe = arg;
	struct pollfd p[2] = { { .fd = fe->sock, .events = POLLRDHUP },
			       { .fd = fe->stop_fd, .events = POLLIN } };

	pthread_setname_np(pthread_self(), "vmm-vuwatch");
	if (fe->thread_init && fe->thread_init(fe->init_arg))
		return NULL;
	for (;;) {
		int n = poll(p, 2, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || p[1].revents)
			return NULL;
		if (p[0].revents & (POLLRDHUP | POLLHUP | POLLERR))
			break;
	}
	fe_break(fe, "closed the connection", -ECONNRESET);
	fe->dead(fe->dead_opaque);
	if (fe->orphan)
		fe_orphan_serve(fe);
	return NULL;
}

int vu_fe_watch(struct vu_fe *fe, void (*dead)(void *opaque), void *opaque,
		vu_fe_orphan_fn orphan, int (*thread_init)(void *arg),
		void *init_arg)
{
	int ret;

	/* Allocated here: the confined thread need not. */
	if (orphan && !fe->chain) {
		fe->chain = malloc(sizeof(*fe->chain));
		if (!fe->chain)
			return -ENOMEM;
	}
	fe->orphan = orphan;
	fe->dead = dead;
	fe->dead_opaque = opaque;
	fe->thread_init = thread_init;
	fe->init_arg = init_arg;
	fe->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fe->stop_fd < 0)
		return -errno;
	ret = thread_spawn(&fe->watch, fe_watch, fe);
	if (ret)
		return ret;
	fe->watching = true;
	return 0;
}

void vu_fe_get_stats(struct vu_fe *fe, struct vu_fe_stats *st)
{
	st->messages = __atomic_load_n(&fe->st.messages, __ATOMIC_RELAXED);
	st->timeouts = __atomic_load_n(&fe->st.timeouts, __ATOMIC_RELAXED);
	st->disconnects = __atomic_load_n(&fe->st.disconnects, __ATOMIC_RELAXED);
	st->starts = __atomic_load_n(&fe->st.starts, __ATOMIC_RELAXED);
	st->stops = __atomic_load_n(&fe->st.stops, __ATOMIC_RELAXED);
	st->orphaned = __atomic_load_n(&fe->st.orphaned, __ATOMIC_RELAXED);
}

void vu_fe_unwatch(struct vu_fe *fe)
{
	if (!fe->watching)
		return;
	if (eventfd_write(fe->stop_fd, 1))
		vmm_dbg("%s: stopping the watch thread failed", fe->name);
	pthread_join(fe->watch, NULL);
	fe->watching = false;
}

void vu_fe_close(struct vu_fe *fe)
{
	if (!fe)
		return;
	vu_fe_unwatch(fe);
	if (fe->stop_fd >= 0)
		close(fe->stop_fd);
	if (fe->sock >= 0)
		close(fe->sock);
	pthread_mutex_destroy(&fe->lock);
	free(fe->chain);
	free(fe);
}
