/* SPDX-License-Identifier: MIT */
/*
 * The addresses netns_local_path() (examples/oci/netns.c) gives the
 * container namespace's own stack to reach the VM through its tap:
 * netns_local_addrs() takes the interface's first IPv4 address with a
 * prefix of 1..30 as the VM's, and the highest host address of that
 * prefix that is neither one of the interface's nor an IPv4 gateway as
 * the namespace's (slirp4netns: 10.0.2.100/24 via 10.0.2.2, DNS 10.0.2.3
 * -> 10.0.2.254);
 * none for no NIC, only IPv6, a /31 or /32, or a prefix with no room.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "netns.h"

static struct netns_plan plan(const char *v4, uint8_t plen)
{
	struct netns_plan p;

	memset(&p, 0, sizeof(p));
	p.nic = true;
	snprintf(p.ifc.name, sizeof(p.ifc.name), "tap0");
	if (v4) {
		p.ifc.addrs[0].family = 4;
		p.ifc.addrs[0].plen = plen;
		sscanf(v4, "%hhu.%hhu.%hhu.%hhu", &p.ifc.addrs[0].a[0], &p.ifc.addrs[0].a[1],
		       &p.ifc.addrs[0].a[2], &p.ifc.addrs[0].a[3]);
		p.ifc.naddrs = 1;
	}
	return p;
}

static void gw(struct netns_plan *p, uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	struct netns_route *r = &p->routes[p->nroutes++];

	r->family = 4;
	r->gw[0] = a;
	r->gw[1] = b;
	r->gw[2] = c;
	r->gw[3] = d;
}

#define IP4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))

START_TEST(test_slirp4netns)
{
	struct netns_plan p = plan("10.0.2.100", 24);
	unsigned int plen;
	uint32_t vm, loc;

	gw(&p, 10, 0, 2, 2);
	ck_assert_int_eq(netns_local_addrs(&p, &vm, &plen, &loc), 0);
	ck_assert_uint_eq(vm, IP4(10, 0, 2, 100));
	ck_assert_uint_eq(plen, 24);
	ck_assert_uint_eq(loc, IP4(10, 0, 2, 254));
}
END_TEST

START_TEST(test_skips_taken)
{
	/* The VM at .254 and a gateway at .253: .252. */
	struct netns_plan p = plan("192.168.7.254", 24);
	unsigned int plen;
	uint32_t vm, loc;

	gw(&p, 192, 168, 7, 253);
	ck_assert_int_eq(netns_local_addrs(&p, &vm, &plen, &loc), 0);
	ck_assert_uint_eq(loc, IP4(192, 168, 7, 252));
}
END_TEST

START_TEST(test_skips_own_addresses)
{
	/* A second address of the interface at .254: .253. */
	struct netns_plan p = plan("10.0.2.100", 24);
	unsigned int plen;
	uint32_t vm, loc;

	p.ifc.addrs[1] = p.ifc.addrs[0];
	p.ifc.addrs[1].a[3] = 254;
	p.ifc.naddrs = 2;
	ck_assert_int_eq(netns_local_addrs(&p, &vm, &plen, &loc), 0);
	ck_assert_uint_eq(vm, IP4(10, 0, 2, 100));
	ck_assert_uint_eq(loc, IP4(10, 0, 2, 253));
}
END_TEST

START_TEST(test_small_prefixes)
{
	unsigned int plen;
	uint32_t vm, loc;
	struct netns_plan p = plan("198.18.0.1", 30); /* hosts .1 and .2 */

	ck_assert_int_eq(netns_local_addrs(&p, &vm, &plen, &loc), 0);
	ck_assert_uint_eq(loc, IP4(198, 18, 0, 2));
	gw(&p, 198, 18, 0, 2); /* the other host is the gateway: no room */
	ck_assert_int_eq(netns_local_addrs(&p, &vm, &plen, &loc), -1);
	p = plan("198.18.0.1", 31);
	ck_assert_int_eq(netns_local_addrs(&p, &vm, &plen, &loc), -1);
	p = plan("198.18.0.1", 32);
	ck_assert_int_eq(netns_local_addrs(&p, &vm, &plen, &loc), -1);
	p = plan("198.18.0.1", 0);
	ck_assert_int_eq(netns_local_addrs(&p, &vm, &plen, &loc), -1);
}
END_TEST

START_TEST(test_none)
{
	unsigned int plen;
	uint32_t vm, loc;
	struct netns_plan p = plan(NULL, 0);

	ck_assert_int_eq(netns_local_addrs(&p, &vm, &plen, &loc), -1); /* no address */
	p.ifc.addrs[0].family = 6;
	p.ifc.addrs[0].plen = 64;
	p.ifc.naddrs = 1;
	ck_assert_int_eq(netns_local_addrs(&p, &vm, &plen, &loc), -1); /* IPv6 only */
	p = plan("10.0.2.100", 24);
	p.nic = false;
	ck_assert_int_eq(netns_local_addrs(&p, &vm, &plen, &loc), -1); /* no NIC */
}
END_TEST

START_TEST(test_first_ipv4)
{
	/* An IPv6 address first, then a /31 (skipped), then the /24. */
	struct netns_plan p = plan(NULL, 0);
	unsigned int plen;
	uint32_t vm, loc;

	p.ifc.addrs[0].family = 6;
	p.ifc.addrs[0].plen = 64;
	p.ifc.addrs[1].family = 4;
	p.ifc.addrs[1].plen = 31;
	memcpy(p.ifc.addrs[1].a, "\xc6\x12\x00\x08", 4);
	p.ifc.addrs[2].family = 4;
	p.ifc.addrs[2].plen = 24;
	memcpy(p.ifc.addrs[2].a, "\xc6\x12\x01\x05", 4);
	p.ifc.naddrs = 3;
	ck_assert_int_eq(netns_local_addrs(&p, &vm, &plen, &loc), 0);
	ck_assert_uint_eq(vm, IP4(198, 18, 1, 5));
	ck_assert_uint_eq(loc, IP4(198, 18, 1, 254));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oci_netns_local");
	TCase *tc = tcase_create("addrs");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_slirp4netns);
	tcase_add_test(tc, test_skips_taken);
	tcase_add_test(tc, test_skips_own_addresses);
	tcase_add_test(tc, test_small_prefixes);
	tcase_add_test(tc, test_none);
	tcase_add_test(tc, test_first_ipv4);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
