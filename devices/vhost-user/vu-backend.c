/* SPDX-License-Identifier: MIT */
/* vhost-user back end: requests, rings, memory (see vu-backend.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "log.h"
#include "vhost-user/vu-backend.h"
#include "vhost-user/vu-mem.h"

#define BIT(n) (1ull << (n))

/* What we offer: no migration logging, no back-end-initiated messages.
 * (REPLY_ACK and CONFIG are what QEMU's vhost-user-blk needs for sizes and
 * acknowledgements, MQ for queues, RESET_DEVICE for a guest's device
 * reset, INFLIGHT_SHMFD for requests that survive a back-end restart.) */
#define VU_PROTOCOL_FEATURES                                              \
	(BIT(VHOST_USER_PROTOCOL_F_MQ) | BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK) | \
	 BIT(VHOST_USER_PROTOCOL_F_CONFIG) |                              \
	 BIT(VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD) |                      \
	 BIT(VHOST_USER_PROTOCOL_F_RESET_DEVICE))

struct vu_ring {
	struct vu_backend *b;
	/* Handed to the device (its vq is the started split ring). */
	struct virtio_queue q;
	/* Front-end state for this ring (control thread). */
	uint16_t num;		 /* SET_VRING_NUM, 0: not yet */
	uint16_t next_avail;	 /* SET_VRING_BASE; GET_VRING_BASE answer */
	bool has_addr;
	struct vhost_user_vring_addr addr;
	int kick_fd;		 /* -1: none */
	bool enable;		 /* SET_VRING_ENABLE */
	bool started;		 /* ops->start_queue() succeeded */
	/*
	 * fd_lock protects call_fd and err_fd, which the device's I/O thread
	 * writes (vu_queue_notify(), vu_queue_needs_reset()) while the
	 * control thread may swap them (SET_VRING_CALL/ERR come at any time:
	 * QEMU masks and unmasks a ring's interrupt that way): an old fd is
	 * closed only after the swap, under the lock, so a notify never
	 * writes a closed or reused fd number.  Never held across a wait.
	 */
	pthread_mutex_t fd_lock;
	int call_fd, err_fd;	 /* -1: none */
	bool broken_logged;	 /* needs_reset logged (fd_lock) */
	/* The ring's in-flight tracker while it runs on the front end's
	 * buffer (SET_INFLIGHT_FD): r->q.vq.inflight points here. */
	struct virtq_inflight trk;
};

struct vu_backend {
	const struct virtio_device_ops *ops;
	void *dev;
	char name[64];
	unsigned int nq;
	uint16_t max_qsize;
	uint64_t offered;	   /* GET_FEATURES */
	/* Connection state (control thread). */
	bool owner;
	uint64_t acked;		   /* SET_FEATURES */
	bool features_set;
	uint64_t acked_protocol;   /* SET_PROTOCOL_FEATURES */
	struct vu_mem mem;
	/* SET_INFLIGHT_FD: the front end's in-flight buffer, mapped (NULL:
	 * none; the rings then run untracked).  The fd is closed at once:
	 * the mapping keeps the file, the front end keeps its own fd. */
	uint8_t *inflight;
	size_t inflight_len;
	uint16_t inflight_nq, inflight_qsize;
	/* What GET_INFLIGHT_FD hands out: one sealed memfd for nq regions of
	 * max_qsize entries, made at create (before minivmm-blkd confines
	 * this thread: its seccomp class has no memfd_create/ftruncate),
	 * zeroed at each GET.  One is enough: one front end at a time, and
	 * a front end asks again only after it let go of its buffer (QEMU:
	 * at a device reset).  -1 / NULL: none (GET answers size 0). */
	int own_fd;
	uint8_t *own_buf;
	size_t own_len;
	struct vu_ring *rings;
	struct vu_backend_stats st;
};

static void vu_queue_notify(struct virtio_queue *q);
static void vu_queue_needs_reset(struct virtio_queue *q, const char *why);

static const struct virtio_transport_ops vu_transport_ops = {
	.queue_notify = vu_queue_notify,
	.needs_reset = vu_queue_needs_reset,
};

static struct vu_ring *ring_of(struct virtio_queue *q)
{
	return container_of(q, struct vu_ring, q);
}

/* ---- the device's side (its I/O threads) ------------------------------ */

static void write_eventfd(int fd)
{
	uint64_t one = 1;

	/* EAGAIN: the counter is saturated, the reader has a wake-up
	 * pending anyway. */
	if (write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		vmm_dbg("vhost-user: eventfd write: %s", strerror(errno));
}

/* Context: the ring's I/O thread. */
static void vu_queue_notify(struct virtio_queue *q)
{
	struct vu_ring *r = ring_of(q);

	pthread_mutex_lock(&r->fd_lock);
	if (r->call_fd >= 0)
		write_eventfd(r->call_fd);
	pthread_mutex_unlock(&r->fd_lock);
}

/*
 * Context: the ring's I/O thread.  vhost-user has no NEEDS_RESET status
 * for the back end to set: the ring's error eventfd is its way to say the
 * ring is broken (QEMU reports it); the device stops using the ring.
 */
static void vu_queue_needs_reset(struct virtio_queue *q, const char *why)
{
	struct vu_ring *r = ring_of(q);

	pthread_mutex_lock(&r->fd_lock);
	if (!r->broken_logged)
		vmm_err("vhost-user %s: ring %u: %s; it stays stopped until the front end restarts it",
			r->b->name, q->index, why);
	r->broken_logged = true;
	if (r->err_fd >= 0)
		write_eventfd(r->err_fd);
	pthread_mutex_unlock(&r->fd_lock);
}

/* ---- rings ------------------------------------------------------------ */

static void swap_fd(struct vu_ring *r, int *slot, int fd)
{
	int old;

	pthread_mutex_lock(&r->fd_lock);
	old = *slot;
	*slot = fd;
	pthread_mutex_unlock(&r->fd_lock);
	if (old >= 0)
		close(old);
}

static bool protocol_features_acked(const struct vu_backend *b)
{
	return b->acked & BIT(VHOST_USER_F_PROTOCOL_FEATURES);
}

static bool inflight_acked(const struct vu_backend *b)
{
	return b->acked_protocol & BIT(VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD);
}

/* Stop @r if it runs.  @cancel: see virtio_device_ops.stop_queue. */
static void ring_stop(struct vu_ring *r, bool cancel)
{
	if (!r->started)
		return;
	/* Tracked, what is cancelled stays in flight in the front end's
	 * buffer instead of failing to the driver: the next back end
	 * resubmits it (a disconnect is a restart, as far as we know). */
	if (cancel)
		virtq_inflight_freeze(&r->q.vq);
	r->b->ops->stop_queue(r->b->dev, r->q.index, cancel);
	/* Every chain popped has been pushed (or given back): the next
	 * avail index to serve is where the ring stands. */
	r->next_avail = r->q.vq.last_avail_idx;
	r->started = false;
	r->b->st.ring_stops++;
}

/*
 * Track @r (resumed, not yet started) in its region of the in-flight
 * buffer: a fresh region is initialised, one a previous back end left is
 * recovered and its heads in flight are resubmitted first (see
 * virtq_inflight_attach()).  Returns 0 or -EINVAL (logged).
 */
static int ring_track(struct vu_ring *r)
{
	struct vu_backend *b = r->b;
	struct virtq_inflight_region *reg;
	int n, ret;

	if (r->q.index >= b->inflight_nq || r->num > b->inflight_qsize) {
		vmm_err("vhost-user %s: ring %u of %u entries has no region in the in-flight buffer (%u queues of %u)",
			b->name, r->q.index, r->num, b->inflight_nq, b->inflight_qsize);
		return -EINVAL;
	}
	reg = (struct virtq_inflight_region *)(b->inflight +
		r->q.index * virtq_inflight_region_size(b->inflight_qsize));
	ret = virtq_inflight_attach(&r->q.vq, &r->trk, reg, b->inflight_qsize, &n);
	if (ret) {
		vmm_err("vhost-user %s: ring %u: the in-flight buffer is not one this back end can use",
			b->name, r->q.index);
		return ret;
	}
	if (n < 0)
		return 0; /* fresh */
	if (n)
		vmm_info("vhost-user %s: ring %u: %d requests left in flight by the previous back end, resubmitted",
			 b->name, r->q.index, n);
	/* The previous back end may have published a used entry and died
	 * before it interrupted the driver: one interrupt too many is
	 * harmless, one too few can hang it. */
	pthread_mutex_lock(&r->fd_lock);
	if (r->call_fd >= 0)
		write_eventfd(r->call_fd);
	pthread_mutex_unlock(&r->fd_lock);
	return 0;
}

/*
 * Start @r if it has everything it needs.  Returns 0 (started, or not
 * ready yet) or -errno (the front end's values are wrong: logged).
 */
static int ring_try_start(struct vu_ring *r)
{
	struct vu_backend *b = r->b;
	const struct vhost_user_vring_addr *a = &r->addr;
	uint64_t desc, avail, used;
	bool eidx = b->acked & BIT(VIRTIO_RING_F_EVENT_IDX);
	int ret;

	if (r->started || !r->num || !r->has_addr || r->kick_fd < 0 ||
	    !b->mem.n || !b->features_set)
		return 0;
	if (protocol_features_acked(b) && !r->enable)
		return 0;
	/* The rings' addresses are the front end's virtual addresses:
	 * through the memory table to guest-physical ones, which the ring
	 * code checks against guest RAM again (virtq_resume()). */
	if (vu_mem_uaddr_to_gpa(&b->mem, a->desc_user_addr, 16ull * r->num, &desc) ||
	    vu_mem_uaddr_to_gpa(&b->mem, a->avail_user_addr, 6ull + 2ull * r->num, &avail) ||
	    vu_mem_uaddr_to_gpa(&b->mem, a->used_user_addr, 6ull + 8ull * r->num, &used)) {
		vmm_err("vhost-user %s: ring %u: addresses outside the memory table",
			b->name, r->q.index);
		return -EFAULT;
	}
	ret = virtq_resume(&r->q.vq, &b->mem.gm, r->num, desc, avail, used, eidx,
			   b->acked & BIT(VIRTIO_RING_F_INDIRECT_DESC),
			   r->next_avail);
	if (ret) {
		vmm_err("vhost-user %s: ring %u: misaligned ring addresses", b->name,
			r->q.index);
		return ret;
	}
	if (b->inflight && inflight_acked(b)) {
		ret = ring_track(r);
		if (ret) {
			virtq_reset(&r->q.vq);
			return ret;
		}
	}
	r->q.enabled = true;
	r->q.kick_fd = r->kick_fd;
	r->q.call_fd = -1; /* notifications go through vu_queue_notify() */
	pthread_mutex_lock(&r->fd_lock);
	r->broken_logged = false;
	pthread_mutex_unlock(&r->fd_lock);
	ret = b->ops->start_queue(b->dev, &r->q);
	if (ret) {
		vmm_err("vhost-user %s: ring %u: the device cannot start it: %s",
			b->name, r->q.index, strerror(-ret));
		virtq_reset(&r->q.vq);
		return ret;
	}
	r->started = true;
	b->st.ring_starts++;
	vmm_dbg("vhost-user %s: ring %u started: %u entries, next avail %u, used %u",
		b->name, r->q.index, r->num, r->next_avail, r->q.vq.used_idx);
	return 0;
}

/* Forget everything the front end told @r (device reset, disconnect). */
static void ring_forget(struct vu_ring *r)
{
	ring_stop(r, true);
	if (r->kick_fd >= 0)
		close(r->kick_fd);
	r->kick_fd = -1;
	swap_fd(r, &r->call_fd, -1);
	swap_fd(r, &r->err_fd, -1);
	r->num = 0;
	r->next_avail = 0;
	r->has_addr = false;
	r->enable = false;
	virtq_reset(&r->q.vq);
	r->q.enabled = false;
}

static void inflight_unmap(struct vu_backend *b)
{
	if (b->inflight)
		munmap(b->inflight, b->inflight_len);
	b->inflight = NULL;
	b->inflight_len = 0;
	b->inflight_nq = b->inflight_qsize = 0;
}

/* Device reset: rings, features, memory and the in-flight buffer (our
 * mapping; the front end keeps it) go; the owner and the protocol
 * features stay. */
static void device_reset(struct vu_backend *b)
{
	for (unsigned int i = 0; i < b->nq; i++)
		ring_forget(&b->rings[i]);
	vu_mem_unmap(&b->mem);
	inflight_unmap(b);
	b->acked = 0;
	b->features_set = false;
}

void vu_backend_disconnect(struct vu_backend *b)
{
	device_reset(b);
	b->owner = false;
	b->acked_protocol = 0;
}

/* ---- requests --------------------------------------------------------- */

/* A reply to send, built by a handler. */
struct vu_reply {
	union vhost_user_payload p;
	uint32_t size;
	bool send; /* the request has a reply of its own */
	int fd;	   /* sent with it (stays ours); -1: none */
};

static struct vu_ring *ring_arg(struct vu_backend *b, uint64_t index)
{
	if (index >= b->nq) {
		vmm_err("vhost-user %s: ring %llu does not exist (%u rings)", b->name,
			(unsigned long long)index, b->nq);
		return NULL;
	}
	return &b->rings[index];
}

static void reply_u64(struct vu_reply *rep, uint64_t v)
{
	rep->p.u64 = v;
	rep->size = sizeof(uint64_t);
	rep->send = true;
}

static int set_features(struct vu_backend *b, uint64_t f)
{
	int ret;

	if (f & ~b->offered) {
		vmm_err("vhost-user %s: SET_FEATURES %#llx: bits %#llx were never offered",
			b->name, (unsigned long long)f,
			(unsigned long long)(f & ~b->offered));
		return -EINVAL;
	}
	for (unsigned int i = 0; i < b->nq; i++)
		if (b->rings[i].started && f != b->acked) {
			vmm_err("vhost-user %s: SET_FEATURES while ring %u runs", b->name, i);
			return -EBUSY;
		}
	ret = b->ops->set_features(b->dev, f & ~BIT(VHOST_USER_F_PROTOCOL_FEATURES));
	if (ret) {
		vmm_err("vhost-user %s: the device refuses features %#llx (VERSION_1 is required)",
			b->name, (unsigned long long)f);
		return ret;
	}
	b->acked = f;
	b->features_set = true;
	return 0;
}

static int set_mem_table(struct vu_backend *b, struct vu_msg *m)
{
	struct vu_mem fresh = { .gm.fd = -1 };
	int ret;

	ret = vu_mem_map(&fresh, &m->p.memory, m->fds);
	vu_msg_close_fds(m); /* the mappings keep the files */
	if (ret)
		return ret;
	/* Running rings point into the old mappings: stop them (their
	 * requests finish), switch, start them again on the new table (with
	 * the rings that waited for a first table). */
	for (unsigned int i = 0; i < b->nq; i++)
		ring_stop(&b->rings[i], false);
	vu_mem_unmap(&b->mem);
	b->mem = fresh;
	b->st.mem_tables++;
	/* A ring whose addresses the new table no longer covers waits for
	 * the SET_VRING_ADDR that moves it (logged): not this request's
	 * failure. */
	for (unsigned int i = 0; i < b->nq; i++)
		(void)ring_try_start(&b->rings[i]);
	return 0;
}

static int get_config(struct vu_backend *b, const struct vu_msg *m,
		      struct vu_reply *rep)
{
	const struct vhost_user_config *c = &m->p.config;
	uint32_t have = b->ops->config_size, n;

	if (c->offset > VHOST_USER_MAX_CONFIG_SIZE ||
	    c->size > VHOST_USER_MAX_CONFIG_SIZE - c->offset) {
		vmm_err("vhost-user %s: GET_CONFIG beyond %u bytes", b->name,
			VHOST_USER_MAX_CONFIG_SIZE);
		return -EINVAL;
	}
	rep->p.config.offset = c->offset;
	rep->p.config.size = c->size;
	rep->p.config.flags = c->flags;
	memset(rep->p.config.region, 0, sizeof(rep->p.config.region));
	/* Bytes past the device's config space read as zeros (as on PCI). */
	n = c->offset >= have ? 0 : MIN(c->size, have - c->offset);
	if (n)
		b->ops->config_read(b->dev, c->offset, rep->p.config.region, n);
	rep->size = VHOST_USER_CONFIG_HDR_SIZE + c->size;
	rep->send = true;
	return 0;
}

static int set_config(struct vu_backend *b, const struct vu_msg *m)
{
	const struct vhost_user_config *c = &m->p.config;

	if (c->offset > b->ops->config_size ||
	    c->size > b->ops->config_size - c->offset) {
		vmm_err("vhost-user %s: SET_CONFIG outside the config space", b->name);
		return -EINVAL;
	}
	/* The device ignores writes to read-only fields (only blk's wce
	 * is writable), as on PCI. */
	if (c->size)
		b->ops->config_write(b->dev, c->offset, c->region, c->size);
	return 0;
}

/* The buffer GET_INFLIGHT_FD / SET_INFLIGHT_FD describe: within our
 * limits?  Returns its size, or 0 (logged). */
static uint64_t inflight_size(struct vu_backend *b, const char *req,
			      const struct vhost_user_inflight *in)
{
	if (!inflight_acked(b)) {
		vmm_err("vhost-user %s: %s without INFLIGHT_SHMFD negotiated", b->name, req);
		return 0;
	}
	if (!in->num_queues || in->num_queues > b->nq || !in->queue_size ||
	    in->queue_size > b->max_qsize) {
		vmm_err("vhost-user %s: %s for %u queues of %u entries (at most %u of %u)",
			b->name, req, in->num_queues, in->queue_size, b->nq, b->max_qsize);
		return 0;
	}
	/* At most 65535 x 16 KiB + 64: no overflow. */
	return in->num_queues * virtq_inflight_region_size(in->queue_size);
}

/*
 * GET_INFLIGHT_FD: a zeroed buffer for @num_queues regions of @queue_size
 * entries (our own memfd, sealed against shrinking and growing, so that no
 * mapping of it can fault), which the front end keeps and gives back with
 * SET_INFLIGHT_FD, now and after every reconnect, to this back end or the
 * next.  Values beyond our limits, or a ring running (it may be tracked in
 * this very buffer), get mmap_size 0 and no fd: the front end carries on
 * untracked, as QEMU does.  Without INFLIGHT_SHMFD negotiated the request
 * fails.
 */
static int get_inflight_fd(struct vu_backend *b, const struct vu_msg *m,
			   struct vu_reply *rep)
{
	const struct vhost_user_inflight *in = &m->p.inflight;
	uint64_t size;

	rep->p.inflight = (struct vhost_user_inflight){
		.num_queues = in->num_queues, .queue_size = in->queue_size,
	};
	rep->size = sizeof(rep->p.inflight);
	rep->send = true; /* a failure closes the connection, never an ack */
	size = inflight_size(b, "GET_INFLIGHT_FD", in);
	if (!inflight_acked(b))
		return -EINVAL;
	if (!size)
		return 0;
	for (unsigned int i = 0; i < b->nq; i++)
		if (b->rings[i].started) {
			vmm_err("vhost-user %s: GET_INFLIGHT_FD while ring %u runs", b->name, i);
			return 0;
		}
	if (!b->own_buf || size > b->own_len) {
		vmm_err("vhost-user %s: GET_INFLIGHT_FD: no buffer (see the start-up warning)",
			b->name);
		return 0;
	}
	memset(b->own_buf, 0, (size_t)size);
	rep->p.inflight.mmap_size = size;
	rep->fd = b->own_fd;
	return 0;
}

/*
 * SET_INFLIGHT_FD: map the buffer (ours from GET_INFLIGHT_FD, or one a
 * previous back end made) for the rings that start from now on.  Checked
 * first: our limits, the size against the queues and against the file, a
 * page-aligned offset.  Not while a ring runs on the old one.
 */
static int set_inflight_fd(struct vu_backend *b, const struct vu_msg *m)
{
	const struct vhost_user_inflight *in = &m->p.inflight;
	uint64_t need = inflight_size(b, "SET_INFLIGHT_FD", in);
	const char *why = NULL;
	struct stat st;
	void *p;

	if (!need)
		return -EINVAL;
	for (unsigned int i = 0; i < b->nq; i++)
		if (b->rings[i].started) {
			vmm_err("vhost-user %s: SET_INFLIGHT_FD while ring %u runs", b->name, i);
			return -EBUSY;
		}
	if (in->mmap_size < need)
		why = "smaller than its queues' regions";
	else if (in->mmap_offset & 4095)
		why = "offset not 4 KiB aligned";
	else if (in->mmap_offset > UINT64_MAX - in->mmap_size ||
		 in->mmap_offset + in->mmap_size > (uint64_t)INT64_MAX)
		why = "offset + size overflows";
	else if (fstat(m->fds[0], &st) < 0 || !S_ISREG(st.st_mode))
		why = "its file descriptor is not a memfd";
	else if ((uint64_t)st.st_size < in->mmap_offset + in->mmap_size)
		why = "it ends beyond the end of its file";
	/* As for guest RAM (vu-mem.c): the size is checked, not the seals
	 * (minivmm-blkd's seccomp class has no F_GET_SEALS).  Ours are sealed;
	 * a front end that shrinks its own file under us is one that could
	 * as well shrink guest RAM. */
	if (why) {
		vmm_err("vhost-user %s: SET_INFLIGHT_FD (%llu bytes at %#llx, %u queues of %u): %s",
			b->name, (unsigned long long)in->mmap_size,
			(unsigned long long)in->mmap_offset, in->num_queues,
			in->queue_size, why);
		return -EINVAL;
	}
	p = mmap(NULL, (size_t)need, PROT_READ | PROT_WRITE, MAP_SHARED, m->fds[0],
		 (off_t)in->mmap_offset);
	if (p == MAP_FAILED) {
		vmm_err("vhost-user %s: SET_INFLIGHT_FD: mmap: %s", b->name, strerror(errno));
		return -EINVAL;
	}
	inflight_unmap(b);
	b->inflight = p;
	b->inflight_len = (size_t)need;
	b->inflight_nq = in->num_queues;
	b->inflight_qsize = in->queue_size;
	vmm_info("vhost-user %s: in-flight buffer mapped (%u queues of %u)", b->name,
		 in->num_queues, in->queue_size);
	return 0;
}

/* SET_VRING_KICK/CALL/ERR: the ring index and the fd (or none). */
static struct vu_ring *vring_fd_arg(struct vu_backend *b, struct vu_msg *m,
				    int *fd)
{
	struct vu_ring *r = ring_arg(b, m->p.u64 & VHOST_USER_VRING_IDX_MASK);

	*fd = -1;
	if (m->p.u64 & ~(VHOST_USER_VRING_IDX_MASK | VHOST_USER_VRING_NOFD_MASK)) {
		vmm_err("vhost-user %s: reserved bits in a ring fd message", b->name);
		return NULL;
	}
	if (r && m->nfds == 1) {
		*fd = m->fds[0];
		m->nfds = 0; /* ours now */
	}
	return r;
}

static int handle(struct vu_backend *b, struct vu_msg *m, struct vu_reply *rep)
{
	const struct vhost_user_vring_state *s = &m->p.state;
	struct vu_ring *r;
	int fd;

	switch (m->hdr.request) {
	case VHOST_USER_GET_FEATURES:
		reply_u64(rep, b->offered);
		return 0;
	case VHOST_USER_SET_FEATURES:
		return set_features(b, m->p.u64);
	case VHOST_USER_GET_PROTOCOL_FEATURES:
		reply_u64(rep, VU_PROTOCOL_FEATURES);
		return 0;
	case VHOST_USER_SET_PROTOCOL_FEATURES:
		if (m->p.u64 & ~VU_PROTOCOL_FEATURES) {
			vmm_err("vhost-user %s: protocol features %#llx were never offered",
				b->name, (unsigned long long)(m->p.u64 & ~VU_PROTOCOL_FEATURES));
			return -EINVAL;
		}
		b->acked_protocol = m->p.u64;
		return 0;
	case VHOST_USER_GET_QUEUE_NUM:
		reply_u64(rep, b->nq);
		return 0;
	case VHOST_USER_SET_OWNER:
		b->owner = true;
		return 0;
	case VHOST_USER_RESET_OWNER:
	case VHOST_USER_RESET_DEVICE:
		device_reset(b);
		return 0;
	case VHOST_USER_SET_MEM_TABLE:
		return set_mem_table(b, m);
	case VHOST_USER_SET_VRING_NUM:
		if (!(r = ring_arg(b, s->index)))
			return -EINVAL;
		if (r->started || !s->num || s->num > b->max_qsize ||
		    (s->num & (s->num - 1))) {
			vmm_err("vhost-user %s: ring %u: size %u refused (%s; at most %u, a power of two)",
				b->name, s->index, s->num,
				r->started ? "the ring runs" : "bad size", b->max_qsize);
			return -EINVAL;
		}
		r->num = (uint16_t)s->num;
		return 0;
	case VHOST_USER_SET_VRING_BASE:
		if (!(r = ring_arg(b, s->index)))
			return -EINVAL;
		/* Split rings only: the index is 16 bits. */
		if (r->started || s->num > UINT16_MAX) {
			vmm_err("vhost-user %s: ring %u: base %u refused", b->name,
				s->index, s->num);
			return -EINVAL;
		}
		r->next_avail = (uint16_t)s->num;
		return 0;
	case VHOST_USER_SET_VRING_ADDR:
		if (!(r = ring_arg(b, m->p.addr.index)))
			return -EINVAL;
		if (m->p.addr.flags & VHOST_VRING_F_LOG) {
			vmm_err("vhost-user %s: ring %u: dirty logging was never offered",
				b->name, m->p.addr.index);
			return -EINVAL;
		}
		ring_stop(r, false); /* restarted on the new addresses */
		r->addr = m->p.addr;
		r->has_addr = true;
		return ring_try_start(r);
	case VHOST_USER_SET_VRING_KICK:
		if (!(r = vring_fd_arg(b, m, &fd)))
			return -EINVAL;
		if (fd < 0) {
			vmm_err("vhost-user %s: ring %u: polling mode (no kick fd) is not supported",
				b->name, r->q.index);
			return -EINVAL;
		}
		ring_stop(r, false);
		if (r->kick_fd >= 0)
			close(r->kick_fd);
		r->kick_fd = fd;
		return ring_try_start(r);
	case VHOST_USER_SET_VRING_CALL:
		if (!(r = vring_fd_arg(b, m, &fd)))
			return -EINVAL;
		swap_fd(r, &r->call_fd, fd);
		return 0;
	case VHOST_USER_SET_VRING_ERR:
		if (!(r = vring_fd_arg(b, m, &fd)))
			return -EINVAL;
		swap_fd(r, &r->err_fd, fd);
		return 0;
	case VHOST_USER_SET_VRING_ENABLE:
		if (!(r = ring_arg(b, s->index)))
			return -EINVAL;
		if (s->num > 1) {
			vmm_err("vhost-user %s: ring %u: enable %u", b->name, s->index,
				s->num);
			return -EINVAL;
		}
		r->enable = s->num;
		if (!r->enable) {
			ring_stop(r, false);
			return 0;
		}
		return ring_try_start(r);
	case VHOST_USER_GET_VRING_BASE:
		if (!(r = ring_arg(b, s->index)))
			return -EINVAL;
		/* Stops the ring; a restart needs a new kick fd. */
		ring_stop(r, false);
		if (r->kick_fd >= 0)
			close(r->kick_fd);
		r->kick_fd = -1;
		rep->p.state.index = s->index;
		rep->p.state.num = r->next_avail;
		rep->size = sizeof(rep->p.state);
		rep->send = true;
		return 0;
	case VHOST_USER_GET_CONFIG:
		return get_config(b, m, rep);
	case VHOST_USER_SET_CONFIG:
		return set_config(b, m);
	case VHOST_USER_GET_INFLIGHT_FD:
		return get_inflight_fd(b, m, rep);
	case VHOST_USER_SET_INFLIGHT_FD:
		return set_inflight_fd(b, m);
	default:
		/* vu_msg_check() let it through, but nothing we offered makes
		 * it valid. */
		vmm_err("vhost-user %s: request %u not supported", b->name,
			m->hdr.request);
		return -ENOTSUP;
	}
}

int vu_backend_handle(struct vu_backend *b, int sock, struct vu_msg *m)
{
	struct vu_reply rep = { .send = false, .fd = -1 };
	bool ack = (m->hdr.flags & VHOST_USER_NEED_REPLY) &&
		   (b->acked_protocol & BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK));
	char nbuf[24];
	int ret;

	b->st.messages++;
	vmm_dbg("vhost-user %s: %s (size %u, %u fds%s)", b->name,
		vu_request_name(m->hdr.request, nbuf, sizeof(nbuf)), m->hdr.size,
		m->nfds, ack ? ", ack" : "");
	ret = handle(b, m, &rep);
	vu_msg_close_fds(m); /* whatever the handler did not keep */
	if (rep.send) {
		/* A request with a reply of its own answers only on success:
		 * a failed one ends the connection. */
		if (!ret && sock >= 0)
			ret = vu_msg_reply(sock, m, &rep.p, rep.size, &rep.fd,
					   rep.fd >= 0 ? 1 : 0);
		return ret;
	}
	if (ack) {
		/* REPLY_ACK: 0 for success, non-zero for failure; the
		 * connection goes on either way. */
		uint64_t status = ret ? 1 : 0;

		return sock < 0 ? 0 : vu_msg_reply(sock, m, &status, sizeof(status), NULL, 0);
	}
	/* No way to tell the front end: it would carry on with a device in
	 * a state it did not ask for. */
	return ret;
}

int vu_backend_serve(struct vu_backend *b, int sock, int stop_fd)
{
	struct vu_msg m;
	const char *why;
	char nbuf[24];
	int ret;

	b->st.connections++;
	for (;;) {
		ret = vu_msg_recv(sock, stop_fd, &m);
		if (ret == -ECONNRESET) {
			ret = 0;
			break;
		}
		if (ret) {
			if (ret == -EPROTO)
				vmm_err("vhost-user %s: malformed message (too large, too many fds, or cut short): closing the connection",
					b->name);
			break;
		}
		if (vu_msg_check(&m, &why)) {
			vmm_err("vhost-user %s: malformed %s (size %u, %u fds): %s: closing the connection",
				b->name, vu_request_name(m.hdr.request, nbuf, sizeof(nbuf)),
				m.hdr.size, m.nfds, why);
			vu_msg_close_fds(&m);
			ret = -EPROTO;
			break;
		}
		ret = vu_backend_handle(b, sock, &m);
		if (ret) {
			vmm_err("vhost-user %s: %s failed (%s): closing the connection",
				b->name, vu_request_name(m.hdr.request, nbuf, sizeof(nbuf)),
				strerror(-ret));
			ret = -EPROTO;
			break;
		}
	}
	if (ret == -EPROTO)
		b->st.refused++;
	vu_backend_disconnect(b);
	return ret;
}

/* ---- life cycle -------------------------------------------------------- */

/* The buffer GET_INFLIGHT_FD hands out.  Without it the back end works,
 * untracked (GET answers size 0): a warning, not a failure. */
static void own_buffer_create(struct vu_backend *b)
{
	size_t len = b->nq * virtq_inflight_region_size(b->max_qsize);
	void *p;
	int fd;

	b->own_fd = -1;
	fd = memfd_create("vhost-inflight", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, (off_t)len) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0 ||
	    (p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		vmm_warn("vhost-user %s: no in-flight buffer (%zu bytes): %s; front ends get none",
			 b->name, len, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	b->own_fd = fd;
	b->own_buf = p;
	b->own_len = len;
}

int vu_backend_create(const struct vu_backend_params *p, struct vu_backend **out)
{
	struct vu_backend *b;

	if (!p->ops || !p->ops->start_queue || !p->ops->stop_queue ||
	    !p->ops->features || !p->ops->set_features || !p->ops->config_read ||
	    !p->ops->config_write || !p->num_queues || !p->max_queue_size ||
	    p->ops->config_size > VHOST_USER_MAX_CONFIG_SIZE)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->rings = calloc(p->num_queues, sizeof(*b->rings));
	if (!b->rings) {
		free(b);
		return -ENOMEM;
	}
	b->ops = p->ops;
	b->dev = p->dev;
	b->nq = p->num_queues;
	b->max_qsize = p->max_queue_size;
	snprintf(b->name, sizeof(b->name), "%s", p->name ? p->name : "device");
	b->offered = p->ops->features(p->dev) | BIT(VHOST_USER_F_PROTOCOL_FEATURES);
	b->mem.gm.fd = -1;
	own_buffer_create(b);
	for (unsigned int i = 0; i < b->nq; i++) {
		struct vu_ring *r = &b->rings[i];

		r->b = b;
		r->q.t = NULL; /* the ops find the ring from the queue */
		r->q.t_ops = &vu_transport_ops;
		r->q.index = i;
		r->q.vector = VIRTIO_NO_VECTOR;
		r->q.kick_fd = r->q.call_fd = -1;
		r->kick_fd = r->call_fd = r->err_fd = -1;
		pthread_mutex_init(&r->fd_lock, NULL);
	}
	*out = b;
	return 0;
}

void vu_backend_destroy(struct vu_backend *b)
{
	if (!b)
		return;
	vu_backend_disconnect(b);
	if (b->own_buf)
		munmap(b->own_buf, b->own_len);
	if (b->own_fd >= 0)
		close(b->own_fd);
	for (unsigned int i = 0; i < b->nq; i++)
		pthread_mutex_destroy(&b->rings[i].fd_lock);
	free(b->rings);
	free(b);
}

void vu_backend_get_stats(const struct vu_backend *b, struct vu_backend_stats *st)
{
	*st = b->st;
}

uint64_t vu_backend_features(const struct vu_backend *b)
{
	return b->offered;
}

uint64_t vu_backend_protocol_features(const struct vu_backend *b)
{
	(void)b;
	return VU_PROTOCOL_FEATURES;
}
