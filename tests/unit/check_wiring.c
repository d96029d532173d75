/*
 * The batched wiring transaction: one KVM_SET_GSI_ROUTING per commit, one
 * call per fd, and a complete rollback when any step fails (a fake KVM
 * records state and fails on demand).
 */
#include <check.h>
#include <errno.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>

#include "irq.h"
#include "x86/irqchip.h"

#define MAX_FDS 4096

/* What the fake KVM currently has installed. */
struct fake_kvm {
	unsigned int calls, fail_at; /* fail the fail_at-th call (1-based) */
	unsigned int routing_calls;
	unsigned int nr_routes, nr_msi;
	bool ioeventfd[MAX_FDS];
	uint64_t ioeventfd_addr[MAX_FDS];
	int irqfd_gsi[MAX_FDS]; /* -1: none */
	unsigned int live_ioeventfds, live_irqfds;
	unsigned int live_zones; /* coalesced MMIO zones */
};

static int fake_ioctl(void *opaque, int fd, unsigned long req, void *arg)
{
	struct fake_kvm *k = opaque;

	(void)fd;
	if (++k->calls == k->fail_at)
		return -ENOSPC;
	if (req == KVM_SET_GSI_ROUTING) {
		struct kvm_irq_routing *r = arg;

		k->routing_calls++;
		k->nr_routes = r->nr;
		k->nr_msi = 0;
		for (unsigned int i = 0; i < r->nr; i++)
			if (r->entries[i].type == KVM_IRQ_ROUTING_MSI)
				k->nr_msi++;
		return 0;
	}
	if (req == KVM_IRQFD) {
		struct kvm_irqfd *a = arg;

		if (a->flags & KVM_IRQFD_FLAG_DEASSIGN) {
			ck_assert_int_ne(k->irqfd_gsi[a->fd], -1);
			k->irqfd_gsi[a->fd] = -1;
			k->live_irqfds--;
		} else {
			ck_assert_int_eq(k->irqfd_gsi[a->fd], -1);
			k->irqfd_gsi[a->fd] = (int)a->gsi;
			k->live_irqfds++;
		}
		return 0;
	}
	if (req == KVM_IOEVENTFD) {
		struct kvm_ioeventfd *a = arg;

		if (a->flags & KVM_IOEVENTFD_FLAG_DEASSIGN) {
			ck_assert(k->ioeventfd[a->fd]);
			k->ioeventfd[a->fd] = false;
			k->live_ioeventfds--;
		} else {
			ck_assert(!k->ioeventfd[a->fd]);
			k->ioeventfd[a->fd] = true;
			k->ioeventfd_addr[a->fd] = a->addr;
			k->live_ioeventfds++;
		}
		return 0;
	}
	if (req == KVM_REGISTER_COALESCED_MMIO) {
		k->live_zones++;
		return 0;
	}
	if (req == KVM_UNREGISTER_COALESCED_MMIO) {
		ck_assert_uint_gt(k->live_zones, 0);
		k->live_zones--;
		return 0;
	}
	return -ENOTTY;
}

static void fake_init(struct fake_kvm *k)
{
	memset(k, 0, sizeof(*k));
	for (int i = 0; i < MAX_FDS; i++)
		k->irqfd_gsi[i] = -1;
}

/* Stage what a device with @nq queues does at DRIVER_OK: per queue one MSI
 * route + irqfd + ioeventfd (fake fd numbers: 100+q and 2000+q). */
static void stage_device(struct wiring_txn *t, struct vm_irq *irq,
			 unsigned int nq, uint32_t *gsis, bool assign)
{
	wiring_begin(t, irq);
	for (unsigned int q = 0; q < nq; q++) {
		if (assign)
			wiring_route(t, gsis[q], true, 0xfee00000 | (q << 12), 0x4000 | q, 0);
		wiring_irqfd(t, 100 + (int)q, gsis[q], assign);
		wiring_ioeventfd(t, 2000 + (int)q, 0xe0000000 + q * 4, 0, false, assign);
		if (!assign)
			wiring_route(t, gsis[q], false, 0, 0, 0);
	}
}

START_TEST(one_routing_call_per_commit)
{
	static const unsigned int sizes[] = { 1, 4, 16, 256, 1000 };

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		unsigned int nq = sizes[s];
		struct fake_kvm k;
		struct vm_irq *irq;
		struct wiring_txn t;
		struct irq_stats st;
		uint32_t gsis[1024];

		fake_init(&k);
		ck_assert_int_eq(irq_create(3, x86_irq_platform(), fake_ioctl, &k, &irq), 0);
		for (unsigned int q = 0; q < nq; q++)
			ck_assert_int_eq(irq_gsi_alloc(irq, &gsis[q]), 0);
		stage_device(&t, irq, nq, gsis, true);
		ck_assert_int_eq(wiring_commit(&t), 0);
		ck_assert_uint_eq(k.routing_calls, 1);
		ck_assert_uint_eq(k.calls, 1 + 2 * nq);
		ck_assert_uint_eq(k.nr_msi, nq);
		ck_assert_uint_eq(k.nr_routes, 40 + nq); /* 24 IOAPIC + 16 PIC */
		ck_assert_uint_eq(k.live_irqfds, nq);
		ck_assert_uint_eq(k.live_ioeventfds, nq);
		irq_get_stats(irq, &st);
		ck_assert_uint_eq(st.last_ioctls, 1 + 2 * nq);
		ck_assert_uint_eq(st.set_gsi_routing, 1);
		ck_assert_uint_eq(st.msi_routes, nq);

		/* Teardown is one transaction too. */
		stage_device(&t, irq, nq, gsis, false);
		ck_assert_int_eq(wiring_commit(&t), 0);
		ck_assert_uint_eq(k.routing_calls, 2);
		ck_assert_uint_eq(k.nr_msi, 0);
		ck_assert_uint_eq(k.live_irqfds, 0);
		ck_assert_uint_eq(k.live_ioeventfds, 0);
		irq_destroy(irq);
	}
}
END_TEST

/* Fail each call of the commit in turn: nothing may be left behind. */
START_TEST(rollback_at_every_step)
{
	const unsigned int nq = 8, total = 1 + 2 * nq;

	for (unsigned int fail = 1; fail <= total; fail++) {
		struct fake_kvm k;
		struct vm_irq *irq;
		struct wiring_txn t;
		struct irq_stats st;
		uint32_t gsis[8];

		fake_init(&k);
		ck_assert_int_eq(irq_create(3, x86_irq_platform(), fake_ioctl, &k, &irq), 0);
		for (unsigned int q = 0; q < nq; q++)
			ck_assert_int_eq(irq_gsi_alloc(irq, &gsis[q]), 0);
		k.fail_at = fail;
		stage_device(&t, irq, nq, gsis, true);
		ck_assert_int_eq(wiring_commit(&t), -ENOSPC);
		ck_assert_uint_eq(k.live_irqfds, 0);
		ck_assert_uint_eq(k.live_ioeventfds, 0);
		ck_assert_uint_eq(k.nr_msi, 0); /* table restored (or never changed) */
		irq_get_stats(irq, &st);
		ck_assert_uint_eq(st.failed_commits, 1);

		/* The same device can be wired afterwards. */
		k.fail_at = 0;
		stage_device(&t, irq, nq, gsis, true);
		ck_assert_int_eq(wiring_commit(&t), 0);
		ck_assert_uint_eq(k.live_irqfds, nq);
		ck_assert_uint_eq(k.nr_msi, nq);
		irq_destroy(irq);
	}
}
END_TEST

/* A failing teardown is rolled back too: the device stays fully wired. */
START_TEST(rollback_teardown)
{
	const unsigned int nq = 4, total = 1 + 2 * nq;

	for (unsigned int fail = 1; fail <= total; fail++) {
		struct fake_kvm k;
		struct vm_irq *irq;
		struct wiring_txn t;
		uint32_t gsis[4];

		fake_init(&k);
		ck_assert_int_eq(irq_create(3, x86_irq_platform(), fake_ioctl, &k, &irq), 0);
		for (unsigned int q = 0; q < nq; q++)
			ck_assert_int_eq(irq_gsi_alloc(irq, &gsis[q]), 0);
		stage_device(&t, irq, nq, gsis, true);
		ck_assert_int_eq(wiring_commit(&t), 0);
		k.fail_at = k.calls + fail;
		stage_device(&t, irq, nq, gsis, false);
		ck_assert_int_eq(wiring_commit(&t), -ENOSPC);
		ck_assert_uint_eq(k.live_irqfds, nq);
		ck_assert_uint_eq(k.live_ioeventfds, nq);
		ck_assert_uint_eq(k.nr_msi, nq);
		irq_destroy(irq);
	}
}
END_TEST

START_TEST(unchanged_routes_skip_the_ioctl)
{
	struct fake_kvm k;
	struct vm_irq *irq;
	struct wiring_txn t;
	uint32_t g;

	fake_init(&k);
	ck_assert_int_eq(irq_create(3, x86_irq_platform(), fake_ioctl, &k, &irq), 0);
	ck_assert_int_eq(irq_gsi_alloc(irq, &g), 0);
	wiring_begin(&t, irq);
	wiring_route(&t, g, true, 0xfee00000, 0x41, 0);
	ck_assert_int_eq(wiring_commit(&t), 0);
	wiring_begin(&t, irq);
	wiring_route(&t, g, true, 0xfee00000, 0x41, 0); /* same again */
	ck_assert_int_eq(wiring_commit(&t), 0);
	ck_assert_uint_eq(k.routing_calls, 1);
	/* Many table writes coalesced into one commit: still one call. */
	wiring_begin(&t, irq);
	for (uint32_t d = 0; d < 100; d++)
		wiring_route(&t, g, true, 0xfee01000, d, 0);
	ck_assert_int_eq(wiring_commit(&t), 0);
	ck_assert_uint_eq(k.routing_calls, 2);
	irq_destroy(irq);
}
END_TEST

START_TEST(bad_staging)
{
	struct fake_kvm k;
	struct vm_irq *irq;
	struct wiring_txn t;

	fake_init(&k);
	ck_assert_int_eq(irq_create(3, x86_irq_platform(), fake_ioctl, &k, &irq), 0);
	wiring_begin(&t, irq);
	wiring_route(&t, 5, true, 0, 0, 0); /* an IOAPIC pin, not an MSI GSI */
	ck_assert_int_eq(wiring_commit(&t), -EINVAL);
	wiring_begin(&t, irq);
	wiring_ioeventfd(&t, 7, 0x1000, 3, false, true); /* bad length */
	ck_assert_int_eq(wiring_commit(&t), -EINVAL);
	wiring_begin(&t, irq);
	wiring_irqfd(&t, -1, 30, true);
	ck_assert_int_eq(wiring_commit(&t), -EINVAL);
	ck_assert_uint_eq(k.calls, 0);
	irq_destroy(irq);
}
END_TEST

/* Coalesced zones go with the ioeventfds: removals first, registrations
 * last, undone like them when a later step fails. */
START_TEST(coalesced_zones)
{
	struct fake_kvm k;
	struct vm_irq *irq;
	struct wiring_txn t;
	struct irq_stats st;
	uint32_t gsi;

	fake_init(&k);
	ck_assert_int_eq(irq_create(3, x86_irq_platform(), fake_ioctl, &k, &irq), 0);
	ck_assert_int_eq(irq_gsi_alloc(irq, &gsi), 0);
	for (unsigned int fail = 1; fail <= 4; fail++) {
		fake_init(&k);
		k.fail_at = fail;
		wiring_begin(&t, irq);
		wiring_coalesce(&t, 0xe0000016, 0x22, true);
		wiring_route(&t, gsi, true, 0xfee00000, 0x4021, 0);
		wiring_irqfd(&t, 100, gsi, true);
		wiring_ioeventfd(&t, 2000, 0xe0003000, 0, false, true);
		ck_assert_int_eq(wiring_commit(&t), -ENOSPC);
		ck_assert_uint_eq(k.live_zones, 0);
		ck_assert_uint_eq(k.live_irqfds, 0);
		ck_assert_uint_eq(k.live_ioeventfds, 0);
	}
	fake_init(&k);
	wiring_begin(&t, irq);
	wiring_coalesce(&t, 0xe0000016, 0x22, true);
	wiring_ioeventfd(&t, 2000, 0xe0003000, 0, false, true);
	ck_assert_int_eq(wiring_commit(&t), 0);
	ck_assert_uint_eq(k.live_zones, 1);
	irq_get_stats(irq, &st);
	ck_assert_uint_eq(st.last_ioctls, 2);
	/* A move: the old zone is removed before the new one is added. */
	wiring_begin(&t, irq);
	wiring_coalesce(&t, 0xf0000016, 0x22, true);
	wiring_coalesce(&t, 0xe0000016, 0x22, false);
	k.fail_at = k.calls + 2;
	ck_assert_int_eq(wiring_commit(&t), -ENOSPC);
	ck_assert_uint_eq(k.live_zones, 1); /* the old one is back */
	wiring_begin(&t, irq);
	wiring_coalesce(&t, 0xe0000016, 0, true);
	ck_assert_int_eq(wiring_commit(&t), -EINVAL);
	irq_destroy(irq);
}
END_TEST

START_TEST(gsi_allocation)
{
	struct fake_kvm k;
	struct vm_irq *irq;
	uint32_t g, first;
	unsigned int n = 0;

	fake_init(&k);
	ck_assert_int_eq(irq_create(3, x86_irq_platform(), fake_ioctl, &k, &irq), 0);
	ck_assert_int_eq(irq_gsi_alloc(irq, &first), 0);
	ck_assert_uint_eq(first, X86_IRQ_FIRST_MSI_GSI);
	n = 1;
	while (irq_gsi_alloc(irq, &g) == 0)
		n++;
	ck_assert_uint_eq(n, IRQ_MAX_ROUTES - X86_IRQ_FIRST_MSI_GSI);
	irq_gsi_free(irq, 100);
	ck_assert_int_eq(irq_gsi_alloc(irq, &g), 0);
	ck_assert_uint_eq(g, 100);
	irq_destroy(irq);
}
END_TEST

static Suite *wiring_suite(void)
{
	Suite *s = suite_create("wiring");
	TCase *tc = tcase_create("commit");

	tcase_add_test(tc, one_routing_call_per_commit);
	tcase_add_test(tc, rollback_at_every_step);
	tcase_add_test(tc, rollback_teardown);
	tcase_add_test(tc, unchanged_routes_skip_the_ioctl);
	tcase_add_test(tc, bad_staging);
	tcase_add_test(tc, gsi_allocation);
	tcase_add_test(tc, coalesced_zones);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(wiring_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
