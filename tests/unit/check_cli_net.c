/* SPDX-License-Identifier: MIT */
/* minivmm --net: tap and fd forms, options, and what is refused. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static struct cli_opts o;
static char err[256];

static int parse(const char *net1, const char *net2)
{
	char a0[] = "minivmm", a1[] = "-k", a2[] = "bz", a3[] = "--net",
	     a5[] = "--net";
	char *argv[] = { a0, a1, a2, a3, (char *)net1, a5, (char *)net2, NULL };

	cli_free(&o);
	return cli_parse(net2 ? 7 : 5, argv, &o, err, sizeof(err));
}

static void teardown(void)
{
	cli_free(&o);
}

START_TEST(tap_forms)
{
	ck_assert_int_eq(parse("tap=tap0", "tap=tap1,mac=52:54:00:AB:cd:01,"
				"queue-pairs=4,queue-size=512,mtu=9000"), 0);
	ck_assert_uint_eq(o.nr_nets, 2);
	ck_assert_str_eq(o.nets[0].cfg.tap, "tap0");
	ck_assert_uint_eq(o.nets[0].cfg.queue_pairs, 0);
	ck_assert_uint_eq(o.nets[0].cfg.mac[0], 0);
	ck_assert_uint_eq(o.nets[1].cfg.queue_pairs, 4);
	ck_assert_uint_eq(o.nets[1].cfg.queue_size, 512);
	ck_assert_uint_eq(o.nets[1].cfg.mtu, 9000);
	ck_assert_uint_eq(o.nets[1].cfg.mac[3], 0xab);
	ck_assert_uint_eq(o.nets[1].cfg.mac[5], 1);
	ck_assert_uint_eq(o.nets[1].cfg.struct_size, sizeof(struct vmm_net_config));
	ck_assert_uint_eq(o.nets[0].cfg.flags, 0);
	ck_assert_int_eq(parse("tap=tap0,vhost=on", "fd=3,vhost=off"), 0);
	ck_assert_uint_eq(o.nets[0].cfg.flags, VMM_NET_VHOST);
	ck_assert_uint_eq(o.nets[1].cfg.flags, 0);
}
END_TEST

START_TEST(fd_form)
{
	ck_assert_int_eq(parse("fd=3:4:5,mac=02:00:00:00:00:01", NULL), 0);
	ck_assert_ptr_null(o.nets[0].cfg.tap);
	ck_assert_uint_eq(o.nets[0].cfg.nr_fds, 3);
	ck_assert_int_eq(o.nets[0].cfg.fds[2], 5);
}
END_TEST

START_TEST(stream_form)
{
	ck_assert_int_eq(parse("stream=/run/user/1000/passt.socket,mac=02:00:00:00:00:02,"
			       "queue-pairs=1", NULL), 0);
	ck_assert_str_eq(o.nets[0].cfg.stream, "/run/user/1000/passt.socket");
	ck_assert_ptr_null(o.nets[0].cfg.tap);
	ck_assert_ptr_null(o.nets[0].cfg.fds);
	ck_assert_uint_eq(o.nets[0].cfg.mac[5], 2);
}
END_TEST

START_TEST(refused)
{
	static const char *const bad[] = {
		"", "tap", "tap=", "tap=0123456789abcdef", "fd=", "fd=x",
		"tap=t,fd=3", "mac=52:54:00:00:00:01", "tap=t,mac=01:00:5e:00:00:01",
		"tap=t,mac=52:54:00:00:00", "tap=t,mac=52:54:00:00:00:01:",
		"tap=t,mac=5:54:00:00:00:011", "tap=t,queue-pairs=0",
		"tap=t,queue-pairs=65", "tap=t,queue-size=100", "tap=t,queue-size=2",
		"tap=t,mtu=67", "tap=t,speed=10", "fd=3:4,queue-pairs=3",
		"tap=t,vhost=", "tap=t,vhost=1", "tap=t,vhost=auto",
		"stream=", "stream=/s,tap=t", "stream=/s,fd=3", "stream=/s,queue-pairs=2",
	};

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		ck_assert_msg(parse(bad[i], NULL) == -1, "accepted '%s'", bad[i]);
		ck_assert_msg(err[0], "no reason for '%s'", bad[i]);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cli_net");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, tap_forms);
	tcase_add_test(tc, fd_form);
	tcase_add_test(tc, stream_form);
	tcase_add_test(tc, refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
