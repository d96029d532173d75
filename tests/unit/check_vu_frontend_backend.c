/* SPDX-License-Identifier: MIT */
/*
 * The vhost-user front end (devices/vhost-user/vu-frontend.c) against the
 * project's own back end (vu-backend.c, vu-requests.c, vu-mem.c: what
 * minivmm-blkd runs), KVM-free: the back end serves a Unix socket on a
 * thread of this process, in front of a small test device (a virtio-fs
 * config space; its rings are served by the test itself, as a device's
 * I/O thread would), and the test plays the driver on rings in a memfd
 * (tests/harness/fake_guest.h).  Checked, on both sides:
 *  - set-up: the features both have, the protocol features the back end
 *    offers and the front end uses (MQ, REPLY_ACK, CONFIG; not
 *    CONFIGURE_MEM_SLOTS, which this back end does not offer: the memory
 *    goes in one SET_MEM_TABLE), the back end's queue count, its config
 *    space read with GET_CONFIG;
 *  - the memory table: the back end maps the memfd itself (another
 *    address) and reads the bytes the test wrote into guest RAM, and the
 *    test reads what the back end writes;
 *  - DRIVER_OK: a kick written on the front end's kick eventfd wakes the
 *    back end's copy of it, a request goes through the back end's ring,
 *    and its call signal reaches the front end's call eventfd;
 *  - a stop and a restart: the back end's ring position carried through
 *    GET_VRING_BASE / SET_VRING_BASE (the next request is a new one);
 *  - the back end's death: the front end is broken and says so at once,
 *    no request waits, the guest's requests get answers (virtio-fs: EIO,
 *    and DEVICE_NEEDS_RESET), each within a bounded wait;
 *  - virtio-fs's CONFIG rule: the back end's tag must be the user's, its
 *    fewer request queues are what the guest sees, an empty tag keeps the
 *    user's.
 */
#include <check.h>
#include <errno.h>
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

#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "fake_guest.h"
#include "fs/virtio-fs.h"
#include "vhost-user/vhost-user.h"
#include "vhost-user/vu-backend-int.h"
#include "vhost-user/vu-backend.h"
#include "vhost-user/vu-frontend.h"

#define BIT(n) (1ull << (n))
#define RAM (1u << 20)
#define QSIZE 16
#define WAIT_MS 2000 /* a bound on every wait: a hang fails, not blocks */
#define CFG_SIZE 40u /* struct virtio_fs_config */

/* ---- the back end: its device and its thread --------------------------- */

#define BE_NQ 4

struct tdev {
	uint8_t cfg[CFG_SIZE]; /* virtio-fs: tag[36], num_request_queues */
	uint64_t acked;	       /* set_features */
	/* Per ring: the back end's queue while started, starts, stops. */
	struct virtio_queue *q[BE_NQ];
	unsigned int starts[BE_NQ], stops[BE_NQ];
	bool cancelled[BE_NQ];
};

/* The device offers VERSION_1, indirect descriptors and a bit the front
 * end does not want (24, ANY_LAYOUT): only the first two are common. */
#define TDEV_FEATURES                                                       \
	(BIT(VIRTIO_F_VERSION_1) | BIT(VIRTIO_RING_F_INDIRECT_DESC) | BIT(24))

static uint64_t tdev_features(void *dev)
{
	return TDEV_FEATURES;
}

static int tdev_set_features(void *dev, uint64_t f)
{
	((struct tdev *)dev)->acked = f;
	return 0;
}

static void tdev_config_read(void *dev, uint32_t off, void *buf, uint32_t len)
{
	memcpy(buf, ((struct tdev *)dev)->cfg + off, len);
}

static void tdev_config_write(void *dev, uint32_t off, const void *buf,
			      uint32_t len)
{
}

/* Context: the back end's thread; the test serves the ring meanwhile. */
static int tdev_start_queue(void *dev, struct virtio_queue *q)
{
	struct tdev *d = dev;

	d->q[q->index] = q;
	d->starts[q->index]++;
	return 0;
}

static void tdev_stop_queue(void *dev, unsigned int index, bool cancel)
{
	struct tdev *d = dev;

	if (!d->q[index])
		return;
	d->q[index] = NULL;
	d->stops[index]++;
	d->cancelled[index] = cancel;
}

static const struct virtio_device_ops tdev_ops = {
	.device_id = 26,
	.config_size = CFG_SIZE,
	.features = tdev_features,
	.set_features = tdev_set_features,
	.config_read = tdev_config_read,
	.config_write = tdev_config_write,
	.start_queue = tdev_start_queue,
	.stop_queue = tdev_stop_queue,
};

struct be {
	char path[108];
	int lsock, stop_fd;
	pthread_t thread;
	struct vu_backend *b;
	struct tdev dev;
	int ret;	  /* vu_backend_serve()'s, for the last connection */
	int connections;  /* __atomic: served so far */
};

/* Serve one front end after another until the stop eventfd: then the
 * connection in service ends (vu_backend_serve() returns -ESHUTDOWN) and
 * its socket is closed, which is how a back end's death looks to the
 * front end. */
static void *be_main(void *arg)
{
	struct be *be = arg;

	for (;;) {
		struct pollfd p[2] = { { .fd = be->lsock, .events = POLLIN },
				       { .fd = be->stop_fd, .events = POLLIN } };
		int s;

		if (poll(p, 2, -1) < 0 || p[1].revents)
			return NULL;
		s = accept4(be->lsock, NULL, NULL, SOCK_CLOEXEC);
		if (s < 0)
			return NULL;
		be->ret = vu_backend_serve(be->b, s, be->stop_fd);
		close(s);
		__atomic_fetch_add(&be->connections, 1, __ATOMIC_SEQ_CST);
	}
}

static void fs_cfg(uint8_t *cfg, const char *tag, uint32_t nrq)
{
	memset(cfg, 0, CFG_SIZE);
	memcpy(cfg, tag, strlen(tag));
	memcpy(cfg + 36, &nrq, sizeof(nrq));
}

static void be_start(struct be *be, const char *tag, uint32_t nrq)
{
	struct vu_backend_params bp = { .ops = &tdev_ops, .dev = &be->dev,
					.num_queues = BE_NQ, .max_queue_size = 256,
					.name = "test" };
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	static int seq;

	memset(be, 0, sizeof(*be));
	fs_cfg(be->dev.cfg, tag, nrq);
	ck_assert_int_eq(vu_backend_create(&bp, &be->b), 0);
	snprintf(be->path, sizeof(be->path), "/tmp/check_vu_feb.%d.%d", getpid(), seq++);
	unlink(be->path);
	strcpy(a.sun_path, be->path);
	be->lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(be->lsock, 0);
	ck_assert_int_eq(bind(be->lsock, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(be->lsock, 1), 0);
	be->stop_fd = eventfd(0, EFD_CLOEXEC);
	ck_assert_int_ge(be->stop_fd, 0);
	ck_assert_int_eq(pthread_create(&be->thread, NULL, be_main, be), 0);
}

/* Kill the back end (it closes the connection it serves) and join it. */
static void be_stop(struct be *be)
{
	ck_assert_int_eq(eventfd_write(be->stop_fd, 1), 0);
	pthread_join(be->thread, NULL);
	close(be->lsock);
	close(be->stop_fd);
	unlink(be->path);
	vu_backend_destroy(be->b);
}

/* ---- the guest: RAM, rings, the transport's side of the queues ---------- */

#define NQ 2 /* rings the test starts */

static struct fake_guest g;
static struct fg_vq fvq[NQ];
static struct virtio_queue q[NQ];
static int needs_reset_calls; /* __atomic */

static void t_notify(struct virtio_queue *vq)
{
}

static void t_needs_reset(struct virtio_queue *vq, const char *why)
{
	__atomic_fetch_add(&needs_reset_calls, 1, __ATOMIC_SEQ_CST);
}

static const struct virtio_transport_ops t_ops = {
	.queue_notify = t_notify,
	.needs_reset = t_needs_reset,
};

static void guest_setup(void)
{
	ck_assert_int_eq(fg_init_memfd(&g, RAM), 0);
	g.mem.fd = g.fd; /* the memfd is what the front end shares */
	needs_reset_calls = 0;
}

static void guest_teardown(void)
{
	fg_destroy(&g);
}

/* The rings as the transport has them at DRIVER_OK: laid out, started,
 * each with a kick and a call eventfd. */
static void rings_setup(void)
{
	memset(q, 0, sizeof(q));
	for (unsigned int i = 0; i < NQ; i++) {
		ck_assert_int_eq(fg_vq_init(&g, &fvq[i], QSIZE, 0), 0);
		q[i].index = i;
		q[i].t_ops = &t_ops;
		q[i].enabled = true;
		q[i].vector = (uint16_t)i;
		q[i].kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		q[i].call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		ck_assert_int_ge(q[i].kick_fd, 0);
		ck_assert_int_ge(q[i].call_fd, 0);
		ck_assert_int_eq(fg_vq_attach(&fvq[i], &q[i].vq), 0);
	}
}

static void rings_teardown(void)
{
	for (unsigned int i = 0; i < NQ; i++) {
		close(q[i].kick_fd);
		close(q[i].call_fd);
		fg_vq_destroy(&fvq[i]);
	}
}

/* Wait for @fd to be readable (at most WAIT_MS) and drain it: true if it
 * was signalled. */
static bool signalled(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	eventfd_t v;

	if (poll(&p, 1, WAIT_MS) != 1)
		return false;
	return !eventfd_read(fd, &v) && v;
}

struct req {
	int head;
	uint64_t out, in; /* gpas */
};

/* The driver: a request of @out bytes and 16 bytes of room on ring @i,
 * published, the ring's kick eventfd signalled. */
static struct req drv_send(unsigned int i, const void *out, uint32_t len)
{
	struct req r = { .out = fg_alloc(&g, len, 8), .in = fg_alloc(&g, 16, 8) };
	struct fg_buf b[2] = { { r.out, len, false }, { r.in, 16, true } };

	ck_assert(r.out && r.in);
	memcpy(fg_ptr(&g, r.out, len), out, len);
	memset(fg_ptr(&g, r.in, 16), 0, 16);
	r.head = fg_vq_add(&fvq[i], b, 2, false);
	ck_assert_int_ge(r.head, 0);
	ck_assert(fg_vq_publish(&fvq[i]));
	ck_assert_int_eq(eventfd_write(q[i].kick_fd, 1), 0);
	return r;
}

/* The driver: the call eventfd of ring @i signalled, @r back with @len
 * bytes; returns its answer. */
static const void *drv_wait(unsigned int i, const struct req *r, uint32_t len)
{
	uint32_t id, got;

	ck_assert_msg(signalled(q[i].call_fd), "ring %u: no interrupt", i);
	ck_assert_int_eq(fg_vq_get_used(&fvq[i], &id, &got), 1);
	ck_assert_uint_eq(id, (uint32_t)r->head);
	ck_assert_uint_eq(got, len);
	return fg_ptr(&g, r->in, 16);
}

/*
 * The back end's device serves one request on ring @i, as its I/O thread
 * would: its copy of the kick eventfd wakes, the chain comes from its own
 * mapping of the ring, the answer is "ack:" and the request's first 4
 * bytes, and the interrupt goes through the back end's transport (its
 * copy of the call eventfd).
 */
static void dev_serve(struct tdev *d, unsigned int i, const struct req *r,
		      const char *expect)
{
	struct virtio_queue *bq = d->q[i];
	static struct virtq_chain c;
	char ans[8] = "ack:";

	ck_assert_ptr_nonnull(bq);
	ck_assert_int_ne(bq->kick_fd, q[i].kick_fd); /* passed, not shared */
	ck_assert_msg(signalled(bq->kick_fd), "ring %u: the kick did not arrive", i);
	ck_assert_int_eq(virtq_pop(&bq->vq, &c), 1);
	ck_assert_uint_eq(c.nr_out, 1);
	ck_assert_uint_eq(c.nr_in, 1);
	ck_assert_mem_eq(c.iov[0].iov_base, expect, strlen(expect));
	/* Its mapping, not ours. */
	ck_assert_ptr_ne(c.iov[0].iov_base, fg_ptr(&g, r->out, 4));
	memcpy(ans + 4, expect, 4);
	memcpy(c.iov[1].iov_base, ans, sizeof(ans));
	virtq_push(&bq->vq, c.head, sizeof(ans));
	ck_assert(virtq_should_notify(&bq->vq));
	virtio_queue_notify(bq);
}

/* One request through the back end on ring @i. */
static void round_trip(struct tdev *d, unsigned int i, const char *msg)
{
	struct req r = drv_send(i, msg, (uint32_t)strlen(msg));
	char want[8] = "ack:";

	dev_serve(d, i, &r, msg);
	memcpy(want + 4, msg, 4);
	ck_assert_mem_eq(drv_wait(i, &r, sizeof(want)), want, sizeof(want));
}

static uint64_t ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)(t.tv_sec - t0->tv_sec) * 1000 +
	       (uint64_t)((t.tv_nsec - t0->tv_nsec) / 1000000);
}

/* Wait for *@v to reach @want, at most WAIT_MS. */
static bool wait_for(const int *v, int want)
{
	for (int t = 0; t < WAIT_MS / 5; t++) {
		if (__atomic_load_n(v, __ATOMIC_SEQ_CST) >= want)
			return true;
		usleep(5000);
	}
	return false;
}

/* ---- the front end against the back end --------------------------------- */

#define FE_FEATURES (BIT(VIRTIO_F_VERSION_1) | BIT(VIRTIO_RING_F_EVENT_IDX) | \
		     BIT(VIRTIO_RING_F_INDIRECT_DESC))
#define PROTO_USED                                                          \
	(BIT(VHOST_USER_PROTOCOL_F_MQ) | BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK) | \
	 BIT(VHOST_USER_PROTOCOL_F_CONFIG))

static int dead_calls, orphan_calls;

static void on_dead(void *opaque)
{
	__atomic_fetch_add((int *)opaque, 1, __ATOMIC_SEQ_CST);
}

/* The front end's answer for the guest once the back end is gone. */
static uint32_t orphan(void *opaque, unsigned int queue,
		       const struct virtq_chain *c)
{
	__atomic_fetch_add(&orphan_calls, 1, __ATOMIC_SEQ_CST);
	if (c->nr_in != 1 || c->iov[c->nr_out].iov_len < 8)
		return 0;
	memcpy(c->iov[c->nr_out].iov_base, "orphan!", 8);
	return 8;
}

/* Set-up, the memory table, DRIVER_OK, requests both ways. */
static struct vu_fe *session_open(struct be *be)
{
	struct vu_fe_params p = { .path = be->path, .mem = &g.mem,
				  .features = FE_FEATURES, .num_queues = 8,
				  .timeout_ms = WAIT_MS, .name = "test fe",
				  .config_size = CFG_SIZE };
	uint64_t pat = fg_alloc(&g, 32, 8);
	const struct vu_mem_region *br;
	const uint8_t *cfg;
	struct vu_fe *fe;
	uint32_t len;
	uint8_t *bp;

	/* What the back end must find in "guest RAM". */
	memcpy(fg_ptr(&g, pat, 32), "written by the guest, 32 bytes.", 32);
	ck_assert_int_eq(vu_fe_open(&p, &fe), 0);
	ck_assert_uint_eq(vu_fe_features(fe),
			  BIT(VIRTIO_F_VERSION_1) | BIT(VIRTIO_RING_F_INDIRECT_DESC));
	ck_assert_uint_eq(vu_fe_protocol_features(fe), PROTO_USED);
	ck_assert_uint_eq(vu_fe_queue_num(fe), BE_NQ);
	cfg = vu_fe_config(fe, &len);
	ck_assert_ptr_nonnull(cfg);
	ck_assert_uint_eq(len, CFG_SIZE);
	ck_assert_mem_eq(cfg, be->dev.cfg, CFG_SIZE);

	/* The back end's view: owned, the same protocol features, the
	 * memfd mapped by itself at another address. */
	ck_assert(be->b->owner);
	ck_assert_uint_eq(be->b->acked_protocol, PROTO_USED);
	ck_assert_uint_eq(be->b->mem.n, 1);
	br = &be->b->mem.r[0];
	ck_assert_uint_eq(br->gpa, 0);
	ck_assert_uint_eq(br->size, RAM);
	ck_assert_uint_eq(br->uaddr, (uintptr_t)g.ram);
	ck_assert_ptr_ne(br->map, g.ram);
	bp = guest_mem_ptr(&be->b->mem.gm, pat, 32);
	ck_assert_ptr_nonnull(bp);
	ck_assert_ptr_ne(bp, fg_ptr(&g, pat, 32));
	ck_assert_mem_eq(bp, "written by the guest, 32 bytes.", 32);
	memcpy(bp, "back", 4); /* shared, not a copy: */
	ck_assert_mem_eq(fg_ptr(&g, pat, 4), "back", 4);
	return fe;
}

START_TEST(set_up_data_stop_restart_death)
{
	struct vu_fe_stats st;
	struct timespec t0;
	struct vu_fe *fe;
	struct req r;
	struct be be;

	be_start(&be, "hostshare", 1);
	fe = session_open(&be);
	rings_setup();
	/* The driver accepts what it was offered, and EVENT_IDX (not
	 * offered: dropped). */
	ck_assert_int_eq(vu_fe_start(fe, FE_FEATURES, q, NQ), 0);
	ck_assert_uint_eq(be.b->acked, BIT(VIRTIO_F_VERSION_1) |
					       BIT(VIRTIO_RING_F_INDIRECT_DESC) |
					       BIT(VHOST_USER_F_PROTOCOL_FEATURES));
	ck_assert_uint_eq(be.dev.acked, BIT(VIRTIO_F_VERSION_1) |
						BIT(VIRTIO_RING_F_INDIRECT_DESC));
	for (unsigned int i = 0; i < NQ; i++)
		ck_assert_uint_eq(be.dev.starts[i], 1);
	ck_assert_ptr_null(be.dev.q[NQ]); /* only the rings handed over */
	round_trip(&be.dev, 0, "zero");
	round_trip(&be.dev, 1, "one1");
	round_trip(&be.dev, 1, "one2");

	/* Stop: the back end stops each ring (letting it finish) and says
	 * where it stands; the front end keeps that for the restart. */
	ck_assert_uint_eq(q[1].vq.last_avail_idx, 0); /* the front end pops none */
	vu_fe_stop(fe);
	for (unsigned int i = 0; i < NQ; i++) {
		ck_assert_uint_eq(be.dev.stops[i], 1);
		ck_assert(!be.dev.cancelled[i]);
	}
	ck_assert_uint_eq(q[0].vq.last_avail_idx, 1);
	ck_assert_uint_eq(q[1].vq.last_avail_idx, 2);
	/* A request made while stopped waits for the restart, which resumes
	 * at the base carried over: this one, not an old one again. */
	r = drv_send(1, "one3", 4);
	ck_assert_int_eq(vu_fe_start(fe, FE_FEATURES, q, NQ), 0);
	ck_assert_uint_eq(be.dev.starts[1], 2);
	ck_assert_uint_eq(be.dev.q[1]->vq.last_avail_idx, 2);
	dev_serve(&be.dev, 1, &r, "one3");
	ck_assert_mem_eq(drv_wait(1, &r, 8), "ack:one3", 8);
	round_trip(&be.dev, 0, "zer2");

	/* Death: the back end closes the connection while the rings run.
	 * The watch thread reports it, the guest's next request gets the
	 * front end's own answer, nothing waits for the dead back end. */
	dead_calls = orphan_calls = 0;
	ck_assert_int_eq(vu_fe_watch(fe, on_dead, &dead_calls, orphan, NULL, NULL), 0);
	ck_assert_int_eq(eventfd_write(be.stop_fd, 1), 0);
	ck_assert_msg(wait_for(&dead_calls, 1), "the death was not noticed");
	ck_assert(vu_fe_broken(fe));
	ck_assert_int_eq(be.ret, -ESHUTDOWN);
	for (unsigned int i = 0; i < NQ; i++)
		ck_assert(be.dev.cancelled[i]); /* the back end let go of them */
	r = drv_send(1, "lost", 4);
	ck_assert_mem_eq(drv_wait(1, &r, 8), "orphan!", 8);
	ck_assert_int_eq(__atomic_load_n(&orphan_calls, __ATOMIC_SEQ_CST), 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	vu_fe_stop(fe);
	ck_assert_int_eq(vu_fe_start(fe, FE_FEATURES, q, NQ), -EPIPE);
	ck_assert_uint_lt(ms_since(&t0), 250);
	ck_assert_int_eq(__atomic_load_n(&dead_calls, __ATOMIC_SEQ_CST), 1);
	vu_fe_get_stats(fe, &st);
	ck_assert_uint_eq(st.disconnects, 1);
	ck_assert_uint_eq(st.starts, 2);
	ck_assert_uint_eq(st.timeouts, 0);
	ck_assert_uint_eq(st.orphaned, 1);
	vu_fe_close(fe);
	be_stop(&be);
	ck_assert_int_eq(be.connections, 1);
	rings_teardown();
}
END_TEST

/* ---- virtio-fs on the back end: CONFIG, death ------------------------- */

/* virtio-fs with tag @tag, 4 transport queues (3 request queues), on
 * @be. */
static int fs_create(struct be *be, const char *tag, struct virtio_fs **fs)
{
	struct virtio_fs_params fp = {
		.tag = tag, .socket = be->path, .mem = &g.mem, .num_queues = 4,
		.queue_size = QSIZE, .timeout_ms = WAIT_MS, .name = "fs test",
	};

	return virtio_fs_create(&fp, fs);
}

/* What the guest reads in @fs's config space. */
static void fs_guest_cfg(struct virtio_fs *fs, uint8_t *cfg)
{
	struct virtio_device vd;

	virtio_fs_virtio(fs, &vd);
	ck_assert_uint_eq(vd.ops->config_size, CFG_SIZE);
	vd.ops->config_read(vd.dev, 0, cfg, CFG_SIZE);
}

START_TEST(fs_tag_from_back_end)
{
	uint8_t cfg[CFG_SIZE], want[CFG_SIZE];
	struct virtio_fs *fs;
	struct be be;

	/* The back end names the same share, serves 4 queues but says 1
	 * request queue: the guest is told 1. */
	be_start(&be, "hostshare", 1);
	ck_assert_int_eq(fs_create(&be, "hostshare", &fs), 0);
	ck_assert_uint_eq(virtio_fs_request_queues(fs), 1);
	fs_guest_cfg(fs, cfg);
	ck_assert_mem_eq(cfg, be.dev.cfg, CFG_SIZE);
	virtio_fs_destroy(fs);
	/* Another tag: refused, nothing left behind. */
	ck_assert_int_eq(fs_create(&be, "guestshare", &fs), -EINVAL);
	ck_assert_ptr_null(fs);
	ck_assert_int_eq(fs_create(&be, "hostshar", &fs), -EINVAL);
	be_stop(&be);
	ck_assert_int_eq(be.connections, 3);

	/* No tag and no request-queue count: the device's own config. */
	be_start(&be, "", 0);
	ck_assert_int_eq(fs_create(&be, "mine", &fs), 0);
	ck_assert_uint_eq(virtio_fs_request_queues(fs), 3);
	fs_guest_cfg(fs, cfg);
	fs_cfg(want, "mine", 3);
	ck_assert_mem_eq(cfg, want, CFG_SIZE);
	virtio_fs_destroy(fs);
	be_stop(&be);
}
END_TEST

/* FUSE's headers: a request's first 16 bytes, the answer's 16. */
struct fuse_in16 {
	uint32_t len, opcode;
	uint64_t unique;
};

struct fuse_out16 {
	uint32_t len;
	int32_t error;
	uint64_t unique;
};

/* The back end dies under a started virtio-fs device: DEVICE_NEEDS_RESET,
 * and the guest's FUSE request gets EIO from the device itself. */
START_TEST(fs_back_end_death)
{
	struct fuse_in16 in = { .len = 40, .opcode = 1, .unique = 0x1234 };
	const struct fuse_out16 *out;
	struct virtio_device vd;
	struct virtio_fs *fs;
	struct req r;
	struct be be;

	be_start(&be, "hostshare", 1);
	ck_assert_int_eq(fs_create(&be, "hostshare", &fs), 0);
	virtio_fs_virtio(fs, &vd);
	rings_setup(); /* hiprio and one request queue */
	ck_assert_int_eq(vd.ops->set_features(vd.dev, BIT(VIRTIO_F_VERSION_1)), 0);
	ck_assert_int_eq(vd.ops->start(vd.dev, q, NQ), 0);
	ck_assert_uint_eq(be.dev.starts[1], 1);
	ck_assert_int_eq(virtio_fs_watch(fs, NULL, NULL), 0);
	ck_assert_int_eq(eventfd_write(be.stop_fd, 1), 0);
	ck_assert_msg(wait_for(&needs_reset_calls, 1), "no NEEDS_RESET");
	r = drv_send(1, &in, sizeof(in));
	out = drv_wait(1, &r, sizeof(*out));
	ck_assert_int_eq(out->error, -EIO);
	ck_assert_uint_eq(out->unique, 0x1234);
	ck_assert_uint_eq(out->len, sizeof(*out));
	vd.ops->stop(vd.dev);
	virtio_fs_unwatch(fs);
	virtio_fs_destroy(fs);
	be_stop(&be);
	rings_teardown();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vu_frontend_backend");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, guest_setup, guest_teardown);
	tcase_add_test(tc, set_up_data_stop_restart_death);
	tcase_add_test(tc, fs_tag_from_back_end);
	tcase_add_test(tc, fs_back_end_death);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
