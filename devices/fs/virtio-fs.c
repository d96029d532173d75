/* SPDX-License-Identifier: MIT */
/* virtio-fs on a vhost-user back end (see virtio-fs.h). */
#include <errno.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "fs/virtio-fs.h"
#include "log.h"
#include "virtio/vq-iov.h"

#define VIRTIO_ID_FS_DEVICE 26

/* The device's configuration space (little-endian; x86 and arm64 are). */
struct virtio_fs_config {
	uint8_t tag[VIRTIO_FS_TAG_MAX];
	uint32_t num_request_queues;
} __attribute__((packed));

struct virtio_fs {
	struct vu_fe *fe;
	struct virtio_fs_config cfg;
	unsigned int nq; /* transport queues */
	uint16_t queue_size;
	uint64_t features; /* the driver's, at FEATURES_OK */
	/* __atomic: the queues while started (for the watch thread's
	 * NEEDS_RESET), NULL otherwise. */
	struct virtio_queue *live;
};

/* What virtio-fs may offer of the back end's features: no device
 * features of its own, the ring layout features, nothing that needs the
 * front end's help (logging, IOMMU, packed rings). */
#define FS_FEATURES                                                          \
	((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX) |   \
	 (1ull << VIRTIO_RING_F_INDIRECT_DESC))

static uint64_t fs_features(void *dev)
{
	struct virtio_fs *fs = dev;

	return vu_fe_features(fs->fe);
}

static int fs_set_features(void *dev, uint64_t features)
{
	struct virtio_fs *fs = dev;

	fs->features = features;
	return 0;
}

static void fs_config_read(void *dev, uint32_t off, void *buf, uint32_t len)
{
	struct virtio_fs *fs = dev;

	/* The transport bounds off + len by config_size. */
	memcpy(buf, (const uint8_t *)&fs->cfg + off, len);
}

static void fs_config_write(void *dev, uint32_t off, const void *buf,
			    uint32_t len)
{
	(void)dev;
	(void)off;
	(void)buf;
	(void)len; /* read-only configuration */
}

static int fs_start(void *dev, struct virtio_queue *queues, unsigned int nr)
{
	struct virtio_fs *fs = dev;
	int ret = vu_fe_start(fs->fe, fs->features, queues, nr);

	/* Release: the watch thread that sees it sees the started queues. */
	if (!ret)
		__atomic_store_n(&fs->live, queues, __ATOMIC_RELEASE);
	return ret;
}

static void fs_stop(void *dev)
{
	struct virtio_fs *fs = dev;

	__atomic_store_n(&fs->live, NULL, __ATOMIC_RELEASE);
	vu_fe_stop(fs->fe);
}

static const struct virtio_device_ops fs_ops = {
	.device_id = VIRTIO_ID_FS_DEVICE,
	.config_size = sizeof(struct virtio_fs_config),
	.features = fs_features,
	.set_features = fs_set_features,
	.config_read = fs_config_read,
	.config_write = fs_config_write,
	.start = fs_start,
	.stop = fs_stop,
};

/* Context: the watch thread.  The transport's queues outlive it (the
 * machine stops it before the transport goes: virtio_fs_unwatch()). */
static void fs_dead(void *opaque)
{
	struct virtio_fs *fs = opaque;
	struct virtio_queue *q = __atomic_load_n(&fs->live, __ATOMIC_ACQUIRE);

	if (q)
		virtio_queue_needs_reset(q, "the vhost-user back end went away");
}

/* FUSE's message headers (linux/fuse.h; little-endian on x86 and arm64):
 * the first fields of fuse_in_header, and fuse_out_header. */
struct fuse_in_start {
	uint32_t len;
	uint32_t opcode;
	uint64_t unique;
};

struct fuse_out_hdr {
	uint32_t len;
	int32_t error;
	uint64_t unique;
};

/*
 * The back end is gone: a request gets EIO with its unique id, as a FUSE
 * server that failed it would answer.  A request without room for the
 * answer (FORGET and BATCH_FORGET take none) is given back with nothing
 * written.  Context: the watch thread (vu-frontend.h's orphan answer).
 */
static uint32_t fs_orphan_answer(void *opaque, unsigned int queue,
				 const struct virtq_chain *c)
{
	struct fuse_in_start in;
	struct fuse_out_hdr out;

	(void)opaque;
	(void)queue;
	if (c->in_len < sizeof(out) ||
	    vq_iov_to_buf(c->iov, c->nr_out, 0, &in, sizeof(in)) < sizeof(in))
		return 0;
	out = (struct fuse_out_hdr){ .len = sizeof(out), .error = -EIO,
				     .unique = in.unique };
	return (uint32_t)vq_iov_from_buf(c->iov + c->nr_out, c->nr_in, 0, &out,
					 sizeof(out));
}

/*
 * The back end's config space, when it supplied one (CONFIG: Debian's
 * rust virtiofsd >= 1.11 started with --tag), into what the guest sees.
 * Its tag, if it names one, must be the user's: the guest mounts by the
 * tag, and a back end exporting a share under another name is a set-up
 * mistake (a socket of another VM's virtiofsd, a stale command line) that
 * is reported, not papered over by either name.  An empty tag leaves the
 * user's.  Its request queues, if fewer than the queues negotiated (the
 * transport's and GET_QUEUE_NUM's), are what the guest is told; more, or
 * 0, change nothing: the guest may use only rings the transport has and
 * the back end serves.  Returns 0 or -EINVAL (logged, naming both tags).
 */
static int fs_backend_config(struct virtio_fs *fs, const char *name,
			     size_t tlen)
{
	struct virtio_fs_config bc;
	const uint8_t *c;
	uint32_t len;
	size_t blen;

	c = vu_fe_config(fs->fe, &len);
	if (!c || len != sizeof(bc))
		return 0;
	memcpy(&bc, c, sizeof(bc));
	blen = strnlen((const char *)bc.tag, VIRTIO_FS_TAG_MAX);
	if (blen && (blen != tlen || memcmp(bc.tag, fs->cfg.tag, tlen))) {
		vmm_err("%s: the vhost-user back end exports tag \"%.*s\", this "
			"device's tag is \"%.*s\": start the back end with the "
			"same tag (or none), or use its tag", name, (int)blen,
			(const char *)bc.tag, (int)tlen, (const char *)fs->cfg.tag);
		return -EINVAL;
	}
	if (bc.num_request_queues &&
	    bc.num_request_queues < fs->cfg.num_request_queues)
		fs->cfg.num_request_queues = bc.num_request_queues;
	return 0;
}

int virtio_fs_create(const struct virtio_fs_params *p, struct virtio_fs **out)
{
	struct vu_fe_params fp = {
		.path = p->socket, .mem = p->mem, .features = FS_FEATURES,
		.num_queues = p->num_queues, .timeout_ms = p->timeout_ms,
		.name = p->name, .config_size = sizeof(struct virtio_fs_config),
	};
	size_t tlen = p->tag ? strlen(p->tag) : 0;
	struct virtio_fs *fs;
	unsigned int n;
	int ret;

	*out = NULL;
	if (!tlen || tlen > VIRTIO_FS_TAG_MAX || p->num_queues < 2)
		return -EINVAL;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	ret = vu_fe_open(&fp, &fs->fe);
	if (ret) {
		free(fs);
		return ret;
	}
	n = vu_fe_queue_num(fs->fe);
	if (n < 2) {
		vmm_err("%s: the back end serves %u queue(s); virtio-fs needs "
			"hiprio and a request queue", p->name, n);
		virtio_fs_destroy(fs);
		return -EPROTO;
	}
	memcpy(fs->cfg.tag, p->tag, tlen);
	fs->cfg.num_request_queues = n - 1;
	ret = fs_backend_config(fs, p->name ? p->name : "fs", tlen);
	if (ret) {
		virtio_fs_destroy(fs);
		return ret;
	}
	fs->nq = p->num_queues;
	fs->queue_size = p->queue_size;
	*out = fs;
	return 0;
}

int virtio_fs_watch(struct virtio_fs *fs, int (*thread_init)(void *arg),
		    void *arg)
{
	return vu_fe_watch(fs->fe, fs_dead, fs, fs_orphan_answer, thread_init,
			   arg);
}

void virtio_fs_unwatch(struct virtio_fs *fs)
{
	if (fs)
		vu_fe_unwatch(fs->fe);
}

void virtio_fs_destroy(struct virtio_fs *fs)
{
	if (!fs)
		return;
	vu_fe_close(fs->fe);
	free(fs);
}

void virtio_fs_virtio(struct virtio_fs *fs, struct virtio_device *vd)
{
	*vd = (struct virtio_device){
		.ops = &fs_ops,
		.dev = fs,
		.num_queues = fs->nq,
		.queue_size = fs->queue_size,
		.external_queues = true,
	};
}

unsigned int virtio_fs_request_queues(const struct virtio_fs *fs)
{
	return fs->cfg.num_request_queues;
}

void virtio_fs_get_stats(struct virtio_fs *fs, struct vu_fe_stats *st)
{
	vu_fe_get_stats(fs->fe, st);
}
