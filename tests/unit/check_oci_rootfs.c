/* SPDX-License-Identifier: MIT */
/*
 * The root file system's kind (issue 30 item 3, examples/oci/spec-rootfs.c):
 * `rootfs = ext4|virtiofs` in the config file and the org.minivmm.rootfs
 * annotation parsed, bad values refused with a reason naming them; with the
 * root over virtio-fs, spec_encode() sends ROOT_FS (the tag) and each bound
 * file's bytes as a FILE record (in order among the mounts, NULs kept),
 * which the guest init's decoder gets back; without it, neither; a file
 * over SPEC_FILE_MAX refused; hostile FILE records stay bounded; a
 * read-only root over virtio-fs gets its missing mount points made at
 * create, inside the root (a symlink there never leads to the host).
 *
 * FUZZ_SEED_OUT=DIR writes the encoded payload as DIR/rootfs (the seed in
 * tests/fuzz/corpus/fuzz_oci_init_config/).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "oci.h"
#include "proto.h"
#include "spec.h"

static char dir[64];
static char err[1024];

static void setup(void)
{
	char p[128];

	strcpy(dir, "/tmp/check_oci_rootfs.XXXXXX");
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

static void write_file(const char *name, const void *data, size_t n)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, n, f), n);
	fclose(f);
}

/* config.json with annotations @ann (JSON object text) and a bind of the
 * file DIR/hosts on /etc/hosts between two tmpfs mounts. */
static int load(const char *ann, struct oci_spec *s)
{
	char text[2048];

	snprintf(text, sizeof(text),
		 "{\"root\":{\"path\":\"rootfs\"},\"process\":{\"args\":[\"sh\"]},"
		 "\"annotations\":%s,\"mounts\":[{\"destination\":\"/tmp\",\"type\":"
		 "\"tmpfs\",\"source\":\"tmpfs\"},{\"destination\":\"/etc/hosts\","
		 "\"type\":\"bind\",\"source\":\"%s/hosts\",\"options\":[\"rbind\","
		 "\"ro\"]},{\"destination\":\"/run\",\"type\":\"tmpfs\",\"source\":"
		 "\"tmpfs\"}],\"linux\":{\"namespaces\":[{\"type\":\"network\"}]}}",
		 ann, dir);
	write_file("config.json", text, strlen(text));
	return spec_load(dir, NULL, s, err, sizeof(err));
}

START_TEST(test_parse)
{
	int k = -1;

	ck_assert_int_eq(spec_parse_rootfs("ext4", "rootfs", &k, err, sizeof(err)), 0);
	ck_assert_int_eq(k, SPEC_ROOTFS_EXT4);
	ck_assert_int_eq(spec_parse_rootfs("virtiofs", "rootfs", &k, err, sizeof(err)), 0);
	ck_assert_int_eq(k, SPEC_ROOTFS_VIRTIOFS);
	k = -1;
	for (const char *const *v = (const char *const[]){ "", "EXT4", "virtio-fs",
			"virtiofs ", "ext4\n", NULL }; *v; v++) {
		ck_assert_int_eq(spec_parse_rootfs(*v, "rootfs", &k, err, sizeof(err)), -1);
		ck_assert_int_eq(k, -1);
		ck_assert_msg(strstr(err, "expected ext4 or virtiofs") && !strchr(err, '\n'),
			      "%s", err);
	}
}
END_TEST

START_TEST(test_annotation)
{
	struct oci_spec s;

	write_file("hosts", "127.0.0.1 localhost\n", 20);
	ck_assert_msg(!load("{}", &s), "%s", err);
	ck_assert_int_eq(s.ann_rootfs, SPEC_ROOTFS_DEFAULT);
	ck_assert(!s.root_virtiofs);
	spec_free(&s);
	ck_assert_msg(!load("{\"org.minivmm.rootfs\":\"virtiofs\"}", &s), "%s", err);
	ck_assert_int_eq(s.ann_rootfs, SPEC_ROOTFS_VIRTIOFS);
	spec_free(&s);
	ck_assert_msg(!load("{\"org.minivmm.rootfs\":\"ext4\"}", &s), "%s", err);
	ck_assert_int_eq(s.ann_rootfs, SPEC_ROOTFS_EXT4);
	spec_free(&s);
	ck_assert_int_eq(load("{\"org.minivmm.rootfs\":\"nfs\"}", &s), -1);
	ck_assert_msg(strstr(err, "org.minivmm.rootfs=\"nfs\""), "%s", err);
	spec_free(&s);
	ck_assert_int_eq(load("{\"org.minivmm.rootfs\":1}", &s), -1);
	ck_assert_msg(strstr(err, "must be a string"), "%s", err);
	spec_free(&s);
}
END_TEST

START_TEST(test_setting)
{
	struct oci_settings set;
	char p[128];

	snprintf(p, sizeof(p), "%s/conf", dir);
	setenv("MINIVMM_OCI_CONFIG", p, 1);
	write_file("conf", "cpus = 1\n", 9);
	ck_assert_int_eq(oci_settings_load(&set, err, sizeof(err)), 0);
	ck_assert_int_eq(set.rootfs, OCI_ROOTFS_DEFAULT);
	oci_settings_free(&set);
	write_file("conf", "rootfs = virtiofs\n", 18);
	ck_assert_int_eq(oci_settings_load(&set, err, sizeof(err)), 0);
	ck_assert_int_eq(set.rootfs, SPEC_ROOTFS_VIRTIOFS);
	oci_settings_free(&set);
	write_file("conf", "# x\nrootfs=ext4\n", 16);
	ck_assert_int_eq(oci_settings_load(&set, err, sizeof(err)), 0);
	ck_assert_int_eq(set.rootfs, SPEC_ROOTFS_EXT4);
	oci_settings_free(&set);
	write_file("conf", "rootfs = btrfs\n", 15);
	ck_assert_int_eq(oci_settings_load(&set, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "conf:1: rootfs=\"btrfs\": expected ext4 or virtiofs"),
		      "%s", err);
	oci_settings_free(&set);
	unsetenv("MINIVMM_OCI_CONFIG");
}
END_TEST

START_TEST(test_records)
{
	static const char bytes[] = "127.0.0.1 localhost\n\0after a NUL\n";
	static struct init_config c;
	const char *out = getenv("FUZZ_SEED_OUT");
	struct proto_buf b = { 0 };
	struct oci_spec s;
	char p[128];

	write_file("hosts", bytes, sizeof(bytes) - 1);
	/* ext4: neither record, no bytes read. */
	ck_assert_msg(!load("{}", &s), "%s", err);
	spec_encode(&s, 0, 0, &b);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(init_config_parse(&c, b.data, (uint32_t)b.len), 0);
	ck_assert_ptr_null(c.root_tag);
	ck_assert_uint_eq(c.nmounts, 2);
	init_config_free(&c);
	proto_buf_free(&b);
	/* virtio-fs: the tag, and the file's bytes between the tmpfs. */
	s.root_virtiofs = true;
	ck_assert_msg(!spec_read_files(&s, err, sizeof(err)), "%s", err);
	ck_assert_uint_eq(s.mounts[1].data_len, sizeof(bytes) - 1);
	memset(&b, 0, sizeof(b));
	spec_encode(&s, 0, 0, &b);
	ck_assert_int_eq(b.err, 0);
	if (out && *out) {
		FILE *f;

		snprintf(p, sizeof(p), "%s/rootfs", out);
		f = fopen(p, "wb");
		ck_assert_ptr_nonnull(f);
		ck_assert_uint_eq(fwrite(b.data, 1, b.len, f), b.len);
		fclose(f);
	}
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(init_config_parse(&c, b.data, (uint32_t)b.len), 0);
	ck_assert_str_eq(c.root_tag, SPEC_ROOT_TAG);
	ck_assert_uint_eq(c.nmounts, 3);
	ck_assert_str_eq(c.mounts[0].dest, "/tmp");
	ck_assert(c.mounts[1].file && !c.mounts[1].volume);
	ck_assert_str_eq(c.mounts[1].dest, "/etc/hosts");
	ck_assert_str_eq(c.mounts[1].type, "file");
	ck_assert_str_eq(c.mounts[1].options, "ro");
	ck_assert_uint_eq(c.mounts[1].size, sizeof(bytes) - 1);
	ck_assert_mem_eq(c.mounts[1].source, bytes, sizeof(bytes) - 1);
	ck_assert_str_eq(c.mounts[2].dest, "/run");
	init_config_free(&c);
	proto_buf_free(&b);
	spec_free(&s);
}
END_TEST

static bool is_kind(const char *rel, mode_t kind)
{
	char p[192];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return !lstat(p, &st) && (st.st_mode & S_IFMT) == kind;
}

START_TEST(test_mount_points)
{
	struct oci_spec s;
	char p[192], q[192];

	write_file("hosts", "h\n", 2);
	ck_assert_msg(!load("{}", &s), "%s", err);
	/* /etc is a symlink to /real-etc, resolved inside the root. */
	snprintf(p, sizeof(p), "%s/rootfs/real-etc", dir);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/rootfs/etc", dir);
	ck_assert_int_eq(symlink("/real-etc", p), 0);
	/* Writable root, or ext4: nothing made. */
	s.root_virtiofs = true;
	ck_assert_int_eq(spec_make_mount_points(&s, err, sizeof(err)), 0);
	ck_assert(!is_kind("rootfs/run", S_IFDIR));
	s.root_ro = true;
	ck_assert_msg(!spec_make_mount_points(&s, err, sizeof(err)), "%s", err);
	ck_assert(is_kind("rootfs/tmp", S_IFDIR));
	ck_assert(is_kind("rootfs/run", S_IFDIR));
	ck_assert(is_kind("rootfs/real-etc/hosts", S_IFREG));
	ck_assert(is_kind("rootfs/etc", S_IFLNK));
	/* Again: what exists is kept. */
	ck_assert_msg(!spec_make_mount_points(&s, err, sizeof(err)), "%s", err);
	/* A link out of the root ("../outside", which exists on the host):
	 * resolved inside the root it names nothing, so the mount point
	 * cannot be made, and nothing appears on the host. */
	snprintf(p, sizeof(p), "%s/outside", dir);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(q, sizeof(q), "%s/rootfs/esc", dir);
	ck_assert_int_eq(symlink("../outside", q), 0);
	free(s.mounts[2].dest);
	s.mounts[2].dest = strdup("/esc/x");
	ck_assert_int_eq(spec_make_mount_points(&s, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "/esc/x"), "%s", err);
	ck_assert(!is_kind("outside/x", S_IFDIR));
	spec_free(&s);
}
END_TEST

START_TEST(test_file_limits)
{
	static char big[SPEC_FILE_MAX + 1];
	struct oci_spec s;

	write_file("hosts", big, SPEC_FILE_MAX);
	ck_assert_msg(!load("{}", &s), "%s", err);
	ck_assert_msg(!spec_read_files(&s, err, sizeof(err)), "%s", err);
	ck_assert_uint_eq(s.mounts[1].data_len, SPEC_FILE_MAX);
	spec_free(&s);
	write_file("hosts", big, sizeof(big));
	ck_assert_msg(!load("{}", &s), "%s", err);
	ck_assert_int_eq(spec_read_files(&s, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "at most 256 KiB") && strstr(err, "/etc/hosts"), "%s", err);
	spec_free(&s);
}
END_TEST

START_TEST(test_hostile)
{
	static struct init_config c;
	struct proto_buf b = { 0 };

	proto_rec_str(&b, PROTO_REC_ARG, "sh");
	proto_rec(&b, PROTO_REC_FILE, "abc", 3);     /* dest only, no NUL */
	proto_rec(&b, PROTO_REC_FILE, NULL, 0);      /* empty */
	proto_rec(&b, PROTO_REC_FILE, "/d\0ro", 5);  /* no bytes */
	proto_rec(&b, PROTO_REC_FILE, "/e\0\0\0x", 6);
	proto_rec(&b, PROTO_REC_ROOT_FS, "a", 1);
	proto_rec(&b, PROTO_REC_ROOT_FS, "t2", 2);   /* the last one counts */
	for (unsigned int i = 0; i < 2 * INIT_MAX_MOUNTS; i++)
		proto_rec(&b, PROTO_REC_FILE, "/f\0\0data", 8);
	ck_assert_int_eq(b.err, 0);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(init_config_parse(&c, b.data, (uint32_t)b.len), 0);
	ck_assert_uint_eq(c.nmounts, INIT_MAX_MOUNTS);
	ck_assert_str_eq(c.root_tag, "t2");
	ck_assert_str_eq(c.mounts[0].dest, "abc");
	ck_assert_str_eq(c.mounts[0].options, "");
	ck_assert_uint_eq(c.mounts[0].size, 0);
	ck_assert_str_eq(c.mounts[1].dest, "");
	ck_assert_uint_eq(c.mounts[1].size, 0);
	ck_assert_str_eq(c.mounts[2].options, "ro");
	ck_assert_uint_eq(c.mounts[2].size, 0);
	ck_assert_uint_eq(c.mounts[3].size, 2);
	ck_assert_mem_eq(c.mounts[3].source, "\0x", 2);
	ck_assert_uint_eq(c.mounts[4].size, 4);
	init_config_free(&c);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(init_config_parse(&c, b.data, (uint32_t)b.len - 1), -EINVAL);
	init_config_free(&c);
	proto_buf_free(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oci_rootfs");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_annotation);
	tcase_add_test(tc, test_setting);
	tcase_add_test(tc, test_records);
	tcase_add_test(tc, test_file_limits);
	tcase_add_test(tc, test_mount_points);
	tcase_add_test(tc, test_hostile);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
