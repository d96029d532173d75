/* SPDX-License-Identifier: MIT */
/*
 * The VOLUME records of the CONFIG message (proto.h): spec_encode() sends
 * each volume as dest, tag, flags, in order among the MOUNT records, and
 * the guest init's decoder (guest-init/config.c) gets them back as
 * virtio-fs mounts by tag (a bound file's as a VOLUME_FILE: its share's
 * file bound over dest); hostile records (no NULs, empty, truncated,
 * more than the table holds, mixed with MOUNTs) stay bounded, leak nothing
 * (ASan) and a truncated one makes the payload malformed.
 *
 * FUZZ_SEED_OUT=DIR writes the encoded payload as DIR/volumes (the seed in
 * tests/fuzz/corpus/fuzz_oci_init_config/).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "proto.h"
#include "spec.h"

static char dir[64];
static char err[1024];

static void setup(void)
{
	char p[128];

	strcpy(dir, "/tmp/check_oci_volume_records.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/rootfs", dir);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/vol", dir);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/app.conf", dir);
	ck_assert_int_eq(close(creat(p, 0644)), 0);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_round_trip)
{
	static struct init_config c;
	const char *out = getenv("FUZZ_SEED_OUT");
	struct proto_buf b = { 0 };
	struct oci_spec s;
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/config.json", dir);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"root\":{\"path\":\"rootfs\"},\"process\":{\"args\":[\"sh\"]},"
		"\"mounts\":[{\"destination\":\"/data\",\"type\":\"bind\",\"source\":"
		"\"%s/vol\",\"options\":[\"rbind\"]},{\"destination\":\"/data/tmp\","
		"\"type\":\"tmpfs\",\"source\":\"tmpfs\",\"options\":[\"size=1m\"]},"
		"{\"destination\":\"/ro\",\"type\":\"bind\",\"source\":\"%s/vol\","
		"\"options\":[\"ro\",\"nosuid\",\"rbind\"]},{\"destination\":"
		"\"/etc/app.conf\",\"type\":\"bind\",\"source\":\"%s/app.conf\","
		"\"options\":[\"rbind\",\"ro\"]}],"
		"\"linux\":{\"namespaces\":[{\"type\":\"network\"}]}}", dir, dir, dir);
	fclose(f);
	ck_assert_msg(!spec_load(dir, NULL, &s, err, sizeof(err)), "%s", err);
	spec_encode(&s, 0, 0, &b);
	ck_assert_int_eq(b.err, 0);
	if (out && *out) {
		snprintf(p, sizeof(p), "%s/volumes", out);
		f = fopen(p, "wb");
		ck_assert_ptr_nonnull(f);
		ck_assert_uint_eq(fwrite(b.data, 1, b.len, f), b.len);
		fclose(f);
	}
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(init_config_parse(&c, b.data, (uint32_t)b.len), 0);
	ck_assert_uint_eq(c.nmounts, 4);
	ck_assert(c.mounts[0].volume && !c.mounts[0].vfile);
	ck_assert_str_eq(c.mounts[0].dest, "/data");
	ck_assert_str_eq(c.mounts[0].type, "virtiofs");
	ck_assert_str_eq(c.mounts[0].source, "minivmm-vol0");
	ck_assert_str_eq(c.mounts[0].options, "");
	/* In order: the tmpfs over the volume comes after it. */
	ck_assert(!c.mounts[1].volume);
	ck_assert_str_eq(c.mounts[1].type, "tmpfs");
	ck_assert_str_eq(c.mounts[1].options, "size=1m");
	ck_assert(c.mounts[2].volume);
	ck_assert_str_eq(c.mounts[2].source, "minivmm-vol1");
	ck_assert_str_eq(c.mounts[2].options, "ro,nosuid");
	ck_assert(!c.mounts[2].vfile);
	/* A bound file (not one of the engine's): a volume of its own, sent
	 * as VOLUME_FILE. */
	ck_assert(c.mounts[3].volume && c.mounts[3].vfile && !c.mounts[3].file);
	ck_assert_str_eq(c.mounts[3].dest, "/etc/app.conf");
	ck_assert_str_eq(c.mounts[3].source, "minivmm-vol2");
	ck_assert_str_eq(c.mounts[3].options, "ro");
	init_config_free(&c);
	proto_buf_free(&b);
	spec_free(&s);
}
END_TEST

START_TEST(test_hostile)
{
	static struct init_config c;
	static const uint8_t nonul[] = "abcdef";
	struct proto_buf b = { 0 };

	proto_rec_str(&b, PROTO_REC_ARG, "sh");
	proto_rec(&b, PROTO_REC_VOLUME, nonul, 6);  /* dest only */
	proto_rec(&b, PROTO_REC_VOLUME, NULL, 0);    /* empty */
	proto_rec(&b, PROTO_REC_VOLUME, "\0\0\0\0\0", 5);
	/* Far more than the table, volumes and mounts mixed. */
	for (unsigned int i = 0; i < 2 * INIT_MAX_MOUNTS; i++) {
		const char *v[3] = { "/d", "minivmm-vol0", "ro" };
		const char *m[4] = { "/t", "tmpfs", "tmpfs", "" };

		if (i & 1)
			proto_rec_strs(&b, PROTO_REC_VOLUME, v, 3);
		else
			proto_rec_strs(&b, PROTO_REC_MOUNT, m, 4);
	}
	ck_assert_int_eq(b.err, 0);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(init_config_parse(&c, b.data, (uint32_t)b.len), 0);
	ck_assert_uint_eq(c.nmounts, INIT_MAX_MOUNTS);
	ck_assert(c.mounts[0].volume);
	ck_assert_str_eq(c.mounts[0].dest, "abcdef");
	ck_assert_str_eq(c.mounts[0].source, "");
	ck_assert_str_eq(c.mounts[0].options, "");
	ck_assert_str_eq(c.mounts[1].dest, "");
	ck_assert_str_eq(c.mounts[2].options, "");
	ck_assert(!c.mounts[3].volume && c.mounts[4].volume);
	ck_assert_str_eq(c.mounts[4].options, "ro");
	init_config_free(&c);
	/* The last record cut short: malformed, nothing leaked. */
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(init_config_parse(&c, b.data, (uint32_t)b.len - 1), -EINVAL);
	init_config_free(&c);
	proto_buf_free(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oci_volume_records");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_hostile);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
