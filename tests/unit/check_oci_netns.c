/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci's network plan (examples/oci/netns.c), KVM- and root-free:
 * which interface of the container's namespace the VM takes over (the
 * first non-loopback with an address; only lo: no NIC; interfaces but
 * none with an address, no MAC, a bad MTU: refused), the routes read from
 * /proc/net/route and /proc/net/ipv6_route texts (on-link first, link-
 * local/multicast/local skipped, malformed lines ignored, a bounded
 * table), and the PROTO_REC_NET_* records decoded by the guest init's
 * config.c into the same values; hostile NET records are ignored.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "netns.h"
#include "proto.h"

static char err[512];

static struct netns_if mkif(const char *name, bool lo, const char *v4, uint8_t plen)
{
	struct netns_if f;

	memset(&f, 0, sizeof(f));
	snprintf(f.name, sizeof(f.name), "%s", name);
	f.loopback = lo;
	f.has_mac = !lo;
	memcpy(f.mac, "\x2a\x11\x22\x33\x44\x55", 6);
	f.mtu = lo ? 65536 : 1500;
	if (v4) {
		f.addrs[0].family = 4;
		f.addrs[0].plen = plen;
		sscanf(v4, "%hhu.%hhu.%hhu.%hhu", &f.addrs[0].a[0], &f.addrs[0].a[1],
		       &f.addrs[0].a[2], &f.addrs[0].a[3]);
		f.naddrs = 1;
	}
	return f;
}

START_TEST(test_choose)
{
	struct netns_if ifs[4];
	struct netns_plan p;

	/* Only lo (podman --network none's kind): no NIC, no error. */
	ifs[0] = mkif("lo", true, "127.0.0.1", 8);
	ck_assert_int_eq(netns_choose(ifs, 1, &p, err, sizeof(err)), 0);
	ck_assert(!p.nic);
	ck_assert_int_eq(netns_choose(ifs, 0, &p, err, sizeof(err)), 0);
	ck_assert(!p.nic);
	/* Interfaces without an address: refused. */
	ifs[1] = mkif("dummy0", false, NULL, 0);
	ck_assert_int_eq(netns_choose(ifs, 2, &p, err, sizeof(err)), -1);
	ck_assert(strstr(err, "none with an IPv4 or IPv6 address"));
	/* A link-local IPv6 address alone does not count. */
	ifs[1].addrs[0].family = 6;
	ifs[1].addrs[0].a[0] = 0xfe;
	ifs[1].addrs[0].a[1] = 0x80;
	ifs[1].naddrs = 1;
	ck_assert_int_eq(netns_choose(ifs, 2, &p, err, sizeof(err)), -1);
	/* Many: the first non-lo with an address; the others noted. */
	ifs[2] = mkif("eth0", false, "10.88.0.7", 16);
	ifs[3] = mkif("eth1", false, "198.18.0.2", 24);
	ck_assert_int_eq(netns_choose(ifs, 4, &p, err, sizeof(err)), 0);
	ck_assert(p.nic);
	ck_assert_str_eq(p.ifc.name, "eth0");
	ck_assert_uint_eq(p.ifc.naddrs, 1);
	ck_assert_uint_eq(p.ifc.addrs[0].plen, 16);
	ck_assert(strstr(p.notes, "dummy0") && strstr(p.notes, "eth1"));
	/* No MAC (an ipip, a tun), a bad MTU: refused. */
	ifs[2].has_mac = false;
	ck_assert_int_eq(netns_choose(ifs + 2, 1, &p, err, sizeof(err)), -1);
	ck_assert(strstr(err, "no Ethernet address"));
	ifs[2].has_mac = true;
	ifs[2].mtu = 0;
	ck_assert_int_eq(netns_choose(ifs + 2, 1, &p, err, sizeof(err)), -1);
	ck_assert(strstr(err, "MTU 0"));
}
END_TEST

/* CNI's routes for eth0 (default via 10.88.0.1, 10.88.0.0/16 on-link),
 * one of another interface, a malformed line, a non-contiguous mask. */
static const char route4[] =
	"Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
	"eth0\t00000000\t0100580A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
	"eth0\t0000580A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
	"eth1\t00000000\t010012C6\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
	"eth0\tzz\n"
	"eth0\t0000580A\t00000000\t0001\t0\t0\t0\t00FF00FF\t0\t0\t0\n"
	"eth0\t0000580A\t00000000\t0000\t0\t0\t0\t0000FFFF\t0\t0\t0\n";

/* fd00::/64 on-link, default via fd00::1, fe80::/64, a local and a
 * multicast entry, one of lo. */
static const char route6[] =
	"fd000000000000000000000000000000 40 00000000000000000000000000000000 00 "
	"00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0\n"
	"00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
	"fd000000000000000000000000000001 00000400 00000001 00000000 00000003     eth0\n"
	"fe800000000000000000000000000000 40 00000000000000000000000000000000 00 "
	"00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0\n"
	"fd000000000000000000000000000007 80 00000000000000000000000000000000 00 "
	"00000000000000000000000000000000 00000000 00000002 00000000 80200001     eth0\n"
	"ff000000000000000000000000000000 08 00000000000000000000000000000000 00 "
	"00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0\n"
	"00000000000000000000000000000001 80 00000000000000000000000000000000 00 "
	"00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo\n"
	"garbage\n";

static void plan_eth0(struct netns_plan *p)
{
	struct netns_if f = mkif("eth0", false, "10.88.0.7", 16);

	ck_assert_int_eq(netns_choose(&f, 1, p, err, sizeof(err)), 0);
}

START_TEST(test_routes)
{
	struct netns_plan p;

	plan_eth0(&p);
	netns_parse_route4(&p, route4);
	netns_parse_route6(&p, route6);
	ck_assert_uint_eq(p.nroutes, 4);
	/* On-link first (in their order), then via a gateway. */
	ck_assert_uint_eq(p.routes[0].family, 4);
	ck_assert_uint_eq(p.routes[0].plen, 16);
	ck_assert_mem_eq(p.routes[0].dst, "\x0a\x58\x00\x00", 4);
	ck_assert_uint_eq(p.routes[1].family, 6);
	ck_assert_uint_eq(p.routes[1].plen, 64);
	ck_assert_uint_eq(p.routes[1].dst[0], 0xfd);
	ck_assert_uint_eq(p.routes[1].metric, 256);
	ck_assert_uint_eq(p.routes[2].family, 4);
	ck_assert_uint_eq(p.routes[2].plen, 0);
	ck_assert_mem_eq(p.routes[2].gw, "\x0a\x58\x00\x01", 4);
	ck_assert_uint_eq(p.routes[3].family, 6);
	ck_assert_uint_eq(p.routes[3].gw[15], 1);
	ck_assert_uint_eq(p.routes[3].metric, 1024);
	/* Without a NIC nothing is read; a NULL or empty text is nothing. */
	memset(&p, 0, sizeof(p));
	netns_parse_route4(&p, route4);
	ck_assert_uint_eq(p.nroutes, 0);
	plan_eth0(&p);
	netns_parse_route4(&p, "");
	netns_parse_route6(&p, NULL);
	ck_assert_uint_eq(p.nroutes, 0);
}
END_TEST

START_TEST(test_route_limit)
{
	static char text[64 * 80];
	struct netns_plan p;
	size_t n = 0;

	plan_eth0(&p);
	for (int i = 0; i < 40; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "eth0\t%08X\t00000000\t0001\t0\t0\t0\tFFFFFFFF\t0\t0\t0\n",
				      (unsigned int)i);
	netns_parse_route4(&p, text);
	ck_assert_uint_eq(p.nroutes, NETNS_MAX_ROUTES);
	ck_assert(strstr(p.notes, "routes past the limit"));
}
END_TEST

/* What the shim sends is what the guest init configures. */
START_TEST(test_encode_decode)
{
	static struct init_config c;
	struct proto_buf b = { 0 };
	struct netns_plan p;

	plan_eth0(&p);
	p.ifc.addrs[1].family = 6;
	p.ifc.addrs[1].plen = 64;
	p.ifc.addrs[1].a[0] = 0xfd;
	p.ifc.addrs[1].a[15] = 7;
	p.ifc.naddrs = 2;
	netns_parse_route4(&p, route4);
	netns_parse_route6(&p, route6);
	proto_rec_str(&b, PROTO_REC_ARG, "true");
	netns_encode(&p, &b);
	ck_assert_int_eq(b.err, 0);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(init_config_parse(&c, b.data, (uint32_t)b.len), 0);
	ck_assert(c.net.has_link);
	ck_assert_str_eq(c.net.name, "eth0");
	ck_assert_uint_eq(c.net.mtu, 1500);
	ck_assert_mem_eq(c.net.mac, "\x2a\x11\x22\x33\x44\x55", 6);
	ck_assert_uint_eq(c.net.naddrs, 2);
	ck_assert_mem_eq(c.net.addrs[0].a, "\x0a\x58\x00\x07", 4);
	ck_assert_uint_eq(c.net.addrs[1].family, 6);
	ck_assert_uint_eq(c.net.addrs[1].a[15], 7);
	ck_assert_uint_eq(c.net.nroutes, p.nroutes);
	for (unsigned int i = 0; i < p.nroutes; i++) {
		ck_assert_uint_eq(c.net.routes[i].family, p.routes[i].family);
		ck_assert_uint_eq(c.net.routes[i].plen, p.routes[i].plen);
		ck_assert_uint_eq(c.net.routes[i].metric, p.routes[i].metric);
		ck_assert_mem_eq(c.net.routes[i].dst, p.routes[i].dst, 16);
		ck_assert_mem_eq(c.net.routes[i].gw, p.routes[i].gw, 16);
	}
	init_config_free(&c);
	proto_buf_free(&b);
	/* No NIC: no records. */
	memset(&p, 0, sizeof(p));
	memset(&b, 0, sizeof(b));
	netns_encode(&p, &b);
	ck_assert_uint_eq(b.len, 0);
}
END_TEST

/* NET records a host could get wrong: each ignored, never stored. */
START_TEST(test_hostile_records)
{
	static struct init_config c;
	struct proto_buf b = { 0 };
	uint8_t v[64];

	proto_rec_str(&b, PROTO_REC_ARG, "true");
	memset(v, 0, sizeof(v));
	proto_rec(&b, PROTO_REC_NET_LINK, v, 9);		  /* short */
	memcpy(v + 10, "eth0/../x", 9);
	proto_rec(&b, PROTO_REC_NET_LINK, v, 19);		  /* '/' in the name */
	memcpy(v + 10, "abcdefghijklmnopq", 17);
	proto_rec(&b, PROTO_REC_NET_LINK, v, 27);		  /* name too long */
	v[0] = 5;
	proto_rec(&b, PROTO_REC_NET_ADDR, v, 6);		  /* family 5 */
	v[0] = 4;
	v[1] = 33;
	proto_rec(&b, PROTO_REC_NET_ADDR, v, 6);		  /* /33 */
	v[1] = 24;
	proto_rec(&b, PROTO_REC_NET_ADDR, v, 18);		  /* v4, v6 length */
	v[0] = 6;
	v[1] = 129;
	proto_rec(&b, PROTO_REC_NET_ROUTE, v, 38);		  /* /129 */
	v[1] = 0;
	proto_rec(&b, PROTO_REC_NET_ROUTE, v, 14);		  /* v6, v4 length */
	for (int i = 0; i < 100; i++) {			  /* past the tables */
		v[0] = 4;
		v[1] = 32;
		proto_rec(&b, PROTO_REC_NET_ADDR, v, 6);
		proto_rec(&b, PROTO_REC_NET_ROUTE, v, 14);
	}
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(init_config_parse(&c, b.data, (uint32_t)b.len), 0);
	ck_assert(!c.net.has_link);
	ck_assert_uint_eq(c.net.naddrs, INIT_MAX_NET_ADDRS);
	ck_assert_uint_eq(c.net.nroutes, INIT_MAX_NET_ROUTES);
	for (unsigned int i = 0; i < c.net.naddrs; i++)
		ck_assert_uint_eq(c.net.addrs[i].plen, 32);
	init_config_free(&c);
	proto_buf_free(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oci_netns");
	TCase *tc = tcase_create("plan");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, test_choose);
	tcase_add_test(tc, test_routes);
	tcase_add_test(tc, test_route_limit);
	tcase_add_test(tc, test_encode_decode);
	tcase_add_test(tc, test_hostile_records);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
