/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci update (examples/oci/update.c), on a directory standing in
 * for the container's cgroup:
 *  - the options: sizes with units, --resources FILE (a JSON
 *    linux.resources) with the flags over it, bad values refused;
 *  - the cgroup: cpu.max and the cpuset change; a memory limit that gives
 *    the VM the size it has is accepted, any other refused with the VM's
 *    size in the message (no memory hotplug), nothing written then.
 */
#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "cli.h"
#include "manage.h"
#include "oci.h"

static char D[64];

static void put(const char *file, const char *v)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", D, file);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(v, f);
	fclose(f);
}

static const char *get(const char *file)
{
	static char v[128];
	char p[PATH_MAX];
	FILE *f;
	size_t n;

	snprintf(p, sizeof(p), "%s/%s", D, file);
	f = fopen(p, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(v, 1, sizeof(v) - 1, f);
	v[n] = 0;
	fclose(f);
	return v;
}

static void setup(void)
{
	char v[32];

	strcpy(D, "/tmp/check_oci_update.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(D));
	/* A VM created with --memory 256m. */
	struct oci_spec made = { .mem_limit = 256ull << 20 };

	snprintf(v, sizeof(v), "%llu",
		 (unsigned long long)(spec_guest_memory(&made, 0) + OCI_VMM_MEM_OVERHEAD));
	put("memory.max", v);
	put("cpu.max", "max 100000");
	put("cpuset.cpus", "");
	put("cpuset.mems", "");
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", D);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_options)
{
	struct oci_cli c = { 0 };
	struct oci_spec r;
	char err[512], file[PATH_MAX];

	c.memory = "256m";
	c.cpu_quota = "50000";
	ck_assert_int_eq(oci_update_resources(&c, &r, err, sizeof(err)), 0);
	ck_assert_uint_eq(r.mem_limit, 256ull << 20);
	ck_assert_int_eq(r.cpu_quota, 50000);
	ck_assert_uint_eq(r.cpu_period, 100000);
	spec_free(&r);

	c = (struct oci_cli){ .memory = "12q" };
	ck_assert_int_eq(oci_update_resources(&c, &r, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "--memory"));
	spec_free(&r);
	c = (struct oci_cli){ .cpu_period = "0" };
	ck_assert_int_eq(oci_update_resources(&c, &r, err, sizeof(err)), -1);
	spec_free(&r);
	c = (struct oci_cli){ .pids_limit = "x" };
	ck_assert_int_eq(oci_update_resources(&c, &r, err, sizeof(err)), -1);
	spec_free(&r);

	/* --resources, the flags over it. */
	snprintf(file, sizeof(file), "%s/res.json", D);
	put("res.json", "{\"cpu\": {\"quota\": 20000, \"period\": 50000, \"cpus\": \"0\"},"
			" \"pids\": {\"limit\": 99}}");
	c = (struct oci_cli){ .resources = file, .cpuset_cpus = "0-1" };
	ck_assert_int_eq(oci_update_resources(&c, &r, err, sizeof(err)), 0);
	ck_assert_int_eq(r.cpu_quota, 20000);
	ck_assert_uint_eq(r.cpu_period, 50000);
	ck_assert_str_eq(r.cpuset_list, "0-1");
	ck_assert_int_eq(r.pids_limit, 99);
	spec_free(&r);
	put("res.json", "[1]");
	c = (struct oci_cli){ .resources = file };
	ck_assert_int_eq(oci_update_resources(&c, &r, err, sizeof(err)), -1);
	spec_free(&r);
}
END_TEST

START_TEST(test_cgroup)
{
	struct oci_spec r = { 0 };
	char err[512];

	/* CPU quota and cpuset change. */
	r.cpu_quota = 50000;
	r.cpu_period = 100000;
	r.cpuset_list = (char *)"0";
	ck_assert_int_eq(oci_update_cgroup(D, &r, err, sizeof(err)), 0);
	ck_assert_str_eq(get("cpu.max"), "50000 100000");
	ck_assert_str_eq(get("cpuset.cpus"), "0");
	/* No quota: max. */
	r = (struct oci_spec){ .cpu_quota = -1, .cpu_period = 100000 };
	ck_assert_int_eq(oci_update_cgroup(D, &r, err, sizeof(err)), 0);
	ck_assert_str_eq(get("cpu.max"), "max 100000");

	/* The VM's own size: accepted; another: refused, nothing written. */
	r = (struct oci_spec){ .mem_limit = 256ull << 20, .cpu_quota = 10000,
			       .cpu_period = 100000 };
	ck_assert_int_eq(oci_update_cgroup(D, &r, err, sizeof(err)), 0);
	ck_assert_str_eq(get("cpu.max"), "10000 100000");
	r = (struct oci_spec){ .mem_limit = 512ull << 20, .cpu_quota = 20000,
			       .cpu_period = 100000 };
	ck_assert_int_eq(oci_update_cgroup(D, &r, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "no memory hotplug"));
	ck_assert_ptr_nonnull(strstr(err, "the VM has 304 MiB"));
	ck_assert_str_eq(get("cpu.max"), "10000 100000");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oci_update");
	TCase *tc = tcase_create("update");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_options);
	tcase_add_test(tc, test_cgroup);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
