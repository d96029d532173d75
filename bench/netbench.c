/* SPDX-License-Identifier: MIT */
/*
 * netbench: a NIC's rate limits without KVM (bench/net_ratelimit_bench.sh
 * drives it).  One measurement per run, one JSON record on stdout.
 *
 *   netbench --dir tx|rx [--pairs N] [--iothreads T] [--frame-len L] [--seconds S]
 *            [--warmup S] [--queue-size N] [--event-idx 0|1] [--rep N]
 *            [--rate-bw B/s] [--rate-bw-burst B] [--rate-ops N/s]
 *            [--rate-ops-burst N] [--backend stream|tap|tun] [--tap-io uring|readv]
 *
 * What runs is libvmm's real virtio-net (devices/net/virtio-net.c) with its
 * limits set (the same ratelimit_cfg vmm_set_net_rate_limit() sets), on
 * its virtio-pci transport, real PCI/PIO/MMIO buses and MSI-X, the real
 * I/O threads (one per queue pair by default, as one per vCPU; with
 * --iothreads T pair i on thread i mod T) and queue service;
 * KVM is the unit tests' fake (tests/harness/fake_vpci.h), so a queue's
 * kick is the eventfd KVM would signal and its interrupt the irqfd.  The
 * back end is the `stream` one (passt's framing) on one socketpair per
 * pair, the bench playing the peer on the other end.  --backend tap: the
 * tap back end's data path instead (net_tap_backend's readv/writev with
 * the 12-byte virtio-net header, one message a frame), on a SOCK_SEQPACKET
 * socketpair in place of the tap (no tap ioctls: no offloads, no queue
 * steering); --backend tun: the same on a real multi-queue tap (root:
 * /dev/net/tun), "nbtap0" in a network namespace of its own, up, with no
 * address; TX frames go to the namespace's stack, which drops them (a
 * local EtherType), and RX frames come from an AF_PACKET socket per pair
 * sending on the tap (IPv4/UDP frames, one flow per pair: the tap steers
 * a flow to the queue its hash picks, so pairs may share a queue).  As
 * on a tap, TX has no POLLOUT watch and nothing but kicks
 * and its own rounds wake the I/O thread for TX.  --tap-io: how the tap
 * path moves frames, through the I/O thread's io_uring (the default, as
 * net_tap_backend) or with readv/writev (its fallback), for A/B runs
 * (bench/results/net_uring_ab.md).  A tap takes every frame
 * at once; the socket holds what its send buffer takes (a few hundred
 * small messages) and refuses the rest, which the readv/writev path
 * drops and counts ("drops"), so tx counts the frames the device took
 * off the ring, sent or dropped (through io_uring a kernel that parks a
 * write on a full socket, as 6.x does, sends them all, later).
 *
 * The guest side is a simulated Linux driver on guest RAM (a memfd), one
 * thread per pair for the direction measured:
 *   - tx: the ring kept full of frames (each chain one descriptor: the
 *     12-byte header and the frame, as Linux with VERSION_1), kicked when
 *     the device asks (EVENT_IDX), completions harvested on interrupts;
 *     the peer reads the socket and counts whole frames: what left the
 *     NIC.
 *   - rx: the ring kept full of 2 KiB buffers (MRG_RXBUF, one buffer a
 *     frame); the peer writes frames as fast as the socket takes them,
 *     the driver counts the frames it harvests: what reached the guest.
 * With N > 1 pairs MQ and the control queue are negotiated and the driver
 * enables every pair (VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET); all pairs are busy
 * at once and share the NIC's one limiter per direction: "pair_frames"
 * gives each pair's share.
 *
 * Frames and bytes are Ethernet frames without the virtio-net header (what
 * the limiter charges).  Counted in the window after the warm-up, which
 * must outlast the first (full) bucket.  Timings are reported, never
 * asserted; exit 3 if a frame came out wrong (length, num_buffers) or the
 * device broke (NEEDS_RESET).
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/virtio_config.h>
#include <linux/virtio_net.h>
#include <linux/virtio_pci.h>
#include <linux/virtio_ring.h>

#include "iothread.h"
#include "memory.h"
#include "net/net-backend.h"
#include "net/stream.h"
#include "net/tap.h"
#include "net/virtio-net.h"
#include "pci/msix.h"
#include "ratelimit.h"
#include "virtio/virtio-pci.h"

#include "devbench_driver.h" /* db_ram: guest RAM on a memfd */
#include "fake_vpci.h"

#define MAXP 16u
#define HDR VNET_HDR_LEN
#define BUF_LEN 2048u			/* one RX buffer, one TX chain */
#define MAX_FRAME (1514u)		/* MTU 1500 and the Ethernet header */
#define PEER_BUF (256u * 1024u)

#define rmb() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define wmb() __atomic_thread_fence(__ATOMIC_RELEASE)
#define mb() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define ADD(x, v) __atomic_store_n(&(x), LOAD(x) + (v), __ATOMIC_RELAXED)

/* One virtqueue, the driver's side. */
struct ring {
	unsigned int index;
	uint16_t size;
	bool event_idx;
	uint64_t desc_gpa, avail_gpa, used_gpa;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint64_t buf_gpa; /* descriptor id i: buf_gpa + i * BUF_LEN */
	uint16_t *free_ids;
	unsigned int nr_free;
	uint16_t avail_idx, kicked_idx, last_used;
	int kick_fd, call_fd;
	/* Written by the ring's thread, read by main (relaxed). */
	uint64_t frames, bytes, kicks, irqs, errors;
};

struct pair {
	unsigned int index;
	struct ring rx, tx;
	int peer_fd;
	pthread_t drv, peer;
	bool drv_started, peer_started;
	/* The peer's count of whole frames read (tx; relaxed). */
	uint64_t peer_frames, peer_bytes, peer_errors;
};

static struct {
	bool tx;
	unsigned int pairs, iothreads, queue_size, rep, frame_len;
	int event_idx;
	double seconds, warmup;
	struct ratelimit_cfg rate;
	bool tap; /* --backend tap or tun */
	bool tun; /* --backend tun */
	bool readv; /* --tap-io readv */
} C = {
	.pairs = 1, .queue_size = 256, .frame_len = MAX_FRAME, .event_idx = 1,
	.seconds = 3, .warmup = 1.5,
};

static volatile int stop_flag;
static struct db_ram ram;
static struct guest_mem mem;
static struct fv v;
static struct iothread *io[MAXP];
static unsigned int nr_io;
static struct virtio_net *dev;
static struct pair P[MAXP];
static struct ring ctrl;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *gptr(uint64_t gpa)
{
	return ram.base + gpa;
}

/* Ring layout as vring_init() with the used ring 4 KiB aligned, and
 * @nbufs buffers of BUF_LEN.  0 or -ENOMEM. */
static int ring_init(struct ring *r, unsigned int index, uint16_t size,
		     unsigned int nbufs)
{
	memset(r, 0, sizeof(*r));
	r->index = index;
	r->size = size;
	r->event_idx = C.event_idx;
	r->kick_fd = r->call_fd = -1;
	r->desc_gpa = db_alloc(&ram, 16ull * size, 4096);
	r->avail_gpa = db_alloc(&ram, 6ull + 2ull * size, 2);
	r->used_gpa = db_alloc(&ram, 6ull + 8ull * size, 4096);
	r->buf_gpa = db_alloc(&ram, (uint64_t)nbufs * BUF_LEN, 4096);
	r->free_ids = calloc(size, sizeof(*r->free_ids));
	if (!r->desc_gpa || !r->avail_gpa || !r->used_gpa || !r->buf_gpa ||
	    !r->free_ids)
		return -ENOMEM;
	r->desc = gptr(r->desc_gpa);
	r->avail = gptr(r->avail_gpa);
	r->used = gptr(r->used_gpa);
	for (unsigned int i = 0; i < nbufs; i++)
		r->free_ids[r->nr_free++] = (uint16_t)(nbufs - 1 - i);
	return 0;
}

/* A frame whose bytes depend on @seed: a broadcast Ethernet header, then
 * a pattern. */
static void put_frame(uint8_t *f, uint32_t len, unsigned int seed)
{
	memset(f, 0xff, 6);
	memcpy(f + 6, (uint8_t[]){ 0x52, 0x54, 0, 0, 0, 1 }, 6);
	f[12] = 0x88;
	f[13] = 0xb5; /* local experimental EtherType */
	for (uint32_t i = 14; i < len; i++)
		f[i] = (uint8_t)(i * 7 + seed);
}

/* virtqueue_add_split of one buffer (not yet published). */
static void ring_add(struct ring *r, uint16_t id, uint32_t len, bool write)
{
	struct vring_desc *d = &r->desc[id];

	d->addr = htole64(r->buf_gpa + (uint64_t)id * BUF_LEN);
	d->len = htole32(len);
	d->flags = htole16(write ? VRING_DESC_F_WRITE : 0);
	d->next = 0;
	r->avail->ring[r->avail_idx & (r->size - 1)] = htole16(id);
	r->avail_idx++;
}

static inline bool need_event(uint16_t ev, uint16_t new_idx, uint16_t old)
{
	return (uint16_t)(new_idx - ev - 1) < (uint16_t)(new_idx - old);
}

/* virtqueue_kick_prepare + virtqueue_notify. */
static void ring_publish(struct ring *r)
{
	uint16_t old = r->kicked_idx, new_idx = r->avail_idx;
	bool kick;

	if (old == new_idx)
		return;
	wmb(); /* descriptors and ring entries before the index */
	STORE(r->avail->idx, htole16(new_idx));
	r->kicked_idx = new_idx;
	mb(); /* index before reading the device's suppression state */
	if (r->event_idx) {
		uint16_t *avail_event = (uint16_t *)((uint8_t *)r->used + 4 +
						     8u * r->size);

		kick = need_event(le16toh(LOAD(*avail_event)), new_idx, old);
	} else {
		kick = !(le16toh(LOAD(r->used->flags)) & VRING_USED_F_NO_NOTIFY);
	}
	if (kick) {
		uint64_t one = 1;

		if (write(r->kick_fd, &one, sizeof(one)) == sizeof(one))
			ADD(r->kicks, 1);
	}
}

static unsigned int used_pending(struct ring *r)
{
	return (uint16_t)(le16toh(LOAD(r->used->idx)) - r->last_used);
}

/* virtqueue_get_buf loop: frees the ids, counts frames (rx: checks the
 * length and the header's num_buffers). */
static void ring_harvest(struct ring *r, bool rx)
{
	uint64_t frames = 0, bytes = 0, errs = 0;

	while (used_pending(r)) {
		struct vring_used_elem e;
		uint32_t id, len;

		rmb(); /* entry after index */
		e = r->used->ring[r->last_used & (r->size - 1)];
		r->last_used++;
		id = le32toh(e.id);
		len = le32toh(e.len);
		if (id >= r->size || r->nr_free >= r->size) {
			errs++;
			continue;
		}
		if (rx) {
			struct virtio_net_hdr_v1 *h = gptr(r->buf_gpa + (uint64_t)id * BUF_LEN);

			if (len != HDR + C.frame_len || le16toh(h->num_buffers) != 1)
				errs++;
			else
				bytes += len - HDR;
		}
		frames++;
		r->free_ids[r->nr_free++] = (uint16_t)id;
	}
	if (frames) {
		ADD(r->frames, frames);
		ADD(r->bytes, bytes);
	}
	if (errs)
		ADD(r->errors, errs);
}

/* virtqueue_disable_cb / virtqueue_enable_cb (false: entries arrived
 * meanwhile). */
static void disable_cb(struct ring *r)
{
	if (!r->event_idx)
		STORE(r->avail->flags, htole16(VRING_AVAIL_F_NO_INTERRUPT));
}

static bool enable_cb(struct ring *r)
{
	if (r->event_idx)
		STORE(r->avail->ring[r->size], htole16(r->last_used));
	else
		STORE(r->avail->flags, 0);
	mb();
	return !used_pending(r);
}

/*
 * The guest's side of one ring, in Linux' order: the interrupt handler
 * (NAPI) harvests with callbacks disabled and re-enables them; every
 * free buffer goes back (rx: refill; tx: the stack always has the next
 * frame); the vCPU halts until the next interrupt.  Ends at the stop
 * flag; what is in flight stays (the device is torn down after).
 */
static void *drv_thread(void *arg)
{
	struct ring *r = arg;
	bool rx = !(r->index & 1);
	uint32_t len = rx ? BUF_LEN : HDR + C.frame_len;

	while (!LOAD(stop_flag)) {
		struct pollfd p = { .fd = r->call_fd, .events = POLLIN };
		uint64_t n;

		disable_cb(r);
		ring_harvest(r, rx);
		if (!enable_cb(r))
			continue;
		if (r->nr_free) {
			while (r->nr_free)
				ring_add(r, r->free_ids[--r->nr_free], len, rx);
			ring_publish(r);
			continue; /* completions may already be there */
		}
		if (poll(&p, 1, 100) > 0 && read(r->call_fd, &n, sizeof(n)) == sizeof(n))
			ADD(r->irqs, n);
	}
	return NULL;
}

/* tx: read the socket, count whole frames (4-byte big-endian length,
 * then the frame). */
static void *peer_reader(void *arg)
{
	struct pair *pp = arg;
	uint8_t *buf = malloc(PEER_BUF);
	size_t have = 0;

	if (!buf)
		return NULL;
	while (!LOAD(stop_flag)) {
		struct pollfd p = { .fd = pp->peer_fd, .events = POLLIN };
		size_t off = 0;
		ssize_t n;

		if (poll(&p, 1, 100) <= 0)
			continue;
		n = recv(pp->peer_fd, buf + have, PEER_BUF - have, MSG_DONTWAIT);
		if (n == 0)
			break;
		if (n < 0)
			continue;
		have += (size_t)n;
		while (have - off >= 4) {
			uint32_t len = (uint32_t)buf[off] << 24 | (uint32_t)buf[off + 1] << 16 |
				       (uint32_t)buf[off + 2] << 8 | buf[off + 3];

			if (len > PEER_BUF - 4) { /* broken framing: give up */
				ADD(pp->peer_errors, 1);
				free(buf);
				return NULL;
			}
			if (have - off < 4 + (size_t)len)
				break;
			if (len != C.frame_len)
				ADD(pp->peer_errors, 1);
			ADD(pp->peer_frames, 1);
			ADD(pp->peer_bytes, len);
			off += 4 + len;
		}
		memmove(buf, buf + off, have - off);
		have -= off;
	}
	free(buf);
	return NULL;
}

/* tx, --backend tap: one message a frame, the virtio-net header first. */
#define PEER_BATCH 64u
static void *peer_reader_tap(void *arg)
{
	struct pair *pp = arg;
	uint8_t *buf = malloc((size_t)PEER_BATCH * BUF_LEN);
	struct mmsghdr m[PEER_BATCH];
	struct iovec iov[PEER_BATCH];

	if (!buf)
		return NULL;
	for (unsigned int i = 0; i < PEER_BATCH; i++) {
		iov[i] = (struct iovec){ buf + (size_t)i * BUF_LEN, BUF_LEN };
		m[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i], .msg_iovlen = 1 };
	}
	while (!LOAD(stop_flag)) {
		struct pollfd p = { .fd = pp->peer_fd, .events = POLLIN };
		int n;

		if (poll(&p, 1, 100) <= 0)
			continue;
		n = recvmmsg(pp->peer_fd, m, PEER_BATCH, MSG_DONTWAIT, NULL);
		for (int i = 0; i < n; i++) {
			uint32_t len = m[i].msg_len - HDR;

			if (m[i].msg_len < HDR || len != C.frame_len)
				ADD(pp->peer_errors, 1);
			ADD(pp->peer_frames, 1);
			ADD(pp->peer_bytes, len);
		}
	}
	free(buf);
	return NULL;
}

/* rx, --backend tap: messages of a zero virtio-net header (no offload)
 * and a frame, sent as fast as the socket takes them. */
static void *peer_writer_tap(void *arg)
{
	struct pair *pp = arg;
	uint8_t *buf = calloc(PEER_BATCH, HDR + C.frame_len);
	struct mmsghdr m[PEER_BATCH];
	struct iovec iov[PEER_BATCH];

	if (!buf)
		return NULL;
	for (unsigned int i = 0; i < PEER_BATCH; i++) {
		uint8_t *f = buf + (size_t)i * (HDR + C.frame_len);

		put_frame(f + HDR, C.frame_len, i + pp->index);
		iov[i] = (struct iovec){ f, HDR + C.frame_len };
		m[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i], .msg_iovlen = 1 };
	}
	while (!LOAD(stop_flag)) {
		struct pollfd p = { .fd = pp->peer_fd, .events = POLLOUT };

		if (poll(&p, 1, 100) <= 0)
			continue;
		(void)sendmmsg(pp->peer_fd, m, PEER_BATCH, MSG_DONTWAIT | MSG_NOSIGNAL);
	}
	free(buf);
	return NULL;
}

/* rx: write frames as fast as the socket takes them (a buffer of whole
 * frames sent round and round). */
static void *peer_writer(void *arg)
{
	struct pair *pp = arg;
	unsigned int nf = PEER_BUF / (4 + C.frame_len);
	size_t total = (size_t)nf * (4 + C.frame_len), off = 0;
	uint8_t *buf = malloc(total);

	if (!buf)
		return NULL;
	for (unsigned int i = 0; i < nf; i++) {
		uint8_t *f = buf + (size_t)i * (4 + C.frame_len);

		f[0] = (uint8_t)(C.frame_len >> 24);
		f[1] = (uint8_t)(C.frame_len >> 16);
		f[2] = (uint8_t)(C.frame_len >> 8);
		f[3] = (uint8_t)C.frame_len;
		put_frame(f + 4, C.frame_len, i + pp->index);
	}
	while (!LOAD(stop_flag)) {
		struct pollfd p = { .fd = pp->peer_fd, .events = POLLOUT };
		ssize_t n;

		if (poll(&p, 1, 100) <= 0)
			continue;
		n = send(pp->peer_fd, buf + off, total - off, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0)
			continue;
		off += (size_t)n;
		if (off == total)
			off = 0;
	}
	free(buf);
	return NULL;
}

/* Vector 0 the configuration's, vector q + 1 queue q's: a distinct MSI
 * message whose data is 0x4000 + vector. */
static void msix_setup(unsigned int nvec)
{
	fv_msix_ctrl(&v, MSIX_CTRL_ENABLE | MSIX_CTRL_MASKALL);
	for (unsigned int i = 0; i < nvec; i++) {
		fv_msix_write(&v, i, 0xfee00000u, 0x4000u + i);
		fv_msix_mask(&v, i, false);
	}
	fv_msix_ctrl(&v, MSIX_CTRL_ENABLE);
}

static int wire(struct ring *r)
{
	r->kick_fd = fv_kvm_kick_fd(v.kvm, fv_notify_addr(&v, r->index));
	r->call_fd = fv_kvm_call_fd(v.kvm, 0xfee00000u, 0x4000u + r->index + 1);
	if (r->kick_fd < 0 || r->call_fd < 0) {
		fprintf(stderr, "netbench: queue %u not wired\n", r->index);
		return -EIO;
	}
	return 0;
}

/* VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET @pairs on the control queue, as
 * virtnet_set_queues() does (it spins for the answer too). */
static int pairs_set(unsigned int pairs)
{
	uint8_t *b = gptr(ctrl.buf_gpa);
	double t0 = now();

	b[0] = VIRTIO_NET_CTRL_MQ;
	b[1] = VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET;
	b[2] = (uint8_t)pairs;
	b[3] = (uint8_t)(pairs >> 8);
	b[4] = 0xaa; /* the status byte, written by the device */
	ctrl.desc[0] = (struct vring_desc){ htole64(ctrl.buf_gpa), htole32(4),
					    htole16(VRING_DESC_F_NEXT), htole16(1) };
	ctrl.desc[1] = (struct vring_desc){ htole64(ctrl.buf_gpa + 4), htole32(1),
					    htole16(VRING_DESC_F_WRITE), 0 };
	ctrl.avail->ring[0] = 0;
	ctrl.avail_idx = 1;
	ctrl.kicked_idx = 0;
	ring_publish(&ctrl);
	while (!used_pending(&ctrl)) {
		if (now() - t0 > 2)
			return -ETIMEDOUT;
		usleep(100);
	}
	rmb();
	return b[4] == VIRTIO_NET_OK ? 0 : -EIO;
}

/* --backend tap: the tap's data path without its ioctls (set at start). */
static struct net_backend tap_like;

/* --backend tun: the tap's @C.pairs queues into @fds, up; each pair's
 * peer an AF_PACKET socket bound to it (rx). */
static int tun_setup(int *fds)
{
	struct ifreq ifr = { .ifr_name = "nbtap0" };
	int s, ret = tap_open("nbtap0", C.pairs, fds);

	if (ret)
		return ret;
	/* No IPv6 on it: its router and listener solicitations would reach
	 * the guest side among the frames counted (rx). */
	s = open("/proc/sys/net/ipv6/conf/nbtap0/disable_ipv6", O_WRONLY | O_CLOEXEC);
	if (s >= 0) {
		if (write(s, "1", 1) != 1)
			ret = -EIO;
		close(s);
	}
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	ret = ioctl(s, SIOCGIFFLAGS, &ifr) ? -errno : 0;
	ifr.ifr_flags |= IFF_UP;
	if (!ret && ioctl(s, SIOCSIFFLAGS, &ifr))
		ret = -errno;
	if (!ret && ioctl(s, SIOCGIFINDEX, &ifr))
		ret = -errno;
	close(s);
	for (unsigned int i = 0; !ret && !C.tx && i < C.pairs; i++) {
		struct sockaddr_ll a = { .sll_family = AF_PACKET,
					 .sll_protocol = htons(ETH_P_ALL),
					 .sll_ifindex = ifr.ifr_ifindex };

		P[i].peer_fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
		if (P[i].peer_fd < 0 || bind(P[i].peer_fd, (void *)&a, sizeof(a)))
			ret = -errno;
	}
	return ret;
}

/* rx, --backend tun: IPv4/UDP frames of pair @pp's flow (198.18.0.0/15
 * addresses, never routed: the namespace has none) sent on the tap as
 * fast as the socket takes them. */
static void *peer_writer_tun(void *arg)
{
	struct pair *pp = arg;
	uint8_t *buf = calloc(PEER_BATCH, C.frame_len);
	struct mmsghdr m[PEER_BATCH];
	struct iovec iov[PEER_BATCH];

	if (!buf)
		return NULL;
	for (unsigned int i = 0; i < PEER_BATCH; i++) {
		uint8_t *f = buf + (size_t)i * C.frame_len;

		put_frame(f, C.frame_len, i + pp->index);
		f[12] = 0x08; /* IPv4 */
		f[13] = 0x00;
		memcpy(f + 14, (uint8_t[]){ 0x45, 0, (uint8_t)((C.frame_len - 14) >> 8),
					    (uint8_t)(C.frame_len - 14),
					    0, 0, 0, 0, 64, 17, 0, 0, 198, 18, 0,
					    (uint8_t)(1 + pp->index), 198, 18, 1, 1,
					    0x30, (uint8_t)pp->index, 0x30, 0x39 }, 24);
		iov[i] = (struct iovec){ f, C.frame_len };
		m[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i], .msg_iovlen = 1 };
	}
	while (!LOAD(stop_flag))
		if (sendmmsg(pp->peer_fd, m, PEER_BATCH, 0) < 0)
			usleep(100); /* ENOBUFS: the tap's queue is full */
	free(buf);
	return NULL;
}

static int setup(void)
{
	unsigned int nq, ctrl_index = 2 * C.pairs;
	uint64_t want, offered;
	int fds[MAXP], ret;

	ret = db_ram_init(&ram, 8ull * 1024 * 1024 +
				C.pairs * (2ull * C.queue_size * BUF_LEN + 65536));
	if (ret)
		return ret;
	guest_mem_init_buf(&mem, ram.base, ram.size);
	if ((ret = fv_init(&v, -1, FV_MMIO_BASE, FV_MMIO_SIZE, &mem)))
		return ret;
	for (unsigned int i = 0; i < C.pairs; i++) {
		int sv[2];

		if (i < C.iothreads) {
			if ((ret = iothread_create(i, 512, &io[i])))
				return ret;
			nr_io++;
			if ((ret = iothread_start(io[i])))
				return ret;
		}
		if (C.tun) {
			sv[0] = sv[1] = -1; /* tap_open() below, the peer's later */
		} else if (C.tap) {
			/* Non-blocking, as minivmm opens a tap. */
			if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK |
						SOCK_CLOEXEC, 0, sv))
				return -errno;
		} else {
			if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
				return -errno;
			if ((ret = nstream_adopt(sv[0])))
				return ret;
		}
		fds[i] = sv[0];
		P[i].peer_fd = sv[1];
		P[i].index = i;
	}
	if (C.tun && (ret = tun_setup(fds)))
		return ret;
	{
		struct virtio_net_params np = {
			.net = { .max_pairs = (uint16_t)C.pairs,
				 .mac = { 0x52, 0x54, 0, 0, 0, 2 } },
			.fds = fds,
			.backend = C.tap ? &tap_like : &net_stream_backend,
			.queue_size = (uint16_t)C.queue_size,
			.iothreads = io,
			.nr_iothreads = nr_io,
			.rate = &C.rate,
		};
		struct virtio_device vd;
		struct vpci_params tp = fv_params(&v);

		if ((ret = virtio_net_create(&np, &dev)))
			return ret;
		virtio_net_virtio(dev, &vd);
		vpci_params_set_device(&tp, &vd);
		tp.ioeventfd_any_length = true;
		if ((ret = fv_create(&v, &tp)))
			return ret;
	}
	want = (1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_NET_F_MRG_RXBUF);
	if (C.event_idx)
		want |= 1ull << VIRTIO_RING_F_EVENT_IDX;
	if (C.pairs > 1)
		want |= (1ull << VIRTIO_NET_F_MQ) | (1ull << VIRTIO_NET_F_CTRL_VQ);
	ret = fv_negotiate(&v, want, &offered);
	if (ret) {
		fprintf(stderr, "netbench: features %#llx not taken (offered %#llx)\n",
			(unsigned long long)want, (unsigned long long)offered);
		return -EIO;
	}
	nq = 2 * C.pairs + (C.pairs > 1);
	for (unsigned int i = 0; i < C.pairs; i++) {
		if ((ret = ring_init(&P[i].rx, 2 * i, (uint16_t)C.queue_size, C.queue_size)) ||
		    (ret = ring_init(&P[i].tx, 2 * i + 1, (uint16_t)C.queue_size, C.queue_size)))
			return ret;
		/* TX buffers: a zero header (no offload) and the frame. */
		for (unsigned int id = 0; id < C.queue_size; id++)
			put_frame((uint8_t *)gptr(P[i].tx.buf_gpa + (uint64_t)id * BUF_LEN) + HDR,
				  C.frame_len, id + i);
	}
	if (C.pairs > 1 && (ret = ring_init(&ctrl, ctrl_index, 16, 1)))
		return ret;
	msix_setup(nq + 1);
	FV_COMMON_WR(&v, MSIX, 0, 2);
	for (unsigned int i = 0; i < nq; i++) {
		struct ring *r = i == ctrl_index ? &ctrl : i & 1 ? &P[i / 2].tx : &P[i / 2].rx;

		fv_queue_setup(&v, i, r->size, r->desc_gpa, r->avail_gpa,
			       r->used_gpa, (uint16_t)(i + 1));
	}
	fv_status_add(&v, VIRTIO_CONFIG_S_DRIVER_OK);
	if (fv_status(&v) & VIRTIO_CONFIG_S_NEEDS_RESET)
		return -EIO;
	for (unsigned int i = 0; i < C.pairs; i++)
		if ((ret = wire(&P[i].rx)) || (ret = wire(&P[i].tx)))
			return ret;
	if (C.pairs > 1) {
		if ((ret = wire(&ctrl)))
			return ret;
		if ((ret = pairs_set(C.pairs))) {
			fprintf(stderr, "netbench: VQ_PAIRS_SET %u failed\n", C.pairs);
			return ret;
		}
	}
	return 0;
}

static void teardown(void)
{
	if (v.t)
		vpci_quiesce(v.t);
	for (unsigned int i = 0; i < nr_io; i++)
		iothread_stop(io[i]);
	vpci_destroy(v.t);
	v.t = NULL;
	virtio_net_destroy(dev); /* closes the device's ends */
	for (unsigned int i = 0; i < nr_io; i++)
		iothread_destroy(io[i]);
	fv_destroy(&v);
	for (unsigned int i = 0; i < C.pairs; i++) {
		close(P[i].peer_fd);
		free(P[i].rx.free_ids);
		free(P[i].tx.free_ids);
	}
	free(ctrl.free_ids);
	db_ram_destroy(&ram);
}

/* What the window counts for pair @i: frames and bytes that left the NIC
 * (tx: the peer's count; --backend tap: the device's, see below) or
 * reached the guest (rx: the driver's). */
static void pair_count(unsigned int i, uint64_t *frames, uint64_t *bytes)
{
	if (C.tx && C.tap) {
		/* What the device took off the ring: a tap takes every frame
		 * at once, the socket standing in for it refuses what its
		 * send buffer cannot hold: "drops". */
		*frames = LOAD(P[i].tx.frames);
		*bytes = *frames * C.frame_len;
	} else if (C.tx) {
		*frames = LOAD(P[i].peer_frames);
		*bytes = LOAD(P[i].peer_bytes);
	} else {
		*frames = LOAD(P[i].rx.frames);
		*bytes = LOAD(P[i].rx.bytes);
	}
}

/* The I/O threads' rounds so far (all of them). */
static uint64_t io_loops(void)
{
	uint64_t n = 0;

	for (unsigned int i = 0; i < nr_io; i++) {
		struct iothread_stats st;

		iothread_get_stats(io[i], &st);
		n += st.loops;
	}
	return n;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: netbench --dir tx|rx [--pairs N] [--iothreads T] [--frame-len L]\n"
		"       [--seconds S]\n"
		"       [--warmup S] [--queue-size N] [--event-idx 0|1] [--rep N]\n"
		"       [--rate-bw B/s] [--rate-bw-burst B] [--rate-ops N/s]\n"
		"       [--rate-ops-burst N]   (the NIC's rate limits, each direction)\n"
		"       [--backend stream|tap|tun] (tap: its data path on a seqpacket\n"
		"       socketpair; tun: on a real tap, root, in a namespace of its own)\n"
		"       [--tap-io uring|readv] (tap: frames moved by io_uring, or readv/writev)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", 1, 0, 'd' },	      { "pairs", 1, 0, 'p' },
		{ "frame-len", 1, 0, 'l' },   { "seconds", 1, 0, 'S' },
		{ "warmup", 1, 0, 'w' },      { "queue-size", 1, 0, 'z' },
		{ "event-idx", 1, 0, 'e' },   { "rep", 1, 0, 'r' },
		{ "rate-bw", 1, 0, 'B' },     { "rate-bw-burst", 1, 0, 'b' },
		{ "rate-ops", 1, 0, 'O' },    { "rate-ops-burst", 1, 0, 'o' },
		{ "iothreads", 1, 0, 'i' },   { "backend", 1, 0, 'k' },
		{ "tap-io", 1, 0, 'I' },
		{ 0, 0, 0, 0 },
	};
	uint64_t f0[MAXP] = { 0 }, b0[MAXP] = { 0 }, f1[MAXP] = { 0 }, b1[MAXP] = { 0 };
	uint64_t thr0 = 0, thr1 = 0, ns0 = 0, ns1 = 0, loops0 = 0, loops1 = 0;
	uint64_t frames = 0, bytes = 0, kicks = 0, irqs = 0, errors = 0, drops = 0;
	const char *dir = NULL;
	double t0 = 0, t1 = 0, secs;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'd': dir = optarg; break;
		case 'p': C.pairs = (unsigned int)atoi(optarg); break;
		case 'i': C.iothreads = (unsigned int)atoi(optarg); break;
		case 'l': C.frame_len = (unsigned int)atoi(optarg); break;
		case 'S': C.seconds = atof(optarg); break;
		case 'w': C.warmup = atof(optarg); break;
		case 'z': C.queue_size = (unsigned int)atoi(optarg); break;
		case 'e': C.event_idx = atoi(optarg); break;
		case 'r': C.rep = (unsigned int)atoi(optarg); break;
		case 'B': C.rate.bw.rate = strtoull(optarg, NULL, 0); break;
		case 'b': C.rate.bw.burst = strtoull(optarg, NULL, 0); break;
		case 'O': C.rate.ops.rate = strtoull(optarg, NULL, 0); break;
		case 'o': C.rate.ops.burst = strtoull(optarg, NULL, 0); break;
		case 'k':
			if (strcmp(optarg, "stream") && strcmp(optarg, "tap") &&
			    strcmp(optarg, "tun"))
				usage();
			C.tun = !strcmp(optarg, "tun");
			C.tap = C.tun || !strcmp(optarg, "tap");
			break;
		case 'I':
			if (strcmp(optarg, "uring") && strcmp(optarg, "readv"))
				usage();
			C.readv = !strcmp(optarg, "readv");
			break;
		default: usage();
		}
	}
	if (!dir || (strcmp(dir, "tx") && strcmp(dir, "rx")) || !C.pairs ||
	    C.pairs > MAXP || C.frame_len < NSTREAM_MIN_FRAME ||
	    C.frame_len > MAX_FRAME || C.queue_size < 2 || C.queue_size > 1024 ||
	    (C.queue_size & (C.queue_size - 1)) || ratelimit_check(&C.rate) ||
	    C.seconds <= 0 || C.warmup < 0)
		usage();
	if (!C.iothreads || C.iothreads > C.pairs)
		C.iothreads = C.pairs;
	C.tx = !strcmp(dir, "tx");
	signal(SIGPIPE, SIG_IGN);
	tap_like = net_tap_backend;
	tap_like.set_features = NULL; /* TUNSETOFFLOAD: a tap's */
	tap_like.steer = NULL;	      /* TUNSETQUEUE: a tap's */
	tap_like.offloads = false;
	tap_like.uring = !C.readv;
	if (C.tun) {
		tap_like = net_tap_backend; /* its ioctls too */
		tap_like.uring = !C.readv;
		tap_like.offloads = false;
		if (unshare(CLONE_NEWNET)) {
			fprintf(stderr, "netbench: unshare(CLONE_NEWNET): %s\n",
				strerror(errno));
			return 1;
		}
	}

	ret = setup();
	if (ret) {
		fprintf(stderr, "netbench: set-up failed: %s\n", strerror(-ret));
		return 1;
	}
	for (unsigned int i = 0; i < C.pairs; i++) {
		struct pair *pp = &P[i];

		ret = -pthread_create(&pp->drv, NULL, drv_thread, C.tx ? &pp->tx : &pp->rx);
		pp->drv_started = !ret;
		/* tun, tx: the namespace's stack takes the frames. */
		if (!ret && !(C.tun && C.tx)) {
			ret = -pthread_create(&pp->peer, NULL,
					      C.tx ? (C.tap ? peer_reader_tap : peer_reader) :
						     (C.tun ? peer_writer_tun :
						      C.tap ? peer_writer_tap : peer_writer), pp);
			pp->peer_started = !ret;
		}
		if (ret) {
			fprintf(stderr, "netbench: thread: %s\n", strerror(-ret));
			stop_flag = 1;
			break;
		}
	}
	if (!ret) {
		usleep((useconds_t)(C.warmup * 1e6));
		ratelimit_stats(virtio_net_ratelimit(dev, C.tx), &thr0, &ns0);
		for (unsigned int i = 0; i < C.pairs; i++)
			pair_count(i, &f0[i], &b0[i]);
		loops0 = io_loops();
		t0 = now();
		usleep((useconds_t)(C.seconds * 1e6));
		for (unsigned int i = 0; i < C.pairs; i++)
			pair_count(i, &f1[i], &b1[i]);
		loops1 = io_loops();
		t1 = now();
		ratelimit_stats(virtio_net_ratelimit(dev, C.tx), &thr1, &ns1);
		for (unsigned int i = 0; i < C.pairs; i++) {
			struct virtio_net_pair_stats st;

			frames += f1[i] - f0[i];
			bytes += b1[i] - b0[i];
			if (!virtio_net_pair_stats(dev, i, &st))
				drops += C.tx ? st.net.tx_drops : st.net.rx_drops;
		}
	}
	stop_flag = 1;
	for (unsigned int i = 0; i < C.pairs; i++) {
		struct ring *r = C.tx ? &P[i].tx : &P[i].rx;

		if (P[i].drv_started)
			pthread_join(P[i].drv, NULL);
		if (P[i].peer_started)
			pthread_join(P[i].peer, NULL);
		kicks += r->kicks;
		irqs += r->irqs;
		errors += r->errors + P[i].peer_errors;
	}
	if (fv_status(&v) & VIRTIO_CONFIG_S_NEEDS_RESET)
		errors++;
	if (ret) {
		teardown();
		return 1;
	}
	secs = t1 - t0;
	printf("{\"bench\": \"netrate\", \"target\": \"libvmm\", \"backend\": \"%s\", "
	       "\"tap_io\": \"%s\", "
	       "\"dir\": \"%s\", \"pairs\": %u, \"iothreads\": %u, \"frame_len\": %u, "
	       "\"queue_size\": %u, \"event_idx\": %s, \"rep\": %u, \"seconds\": %.3f, "
	       "\"rate_bw\": %llu, \"rate_ops\": %llu, \"frames\": %llu, \"bytes\": %llu, "
	       "\"fps\": %.1f, \"bps\": %.1f, \"rate_throttled\": %llu, "
	       "\"rate_wait_ms\": %.1f, \"kicks\": %llu, \"irqs\": %llu, "
	       "\"drops\": %llu, \"errors\": %llu, \"io_rounds\": %llu, \"pair_frames\": [",
	       C.tun ? "tun" : C.tap ? "tap" : "stream", C.tap ? (C.readv ? "readv" : "uring") : "-",
	       C.tx ? "tx" : "rx", C.pairs, nr_io, C.frame_len, C.queue_size,
	       C.event_idx ? "true" : "false", C.rep, secs,
	       (unsigned long long)C.rate.bw.rate, (unsigned long long)C.rate.ops.rate,
	       (unsigned long long)frames, (unsigned long long)bytes, frames / secs,
	       bytes / secs, (unsigned long long)(thr1 - thr0), (ns1 - ns0) / 1e6,
	       (unsigned long long)kicks, (unsigned long long)irqs,
	       (unsigned long long)drops, (unsigned long long)errors,
	       (unsigned long long)(loops1 - loops0));
	for (unsigned int i = 0; i < C.pairs; i++)
		printf("%s%llu", i ? ", " : "", (unsigned long long)(f1[i] - f0[i]));
	printf("], \"pair_bytes\": [");
	for (unsigned int i = 0; i < C.pairs; i++)
		printf("%s%llu", i ? ", " : "", (unsigned long long)(b1[i] - b0[i]));
	printf("]}\n");
	fflush(stdout);
	teardown();
	return errors ? 3 : 0;
}
