/* SPDX-License-Identifier: MIT */
/*
 * MSI-X message rewrites on a live virtio-pci device (vq-wiring.h, "MSI-X
 * rewrites"), KVM-free over tests/harness/fake_vpci: a rewrite of an
 * UNMASKED vector costs no routing update on the vCPU; until the route is
 * refreshed the vector's interrupts go out with KVM_SIGNAL_MSI and the live
 * message, each exactly once; the route is refreshed at the next unmask or
 * by the notifying thread after VPCI_LAZY_FLUSH_USES interrupts; the masked
 * path (one routing update at the unmask) is unchanged.
 */
#include <check.h>
#include <errno.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_ring.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "irq.h"
#include "memory.h"
#include "pci/msix.h"
#include "virtio/virtio-pci.h"

#include "fake_vdev.h"
#include "fake_vpci.h"

#define NQ 4
#define QSIZE 16
#define RAM_SIZE (4ull << 20)
#define RING_BASE 0x100000ull

/* ---- the device (tests/harness/fake_vdev): its stop can drain like an I/O
 * thread ------------------------------------------------------------------- */

#define FD_FEATURES \
	((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX))

/* ops->stop(): a second thread notifies every queue this many times while
 * the transport's lock is held, as a draining I/O thread does. */
static unsigned int stop_notifies;

static void *drain_thread(void *arg)
{
	struct fvd *fd = arg;

	for (unsigned int i = 0; i < stop_notifies; i++)
		for (unsigned int q = 0; q < fd->nr; q++)
			virtio_queue_notify(&fd->queues[q]);
	return NULL;
}

static void drain_on_stop(struct fvd *fd)
{
	pthread_t th;

	if (!stop_notifies)
		return;
	/* Blocking on the transport lock here would deadlock (the test
	 * times out): it must trylock. */
	ck_assert_int_eq(pthread_create(&th, NULL, drain_thread, fd), 0);
	pthread_join(th, NULL);
}

/* ---- machine ------------------------------------------------------------ */

static struct fv V;
static struct fv_kvm *kvm;
static struct guest_mem mem;
static void *ram;
static struct fvd fdev;

static void setup(void)
{
	struct vpci_params p;

	ram = aligned_alloc(4096, RAM_SIZE);
	ck_assert_ptr_nonnull(ram);
	memset(ram, 0, RAM_SIZE);
	guest_mem_init_buf(&mem, ram, RAM_SIZE);
	ck_assert_int_eq(fv_init(&V, 3, FV_MMIO_BASE, FV_MMIO_SIZE, &mem), 0);
	kvm = V.kvm;
	fvd_init(&fdev, FD_FEATURES);
	fdev.on_stop = drain_on_stop;
	stop_notifies = 0;
	p = fv_params(&V);
	p.ops = &fvd_ops;
	p.dev = &fdev;
	p.num_queues = NQ;
	p.max_queue_size = 256;
	p.ioeventfd_any_length = true;
	ck_assert_int_eq(fv_create(&V, &p), 0);
}

static void teardown(void)
{
	fv_destroy(&V);
	free(ram);
}

static uint64_t msg_addr(unsigned int v, unsigned int gen)
{
	return 0xfee00000ull | (uint64_t)((v + gen) & 0xff) << 12;
}

static uint32_t msg_data(unsigned int v, unsigned int gen)
{
	return 0x4000u + v + 0x100u * (gen & 0xffff);
}

#define rewrite(v, gen) fv_msix_write(&V, v, msg_addr(v, gen), msg_data(v, gen))
#define mask(v, m) fv_msix_mask(&V, v, m)

/* Bring-up as the Linux driver: vectors programmed under the function
 * mask, queue q on vector q + 1, DRIVER_OK (one routing update). */
static void drv_up(void)
{
	ck_assert_int_eq(fv_negotiate(&V, FD_FEATURES, NULL), 0);
	fv_msix_ctrl(&V, MSIX_CTRL_ENABLE | MSIX_CTRL_MASKALL);
	for (unsigned int v = 0; v <= NQ; v++) {
		rewrite(v, 0);
		mask(v, false);
	}
	fv_msix_ctrl(&V, MSIX_CTRL_ENABLE);
	FV_COMMON_WR(&V, MSIX, 0, 2);
	for (unsigned int q = 0; q < NQ; q++) {
		uint64_t base = RING_BASE + q * 0x1000ull;

		ck_assert_uint_eq(fv_queue_setup(&V, q, QSIZE, base, base + 0x400,
						 base + 0x800, (uint16_t)(q + 1)),
				  q + 1);
	}
	fv_status_add(&V, VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert(fv_status(&V) & VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert_uint_eq(kvm->routing_calls, 1);
}

/* Interrupts the irqfd of queue @q received (and consumes them). */
static uint64_t fired(unsigned int q)
{
	eventfd_t v;

	return eventfd_read(fdev.queues[q].call_fd, &v) ? 0 : v;
}

static int gsi_of(unsigned int q)
{
	return kvm->irqfd_gsi[fdev.queues[q].call_fd];
}

/* The route of queue @q's irqfd carries (@addr, @data). */
static bool route_is(unsigned int q, uint64_t addr, uint32_t data)
{
	int gsi = gsi_of(q);

	return gsi >= 0 && kvm->route_valid[gsi] && kvm->route_addr[gsi] == addr &&
	       kvm->route_data[gsi] == data;
}

static void sleep_past_interval(void)
{
	struct timespec ts = { 0, (long)(2 * VPCI_LAZY_FLUSH_INTERVAL_NS) };

	nanosleep(&ts, NULL);
}

/* ---- tests --------------------------------------------------------------- */

/*
 * 10,000 rewrites of an unmasked vector (addr_lo, addr_hi, data, as a guest
 * that does not mask): no routing update, no KVM call at all.  Before lazy
 * rewrites this was 20,000 KVM_SET_GSI_ROUTING (one per changed dword).
 * Then 10,000 rewrites each followed by an interrupt: each interrupt is
 * delivered once, with the message just written, and the I/O-side route
 * refreshes stay below one per VPCI_LAZY_FLUSH_USES interrupts.
 */
START_TEST(unmasked_rewrites_bounded)
{
	unsigned int routing, calls, msi;
	uint64_t irqfd = 0;
	struct vpci_stats st;

	drv_up();
	routing = kvm->routing_calls;
	calls = kvm->calls;
	for (unsigned int i = 1; i <= 10000; i++)
		rewrite(2, i);
	printf("msix_rewrite: 10000 unmasked rewrites: %u routing updates, "
	       "%u KVM calls\n", kvm->routing_calls - routing, kvm->calls - calls);
	ck_assert_uint_eq(kvm->routing_calls, routing);
	ck_assert_uint_eq(kvm->calls, calls);
	/* The route is stale; the interrupt goes out with the live message. */
	ck_assert(route_is(1, msg_addr(2, 0), msg_data(2, 0)));
	virtio_queue_notify(&fdev.queues[1]);
	ck_assert_uint_eq(kvm->msi_calls, 1);
	ck_assert_uint_eq(kvm->msi_addr, msg_addr(2, 10000));
	ck_assert_uint_eq(kvm->msi_data, msg_data(2, 10000));
	ck_assert_uint_eq(fired(1), 0);

	/* Interleaved with interrupts. */
	routing = kvm->routing_calls;
	msi = kvm->msi_calls;
	for (unsigned int i = 10001; i <= 20000; i++) {
		unsigned int m0 = kvm->msi_calls;
		uint64_t f;

		rewrite(2, i);
		virtio_queue_notify(&fdev.queues[1]);
		f = fired(1);
		/* Exactly once, with message i. */
		ck_assert_uint_eq((kvm->msi_calls - m0) + f, 1);
		if (f) {
			ck_assert(route_is(1, msg_addr(2, i), msg_data(2, i)));
			irqfd++;
		} else {
			ck_assert_uint_eq(kvm->msi_addr, msg_addr(2, i));
			ck_assert_uint_eq(kvm->msi_data, msg_data(2, i));
		}
	}
	printf("msix_rewrite: 10000 unmasked rewrites + interrupts: %u routing "
	       "updates, %u direct MSIs, %llu through the irqfd\n",
	       kvm->routing_calls - routing, kvm->msi_calls - msi,
	       (unsigned long long)irqfd);
	ck_assert_uint_le(kvm->routing_calls - routing,
			  10000 / VPCI_LAZY_FLUSH_USES + 1);
	vpci_get_stats(V.t, &st);
	ck_assert_uint_eq(st.interrupts, 10001);
	ck_assert_uint_eq(st.interrupts_direct, kvm->msi_calls);
	ck_assert_uint_eq(st.route_flushes, st.route_flushes_lazy);
	ck_assert_uint_eq(st.route_flushes, kvm->routing_calls - 1);
	ck_assert(!(fv_status(&V) & VIRTIO_CONFIG_S_NEEDS_RESET));
	/* Other vectors were never touched. */
	for (unsigned int q = 0; q < NQ; q++)
		if (q != 1)
			ck_assert(route_is(q, msg_addr(q + 1, 0), msg_data(q + 1, 0)));
}
END_TEST

/*
 * One rewrite (a guest moving an interrupt without masking): interrupts go
 * direct with the new message; after VPCI_LAZY_FLUSH_USES of them the
 * notifier refreshes the route (one update), and the next ones go through
 * the irqfd again.
 */
START_TEST(dirty_vector_exactly_once_then_refreshed)
{
	struct vpci_stats st;

	drv_up();
	rewrite(3, 1);
	ck_assert_uint_eq(kvm->calls, 1 + 2 * NQ); /* DRIVER_OK's only */
	/* Only the data dword changes next: the live message is used. */
	fv_mw(&V, V.table + 3 * MSIX_ENTRY_SIZE + MSIX_ENTRY_DATA, 0x7777, 4);
	virtio_queue_notify(&fdev.queues[2]);
	ck_assert_uint_eq(kvm->msi_calls, 1);
	ck_assert_uint_eq(kvm->msi_addr, msg_addr(3, 1));
	ck_assert_uint_eq(kvm->msi_data, 0x7777);
	ck_assert_uint_eq(fired(2), 0);
	ck_assert_uint_eq(kvm->routing_calls, 1);

	for (unsigned int i = 1; i < VPCI_LAZY_FLUSH_USES; i++) {
		virtio_queue_notify(&fdev.queues[2]);
		ck_assert_uint_eq(kvm->msi_calls, i + 1);
	}
	/* The VPCI_LAZY_FLUSH_USES-th interrupt refreshed the route. */
	ck_assert_uint_eq(kvm->routing_calls, 2);
	ck_assert(route_is(2, msg_addr(3, 1), 0x7777));
	ck_assert_uint_eq(fired(2), 0);
	virtio_queue_notify(&fdev.queues[2]);
	ck_assert_uint_eq(fired(2), 1);
	ck_assert_uint_eq(kvm->msi_calls, VPCI_LAZY_FLUSH_USES);
	vpci_get_stats(V.t, &st);
	ck_assert_uint_eq(st.interrupts, VPCI_LAZY_FLUSH_USES + 1);
	ck_assert_uint_eq(st.interrupts_direct, VPCI_LAZY_FLUSH_USES);
	ck_assert_uint_eq(st.route_flushes_lazy, 1);

	/* Rate limit: a second refresh within the interval waits. */
	rewrite(3, 2);
	for (unsigned int i = 0; i < VPCI_LAZY_FLUSH_USES; i++)
		virtio_queue_notify(&fdev.queues[2]);
	if (kvm->routing_calls == 2) { /* the interval had not passed */
		sleep_past_interval();
		virtio_queue_notify(&fdev.queues[2]);
	}
	ck_assert_uint_eq(kvm->routing_calls, 3);
	ck_assert(route_is(2, msg_addr(3, 2), msg_data(3, 2)));
	ck_assert_uint_eq(kvm->msi_addr, msg_addr(3, 2));
}
END_TEST

/* The masked path is unchanged: rewrites while masked cost nothing, the
 * unmask one routing update; what was raised meanwhile stays pending and
 * is delivered once, through the irqfd, after the update. */
START_TEST(masked_path_unchanged)
{
	unsigned int calls;

	drv_up();
	calls = kvm->calls;
	mask(2, true);
	for (unsigned int i = 1; i <= 1000; i++)
		rewrite(2, i);
	virtio_queue_notify(&fdev.queues[1]);
	virtio_queue_notify(&fdev.queues[1]);
	ck_assert(fv_pba_bit(&V, 2));
	ck_assert_uint_eq(kvm->calls, calls);
	mask(2, false);
	ck_assert_uint_eq(kvm->routing_calls, 2);
	ck_assert_uint_eq(kvm->calls, calls + 1);
	ck_assert(route_is(1, msg_addr(2, 1000), msg_data(2, 1000)));
	ck_assert_uint_eq(fired(1), 1);
	ck_assert(!fv_pba_bit(&V, 2));
	ck_assert_uint_eq(kvm->msi_calls, 0);

	/* Function mask: every vector rewritten, one update at the clear. */
	fv_msix_ctrl(&V, MSIX_CTRL_ENABLE | MSIX_CTRL_MASKALL);
	for (unsigned int v = 1; v <= NQ; v++)
		rewrite(v, 7);
	virtio_queue_notify(&fdev.queues[3]);
	ck_assert_uint_eq(fired(3), 0);
	fv_msix_ctrl(&V, MSIX_CTRL_ENABLE);
	ck_assert_uint_eq(kvm->routing_calls, 3);
	for (unsigned int q = 0; q < NQ; q++)
		ck_assert(route_is(q, msg_addr(q + 1, 7), msg_data(q + 1, 7)));
	ck_assert_uint_eq(fired(3), 1);
	ck_assert_uint_eq(kvm->msi_calls, 0);

	/* An unmasked rewrite is flushed by the next unmask of any vector,
	 * in the same transaction. */
	rewrite(4, 8);
	ck_assert_uint_eq(kvm->routing_calls, 3);
	mask(1, true);
	rewrite(1, 8);
	mask(1, false);
	ck_assert_uint_eq(kvm->routing_calls, 4);
	ck_assert(route_is(0, msg_addr(1, 8), msg_data(1, 8)));
	ck_assert(route_is(3, msg_addr(4, 8), msg_data(4, 8)));
	virtio_queue_notify(&fdev.queues[3]);
	ck_assert_uint_eq(fired(3), 1);
	ck_assert_uint_eq(kvm->msi_calls, 0);
}
END_TEST

/* Rewritten unmasked, then masked with an interrupt pending: the unmask
 * flushes and delivers it once through the refreshed route.  If KVM
 * refuses the update: NEEDS_RESET, and the pending interrupt still goes
 * out once, direct, with the live message. */
START_TEST(pending_on_dirty_vector)
{
	unsigned int routing;

	drv_up();
	rewrite(2, 1);
	mask(2, true);
	virtio_queue_notify(&fdev.queues[1]);
	rewrite(2, 2);
	ck_assert(fv_pba_bit(&V, 2));
	mask(2, false);
	ck_assert_uint_eq(kvm->routing_calls, 2);
	ck_assert(route_is(1, msg_addr(2, 2), msg_data(2, 2)));
	ck_assert_uint_eq(fired(1), 1);
	ck_assert_uint_eq(kvm->msi_calls, 0);

	rewrite(2, 3);
	mask(2, true);
	virtio_queue_notify(&fdev.queues[1]);
	kvm->fail_at = kvm->calls + 1;
	mask(2, false);
	kvm->fail_at = 0;
	routing = kvm->routing_calls; /* + the rollback's restore */
	ck_assert(fv_status(&V) & VIRTIO_CONFIG_S_NEEDS_RESET);
	ck_assert(!fv_pba_bit(&V, 2));
	ck_assert_uint_eq(fired(1), 0);
	/* The config interrupt (NEEDS_RESET) and the queue's, direct. */
	ck_assert_uint_eq(kvm->msi_calls, 2);
	ck_assert_uint_eq(kvm->msi_addr, msg_addr(2, 3));
	ck_assert_uint_eq(kvm->msi_data, msg_data(2, 3));
	/* No refresh attempts from the notifier after the failure. */
	for (unsigned int i = 0; i < 4 * VPCI_LAZY_FLUSH_USES; i++)
		virtio_queue_notify(&fdev.queues[1]);
	ck_assert_uint_eq(kvm->msi_calls, 2 + 4 * VPCI_LAZY_FLUSH_USES);
	ck_assert_uint_eq(kvm->routing_calls, routing);
	FV_COMMON_WR(&V, STATUS, 0, 1);
	ck_assert_uint_eq(kvm->live_irqfd, 0);
}
END_TEST

/* A device reset while a vector is dirty: ops->stop() runs with the
 * transport locked and waits for a thread that keeps notifying (as a
 * draining I/O thread does); that thread must not block on the lock. */
START_TEST(stop_while_dirty_no_deadlock)
{
	drv_up();
	for (unsigned int v = 1; v <= NQ; v++)
		rewrite(v, 1);
	stop_notifies = 4 * VPCI_LAZY_FLUSH_USES;
	FV_COMMON_WR(&V, STATUS, 0, 1);
	ck_assert_uint_eq(fdev.stop_calls, 1);
	ck_assert_uint_eq(kvm->msi_calls, NQ * 4 * VPCI_LAZY_FLUSH_USES);
	ck_assert_uint_eq(kvm->live_irqfd, 0);
	ck_assert_uint_eq(kvm->nr_msi, 0);
	/* Up again: routes from the current table, nothing dirty. */
	stop_notifies = 0;
	kvm->routing_calls = 0;
	drv_up();
	for (unsigned int q = 0; q < NQ; q++)
		ck_assert(route_is(q, msg_addr(q + 1, 0), msg_data(q + 1, 0)));
}
END_TEST

/* An I/O thread interrupting while the vCPU rewrites the unmasked vector:
 * every interrupt is delivered exactly once (irqfd or direct), whatever
 * the interleaving with the rewrites and the notifier's own refreshes. */
struct stress {
	struct virtio_queue *q;
	unsigned int iters;
	bool done;
};

static void *stress_io(void *arg)
{
	struct stress *s = arg;

	for (unsigned int i = 0; i < s->iters; i++)
		virtio_queue_notify(s->q);
	__atomic_store_n(&s->done, true, __ATOMIC_RELEASE);
	return NULL;
}

START_TEST(concurrent_rewrites_exactly_once)
{
	struct stress s = { 0 };
	struct vpci_stats st;
	unsigned int routing, msi, gen = 0;
	uint64_t irqfd;
	pthread_t th;

	drv_up();
	routing = fv_kvm_get(kvm, &kvm->routing_calls);
	s.q = &fdev.queues[0];
	s.iters = 100000;
	ck_assert_int_eq(pthread_create(&th, NULL, stress_io, &s), 0);
	/* Rewrite for as long as the interrupts flow. */
	while (gen < 1000 || !__atomic_load_n(&s.done, __ATOMIC_ACQUIRE)) {
		gen++;
		rewrite(1, gen);
	}
	pthread_join(th, NULL);
	msi = fv_kvm_get(kvm, &kvm->msi_calls);
	irqfd = fired(0);
	vpci_get_stats(V.t, &st);
	printf("msix_rewrite: 100000 interrupts racing %u unmasked rewrites: "
	       "%llu irqfd + %u direct, %u routing updates (%llu lazy)\n",
	       gen, (unsigned long long)irqfd, msi,
	       fv_kvm_get(kvm, &kvm->routing_calls) - routing,
	       (unsigned long long)st.route_flushes_lazy);
	ck_assert_uint_eq(irqfd + msi, s.iters);
	ck_assert_uint_eq(st.interrupts, s.iters);
	ck_assert_uint_le(st.route_flushes_lazy,
			  s.iters / VPCI_LAZY_FLUSH_USES + 1);
	ck_assert(!(fv_status(&V) & VIRTIO_CONFIG_S_NEEDS_RESET));
	/* A mask/unmask brings the route up to date. */
	mask(1, true);
	mask(1, false);
	ck_assert(route_is(0, msg_addr(1, gen), msg_data(1, gen)));
	virtio_queue_notify(s.q);
	ck_assert_uint_eq(fired(0), 1);
}
END_TEST

static Suite *msix_rewrite_suite(void)
{
	Suite *s = suite_create("msix_rewrite");
	TCase *tc = tcase_create("lazy");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, unmasked_rewrites_bounded);
	tcase_add_test(tc, dirty_vector_exactly_once_then_refreshed);
	tcase_add_test(tc, masked_path_unchanged);
	tcase_add_test(tc, pending_on_dirty_vector);
	tcase_add_test(tc, stop_while_dirty_no_deadlock);
	tcase_add_test(tc, concurrent_rewrites_exactly_once);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(msix_rewrite_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
