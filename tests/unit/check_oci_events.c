/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci events without a VM (issue 32, item 3):
 *  - the VMM process's side (examples/oci/shim-ctl.c): ctl.sock's `stats`
 *    answers "ok " and the stats hook's JSON line, the hook's error as one
 *    line, "not supported" without a hook, and refuses an answer over
 *    SHIM_STATS_MAX;
 *  - the command line: --stats, --interval's units and bounds;
 *  - the command (examples/oci/events.c) against a fake VMM process: one
 *    runc-shaped JSON line with --stats (the process's CPU and memory, the
 *    VM's counters under "vm"; none when the VMM answers an error), lines
 *    every interval until the container is deleted (then 0), and the
 *    refusals (no such container, not started).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "manage.h"
#include "oci.h"
#include "oci_ctl_fixture.h"
#include "shimctl.h"

/* ---- the VMM process's side ---- */

static const char *stats_json;
static int stats_ret;

static int stats_hook(void *opaque, char **json)
{
	(void)opaque;
	if (stats_ret)
		return stats_ret;
	*json = strdup(stats_json);
	return *json ? 0 : -ENOMEM;
}

START_TEST(test_shim_stats)
{
	char dir[] = "/tmp/check_oci_events.XXXXXX", ans[512], *big;
	struct oci_settings set = { 0 };
	struct oci_spec spec = { 0 };
	struct oci_shim_params p = { .spec = &spec, .set = &set, .tty_slave = -1,
				     .ready_fd = -1 };
	struct shim_ctl s;
	int sp[2];

	ck_assert_ptr_nonnull(mkdtemp(dir));
	p.state_dir = dir;
	p.listen_fd = bind_ctl(dir);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	shim_ctl_init(&s, &p, sp[0], no_stop, NULL);

	request(&s, dir, "stats\n", ans, sizeof(ans));
	ck_assert_str_eq(ans, "error: the VM's statistics: Operation not supported\n");

	s.stats_vm = stats_hook;
	stats_json = "{\"kvm\":{\"exits\":7},\"disks\":[]}\n";
	request(&s, dir, "stats\n", ans, sizeof(ans));
	ck_assert_str_eq(ans, "ok {\"kvm\":{\"exits\":7},\"disks\":[]}\n");

	stats_ret = -EIO;
	request(&s, dir, "stats\n", ans, sizeof(ans));
	ck_assert_str_eq(ans, "error: the VM's statistics: Input/output error\n");

	/* Over the bound: an error line, not a cut answer. */
	stats_ret = 0;
	big = malloc(SHIM_STATS_MAX + 1);
	memset(big, 'x', SHIM_STATS_MAX);
	big[SHIM_STATS_MAX] = 0;
	stats_json = big;
	request(&s, dir, "stats\n", ans, sizeof(ans));
	ck_assert_str_eq(ans, "error: the VM's statistics: Message too long\n");
	free(big);

	shim_ctl_finish(&s);
	close(sp[0]);
	close(sp[1]);
	close(p.listen_fd);
	rm_rf(dir);
}
END_TEST

/* ---- the command line ---- */

static int parse(struct oci_cli *c, const char *a1, const char *a2, const char *a3)
{
	char *argv[] = { (char *)"minivmm-oci", (char *)"events", (char *)a1, (char *)a2,
			 (char *)a3, NULL };
	int argc = 2;
	char err[256];

	while (argv[argc])
		argc++;
	return oci_cli_parse(argc, argv, c, err, sizeof(err));
}

START_TEST(test_cli)
{
	static const char *bad[] = { "0s", "-1s", "5x", "25h", "", "s", "1.5s",
				     "99999999999999999999" };
	struct oci_cli c;

	ck_assert_int_eq(parse(&c, "c1", NULL, NULL), 0);
	ck_assert_int_eq(c.cmd, OCI_CMD_EVENTS);
	ck_assert(!c.stats);
	ck_assert_uint_eq(c.interval_ms, 5000);
	ck_assert_int_eq(parse(&c, "--stats", "c1", NULL), 0);
	ck_assert(c.stats);
	ck_assert_int_eq(parse(&c, "--interval", "500ms", "c1"), 0);
	ck_assert_uint_eq(c.interval_ms, 500);
	ck_assert_int_eq(parse(&c, "--interval=2", "c1", NULL), 0);
	ck_assert_uint_eq(c.interval_ms, 2000);
	ck_assert_int_eq(parse(&c, "--interval=1m", "c1", NULL), 0);
	ck_assert_uint_eq(c.interval_ms, 60000);
	ck_assert_int_eq(parse(&c, "--interval=24h", "c1", NULL), 0);
	ck_assert_uint_eq(c.interval_ms, 86400000);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(parse(&c, "--interval", bad[i], "c1"), -1);
	ck_assert_int_eq(parse(&c, "--interval", NULL, NULL), -1);
	ck_assert_int_eq(parse(&c, "--all", "c1", NULL), -1);
	ck_assert_int_eq(parse(&c, NULL, NULL, NULL), -1); /* no ID */
}
END_TEST

/* ---- the command ---- */

/* A container c1 under @root whose VMM process is this one. */
static void make_container(const char *root, struct oci_state *st, bool started)
{
	char path[4200];

	memset(st, 0, sizeof(*st));
	snprintf(st->id, sizeof(st->id), "c1");
	oci_state_dir(root, "c1", st->dir, sizeof(st->dir));
	ck_assert_int_eq(mkdir(st->dir, 0700), 0);
	snprintf(st->bundle, sizeof(st->bundle), "/bundle");
	st->pid = getpid();
	st->starttime = oci_proc_starttime(st->pid);
	st->annotations = (char *)"{}";
	ck_assert_int_eq(oci_state_write(st), 0);
	snprintf(path, sizeof(path), "%s/started", st->dir);
	if (started)
		ck_assert_int_eq(oci_file_write_atomic(path, ""), 0);
}

/* Run events in a child with stdout into @out; its exit status. */
static pid_t events_child(const struct oci_cli *c, const char *out)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (!pid) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(99);
		_exit(oci_cmd_events(c));
	}
	return pid;
}

static int wait_status(pid_t pid)
{
	int st;

	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* Line @n (from 0) of @path parsed, or NULL. */
static json_t *line_of(const char *path, int n)
{
	char buf[8192];
	FILE *f = fopen(path, "re");
	json_t *o = NULL;

	ck_assert_ptr_nonnull(f);
	for (int i = 0; fgets(buf, sizeof(buf), f); i++)
		if (i == n) {
			o = json_loads(buf, 0, NULL);
			break;
		}
	fclose(f);
	return o;
}

static int lines_of(const char *path)
{
	char buf[8192];
	FILE *f = fopen(path, "re");
	int n = 0;

	if (!f)
		return 0;
	while (fgets(buf, sizeof(buf), f))
		n += !!strchr(buf, '\n');
	fclose(f);
	return n;
}

static void check_sample(json_t *o, bool vm)
{
	json_t *d;

	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(json_string_value(json_object_get(o, "type")), "stats");
	ck_assert_str_eq(json_string_value(json_object_get(o, "id")), "c1");
	d = json_object_get(o, "data");
	ck_assert_ptr_nonnull(d);
	/* This process's own counters: it has run and has memory. */
	ck_assert(json_is_integer(json_object_get(
		json_object_get(json_object_get(d, "cpu"), "usage"), "total")));
	ck_assert_int_gt(json_integer_value(json_object_get(
				 json_object_get(json_object_get(d, "memory"), "usage"), "usage")),
			 0);
	if (vm)
		ck_assert_int_eq(json_integer_value(json_object_get(
					 json_object_get(json_object_get(d, "vm"), "kvm"), "exits")),
				 7);
	else
		ck_assert_ptr_null(json_object_get(d, "vm"));
}

START_TEST(test_cmd_events)
{
	char root[] = "/tmp/check_oci_eventscmd.XXXXXX", out[4200], cmd[4300];
	struct fake_vmm f = { .answer = "ok {\"kvm\":{\"exits\":7}}\n" };
	struct oci_cli c = { .id = "c1", .stats = true, .interval_ms = 20 };
	struct oci_state st;
	pthread_t t;
	json_t *o;
	pid_t pid;

	ck_assert_ptr_nonnull(mkdtemp(root));
	c.root = root;
	snprintf(out, sizeof(out), "%s.out", root);

	/* No such container; then a created one: refused, nothing printed. */
	ck_assert_int_eq(wait_status(events_child(&c, out)), 1);
	ck_assert_int_eq(lines_of(out), 0);
	make_container(root, &st, false);
	ck_assert_int_eq(wait_status(events_child(&c, out)), 1);
	ck_assert_int_eq(lines_of(out), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", st.dir);
	ck_assert_int_eq(system(cmd), 0);

	make_container(root, &st, true);
	f.listen = bind_ctl(st.dir);
	ck_assert_int_eq(pthread_create(&t, NULL, fake_vmm, &f), 0);

	/* --stats: one line, the VM's counters in it. */
	ck_assert_int_eq(wait_status(events_child(&c, out)), 0);
	ck_assert_int_eq(lines_of(out), 1);
	ck_assert_str_eq(f.got, "stats\n");
	o = line_of(out, 0);
	check_sample(o, true);
	json_decref(o);

	/* The VMM answers an error: the sample without "vm". */
	f.answer = "error: the VM's statistics: Input/output error\n";
	ck_assert_int_eq(wait_status(events_child(&c, out)), 0);
	o = line_of(out, 0);
	check_sample(o, false);
	json_decref(o);

	/* Every interval until the container is gone: then 0. */
	f.answer = "ok {\"kvm\":{\"exits\":7}}\n";
	c.stats = false;
	pid = events_child(&c, out);
	for (int i = 0; i < 500 && lines_of(out) < 3; i++)
		usleep(10000);
	ck_assert_int_ge(lines_of(out), 3);
	__atomic_store_n(&f.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	close(f.listen);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(wait_status(pid), 0);
	for (int i = 0; i < 3; i++) {
		o = line_of(out, i);
		check_sample(o, true);
		json_decref(o);
	}
	unlink(out);
	rm_rf(root);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oci_events");
	TCase *tc = tcase_create("events");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_shim_stats);
	tcase_add_test(tc, test_cli);
	tcase_add_test(tc, test_cmd_events);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
