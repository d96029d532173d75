/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci's rootless decisions (examples/oci/rootless.c, issue 30):
 *  - a user namespace is told from /proc/self/uid_map's text: only the
 *    initial namespace's single full identity line is not one (padded or
 *    not); an identity of fewer ids, a shifted map, several lines, an
 *    empty map are; unreadable is not;
 *  - the default state root: $XDG_RUNTIME_DIR/minivmm-oci rootless with an
 *    absolute XDG_RUNTIME_DIR, /run/minivmm-oci otherwise (not rootless,
 *    unset, relative, too long);
 *  - a cgroup error passed over only rootless, only EACCES/EPERM/EROFS.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "oci.h"
#include "rootless.h"

START_TEST(test_map)
{
	ck_assert(!oci_rootless_map("         0          0 4294967295\n"));
	ck_assert(!oci_rootless_map("0 0 4294967295"));
	ck_assert(!oci_rootless_map(NULL));
	/* podman's rootless map: the user as 0, then its subordinate ids. */
	ck_assert(oci_rootless_map("         0       1500          1\n"
				   "         1     100000      65536\n"));
	ck_assert(oci_rootless_map("0 1500 1\n"));
	ck_assert(oci_rootless_map("0 0 65536\n"));
	ck_assert(oci_rootless_map("0 0 4294967295\n1 2 3\n"));
	ck_assert(oci_rootless_map(""));
	ck_assert(oci_rootless_map("garbage"));
}
END_TEST

START_TEST(test_state_root)
{
	char buf[64], longer[128];

	ck_assert_str_eq(oci_rootless_state_root(true, "/run/user/1500", buf, sizeof(buf)),
			 "/run/user/1500/minivmm-oci");
	ck_assert_str_eq(oci_rootless_state_root(false, "/run/user/1500", buf, sizeof(buf)),
			 OCI_DEFAULT_ROOT);
	ck_assert_str_eq(oci_rootless_state_root(true, NULL, buf, sizeof(buf)),
			 OCI_DEFAULT_ROOT);
	ck_assert_str_eq(oci_rootless_state_root(true, "", buf, sizeof(buf)), OCI_DEFAULT_ROOT);
	ck_assert_str_eq(oci_rootless_state_root(true, "run/user/1500", buf, sizeof(buf)),
			 OCI_DEFAULT_ROOT);
	memset(longer, 'a', sizeof(longer) - 1);
	longer[0] = '/';
	longer[sizeof(longer) - 1] = 0;
	ck_assert_str_eq(oci_rootless_state_root(true, longer, buf, sizeof(buf)),
			 OCI_DEFAULT_ROOT);
}
END_TEST

START_TEST(test_cgroup_skip)
{
	ck_assert(oci_rootless_cgroup_skip(true, EACCES));
	ck_assert(oci_rootless_cgroup_skip(true, EPERM));
	ck_assert(oci_rootless_cgroup_skip(true, EROFS));
	ck_assert(!oci_rootless_cgroup_skip(false, EACCES));
	ck_assert(!oci_rootless_cgroup_skip(true, ENOENT));
	ck_assert(!oci_rootless_cgroup_skip(true, EINVAL));
	ck_assert(!oci_rootless_cgroup_skip(true, 0));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oci_rootless");
	TCase *tc = tcase_create("rootless");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_map);
	tcase_add_test(tc, test_state_root);
	tcase_add_test(tc, test_cgroup_skip);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
