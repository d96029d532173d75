/* SPDX-License-Identifier: MIT */
/*
 * No lost kick with EVENT_IDX when a device drains a ring with plain
 * virtq_pop() calls (no virtq_disable_notify()/virtq_enable_notify()
 * loop: virtio-net, vsock, console do so) and then sleeps until the next
 * kick.  A driver thread and a device thread on one ring at once, the
 * driver deciding each kick like virtqueue_kick_prepare() (avail->idx,
 * virtio_mb(), avail_event).  The device's last store of avail_event and
 * its final read of avail->idx are a store then a load: without a full
 * barrier between them (the CPU's store buffer lets the load pass), the
 * device can see the ring empty while the driver sees the old avail_event
 * and skips the kick, and both then wait for ever.  Before virtq_pop()
 * re-checked, this test lost a kick within 0.1-2 s on a 2-core x86
 * machine, in 9 runs of 9.  (Found looking into issue 28's stream stall,
 * which it is not: that one happens in the rig's single-CPU L1.)
 *
 * The check is exact, not a timeout: the driver records the last index it
 * has finished deciding about (after its kick, if any); a device that
 * found the ring empty, got no kick since it last looked, and sees a
 * decided index past what it consumed has lost a kick.
 */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "fake_guest.h"
#include "virtio/virtqueue.h"

#define RAM_SIZE (4u << 20)
#define F_EVENT (1ull << VIRTIO_RING_F_EVENT_IDX)
/* Handoffs per run, and a wall-clock cap so a slow shared machine ends it
 * early (the race is tried less then, never reported falsely). */
#define HANDOFFS 2000000u
#define RUN_NS (3ull * 1000000000ull)

static struct fake_guest g;
static struct fg_vq fvq;
static struct virtq vq;
static struct fg_buf buf;

/* Shared by the two threads (seq-cst atomics: the test's own ordering). */
static unsigned int kicks;     /* driver's kicks (the "eventfd") */
static unsigned int decided;   /* avail->idx whose kick decision is done */
static bool stop;
/* Device thread's results. */
static unsigned int lost, served, pop_errors;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *device(void *arg)
{
	struct virtq_chain *ch = malloc(sizeof(*ch));

	(void)arg;
	if (!ch) {
		pop_errors++;
		__atomic_store_n(&stop, true, __ATOMIC_SEQ_CST);
		return NULL;
	}
	while (!__atomic_load_n(&stop, __ATOMIC_SEQ_CST)) {
		/* Like queue_kick(): the eventfd read before serving. */
		unsigned int k0 = __atomic_load_n(&kicks, __ATOMIC_SEQ_CST);
		int r;

		while ((r = virtq_pop(&vq, ch)) > 0) {
			virtq_push(&vq, ch->head, 0);
			/* Relaxed, one writer: no locked instruction (a full
			 * barrier on x86) between the pops, as in a device. */
			__atomic_store_n(&served, served + 1, __ATOMIC_RELAXED);
		}
		if (r < 0) {
			pop_errors++;
			break;
		}
		/* Empty: sleep until a kick. */
		while (__atomic_load_n(&kicks, __ATOMIC_SEQ_CST) == k0) {
			uint16_t d;

			if (__atomic_load_n(&stop, __ATOMIC_SEQ_CST))
				goto out;
			d = (uint16_t)__atomic_load_n(&decided, __ATOMIC_SEQ_CST);
			/* Past what was consumed (@decided may also lag behind
			 * it: the driver stores it after its kick decision).
			 * Read after @decided: a kick for it is counted by now. */
			if ((int16_t)(d - vq.last_avail_idx) > 0 &&
			    __atomic_load_n(&kicks, __ATOMIC_SEQ_CST) == k0) {
				lost++;
				__atomic_store_n(&stop, true, __ATOMIC_SEQ_CST);
				goto out;
			}
			sched_yield();
		}
	}
out:
	free(ch);
	return NULL;
}

START_TEST(no_lost_kick)
{
	uint64_t end = now_ns() + RUN_NS;
	unsigned int added = 0;
	pthread_t dev;

	ck_assert_int_eq(fg_init(&g, RAM_SIZE), 0);
	ck_assert_int_eq(fg_vq_init(&g, &fvq, 256, F_EVENT), 0);
	ck_assert_int_eq(fg_vq_attach(&fvq, &vq), 0);
	buf = (struct fg_buf){ fg_alloc(&g, 64, 8), 64, false };
	ck_assert_int_eq(pthread_create(&dev, NULL, device, NULL), 0);

	while (added < HANDOFFS && !__atomic_load_n(&stop, __ATOMIC_SEQ_CST)) {
		uint32_t id, len;

		while (fg_vq_get_used(&fvq, &id, &len) > 0)
			;
		if (!fvq.num_free) {
			sched_yield();
			continue;
		}
		/* One entry per publish: the most kick decisions. */
		ck_assert_int_ge(fg_vq_add(&fvq, &buf, 1, false), 0);
		if (fg_vq_publish(&fvq))
			__atomic_add_fetch(&kicks, 1, __ATOMIC_SEQ_CST);
		__atomic_store_n(&decided, fvq.avail_idx, __ATOMIC_SEQ_CST);
		added++;
		/* A varying pause: publishes land at every point of the
		 * device's pass, its last pop among them. */
		for (unsigned int i = (added * 2654435761u) >> 24; i; i--)
			__asm__ volatile("" ::: "memory");
		if (!(added & 1023) && now_ns() > end)
			break;
	}
	/* Let the device drain what it was kicked for, then stop it. */
	while (!__atomic_load_n(&stop, __ATOMIC_SEQ_CST) &&
	       __atomic_load_n(&served, __ATOMIC_SEQ_CST) != added)
		sched_yield();
	__atomic_store_n(&stop, true, __ATOMIC_SEQ_CST);
	ck_assert_int_eq(pthread_join(dev, NULL), 0);
	ck_assert_uint_eq(pop_errors, 0);
	ck_assert_msg(lost == 0, "lost kick after %u of %u handoffs (%u kicks)",
		      served, added, kicks);
	ck_assert_uint_eq(served, added);
	fg_vq_destroy(&fvq);
	fg_destroy(&g);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vq_kick_race");
	TCase *tc = tcase_create("event_idx");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, no_lost_kick);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
