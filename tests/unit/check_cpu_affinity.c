/* SPDX-License-Identifier: MIT */
/*
 * CPU pinning (vmm_set_cpu_affinity(), libvmm/machine/affinity.c): CPU
 * lists as the programs parse them (examples/common/parse.c, minivmm's
 * --cpu-affinity), the library's argument checks, and the pinning of a
 * real I/O thread (iothread_set_affinity(), read back with
 * pthread_getaffinity_np()).  vCPU threads are pinned by the same call
 * (vcpu_set_affinity()); the rig's e2e/api_socket starts a VM with it.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <unistd.h>

#include "cli.h"
#include "iothread.h"
#include "parse.h"
#include "vmm/vmm.h"

START_TEST(cpulist_parse)
{
	unsigned int c[8], n = 99;

	ck_assert_int_eq(parse_cpulist("0-3,8", c, 8, &n), 0);
	ck_assert_uint_eq(n, 5);
	ck_assert_uint_eq(c[0], 0);
	ck_assert_uint_eq(c[3], 3);
	ck_assert_uint_eq(c[4], 8);
	/* The list's order is kept: vCPU 0 on CPU 5. */
	ck_assert_int_eq(parse_cpulist("5,1-2", c, 8, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(c[0], 5);
	ck_assert_uint_eq(c[2], 2);
	ck_assert_int_eq(parse_cpulist("7,", c, 8, &n), 0); /* as cpusets allow */
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(parse_cpulist("65535", c, 8, &n), 0);
	ck_assert_uint_eq(c[0], 65535);
	/* Malformed, out of range, a CPU twice, more than @max. */
	const char *bad[] = { "", ",", ",1", "1,,", "1,,2", "a", "-1", "1-", "3-2",
			      "1 ", " 1", "0x1", "65536", "1-65536", "1,1", "0-2,2",
			      "0-8" };
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(parse_cpulist(bad[i], c, 8, &n) == -1, "'%s' taken", bad[i]);
	/* Counting only (cpusets: minivmm-oci's spec_cpuset_count()). */
	ck_assert_int_eq(parse_cpulist("0-1023", NULL, 0, &n), 0);
	ck_assert_uint_eq(n, 1024);
}
END_TEST

static int parse(struct cli_opts *o, char *err, const char *list)
{
	char *argv[] = { (char *)"minivmm", (char *)"--kernel", (char *)"bz",
			 (char *)"--cpu-affinity", (char *)list, NULL };

	return cli_parse(5, argv, o, err, 256);
}

START_TEST(cli_option)
{
	struct cli_opts o;
	char err[256];

	ck_assert_int_eq(parse(&o, err, "2,0-1"), 0);
	ck_assert_uint_eq(o.nr_cpu_affinity, 3);
	ck_assert_uint_eq(o.cpu_affinity[0], 2);
	ck_assert_uint_eq(o.cpu_affinity[2], 1);
	cli_free(&o);
	ck_assert_int_eq(parse(&o, err, "1023"), 0);
	cli_free(&o);
	ck_assert_int_eq(parse(&o, err, "1024"), -1);
	ck_assert_str_eq(err, "--cpu-affinity must list host CPUs below 1024, each "
			      "once (e.g. 0-3,8), got '1024'");
	cli_free(&o);
	ck_assert_int_eq(parse(&o, err, "0,0"), -1);
	cli_free(&o);
	ck_assert_int_eq(parse(&o, err, "0-1024"), -1);
	cli_free(&o);
	/* Not given: not pinned. */
	{
		char *argv[] = { (char *)"minivmm", (char *)"--kernel", (char *)"bz", NULL };

		ck_assert_int_eq(cli_parse(3, argv, &o, err, 256), 0);
		ck_assert_uint_eq(o.nr_cpu_affinity, 0);
		cli_free(&o);
	}
}
END_TEST

START_TEST(library_arguments)
{
	unsigned int ok[] = { 0 }, dup[] = { 1, 0, 1 }, big[] = { 1024 };
	struct vmm *vm = NULL;

	ck_assert_int_eq(vmm_set_cpu_affinity(NULL, ok, 1), -EINVAL);
	if (access("/dev/kvm", F_OK) || vmm_create(&vm)) {
		/* No VM without KVM: the checks before the VM still hold. */
		ck_assert_int_eq(vmm_set_cpu_affinity(vm, NULL, 1), -EINVAL);
		return;
	}
	ck_assert_int_eq(vmm_set_cpu_affinity(vm, NULL, 1), -EINVAL);
	ck_assert_int_eq(vmm_set_cpu_affinity(vm, dup, 3), -EINVAL);
	ck_assert_int_eq(vmm_set_cpu_affinity(vm, big, 1), -EINVAL);
	ck_assert_int_eq(vmm_set_cpu_affinity(vm, ok, VMM_MAX_VCPUS + 1), -EINVAL);
	ck_assert_int_eq(vmm_set_cpu_affinity(vm, dup, 2), 0);
	ck_assert_int_eq(vmm_set_cpu_affinity(vm, ok, 1), 0); /* replaces */
	ck_assert_int_eq(vmm_set_cpu_affinity(vm, NULL, 0), 0); /* unpinned */
	vmm_destroy(vm);
}
END_TEST

/* The last CPU this process may run on (with 2+ CPUs, not the first one). */
static int last_allowed_cpu(void)
{
	cpu_set_t set;
	int last = -1;

	ck_assert_int_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			last = c;
	return last;
}

static int thread_cpu_count(void *opaque)
{
	cpu_set_t set;

	(void)opaque;
	if (sched_getaffinity(0, sizeof(set), &set))
		return -errno;
	return CPU_COUNT(&set) == 1 ? sched_getcpu() : -CPU_COUNT(&set);
}

START_TEST(iothread_pinned)
{
	struct iothread *io;
	cpu_set_t set;
	int cpu = last_allowed_cpu();

	ck_assert_int_ge(cpu, 0);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ck_assert_int_eq(iothread_create(3, 32, &io), 0);
	ck_assert_int_eq(iothread_set_affinity(io, &set), -ESRCH); /* not started */
	ck_assert_int_eq(iothread_start(io), 0);
	ck_assert_int_eq(iothread_set_affinity(io, &set), 0);
	/* Seen from the thread itself: one CPU allowed, and it runs there. */
	ck_assert_int_eq(iothread_call_sync(io, thread_cpu_count, NULL), cpu);
	iothread_destroy(io);
}
END_TEST

static Suite *affinity_suite(void)
{
	Suite *s = suite_create("cpu_affinity");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, cpulist_parse);
	tcase_add_test(tc, cli_option);
	tcase_add_test(tc, library_arguments);
	tcase_add_test(tc, iothread_pinned);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(affinity_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
