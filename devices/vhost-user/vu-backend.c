/* SPDX-License-Identifier: MIT */
/* vhost-user back end: the device's side, rings, life cycle (see
 * vu-backend.h); the front end's requests are vu-requests.c. */
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
#include "vhost-user/vu-backend-int.h"
#include "vhost-user/vu-backend.h"
#include "vhost-user/vu-mem.h"

#define BIT(n) (1ull << (n))

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
 * ring is broken (the front end may report it); the device stops using the
 * ring.
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

void vu_swap_fd(struct vu_ring *r, int *slot, int fd)
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

bool vu_inflight_acked(const struct vu_backend *b)
{
	return b->acked_protocol & BIT(VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD);
}

/* Stop @r if it runs.  @cancel: see virtio_device_ops.stop_queue. */
void vu_ring_stop(struct vu_ring *r, bool cancel)
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
	ret = virtq_inflight_attach(&r->q.vq, &b->trk[r->q.index], reg,
				    b->inflight_qsize, &n);
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
int vu_ring_try_start(struct vu_ring *r)
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
	if (b->inflight && vu_inflight_acked(b)) {
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
	vmm_dbg("vhost-user %s: ring %u started: %u entries, next avail %u, used %u",
		b->name, r->q.index, r->num, r->next_avail, r->q.vq.used_idx);
	return 0;
}

/* Forget everything the front end told @r (device reset, disconnect). */
static void ring_forget(struct vu_ring *r)
{
	vu_ring_stop(r, true);
	if (r->kick_fd >= 0)
		close(r->kick_fd);
	r->kick_fd = -1;
	vu_swap_fd(r, &r->call_fd, -1);
	vu_swap_fd(r, &r->err_fd, -1);
	r->num = 0;
	r->next_avail = 0;
	r->has_addr = false;
	r->enable = false;
	virtq_reset(&r->q.vq);
	r->q.enabled = false;
}

void vu_inflight_unmap(struct vu_backend *b)
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
void vu_device_reset(struct vu_backend *b)
{
	for (unsigned int i = 0; i < b->nq; i++)
		ring_forget(&b->rings[i]);
	vu_mem_unmap(&b->mem);
	vu_inflight_unmap(b);
	b->acked = 0;
	b->features_set = false;
}

void vu_backend_disconnect(struct vu_backend *b)
{
	vu_device_reset(b);
	b->owner = false;
	b->acked_protocol = 0;
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
	b->trk = calloc(p->num_queues, sizeof(*b->trk));
	if (!b->rings || !b->trk) {
		free(b->rings);
		free(b->trk);
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
	free(b->trk);
	free(b);
}

