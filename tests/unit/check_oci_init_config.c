/* SPDX-License-Identifier: MIT */
/*
 * The guest init's CONFIG decoder (examples/oci/guest-init/config.c, split
 * from init.c): what spec_encode() sends for a podman-shaped config.json
 * comes back field for field; a truncated payload or one without ARG is
 * malformed; repeated and oversized records neither leak (ASan) nor
 * overflow a table; records of the wrong length are ignored.
 *
 * FUZZ_SEED_OUT=DIR writes the encoded payloads there, named as in
 * tests/fuzz/corpus/fuzz_oci_init_config/ (that corpus was made so:
 * `FUZZ_SEED_OUT=tests/fuzz/corpus/fuzz_oci_init_config build/check_oci_init_config`).
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
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

static void write_file(const char *name, const char *text)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void setup(void)
{
	char p[128];

	strcpy(dir, "/tmp/check_oci_init_config.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/rootfs", dir);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/shm", dir);
	ck_assert_int_eq(mkdir(p, 0755), 0);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Encode @json (a config.json) as the shim does; keep a seed if asked. */
static void encode(const char *json, const char *seed, uint16_t rows,
		   uint16_t cols, struct oci_spec *s, struct proto_buf *b)
{
	const char *out = getenv("FUZZ_SEED_OUT");

	write_file("config.json", json);
	ck_assert_msg(!spec_load(dir, NULL, s, err, sizeof(err)), "%s", err);
	memset(b, 0, sizeof(*b));
	spec_encode(s, rows, cols, b);
	ck_assert_int_eq(b->err, 0);
	if (out && *out) {
		char p[512];
		FILE *f;

		snprintf(p, sizeof(p), "%s/%s", out, seed);
		f = fopen(p, "wb");
		ck_assert_ptr_nonnull(f);
		ck_assert_uint_eq(fwrite(b->data, 1, b->len, f), b->len);
		fclose(f);
	}
}

/* podman run -t --memory 256m --cap-drop all --cap-add NET_ADMIN
 * --security-opt no-new-privileges, as config.json (abridged). */
#define PODMAN_JSON                                                                \
	"{\"ociVersion\":\"1.0.2-dev\",\"root\":{\"path\":\"rootfs\",\"readonly\":true},"  \
	"\"hostname\":\"c0ffee\",\"process\":{\"terminal\":true,"                    \
	"\"user\":{\"uid\":1000,\"gid\":100,\"umask\":18,\"additionalGids\":[10,11]}," \
	"\"args\":[\"sh\",\"-c\",\"echo hi\"],\"env\":[\"PATH=/bin\",\"TERM=xterm\"],"   \
	"\"cwd\":\"/srv\",\"capabilities\":{\"bounding\":[\"CAP_NET_ADMIN\"],"        \
	"\"effective\":[\"CAP_NET_ADMIN\"],\"permitted\":[\"CAP_NET_ADMIN\"]},"       \
	"\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":1048576,\"soft\":1024}],"   \
	"\"noNewPrivileges\":true},"                                                  \
	"\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\","  \
	"\"options\":[\"nosuid\",\"noexec\",\"nodev\"]},{\"destination\":\"/dev\","      \
	"\"type\":\"tmpfs\",\"source\":\"tmpfs\",\"options\":[\"nosuid\",\"strictatime\"," \
	"\"mode=755\",\"size=65536k\"]},{\"destination\":\"/dev/shm\",\"type\":\"bind\"," \
	"\"source\":\"%s/shm\",\"options\":[\"bind\"]}],"                              \
	"\"linux\":{\"namespaces\":[{\"type\":\"network\"}],"                      \
	"\"sysctl\":{\"net.ipv4.ping_group_range\":\"0 0\"},"                          \
	"\"maskedPaths\":[\"/proc/kcore\",\"/sys/firmware\"],"                        \
	"\"readonlyPaths\":[\"/proc/sys\"],\"devices\":[{\"type\":\"c\","             \
	"\"path\":\"/dev/fuse\",\"major\":10,\"minor\":229,\"fileMode\":438,"          \
	"\"uid\":0,\"gid\":0}]}}"

START_TEST(test_podman_round_trip)
{
	static struct init_config c;
	struct proto_buf b;
	struct oci_spec s;
	char json[4096];

	snprintf(json, sizeof(json), PODMAN_JSON, dir);
	encode(json, "podman_tty_caps", 33, 77, &s, &b);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(init_config_parse(&c, b.data, (uint32_t)b.len), 0);
	ck_assert_uint_eq(c.nargs, 3);
	ck_assert_str_eq(c.args[2], "echo hi");
	ck_assert_ptr_null(c.args[3]);
	ck_assert_uint_eq(c.nenv, 2);
	ck_assert_str_eq(c.env[1], "TERM=xterm");
	ck_assert_ptr_null(c.env[2]);
	ck_assert_str_eq(c.cwd, "/srv");
	ck_assert_str_eq(c.hostname, "c0ffee");
	ck_assert_uint_eq(c.uid, 1000);
	ck_assert_uint_eq(c.gid, 100);
	ck_assert_uint_eq(c.umask_v, 18);
	ck_assert_uint_eq(c.ngroups, 2);
	ck_assert_uint_eq(c.groups[1], 11);
	ck_assert(c.terminal && c.root_ro && c.nnp);
	ck_assert_uint_eq(c.rows, 33);
	ck_assert_uint_eq(c.cols, 77);
	ck_assert(c.has_caps);
	ck_assert_uint_eq(c.caps[PROTO_CAP_BOUNDING], 1ull << 12);
	ck_assert_uint_eq(c.caps[PROTO_CAP_AMBIENT], 0);
	/* /dev/shm became a tmpfs the guest mounts. */
	ck_assert_uint_eq(c.nmounts, 3);
	ck_assert_str_eq(c.mounts[1].dest, "/dev");
	ck_assert_str_eq(c.mounts[1].type, "tmpfs");
	ck_assert_str_eq(c.mounts[1].source, "tmpfs");
	ck_assert_str_eq(c.mounts[1].options, "nosuid,strictatime,mode=755,size=65536k");
	ck_assert_str_eq(c.mounts[2].dest, "/dev/shm");
	ck_assert_uint_eq(c.nrlimits, 1);
	ck_assert_uint_eq(c.rlimits[0].soft, 1024);
	ck_assert_uint_eq(c.rlimits[0].hard, 1048576);
	ck_assert_uint_eq(c.nmasked, 2);
	ck_assert_str_eq(c.masked[1], "/sys/firmware");
	ck_assert_uint_eq(c.nropaths, 1);
	ck_assert_uint_eq(c.nsysctls, 1);
	ck_assert_str_eq(c.sysctls[0][0], "net.ipv4.ping_group_range");
	ck_assert_str_eq(c.sysctls[0][1], "0 0");
	ck_assert_uint_eq(c.ndevs, 1);
	ck_assert_int_eq(c.devs[0].type, 'c');
	ck_assert_uint_eq(c.devs[0].major, 10);
	ck_assert_uint_eq(c.devs[0].minor, 229);
	ck_assert_uint_eq(c.devs[0].mode, 0666);
	ck_assert_str_eq(c.devs[0].path, "/dev/fuse");
	init_config_free(&c);
	ck_assert_uint_eq(c.nargs, 0);

	/* Cut anywhere: inside a record it is malformed, at a record's end
	 * it decodes (once an ARG came); never a read past the cut (ASan:
	 * each cut is a copy of its own size). */
	for (size_t cut = 0; cut < b.len; cut++) {
		struct proto_iter it = { b.data, b.data + b.len };
		bool boundary = cut == 0, args = false;
		const uint8_t *v;
		uint8_t *copy = malloc(cut + 1);
		uint32_t len;
		uint16_t t;

		while (proto_next(&it, &t, &v, &len) > 0 && v + len <= b.data + cut) {
			args |= t == PROTO_REC_ARG;
			boundary |= v + len == b.data + cut;
		}
		ck_assert_ptr_nonnull(copy);
		memcpy(copy, b.data, cut);
		memset(&c, 0, sizeof(c));
		ck_assert_int_eq(init_config_parse(&c, copy, (uint32_t)cut),
				 boundary && args ? 0 : -EINVAL);
		init_config_free(&c);
		free(copy);
	}
	proto_buf_free(&b);
	spec_free(&s);
}
END_TEST

START_TEST(test_minimal)
{
	static struct init_config c;
	struct proto_buf b;
	struct oci_spec s;

	encode("{\"root\":{\"path\":\"rootfs\"},\"process\":{\"args\":[\"true\"]},"
	       "\"linux\":{\"namespaces\":[{\"type\":\"network\"}]}}",
	       "minimal", 0, 0, &s, &b);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(init_config_parse(&c, b.data, (uint32_t)b.len), 0);
	ck_assert_uint_eq(c.nargs, 1);
	ck_assert_str_eq(c.cwd, "/");
	ck_assert_uint_eq(c.umask_v, 022);
	ck_assert(!c.has_caps && !c.terminal && !c.nnp);
	ck_assert_uint_eq(c.rows, 0);
	init_config_free(&c);
	proto_buf_free(&b);
	spec_free(&s);
}
END_TEST

START_TEST(test_hostile_records)
{
	static struct init_config c;
	struct proto_buf b = { 0 };
	uint8_t dev[21] = { 'c' };

	/* No ARG at all: malformed. */
	proto_rec_str(&b, PROTO_REC_CWD, "/");
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(init_config_parse(&c, b.data, (uint32_t)b.len), -EINVAL);
	init_config_free(&c);
	proto_buf_free(&b);

	/* Repeated strings replace each other (no leak: ASan); tables stop
	 * at their size; integer records of the wrong length are ignored;
	 * a device record without a path is ignored; a NUL inside a value
	 * ends it. */
	memset(&b, 0, sizeof(b));
	for (int i = 0; i < INIT_MAX_ARGS + 5; i++)
		proto_rec_str(&b, PROTO_REC_ARG, "a");
	for (int i = 0; i < INIT_MAX_MOUNTS + 5; i++)
		proto_rec(&b, PROTO_REC_MOUNT, "/m\0tmpfs", 8);
	for (int i = 0; i < INIT_MAX_SYSCTLS + 5; i++)
		proto_rec(&b, PROTO_REC_SYSCTL, "k", 1);
	for (int i = 0; i < INIT_MAX_GROUPS + 5; i++)
		proto_rec_u32(&b, PROTO_REC_GROUP, 7);
	proto_rec_str(&b, PROTO_REC_CWD, "/one");
	proto_rec_str(&b, PROTO_REC_CWD, "/two");
	proto_rec(&b, PROTO_REC_HOSTNAME, "h\0x", 3);
	proto_rec_u8(&b, PROTO_REC_UID, 5);
	proto_rec_u32(&b, PROTO_REC_GID, 6);
	proto_rec(&b, PROTO_REC_DEVICE, dev, sizeof(dev));
	proto_rec(&b, PROTO_REC_RLIMIT, dev, sizeof(dev));
	proto_rec(&b, PROTO_REC_ROWS, "\x01", 1);
	proto_rec(&b, PROTO_REC_TERMINAL, "", 0);
	ck_assert_int_eq(b.err, 0);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(init_config_parse(&c, b.data, (uint32_t)b.len), 0);
	ck_assert_uint_eq(c.nargs, INIT_MAX_ARGS);
	ck_assert_ptr_null(c.args[INIT_MAX_ARGS]);
	ck_assert_uint_eq(c.nmounts, INIT_MAX_MOUNTS);
	ck_assert_str_eq(c.mounts[0].type, "tmpfs");
	ck_assert_str_eq(c.mounts[0].source, ""); /* missing fields are "" */
	ck_assert_str_eq(c.mounts[0].options, "");
	ck_assert_uint_eq(c.nsysctls, INIT_MAX_SYSCTLS);
	ck_assert_str_eq(c.sysctls[0][1], "");
	ck_assert_uint_eq(c.ngroups, INIT_MAX_GROUPS);
	ck_assert_str_eq(c.cwd, "/two");
	ck_assert_str_eq(c.hostname, "h");
	ck_assert_uint_eq(c.uid, 0);
	ck_assert_uint_eq(c.gid, 6);
	ck_assert_uint_eq(c.ndevs, 0);
	ck_assert_uint_eq(c.nrlimits, 0);
	ck_assert_uint_eq(c.rows, 0);
	ck_assert(!c.terminal);
	init_config_free(&c);
	proto_buf_free(&b);
}
END_TEST

static Suite *init_config_suite(void)
{
	Suite *s = suite_create("oci_init_config");
	TCase *tc = tcase_create("decode");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_podman_round_trip);
	tcase_add_test(tc, test_minimal);
	tcase_add_test(tc, test_hostile_records);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(init_config_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
