/* SPDX-License-Identifier: MIT */
/*
 * minivmm's API socket requests (examples/minivmm/api.c): what is accepted
 * and what is refused with a reason.  The fuzz target fuzz_api_request
 * feeds the same parser arbitrary bytes.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "api.h"

static int parse(const char *s, enum api_cmd *cmd, char *err)
{
	return api_parse_request(s, strlen(s), cmd, err, 256);
}

START_TEST(commands)
{
	static const struct { const char *req; enum api_cmd cmd; } ok[] = {
		{ "{\"command\":\"info\"}", API_INFO },
		{ "{\"command\":\"stats\"}\n", API_STATS },
		{ " { \"command\" : \"pause\" } \n", API_PAUSE },
		{ "{\"command\":\"resume\"}", API_RESUME },
		{ "{\"command\":\"stop\"}", API_STOP },
		{ "{\"command\":\"shutdown\"}", API_SHUTDOWN },
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		enum api_cmd c = (enum api_cmd)-1;
		char err[256] = "";

		ck_assert_msg(parse(ok[i].req, &c, err) == 0, "%s: %s", ok[i].req, err);
		ck_assert_int_eq(c, ok[i].cmd);
	}
}
END_TEST

START_TEST(refused)
{
	static const struct { const char *req, *why; } bad[] = {
		{ "", "not JSON" },
		{ "info", "not JSON" },
		{ "{\"command\":\"info\"} {}", "not JSON" },
		{ "[\"info\"]", "JSON object" },
		{ "\"info\"", "not JSON" }, /* jansson: a bare string is refused */
		{ "{}", "missing" },
		{ "{\"command\":1}", "missing" },
		{ "{\"command\":null}", "missing" },
		{ "{\"command\":\"INFO\"}", "unknown command" },
		{ "{\"command\":\"info\\u0000x\"}", "not JSON" },
		{ "{\"command\":\"info\",\"x\":1}", "unknown member" },
		{ "{\"command\":\"info\",\"command\":\"stop\"}", "not JSON" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		enum api_cmd c = API_INFO;
		char err[256] = "";

		ck_assert_msg(parse(bad[i].req, &c, err) == -1, "accepted: %s", bad[i].req);
		ck_assert_msg(strstr(err, bad[i].why), "%s: reason '%s', expected '%s'",
			      bad[i].req, err, bad[i].why);
	}
}
END_TEST

START_TEST(size_limit)
{
	static char big[API_MAX_REQUEST + 2];
	enum api_cmd c;
	char err[256] = "";
	size_t n;

	memset(big, ' ', sizeof(big));
	n = (size_t)snprintf(big, sizeof(big), "{\"command\":\"info\"}");
	big[n] = ' ';
	/* Padded with spaces to the limit: accepted; one byte over: not. */
	ck_assert_int_eq(api_parse_request(big, API_MAX_REQUEST, &c, err, sizeof(err)), 0);
	ck_assert_int_eq(api_parse_request(big, API_MAX_REQUEST + 1, &c, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "over"));
}
END_TEST

/* set-rate-limit: the device and the limits, bounded and validated. */
START_TEST(set_rate_limit)
{
	static const struct { const char *req, *why; } bad[] = {
		{ "{\"command\":\"set-rate-limit\"}", "\"device\" is missing" },
		{ "{\"command\":\"set-rate-limit\",\"device\":\"disk\"}", "device" },
		{ "{\"command\":\"set-rate-limit\",\"device\":\"disk01\"}", "device" },
		{ "{\"command\":\"set-rate-limit\",\"device\":\"disk247\"}", "device" },
		{ "{\"command\":\"set-rate-limit\",\"device\":\"net1000\"}", "device" },
		{ "{\"command\":\"set-rate-limit\",\"device\":\"disk-1\"}", "device" },
		{ "{\"command\":\"set-rate-limit\",\"device\":\"vsock0\"}", "device" },
		{ "{\"command\":\"set-rate-limit\",\"device\":\"disk0\\u0000\"}", "not JSON" },
		{ "{\"command\":\"set-rate-limit\",\"device\":0}", "device" },
		{ "{\"command\":\"set-rate-limit\",\"device\":\"disk0\",\"bw\":-1}", "0..2^60" },
		{ "{\"command\":\"set-rate-limit\",\"device\":\"disk0\",\"bw\":1.5}", "0..2^60" },
		{ "{\"command\":\"set-rate-limit\",\"device\":\"disk0\",\"ops\":\"5\"}", "0..2^60" },
		{ "{\"command\":\"set-rate-limit\",\"device\":\"disk0\",\"ops\":1152921504606846977}", "0..2^60" },
		{ "{\"command\":\"set-rate-limit\",\"device\":\"disk0\",\"bw_burst\":5}", "needs its rate" },
		{ "{\"command\":\"set-rate-limit\",\"device\":\"net0\",\"ops_one_time\":5}", "needs its rate" },
		{ "{\"command\":\"set-rate-limit\",\"device\":\"disk0\",\"iops\":5}", "unknown member" },
		{ "{\"command\":\"stats\",\"device\":\"disk0\"}", "unknown member" },
	};
	struct api_request r;
	char err[256] = "";
	const char *ok = "{\"command\":\"set-rate-limit\",\"device\":\"net7\","
			 "\"bw\":10485760,\"bw_burst\":4096,\"ops\":1000,"
			 "\"ops_burst\":10,\"bw_one_time\":1,\"ops_one_time\":2}";

	ck_assert_int_eq(api_parse(ok, strlen(ok), &r, err, sizeof(err)), 0);
	ck_assert_int_eq(r.cmd, API_SET_RATE_LIMIT);
	ck_assert(r.net);
	ck_assert_uint_eq(r.index, 7);
	ck_assert_uint_eq(r.rate.struct_size, sizeof(r.rate));
	ck_assert_uint_eq(r.rate.bw, 10485760);
	ck_assert_uint_eq(r.rate.bw_burst, 4096);
	ck_assert_uint_eq(r.rate.bw_one_time, 1);
	ck_assert_uint_eq(r.rate.ops, 1000);
	ck_assert_uint_eq(r.rate.ops_burst, 10);
	ck_assert_uint_eq(r.rate.ops_one_time, 2);
	/* No limit given: unlimited. */
	ok = "{\"command\":\"set-rate-limit\",\"device\":\"disk246\"}";
	ck_assert_int_eq(api_parse(ok, strlen(ok), &r, err, sizeof(err)), 0);
	ck_assert(!r.net);
	ck_assert_uint_eq(r.index, 246);
	ck_assert_uint_eq(r.rate.bw, 0);
	ck_assert_uint_eq(r.rate.ops, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ck_assert_msg(api_parse(bad[i].req, strlen(bad[i].req), &r, err,
					sizeof(err)) == -1, "accepted: %s", bad[i].req);
		ck_assert_msg(strstr(err, bad[i].why), "%s: reason '%s', expected '%s'",
			      bad[i].req, err, bad[i].why);
	}
}
END_TEST

/* set-link: a NIC and a boolean, both required. */
START_TEST(set_link)
{
	static const struct { const char *req, *why; } bad[] = {
		{ "{\"command\":\"set-link\"}", "\"device\" is missing" },
		{ "{\"command\":\"set-link\",\"up\":true}", "\"device\" is missing" },
		{ "{\"command\":\"set-link\",\"device\":\"net0\"}", "\"up\" is missing" },
		{ "{\"command\":\"set-link\",\"device\":\"disk0\",\"up\":true}", "netN" },
		{ "{\"command\":\"set-link\",\"device\":\"net01\",\"up\":true}", "netN" },
		{ "{\"command\":\"set-link\",\"device\":\"net1000\",\"up\":true}", "netN" },
		{ "{\"command\":\"set-link\",\"device\":\"net0\",\"up\":1}", "true or false" },
		{ "{\"command\":\"set-link\",\"device\":\"net0\",\"up\":\"down\"}", "true or false" },
		{ "{\"command\":\"set-link\",\"device\":\"net0\",\"up\":null}", "true or false" },
		{ "{\"command\":\"set-link\",\"device\":\"net0\",\"up\":true,\"bw\":1}", "unknown member" },
		{ "{\"command\":\"set-rate-limit\",\"device\":\"net0\",\"up\":true}", "unknown member" },
		{ "{\"command\":\"info\",\"up\":true}", "unknown member" },
	};
	struct api_request r;
	char err[256] = "";
	const char *ok = "{\"up\":false,\"command\":\"set-link\",\"device\":\"net3\"}";

	ck_assert_int_eq(api_parse(ok, strlen(ok), &r, err, sizeof(err)), 0);
	ck_assert_int_eq(r.cmd, API_SET_LINK);
	ck_assert(r.net);
	ck_assert_uint_eq(r.index, 3);
	ck_assert(!r.up);
	ok = "{\"command\":\"set-link\",\"device\":\"net0\",\"up\":true}";
	ck_assert_int_eq(api_parse(ok, strlen(ok), &r, err, sizeof(err)), 0);
	ck_assert_uint_eq(r.index, 0);
	ck_assert(r.up);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ck_assert_msg(api_parse(bad[i].req, strlen(bad[i].req), &r, err,
					sizeof(err)) == -1, "accepted: %s", bad[i].req);
		ck_assert_msg(strstr(err, bad[i].why), "%s: reason '%s', expected '%s'",
			      bad[i].req, err, bad[i].why);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("api_request");
	TCase *tc = tcase_create("parse");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, commands);
	tcase_add_test(tc, refused);
	tcase_add_test(tc, size_limit);
	tcase_add_test(tc, set_rate_limit);
	tcase_add_test(tc, set_link);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
