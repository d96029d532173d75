/* SPDX-License-Identifier: MIT */
/*
 * vhost-user in-flight tracking (VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD,
 * issue 11), KVM-free, through the socket: the test plays QEMU (the front
 * end keeps guest RAM, the rings and the in-flight buffer across back-end
 * restarts, as `-chardev socket,reconnect=1` does) and the guest.
 *
 *  - layout: GET_INFLIGHT_FD answers a zeroed, sealed memfd of
 *    num_queues regions of ALIGN_UP(16 + 16 * queue_size, 64) bytes (what
 *    QEMU's libvhost-user and DPDK compute); once the rings start each
 *    region is version 1 with desc_num entries, and every request is
 *    recorded (counter in pop order) and cleared with used_idx following
 *    the used ring;
 *  - restart: a back end whose disk stalls (in this process: the image fd
 *    replaced by a full pipe, as in check_blk_bounded) pops writes on two
 *    queues, which the buffer shows in flight, and completes a GET_ID
 *    popped between two of them (out of order: used->idx no longer tells
 *    which avail entries are done); it is torn down the way minivmm-blkd's
 *    SIGTERM tears it down, and nothing more reaches the used rings.
 *    A new back end (the daemon) gets SET_INFLIGHT_FD with the same fd
 *    and SET_VRING_BASE = used->idx (what QEMU sends after its back end
 *    died) and completes exactly those writes, each once, with the data
 *    on disk; new requests follow;
 *  - malformed or out-of-limits GET/SET_INFLIGHT_FD are refused (closed
 *    connection, size-0 answer or failed REPLY_ACK), the daemon keeps
 *    running and leaks no fd;
 *  - a front end that does not negotiate INFLIGHT_SHMFD (or negotiates it
 *    and never sends a buffer) is served as before.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "blk/vblk.h"
#include "blk/virtio-blk.h"
#include "iothread.h"
#include "vhost-user/vu-backend.h"
#include "vu_rig.h"
#include "test_clock.h"

#define BIT(n) (1ull << (n))
#define NQ 2
#define QS 64
#define WBYTES 65536u /* a stalled write: far more than the 4 KiB pipe */
#define FEATURES                                                            \
	(BIT(VIRTIO_F_VERSION_1) | BIT(VIRTIO_RING_F_EVENT_IDX) |             \
	 BIT(VIRTIO_RING_F_INDIRECT_DESC) | BIT(VIRTIO_BLK_F_FLUSH) |          \
	 BIT(VIRTIO_BLK_F_MQ))
#define PROTO                                                               \
	(BIT(VHOST_USER_PROTOCOL_F_MQ) | BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK) | \
	 BIT(VHOST_USER_PROTOCOL_F_CONFIG) |                                  \
	 BIT(VHOST_USER_PROTOCOL_F_RESET_DEVICE))

/* Per queue, independently of virtqueue.h: header 16 + 16 per entry,
 * rounded up to 64 (libvhost-user: ALIGN_UP(16 * qs + 2, 64)). */
static uint64_t region_bytes(unsigned int qs)
{
	uint64_t dpdk = (16ull + 16ull * qs + 63) & ~63ull;
	uint64_t lvu = (16ull * qs + 2 + 63) & ~63ull;

	ck_assert_uint_eq(dpdk, lvu);
	return dpdk;
}

/* ---- the front end: what QEMU keeps across back ends -------------------- */

struct fe {
	struct vuf f;
	struct fake_guest g;
	struct fg_vq vq[NQ];
	int kick[NQ], call[NQ];
	/* The in-flight buffer, as QEMU's struct vhost_inflight. */
	int ifd;
	struct vhost_user_inflight info;
	uint8_t *map;
};

static void fe_init(struct fe *e)
{
	memset(e, 0, sizeof(*e));
	e->f.sock = -1;
	e->ifd = -1;
	ck_assert_int_eq(fg_init_memfd(&e->g, 16u << 20), 0);
	for (unsigned int q = 0; q < NQ; q++) {
		ck_assert_int_eq(fg_vq_init(&e->g, &e->vq[q], QS,
					    BIT(VIRTIO_RING_F_EVENT_IDX) |
						    BIT(VIRTIO_RING_F_INDIRECT_DESC)),
				 0);
		e->kick[q] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		e->call[q] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		ck_assert(e->kick[q] >= 0 && e->call[q] >= 0);
	}
}

static void fe_destroy(struct fe *e)
{
	vuf_close(&e->f);
	for (unsigned int q = 0; q < NQ; q++) {
		fg_vq_destroy(&e->vq[q]);
		close(e->kick[q]);
		close(e->call[q]);
	}
	fg_destroy(&e->g);
	if (e->map)
		munmap(e->map, e->info.mmap_size);
	if (e->ifd >= 0)
		close(e->ifd);
}

static struct virtq_inflight_region *fe_region(struct fe *e, unsigned int q)
{
	return (struct virtq_inflight_region *)(e->map + q * region_bytes(QS));
}

/* GET_INFLIGHT_FD for @nq queues of @qs: the reply's size, *@fd. */
static int get_inflight(struct vuf *f, uint16_t nq, uint16_t qs,
			struct vhost_user_inflight *out, int *fd)
{
	struct vhost_user_inflight in = { .num_queues = nq, .queue_size = qs };
	int ret = vuf_send(f, VHOST_USER_GET_INFLIGHT_FD, VHOST_USER_VERSION, &in,
			   sizeof(in), NULL, 0);

	if (ret)
		return ret;
	memset(out, 0, sizeof(*out));
	return vuf_recv_fd(f, VHOST_USER_GET_INFLIGHT_FD, out, sizeof(*out), fd);
}

/*
 * Connect (to @path, or on the connected socket @sock) and start every
 * ring the way QEMU's vhost-user-blk does: negotiation (with
 * INFLIGHT_SHMFD if @inflight), GET_INFLIGHT_FD the first time and
 * SET_INFLIGHT_FD every time, features, memory table, then per ring
 * NUM / BASE / ADDR / KICK / CALL / ENABLE with base = used->idx (QEMU's
 * last_avail_idx after a back end it could not ask died).
 */
static int fe_connect(struct fe *e, const char *path, int sock, bool inflight)
{
	uint64_t base = (uint64_t)(uintptr_t)e->g.ram;
	int ret;

	if (path)
		ret = vuf_connect(&e->f, path, 10000);
	else {
		memset(&e->f, 0, sizeof(e->f));
		e->f.sock = sock;
		e->f.queue_num = 1;
		ret = 0;
	}
	if (ret || (ret = vuf_init(&e->f, PROTO | (inflight ?
			BIT(VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD) : 0))))
		return ret;
	if (inflight && e->ifd < 0) {
		ret = get_inflight(&e->f, NQ, QS, &e->info, &e->ifd);
		if (ret != (int)sizeof(e->info) || e->ifd < 0 || !e->info.mmap_size)
			return -EPROTO;
		e->map = mmap(NULL, e->info.mmap_size, PROT_READ | PROT_WRITE,
			      MAP_SHARED, e->ifd, (off_t)e->info.mmap_offset);
		if (e->map == MAP_FAILED) {
			e->map = NULL;
			return -errno;
		}
	}
	if (inflight && (ret = vuf_set(&e->f, VHOST_USER_SET_INFLIGHT_FD, &e->info,
				       sizeof(e->info), &e->ifd, 1)))
		return ret;
	if ((ret = vuf_set_features(&e->f, FEATURES & e->f.features)) ||
	    (ret = vuf_set_mem_one(&e->f, e->g.fd, e->g.ram, e->g.ram_size)))
		return ret;
	for (unsigned int q = 0; q < NQ; q++) {
		struct fg_vq *v = &e->vq[q];

		if ((ret = vuf_ring_setup(&e->f, q, QS, fg_vq_used_idx(v),
					  base + v->desc_gpa, base + v->avail_gpa,
					  base + v->used_gpa, e->kick[q], e->call[q])) ||
		    (ret = vuf_ring_enable(&e->f, q, true)))
			return ret;
	}
	return 0;
}

static void fe_kick(struct fe *e, unsigned int q)
{
	uint64_t one = 1;

	fg_vq_publish(&e->vq[q]);
	ck_assert_int_eq(write(e->kick[q], &one, sizeof(one)), sizeof(one));
}

/* Collect used entries of ring @q until @n came or @ms passed. */
static unsigned int fe_wait_used(struct fe *e, unsigned int q, unsigned int n,
				 uint32_t *ids, unsigned int ms)
{
	double end = test_now_ms_f() + ms;
	unsigned int got = 0;

	while (got < n) {
		struct pollfd p = { .fd = e->call[q], .events = POLLIN };
		uint32_t id, len;
		uint64_t v;

		while (got < n && fg_vq_get_used(&e->vq[q], &id, &len) == 1) {
			if (ids)
				ids[got] = id;
			got++;
		}
		if (got >= n || test_now_ms_f() > end)
			break;
		if (poll(&p, 1, 20) > 0 && read(e->call[q], &v, sizeof(v)) < 0)
			continue;
	}
	return got;
}

/* Add (not publish) a request; its head. */
static struct fg_blk_req fe_add(struct fe *e, unsigned int q, uint32_t type,
				uint64_t sector, const void *data, uint32_t len,
				uint64_t *gpa)
{
	bool in = type == VIRTIO_BLK_T_IN || type == VIRTIO_BLK_T_GET_ID;
	struct fg_blk_req req;
	struct fg_buf b = { 0, len, in };

	if (len) {
		b.gpa = fg_alloc(&e->g, len, 4096);
		ck_assert_uint_ne(b.gpa, 0);
		if (!in)
			memcpy(fg_ptr(&e->g, b.gpa, len), data, len);
	}
	if (gpa)
		*gpa = b.gpa;
	ck_assert_int_eq(fg_blk_add(&e->vq[q], type, sector, &b, len ? 1 : 0, true, &req), 0);
	return req;
}

/* One request, waited for: its status; *@head the head it had. */
static int fe_req(struct fe *e, unsigned int q, uint32_t type, uint64_t sector,
		  void *buf, uint32_t len, uint32_t *head)
{
	uint64_t gpa;
	struct fg_blk_req r = fe_add(e, q, type, sector, buf, len, &gpa);
	uint32_t id;

	fe_kick(e, q);
	if (fe_wait_used(e, q, 1, &id, 10000) != 1)
		return -ETIMEDOUT;
	ck_assert_uint_eq(id, (uint32_t)r.head);
	if (head)
		*head = id;
	if (type == VIRTIO_BLK_T_IN && len)
		memcpy(buf, fg_ptr(&e->g, gpa, len), len);
	return fg_blk_status(&e->g, &r);
}

static void pattern(uint8_t *b, uint32_t len, unsigned int seed)
{
	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t v = (uint64_t)seed << 40 | i;

		memcpy(b + i, &v, 8);
	}
}

/* ---- a back end in this process, on a disk that never completes ------ */

struct stalled {
	struct iothread *io;
	struct virtio_blk *dev;
	struct vu_backend *vu;
	int img, pipe_rd, sv[2], stop;
	pthread_t th;
	int ret;
};

static void *stalled_serve(void *opaque)
{
	struct stalled *k = opaque;

	k->ret = vu_backend_serve(k->vu, k->sv[1], k->stop);
	return NULL;
}

static void stalled_up(struct stalled *k)
{
	struct vblk_options o = { .num_queues = NQ, .queue_size = QS,
				  .flags = VBLK_OPT_NO_LOCK };
	struct virtio_blk_params dp = { .nr_iothreads = 1 };
	struct vu_backend_params vp = { .ops = virtio_blk_ops(), .num_queues = NQ,
					.max_queue_size = QS, .name = "stalled" };
	struct vblk *blk;
	int p[2];

	memset(k, 0, sizeof(*k));
	k->img = fg_tmp_image(16u << 20);
	ck_assert_int_ge(k->img, 0);
	o.fd = k->img;
	ck_assert_int_eq(vblk_open(&o, &blk), 0);
	/* The image becomes a 4 KiB pipe nobody reads: writes stick (before
	 * the first ring starts, so that the engine registers the pipe). */
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	ck_assert_int_ge(fcntl(p[1], F_SETPIPE_SZ, 4096), 4096);
	ck_assert_int_ge(dup2(p[1], disk_fd(vblk_disk(blk))), 0);
	close(p[1]);
	k->pipe_rd = p[0];
	ck_assert_int_eq(iothread_create(0, 64, &k->io), 0);
	ck_assert_int_eq(iothread_start(k->io), 0);
	dp.blk = blk;
	dp.iothreads = &k->io;
	ck_assert_int_eq(virtio_blk_create(&dp, &k->dev), 0);
	vp.dev = k->dev;
	ck_assert_int_eq(vu_backend_create(&vp, &k->vu), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, k->sv), 0);
	k->stop = eventfd(0, EFD_CLOEXEC);
	ck_assert_int_ge(k->stop, 0);
	ck_assert_int_eq(pthread_create(&k->th, NULL, stalled_serve, k), 0);
}

/* Tear it down as minivmm-blkd's SIGTERM does: the serving loop stops
 * (every ring stopped, what is in flight cancelled), then the device. */
static void stalled_down(struct stalled *k)
{
	uint64_t one = 1;

	ck_assert_int_eq(write(k->stop, &one, sizeof(one)), sizeof(one));
	pthread_join(k->th, NULL);
	ck_assert_int_eq(k->ret, -ESHUTDOWN);
	vu_backend_destroy(k->vu);
	virtio_blk_destroy(k->dev);
	iothread_stop(k->io);
	iothread_destroy(k->io);
	close(k->pipe_rd);
	close(k->sv[1]);
	close(k->stop);
	close(k->img);
}

/* ---- the daemon ---------------------------------------------------------- */

static struct vr D;

static void daemon_up(void)
{
	struct vr_opts o = { .disk_extra = ",num-queues=2" };

	ck_assert_int_eq(vr_spawn(&D, BLKD_BIN, &o), 0);
}

static void daemon_ok(const char *after)
{
	char log[2048];
	int st = 0;

	if (!vr_alive(&D, &st)) {
		vr_log_tail(&D, log, sizeof(log));
		ck_abort_msg("minivmm-blkd died (status %#x) after %s:\n%s", st, after, log);
	}
}

static int idle_fds(int want)
{
	int n = vr_fd_count(&D);

	for (int i = 0; i < 300 && n != want; i++) {
		usleep(10000);
		n = vr_fd_count(&D);
	}
	return n;
}

/* ---- (1) the buffer and its records ------------------------------------- */

START_TEST(layout_and_records)
{
	static uint8_t w[4096], rd[4096];
	struct fe e;
	struct stat st;
	uint32_t head;
	uint64_t want = NQ * region_bytes(QS);

	daemon_up();
	fe_init(&e);
	ck_assert_int_eq(vuf_connect(&e.f, D.sock, 10000), 0);
	ck_assert_int_eq(vuf_init(&e.f, PROTO | BIT(VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD)), 0);
	ck_assert(e.f.protocol & BIT(VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD));
	ck_assert_int_eq(get_inflight(&e.f, NQ, QS, &e.info, &e.ifd), sizeof(e.info));
	ck_assert_int_ge(e.ifd, 0);
	/* 2 x ALIGN_UP(16 + 16 * 64, 64) = 2 x 1088, at offset 0. */
	ck_assert_uint_eq(e.info.mmap_size, want);
	ck_assert_uint_eq(want, 2176);
	ck_assert_uint_eq(e.info.mmap_offset, 0);
	ck_assert_uint_eq(e.info.num_queues, NQ);
	ck_assert_uint_eq(e.info.queue_size, QS);
	ck_assert_int_eq(fstat(e.ifd, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_uint_ge((uint64_t)st.st_size, want);
	/* Sealed: neither side can shrink it under the other's mapping. */
	ck_assert_int_eq(fcntl(e.ifd, F_GET_SEALS) & (F_SEAL_SHRINK | F_SEAL_GROW),
			 F_SEAL_SHRINK | F_SEAL_GROW);
	e.map = mmap(NULL, e.info.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, e.ifd, 0);
	ck_assert_ptr_ne(e.map, MAP_FAILED);
	for (uint64_t i = 0; i < want; i++)
		ck_assert_msg(!e.map[i], "byte %llu of the buffer is not zero",
			      (unsigned long long)i);
	/* Dirty it: a second GET (QEMU after a device reset) zeroes it again. */
	memset(e.map, 0xa5, want);
	{
		struct vhost_user_inflight again;
		int fd2;

		ck_assert_int_eq(get_inflight(&e.f, NQ, QS, &again, &fd2), sizeof(again));
		ck_assert_int_ge(fd2, 0);
		ck_assert_uint_eq(again.mmap_size, want);
		for (uint64_t i = 0; i < want; i++)
			ck_assert(!e.map[i]);
		close(fd2);
	}
	vuf_close(&e.f);

	/* QEMU's start: SET_INFLIGHT_FD, then the rings. */
	ck_assert_int_eq(fe_connect(&e, D.sock, -1, true), 0);
	for (unsigned int q = 0; q < NQ; q++) {
		struct virtq_inflight_region *r = fe_region(&e, q);

		ck_assert_uint_eq(r->version, 1);
		ck_assert_uint_eq(r->desc_num, QS);
		ck_assert_uint_eq(r->features, 0);
		ck_assert_uint_eq(r->used_idx, 0);
	}
	/* Each request: recorded with the next counter, cleared once used,
	 * used_idx and last_batch_head following it. */
	for (unsigned int i = 0; i < 3; i++) {
		struct virtq_inflight_region *r = fe_region(&e, 0);

		pattern(w, sizeof(w), 100 + i);
		ck_assert_int_eq(fe_req(&e, 0, VIRTIO_BLK_T_OUT, 8 * i, w, sizeof(w), &head),
				 VIRTIO_BLK_S_OK);
		ck_assert_uint_eq(r->desc[head].counter, i);
		ck_assert_uint_eq(r->desc[head].inflight, 0);
		ck_assert_uint_eq(r->last_batch_head, head);
		ck_assert_uint_eq(r->used_idx, i + 1);
		ck_assert_uint_eq(r->used_idx, fg_vq_used_idx(&e.vq[0]));
	}
	/* Queue 1 has its own region (at 1088) and counter. */
	ck_assert_int_eq(fe_req(&e, 1, VIRTIO_BLK_T_IN, 0, rd, sizeof(rd), &head),
			 VIRTIO_BLK_S_OK);
	ck_assert_uint_eq(fe_region(&e, 1)->desc[head].counter, 0);
	ck_assert_uint_eq(fe_region(&e, 1)->used_idx, 1);
	ck_assert_uint_eq(fe_region(&e, 0)->used_idx, 3);
	pattern(w, sizeof(w), 100);
	ck_assert_mem_eq(rd, w, sizeof(rd));
	for (unsigned int q = 0; q < NQ; q++)
		for (unsigned int i = 0; i < QS; i++)
			ck_assert_uint_eq(fe_region(&e, q)->desc[i].inflight, 0);
	fe_destroy(&e);
	daemon_ok("in-flight tracking");
	ck_assert_int_eq(vr_stop(&D), 0);
}
END_TEST

/* ---- (2) a back end torn down with requests in flight ------------------- */

START_TEST(restart_resubmits)
{
	static const unsigned int nw[NQ] = { 2, 2 };
	static uint8_t w[WBYTES], rd[WBYTES];
	struct fg_blk_req req[NQ][3], getid;
	struct stalled k;
	struct fe e;
	uint32_t id;
	double end;
	bool all;

	fe_init(&e);
	stalled_up(&k);
	ck_assert_int_eq(fe_connect(&e, NULL, k.sv[0], true), 0);
	/* Writes at sectors 1024 + 128 * n, data pattern n. */
	for (unsigned int q = 0; q < NQ; q++) {
		for (unsigned int i = 0; i < nw[q]; i++) {
			unsigned int n = q * 3 + i;

			pattern(w, WBYTES, n);
			req[q][i] = fe_add(&e, q, VIRTIO_BLK_T_OUT, 1024 + 128 * n, w,
					   WBYTES, NULL);
			/* Out of order: on queue 0, a GET_ID (no disk I/O)
			 * between the first two writes completes while they
			 * stay stuck, so used->idx (1) says nothing of which
			 * avail entries are done: without the record, a new
			 * back end starting at QEMU's base (used->idx) would
			 * redo the GET_ID and never do the first write. */
			if (q == 0 && i == 0)
				getid = fe_add(&e, q, VIRTIO_BLK_T_GET_ID, 0, NULL, 20, NULL);
		}
		fe_kick(&e, q);
	}
	ck_assert_uint_eq(fe_wait_used(&e, 0, 1, &id, 10000), 1);
	ck_assert_uint_eq(id, (uint32_t)getid.head);
	ck_assert_uint_eq(fg_blk_status(&e.g, &getid), VIRTIO_BLK_S_OK);
	/* The back end pops them all: each recorded in flight, in pop order. */
	end = test_now_ms_f() + 10000;
	do {
		all = true;
		for (unsigned int q = 0; q < NQ; q++)
			for (unsigned int i = 0; i < nw[q]; i++)
				all &= __atomic_load_n(&fe_region(&e, q)->desc[req[q][i].head].inflight,
						       __ATOMIC_ACQUIRE) == 1;
		if (!all)
			usleep(1000);
	} while (!all && test_now_ms_f() < end);
	ck_assert_msg(all, "the writes were not all recorded in flight");
	for (unsigned int q = 0; q < NQ; q++)
		for (unsigned int i = 0; i < nw[q]; i++)
			ck_assert_uint_eq(fe_region(&e, q)->desc[req[q][i].head].counter,
					  q == 0 && i > 0 ? i + 1 : i);
	ck_assert_uint_eq(fe_region(&e, 0)->desc[getid.head].counter, 1);
	ck_assert_uint_eq(fe_region(&e, 0)->desc[getid.head].inflight, 0);
	ck_assert_uint_eq(fe_region(&e, 0)->last_batch_head, getid.head);
	/* Stuck on the disk: torn down with them in flight. */
	usleep(20000);
	stalled_down(&k);
	for (unsigned int q = 0; q < NQ; q++) {
		struct virtq_inflight_region *r = fe_region(&e, q);

		/* None failed to the driver (only the GET_ID completed). */
		ck_assert_uint_eq(fg_vq_used_idx(&e.vq[q]), q == 0);
		ck_assert_uint_eq(r->used_idx, q == 0);
		for (unsigned int i = 0; i < nw[q]; i++)
			ck_assert_uint_eq(r->desc[req[q][i].head].inflight, 1);
	}
	vuf_close(&e.f); /* QEMU sees its back end gone */

	/* The next back end: the daemon, on a disk that works. */
	daemon_up();
	ck_assert_int_eq(fe_connect(&e, D.sock, -1, true), 0);
	for (unsigned int q = 0; q < NQ; q++) {
		uint32_t ids[8];
		bool seen[3] = { false };

		ck_assert_uint_eq(fe_wait_used(&e, q, nw[q], ids, 10000), nw[q]);
		for (unsigned int j = 0; j < nw[q]; j++) {
			unsigned int i = 0;

			while (i < nw[q] && (uint32_t)req[q][i].head != ids[j])
				i++;
			ck_assert_msg(i < nw[q], "queue %u: head %u was never in flight", q, ids[j]);
			ck_assert_msg(!seen[i], "queue %u: head %u completed twice", q, ids[j]);
			seen[i] = true;
			ck_assert_uint_eq(fg_blk_status(&e.g, &req[q][i]), VIRTIO_BLK_S_OK);
		}
	}
	/* Exactly those: nothing more comes, the record is clean. */
	usleep(200000);
	for (unsigned int q = 0; q < NQ; q++) {
		struct virtq_inflight_region *r = fe_region(&e, q);

		ck_assert_uint_eq(fg_vq_used_idx(&e.vq[q]), nw[q] + (q == 0));
		ck_assert_uint_eq(r->used_idx, nw[q] + (q == 0));
		for (unsigned int i = 0; i < QS; i++)
			ck_assert_uint_eq(r->desc[i].inflight, 0);
	}
	/* On disk as written. */
	for (unsigned int q = 0; q < NQ; q++)
		for (unsigned int i = 0; i < nw[q]; i++) {
			unsigned int n = q * 3 + i;

			pattern(w, WBYTES, n);
			ck_assert_int_eq(vr_img_read(&D, (1024 + 128ull * n) * 512, rd, WBYTES), 0);
			ck_assert_msg(!memcmp(rd, w, WBYTES), "write %u not on disk", n);
		}
	/* And the ring goes on after them: popping continued at 1 + 2. */
	pattern(w, 4096, 77);
	ck_assert_int_eq(fe_req(&e, 0, VIRTIO_BLK_T_OUT, 0, w, 4096, NULL), VIRTIO_BLK_S_OK);
	ck_assert_int_eq(fe_req(&e, 0, VIRTIO_BLK_T_IN, 0, rd, 4096, NULL), VIRTIO_BLK_S_OK);
	ck_assert_mem_eq(rd, w, 4096);
	ck_assert_uint_eq(fe_region(&e, 0)->used_idx, 5);
	fe_destroy(&e);
	daemon_ok("a restart with requests in flight");
	ck_assert_int_eq(vr_stop(&D), 0);
}
END_TEST

/* ---- (3) malformed and out-of-limits messages --------------------------- */

/* A connection with INFLIGHT_SHMFD (and REPLY_ACK) negotiated. */
static void connect_inflight(struct vuf *f)
{
	ck_assert_int_eq(vuf_connect(f, D.sock, 10000), 0);
	ck_assert_int_eq(vuf_init(f, PROTO | BIT(VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD)), 0);
}

/* Sent as is: the daemon must close the connection. */
static void closes(const char *what, uint32_t req, const void *p, uint32_t size,
		   const int *fds, unsigned int nfds)
{
	struct vuf f;

	connect_inflight(&f);
	ck_assert_int_eq(vuf_send(&f, req, VHOST_USER_VERSION, p, size, fds, nfds), 0);
	ck_assert_msg(vuf_peer_closed(&f, 5000), "%s: connection not closed", what);
	vuf_close(&f);
	daemon_ok(what);
}

/* A memfd of @size bytes, sealed as ours are. */
static int memfd_of(uint64_t size)
{
	int fd = memfd_create("test-inflight", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	return fd;
}

START_TEST(malformed_refused)
{
	const uint64_t need = NQ * region_bytes(QS);
	struct vhost_user_inflight in, out;
	int fds0, fd, efd = eventfd(0, EFD_CLOEXEC);
	struct vuf f;
	uint64_t v;
	struct {
		const char *what;
		struct vhost_user_inflight in;
		uint64_t file;
		bool eventfd;
	} bad_set[] = {
		{ "SET smaller than its queues", { need - 64, 0, NQ, QS }, need, false },
		{ "SET beyond its file", { need, 0, NQ, QS }, need - 1, false },
		{ "SET at an unaligned offset", { need, 64, NQ, QS }, need + 4096, false },
		{ "SET for more queues than the device's", { 3 * need, 0, 3, QS }, 3 * need, false },
		{ "SET for rings beyond the largest", { 40 * need, 0, NQ, 512 }, 40 * need, false },
		{ "SET of an eventfd", { need, 0, NQ, QS }, 0, true },
	};

	daemon_up();
	ck_assert_int_ge(efd, 0);
	fds0 = idle_fds(-1);

	/* Malformed (vu-msg.c): closed whatever the flags. */
	in = (struct vhost_user_inflight){ 0, 0, 0, QS };
	closes("GET for 0 queues", VHOST_USER_GET_INFLIGHT_FD, &in, sizeof(in), NULL, 0);
	in = (struct vhost_user_inflight){ 0, 0, NQ, 0 };
	closes("GET for rings of 0", VHOST_USER_GET_INFLIGHT_FD, &in, sizeof(in), NULL, 0);
	in = (struct vhost_user_inflight){ 0, 0, NQ, QS };
	closes("GET of 20 bytes", VHOST_USER_GET_INFLIGHT_FD, &in, 20, NULL, 0);
	closes("GET with an fd", VHOST_USER_GET_INFLIGHT_FD, &in, sizeof(in), &efd, 1);
	in = (struct vhost_user_inflight){ need, 0, NQ, QS };
	closes("SET without its fd", VHOST_USER_SET_INFLIGHT_FD, &in, sizeof(in), NULL, 0);
	fd = memfd_of(need);
	in = (struct vhost_user_inflight){ 0, 0, NQ, QS };
	closes("SET of size 0", VHOST_USER_SET_INFLIGHT_FD, &in, sizeof(in), &fd, 1);
	in = (struct vhost_user_inflight){ need, UINT64_MAX - 100, NQ, QS };
	closes("SET whose end overflows", VHOST_USER_SET_INFLIGHT_FD, &in, sizeof(in), &fd, 1);
	close(fd);

	/* Without INFLIGHT_SHMFD negotiated: refused, the connection ends. */
	{
		struct vuf g;

		ck_assert_int_eq(vuf_connect(&g, D.sock, 10000), 0);
		ck_assert_int_eq(vuf_init(&g, PROTO), 0);
		in = (struct vhost_user_inflight){ 0, 0, NQ, QS };
		ck_assert_int_eq(vuf_send(&g, VHOST_USER_GET_INFLIGHT_FD, VHOST_USER_VERSION,
					  &in, sizeof(in), NULL, 0), 0);
		ck_assert(vuf_peer_closed(&g, 5000));
		vuf_close(&g);
		daemon_ok("GET without the feature");
	}

	/* Beyond our limits: GET answers size 0 and no fd; the front end
	 * carries on (untracked). */
	connect_inflight(&f);
	ck_assert_int_eq(get_inflight(&f, 3, QS, &out, &fd), sizeof(out));
	ck_assert_uint_eq(out.mmap_size, 0);
	ck_assert_int_eq(fd, -1);
	ck_assert_int_eq(get_inflight(&f, NQ, 512, &out, &fd), sizeof(out));
	ck_assert_uint_eq(out.mmap_size, 0);
	ck_assert_int_eq(fd, -1);
	ck_assert_int_eq(vuf_get_u64(&f, VHOST_USER_GET_FEATURES, &v), 0);

	/* Well formed, bad values: REPLY_ACK says failed, nothing changes. */
	for (unsigned int i = 0; i < ARRAY_SIZE(bad_set); i++) {
		int sfd = bad_set[i].eventfd ? eventfd(0, EFD_CLOEXEC) :
					       memfd_of(bad_set[i].file);

		ck_assert_msg(vuf_set(&f, VHOST_USER_SET_INFLIGHT_FD, &bad_set[i].in,
				      sizeof(bad_set[i].in), &sfd, 1) == -EIO,
			      "%s: not refused", bad_set[i].what);
		close(sfd);
		daemon_ok(bad_set[i].what);
	}
	vuf_close(&f);

	/* Not while a ring runs on the buffer. */
	{
		struct fe e;

		fe_init(&e);
		ck_assert_int_eq(fe_connect(&e, D.sock, -1, true), 0);
		ck_assert_int_eq(vuf_set(&e.f, VHOST_USER_SET_INFLIGHT_FD, &e.info,
					 sizeof(e.info), &e.ifd, 1), -EIO);
		/* ... nor a GET that would zero it under the ring. */
		ck_assert_int_eq(get_inflight(&e.f, NQ, QS, &out, &fd), sizeof(out));
		ck_assert_uint_eq(out.mmap_size, 0);
		ck_assert_int_eq(fd, -1);
		ck_assert_int_eq(fe_req(&e, 0, VIRTIO_BLK_T_FLUSH, 0, NULL, 0, NULL),
				 VIRTIO_BLK_S_OK);
		fe_destroy(&e);
	}
	close(efd);
	daemon_ok("refused in-flight messages");
	/* Every fd the messages carried was closed, every mapping dropped. */
	ck_assert_int_eq(idle_fds(fds0), fds0);
	ck_assert_int_eq(vr_stop(&D), 0);
}
END_TEST

/* ---- (4) front ends without the feature ---------------------------------- */

START_TEST(not_negotiated)
{
	uint8_t w[4096], rd[4096];
	struct fe e;

	daemon_up();
	/* As before: the rig's front end knows nothing of INFLIGHT_SHMFD. */
	ck_assert_int_eq(vr_connect(&D, 2, QS, FEATURES, 0), 0);
	ck_assert(!(D.f.protocol & BIT(VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD)));
	pattern(w, sizeof(w), 5);
	ck_assert_int_eq(vr_req(&D, 1, VIRTIO_BLK_T_OUT, 8, w, sizeof(w)), VIRTIO_BLK_S_OK);
	ck_assert_int_eq(vr_req(&D, 0, VIRTIO_BLK_T_IN, 8, rd, sizeof(rd)), VIRTIO_BLK_S_OK);
	ck_assert_mem_eq(rd, w, sizeof(w));
	vr_disconnect(&D);
	/* Negotiated, but no buffer ever sent: served untracked. */
	fe_init(&e);
	ck_assert_int_eq(vuf_connect(&e.f, D.sock, 10000), 0);
	ck_assert_int_eq(vuf_init(&e.f, PROTO | BIT(VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD)), 0);
	vuf_close(&e.f);
	{
		uint64_t base = (uint64_t)(uintptr_t)e.g.ram;

		ck_assert_int_eq(vuf_connect(&e.f, D.sock, 10000), 0);
		ck_assert_int_eq(vuf_init(&e.f, PROTO | BIT(VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD)), 0);
		ck_assert_int_eq(vuf_set_features(&e.f, FEATURES & e.f.features), 0);
		ck_assert_int_eq(vuf_set_mem_one(&e.f, e.g.fd, e.g.ram, e.g.ram_size), 0);
		ck_assert_int_eq(vuf_ring_setup(&e.f, 0, QS, 0, base + e.vq[0].desc_gpa,
						base + e.vq[0].avail_gpa,
						base + e.vq[0].used_gpa, e.kick[0], e.call[0]), 0);
		ck_assert_int_eq(vuf_ring_enable(&e.f, 0, true), 0);
	}
	ck_assert_int_eq(fe_req(&e, 0, VIRTIO_BLK_T_IN, 8, rd, sizeof(rd), NULL),
			 VIRTIO_BLK_S_OK);
	ck_assert_mem_eq(rd, w, sizeof(w));
	fe_destroy(&e);
	daemon_ok("front ends without in-flight tracking");
	ck_assert_int_eq(vr_stop(&D), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vhost_user_inflight");
	TCase *tc = tcase_create("blkd");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, layout_and_records);
	tcase_add_test(tc, restart_resubmits);
	tcase_add_test(tc, malformed_refused);
	tcase_add_test(tc, not_negotiated);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
