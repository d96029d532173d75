/* SPDX-License-Identifier: MIT */
/*
 * The plan of a VM's resources (libvmm/machine/plan.c): each device's
 * queues, the I/O threads, the KVM routes and descriptors, from one
 * function; and the queue count vmm_get_disk_stats() reads before
 * vmm_start() is the one the start assigns, also where KVM's routing
 * table is smaller than VMM_MAX_QUEUES.  KVM-free: KVM_CHECK_EXTENSION is
 * answered by the ioctl() below.
 */
#include <check.h>
#include <errno.h>
#include <linux/kvm.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "irq.h"
#include "machine-config.h"
#include "machine-int.h"
#include "machine.h"
#include "plan.h"
#include "vm.h"

#define FAKE_KVM_FD 1000
static int fake_routes; /* KVM_CAP_IRQ_ROUTING; 0: not reported */

/* Takes the place of libc's for the library's calls in this program. */
int ioctl(int fd, unsigned long req, ...);
int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	long arg;

	va_start(ap, req);
	arg = va_arg(ap, long);
	va_end(ap);
	if (fd == FAKE_KVM_FD && req == KVM_CHECK_EXTENSION &&
	    arg == KVM_CAP_IRQ_ROUTING)
		return fake_routes;
	errno = ENOTTY;
	return -1;
}

static const struct plan_limits all = { .routes = 4096, .chip_routes = 40 };

START_TEST(defaults_one_per_vcpu)
{
	struct plan_request req[] = { { 0, true, 0 }, { 0, true, 0 }, { 4, false, 0 } };
	struct machine_plan p;

	ck_assert_int_eq(plan_build(req, 3, 8, &all, &p), 0);
	ck_assert_uint_eq(p.nr_devices, 3);
	ck_assert_uint_eq(p.queues[0], 8);
	ck_assert_uint_eq(p.queues[1], 8);
	ck_assert_uint_eq(p.queues[2], 4);
	ck_assert_uint_eq(p.nr_iothreads, 8);
	ck_assert_uint_eq(p.need, 6); /* 1 + 1 + 4 */
	ck_assert_uint_eq(p.budget, 4056);
	/* 64 + 5 per vCPU + (2 per queue + 2) per device */
	ck_assert_uint_eq(p.fds, 64 + 40 + 18 + 18 + 10);

	/* No device served by I/O threads: none. */
	req[0].iothreads = req[1].iothreads = false;
	ck_assert_int_eq(plan_build(req, 3, 8, &all, &p), 0);
	ck_assert_uint_eq(p.nr_iothreads, 0);
}
END_TEST

/* 3 x 1024 explicit queues leave 984 for 20 default disks: 49 each
 * instead of one per vCPU (100). */
START_TEST(defaults_share_what_is_left)
{
	struct plan_request req[23] = { 0 };
	struct machine_plan p;

	for (unsigned int i = 0; i < 3; i++)
		req[i].queues = VMM_MAX_DISK_QUEUES;
	ck_assert_int_eq(plan_build(req, 23, 100, &all, &p), 0);
	ck_assert_uint_eq(p.queues[0], 1024);
	for (unsigned int i = 3; i < 23; i++)
		ck_assert_uint_eq(p.queues[i], 49);
}
END_TEST

START_TEST(too_many_queues)
{
	struct plan_request req[5] = { 0 };
	struct plan_limits small = { .routes = 1024, .chip_routes = 24 };
	struct machine_plan p;

	for (unsigned int i = 0; i < 4; i++)
		req[i].queues = 250;
	ck_assert_int_eq(plan_build(req, 5, 4, &small, &p), -ENOSPC);
	ck_assert_uint_eq(p.budget, 1000);
	ck_assert_uint_eq(p.need, 1001);
	ck_assert_uint_eq(p.queues[4], 1); /* filled all the same */
	req[3].queues = 249;
	ck_assert_int_eq(plan_build(req, 5, 4, &small, &p), 0);
	ck_assert_uint_eq(p.queues[4], 1);
}
END_TEST

static struct vmm *vm_with_disks(unsigned int nr_vcpus, const uint16_t *nq,
				 unsigned int n)
{
	struct vmm *vm = calloc(1, sizeof(*vm));
	struct machine_config *c = calloc(1, sizeof(*c));

	ck_assert_ptr_nonnull(vm);
	ck_assert_ptr_nonnull(c);
	vm->config = c;
	vm->kvm.fd = FAKE_KVM_FD;
	c->nr_vcpus = nr_vcpus;
	c->disks = calloc(n, sizeof(*c->disks));
	ck_assert_ptr_nonnull(c->disks);
	for (unsigned int i = 0; i < n; i++) {
		c->disks[i].cfg.num_queues = nq[i];
		c->disks[i].fd = -1;
	}
	c->nr_disks = n;
	return vm;
}

static void vm_free(struct vmm *vm)
{
	free(vm->config->disks);
	free(vm->config);
	free(vm);
}

/* What a caller reads before vmm_start() is what the start assigns: both
 * are plan_of_vm(), within the KVM routing table this host reports. */
static void check_before_equals_start(int routes)
{
	static const uint16_t nq[] = { 512, 0, 0 };
	struct vmm *vm = vm_with_disks(512, nq, 3);
	struct vmm_disk_stats st;
	struct machine_plan at_start;
	struct machine m;

	fake_routes = routes;
	for (unsigned int id = 0; id < 3; id++) {
		memset(&st, 0, sizeof(st));
		ck_assert_int_eq(machine_disk_stats(vm, id, &st), 0);
		/* vmm_start()'s plan: plan_for_start() is this plus the
		 * descriptor check. */
		ck_assert_int_eq(plan_of_vm(vm, &at_start), 0);
		ck_assert_uint_eq(st.num_queues, at_start.queues[id]);
		/* ... and what the statistics read once started. */
		memset(&m, 0, sizeof(m));
		m.plan = at_start;
		vm->machine = &m;
		memset(&st, 0, sizeof(st));
		ck_assert_int_eq(machine_disk_stats(vm, id, &st), 0);
		ck_assert_uint_eq(st.num_queues, at_start.queues[id]);
		vm->machine = NULL;
	}
	vm_free(vm);
}

START_TEST(before_start_equals_start)
{
	unsigned int chip = machine_arch_irq_platform()->nr_chip_routes;
	static const uint16_t nq[] = { 512, 0, 0 };
	struct vmm_disk_stats st = { 0 };
	struct vmm *vm;

	/* A kernel with the full table, and one with 1024 + chip entries:
	 * (1024 - 512) / 2 = 256 each for the default disks, not the 512
	 * (one per vCPU) that VMM_MAX_QUEUES would leave. */
	check_before_equals_start(0);
	check_before_equals_start(4096);
	check_before_equals_start((int)(1024 + chip));
	vm = vm_with_disks(512, nq, 3);
	ck_assert_int_eq(machine_disk_stats(vm, 1, &st), 0);
	ck_assert_uint_eq(st.num_queues, 256);
	vm_free(vm);
}
END_TEST

START_TEST(add_time_check)
{
	static const uint16_t nq[] = { 1024, 1024, 1024 };
	struct vmm *vm = vm_with_disks(1, nq, 3);

	ck_assert_int_eq(plan_check_new_disk(vm->config, 1024), -ENOSPC);
	ck_assert_int_eq(plan_check_new_disk(vm->config, VMM_MAX_QUEUES - 3072), 0);
	ck_assert_int_eq(plan_check_new_disk(vm->config, 0), 0);
	vm_free(vm);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("plan");
	TCase *tc = tcase_create("plan");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, defaults_one_per_vcpu);
	tcase_add_test(tc, defaults_share_what_is_left);
	tcase_add_test(tc, too_many_queues);
	tcase_add_test(tc, before_start_equals_start);
	tcase_add_test(tc, add_time_check);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
