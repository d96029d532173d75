/* SPDX-License-Identifier: MIT */
/* vhost-user back end: the front end's requests (see vu-backend.h and
 * vu-backend-int.h). */
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
		vu_ring_stop(&b->rings[i], false);
	vu_mem_unmap(&b->mem);
	b->mem = fresh;
	/* A ring whose addresses the new table no longer covers waits for
	 * the SET_VRING_ADDR that moves it (logged): not this request's
	 * failure. */
	for (unsigned int i = 0; i < b->nq; i++)
		(void)vu_ring_try_start(&b->rings[i]);
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
	if (!vu_inflight_acked(b)) {
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
 * untracked.  Without INFLIGHT_SHMFD negotiated the request
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
	if (!vu_inflight_acked(b))
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
	vu_inflight_unmap(b);
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

static int set_vring_num(struct vu_backend *b, const struct vhost_user_vring_state *s)
{
	struct vu_ring *r = ring_arg(b, s->index);

	if (!r)
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
}

static int set_vring_base(struct vu_backend *b, const struct vhost_user_vring_state *s)
{
	struct vu_ring *r = ring_arg(b, s->index);

	if (!r)
		return -EINVAL;
	/* Split rings only: the index is 16 bits. */
	if (r->started || s->num > UINT16_MAX) {
		vmm_err("vhost-user %s: ring %u: base %u refused", b->name,
			s->index, s->num);
		return -EINVAL;
	}
	r->next_avail = (uint16_t)s->num;
	return 0;
}

static int set_vring_addr(struct vu_backend *b, const struct vhost_user_vring_addr *a)
{
	struct vu_ring *r = ring_arg(b, a->index);

	if (!r)
		return -EINVAL;
	if (a->flags & VHOST_VRING_F_LOG) {
		vmm_err("vhost-user %s: ring %u: dirty logging was never offered",
			b->name, a->index);
		return -EINVAL;
	}
	vu_ring_stop(r, false); /* restarted on the new addresses */
	r->addr = *a;
	r->has_addr = true;
	return vu_ring_try_start(r);
}

/* SET_VRING_KICK/CALL/ERR. */
static int set_vring_fd(struct vu_backend *b, struct vu_msg *m)
{
	int fd;
	struct vu_ring *r = vring_fd_arg(b, m, &fd);

	if (!r)
		return -EINVAL;
	if (m->hdr.request == VHOST_USER_SET_VRING_CALL) {
		vu_swap_fd(r, &r->call_fd, fd);
		return 0;
	}
	if (m->hdr.request == VHOST_USER_SET_VRING_ERR) {
		vu_swap_fd(r, &r->err_fd, fd);
		return 0;
	}
	if (fd < 0) {
		vmm_err("vhost-user %s: ring %u: polling mode (no kick fd) is not supported",
			b->name, r->q.index);
		return -EINVAL;
	}
	vu_ring_stop(r, false);
	if (r->kick_fd >= 0)
		close(r->kick_fd);
	r->kick_fd = fd;
	return vu_ring_try_start(r);
}

static int set_vring_enable(struct vu_backend *b, const struct vhost_user_vring_state *s)
{
	struct vu_ring *r = ring_arg(b, s->index);

	if (!r)
		return -EINVAL;
	if (s->num > 1) {
		vmm_err("vhost-user %s: ring %u: enable %u", b->name, s->index,
			s->num);
		return -EINVAL;
	}
	r->enable = s->num;
	if (!r->enable) {
		vu_ring_stop(r, false);
		return 0;
	}
	return vu_ring_try_start(r);
}

static int get_vring_base(struct vu_backend *b, const struct vhost_user_vring_state *s,
			  struct vu_reply *rep)
{
	struct vu_ring *r = ring_arg(b, s->index);

	if (!r)
		return -EINVAL;
	/* Stops the ring; a restart needs a new kick fd. */
	vu_ring_stop(r, false);
	if (r->kick_fd >= 0)
		close(r->kick_fd);
	r->kick_fd = -1;
	rep->p.state.index = s->index;
	rep->p.state.num = r->next_avail;
	rep->size = sizeof(rep->p.state);
	rep->send = true;
	return 0;
}

static int set_protocol_features(struct vu_backend *b, uint64_t f)
{
	if (f & ~VU_PROTOCOL_FEATURES) {
		vmm_err("vhost-user %s: protocol features %#llx were never offered",
			b->name, (unsigned long long)(f & ~VU_PROTOCOL_FEATURES));
		return -EINVAL;
	}
	b->acked_protocol = f;
	return 0;
}

static int handle(struct vu_backend *b, struct vu_msg *m, struct vu_reply *rep)
{
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
		return set_protocol_features(b, m->p.u64);
	case VHOST_USER_GET_QUEUE_NUM:
		reply_u64(rep, b->nq);
		return 0;
	case VHOST_USER_SET_OWNER:
		b->owner = true;
		return 0;
	case VHOST_USER_RESET_OWNER:
	case VHOST_USER_RESET_DEVICE:
		vu_device_reset(b);
		return 0;
	case VHOST_USER_SET_MEM_TABLE:
		return set_mem_table(b, m);
	case VHOST_USER_SET_VRING_NUM:
		return set_vring_num(b, &m->p.state);
	case VHOST_USER_SET_VRING_BASE:
		return set_vring_base(b, &m->p.state);
	case VHOST_USER_SET_VRING_ADDR:
		return set_vring_addr(b, &m->p.addr);
	case VHOST_USER_SET_VRING_KICK:
	case VHOST_USER_SET_VRING_CALL:
	case VHOST_USER_SET_VRING_ERR:
		return set_vring_fd(b, m);
	case VHOST_USER_SET_VRING_ENABLE:
		return set_vring_enable(b, &m->p.state);
	case VHOST_USER_GET_VRING_BASE:
		return get_vring_base(b, &m->p.state, rep);
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
	vu_backend_disconnect(b);
	return ret;
}

