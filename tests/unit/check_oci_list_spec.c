/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci list and spec (issue 32, item 3), host-only commands:
 *  - the command line: list takes no ID, --format table|json, -q; spec
 *    --bundle/-b, --rootless; pause/resume want an ID;
 *  - list: every container under --root (sorted), each with its derived
 *    status; a directory without a readable state is skipped; an absent
 *    root is an empty list;
 *  - spec: the config.json it writes is one minivmm-oci itself accepts
 *    (spec_load) with the documented defaults, --rootless adds a user
 *    namespace mapping the caller, and an existing config.json is never
 *    replaced.
 */
#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "manage.h"
#include "oci.h"

static int parse(struct oci_cli *c, const char *a1, const char *a2, const char *a3,
		 const char *a4)
{
	char *argv[] = { (char *)"minivmm-oci", (char *)a1, (char *)a2, (char *)a3,
			 (char *)a4, NULL };
	int argc = 1;
	char err[256];

	while (argv[argc])
		argc++;
	return oci_cli_parse(argc, argv, c, err, sizeof(err));
}

START_TEST(test_cli)
{
	struct oci_cli c;

	ck_assert_int_eq(parse(&c, "list", NULL, NULL, NULL), 0);
	ck_assert_int_eq(c.cmd, OCI_CMD_LIST);
	ck_assert_int_eq(parse(&c, "list", "--format", "json", "-q"), 0);
	ck_assert_str_eq(c.format, "json");
	ck_assert(c.quiet);
	ck_assert_int_eq(parse(&c, "list", "-f", "xml", NULL), -1);
	ck_assert_int_eq(parse(&c, "list", "c1", NULL, NULL), -1);
	ck_assert_int_eq(parse(&c, "spec", "--rootless", "-b", "/b"), 0);
	ck_assert_int_eq(c.cmd, OCI_CMD_SPEC);
	ck_assert(c.rootless);
	ck_assert_str_eq(c.bundle, "/b");
	ck_assert_int_eq(parse(&c, "spec", "--quiet", NULL, NULL), -1);
	ck_assert_int_eq(parse(&c, "pause", NULL, NULL, NULL), -1);
	ck_assert_int_eq(parse(&c, "pause", "c1", NULL, NULL), 0);
	ck_assert_int_eq(c.cmd, OCI_CMD_PAUSE);
	ck_assert_int_eq(parse(&c, "resume", "c1", NULL, NULL), 0);
	ck_assert_int_eq(c.cmd, OCI_CMD_RESUME);
	ck_assert_int_eq(parse(&c, "resume", "c1", "9", NULL), -1);
}
END_TEST

/* Run oci_cmd_list() with stdout into a file; its text. */
static char *list_output(struct oci_cli *c, int *ret)
{
	char path[] = "/tmp/check_oci_list.out.XXXXXX", *text;
	int fd = mkstemp(path), saved = dup(1);
	FILE *f;
	long n;

	ck_assert_int_ge(fd, 0);
	fflush(stdout);
	dup2(fd, 1);
	*ret = oci_cmd_list(c);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	close(fd);
	f = fopen(path, "r");
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	ck_assert_int_eq(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	unlink(path);
	return text;
}

static void add_container(const char *root, const char *id, pid_t pid, bool started)
{
	struct oci_state st = { 0 };
	char path[4200];

	snprintf(st.id, sizeof(st.id), "%s", id);
	oci_state_dir(root, id, st.dir, sizeof(st.dir));
	ck_assert_int_eq(mkdir(st.dir, 0700), 0);
	snprintf(st.bundle, sizeof(st.bundle), "/bundles/%s", id);
	snprintf(st.created, sizeof(st.created), "2026-12-04T00:00:00Z");
	st.pid = pid;
	st.starttime = pid ? oci_proc_starttime(pid) : 0;
	st.annotations = (char *)"{\"a\":\"b\"}";
	ck_assert_int_eq(oci_state_write(&st), 0);
	if (started) {
		snprintf(path, sizeof(path), "%s/started", st.dir);
		ck_assert_int_eq(oci_file_write_atomic(path, ""), 0);
	}
}

START_TEST(test_list)
{
	char root[] = "/tmp/check_oci_list.XXXXXX", path[4200], *out;
	struct oci_cli c = { .format = "json" };
	json_error_t je;
	json_t *arr;
	int ret;

	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(path, sizeof(path), "%s/absent", root);
	c.root = path;
	out = list_output(&c, &ret);
	ck_assert_int_eq(ret, 0);
	ck_assert_str_eq(out, "[]\n");
	free(out);

	c.root = root;
	add_container(root, "zz", getpid(), true);
	add_container(root, "aa", getpid(), false);
	add_container(root, "mm", 0, false); /* its VMM process is gone */
	snprintf(path, sizeof(path), "%s/notastate", root);
	ck_assert_int_eq(mkdir(path, 0700), 0);

	out = list_output(&c, &ret);
	ck_assert_int_eq(ret, 0);
	arr = json_loads(out, 0, &je);
	ck_assert_ptr_nonnull(arr);
	ck_assert_uint_eq(json_array_size(arr), 3);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(arr, 0), "id")), "aa");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(arr, 0), "status")),
			 "created");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(arr, 1), "status")),
			 "stopped");
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(arr, 1), "pid")), 0);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(arr, 2), "status")),
			 "running");
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(arr, 2), "pid")),
			 getpid());
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(
				 json_array_get(arr, 2), "annotations"), "a")), "b");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(arr, 2), "bundle")),
			 "/bundles/zz");
	json_decref(arr);
	free(out);

	c.format = NULL;
	c.quiet = true;
	out = list_output(&c, &ret);
	ck_assert_str_eq(out, "aa\nmm\nzz\n");
	free(out);

	c.quiet = false;
	out = list_output(&c, &ret);
	ck_assert_int_eq(ret, 0);
	ck_assert_ptr_eq(strstr(out, "ID "), out);
	ck_assert_ptr_nonnull(strstr(out, "\nzz "));
	ck_assert_ptr_nonnull(strstr(out, " running "));
	free(out);

	snprintf(path, sizeof(path), "rm -rf %s", root);
	ck_assert_int_eq(system(path), 0);
}
END_TEST

START_TEST(test_spec)
{
	char dir[] = "/tmp/check_oci_spec_cmd.XXXXXX", path[4200], err[256];
	struct oci_cli c = { 0 };
	struct oci_spec s;
	json_error_t je;
	json_t *j, *ns;
	bool user = false;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/rootfs", dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	c.bundle = dir;
	ck_assert_int_eq(oci_cmd_spec(&c), 0);
	ck_assert_int_eq(spec_load(dir, NULL, &s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.nargs, 1);
	ck_assert_str_eq(s.args[0], "sh");
	ck_assert(s.terminal);
	ck_assert(s.root_ro);
	ck_assert(s.nnp);
	ck_assert_str_eq(s.hostname, "minivmm");
	ck_assert_uint_eq(s.uid, 0);
	spec_free(&s);
	/* Never over an existing config.json. */
	ck_assert_int_eq(oci_cmd_spec(&c), 1);

	snprintf(path, sizeof(path), "%s/config.json", dir);
	ck_assert_int_eq(unlink(path), 0);
	c.rootless = true;
	ck_assert_int_eq(oci_cmd_spec(&c), 0);
	j = json_load_file(path, 0, &je);
	ck_assert_ptr_nonnull(j);
	ns = json_object_get(json_object_get(j, "linux"), "namespaces");
	for (size_t i = 0; i < json_array_size(ns); i++)
		user |= !strcmp(json_string_value(json_object_get(json_array_get(ns, i),
								  "type")), "user");
	ck_assert(user);
	/* Runnable: no ambient set without an inheritable one. */
	ck_assert_ptr_null(json_object_get(json_object_get(json_object_get(j, "process"),
							   "capabilities"), "ambient"));
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(json_object_get(
				 json_object_get(j, "linux"), "uidMappings"), 0), "hostID")),
			 (json_int_t)getuid());
	json_decref(j);
	ck_assert_int_eq(spec_load(dir, NULL, &s, err, sizeof(err)), 0);
	spec_free(&s);

	snprintf(path, sizeof(path), "rm -rf %s", dir);
	ck_assert_int_eq(system(path), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oci_list_spec");
	TCase *tc = tcase_create("list_spec");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_cli);
	tcase_add_test(tc, test_list);
	tcase_add_test(tc, test_spec);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
