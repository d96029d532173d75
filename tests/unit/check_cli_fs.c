/* SPDX-License-Identifier: MIT */
/* minivmm --fs: the two forms, their fields, and usage errors. */
#include <check.h>
#include <stdarg.h>
#include <string.h>

#include "cli.h"

static int parse(struct cli_opts *o, char *err, int argc, ...)
{
	char *argv[32];
	va_list ap;

	va_start(ap, argc);
	argv[0] = (char *)"minivmm";
	for (int i = 1; i <= argc; i++)
		argv[i] = va_arg(ap, char *);
	argv[argc + 1] = NULL;
	va_end(ap);
	return cli_parse(argc + 1, argv, o, err, 256);
}

START_TEST(socket_form)
{
	struct cli_opts o;
	char err[256];

	ck_assert_int_eq(parse(&o, err, 4, "--kernel", "bz", "--fs",
			       "tag=share,socket=/run/v.sock,num-queues=4,queue-size=512"),
			 0);
	ck_assert_uint_eq(o.nr_fs, 1);
	ck_assert_str_eq(o.fs[0].tag, "share");
	ck_assert_str_eq(o.fs[0].socket, "/run/v.sock");
	ck_assert_ptr_null(o.fs[0].path);
	ck_assert_uint_eq(o.fs[0].num_queues, 4);
	ck_assert_uint_eq(o.fs[0].queue_size, 512);
	ck_assert(!o.mem_backend_set);
	cli_free(&o);
}
END_TEST

START_TEST(path_form)
{
	struct cli_opts o;
	char err[256];

	ck_assert_int_eq(parse(&o, err, 8, "--kernel", "bz", "--fs",
			       "tag=a,path=/srv/a,ro=on", "--fs", "tag=b,path=/srv/b",
			       "--mem-backend", "hugetlb"),
			 0);
	ck_assert_uint_eq(o.nr_fs, 2);
	ck_assert_str_eq(o.fs[0].path, "/srv/a");
	ck_assert(o.fs[0].ro);
	ck_assert(!o.fs[1].ro);
	ck_assert(o.mem_backend_set);
	cli_free(&o);
}
END_TEST

static void refused(const char *spec, const char *why)
{
	struct cli_opts o;
	char err[256] = "";

	ck_assert_msg(parse(&o, err, 4, "--kernel", "bz", "--fs", spec) == -1,
		      "accepted --fs %s", spec);
	ck_assert_msg(strstr(err, why), "--fs %s: '%s' does not say '%s'", spec,
		      err, why);
	cli_free(&o);
}

START_TEST(errors)
{
	refused("socket=/s", "tag=T");
	refused("tag=,socket=/s", "tag=T");
	refused("tag=0123456789012345678901234567890123456,socket=/s", "tag=T");
	refused("tag=t", "one of socket=PATH or path=DIR");
	refused("tag=t,socket=/s,path=/d", "one of socket=PATH or path=DIR");
	refused("tag=t,socket=/s,ro=on", "ro=on needs path=DIR");
	refused("tag=t,socket=/s,num-queues=0", "bad num-queues=0");
	refused("tag=t,socket=/s,num-queues=65", "bad num-queues=65");
	refused("tag=t,socket=/s,queue-size=100", "bad queue-size=100");
	refused("tag=t,socket=/s,ro=yes", "bad ro=yes");
	refused("tag=t,socket=/s,cache=always", "bad cache=always");
	refused("tag=t,socket", "not key=value");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cli_fs");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, socket_form);
	tcase_add_test(tc, path_form);
	tcase_add_test(tc, errors);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
