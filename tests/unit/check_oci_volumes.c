/* SPDX-License-Identifier: MIT */
/*
 * Volumes in config.json (examples/oci/spec.c, spec-volume.c): what podman
 * 4.3 writes for `-v DIR:/data`, `-v DIR:/ro:ro` and `--mount type=bind`
 * becomes a volume (numbered, the guest's mount flags only, read-only
 * kept, propagation dropped with a note), a bind of a file the engine
 * made (/etc/hosts, ...) is copied while any other file is a volume too
 * (`-v FILE:/etc/app.conf`: shared, read-only kept, sent as a
 * VOLUME_FILE record), /dev/shm still a tmpfs, a tmpfs keeps its size
 * and mode; a missing source, a fifo, and one volume too many are
 * refused with a one-line reason.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spec.h"

static char dir[64];
static char err[1024];

static void setup(void)
{
	char p[128];
	FILE *f;

	strcpy(dir, "/tmp/check_oci_volumes.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/rootfs", dir);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/vol", dir);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/hosts", dir);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static int load(const char *mounts, struct oci_spec *s)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/config.json", dir);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"root\":{\"path\":\"rootfs\"},\"process\":{\"args\":[\"sh\"]},"
		"\"mounts\":[%s],\"linux\":{\"namespaces\":[{\"type\":\"network\"}]}}",
		mounts);
	fclose(f);
	return spec_load(dir, NULL, s, err, sizeof(err));
}

/* A bind mount of @src (relative to dir) on @dest with @opts (JSON). */
static char *bind(char *buf, size_t len, const char *src, const char *dest,
		  const char *opts)
{
	snprintf(buf, len, "{\"destination\":\"%s\",\"type\":\"bind\",\"source\":"
		 "\"%s/%s\",\"options\":[%s]}", dest, dir, src, opts);
	return buf;
}

START_TEST(test_podman_shapes)
{
	char a[256], b[256], c[256], d[256], m[2048];
	struct oci_spec s;

	snprintf(m, sizeof(m), "%s,%s,%s,%s,{\"destination\":\"/tmp\",\"type\":"
		 "\"tmpfs\",\"source\":\"tmpfs\",\"options\":[\"nosuid\",\"size=1m\","
		 "\"mode=1777\"]}",
		 bind(a, sizeof(a), "vol", "/data", "\"rbind\""),
		 bind(b, sizeof(b), "vol", "/ro", "\"ro\",\"rbind\",\"rprivate\""),
		 bind(c, sizeof(c), "vol", "/m", "\"bind\",\"nosuid\",\"nodev\",\"noexec\",\"Z\""),
		 bind(d, sizeof(d), "hosts", "/etc/hosts", "\"bind\",\"rprivate\""));
	ck_assert_msg(!load(m, &s), "%s", err);
	ck_assert_uint_eq(s.nmounts, 5);
	ck_assert_uint_eq(s.nvolumes, 3);
	ck_assert_int_eq(s.mounts[0].kind, SPEC_MOUNT_VOLUME);
	ck_assert_uint_eq(s.mounts[0].vol, 0);
	ck_assert(!s.mounts[0].ro);
	ck_assert_str_eq(s.mounts[0].options, "");
	ck_assert_int_eq(s.mounts[1].kind, SPEC_MOUNT_VOLUME);
	ck_assert_uint_eq(s.mounts[1].vol, 1);
	ck_assert(s.mounts[1].ro);
	ck_assert_str_eq(s.mounts[1].options, "ro");
	ck_assert_uint_eq(s.mounts[2].vol, 2);
	ck_assert_str_eq(s.mounts[2].options, "nosuid,nodev,noexec");
	ck_assert(!s.mounts[0].file && !s.mounts[1].file && !s.mounts[2].file);
	/* The engine's file: copied into the image, as before. */
	ck_assert_int_eq(s.mounts[3].kind, SPEC_MOUNT_FILE_COPY);
	ck_assert_int_eq(s.mounts[4].kind, SPEC_MOUNT_GUEST);
	ck_assert_str_eq(s.mounts[4].options, "nosuid,size=1m,mode=1777");
	/* rprivate on /ro: noted once; rbind, bind, Z silently. */
	ck_assert_ptr_nonnull(s.warnings);
	ck_assert_ptr_nonnull(strstr(s.warnings, "on /ro: options \"ro,rbind,rprivate\" "
				     "kept only as \"ro\""));
	ck_assert_ptr_null(strstr(s.warnings, "on /data"));
	ck_assert_ptr_null(strstr(s.warnings, "on /m"));
	spec_free(&s);
}
END_TEST

/* The type of the record whose value starts with @v (@n bytes) in @b, or
 * -1. */
static int rec_type(const struct proto_buf *b, const char *v, size_t n)
{
	const uint8_t *p = memmem(b->data, b->len, v, n);

	if (!p || p - b->data < 6)
		return -1;
	return p[-6] | p[-5] << 8;
}

/* Binds of host files: the engine's are copied, any other is a volume of
 * its own, which the guest gets as a VOLUME_FILE record. */
START_TEST(test_files)
{
	char a[256], b[256], c[256], d[256], m[2048];
	struct proto_buf pb = { 0 };
	struct oci_spec s;
	int vfile = 0, vdir = 0;

	snprintf(m, sizeof(m), "%s,%s,%s,%s",
		 bind(a, sizeof(a), "hosts", "/etc/app.conf", "\"rbind\""),
		 bind(b, sizeof(b), "hosts", "/etc/resolv.conf", "\"bind\""),
		 bind(c, sizeof(c), "hosts", "/opt/ro.conf", "\"ro\",\"rbind\""),
		 bind(d, sizeof(d), "vol", "/data", "\"rbind\""));
	ck_assert_msg(!load(m, &s), "%s", err);
	ck_assert_uint_eq(s.nvolumes, 3);
	ck_assert_int_eq(s.mounts[0].kind, SPEC_MOUNT_VOLUME);
	ck_assert(s.mounts[0].file && !s.mounts[0].ro);
	ck_assert_uint_eq(s.mounts[0].vol, 0);
	ck_assert_int_eq(s.mounts[1].kind, SPEC_MOUNT_FILE_COPY);
	ck_assert_int_eq(s.mounts[2].kind, SPEC_MOUNT_VOLUME);
	ck_assert(s.mounts[2].file && s.mounts[2].ro);
	ck_assert_str_eq(s.mounts[2].options, "ro");
	ck_assert_int_eq(s.mounts[3].kind, SPEC_MOUNT_VOLUME);
	ck_assert(!s.mounts[3].file);
	spec_encode(&s, 24, 80, &pb);
	ck_assert_int_eq(pb.err, 0);
	/* Each record: u16 type, u32 length (little-endian), the value. */
	vfile = rec_type(&pb, "/etc/app.conf\0minivmm-vol0\0", 27) == PROTO_REC_VOLUME_FILE;
	vfile += rec_type(&pb, "/opt/ro.conf\0minivmm-vol1\0ro", 28) == PROTO_REC_VOLUME_FILE;
	vdir = rec_type(&pb, "/data\0minivmm-vol2\0", 19) == PROTO_REC_VOLUME;
	ck_assert_int_eq(vfile, 2);
	ck_assert_int_eq(vdir, 1);
	free(pb.data);
	spec_free(&s);
	ck_assert(spec_file_copied("/etc/hosts") && spec_file_copied("/run/.containerenv"));
	ck_assert(!spec_file_copied("/etc/hosts2") && !spec_file_copied("/etc"));
}
END_TEST

START_TEST(test_options)
{
	unsigned int ign;
	char *o;
	bool ro;

	ck_assert_int_eq(spec_volume_options("ro,rw,rshared,idmap,,relatime", &o, &ro, &ign), 0);
	ck_assert_str_eq(o, "ro,rw,relatime");
	ck_assert(!ro);
	ck_assert_uint_eq(ign, 2);
	free(o);
	ck_assert_int_eq(spec_volume_options(NULL, &o, &ro, &ign), 0);
	ck_assert_str_eq(o, "");
	ck_assert(!ro && !ign);
	free(o);
	/* "rox" is not "ro". */
	ck_assert_int_eq(spec_volume_options("rox,r,o", &o, &ro, &ign), 0);
	ck_assert_str_eq(o, "");
	ck_assert(!ro);
	ck_assert_uint_eq(ign, 3);
	free(o);
}
END_TEST

START_TEST(test_refused)
{
	char m[4096], one[256];
	struct oci_spec s;
	size_t n = 0;

	snprintf(m, sizeof(m), "%s", bind(one, sizeof(one), "nope", "/data", "\"rbind\""));
	ck_assert_int_eq(load(m, &s), -1);
	ck_assert_ptr_nonnull(strstr(err, "/nope for /data: No such file or directory"));
	spec_free(&s);
	snprintf(one, sizeof(one), "%s/fifo", dir);
	ck_assert_int_eq(mkfifo(one, 0600), 0);
	ck_assert_int_eq(load(bind(m, sizeof(m), "fifo", "/f", "\"rbind\""), &s), -1);
	ck_assert_ptr_nonnull(strstr(err, "only directories"));
	spec_free(&s);
	/* SPEC_MAX_VOLUMES are fine; one more is not. */
	for (unsigned int i = 0; i <= SPEC_MAX_VOLUMES; i++) {
		char dest[16];

		snprintf(dest, sizeof(dest), "/v%u", i);
		n += (size_t)snprintf(m + n, sizeof(m) - n, "%s%s", i ? "," : "",
				      bind(one, sizeof(one), "vol", dest, "\"rbind\""));
		ck_assert_uint_lt(n, sizeof(m));
		ck_assert_int_eq(load(m, &s), i < SPEC_MAX_VOLUMES ? 0 : -1);
		spec_free(&s);
	}
	ck_assert_ptr_nonnull(strstr(err, "on /v8: more than 8 bind mounts of directories "
				     "and files"));
	ck_assert_ptr_null(strchr(err, '\n'));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oci_volumes");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_podman_shapes);
	tcase_add_test(tc, test_files);
	tcase_add_test(tc, test_options);
	tcase_add_test(tc, test_refused);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
