/* SPDX-License-Identifier: MIT */
/*
 * virtio-blk requests: parsing a descriptor chain into a request (every
 * guest-controlled length and address checked), completion, and the queue
 * owner's side (request pools, popping, submitting to the engine, a queue
 * the guest broke).  See vblk.h for the request life cycle.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/fs.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "blk/blk-engine.h"
#include "blk/vblk.h"
#include "log.h"
#include "blk/vblk-int.h"

/* ---- request parsing ------------------------------------------------- */

static enum vblk_stat_type stat_type(uint32_t type)
{
	switch (type) {
	case VIRTIO_BLK_T_IN: return VBLK_STAT_IN;
	case VIRTIO_BLK_T_OUT: return VBLK_STAT_OUT;
	case VIRTIO_BLK_T_FLUSH: return VBLK_STAT_FLUSH;
	case VIRTIO_BLK_T_GET_ID: return VBLK_STAT_GET_ID;
	case VIRTIO_BLK_T_DISCARD: return VBLK_STAT_DISCARD;
	case VIRTIO_BLK_T_WRITE_ZEROES: return VBLK_STAT_WRITE_ZEROES;
	default: return VBLK_STAT_OTHER;
	}
}

/* Write the status byte and count the request. */
static uint32_t finish(struct vblk_req *req, uint8_t status, uint32_t used_len)
{
	struct vblk_queue_stats *st = &req->blk->queues[req->queue].stats;

	/* Plain store into guest memory: published by the virtq_push() wmb. */
	*req->status = status;
	req->status_val = status;
	req->used_len = used_len;
	stat_add(&st->reqs[stat_type(req->type)], 1);
	if (status == VIRTIO_BLK_S_OK) {
		if (req->type == VIRTIO_BLK_T_IN)
			stat_add(&st->bytes_read, req->len);
		else if (req->type == VIRTIO_BLK_T_OUT)
			stat_add(&st->bytes_written, req->len);
	} else if (status == VIRTIO_BLK_S_IOERR) {
		stat_add(&st->io_errors, 1);
	} else {
		stat_add(&st->unsupported, 1);
	}
	return used_len;
}

static int parse_done(struct vblk_req *req, uint8_t status)
{
	finish(req, status, 1);
	return VBLK_REQ_DONE;
}

/*
 * Walk @len bytes at byte @skip of the iovec list: copy them out to @out,
 * or in from @in, or (both NULL) zero them.
 */
static void iov_walk(const struct iovec *iov, unsigned int n, uint64_t skip,
		     void *out, const void *in, size_t len)
{
	char *o = out;
	const char *s = in;

	for (unsigned int i = 0; i < n && len; i++) {
		char *seg = (char *)iov[i].iov_base;
		size_t c;

		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		c = MIN(iov[i].iov_len - skip, len);
		if (o) {
			memcpy(o, seg + skip, c);
			o += c;
		} else if (s) {
			memcpy(seg + skip, s, c);
			s += c;
		} else {
			memset(seg + skip, 0, c);
		}
		len -= c;
		skip = 0;
	}
}

/* Copy @len bytes at byte @skip of the iovec list into @dst. */
static void iov_gather(const struct iovec *iov, unsigned int n, uint64_t skip,
		       void *dst, size_t len)
{
	iov_walk(iov, n, skip, dst, NULL, len);
}

/* Copy @len bytes of @src (zeros if NULL) to byte @skip of the iovec list. */
static void iov_scatter(const struct iovec *iov, unsigned int n, uint64_t skip,
			const void *src, size_t len)
{
	iov_walk(iov, n, skip, NULL, src, len);
}

/*
 * Point req->iov at bytes [skip, skip+take) of @iov.  Returns -E2BIG if
 * that needs more than seg_max segments (what we advertise).
 */
static int take_iov(struct vblk_req *req, const struct iovec *iov,
		    unsigned int n, uint64_t skip, uint64_t take)
{
	req->niov = 0;
	req->len = take;
	for (unsigned int i = 0; i < n && take; i++) {
		uint64_t seg = iov[i].iov_len, c;

		if (skip >= seg) {
			skip -= seg;
			continue;
		}
		c = MIN(seg - skip, take);
		if (req->niov == req->max_iov)
			return -E2BIG;
		if (req->niov == VBLK_INLINE_IOV && req->iov == req->inline_iov) {
			/* A long chain: move to a full-size array. */
			struct iovec *big = malloc(req->max_iov * sizeof(*big));

			if (!big)
				return -ENOMEM;
			memcpy(big, req->inline_iov, req->niov * sizeof(*big));
			req->iov = big;
		}
		req->iov[req->niov].iov_base = (char *)iov[i].iov_base + skip;
		req->iov[req->niov].iov_len = c;
		req->niov++;
		take -= c;
		skip = 0;
	}
	return 0;
}

/* IN/OUT range checks: all on guest-controlled sector and lengths. */
static bool rw_range_ok(const struct vblk *b, struct vblk_req *req)
{
	uint64_t nsec;

	if (req->len == 0 || req->len % b->blk_size)
		return false;
	nsec = req->len >> SECTOR_SHIFT;
	/* Overflow-safe: sector <= capacity, then nsec <= capacity - sector. */
	if (req->sector > b->capacity || nsec > b->capacity - req->sector)
		return false;
	req->offset = req->sector << SECTOR_SHIFT;
	return req->offset % b->blk_size == 0;
}

static int parse_dwz(struct vblk *b, struct vblk_req *req,
		     const struct virtq_chain *chain, uint64_t out_data,
		     uint64_t in_data)
{
	struct virtio_blk_discard_write_zeroes seg;
	uint32_t flags, nsec;
	uint64_t sector;
	bool discard = req->type == VIRTIO_BLK_T_DISCARD;

	if (b->opt_flags & VBLK_OPT_READONLY)
		return parse_done(req, VIRTIO_BLK_S_IOERR);
	/* Guest-controlled range list: size, count, flags, range, here. */
	if (in_data || out_data == 0 || out_data % sizeof(seg) ||
	    out_data / sizeof(seg) > VBLK_MAX_DWZ_SEG)
		return parse_done(req, VIRTIO_BLK_S_IOERR);
	iov_gather(chain->iov, chain->nr_out, sizeof(struct virtio_blk_outhdr),
		   &seg, sizeof(seg));
	sector = le64toh(seg.sector);
	nsec = le32toh(seg.num_sectors);
	flags = le32toh(seg.flags);
	/* Spec 5.2.6.2: UNMAP on a discard and unknown flags are UNSUPP. */
	if (discard ? flags != 0 : (flags & ~VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP))
		return parse_done(req, VIRTIO_BLK_S_UNSUPP);
	if (nsec == 0 || nsec > VBLK_MAX_DWZ_SECTORS ||
	    sector > b->capacity || nsec > b->capacity - sector)
		return parse_done(req, VIRTIO_BLK_S_IOERR);
	req->sector = sector;
	req->offset = sector << SECTOR_SHIFT;
	req->len = (uint64_t)nsec << SECTOR_SHIFT;
	if (req->offset % b->blk_size || req->len % b->blk_size)
		return parse_done(req, VIRTIO_BLK_S_IOERR);
	if (flags & VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP)
		req->flags |= VBLK_REQ_F_UNMAP;
	if (!discard && vblk_write_through(b))
		req->flags |= VBLK_REQ_F_SYNC;
	return VBLK_REQ_EXECUTE;
}

int vblk_req_parse(struct vblk *b, const struct virtq_chain *chain,
		   struct vblk_req *req)
{
	unsigned int nseg = chain->nr_out + chain->nr_in;
	const struct iovec *in_iov = chain->iov + chain->nr_out;
	struct virtio_blk_outhdr hdr;
	const struct iovec *last;
	uint64_t out_len = 0, out_data, in_data;

	req->blk = b;
	req->head = chain->head;
	req->type = UINT32_MAX;
	req->flags = 0;
	req->sector = 0;
	req->offset = 0;
	req->len = 0;
	req->niov = 0;
	req->used_len = 0;
	req->status = NULL;
	req->engine_data = NULL;
	req->engine_u64 = 0;
	req->next = NULL;

	/* The status byte is the last byte of the last writable segment; the
	 * chain walk guaranteed segments are non-empty and in guest RAM. */
	if (chain->nr_in == 0) {
		stat_add(&b->queues[req->queue].stats.proto_errors, 1);
		return -EPROTO;
	}
	last = &chain->iov[nseg - 1];
	req->status = (uint8_t *)last->iov_base + last->iov_len - 1;
	in_data = chain->in_len - 1;

	for (unsigned int i = 0; i < chain->nr_out; i++)
		out_len += chain->iov[i].iov_len;
	/* The header is the first 16 readable bytes, possibly split. */
	if (out_len < sizeof(hdr))
		return parse_done(req, VIRTIO_BLK_S_IOERR);
	iov_gather(chain->iov, chain->nr_out, 0, &hdr, sizeof(hdr));
	out_data = out_len - sizeof(hdr);
	/* Guest-controlled type and sector: validated per type below. */
	req->type = le32toh(hdr.type);
	req->sector = le64toh(hdr.sector);

	/*
	 * IN/OUT data length (guest-controlled sum of descriptor lengths,
	 * aliasing allowed) is capped here, before any iovec is built: the
	 * host never does more than VBLK_MAX_REQ_BYTES of I/O per request.
	 */
	switch (req->type) {
	case VIRTIO_BLK_T_IN:
		if (out_data || in_data > VBLK_MAX_REQ_BYTES ||
		    take_iov(req, in_iov, chain->nr_in, 0, in_data) ||
		    !rw_range_ok(b, req))
			return parse_done(req, VIRTIO_BLK_S_IOERR);
		return VBLK_REQ_EXECUTE;
	case VIRTIO_BLK_T_OUT:
		if ((b->opt_flags & VBLK_OPT_READONLY) || in_data ||
		    out_data > VBLK_MAX_REQ_BYTES ||
		    take_iov(req, chain->iov, chain->nr_out, sizeof(hdr), out_data) ||
		    !rw_range_ok(b, req))
			return parse_done(req, VIRTIO_BLK_S_IOERR);
		if (vblk_write_through(b))
			req->flags |= VBLK_REQ_F_SYNC;
		return VBLK_REQ_EXECUTE;
	case VIRTIO_BLK_T_FLUSH:
		/* The sector field is reserved; any data is ignored. */
		req->sector = 0;
		if (b->opt_flags & VBLK_OPT_NO_FLUSH)
			return parse_done(req, VIRTIO_BLK_S_OK); /* unsafe mode */
		return VBLK_REQ_EXECUTE;
	case VIRTIO_BLK_T_GET_ID: {
		/* Write min(20, buffer) bytes of the NUL-padded serial. */
		uint64_t n = MIN(in_data, (uint64_t)VIRTIO_BLK_ID_BYTES);

		iov_scatter(in_iov, chain->nr_in, 0, b->serial, n);
		finish(req, VIRTIO_BLK_S_OK, (uint32_t)n + 1);
		return VBLK_REQ_DONE;
	}
	case VIRTIO_BLK_T_DISCARD:
	case VIRTIO_BLK_T_WRITE_ZEROES:
		return parse_dwz(b, req, chain, out_data, in_data);
	default:
		return parse_done(req, VIRTIO_BLK_S_UNSUPP);
	}
}

uint32_t vblk_req_complete(struct vblk_req *req, int64_t res)
{
	struct vblk *b = req->blk;

	if (res < 0) {
		if (req->type == VIRTIO_BLK_T_DISCARD && res == -EOPNOTSUPP)
			return finish(req, VIRTIO_BLK_S_OK, 1); /* a hint */
		if (res == -ECANCELED) {
			/* Our own doing (reset/stop), not a host error. */
			stat_add(&b->queues[req->queue].stats.cancelled, 1);
			return finish(req, VIRTIO_BLK_S_IOERR, 1);
		}
		vblk_log_io_error(b, req, (int)-res);
		return finish(req, VIRTIO_BLK_S_IOERR, 1);
	}
	if (req->type == VIRTIO_BLK_T_OUT && (uint64_t)res < req->len) {
		/* The engine retried: the write cannot make progress. */
		vblk_log_io_error(b, req, EIO);
		return finish(req, VIRTIO_BLK_S_IOERR, 1);
	}
	log_limit_quiet(&b->err_log); /* closes an I/O error burst */
	switch (req->type) {
	case VIRTIO_BLK_T_IN:
		/* Short read: past the end of a shrunk file, reads as zeros. */
		if ((uint64_t)res < req->len)
			iov_scatter(req->iov, req->niov, (uint64_t)res, NULL,
				    req->len - (uint64_t)res);
		return finish(req, VIRTIO_BLK_S_OK,
			      (uint32_t)MIN(req->len + 1, (uint64_t)UINT32_MAX));
	default:
		return finish(req, VIRTIO_BLK_S_OK, 1);
	}
}

/* ---- queue owner side ------------------------------------------------ */

struct vblk_req *vblk_req_get(struct vblk *b, unsigned int q)
{
	struct vblk_queue *qs = &b->queues[q];
	struct vblk_req *req;

	if (qs->free) {
		req = qs->free;
		qs->free = req->next;
	} else if (qs->nr_fresh < b->queue_size) {
		size_t slot = (size_t)q * b->queue_size + qs->nr_fresh++;

		req = (struct vblk_req *)(b->pools + slot * b->req_size);
		req->max_iov = b->seg_max;
		req->iov = req->inline_iov;
	} else {
		return NULL;
	}
	req->blk = b;
	req->queue = q;
	req->next = NULL;
	return req;
}

void vblk_req_put(struct vblk_req *req)
{
	struct vblk_queue *qs = &req->blk->queues[req->queue];

	if (req->iov != req->inline_iov) {
		free(req->iov);
		req->iov = req->inline_iov;
	}
	req->next = qs->free;
	qs->free = req;
}

void vblk_queue_push(struct vblk_req *req, struct virtq *vq)
{
	virtq_push(vq, req->head, req->used_len);
	vblk_req_put(req);
}

void vblk_queue_complete(struct vblk_req *req, struct virtq *vq,
			 int64_t res)
{
	vblk_req_complete(req, res);
	vblk_queue_push(req, vq);
}

static int queue_broken(struct vblk *b, unsigned int q, const char *why,
			bool count)
{
	struct vblk_queue *qs = &b->queues[q];

	if (!qs->broken) {
		char subject[LOG_LIMIT_SUBJECT];

		/* Guest-made, once per reset: rate-limited (reset loops). */
		snprintf(subject, sizeof(subject), "blk: %s", b->name);
		log_limited(&b->proto_log, VMM_LOG_ERROR, subject,
			    "queue %u: %s; device needs reset", q, why);
	}
	qs->broken = true;
	if (count)
		stat_add(&qs->stats.proto_errors, 1);
	return -EPROTO;
}

/* Submit @req; returns -EAGAIN if the engine is full (req is kept). */
static int submit_one(struct blk_engine *eng, struct vblk_req *req,
		      struct virtq *vq, bool *pushed)
{
	int r = blk_engine_submit(eng, req);

	if (r == -EAGAIN)
		return r;
	if (r == BLK_SUBMIT_QUEUED)
		return 0;
	if (r != BLK_SUBMIT_DONE)
		vblk_req_complete(req, r < 0 ? r : -EIO);
	vblk_queue_push(req, vq);
	*pushed = true;
	return 0;
}

/* Context: I/O thread of queue @q */
int vblk_process_queue(struct vblk *b, unsigned int q, struct virtq *vq,
		       struct blk_engine *eng, bool *notify)
{
	struct vblk_queue *qs;
	bool pushed = false;
	int count = 0, r;

	if (!b || q >= b->num_queues || !vq || !eng || !notify)
		return -EINVAL;
	qs = &b->queues[q];
	if (qs->broken)
		return -EPROTO;

	if (qs->pending) {
		if (submit_one(eng, qs->pending, vq, &pushed) == -EAGAIN)
			goto out;
		qs->pending = NULL;
	}

	for (;;) {
		virtq_disable_notify(vq);
		for (;;) {
			struct vblk_req *req = vblk_req_get(b, q);

			if (!req)
				goto out; /* all in flight: called again on reap */
			r = virtq_pop(vq, &qs->chain);
			if (r <= 0) {
				vblk_req_put(req);
				if (r < 0) {
					count = queue_broken(b, q, "malformed descriptor chain", true);
					goto out;
				}
				break;
			}
			count++;
			r = vblk_req_parse(b, &qs->chain, req);
			if (r < 0) {
				vblk_req_put(req);
				count = queue_broken(b, q, "request without a status byte", false);
				goto out;
			}
			if (r == VBLK_REQ_DONE) {
				vblk_queue_push(req, vq);
				pushed = true;
				continue;
			}
			if (submit_one(eng, req, vq, &pushed) == -EAGAIN) {
				qs->pending = req;
				goto out;
			}
		}
		if (!virtq_enable_notify(vq))
			break;
	}
out:
	if (pushed && virtq_should_notify(vq))
		*notify = true;
	return count;
}

void vblk_queue_reset(struct vblk *b, unsigned int q)
{
	struct vblk_queue *qs;

	if (!b || q >= b->num_queues)
		return;
	qs = &b->queues[q];
	qs->broken = false;
	/* Popped, refused by the engine, never run: release it (its heap
	 * iovec array with it), do not push it into a ring being reset. */
	if (qs->pending)
		vblk_req_put(qs->pending);
	qs->pending = NULL;
	/* Every slot is free now (none in flight): start the pool over.  Only
	 * slots with inline iovecs are on the free list (vblk_req_put()). */
	qs->free = NULL;
	qs->nr_fresh = 0;
}

bool vblk_queue_parked(const struct vblk *b, unsigned int q)
{
	return q < b->num_queues && b->queues[q].pending;
}

bool vblk_queue_broken(const struct vblk *b, unsigned int q)
{
	return q < b->num_queues && b->queues[q].broken;
}

int vblk_queue_get_stats(const struct vblk *b, unsigned int q,
			 struct vblk_queue_stats *out)
{
	const struct vblk_queue_stats *s;

	if (!b || !out || q >= b->num_queues)
		return -EINVAL;
	s = &b->queues[q].stats;
	for (unsigned int i = 0; i < VBLK_STAT_NR; i++)
		out->reqs[i] = __atomic_load_n(&s->reqs[i], __ATOMIC_RELAXED);
	out->bytes_read = __atomic_load_n(&s->bytes_read, __ATOMIC_RELAXED);
	out->bytes_written = __atomic_load_n(&s->bytes_written, __ATOMIC_RELAXED);
	out->io_errors = __atomic_load_n(&s->io_errors, __ATOMIC_RELAXED);
	out->unsupported = __atomic_load_n(&s->unsupported, __ATOMIC_RELAXED);
	out->proto_errors = __atomic_load_n(&s->proto_errors, __ATOMIC_RELAXED);
	out->cancelled = __atomic_load_n(&s->cancelled, __ATOMIC_RELAXED);
	return 0;
}
