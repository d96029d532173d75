/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: minivmm-blkd's vhost-user message parser and back-end
 * state machine (devices/vhost-user/vu-msg.c, vu-backend.c, vu-mem.c), fed
 * message after message as a front end would send them, without a socket:
 * vu_msg_check() and, for what it accepts, vu_backend_handle() (replies
 * built, not sent); a refused message ends the "connection"
 * (vu_backend_disconnect()), as vu_backend_serve() does.  The device behind
 * it is a stub that checks, at every ring start, that the ring it is handed
 * lies in mapped guest RAM (it touches every ring byte) and that starts and
 * stops pair up.  After each input every file descriptor a message carried
 * must be closed again (the back end owns what it keeps until the
 * disconnect): the open-fd count is checked.
 *
 * Input: records until the input ends (at most 64):
 *   [op u8] request: op < 0x80 picks one of the requests the back end
 *           knows (op % their number), otherwise the next byte is the raw
 *           request number
 *   [flags u8] header flags XOR 1 (so 0 is a plain version-1 request;
 *           0x08 asks for REPLY_ACK)
 *   [size u16] payload size, modulo 300 (past the largest payload)
 *   [mode u8] bits 0-3: fds to attach (0..9; more than 8 is malformed),
 *           bit 4: make the payload useful -- memory tables get regions in
 *           the guest-RAM memfd at front-end addresses 0x10000000 + i MiB,
 *           ring addresses land in the first MiB of that range,
 *           GET/SET_INFLIGHT_FD get queue counts and sizes near the
 *           limits and a buffer size near what they need;
 *           bit 5 (SET_INFLIGHT_FD): fill the in-flight buffer with the
 *           next 256 input bytes, repeated (a previous back end's record,
 *           or garbage, for the recovery at the next ring start)
 *   [payload: size bytes]
 * Attached fds are dups of a 1 MiB guest-RAM memfd (SET_MEM_TABLE), of a
 * 64 KiB in-flight buffer memfd made for the input (SET_INFLIGHT_FD) or new
 * eventfds (anything else).  The stub device pops and pushes what the ring
 * offers at each start, so tracked rings resubmit and record.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "fuzz.h"
#include "vhost-user/vu-backend.h"

#define RAM_SIZE (1u << 20)
#define NQ 2
#define UADDR_BASE 0x10000000ull
#define INFLIGHT_SIZE (64u << 10)

static const uint32_t known[] = {
	VHOST_USER_GET_FEATURES,       VHOST_USER_SET_FEATURES,
	VHOST_USER_SET_OWNER,	       VHOST_USER_RESET_OWNER,
	VHOST_USER_SET_MEM_TABLE,      VHOST_USER_SET_VRING_NUM,
	VHOST_USER_SET_VRING_ADDR,     VHOST_USER_SET_VRING_BASE,
	VHOST_USER_GET_VRING_BASE,     VHOST_USER_SET_VRING_KICK,
	VHOST_USER_SET_VRING_CALL,     VHOST_USER_SET_VRING_ERR,
	VHOST_USER_GET_PROTOCOL_FEATURES, VHOST_USER_SET_PROTOCOL_FEATURES,
	VHOST_USER_GET_QUEUE_NUM,      VHOST_USER_SET_VRING_ENABLE,
	VHOST_USER_GET_CONFIG,	       VHOST_USER_SET_CONFIG,
	VHOST_USER_GET_INFLIGHT_FD,    VHOST_USER_SET_INFLIGHT_FD,
	VHOST_USER_RESET_DEVICE,
};

/* ---- the stub device ---------------------------------------------------- */

struct stub {
	uint8_t cfg[60];
	bool started[NQ];
};

static uint64_t stub_features(void *dev)
{
	(void)dev;
	return (1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX) |
	       (1ull << VIRTIO_RING_F_INDIRECT_DESC);
}

static int stub_set_features(void *dev, uint64_t f)
{
	(void)dev;
	return f & (1ull << VIRTIO_F_VERSION_1) ? 0 : -EINVAL;
}

static void stub_cfg_read(void *dev, uint32_t off, void *buf, uint32_t len)
{
	struct stub *s = dev;

	if (off > sizeof(s->cfg) || len > sizeof(s->cfg) - off)
		abort(); /* the back end bounds it */
	memcpy(buf, s->cfg + off, len);
}

static void stub_cfg_write(void *dev, uint32_t off, const void *buf, uint32_t len)
{
	struct stub *s = dev;

	if (off > sizeof(s->cfg) || len > sizeof(s->cfg) - off)
		abort();
	memcpy(s->cfg + off, buf, len);
}

static volatile uint8_t sink;

static int stub_start_queue(void *dev, struct virtio_queue *q)
{
	struct stub *s = dev;
	const struct virtq *vq = &q->vq;
	const uint8_t *d = (const uint8_t *)vq->desc, *a = (const uint8_t *)vq->avail;
	uint8_t *u = (uint8_t *)vq->used;

	if (q->index >= NQ || s->started[q->index] || !vq->ready || q->kick_fd < 0)
		abort();
	/* Every byte of the ring is mapped guest RAM (a wrong translation
	 * faults here). */
	for (unsigned int i = 0; i < 16u * vq->size; i++)
		sink ^= d[i];
	for (unsigned int i = 0; i < 6u + 2u * vq->size; i++)
		sink ^= a[i];
	for (unsigned int i = 0; i < 6u + 8u * vq->size; i++)
		u[i] = u[i];
	/* Serve what is there (resubmissions first when tracked); a
	 * malformed ring just stops it, as the device's NEEDS_RESET. */
	for (unsigned int i = 0; i < 2u * vq->size; i++) {
		static struct virtq_chain c;

		if (virtq_pop(&q->vq, &c) <= 0)
			break;
		virtq_push(&q->vq, c.head, 0);
	}
	virtio_queue_notify(q); /* writes the call eventfd, if any */
	s->started[q->index] = true;
	return 0;
}

static void stub_stop_queue(void *dev, unsigned int index, bool cancel)
{
	struct stub *s = dev;

	(void)cancel;
	if (index >= NQ || !s->started[index])
		abort(); /* the back end stops only what it started */
	s->started[index] = false;
}

static int stub_start(void *dev, struct virtio_queue *q, unsigned int nr)
{
	(void)dev;
	(void)q;
	(void)nr;
	abort(); /* vhost-user starts rings one at a time */
}

static void stub_stop(void *dev)
{
	(void)dev;
	abort();
}

static const struct virtio_device_ops stub_ops = {
	.device_id = 2,
	.config_size = 60,
	.features = stub_features,
	.set_features = stub_set_features,
	.config_read = stub_cfg_read,
	.config_write = stub_cfg_write,
	.start = stub_start,
	.stop = stub_stop,
	.start_queue = stub_start_queue,
	.stop_queue = stub_stop_queue,
};

/* ---- harness --------------------------------------------------------------- */

static int ram_fd(void)
{
	static int fd = -1;

	if (fd < 0) {
		fd = memfd_create("fuzz-vhost-ram", MFD_CLOEXEC);
		if (fd < 0 || ftruncate(fd, RAM_SIZE) < 0)
			abort();
	}
	return fd;
}

/* The in-flight buffer a front end would keep: one per input. */
static int inflight_fd = -1;

static int inflight_buf(void)
{
	if (inflight_fd < 0) {
		inflight_fd = memfd_create("fuzz-vhost-inflight", MFD_CLOEXEC);
		if (inflight_fd < 0 || ftruncate(inflight_fd, INFLIGHT_SIZE) < 0)
			abort();
	}
	return inflight_fd;
}

static void inflight_fill(struct fuzz_in *in)
{
	uint8_t pat[256];
	uint8_t *p;

	fi_bytes(in, pat, sizeof(pat));
	p = mmap(NULL, INFLIGHT_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		 inflight_buf(), 0);
	if (p == MAP_FAILED)
		abort();
	for (unsigned int i = 0; i < INFLIGHT_SIZE; i += sizeof(pat))
		memcpy(p + i, pat, sizeof(pat));
	munmap(p, INFLIGHT_SIZE);
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n++;
	closedir(d);
	return n;
}

static void fixup(struct vu_msg *m)
{
	if (m->hdr.request == VHOST_USER_SET_MEM_TABLE) {
		struct vhost_user_memory *t = &m->p.memory;

		for (unsigned int i = 0; i < VHOST_USER_MAX_REGIONS; i++) {
			struct vhost_user_mem_region *r = &t->regions[i];

			/* Mostly page aligned, as QEMU's (refused otherwise,
			 * vu-mem.c); an odd size keeps some unaligned. */
			bool aligned = !(r->memory_size & 1);

			r->mmap_offset %= RAM_SIZE;
			r->guest_phys_addr %= 4ull * RAM_SIZE;
			if (aligned) {
				r->mmap_offset &= ~4095ull;
				r->guest_phys_addr &= ~4095ull;
			}
			r->memory_size = 1 + r->memory_size % (RAM_SIZE - r->mmap_offset);
			r->userspace_addr = UADDR_BASE + i * (uint64_t)RAM_SIZE +
					    (aligned ? 0 : r->userspace_addr % 64);
		}
	} else if (m->hdr.request == VHOST_USER_SET_VRING_ADDR) {
		struct vhost_user_vring_addr *a = &m->p.addr;

		a->desc_user_addr = UADDR_BASE + a->desc_user_addr % RAM_SIZE;
		a->avail_user_addr = UADDR_BASE + a->avail_user_addr % RAM_SIZE;
		a->used_user_addr = UADDR_BASE + a->used_user_addr % RAM_SIZE;
		m->p.addr.index %= NQ + 1;
	} else if (m->hdr.request == VHOST_USER_GET_INFLIGHT_FD ||
		   m->hdr.request == VHOST_USER_SET_INFLIGHT_FD) {
		struct vhost_user_inflight *in = &m->p.inflight;
		uint64_t need;

		in->num_queues %= NQ + 2;	     /* 0 .. one too many */
		in->queue_size %= 300;	     /* around max_queue_size 256 */
		need = in->num_queues * virtq_inflight_region_size(in->queue_size);
		in->mmap_size = need + in->mmap_size % 3 - 1; /* need - 1 .. + 1 */
		in->mmap_offset = (in->mmap_offset & 1) ? 4096 : 0;
	}
}

int fuzz_vhost_user(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct stub dev = { .cfg = { 1, 2, 3 } };
	struct vu_backend_params p = {
		.ops = &stub_ops, .dev = &dev, .num_queues = NQ,
		.max_queue_size = 256, .name = "fuzz",
	};
	struct vu_backend *b;
	int fds_before;

	fuzz_quiet_logs();
	ram_fd(); /* cached across inputs: before the count */
	fds_before = open_fds();
	if (vu_backend_create(&p, &b))
		abort();
	for (unsigned int rec = 0; rec < 64 && fi_left(&in); rec++) {
		struct vu_msg m;
		uint8_t op = fi_u8(&in), mode;
		const char *why;
		unsigned int nfds;

		memset(&m, 0, sizeof(m));
		m.hdr.request = op < 0x80 ? known[op % ARRAY_SIZE(known)] : fi_u8(&in);
		m.hdr.flags = fi_u8(&in) ^ VHOST_USER_VERSION;
		m.hdr.size = fi_u16(&in) % 300;
		mode = fi_u8(&in);
		nfds = MIN(mode & 0xfu, 9u);
		fi_bytes(&in, &m.p, MIN(m.hdr.size, (uint32_t)sizeof(m.p)));
		if (mode & 0x10)
			fixup(&m);
		/* What vu_msg_recv() would have received: at most 8 fds
		 * (more is a truncated control message, refused there). */
		if (nfds > VHOST_USER_MAX_REGIONS || m.hdr.size > sizeof(m.p)) {
			vu_backend_disconnect(b);
			continue;
		}
		if (m.hdr.request == VHOST_USER_SET_INFLIGHT_FD && (mode & 0x20))
			inflight_fill(&in);
		for (unsigned int i = 0; i < nfds; i++) {
			m.fds[i] = m.hdr.request == VHOST_USER_SET_MEM_TABLE ?
					   dup(ram_fd()) :
				   m.hdr.request == VHOST_USER_SET_INFLIGHT_FD ?
					   dup(inflight_buf()) :
					   eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			if (m.fds[i] < 0)
				abort();
			m.nfds++;
		}
		if (vu_msg_check(&m, &why)) {
			vu_msg_close_fds(&m);
			vu_backend_disconnect(b);
			continue;
		}
		if (vu_backend_handle(b, -1, &m))
			vu_backend_disconnect(b);
	}
	vu_backend_destroy(b);
	if (inflight_fd >= 0)
		close(inflight_fd);
	inflight_fd = -1;
	for (unsigned int i = 0; i < NQ; i++)
		if (dev.started[i])
			abort(); /* a ring left running after the disconnect */
	/* Everything the messages carried is closed again. */
	if (fds_before >= 0 && open_fds() != fds_before)
		abort();
	return 0;
}

FUZZ_TARGET(fuzz_vhost_user)
