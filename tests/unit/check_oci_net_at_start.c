/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci's network connected at start (issue 30, `ctr run --cni`),
 * KVM- and root-free: the org.minivmm.network annotation ("create", the
 * default, or "start"; anything else refused with a one-line reason at
 * spec_load(), what `create` reports), and the records the shim sends
 * then: PROTO_REC_NET_FIND (the MAC the VM's NIC was made with) before
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

/* config.json with a new network namespace (ctr's) and @ann. */
static int load(const char *ann, struct oci_spec *s)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/config.json", dir);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"root\":{\"path\":\"rootfs\"},\"process\":{\"args\":[\"sh\"]},"
		"\"linux\":{\"namespaces\":[{\"type\":\"network\"}]},\"annotations\":%s}",
		ann);
	fclose(f);
	memset(s, 0, sizeof(*s));
	return spec_load(dir, NULL, s, err, sizeof(err));
}

START_TEST(test_annotation)
{
	struct oci_spec s;

	ck_assert_int_eq(load("{}", &s), 0);
	ck_assert(!s.net_at_start);
	ck_assert_ptr_null(s.netns_path);
	spec_free(&s);
	ck_assert_int_eq(load("{\"org.minivmm.network\":\"start\"}", &s), 0);
	ck_assert(s.net_at_start);
	spec_free(&s);
	ck_assert_int_eq(load("{\"org.minivmm.network\":\"create\"}", &s), 0);
	ck_assert(!s.net_at_start);
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

/* What `minivmm-oci start` reads from state.json's annotations. */
START_TEST(test_state_annotations)
{
	json_t *ann = json_loads("{\"org.minivmm.network\":\"start\"}", 0, NULL);
	bool at = false;

	ck_assert_int_eq(spec_parse_network_annotation(ann, &at, err, sizeof(err)), 0);
	ck_assert(at);
	json_decref(ann);
	/* None, or no object at all: at create. */
	ck_assert_int_eq(spec_parse_network_annotation(NULL, &at, err, sizeof(err)), 0);
	ck_assert(!at);
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
	tcase_add_test(tc, test_state_annotations);
	tcase_add_test(tc, test_find_record);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
