/* SPDX-License-Identifier: MIT */
/* minivmm --disk and --net rate-* keys (examples/common/rate-spec.c):
 * units, defaults, what is refused. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rate-spec.h"

static struct cli_opts o;
static char err[256];

static int parse(const char *opt, const char *spec)
{
	char a0[] = "minivmm", a1[] = "-k", a2[] = "bz";
	char *argv[] = { a0, a1, a2, (char *)opt, (char *)spec, NULL };

	cli_free(&o);
	return cli_parse(5, argv, &o, err, sizeof(err));
}

static void teardown(void)
{
	cli_free(&o);
}

START_TEST(bytes_units)
{
	uint64_t v;

	ck_assert_int_eq(rate_parse_bytes("0", &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(rate_parse_bytes("4096", &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(rate_parse_bytes("50M", &v), 0);
	ck_assert_uint_eq(v, 50ull << 20);
	ck_assert_int_eq(rate_parse_bytes("2GiB", &v), 0);
	ck_assert_uint_eq(v, 2ull << 30);
	ck_assert_int_eq(rate_parse_bytes("8KB", &v), 0);
	ck_assert_uint_eq(v, 8192);
	ck_assert_int_eq(rate_parse_bytes("1T", &v), 0);
	ck_assert_uint_eq(v, 1ull << 40);
	ck_assert_int_eq(rate_parse_bytes("1048576T", &v), 0); /* 2^60 */
	ck_assert_int_eq(rate_parse_bytes("1048577T", &v), -1);
	ck_assert_int_eq(rate_parse_bytes("99999999999999999999", &v), -1);
	ck_assert_int_eq(rate_parse_bytes("", &v), -1);
	ck_assert_int_eq(rate_parse_bytes("M", &v), -1);
	ck_assert_int_eq(rate_parse_bytes("-1", &v), -1);
	ck_assert_int_eq(rate_parse_bytes("10X", &v), -1);
	ck_assert_int_eq(rate_parse_bytes("10Mb", &v), -1);
	ck_assert_int_eq(rate_parse_bytes("1.5M", &v), -1);
}
END_TEST

START_TEST(disk_keys)
{
	const struct vmm_rate_limit *r;

	ck_assert_int_eq(parse("--disk", "path=d.img"), 0);
	ck_assert_ptr_null(o.disks[0].cfg.rate_limit);
	ck_assert_int_eq(parse("--disk", "path=d.img,rate-bw=10M,rate-bw-burst=1M,"
			       "rate-ops=1000,rate-ops-burst=50,"
			       "rate-bw-one-time=64M,rate-ops-one-time=7"), 0);
	r = o.disks[0].cfg.rate_limit;
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->struct_size, sizeof(*r));
	ck_assert_uint_eq(r->bw, 10u << 20);
	ck_assert_uint_eq(r->bw_burst, 1u << 20);
	ck_assert_uint_eq(r->bw_one_time, 64u << 20);
	ck_assert_uint_eq(r->ops, 1000);
	ck_assert_uint_eq(r->ops_burst, 50);
	ck_assert_uint_eq(r->ops_one_time, 7);
	ck_assert_int_eq(parse("--disk", "path=d.img,rate-ops=5000"), 0);
	ck_assert_uint_eq(o.disks[0].cfg.rate_limit->bw, 0);
	/* 0 is unlimited: no limit handed over. */
	ck_assert_int_eq(parse("--disk", "path=d.img,rate-bw=0"), 0);
	ck_assert_ptr_null(o.disks[0].cfg.rate_limit);
}
END_TEST

START_TEST(net_keys)
{
	ck_assert_int_eq(parse("--net", "tap=t0,rate-bw=1G,rate-ops=100000"), 0);
	ck_assert_ptr_nonnull(o.nets[0].cfg.rate_limit);
	ck_assert_uint_eq(o.nets[0].cfg.rate_limit->bw, 1ull << 30);
	ck_assert_uint_eq(o.nets[0].cfg.rate_limit->ops, 100000);
	ck_assert_int_eq(parse("--net", "stream=/tmp/s,rate-ops=10"), 0);
	ck_assert_ptr_nonnull(o.nets[0].cfg.rate_limit);
}
END_TEST

START_TEST(refused)
{
	ck_assert_int_eq(parse("--disk", "path=d.img,rate-bw=fast"), -1);
	ck_assert_ptr_nonnull(strstr(err, "rate-bw"));
	ck_assert_int_eq(parse("--disk", "path=d.img,rate-ops=1K"), -1);
	ck_assert_int_eq(parse("--disk", "path=d.img,rate-bw-burst=1M"), -1);
	ck_assert_ptr_nonnull(strstr(err, "need rate-bw"));
	ck_assert_int_eq(parse("--disk", "path=d.img,rate-ops-one-time=3"), -1);
	ck_assert_int_eq(parse("--disk", "path=d.img,rate-iops=3"), -1);
	ck_assert_ptr_nonnull(strstr(err, "unknown key"));
	ck_assert_int_eq(parse("--net", "tap=t0,vhost=on,rate-bw=1M"), -1);
	ck_assert_ptr_nonnull(strstr(err, "vhost=off"));
	ck_assert_int_eq(parse("--net", "tap=t0,rate-ops=-1"), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cli_rate");
	TCase *tc = tcase_create("rate");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, bytes_units);
	tcase_add_test(tc, disk_keys);
	tcase_add_test(tc, net_keys);
	tcase_add_test(tc, refused);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
