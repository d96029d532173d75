/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci's network connected at start (issue 30, `ctr run --cni`),
 * KVM- and root-free: the org.minivmm.network annotation ("create" or
 * "start"; anything else refused with a one-line reason at spec_load(),
 * what `create` reports) and the default without it (at start for a new
 * namespace the runtime makes as root, at create for one joined by path
 * or without a new namespace); the VM's own tap passed over when the
 * namespace is read at start (only it and lo: no NIC, plain `ctr run`);
 * and the records the shim sends then: PROTO_REC_NET_FIND (the MAC the VM's NIC was made with) before
 * NET_LINK (the namespace interface's), decoded by the guest init's
 * config.c into the MAC to look for and the MAC to give; a FIND record
 * of the wrong length is ignored.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "netns.h"
#include "proto.h"
#include "spec.h"

static char dir[64];
static char err[512];

static void setup(void)
{
	char p[128];

	strcpy(dir, "/tmp/check_oci_net_at_start.XXXXXX");
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

/* config.json with a network namespace @ns ("": a new one, ctr's) and @ann. */
static int load_ns(const char *ns, const char *ann, struct oci_spec *s)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/config.json", dir);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"root\":{\"path\":\"rootfs\"},\"process\":{\"args\":[\"sh\"]},"
		"\"linux\":{\"namespaces\":[{\"type\":\"network\"%s%s%s}]},"
		"\"annotations\":%s}", *ns ? ",\"path\":\"" : "", ns, *ns ? "\"" : "", ann);
	fclose(f);
	memset(s, 0, sizeof(*s));
	return spec_load(dir, NULL, s, err, sizeof(err));
}

static int load(const char *ann, struct oci_spec *s)
{
	return load_ns("", ann, s);
}

START_TEST(test_annotation)
{
	struct oci_spec s;

	/* A new namespace: at start by default, as root (it is made then);
	 * not as another user (the VMM process stays in the caller's). */
	ck_assert_int_eq(load("{}", &s), 0);
	ck_assert_int_eq(s.net_mode, SPEC_NET_DEFAULT);
	ck_assert_ptr_null(s.netns_path);
	ck_assert(spec_net_at_start(&s, true));
	ck_assert(!spec_net_at_start(&s, false));
	spec_free(&s);
	ck_assert_int_eq(load("{\"org.minivmm.network\":\"start\"}", &s), 0);
	ck_assert_int_eq(s.net_mode, SPEC_NET_START);
	ck_assert(spec_net_at_start(&s, true));
	ck_assert(spec_net_at_start(&s, false));
	spec_free(&s);
	/* "create": the opt-out, no NIC in a new namespace. */
	ck_assert_int_eq(load("{\"org.minivmm.network\":\"create\"}", &s), 0);
	ck_assert_int_eq(s.net_mode, SPEC_NET_CREATE);
	ck_assert(!spec_net_at_start(&s, true));
	spec_free(&s);
	/* podman's bundle (--network none): create by default, the
	 * annotation still decides. */
	ck_assert_int_eq(load("{\"io.container.manager\":\"libpod\"}", &s), 0);
	ck_assert(s.libpod);
	ck_assert_int_eq(s.net_mode, SPEC_NET_DEFAULT);
	ck_assert(!spec_net_at_start(&s, true));
	spec_free(&s);
	ck_assert_int_eq(load("{\"io.container.manager\":\"libpod\","
			      "\"org.minivmm.network\":\"start\"}", &s), 0);
	ck_assert(spec_net_at_start(&s, true));
	spec_free(&s);
	ck_assert_int_eq(load("{\"io.container.manager\":\"cri-o\"}", &s), 0);
	ck_assert(!s.libpod);
	ck_assert(spec_net_at_start(&s, true));
	spec_free(&s);
	ck_assert_int_eq(load("{\"org.minivmm.network\":\"later\"}", &s), -1);
	ck_assert_str_eq(err, "annotation org.minivmm.network=\"later\": expected create "
			      "or start");
	spec_free(&s);
	ck_assert_int_eq(load("{\"org.minivmm.network\":1}", &s), -1);
	ck_assert_str_eq(err, "annotation org.minivmm.network must be a string");
	spec_free(&s);
}
END_TEST

/* A namespace joined by path (podman's default network): at create
 * unless the annotation says start. */
START_TEST(test_path_default)
{
	struct oci_spec s;

	ck_assert_int_eq(load_ns("/run/netns/x", "{}", &s), 0);
	ck_assert_str_eq(s.netns_path, "/run/netns/x");
	ck_assert(!spec_net_at_start(&s, true));
	spec_free(&s);
	ck_assert_int_eq(load_ns("/run/netns/x", "{\"org.minivmm.network\":\"start\"}",
				 &s), 0);
	ck_assert(spec_net_at_start(&s, true));
	spec_free(&s);
}
END_TEST

START_TEST(test_state_annotations)
{
	json_t *ann = json_loads("{\"org.minivmm.network\":\"start\"}", 0, NULL);
	int mode = -1;

	ck_assert_int_eq(spec_parse_network_annotation(ann, &mode, err, sizeof(err)), 0);
	ck_assert_int_eq(mode, SPEC_NET_START);
	json_decref(ann);
	/* None, or no object at all: the default. */
	ck_assert_int_eq(spec_parse_network_annotation(NULL, &mode, err, sizeof(err)), 0);
	ck_assert_int_eq(mode, SPEC_NET_DEFAULT);
}
END_TEST

/* The namespace read at start holds the VM's own tap (made at create,
 * no address): never chosen; beside lo only, no NIC (`ctr run` without
 * --cni: start sets the tap down, no NET record); beside CNI's veth, the
 * veth, with nothing noted as left out. */
START_TEST(test_own_tap_skipped)
{
	struct netns_if ifs[3];
	struct netns_plan p;
	struct proto_buf b = { 0 };

	memset(ifs, 0, sizeof(ifs));
	strcpy(ifs[0].name, "lo");
	ifs[0].loopback = true;
	strcpy(ifs[1].name, NETNS_TAP);
	ifs[1].has_mac = true;
	memcpy(ifs[1].mac, "\x02\xaa\xbb\xcc\xdd\xee", 6);
	ifs[1].mtu = 1500;
	ck_assert_int_eq(netns_choose(ifs, 2, &p, err, sizeof(err)), 0);
	ck_assert(!p.nic);
	ck_assert_str_eq(p.notes, "");
	p.find = true;
	netns_encode(&p, &b);
	ck_assert_uint_eq(b.len, 0);
	proto_buf_free(&b);
	strcpy(ifs[2].name, "eth0");
	ifs[2].has_mac = true;
	memcpy(ifs[2].mac, "\x2a\x11\x22\x33\x44\x55", 6);
	ifs[2].mtu = 1500;
	ifs[2].addrs[0].family = 4;
	ifs[2].addrs[0].plen = 24;
	memcpy(ifs[2].addrs[0].a, "\xc6\x13\x07\x02", 4);
	ifs[2].naddrs = 1;
	ck_assert_int_eq(netns_choose(ifs, 3, &p, err, sizeof(err)), 0);
	ck_assert(p.nic);
	ck_assert_str_eq(p.ifc.name, "eth0");
	ck_assert_str_eq(p.notes, "");
	/* Another address-less interface is still refused. */
	strcpy(ifs[1].name, "dummy0");
	ck_assert_int_eq(netns_choose(ifs, 2, &p, err, sizeof(err)), -1);
}
END_TEST

START_TEST(test_find_record)
{
	static struct init_config c;
	struct proto_buf b = { 0 };
	struct netns_plan p;
	struct netns_if f;

	memset(&f, 0, sizeof(f));
	strcpy(f.name, "eth0");
	f.has_mac = true;
	memcpy(f.mac, "\x2a\x11\x22\x33\x44\x55", 6);
	f.mtu = 1500;
	f.addrs[0].family = 4;
	f.addrs[0].plen = 24;
	memcpy(f.addrs[0].a, "\xc6\x13\x05\x02", 4);
	f.naddrs = 1;
	ck_assert_int_eq(netns_choose(&f, 1, &p, err, sizeof(err)), 0);
	p.find = true;
	memcpy(p.find_mac, "\x02\xaa\xbb\xcc\xdd\xee", 6);
	proto_rec_str(&b, PROTO_REC_ARG, "true");
	netns_encode(&p, &b);
	ck_assert_int_eq(b.err, 0);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(init_config_parse(&c, b.data, (uint32_t)b.len), 0);
	ck_assert(c.net.has_link);
	ck_assert(c.net.has_find);
	ck_assert_mem_eq(c.net.find_mac, "\x02\xaa\xbb\xcc\xdd\xee", 6);
	ck_assert_mem_eq(c.net.mac, "\x2a\x11\x22\x33\x44\x55", 6);
	ck_assert_mem_eq(c.net.addrs[0].a, "\xc6\x13\x05\x02", 4);
	init_config_free(&c);
	proto_buf_free(&b);
	/* Without find: no FIND record (podman's path, NIC made with the
	 * veth's MAC). */
	p.find = false;
	memset(&b, 0, sizeof(b));
	proto_rec_str(&b, PROTO_REC_ARG, "true");
	netns_encode(&p, &b);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(init_config_parse(&c, b.data, (uint32_t)b.len), 0);
	ck_assert(c.net.has_link);
	ck_assert(!c.net.has_find);
	init_config_free(&c);
	proto_buf_free(&b);
	/* A FIND record of the wrong length: ignored. */
	memset(&b, 0, sizeof(b));
	proto_rec_str(&b, PROTO_REC_ARG, "true");
	proto_rec(&b, PROTO_REC_NET_FIND, "\x02\xaa\xbb\xcc\xdd", 5);
	proto_rec(&b, PROTO_REC_NET_FIND, "\x02\xaa\xbb\xcc\xdd\xee\xff", 7);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(init_config_parse(&c, b.data, (uint32_t)b.len), 0);
	ck_assert(!c.net.has_find);
	init_config_free(&c);
	proto_buf_free(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oci_net_at_start");
	TCase *tc = tcase_create("net_at_start");
	SRunner *sr;
	int nf;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_annotation);
	tcase_add_test(tc, test_path_default);
	tcase_add_test(tc, test_state_annotations);
	tcase_add_test(tc, test_own_tap_skipped);
	tcase_add_test(tc, test_find_record);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
