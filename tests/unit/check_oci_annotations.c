/* SPDX-License-Identifier: MIT */
/*
 * Per-container VM size from the annotations org.minivmm.vcpus and
 * org.minivmm.memory (examples/oci/spec-size.c): the values accepted and
 * their result, every refusal with its one-line reason at spec_load()
 * (what `create` reports), and their precedence over linux.resources and
 * the configured defaults.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spec.h"

static char dir[64];
static char err[512];

static void setup(void)
{
	char p[128];

	strcpy(dir, "/tmp/check_oci_annotations.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/rootfs", dir);
	ck_assert_int_eq(mkdir(p, 0755), 0);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* A minimal config.json with @ann as its annotations object and a
 * memory limit of 256 MiB and a quota of 3 CPUs. */
static int load(const char *ann, struct oci_spec *s)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/config.json", dir);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"root\":{\"path\":\"rootfs\"},\"process\":{\"args\":[\"sh\"]},"
		"\"linux\":{\"namespaces\":[{\"type\":\"network\"}],\"resources\":"
		"{\"memory\":{\"limit\":268435456},\"cpu\":{\"quota\":300000,"
		"\"period\":100000}}},\"annotations\":%s}", ann);
	fclose(f);
	return spec_load(dir, NULL, s, err, sizeof(err));
}

START_TEST(test_values)
{
	unsigned int n;
	uint64_t m;

	ck_assert_int_eq(spec_parse_vcpus("1", &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(spec_parse_vcpus("254", &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 254);
	ck_assert_int_eq(spec_parse_memory("512", &m, err, sizeof(err)), 0);
	ck_assert_uint_eq(m, 512ull << 20);
	ck_assert_int_eq(spec_parse_memory("1G", &m, err, sizeof(err)), 0);
	ck_assert_uint_eq(m, 1ull << 30);
	ck_assert_int_eq(spec_parse_memory("1GiB", &m, err, sizeof(err)), 0);
	ck_assert_uint_eq(m, 1ull << 30);
	ck_assert_int_eq(spec_parse_memory("300m", &m, err, sizeof(err)), 0);
	ck_assert_uint_eq(m, 300ull << 20);
	ck_assert_int_eq(spec_parse_memory("65537K", &m, err, sizeof(err)), 0);
	ck_assert_uint_eq(m, 66ull << 20); /* rounded up to 2 MiB */
	ck_assert_int_eq(spec_parse_memory("1T", &m, err, sizeof(err)), 0);
	ck_assert_uint_eq(m, 1ull << 40);
}
END_TEST

START_TEST(test_refused)
{
	static const char *const cpus[] = { "0", "255", "-1", "2x", "", " 2", "1e3",
					    "99999999999999999999" };
	static const char *const mem[] = { "0", "63", "32M", "2T", "1X", "1Gx", "",
					   "-512", "M", "18446744073709551615",
					   "17592186044416" };
	unsigned int n;
	uint64_t m;

	for (size_t i = 0; i < sizeof(cpus) / sizeof(*cpus); i++) {
		ck_assert_msg(spec_parse_vcpus(cpus[i], &n, err, sizeof(err)) == -1,
			      "vcpus \"%s\" accepted", cpus[i]);
		ck_assert_ptr_nonnull(strstr(err, "org.minivmm.vcpus"));
	}
	for (size_t i = 0; i < sizeof(mem) / sizeof(*mem); i++) {
		ck_assert_msg(spec_parse_memory(mem[i], &m, err, sizeof(err)) == -1,
			      "memory \"%s\" accepted", mem[i]);
		ck_assert_ptr_nonnull(strstr(err, "org.minivmm.memory"));
	}
}
END_TEST

/* The annotations win over the resources; without them the resources
 * decide; a bad one fails the load (create) with a one-line reason. */
START_TEST(test_spec_load)
{
	struct oci_spec s;

	ck_assert_msg(!load("{\"org.minivmm.vcpus\":\"2\",\"org.minivmm.memory\":\"1G\"}",
			    &s), "%s", err);
	ck_assert_uint_eq(spec_guest_vcpus(&s, 1), 2);
	ck_assert_uint_eq(spec_guest_memory(&s, 1), 1ull << 30);
	spec_free(&s);
	ck_assert_msg(!load("{\"other\":\"x\"}", &s), "%s", err);
	ck_assert_uint_eq(spec_guest_vcpus(&s, 1), 3);
	ck_assert_uint_eq(spec_guest_memory(&s, 1), 304ull << 20);
	spec_free(&s);
	ck_assert_int_eq(load("{\"org.minivmm.vcpus\":\"0\"}", &s), -1);
	ck_assert_ptr_nonnull(strstr(err, "org.minivmm.vcpus=\"0\": expected"));
	spec_free(&s);
	ck_assert_int_eq(load("{\"org.minivmm.memory\":\"lots\\nmore\"}", &s), -1);
	ck_assert_ptr_nonnull(strstr(err, "org.minivmm.memory=\"?\""));
	ck_assert_ptr_null(strchr(err, '\n'));
	spec_free(&s);
	ck_assert_int_eq(load("{\"org.minivmm.memory\":512}", &s), -1);
	ck_assert_ptr_nonnull(strstr(err, "must be a string"));
	spec_free(&s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oci_annotations");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_values);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_spec_load);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
