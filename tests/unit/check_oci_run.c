/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci run (examples/oci/run.c) with fake create/start/delete
 * steps: the fake create orphans a fake VMM process by a double fork, as
 * the real one does, and records it in the state; run must
 *  - return that process's exit status (7), or 128+N when signal N
 *    killed it, and remove the container (a forced delete) unless --keep;
 *  - forward SIGTERM sent to run to it (it exits 42 on TERM);
 *  - return at once with --detach, the container left in place;
 *  - remove the container when start fails, and return 1.
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
#include "manage.h"
#include "oci.h"

enum vmm_kind { EXIT7, KILLED9, TERM42 };

static struct {
	char root[64];
	enum vmm_kind kind;
	int start_fails, removes, removes_forced;
	pid_t vmm;
} T;

static void fake_vmm(void)
{
	switch (T.kind) {
	case EXIT7:
		usleep(200000);
		_exit(7);
	case KILLED9:
		usleep(200000);
		raise(SIGKILL);
		_exit(1);
	case TERM42: {
		sigset_t set;
		int sig;

		sigemptyset(&set);
		sigaddset(&set, SIGTERM);
		sigprocmask(SIG_BLOCK, &set, NULL);
		alarm(20); /* never outlives a broken test */
		sigwait(&set, &sig);
		_exit(42);
	}
	}
}

static int fake_create(const struct oci_cli *c)
{
	struct oci_state st = { 0 };
	int pfd[2];
	pid_t child;

	ck_assert_int_eq(pipe(pfd), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (!child) {
		pid_t g = fork();

		if (g == 0) {
			close(pfd[0]);
			close(pfd[1]);
			fake_vmm();
		}
		ck_assert_int_eq(write(pfd[1], &g, sizeof(g)), (ssize_t)sizeof(g));
		_exit(0);
	}
	close(pfd[1]);
	ck_assert_int_eq(read(pfd[0], &T.vmm, sizeof(T.vmm)), (ssize_t)sizeof(T.vmm));
	close(pfd[0]);
	waitpid(child, NULL, 0);
	snprintf(st.id, sizeof(st.id), "%s", c->id);
	oci_state_dir(c->root, c->id, st.dir, sizeof(st.dir));
	ck_assert_int_eq(mkdir(st.dir, 0700), 0);
	st.pid = T.vmm;
	st.starttime = oci_proc_starttime(T.vmm);
	st.annotations = (char *)"{}";
	ck_assert_int_eq(oci_state_write(&st), 0);
	return 0;
}

static int fake_start(const struct oci_cli *c)
{
	(void)c;
	if (T.kind == TERM42) {
		/* A signaller sends run SIGTERM once run waits (or has it
		 * pending: blocked from here on, as run blocks it). */
		sigset_t set;
		pid_t run = getpid();

		sigemptyset(&set);
		sigaddset(&set, SIGTERM);
		sigprocmask(SIG_BLOCK, &set, NULL);
		if (fork() == 0) {
			usleep(100000);
			kill(run, SIGTERM);
			_exit(0);
		}
	}
	return T.start_fails;
}

static int fake_remove(const struct oci_cli *c)
{
	char dir[4200];

	T.removes++;
	T.removes_forced += c->force;
	oci_state_dir(c->root, c->id, dir, sizeof(dir));
	if (T.vmm > 0)
		kill(T.vmm, SIGKILL);
	return oci_state_remove(dir) ? 1 : 0;
}

static const struct oci_run_steps steps = {
	.create = fake_create, .start = fake_start, .remove = fake_remove,
};

static struct oci_cli setup(enum vmm_kind kind)
{
	struct oci_cli c = { .id = "r1", .bundle = "." };

	memset(&T, 0, sizeof(T));
	strcpy(T.root, "/tmp/check_oci_run.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(T.root));
	T.kind = kind;
	c.root = T.root;
	return c;
}

static bool state_exists(const struct oci_cli *c)
{
	char dir[4200];
	struct stat sb;

	oci_state_dir(c->root, c->id, dir, sizeof(dir));
	return stat(dir, &sb) == 0;
}

START_TEST(test_exit_status)
{
	struct oci_cli c = setup(EXIT7);

	ck_assert_int_eq(oci_cmd_run(&c, &steps), 7);
	ck_assert_int_eq(T.removes, 1);
	ck_assert_int_eq(T.removes_forced, 1);
	ck_assert(!state_exists(&c));
}
END_TEST

START_TEST(test_killed_keep)
{
	struct oci_cli c = setup(KILLED9);

	c.keep = true;
	ck_assert_int_eq(oci_cmd_run(&c, &steps), 128 + SIGKILL);
	ck_assert_int_eq(T.removes, 0);
	ck_assert(state_exists(&c));
	fake_remove(&c);
}
END_TEST

START_TEST(test_forward)
{
	struct oci_cli c = setup(TERM42);

	ck_assert_int_eq(oci_cmd_run(&c, &steps), 42);
	ck_assert_int_eq(T.removes, 1);
}
END_TEST

START_TEST(test_detach)
{
	struct oci_cli c = setup(TERM42);

	c.detach = true;
	T.kind = EXIT7; /* the process outlives run's return */
	ck_assert_int_eq(oci_cmd_run(&c, &steps), 0);
	ck_assert_int_eq(T.removes, 0);
	ck_assert(state_exists(&c));
	ck_assert_int_eq(kill(T.vmm, 0), 0);
	fake_remove(&c);
}
END_TEST

START_TEST(test_start_fails)
{
	struct oci_cli c = setup(EXIT7);

	T.start_fails = 1;
	ck_assert_int_eq(oci_cmd_run(&c, &steps), 1);
	ck_assert_int_eq(T.removes, 1);
	ck_assert_int_eq(T.removes_forced, 1);
	ck_assert(!state_exists(&c));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oci_run");
	TCase *tc = tcase_create("run");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_exit_status);
	tcase_add_test(tc, test_killed_keep);
	tcase_add_test(tc, test_forward);
	tcase_add_test(tc, test_detach);
	tcase_add_test(tc, test_start_fails);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
