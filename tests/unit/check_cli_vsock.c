/* SPDX-License-Identifier: MIT */
/* minivmm --vsock cid=N,socket=PATH: the spec, its errors, one device. */
#include <check.h>
#include <stdarg.h>
#include <string.h>

#include "cli.h"

static int parse(struct cli_opts *o, char *err, int argc, ...)
{
	char *argv[16];
	va_list ap;

	va_start(ap, argc);
	argv[0] = (char *)"minivmm";
	for (int i = 1; i <= argc; i++)
		argv[i] = va_arg(ap, char *);
	argv[argc + 1] = NULL;
	va_end(ap);
	return cli_parse(argc + 1, argv, o, err, 256);
}

START_TEST(good)
{
	struct cli_opts o;
	char err[256];

	ck_assert_int_eq(parse(&o, err, 4, "--kernel", "bz", "--vsock",
			       "cid=3,socket=/run/v.sock"), 0);
	ck_assert_uint_eq(o.vsock.guest_cid, 3);
	ck_assert_str_eq(o.vsock.socket_path, "/run/v.sock");
	ck_assert_uint_eq(o.vsock.struct_size, sizeof(o.vsock));
	cli_free(&o);
	ck_assert_int_eq(parse(&o, err, 4, "--kernel", "bz", "--vsock",
			       "socket=s,cid=4294967294"), 0);
	ck_assert_uint_eq(o.vsock.guest_cid, 4294967294u);
	ck_assert_str_eq(o.vsock.socket_path, "s");
	cli_free(&o);
	ck_assert_int_eq(parse(&o, err, 2, "--kernel", "bz"), 0);
	ck_assert_ptr_null(o.vsock_path);
	cli_free(&o);
}
END_TEST

/* vhost=on: a CID and no socket; vhost=off is the hybrid side. */
START_TEST(vhost)
{
	static const char *const bad[] = {
		"vhost=on", "cid=3,vhost=on,socket=/x", "cid=3,vhost=yes",
		"cid=3,vhost=", "cid=3,vhost=off",
	};
	struct cli_opts o;
	char err[256];

	ck_assert_int_eq(parse(&o, err, 4, "--kernel", "bz", "--vsock",
			       "cid=7,vhost=on"), 0);
	ck_assert_uint_eq(o.vsock.guest_cid, 7);
	ck_assert_uint_eq(o.vsock.flags, VMM_VSOCK_VHOST);
	ck_assert_ptr_null(o.vsock.socket_path);
	ck_assert_uint_eq(o.vsock.struct_size, sizeof(o.vsock));
	cli_free(&o);
	ck_assert_int_eq(parse(&o, err, 4, "--kernel", "bz", "--vsock",
			       "vhost=off,cid=3,socket=/s"), 0);
	ck_assert_uint_eq(o.vsock.flags, 0);
	cli_free(&o);
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(parse(&o, err, 4, "--kernel", "bz", "--vsock", bad[i]) == -1,
			      "'%s' accepted", bad[i]);
		ck_assert(strstr(err, "--vsock"));
		cli_free(&o);
	}
	ck_assert_int_eq(parse(&o, err, 6, "--kernel", "bz", "--vsock", "cid=3,vhost=on",
			       "--vsock", "cid=4,vhost=on"), -1);
	ck_assert(strstr(err, "one vsock"));
	cli_free(&o);
}
END_TEST

START_TEST(bad)
{
	static const char *const specs[] = {
		"", "cid=3", "socket=/x", "cid=2,socket=/x", "cid=4294967295,socket=/x",
		"cid=-3,socket=/x", "cid=3x,socket=/x", "cid=3,socket=", "cid=3,sock=/x",
		"cid=3,socket=/x,vhost=on",
		"cid=3,,socket=/x", "cid,socket=/x",
		"cid=3,socket=/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	};
	struct cli_opts o;
	char err[256];

	for (unsigned int i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		ck_assert_msg(parse(&o, err, 4, "--kernel", "bz", "--vsock", specs[i]) == -1,
			      "'%s' accepted", specs[i]);
		ck_assert(strstr(err, "--vsock"));
		cli_free(&o);
	}
	ck_assert_int_eq(parse(&o, err, 6, "--kernel", "bz", "--vsock", "cid=3,socket=a",
			       "--vsock", "cid=4,socket=b"), -1);
	ck_assert(strstr(err, "one vsock"));
	cli_free(&o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cli_vsock");
	TCase *tc = tcase_create("vsock");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, good);
	tcase_add_test(tc, bad);
	tcase_add_test(tc, vhost);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
