/* SPDX-License-Identifier: MIT */
/*
 * The virtio-blk model of a disk: features, config space, requests
 * (parsing a descriptor chain, every guest-controlled length and address
 * checked; completion) and the queue owner's side (request pools, popping,
 * submitting to the engine, a queue the guest broke).  See vblk.h for the
 * request life cycle; the image itself is disk.c.
 */
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "blk/blk-engine.h"
#include "blk/vblk.h"
#include "log.h"
#include "ratelimit.h"
#include "virtio/vq-iov.h"

#define SECTOR_SHIFT 9
#define SECTOR_SIZE 512u

/* Per queue: the queue owner's (the queue's I/O thread's) state. */
struct vblk_queue {
	struct vblk_queue_stats stats; /* written by the owner, atomically */
	bool broken;		       /* protocol error latched until reset */
	struct vblk_req *free;	       /* free list of used-before requests */
	unsigned int nr_fresh;	       /* pool[nr_fresh..] never handed out */
	/* queue_size requests of req_size, allocated (calloc) by the queue's
	 * first request: a queue never used costs no memory, resident or
	 * committed (minivmm-blkd offers 1024 queues; most front ends start
	 * a few). */
	char *pool;
	struct vblk_req *pending;      /* refused with -EAGAIN, retried first,
					  or held back by the rate limit */
	/* The rate limit holds @pending until wait_until (0: it does not):
	 * booked at wait_from under limits of generation wait_gen. */
	uint64_t wait_until, wait_from;
	uint32_t wait_gen;
	struct virtq_chain chain;      /* scratch for virtq_pop() */
};

struct vblk {
	struct disk *disk;
	/* The disk's, fixed at open: read on every request. */
	uint64_t capacity;	/* 512-byte sectors */
	uint32_t blk_size;	/* logical block size, bytes */
	uint32_t opt_flags;
	uint16_t num_queues;
	uint16_t queue_size;
	uint32_t seg_max;
	uint32_t size_max;	/* advertised segment size limit (VBLK_MAX_REQ_BYTES) */
	char serial[VIRTIO_BLK_ID_BYTES]; /* NUL-padded */
	uint64_t host_features;
	/* Written by the transport (vCPU thread), read by I/O threads. */
	uint64_t driver_features;
	bool features_set;
	uint8_t wce;		/* config `writeback`; atomic */
	/* Rate limits (log.h): host I/O errors (one line per burst, then a
	 * "N more I/O errors" summary); queues the guest broke (a reset loop
	 * with a bad ring breaks one every cycle). */
	struct log_limit err_log, proto_log;
	struct virtio_blk_config cfg; /* little-endian image, wce patched */
	size_t req_size;
	/* Per queue; one calloc, written nowhere at open (a large calloc maps
	 * zero pages lazily: an unused queue's state costs no resident
	 * memory). */
	struct vblk_queue *queues;
	/* vblk_set_ratelimit()'s, shared by every queue, or NULL. */
	struct ratelimit *rl;
};

static inline void stat_add(uint64_t *c, uint64_t n)
{
	/* Counters are read by other threads (stats queries); relaxed is
	 * enough, nothing is ordered against them. */
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/* ---- host I/O error log ------------------------------------------------ */

static const char *req_type_name(uint32_t type)
{
	switch (type) {
	case VIRTIO_BLK_T_IN: return "read";
	case VIRTIO_BLK_T_OUT: return "write";
	case VIRTIO_BLK_T_FLUSH: return "flush";
	case VIRTIO_BLK_T_DISCARD: return "discard";
	case VIRTIO_BLK_T_WRITE_ZEROES: return "write-zeroes";
	default: return "request";
	}
}

/* Context: any completing thread.  The first error of a burst is logged,
 * the others counted into one "N more I/O errors" line (log.h). */
static void log_io_error(struct vblk *b, const struct vblk_req *req, int err)
{
	char subject[LOG_LIMIT_SUBJECT];

	snprintf(subject, sizeof(subject), "blk: %s", disk_name(b->disk));
	log_limited(&b->err_log, VMM_LOG_WARN, subject,
		    "I/O error on %s at sector %llu: %s", req_type_name(req->type),
		    (unsigned long long)req->sector, strerror(err));
}

/* ---- open / close ------------------------------------------------------ */

/* The config space the driver reads: fixed at open, but for `writeback`
 * (patched from b->wce at every read). */
static void build_config(struct vblk *b)
{
	struct virtio_blk_config *c = &b->cfg;
	uint32_t phys = disk_physical_block_size(b->disk);
	unsigned int exp = 0;

	while ((b->blk_size << exp) < phys)
		exp++;
	memset(c, 0, sizeof(*c));
	c->capacity = htole64(b->capacity);
	c->size_max = htole32(b->size_max);
	c->seg_max = htole32(b->seg_max);
	c->blk_size = htole32(b->blk_size);
	c->physical_block_exp = (uint8_t)exp;
	c->alignment_offset = 0;
	c->min_io_size = htole16(1);
	c->opt_io_size = htole32(0);
	c->wce = 1; /* patched from b->wce on every read */
	c->num_queues = htole16(b->num_queues);
	if (b->host_features & (1ull << VIRTIO_BLK_F_DISCARD)) {
		c->max_discard_sectors = htole32(VBLK_MAX_DWZ_SECTORS);
		c->max_discard_seg = htole32(VBLK_MAX_DWZ_SEG);
		c->discard_sector_alignment = htole32(b->blk_size >> SECTOR_SHIFT);
	}
	if (b->host_features & (1ull << VIRTIO_BLK_F_WRITE_ZEROES)) {
		c->max_write_zeroes_sectors = htole32(VBLK_MAX_DWZ_SECTORS);
		c->max_write_zeroes_seg = htole32(VBLK_MAX_DWZ_SEG);
		c->write_zeroes_may_unmap = 1;
	}
}

/* The feature bits offered, from the options. */
static uint64_t offered_features(uint32_t flags)
{
	uint64_t f = (1ull << VIRTIO_F_VERSION_1) |
		     (1ull << VIRTIO_RING_F_EVENT_IDX) |
		     (1ull << VIRTIO_RING_F_INDIRECT_DESC) |
		     (1ull << VIRTIO_BLK_F_SIZE_MAX) |
		     (1ull << VIRTIO_BLK_F_SEG_MAX) |
		     (1ull << VIRTIO_BLK_F_BLK_SIZE) |
		     (1ull << VIRTIO_BLK_F_TOPOLOGY) |
		     (1ull << VIRTIO_BLK_F_MQ);

	if (!(flags & VBLK_OPT_NO_FLUSH))
		f |= (1ull << VIRTIO_BLK_F_FLUSH) | (1ull << VIRTIO_BLK_F_CONFIG_WCE);
	if (flags & VBLK_OPT_NO_EVENT_IDX)
		f &= ~(1ull << VIRTIO_RING_F_EVENT_IDX);
	if (flags & VBLK_OPT_READONLY)
		f |= 1ull << VIRTIO_BLK_F_RO;
	else
		f |= (1ull << VIRTIO_BLK_F_DISCARD) |
		     (1ull << VIRTIO_BLK_F_WRITE_ZEROES);
	return f;
}

/* Options a disk can be opened with: the queue size they ask for, or 0. */
static unsigned int checked_queue_size(const struct vblk_options *opt)
{
	const uint32_t known = VBLK_OPT_READONLY | VBLK_OPT_DIRECT | VBLK_OPT_NO_FLUSH |
			       VBLK_OPT_NO_EVENT_IDX | VBLK_OPT_NO_LOCK;
	unsigned int qsz;

	if ((opt->flags & ~known) || opt->num_queues == 0)
		return 0;
	qsz = opt->queue_size ? opt->queue_size : VBLK_DEFAULT_QUEUE_SIZE;
	if (qsz < 4 || qsz > VIRTQ_MAX_SIZE || (qsz & (qsz - 1)))
		return 0;
	if (opt->serial && strlen(opt->serial) > VIRTIO_BLK_ID_BYTES)
		return 0;
	return qsz;
}

int vblk_open(const struct vblk_options *opt, struct vblk **out)
{
	struct disk_options dopt;
	unsigned int qsz;
	struct vblk *b;
	int ret;

	if (!opt || !out || !(qsz = checked_queue_size(opt)))
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	log_limit_init(&b->err_log, "I/O errors");
	log_limit_init(&b->proto_log, "broken queues");
	dopt = (struct disk_options){
		.path = opt->path, .fd = opt->fd,
		.readonly = opt->flags & VBLK_OPT_READONLY,
		.direct = opt->flags & VBLK_OPT_DIRECT,
		.no_lock = opt->flags & VBLK_OPT_NO_LOCK,
	};
	ret = disk_open(&dopt, &b->disk);
	if (ret < 0)
		goto err;
	b->capacity = disk_capacity(b->disk);
	b->blk_size = disk_block_size(b->disk);
	b->opt_flags = opt->flags;
	b->num_queues = opt->num_queues;
	b->queue_size = (uint16_t)qsz;
	/* Header and status take two descriptors of a queue_size chain (the
	 * Linux driver uses the same rule). */
	b->seg_max = qsz - 2;
	/* seg_max * size_max <= VBLK_MAX_REQ_BYTES: what a driver honouring
	 * both can send fits under the cap (see vblk.h). */
	b->size_max = MAX(ALIGN_DOWN(VBLK_MAX_REQ_BYTES / b->seg_max,
				     VBLK_MIN_SIZE_MAX),
			  VBLK_MIN_SIZE_MAX);
	b->wce = 1;
	if (opt->serial)
		memcpy(b->serial, opt->serial, strlen(opt->serial));
	b->host_features = offered_features(opt->flags);
	build_config(b);
	b->req_size = ALIGN_UP(sizeof(struct vblk_req) +
			       MIN(b->seg_max, VBLK_INLINE_IOV) *
				       sizeof(struct iovec),
			       (size_t)64);
	/* Nothing written here, and the request pools come with each
	 * queue's first request: see struct vblk_queue. */
	b->queues = calloc(b->num_queues, sizeof(*b->queues));
	if (!b->queues) {
		ret = -ENOMEM;
		goto err;
	}
	*out = b;
	return 0;
err:
	vblk_close(b);
	return ret;
}

void vblk_close(struct vblk *b)
{
	if (!b)
		return;
	if (b->queues) {
		for (unsigned int q = 0; q < b->num_queues; q++) {
			/* A parked request's heap iovec array, if any. */
			if (b->queues[q].pending)
				vblk_req_put(b->queues[q].pending);
			free(b->queues[q].pool);
		}
		free(b->queues);
	}
	disk_close(b->disk);
	log_limit_destroy(&b->err_log, "until the disk was closed");
	log_limit_destroy(&b->proto_log, "until the disk was closed");
	free(b);
}

/* ---- features and config space ---------------------------------------- */

uint64_t vblk_device_features(const struct vblk *b)
{
	return b->host_features;
}

int vblk_set_driver_features(struct vblk *b, uint64_t features)
{
	if (!(features & (1ull << VIRTIO_F_VERSION_1)))
		return -EINVAL;
	/* Only read by I/O threads, which start after FEATURES_OK. */
	__atomic_store_n(&b->driver_features, features & b->host_features,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&b->features_set, true, __ATOMIC_RELAXED);
	return 0;
}

uint64_t vblk_driver_features(const struct vblk *b)
{
	return __atomic_load_n(&b->driver_features, __ATOMIC_RELAXED);
}

int vblk_config_read(const struct vblk *b, uint32_t off, void *buf, uint32_t len)
{
	struct virtio_blk_config c;

	if (off > sizeof(c) || len > sizeof(c) - off)
		return -EINVAL;
	c = b->cfg;
	c.wce = __atomic_load_n(&b->wce, __ATOMIC_RELAXED);
	memcpy(buf, (const char *)&c + off, len);
	return 0;
}

int vblk_config_write(struct vblk *b, uint32_t off, const void *buf, uint32_t len)
{
	const uint32_t wce_off = offsetof(struct virtio_blk_config, wce);

	if (off > sizeof(b->cfg) || len > sizeof(b->cfg) - off)
		return -EINVAL;
	if (off != wce_off || len != 1 ||
	    !(b->host_features & (1ull << VIRTIO_BLK_F_CONFIG_WCE)))
		return -EPERM;
	/* Guest-controlled byte: anything non-zero means writeback. */
	__atomic_store_n(&b->wce, *(const uint8_t *)buf ? 1 : 0, __ATOMIC_RELAXED);
	return 0;
}

struct disk *vblk_disk(const struct vblk *b)
{
	return b->disk;
}

uint32_t vblk_size_max(const struct vblk *b)
{
	return b->size_max;
}

uint16_t vblk_num_queues(const struct vblk *b)
{
	return b->num_queues;
}

uint16_t vblk_queue_size(const struct vblk *b)
{
	return b->queue_size;
}

/*
 * Write-through when the driver turned the cache off (CONFIG_WCE), or
 * accepted our features without FLUSH (it cannot flush, so every write must
 * be durable when completed: spec 5.2.6.2).  Never with NO_FLUSH (unsafe).
 */
static bool write_through(const struct vblk *b)
{
	if (b->opt_flags & VBLK_OPT_NO_FLUSH)
		return false;
	if (!__atomic_load_n(&b->wce, __ATOMIC_RELAXED))
		return true;
	return __atomic_load_n(&b->features_set, __ATOMIC_RELAXED) &&
	       !(vblk_driver_features(b) & (1ull << VIRTIO_BLK_F_FLUSH));
}


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
	vq_iov_to_buf(chain->iov, chain->nr_out, sizeof(struct virtio_blk_outhdr),
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
	if (!discard && write_through(b))
		req->flags |= VBLK_REQ_F_SYNC;
	return VBLK_REQ_EXECUTE;
}

/*
 * IN/OUT: the data length (guest-controlled sum of descriptor lengths,
 * aliasing allowed) is capped here, before any iovec is built: the host
 * never does more than VBLK_MAX_REQ_BYTES of I/O per request.
 */
static int parse_rw(struct vblk *b, struct vblk_req *req,
		    const struct virtq_chain *chain, uint64_t out_data,
		    uint64_t in_data)
{
	const struct iovec *in_iov = chain->iov + chain->nr_out;

	if (req->type == VIRTIO_BLK_T_IN) {
		if (out_data || in_data > VBLK_MAX_REQ_BYTES ||
		    take_iov(req, in_iov, chain->nr_in, 0, in_data) ||
		    !rw_range_ok(b, req))
			return parse_done(req, VIRTIO_BLK_S_IOERR);
		return VBLK_REQ_EXECUTE;
	}
	if ((b->opt_flags & VBLK_OPT_READONLY) || in_data ||
	    out_data > VBLK_MAX_REQ_BYTES ||
	    take_iov(req, chain->iov, chain->nr_out,
		     sizeof(struct virtio_blk_outhdr), out_data) ||
	    !rw_range_ok(b, req))
		return parse_done(req, VIRTIO_BLK_S_IOERR);
	if (write_through(b))
		req->flags |= VBLK_REQ_F_SYNC;
	return VBLK_REQ_EXECUTE;
}

/* A request slot, emptied for chain @head. */
static void req_init(struct vblk_req *req, struct vblk *b, uint16_t head)
{
	req->blk = b;
	req->head = head;
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
}

int vblk_req_parse(struct vblk *b, const struct virtq_chain *chain,
		   struct vblk_req *req)
{
	unsigned int nseg = chain->nr_out + chain->nr_in;
	const struct iovec *in_iov = chain->iov + chain->nr_out;
	struct virtio_blk_outhdr hdr;
	const struct iovec *last;
	uint64_t out_len = 0, out_data, in_data;

	req_init(req, b, chain->head);
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
	vq_iov_to_buf(chain->iov, chain->nr_out, 0, &hdr, sizeof(hdr));
	out_data = out_len - sizeof(hdr);
	/* Guest-controlled type and sector: validated per type below. */
	req->type = le32toh(hdr.type);
	req->sector = le64toh(hdr.sector);

	switch (req->type) {
	case VIRTIO_BLK_T_IN:
	case VIRTIO_BLK_T_OUT:
		return parse_rw(b, req, chain, out_data, in_data);
	case VIRTIO_BLK_T_FLUSH:
		/* The sector field is reserved; any data is ignored. */
		req->sector = 0;
		if (b->opt_flags & VBLK_OPT_NO_FLUSH)
			return parse_done(req, VIRTIO_BLK_S_OK); /* unsafe mode */
		return VBLK_REQ_EXECUTE;
	case VIRTIO_BLK_T_GET_ID: {
		/* Write min(20, buffer) bytes of the NUL-padded serial. */
		uint64_t n = MIN(in_data, (uint64_t)VIRTIO_BLK_ID_BYTES);

		vq_iov_from_buf(in_iov, chain->nr_in, 0, b->serial, n);
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
		log_io_error(b, req, (int)-res);
		return finish(req, VIRTIO_BLK_S_IOERR, 1);
	}
	if (req->type == VIRTIO_BLK_T_OUT && (uint64_t)res < req->len) {
		/* The engine retried: the write cannot make progress. */
		log_io_error(b, req, EIO);
		return finish(req, VIRTIO_BLK_S_IOERR, 1);
	}
	log_limit_quiet(&b->err_log); /* closes an I/O error burst */
	switch (req->type) {
	case VIRTIO_BLK_T_IN:
		/* Short read: past the end of a shrunk file, reads as zeros. */
		if ((uint64_t)res < req->len)
			vq_iov_from_buf(req->iov, req->niov, (uint64_t)res, NULL,
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
		if (!qs->pool) {
			qs->pool = calloc(b->queue_size, b->req_size);
			if (!qs->pool)
				return NULL; /* vblk_process_queue() tells */
		}
		req = (struct vblk_req *)(qs->pool + qs->nr_fresh++ * b->req_size);
		req->max_iov = b->seg_max;
		req->iov = req->inline_iov;
	} else {
		return NULL;
	}
	req->blk = b;
	req->disk = b->disk;
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
		snprintf(subject, sizeof(subject), "blk: %s", disk_name(b->disk));
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

void vblk_set_ratelimit(struct vblk *b, struct ratelimit *rl)
{
	b->rl = rl;
}

/* Book @req with the rate limit at @now under generation @gen; false: it
 * must wait (held as the queue's pending request until wait_until). */
static bool rate_book(struct vblk *b, struct vblk_queue *qs,
		      const struct vblk_req *req, uint64_t now, uint32_t gen)
{
	bool data = req->type == VIRTIO_BLK_T_IN || req->type == VIRTIO_BLK_T_OUT;
	uint64_t start = ratelimit_reserve(b->rl, data ? req->len : 0, 1, now);

	if (start <= now)
		return true;
	qs->wait_until = start;
	qs->wait_gen = gen;
	return false;
}

/* Whether @req may go to the engine now; false: held by the rate limit. */
static bool rate_admit(struct vblk *b, struct vblk_queue *qs,
		       const struct vblk_req *req)
{
	uint64_t now;

	if (!b->rl || !ratelimit_active(b->rl))
		return true;
	now = ratelimit_now();
	qs->wait_from = now;
	return rate_book(b, qs, req, now, ratelimit_gen(b->rl));
}

/*
 * Whether the pending request may go on: not held by the rate limit, or
 * its booked time has come.  Booked under limits changed since, it is
 * booked again under the new ones (a lower limit must not wait out a
 * reservation of the old one).
 */
static bool rate_due(struct vblk *b, struct vblk_queue *qs)
{
	uint64_t now;
	uint32_t gen;

	if (!qs->wait_until)
		return true;
	now = ratelimit_now();
	gen = ratelimit_gen(b->rl);
	if (gen != qs->wait_gen && rate_book(b, qs, qs->pending, now, gen))
		qs->wait_until = now;
	if (now < qs->wait_until)
		return false;
	ratelimit_note_wait(b->rl, now - qs->wait_from);
	qs->wait_until = 0;
	return true;
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
		if (!rate_due(b, qs) ||
		    submit_one(eng, qs->pending, vq, &pushed) == -EAGAIN)
			goto out;
		qs->pending = NULL;
	}

	for (;;) {
		virtq_disable_notify(vq);
		for (;;) {
			struct vblk_req *req = vblk_req_get(b, q);

			if (!req && !qs->pool) {
				/* Its first request found no memory for the
				 * queue's pool: never a stall. */
				count = queue_broken(b, q, "no memory for its requests",
						     false);
				goto out;
			}
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
			if (!rate_admit(b, qs, req) ||
			    submit_one(eng, req, vq, &pushed) == -EAGAIN) {
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
	qs->wait_until = 0;
	/* Every slot is free now (none in flight): start the pool over.  Only
	 * slots with inline iovecs are on the free list (vblk_req_put()). */
	qs->free = NULL;
	qs->nr_fresh = 0;
}

bool vblk_queue_parked(const struct vblk *b, unsigned int q)
{
	return q < b->num_queues && b->queues[q].pending;
}

uint64_t vblk_queue_throttled(const struct vblk *b, unsigned int q)
{
	return q < b->num_queues && b->queues[q].pending ?
		b->queues[q].wait_until : 0;
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
