/* SPDX-License-Identifier: MIT */
/*
 * Doorbells and wake-ups are counted apart (struct vmm_disk_stats
 * .doorbells vs .total.kicks): every guest notification that reaches the
 * device is a doorbell -- through KVM's ioeventfd or, when KVM did not
 * catch the write, forwarded by the transport's MMIO handler -- while the
 * I/O thread may serve several of them in one wake-up.  KVM-free: the
 * simulated driver on the real transport, device and I/O thread
 * (tests/harness/blk_rig.h).
 */
#include <check.h>
#include <linux/virtio_blk.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "blk_rig.h"
#include "test_clock.h"

#define WAIT_MS 10000.0

static struct virtio_blk_queue_stats qstats(struct br *r)
{
	struct virtio_blk_queue_stats st;

	ck_assert_int_eq(virtio_blk_queue_stats(r->dev, 0, &st), 0);
	return st;
}

/* Add and publish (no doorbell) a 4 KiB read of @sector on queue 0. */
static void add_read(struct br *r, uint64_t sector)
{
	struct fg_buf d = { fg_alloc(&r->g, 4096, 4096), 4096, true };
	struct fg_blk_req req;

	ck_assert_uint_ne(d.gpa, 0);
	ck_assert_int_eq(fg_blk_add(&r->q[0].vq, VIRTIO_BLK_T_IN, sector, &d, 1,
				    false, &req), 0);
	fg_vq_publish(&r->q[0].vq);
}

static int nop(void *opaque)
{
	(void)opaque;
	return 0;
}

/* Wait until queue 0's used index is @n, then until the I/O thread has
 * finished the rounds that got it there (its counters are final). */
static void wait_used_idx(struct br *r, uint16_t n)
{
	double deadline = test_now_ms_f() + WAIT_MS;

	while (fg_vq_used_idx(&r->q[0].vq) != n) {
		ck_assert_msg(test_now_ms_f() < deadline, "used index %u, want %u",
			      fg_vq_used_idx(&r->q[0].vq), n);
		usleep(100);
	}
	for (unsigned int i = 0; i < 3; i++)
		iothread_call_sync(br_queue_io(r, 0), nop, NULL);
}

/* Holds the I/O thread inside a call until the test writes @release. */
struct hold {
	struct br *r;
	int release;
	pthread_t th;
};

static int hold_fn(void *opaque)
{
	eventfd_t v;

	return eventfd_read(((struct hold *)opaque)->release, &v);
}

static void *hold_thread(void *opaque)
{
	struct hold *h = opaque;

	iothread_call_sync(br_queue_io(h->r, 0), hold_fn, h);
	return NULL;
}

START_TEST(doorbells_vs_wakeups)
{
	struct br_opts o = { .queue_size = 64 };
	struct virtio_blk_queue_stats st0, st;
	struct hold h;
	struct br R;

	ck_assert_int_eq(br_up(&R, &o), 0);
	/* One doorbell, one request. */
	add_read(&R, 8);
	br_kick(&R, 0);
	wait_used_idx(&R, 1);
	st0 = qstats(&R);
	ck_assert_uint_eq(st0.svc.doorbells, 1);
	ck_assert_uint_eq(st0.svc.kicks, 1);

	/* Seven doorbells while the I/O thread is busy elsewhere: all
	 * counted, however few wake-ups serve them. */
	h.r = &R;
	h.release = eventfd(0, EFD_CLOEXEC);
	ck_assert_int_ge(h.release, 0);
	ck_assert_int_eq(pthread_create(&h.th, NULL, hold_thread, &h), 0);
	for (unsigned int i = 0; i < 7; i++) {
		add_read(&R, 16 + 8 * i);
		br_kick(&R, 0);
	}
	ck_assert_int_eq(eventfd_write(h.release, 1), 0);
	pthread_join(h.th, NULL);
	close(h.release);
	wait_used_idx(&R, 8);
	st = qstats(&R);
	printf("doorbells: 7 doorbells while busy: %llu wake-ups\n",
	       (unsigned long long)(st.svc.kicks - st0.svc.kicks));
	ck_assert_uint_eq(st.svc.doorbells - st0.svc.doorbells, 7);
	ck_assert_uint_ge(st.svc.kicks - st0.svc.kicks, 1);
	ck_assert_uint_le(st.svc.kicks - st0.svc.kicks, 7);
	ck_assert_uint_eq(st.blk.reqs[VBLK_STAT_IN], 8);

	/* A notify write KVM did not catch (here: any MMIO write to the
	 * notify area reaches the transport) is forwarded: a doorbell too. */
	add_read(&R, 200);
	fv_mw(&R.v, R.v.notify, 0, 2);
	wait_used_idx(&R, 9);
	st0 = st;
	st = qstats(&R);
	ck_assert_uint_eq(st.svc.doorbells - st0.svc.doorbells, 1);
	ck_assert_uint_eq(st.blk.reqs[VBLK_STAT_IN], 9);
	br_down(&R);
}
END_TEST

/* A doorbell rung while the queue is stopped (bus mastering off) is
 * counted once the device runs again, with the request it announced. */
START_TEST(doorbell_while_stopped)
{
	struct br_opts o = { .queue_size = 64 };
	struct virtio_blk_queue_stats st;
	struct br R;

	ck_assert_int_eq(br_up(&R, &o), 0);
	fv_cfg_wr(&R.v, PCI_CFG_COMMAND, PCI_CMD_MEM, 2); /* no MASTER */
	add_read(&R, 8);
	br_kick(&R, 0);
	br_kick(&R, 0);
	for (unsigned int i = 0; i < 3; i++)
		iothread_call_sync(br_queue_io(&R, 0), nop, NULL);
	ck_assert_uint_eq(qstats(&R).svc.doorbells, 0);
	fv_cfg_wr(&R.v, PCI_CFG_COMMAND, PCI_CMD_MEM | PCI_CMD_MASTER, 2);
	wait_used_idx(&R, 1);
	add_read(&R, 16);
	br_kick(&R, 0);
	wait_used_idx(&R, 2);
	st = qstats(&R);
	ck_assert_uint_eq(st.svc.doorbells, 3);
	ck_assert_uint_eq(st.blk.reqs[VBLK_STAT_IN], 2);
	br_down(&R);
}
END_TEST

static Suite *doorbells_suite(void)
{
	Suite *s = suite_create("doorbells");
	TCase *tc = tcase_create("doorbells");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, doorbells_vs_wakeups);
	tcase_add_test(tc, doorbell_while_stopped);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(doorbells_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
