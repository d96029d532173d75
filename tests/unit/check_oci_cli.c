/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci's command line and container state (examples/oci/cli.c,
 * state.c): what podman/conmon and containerd's runc shim pass, the
 * unsupported commands, errors; state.json round trip and the derived
 * status (created/running/stopped, pid reuse, zombie), idempotent removal.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "oci.h"

static char err[512];

static int parse(struct oci_cli *c, const char *const *args)
{
	char *argv[32];
	int argc = 0;

	argv[argc++] = (char *)"minivmm-oci";
	while (*args)
		argv[argc++] = (char *)*args++;
	argv[argc] = NULL;
	return oci_cli_parse(argc, argv, c, err, sizeof(err));
}

START_TEST(test_conmon_create)
{
	struct oci_cli c;
	const char *a[] = { "create", "--bundle", "/b", "--pid-file", "/p",
			    "--console-socket", "/s", "abc123", NULL };

	ck_assert_int_eq(parse(&c, a), 0);
	ck_assert_int_eq(c.cmd, OCI_CMD_CREATE);
	ck_assert_str_eq(c.bundle, "/b");
	ck_assert_str_eq(c.pid_file, "/p");
	ck_assert_str_eq(c.console_socket, "/s");
	ck_assert_str_eq(c.id, "abc123");
	ck_assert_str_eq(c.root, OCI_DEFAULT_ROOT);
}
END_TEST

START_TEST(test_containerd_shim)
{
	struct oci_cli c;
	const char *a[] = { "--root", "/run/containerd/runc/default", "--log",
			    "/x/log.json", "--log-format", "json", "create",
			    "--bundle=/b", "--pid-file", "/b/init.pid", "--no-pivot",
			    "c1", NULL };
	const char *k[] = { "--root=/r", "kill", "--all", "c1", "9", NULL };
	const char *d[] = { "delete", "--force", "c1", NULL };

	ck_assert_int_eq(parse(&c, a), 0);
	ck_assert_str_eq(c.root, "/run/containerd/runc/default");
	ck_assert_str_eq(c.log, "/x/log.json");
	ck_assert_str_eq(c.log_format, "json");
	ck_assert_str_eq(c.bundle, "/b");
	ck_assert_int_eq(parse(&c, k), 0);
	ck_assert_int_eq(c.cmd, OCI_CMD_KILL);
	ck_assert(c.all);
	ck_assert_str_eq(c.signal, "9");
	ck_assert_str_eq(c.root, "/r");
	ck_assert_int_eq(parse(&c, d), 0);
	ck_assert(c.force);
}
END_TEST

START_TEST(test_others)
{
	struct oci_cli c;
	const char *v[] = { "--version", NULL };
	const char *e[] = { "checkpoint", "c1", NULL }; /* exec: check_oci_exec_proto */
	const char *f[] = { "features", NULL };
	const char *k[] = { "kill", "c1", NULL };
	const char *s[] = { "--systemd-cgroup", "state", "c1", NULL };

	ck_assert_int_eq(parse(&c, v), 0);
	ck_assert_int_eq(c.cmd, OCI_CMD_VERSION);
	ck_assert_int_eq(parse(&c, e), 0);
	ck_assert_int_eq(c.cmd, OCI_CMD_UNSUPPORTED);
	ck_assert_str_eq(c.cmd_name, "checkpoint");
	ck_assert_int_eq(parse(&c, f), 0);
	ck_assert_int_eq(c.cmd, OCI_CMD_FEATURES);
	ck_assert_int_eq(parse(&c, k), 0);
	ck_assert_str_eq(c.signal, "SIGTERM");
	ck_assert_int_eq(parse(&c, s), 0);
	ck_assert_int_eq(c.cmd, OCI_CMD_STATE);
}
END_TEST

START_TEST(test_errors)
{
	static const char *const cases[][6] = {
		{ NULL },
		{ "frobnicate", "c1", NULL },
		{ "--bogus", "state", "c1", NULL },
		{ "state", NULL },
		{ "state", "a", "b", NULL },
		{ "state", "../etc", NULL },
		{ "kill", "c1", "NOSIG", NULL },
		{ "create", "--bundle", NULL },
		{ "create", "--preserve-fds", "x", "c1", NULL },
		{ "--log-format", "xml", "state", "c1", NULL },
		{ "delete", "--all", "c1", NULL },
	};
	struct oci_cli c;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_msg(parse(&c, cases[i]) == -1, "case %zu accepted", i);
		ck_assert(err[0] && !strchr(err, '\n'));
	}
}
END_TEST

START_TEST(test_ids)
{
	ck_assert(oci_valid_id("abc"));
	ck_assert(oci_valid_id("a.b_c-d+1"));
	ck_assert(!oci_valid_id(""));
	ck_assert(!oci_valid_id(".."));
	ck_assert(!oci_valid_id("a/b"));
	ck_assert(!oci_valid_id("-x"));
}
END_TEST

START_TEST(test_state_machine)
{
	char root[] = "/tmp/check_oci_state.XXXXXX", p[4300];
	struct oci_state st = { 0 }, rd;
	pid_t child;
	int status;

	ck_assert_ptr_nonnull(mkdtemp(root));
	ck_assert_int_eq(oci_state_read(root, "c1", &rd), -ENOENT);
	snprintf(st.id, sizeof(st.id), "c1");
	oci_state_dir(root, "c1", st.dir, sizeof(st.dir));
	ck_assert_int_eq(mkdir(st.dir, 0700), 0);
	snprintf(st.bundle, sizeof(st.bundle), "/bundle");
	snprintf(st.created, sizeof(st.created), "2026-01-01T00:00:00Z");
	st.annotations = (char *)"{\"k\":\"v\"}";

	/* Our own pid: alive; no "started" yet -> created; then running. */
	st.pid = getpid();
	st.starttime = oci_proc_starttime(st.pid);
	ck_assert_uint_ne(st.starttime, 0);
	ck_assert_int_eq(oci_state_write(&st), 0);
	ck_assert_int_eq(oci_state_read(root, "c1", &rd), 0);
	ck_assert_int_eq(rd.pid, getpid());
	ck_assert_str_eq(rd.bundle, "/bundle");
	ck_assert_str_eq(rd.annotations, "{\"k\":\"v\"}");
	ck_assert_int_eq(oci_state_status(&rd), OCI_CREATED);
	snprintf(p, sizeof(p), "%s/started", st.dir);
	fclose(fopen(p, "w"));
	ck_assert_int_eq(oci_state_status(&rd), OCI_RUNNING);
	/* The same pid with another start time: reused, so stopped. */
	rd.starttime++;
	ck_assert_int_eq(oci_state_status(&rd), OCI_STOPPED);
	oci_state_free(&rd);

	/* A zombie (exited, not reaped) is stopped; so is a reaped one. */
	child = fork();
	if (!child)
		_exit(0);
	/* Until it has exited, without reaping it (no timing involved). */
	siginfo_t si;
	ck_assert_int_eq(waitid(P_PID, (id_t)child, &si, WEXITED | WNOWAIT), 0);
	st.pid = child;
	st.starttime = oci_proc_starttime(child);
	ck_assert_int_eq(oci_state_status(&st), OCI_STOPPED);
	waitpid(child, &status, 0);
	ck_assert_int_eq(oci_state_status(&st), OCI_STOPPED);
	ck_assert_str_eq(oci_status_name(OCI_RUNNING), "running");

	ck_assert_int_eq(oci_state_remove(st.dir), 0);
	ck_assert_int_eq(oci_state_read(root, "c1", &rd), -ENOENT);
	ck_assert_int_eq(oci_state_remove(st.dir), 0); /* idempotent */
	rmdir(root);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("oci_cli");
	TCase *tc = tcase_create("cli");

	tcase_add_test(tc, test_conmon_create);
	tcase_add_test(tc, test_containerd_shim);
	tcase_add_test(tc, test_others);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_ids);
	tcase_add_test(tc, test_state_machine);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
