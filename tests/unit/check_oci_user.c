/* SPDX-License-Identifier: MIT */
/*
 * Who minivmm-oci's VMM process becomes (examples/oci/settings.c): the
 * `user` setting of /etc/minivmm-oci.conf ($MINIVMM_OCI_CONFIG here),
 * parsed by the shared parser (examples/common/user.c) with its errors
 * pointing at the file and line; without it the system user minivmm-oci,
 * else nobody, else 65534:65534 -- never root.
 */
#include <check.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oci.h"

static char conf[64];
static char err[1024];

static int load(const char *text, struct oci_settings *s)
{
	FILE *f;

	strcpy(conf, "/tmp/check_oci_user.XXXXXX");
	ck_assert_int_ge(mkstemp(conf), 0);
	f = fopen(conf, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	setenv("MINIVMM_OCI_CONFIG", conf, 1);
	return oci_settings_load(s, err, sizeof(err));
}

static void done(struct oci_settings *s)
{
	oci_settings_free(s);
	unlink(conf);
}

START_TEST(test_setting)
{
	struct oci_settings s;
	uid_t uid;
	gid_t gid;

	ck_assert_msg(!load("kernel = /k\nuser = 4000:4001\n", &s), "%s", err);
	ck_assert(s.user.set);
	ck_assert_int_eq(oci_vmm_user(&s, &uid, &gid, err, sizeof(err)), 0);
	ck_assert_uint_eq(uid, 4000);
	ck_assert_uint_eq(gid, 4001);
	done(&s);

	/* By name, through the user database; the last line counts. */
	if (getpwnam("nobody")) {
		const struct passwd *pw = getpwnam("nobody");
		uid_t want_uid = pw->pw_uid;
		gid_t want_gid = pw->pw_gid;

		ck_assert_msg(!load("user = 5:5\nuser = nobody\n", &s), "%s", err);
		ck_assert_int_eq(oci_vmm_user(&s, &uid, &gid, err, sizeof(err)), 0);
		ck_assert_uint_eq(uid, want_uid);
		ck_assert_uint_eq(gid, want_gid);
		done(&s);
	}

	/* A name that does not resolve fails at create, not at load. */
	ck_assert(!load("user = no-such-user-vmm\n", &s));
	ck_assert_int_eq(oci_vmm_user(&s, &uid, &gid, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "user: no user named 'no-such-user-vmm'");
	done(&s);
}
END_TEST

START_TEST(test_setting_errors)
{
	static const struct {
		const char *line, *reason;
	} bad[] = {
		{ "user = 0\n", ":1: user: user id 0 is root" },
		{ "user = root:0\n", ":1: user: group id 0 is root's group" },
		{ "\nuser = 1:2:3\n", ":2: user: expected UID[:GID], got more than one ':'" },
		{ "user =\n", ":1: user needs a value" },
		{ "user = a b\n", ":1: user: the user is neither a number nor a name" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct oci_settings s;

		ck_assert_msg(load(bad[i].line, &s) == -1, "accepted %s", bad[i].line);
		ck_assert_msg(strstr(err, bad[i].reason) && !strncmp(err, conf, strlen(conf)),
			      "'%s': '%s' lacks '%s'", bad[i].line, err, bad[i].reason);
		done(&s);
	}
}
END_TEST

START_TEST(test_default)
{
	const struct passwd *pw;
	struct oci_settings s;
	uid_t uid, want_uid = 65534;
	gid_t gid, want_gid = 65534;

	ck_assert(!load("# nothing\n", &s));
	ck_assert(!s.user.set);
	if ((pw = getpwnam(OCI_VMM_USER)) || (pw = getpwnam("nobody"))) {
		want_uid = pw->pw_uid;
		want_gid = pw->pw_gid;
	}
	ck_assert_int_eq(oci_vmm_user(&s, &uid, &gid, err, sizeof(err)), 0);
	ck_assert_uint_eq(uid, want_uid);
	ck_assert_uint_eq(gid, want_gid);
	ck_assert(uid != 0 && gid != 0);
	done(&s);
}
END_TEST

static Suite *oci_user_suite(void)
{
	Suite *s = suite_create("oci_user");
	TCase *tc = tcase_create("user");

	tcase_add_test(tc, test_setting);
	tcase_add_test(tc, test_setting_errors);
	tcase_add_test(tc, test_default);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(oci_user_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
