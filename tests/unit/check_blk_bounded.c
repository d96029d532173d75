/* SPDX-License-Identifier: MIT */
/*
 * Bounded work per request and bounded resets/stops (issue 13, item 4),
 * KVM-free:
 *
 *  - the device offers SIZE_MAX, and seg_max * size_max fits under
 *    VBLK_MAX_REQ_BYTES for every queue size: a driver that honours both
 *    (Linux does) never builds a request over the cap;
 *  - a read or write whose descriptors alias the same guest pages up to
 *    hundreds of times guest RAM completes with VIRTIO_BLK_S_IOERR without
 *    any I/O; a request of exactly the cap runs;
 *  - on the threaded data path, with writes stuck on a backend that never
 *    drains (a pipe nobody reads, standing for a hung NFS server or a
 *    dead disk), a device reset and a stop (vpci_quiesce(), what
 *    vmm_stop() runs) return: the writes are cancelled and complete with
 *    IOERR, none acknowledged; the device works again after the reset;
 *  - reset_stop_time prints (asserts nothing about) how long a reset and a
 *    stop take with the worst requests a guest can have in flight on a
 *    slow backend (a pipe drained at 512 MiB/s).
 */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/virtio_blk.h>
#include <linux/virtio_ring.h>

#include "blk/blk-engine.h"
#include "blk/vblk.h"
#include "blk_rig.h"
#include "fake_guest.h"
#include "test_clock.h"

#define WAIT_MS 10000
#define SECTOR 512u
#define MIB (1ull << 20)

/* ---- vblk level: the cap --------------------------------------------- */

struct count_engine {
	struct blk_engine base;
	struct blk_engine *inner;
	unsigned int submits;
};

static int count_submit(struct blk_engine *e, struct vblk_req *req)
{
	struct count_engine *c = (struct count_engine *)e;

	c->submits++;
	return blk_engine_submit(c->inner, req);
}

static const struct blk_engine_ops count_ops = { .name = "count",
						 .submit = count_submit };

#define QSIZE 256 /* seg_max 254 */
#define VRAM (8 * MIB)
#define VIMG (512 * MIB) /* sparse */

static struct fake_guest g;
static struct fg_vq fvq;
static struct virtq vq;
static struct vblk *blk;
static struct count_engine ceng = { .base = { &count_ops } };
static int img = -1;

static void vsetup(void)
{
	struct vblk_options o = { .num_queues = 1, .queue_size = QSIZE };

	img = fg_tmp_image(VIMG);
	ck_assert_int_ge(img, 0);
	o.fd = img;
	ck_assert_int_eq(vblk_open(&o, &blk), 0);
	ck_assert_int_eq(vblk_set_driver_features(blk, vblk_device_features(blk)), 0);
	ck_assert_int_eq(blk_sync_engine_create(&ceng.inner), 0);
	ceng.submits = 0;
	ck_assert_int_eq(fg_init(&g, VRAM), 0);
	ck_assert_int_eq(fg_vq_init(&g, &fvq, QSIZE, 1ull << VIRTIO_RING_F_INDIRECT_DESC), 0);
	ck_assert_int_eq(fg_vq_attach(&fvq, &vq), 0);
}

static void vteardown(void)
{
	fg_vq_destroy(&fvq);
	fg_destroy(&g);
	blk_engine_destroy(ceng.inner);
	vblk_close(blk);
	close(img);
}

START_TEST(size_max_for_every_queue_size)
{
	int fd = fg_tmp_image(1 << 20);

	ck_assert_int_ge(fd, 0);
	for (unsigned int qsz = 4; qsz <= VIRTQ_MAX_SIZE; qsz *= 2) {
		struct vblk_options o = { .fd = fd, .num_queues = 1,
					  .queue_size = (uint16_t)qsz,
					  .flags = VBLK_OPT_NO_LOCK };
		struct virtio_blk_config c;
		struct vblk *b;
		uint32_t size_max, seg_max;

		ck_assert_int_eq(vblk_open(&o, &b), 0);
		ck_assert(vblk_device_features(b) & (1ull << VIRTIO_BLK_F_SIZE_MAX));
		ck_assert(vblk_device_features(b) & (1ull << VIRTIO_BLK_F_SEG_MAX));
		ck_assert_int_eq(vblk_config_read(b, 0, &c, sizeof(c)), 0);
		size_max = le32toh(c.size_max);
		seg_max = le32toh(c.seg_max);
		/* What the header promises (queue size - 2 segments) ... */
		ck_assert_uint_eq(seg_max, qsz - 2);
		/* ... of at least a page each (Linux's minimum), page-sized
		 * multiples ... */
		ck_assert_uint_ge(size_max, 4096);
		ck_assert_uint_eq(size_max % 4096, 0);
		/* ... and all of them fit under the cap: */
		ck_assert_uint_le((uint64_t)seg_max * size_max, VBLK_MAX_REQ_BYTES);
		/* ... as tightly as the page granule allows. */
		ck_assert_uint_gt((uint64_t)seg_max * (size_max + 4096),
				  VBLK_MAX_REQ_BYTES);
		vblk_close(b);
	}
	close(fd);
}
END_TEST

/*
 * An indirect request of @nseg data descriptors of @seglen bytes, all at
 * guest address @gpa (aliasing), then one of @extra bytes (0: none).
 * Returns its status; *@used_len the used length.
 */
static uint8_t alias_req(uint32_t type, uint64_t gpa, unsigned int nseg,
			 uint32_t seglen, uint32_t extra, uint32_t *used_len)
{
	struct fg_buf d[QSIZE];
	struct fg_blk_req r;
	bool notify = false;
	uint32_t id;
	unsigned int n = 0;

	for (unsigned int i = 0; i < nseg; i++)
		d[n++] = (struct fg_buf){ gpa, seglen, type == VIRTIO_BLK_T_IN };
	if (extra)
		d[n++] = (struct fg_buf){ gpa, extra, type == VIRTIO_BLK_T_IN };
	ck_assert_int_eq(fg_blk_add(&fvq, type, 0, d, n, true, &r), 0);
	fg_vq_publish(&fvq);
	ck_assert_int_eq(vblk_process_queue(blk, 0, &vq, &ceng.base, &notify), 1);
	ck_assert(!vblk_queue_broken(blk, 0));
	ck_assert_int_eq(fg_vq_get_used(&fvq, &id, used_len), 1);
	ck_assert_uint_eq(id, (uint32_t)r.head);
	return fg_blk_status(&g, &r);
}

static bool all_bytes(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* 254 descriptors of 1 MiB over the same guest MiB: 254 MiB from an 8 MiB
 * guest.  Refused, nothing read or written. */
START_TEST(aliasing_request_over_cap)
{
	uint64_t gpa = fg_alloc(&g, MIB, 4096);
	uint8_t *p = fg_ptr(&g, gpa, MIB);
	uint8_t back[4096];
	uint32_t len;
	struct vblk_queue_stats st;

	ck_assert_uint_ne(gpa, 0);
	memset(p, 0xee, MIB);
	ck_assert_uint_eq(alias_req(VIRTIO_BLK_T_IN, gpa, 254, MIB, 0, &len),
			  VIRTIO_BLK_S_IOERR);
	ck_assert_uint_eq(len, 1);
	ck_assert(all_bytes(p, MIB, 0xee));

	memset(p, 0x77, MIB);
	ck_assert_uint_eq(alias_req(VIRTIO_BLK_T_OUT, gpa, 254, MIB, 0, &len),
			  VIRTIO_BLK_S_IOERR);
	ck_assert_uint_eq(len, 1);
	for (uint64_t off = 0; off < 254 * MIB; off += 16 * MIB) {
		ck_assert_int_eq(pread(img, back, sizeof(back), (off_t)off), 4096);
		ck_assert(all_bytes(back, sizeof(back), 0));
	}

	/* One sector over the cap. */
	ck_assert_uint_eq(alias_req(VIRTIO_BLK_T_IN, gpa, 4, MIB, SECTOR, &len),
			  VIRTIO_BLK_S_IOERR);
	ck_assert_uint_eq(ceng.submits, 0);
	ck_assert_int_eq(vblk_queue_get_stats(blk, 0, &st), 0);
	ck_assert_uint_eq(st.io_errors, 3);
	ck_assert_uint_eq(st.bytes_read + st.bytes_written, 0);
}
END_TEST

/* Exactly the cap, as four aliasing MiBs: executed. */
START_TEST(request_at_cap)
{
	uint64_t gpa = fg_alloc(&g, MIB, 4096);
	uint8_t back[4096];
	uint32_t len;

	ck_assert_uint_ne(gpa, 0);
	ck_assert_uint_eq(VBLK_MAX_REQ_BYTES, 4 * MIB);
	memset(fg_ptr(&g, gpa, MIB), 0x42, MIB);
	ck_assert_uint_eq(alias_req(VIRTIO_BLK_T_OUT, gpa, 4, MIB, 0, &len),
			  VIRTIO_BLK_S_OK);
	ck_assert_uint_eq(len, 1);
	ck_assert_int_eq(pread(img, back, sizeof(back), (off_t)(4 * MIB - 4096)), 4096);
	ck_assert(all_bytes(back, sizeof(back), 0x42));
	ck_assert_uint_eq(alias_req(VIRTIO_BLK_T_IN, gpa, 4, MIB, 0, &len),
			  VIRTIO_BLK_S_OK);
	ck_assert_uint_eq(len, 4 * MIB + 1);
	ck_assert_uint_eq(ceng.submits, 2);
}
END_TEST

/* ---- the threaded data path on a pipe ---------------------------------- */

static struct br R;
static int pipe_rd = -1;

/* The disk's image fd becomes the write end of a pipe of @pipe_size bytes:
 * a backend exactly as fast as whoever reads pipe_rd.  Before the first
 * request, so that the engine registers the pipe. */
static void pipe_backend(unsigned int pipe_size)
{
	int p[2];

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	ck_assert_int_ge(fcntl(p[1], F_SETPIPE_SZ, pipe_size), (int)pipe_size);
	ck_assert_int_ge(dup2(p[1], disk_fd(vblk_disk(br_blk(&R)))), 0);
	close(p[1]);
	pipe_rd = p[0];
}

static void rig(uint16_t queue_size, uint64_t img_size, unsigned int pipe_size)
{
	struct br_opts o = { .nq = 2, .nio = 1, .queue_size = queue_size,
			     .img_size = img_size, .sparse = true };

	ck_assert_int_eq(br_up(&R, &o), 0);
	pipe_backend(pipe_size);
}

static void rig_down(void)
{
	br_down(&R);
	if (pipe_rd >= 0)
		close(pipe_rd);
	pipe_rd = -1;
}

/* Reads the pipe at up to @rate bytes/s (0: as fast as it can). */
struct sink {
	pthread_t t;
	uint64_t rate;
	uint64_t bytes; /* atomic */
	bool stop;	/* atomic */
};

static void *sink_main(void *arg)
{
	struct sink *s = arg;
	static char buf[1 << 20];
	double t0 = test_now_ms_f();

	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		struct pollfd p = { .fd = pipe_rd, .events = POLLIN };
		uint64_t done = __atomic_load_n(&s->bytes, __ATOMIC_RELAXED);
		ssize_t n;

		if (s->rate) {
			double due = t0 + (double)done * 1e3 / (double)s->rate;
			double now = test_now_ms_f();

			if (due > now) {
				usleep((useconds_t)((due - now) * 1e3));
				continue;
			}
		}
		if (poll(&p, 1, 10) != 1)
			continue;
		n = read(pipe_rd, buf, s->rate ? MIN(sizeof(buf), s->rate / 100) : sizeof(buf));
		if (n > 0)
			__atomic_fetch_add(&s->bytes, (uint64_t)n, __ATOMIC_RELAXED);
	}
	/* What the backend took but the reader had not reached yet. */
	for (;;) {
		struct pollfd p = { .fd = pipe_rd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 0) != 1)
			break;
		n = read(pipe_rd, buf, sizeof(buf));
		if (n <= 0)
			break;
		__atomic_fetch_add(&s->bytes, (uint64_t)n, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void sink_start(struct sink *s, uint64_t rate)
{
	memset(s, 0, sizeof(*s));
	s->rate = rate;
	ck_assert_int_eq(pthread_create(&s->t, NULL, sink_main, s), 0);
}

static uint64_t sink_stop(struct sink *s)
{
	__atomic_store_n(&s->stop, true, __ATOMIC_RELAXED);
	pthread_join(s->t, NULL);
	return s->bytes;
}

/*
 * Add @n writes on queue 0, each of @nseg descriptors of @seglen bytes over
 * one buffer (aliasing when nseg > 1).  Heads/status addresses in @reqs.
 */
static void add_writes(struct fg_blk_req *reqs, unsigned int n, unsigned int nseg,
		       uint32_t seglen)
{
	uint64_t gpa = fg_alloc(&R.g, seglen, 4096);
	struct fg_buf *d = calloc(nseg, sizeof(*d));

	ck_assert_uint_ne(gpa, 0);
	ck_assert_ptr_nonnull(d);
	memset(fg_ptr(&R.g, gpa, seglen), 0x61, seglen);
	for (unsigned int i = 0; i < nseg; i++)
		d[i] = (struct fg_buf){ gpa, seglen, false };
	for (unsigned int i = 0; i < n; i++)
		ck_assert_int_eq(fg_blk_add(&R.q[0].vq, VIRTIO_BLK_T_OUT, 0, d, nseg,
					    true, &reqs[i]), 0);
	free(d);
	br_publish(&R, 0);
}

/* Every one of @n requests came back once; returns how many were OK
 * (the rest IOERR: anything else fails). */
static unsigned int collect(struct fg_blk_req *reqs, unsigned int n)
{
	uint32_t *ids = calloc(n, sizeof(*ids));
	unsigned int ok = 0;

	ck_assert_ptr_nonnull(ids);
	ck_assert_uint_eq(br_wait_used(&R, 0, ids, NULL, n, WAIT_MS), n);
	for (unsigned int i = 0; i < n; i++) {
		uint8_t st = fg_blk_status(&R.g, &reqs[i]);

		ck_assert_msg(st == VIRTIO_BLK_S_OK || st == VIRTIO_BLK_S_IOERR,
			      "request %u: status 0x%02x", i, st);
		ok += st == VIRTIO_BLK_S_OK;
	}
	free(ids);
	return ok;
}

static struct vblk_queue_stats qstats(void)
{
	struct vblk_queue_stats st;

	ck_assert_int_eq(vblk_queue_get_stats(br_blk(&R), 0, &st), 0);
	return st;
}

enum stuck_how { BY_RESET, BY_STOP };

static void stuck_writes(enum stuck_how how)
{
	enum { N = 8, LEN = 65536 };
	struct fg_blk_req reqs[N];
	struct sink s;
	struct vblk_queue_stats st;

	rig(128, 4 * MIB, 4096);
	add_writes(reqs, N, 1, LEN);
	ck_assert_int_eq(br_wait_popped(&R, 0, WAIT_MS), 0);
	usleep(20 * 1000); /* let them get stuck on the full pipe */
	ck_assert_uint_eq(fg_vq_used_pending(&R.q[0].vq), 0);

	/* Neither waits for the pipe: before, both hung for good. */
	if (how == BY_RESET)
		br_reset(&R);
	else
		vpci_quiesce(R.v.t);
	ck_assert_uint_eq(collect(reqs, N), 0); /* none acknowledged */
	st = qstats();
	ck_assert_uint_eq(st.cancelled, N);
	ck_assert_uint_eq(st.io_errors, N);
	ck_assert_uint_eq(st.bytes_written, 0);
	if (how == BY_STOP) {
		rig_down();
		return;
	}

	/* The device works again (the engine is no longer cancelling). */
	ck_assert_int_eq(br_drv_up(&R), 0);
	sink_start(&s, 0);
	add_writes(reqs, 1, 1, LEN);
	ck_assert_uint_eq(collect(reqs, 1), 1);
	/* The pipe got it (after what the cancelled first write had put in). */
	ck_assert_uint_ge(sink_stop(&s), LEN);
	ck_assert_uint_eq(qstats().bytes_written, LEN);
	rig_down();
}

START_TEST(reset_cancels_stuck_writes)
{
	stuck_writes(BY_RESET);
}
END_TEST

START_TEST(stop_cancels_stuck_writes)
{
	stuck_writes(BY_STOP);
}
END_TEST

/*
 * Worst case in flight on a slow backend, timed (printed, not asserted):
 *  (a) 2 writes of 254 aliasing descriptors of 8 MiB (2032 MiB each, from
 *      a 32 MiB guest): refused at parse since the cap, so nothing to wait
 *      for; before, 4 GiB to push through the backend;
 *  (b) 120 writes of exactly the cap (480 MiB in flight), cancelled.
 * Each against a reset, then a stop.
 */
static double timed_case(unsigned int n, unsigned int nseg, uint32_t seglen,
			 bool stop, unsigned int *ok, uint64_t *sunk)
{
	struct fg_blk_req *reqs = calloc(n, sizeof(*reqs));
	struct sink s;
	double t0, dt;

	ck_assert_ptr_nonnull(reqs);
	rig(256, 4096 * MIB, 1 << 20);
	sink_start(&s, 512 * MIB);
	add_writes(reqs, n, nseg, seglen);
	/* Popped: in flight (or refused at parse). */
	ck_assert_int_eq(br_wait_popped(&R, 0, WAIT_MS), 0);
	usleep(50 * 1000);
	t0 = test_now_ms_f();
	if (stop)
		vpci_quiesce(R.v.t);
	else
		br_reset(&R);
	dt = test_now_ms_f() - t0;
	*ok = collect(reqs, n);
	*sunk = sink_stop(&s);
	/* What was acknowledged went through the backend. */
	ck_assert_uint_ge(*sunk, (uint64_t)*ok * nseg * seglen);
	rig_down();
	free(reqs);
	return dt;
}

START_TEST(reset_stop_time)
{
	static const struct {
		const char *what;
		unsigned int n, nseg;
		uint32_t seglen;
	} c[] = {
		{ "2 x 254 aliasing 8 MiB descriptors (2 x 2032 MiB)", 2, 254, 8 * MIB },
		{ "120 x 4 MiB (4 aliasing 1 MiB descriptors)", 120, 4, MIB },
	};

	for (unsigned int i = 0; i < 2; i++) {
		for (int stop = 0; stop < 2; stop++) {
			unsigned int ok;
			uint64_t sunk;
			double ms = timed_case(c[i].n, c[i].nseg, c[i].seglen, stop,
					       &ok, &sunk);

			printf("MEASURE %s with %s in flight on a 512 MiB/s backend: "
			       "%.1f ms (%u of %u completed OK, %llu MiB reached the "
			       "backend)\n", stop ? "stop" : "reset", c[i].what, ms, ok,
			       c[i].n, (unsigned long long)(sunk / MIB));
			fflush(stdout);
		}
	}
}
END_TEST

static Suite *bounded_suite(void)
{
	Suite *s = suite_create("blk-bounded");
	TCase *tv = tcase_create("request cap");
	TCase *tr = tcase_create("cancel on reset and stop");
	TCase *tt = tcase_create("timing");

	tcase_add_checked_fixture(tv, vsetup, vteardown);
	tcase_add_test(tv, size_max_for_every_queue_size);
	tcase_add_test(tv, aliasing_request_over_cap);
	tcase_add_test(tv, request_at_cap);
	suite_add_tcase(s, tv);

	tcase_set_timeout(tr, 60);
	tcase_add_test(tr, reset_cancels_stuck_writes);
	tcase_add_test(tr, stop_cancels_stuck_writes);
	suite_add_tcase(s, tr);

	/* Fast since the cap and the cancellation; about 20 s before. */
	tcase_set_timeout(tt, 120);
	tcase_add_test(tt, reset_stop_time);
	suite_add_tcase(s, tt);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(bounded_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
