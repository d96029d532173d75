/* SPDX-License-Identifier: MIT */
/*
 * The queue service (devices/virtio/vq-service.h) with a device of the
 * test's own, no virtio-blk and no PCI: what any device gets by declaring
 * its queues -- each queue served on the I/O thread it asked for, kicks
 * counted and served, one interrupt per batch, a broken ring latched into
 * NEEDS_RESET until the queue is reset, work left waiting retried without
 * a kick, work left ready (budget used) served again without a kick and
 * without a wait in between, a failed start undone on every queue, and a queue the device
 * fills (ops->fills) kept from steering the adaptive I/O-thread policy,
 * and the requests in service counted with the waiting ones in the depth
 * a kick reports to that policy.
 * The transport is a stub
 * (struct virtio_transport_ops) that counts notifications and resets.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <linux/virtio_ring.h>

#include "fake_guest.h"
#include "iothread.h"
#include "virtio/vq-service.h"

#define NQ 6
#define NIO 3
#define QSIZE 16

struct tdev {
	/* Behaviour, set by the test. */
	int process_ret;	/* returned by process() (after serving) */
	unsigned int retry_left; /* process() says VQS_RETRY this many times */
	bool hold;		/* process() pops, keeps the chains in service */
	unsigned int yield_left; /* then VQS_YIELD this many times */
	int fail_attach_q;	/* attach() of this queue fails; -1: none */
	/* Recorded (atomics: written on I/O threads). */
	unsigned int processed[NQ];
	unsigned int served[NQ];	/* chains popped and pushed */
	unsigned int attached[NQ], detached[NQ], quiesced[NQ];
	char thread[NQ][16];		/* name of the thread that served */
	/* The serving thread's stats.waits at the first VQS_YIELD and at
	 * the call that served after the yields. */
	uint64_t waits_at_yield, waits_at_serve;
	bool yielded;
};

struct tq {
	struct fg_vq drv;
	struct virtio_queue vq;
};

static struct fake_guest G;
static struct tq Q[NQ];
static struct iothread *IO[NIO];
static struct tdev D;
static struct vqs *S;
static unsigned int notifies[NQ], resets[NQ];

static void t_notify(struct virtio_queue *q)
{
	__atomic_add_fetch(&notifies[q->index], 1, __ATOMIC_SEQ_CST);
}

static void t_needs_reset(struct virtio_queue *q, const char *why)
{
	(void)why;
	__atomic_add_fetch(&resets[q->index], 1, __ATOMIC_SEQ_CST);
}

static const struct virtio_transport_ops t_ops = {
	.queue_notify = t_notify,
	.needs_reset = t_needs_reset,
};

/* Context: the queue's I/O thread.  Pops every chain, pushes it back. */
static int d_process(void *dev, struct vqs_queue *q)
{
	struct tdev *d = dev;
	unsigned int i = vqs_index(q);
	struct virtq *vq = vqs_virtq(q);
	struct virtq_chain c;
	bool pushed = false;

	__atomic_add_fetch(&d->processed[i], 1, __ATOMIC_SEQ_CST);
	pthread_getname_np(pthread_self(), d->thread[i], sizeof(d->thread[i]));
	if (d->process_ret < 0)
		return d->process_ret;
	if (__atomic_load_n(&d->retry_left, __ATOMIC_SEQ_CST)) {
		__atomic_sub_fetch(&d->retry_left, 1, __ATOMIC_SEQ_CST);
		return VQS_RETRY; /* serves nothing this round */
	}
	if (__atomic_load_n(&d->yield_left, __ATOMIC_SEQ_CST)) {
		struct iothread_stats st;

		iothread_get_stats(vqs_iothread(q), &st);
		if (!d->yielded)
			d->waits_at_yield = st.waits;
		d->yielded = true;
		__atomic_sub_fetch(&d->yield_left, 1, __ATOMIC_SEQ_CST);
		return VQS_YIELD; /* "used its budget": serves nothing */
	}
	if (d->yielded && !d->waits_at_serve) {
		struct iothread_stats st;

		iothread_get_stats(vqs_iothread(q), &st);
		d->waits_at_serve = st.waits + 1; /* + 1: set */
	}
	while (virtq_pop(vq, &c) > 0) {
		if (__atomic_load_n(&d->hold, __ATOMIC_SEQ_CST)) {
			__atomic_add_fetch(&d->served[i], 1, __ATOMIC_SEQ_CST);
			continue; /* in service until the queue stops */
		}
		virtq_push(vq, c.head, 0);
		pushed = true;
		__atomic_add_fetch(&d->served[i], 1, __ATOMIC_SEQ_CST);
	}
	if (pushed)
		vqs_pushed(q); /* the batch end decides the interrupt */
	return 0;
}

static int d_attach(void *dev, struct vqs_queue *q)
{
	struct tdev *d = dev;
	unsigned int i = vqs_index(q);

	if ((int)i == d->fail_attach_q)
		return -ENOMEM;
	__atomic_add_fetch(&d->attached[i], 1, __ATOMIC_SEQ_CST);
	return 0;
}

static void d_quiesce(void *dev, struct vqs_queue *q, bool cancel)
{
	(void)cancel;
	__atomic_add_fetch(&((struct tdev *)dev)->quiesced[vqs_index(q)], 1,
			   __ATOMIC_SEQ_CST);
}

static void d_detached(void *dev, struct vqs_queue *q)
{
	__atomic_add_fetch(&((struct tdev *)dev)->detached[vqs_index(q)], 1,
			   __ATOMIC_SEQ_CST);
}

/* Queues in pairs: 0,1 on thread 0; 2,3 on thread 1; 4,5 on thread 2. */
static unsigned int d_iothread_of(void *dev, unsigned int index,
				  unsigned int nr_iothreads)
{
	(void)dev;
	return (index / 2) % nr_iothreads;
}

/* Queue 1 holds buffers the device fills (as a NIC's receive queue). */
static bool d_fills(void *dev, unsigned int index)
{
	(void)dev;
	return index == 1;
}

static const struct vqs_ops d_ops = {
	.process = d_process,
	.attach = d_attach,
	.quiesce = d_quiesce,
	.detached = d_detached,
	.iothread_of = d_iothread_of,
	.fills = d_fills,
};

static void setup(void)
{
	memset(&D, 0, sizeof(D));
	memset(notifies, 0, sizeof(notifies));
	memset(resets, 0, sizeof(resets));
	D.fail_attach_q = -1;
	ck_assert_int_eq(fg_init(&G, 8ull << 20), 0);
	for (unsigned int i = 0; i < NIO; i++) {
		ck_assert_int_eq(iothread_create(i, 32, &IO[i]), 0);
		iothread_set_adaptive(IO[i], true);
		ck_assert_int_eq(iothread_start(IO[i]), 0);
	}
	for (unsigned int i = 0; i < NQ; i++) {
		struct tq *q = &Q[i];

		memset(q, 0, sizeof(*q));
		ck_assert_int_eq(fg_vq_init(&G, &q->drv, QSIZE,
					    1ull << VIRTIO_RING_F_EVENT_IDX), 0);
		ck_assert_int_eq(fg_vq_attach(&q->drv, &q->vq.vq), 0);
		q->vq.t_ops = &t_ops;
		q->vq.index = i;
		q->vq.enabled = true;
		q->vq.vector = (uint16_t)i;
		q->vq.kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		q->vq.call_fd = -1;
		ck_assert_int_ge(q->vq.kick_fd, 0);
	}
	ck_assert_int_eq(vqs_create(&(struct vqs_params){
					    .ops = &d_ops, .dev = &D,
					    .name = "test", .nr_queues = NQ,
					    .iothreads = IO, .nr_iothreads = NIO },
				    &S), 0);
}

static void teardown(void)
{
	vqs_destroy(S);
	for (unsigned int i = 0; i < NIO; i++)
		iothread_destroy(IO[i]);
	for (unsigned int i = 0; i < NQ; i++) {
		close(Q[i].vq.kick_fd);
		fg_vq_destroy(&Q[i].drv);
	}
	fg_destroy(&G);
}

static struct virtio_queue *queues(void)
{
	static struct virtio_queue qs[NQ];

	for (unsigned int i = 0; i < NQ; i++)
		qs[i] = Q[i].vq;
	return qs;
}

/* Make one chain available on queue @i and ring its doorbell. */
static void add_and_kick(unsigned int i, struct virtio_queue *vq)
{
	uint64_t gpa = fg_alloc(&G, 64, 8), one = 1;
	struct fg_buf b = { .gpa = gpa, .len = 64, .writable = true };

	ck_assert_int_ge(fg_vq_add(&Q[i].drv, &b, 1, false), 0);
	fg_vq_publish(&Q[i].drv);
	ck_assert_int_eq(write(vq->kick_fd, &one, sizeof(one)), sizeof(one));
}

/* Wait (bounded) until *@p >= @want. */
static bool wait_for(const unsigned int *p, unsigned int want)
{
	for (int ms = 0; ms < 5000; ms++) {
		if (__atomic_load_n(p, __ATOMIC_SEQ_CST) >= want)
			return true;
		usleep(1000);
	}
	return false;
}

START_TEST(queues_on_their_threads)
{
	struct virtio_queue *qs = queues();

	ck_assert_int_eq(vqs_start(S, qs, NQ), 0);
	for (unsigned int i = 0; i < NQ; i++) {
		struct vqs_queue_stats st;
		char want[16];

		ck_assert_uint_eq(D.attached[i], 1);
		add_and_kick(i, &qs[i]);
		ck_assert_msg(wait_for(&D.served[i], 1), "queue %u not served", i);
		ck_assert(wait_for(&notifies[i], 1));
		ck_assert_int_eq(vqs_queue_stats(S, i, &st), 0);
		ck_assert_uint_eq(st.iothread, i / 2);
		ck_assert(st.attached && st.started);
		ck_assert_uint_ge(st.kicks, 1);
		ck_assert_uint_eq(st.doorbells, 1);
		snprintf(want, sizeof(want), "vmm-io%u", i / 2);
		ck_assert_str_eq(D.thread[i], want);
		ck_assert_uint_eq(fg_vq_used_pending(&Q[i].drv), 1);
	}
	ck_assert_int_eq(vqs_queue_stats(S, NQ, &(struct vqs_queue_stats){ 0 }),
			 -ENOENT);
	vqs_stop(S);
	for (unsigned int i = 0; i < NQ; i++) {
		ck_assert_uint_eq(D.quiesced[i], 1);
		ck_assert_uint_eq(D.detached[i], 1);
		ck_assert_uint_eq(resets[i], 0);
	}
}
END_TEST

START_TEST(broken_ring_latched_until_reset)
{
	struct virtio_queue *qs = queues();
	unsigned int n;

	ck_assert_int_eq(vqs_start(S, qs, NQ), 0);
	D.process_ret = -EPROTO;
	add_and_kick(3, &qs[3]);
	ck_assert(wait_for(&resets[3], 1));
	n = __atomic_load_n(&D.processed[3], __ATOMIC_SEQ_CST);
	/* More doorbells: the queue is not served again, no second reset. */
	for (int k = 0; k < 5; k++)
		add_and_kick(3, &qs[3]);
	usleep(50 * 1000);
	ck_assert_uint_eq(__atomic_load_n(&D.processed[3], __ATOMIC_SEQ_CST), n);
	ck_assert_uint_eq(resets[3], 1);
	ck_assert_uint_eq(resets[2], 0);
	/* A reset (stop, start) serves it again. */
	vqs_stop(S);
	D.process_ret = 0;
	ck_assert_int_eq(vqs_start(S, qs, NQ), 0);
	ck_assert(wait_for(&D.served[3], 6)); /* at start: what was available */
	ck_assert_uint_eq(resets[3], 1);
	vqs_stop(S);
}
END_TEST

START_TEST(retry_without_kick)
{
	struct virtio_queue *qs = queues();
	uint64_t gpa = fg_alloc(&G, 64, 8), one = 1;
	struct fg_buf b = { .gpa = gpa, .len = 64, .writable = true };

	ck_assert_int_eq(vqs_start(S, qs, NQ), 0);
	D.retry_left = 3;
	ck_assert_int_ge(fg_vq_add(&Q[0].drv, &b, 1, false), 0);
	fg_vq_publish(&Q[0].drv);
	ck_assert_int_eq(write(qs[0].kick_fd, &one, sizeof(one)), sizeof(one));
	/* One doorbell; three rounds that could not serve; then served. */
	ck_assert(wait_for(&D.served[0], 1));
	ck_assert_uint_eq(D.retry_left, 0);
	ck_assert_uint_ge(D.processed[0], 1 + 4); /* the attach's, then 4 */
	{
		struct vqs_queue_stats st;

		ck_assert_int_eq(vqs_queue_stats(S, 0, &st), 0);
		ck_assert_uint_eq(st.doorbells, 1);
	}
	vqs_stop(S);
}
END_TEST

/* Budget used, more ready (VQS_YIELD): served again without a kick, and
 * without the rounds in between waiting (a retry's round may sleep 1 ms);
 * what that round pushed is signalled in the same round. */
START_TEST(yield_without_kick_or_wait)
{
	struct virtio_queue *qs = queues();

	ck_assert_int_eq(vqs_start(S, qs, NQ), 0);
	D.yield_left = 3;
	add_and_kick(0, &qs[0]);
	ck_assert(wait_for(&D.served[0], 1));
	ck_assert_uint_eq(D.yield_left, 0);
	ck_assert_uint_ge(D.processed[0], 1 + 4); /* the attach's, then 4 */
	ck_assert(D.waits_at_serve);
	ck_assert_uint_eq(D.waits_at_serve - 1, D.waits_at_yield);
	ck_assert(wait_for(&notifies[0], 1));
	vqs_stop(S);
}
END_TEST

START_TEST(failed_start_undone)
{
	struct virtio_queue *qs = queues();

	D.fail_attach_q = 4;
	ck_assert_int_eq(vqs_start(S, qs, NQ), -ENOMEM);
	for (unsigned int i = 0; i < NQ; i++) {
		struct vqs_queue_stats st;

		ck_assert_int_eq(vqs_queue_stats(S, i, &st), 0);
		ck_assert_msg(!st.attached, "queue %u left attached", i);
		/* Every queue that attached is taken down again; the one
		 * whose device attach failed cleaned up after itself. */
		ck_assert_uint_eq(D.detached[i], i == 4 ? 0 : 1);
	}
	D.fail_attach_q = -1;
	ck_assert_int_eq(vqs_start(S, qs, NQ), 0);
	vqs_stop(S);
}
END_TEST

START_TEST(one_queue_at_a_time)
{
	struct virtio_queue *qs = queues();

	ck_assert_int_eq(vqs_start_queue(S, &qs[5]), 0);
	ck_assert_int_eq(vqs_start_queue(S, &qs[5]), -EINVAL);
	add_and_kick(5, &qs[5]);
	ck_assert(wait_for(&D.served[5], 1));
	vqs_stop_queue(S, 5, false);
	ck_assert_uint_eq(D.detached[5], 1);
	ck_assert_uint_eq(D.attached[0], 0);
	vqs_stop_queue(S, 5, true); /* not started: nothing */
	vqs_stop_queue(S, NQ, true);
	ck_assert_uint_eq(D.detached[5], 1);
}
END_TEST

/* The driver takes back every used entry of queue @i (frees descriptors). */
static void reap(unsigned int i)
{
	uint32_t id, len;

	while (fg_vq_get_used(&Q[i].drv, &id, &len) == 1)
		;
}

/* Make @n chains available on queue @i at once and ring its doorbell. */
static void add_n_and_kick(unsigned int i, struct virtio_queue *vq, unsigned int n)
{
	uint64_t one = 1;

	for (unsigned int k = 0; k < n; k++) {
		struct fg_buf b = { .gpa = fg_alloc(&G, 64, 8), .len = 64,
				    .writable = true };

		ck_assert_int_ge(fg_vq_add(&Q[i].drv, &b, 1, false), 0);
	}
	fg_vq_publish(&Q[i].drv);
	ck_assert_int_eq(write(vq->kick_fd, &one, sizeof(one)), sizeof(one));
}

/* Policy changes of I/O thread 0 so far. */
static uint64_t switches0(void)
{
	struct iothread_stats st;

	iothread_get_stats(IO[0], &st);
	return st.sched_switches;
}

/* 18 lone requests on queue 0, each served before the next: thread 0
 * turns SCHED_OTHER (one switch).  Returns the requests served. */
static unsigned int lone_requests_on_queue0(struct virtio_queue *qs)
{
	unsigned int served = 0;

	for (unsigned int k = 0; k < 18; k++) {
		add_and_kick(0, &qs[0]);
		ck_assert(wait_for(&D.served[0], ++served));
		reap(0);
	}
	ck_assert_uint_eq(switches0(), 1);
	return served;
}

/* Thread 0 serves queue 0 (requests) and queue 1 (filled by the device).
 * Lone requests on queue 0 turn the adaptive thread SCHED_OTHER (one
 * switch); a whole refill on queue 1, whose buffers the device keeps
 * until it has something to fill them with (hold, as a NIC's RX), leaves
 * it so; a batch of requests on queue 0 switches it back. */
START_TEST(refills_do_not_steer_the_policy)
{
	struct virtio_queue *qs = queues();
	unsigned int served;

	ck_assert_int_eq(vqs_start(S, qs, NQ), 0);
	served = lone_requests_on_queue0(qs);
	__atomic_store_n(&D.hold, true, __ATOMIC_SEQ_CST);
	add_n_and_kick(1, &qs[1], 8);
	ck_assert(wait_for(&D.served[1], 8));
	ck_assert_uint_eq(switches0(), 1);
	add_n_and_kick(0, &qs[0], 8);
	ck_assert(wait_for(&D.served[0], served + 8));
	ck_assert_uint_eq(switches0(), 2);
	vqs_stop(S);
}
END_TEST

/* Thread 0 turned SCHED_OTHER by lone requests on queue 0; then the device
 * fills queue 1's buffers: one at a time (a reply to each lone request)
 * changes nothing, eight in one go (a burst of frames) is a batch: back to
 * SCHED_BATCH, though no kick found a deep queue. */
START_TEST(fills_in_batches_steer_the_policy)
{
	struct virtio_queue *qs = queues();

	unsigned int served;
	int t;

	ck_assert_int_eq(vqs_start(S, qs, NQ), 0);
	served = lone_requests_on_queue0(qs);
	for (unsigned int k = 1; k <= 3; k++) {
		add_n_and_kick(1, &qs[1], 1);
		ck_assert(wait_for(&D.served[1], k));
		reap(1);
	}
	/* One more lone request: thread 0 served it after the fills, so
	 * whatever they noted is in the count now. */
	add_and_kick(0, &qs[0]);
	ck_assert(wait_for(&D.served[0], ++served));
	reap(0);
	ck_assert_uint_eq(switches0(), 1);
	add_n_and_kick(1, &qs[1], 8);
	ck_assert(wait_for(&D.served[1], 3 + 8));
	/* Noted after the fills' process() call: waited for, bounded. */
	for (t = 0; t < 3000 && switches0() != 2; t++)
		usleep(1000);
	ck_assert_uint_eq(switches0(), 2);
	vqs_stop(S);
}
END_TEST

/* Thread 0 turned SCHED_OTHER by lone requests on queue 0; then requests
 * that stay in service (as a disk's in flight at a deep queue depth): each
 * kick finds one waiting, but the second finds another in service, a
 * depth of two: back to SCHED_BATCH.  Counting only the waiting ones, a
 * thread that serves every kick at once would never see the deep queue. */
START_TEST(requests_in_service_count_as_depth)
{
	struct virtio_queue *qs = queues();
	unsigned int served;

	ck_assert_int_eq(vqs_start(S, qs, NQ), 0);
	served = lone_requests_on_queue0(qs);
	__atomic_store_n(&D.hold, true, __ATOMIC_SEQ_CST);
	add_and_kick(0, &qs[0]);
	ck_assert(wait_for(&D.served[0], ++served));
	ck_assert_uint_eq(switches0(), 1); /* a depth of one */
	add_and_kick(0, &qs[0]);
	ck_assert(wait_for(&D.served[0], ++served));
	ck_assert_uint_eq(switches0(), 2);
	vqs_stop(S);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vq_service");
	TCase *tc = tcase_create("service");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, queues_on_their_threads);
	tcase_add_test(tc, broken_ring_latched_until_reset);
	tcase_add_test(tc, retry_without_kick);
	tcase_add_test(tc, yield_without_kick_or_wait);
	tcase_add_test(tc, failed_start_undone);
	tcase_add_test(tc, one_queue_at_a_time);
	tcase_add_test(tc, refills_do_not_steer_the_policy);
	tcase_add_test(tc, fills_in_batches_steer_the_policy);
	tcase_add_test(tc, requests_in_service_count_as_depth);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
