/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci's guest init (build/libexec/minivmm-oci/init) run on this
 * host, as someone might by mistake: not as PID 1, and as PID 1 of a new
 * PID namespace.  Either way it must print one line on stderr, nothing on
 * stdout, and exit 1 without doing anything.
 *
 * A regressed init would mount devtmpfs over /dev, load modules and reboot,
 * so it never runs with the power to: in a forked child, in a private
 * mount namespace (as root), as uid/gid 65534 with every capability set
 * empty and no_new_privs, under a seccomp filter that kills it at the first
 * mount, umount, module load, reboot, I/O port access, mknod, mkdir, chroot
 * or pivot_root -- which the test then reports (SIGSYS), instead of the
 * exit status 1 it wants.
 *
 * CHECK_OCI_INIT=PATH runs another init binary (e.g. an older build).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "user.h"

static const char *init_bin(void)
{
	const char *e = getenv("CHECK_OCI_INIT");

	return e && *e ? e : OCI_INIT_BIN;
}

/* Everything a regressed init would do first, fatal. */
static int confine(void)
{
	static const int deny[] = {
		SCMP_SYS(mount), SCMP_SYS(umount2), SCMP_SYS(finit_module),
		SCMP_SYS(init_module), SCMP_SYS(delete_module), SCMP_SYS(reboot),
		SCMP_SYS(ioperm), SCMP_SYS(iopl), SCMP_SYS(mknod), SCMP_SYS(mknodat),
		SCMP_SYS(mkdir), SCMP_SYS(mkdirat), SCMP_SYS(chroot),
		SCMP_SYS(pivot_root), SCMP_SYS(kexec_load),
	};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int ret = ctx ? 0 : -ENOMEM;

	for (size_t i = 0; !ret && i < sizeof(deny) / sizeof(deny[0]); i++)
		ret = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, deny[i], 0);
	if (!ret)
		ret = seccomp_load(ctx);
	seccomp_release(ctx);
	return ret;
}

/* Context: the forked child.  Drop everything, confine, exec the init.
 * The binary is opened before the drop and run through that file: uid
 * 65534 need not reach its path (a checkout under a 0700 directory, as
 * `mktemp -d` makes, would refuse it the exec). */
static void __attribute__((noreturn)) exec_init(int out, int err)
{
	char arg0[] = "init", *const argv[] = { arg0, NULL };
	int bin = open(init_bin(), O_RDONLY | O_CLOEXEC);
	char why[256];

	if (bin < 0)
		_exit(97);
	if (geteuid() == 0) {
		/* Whatever it mounted would stay in this namespace. */
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    user_restrict(why, sizeof(why)) ||
		    user_drop(65534, 65534, why, sizeof(why)))
			_exit(90);
	} else if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		_exit(91);
	}
	if (confine())
		_exit(92);
	dup2(out, 1);
	dup2(err, 2);
	fexecve(bin, argv, environ);
	_exit(93);
}

struct run {
	int status;
	char out[1024], err[1024];
};

static void slurp(int fd, char *buf, size_t len)
{
	size_t have = 0;
	ssize_t n;

	while (have + 1 < len && (n = read(fd, buf + have, len - 1 - have)) > 0)
		have += (size_t)n;
	buf[have] = 0;
	close(fd);
}

/*
 * Run the init: @pid_ns false, as a plain child (not PID 1); true, as
 * PID 1 of a new PID namespace (the child unshares, its own child is PID 1
 * there and runs it).  Returns false if this host cannot make the namespace.
 */
static bool run_init(bool pid_ns, struct run *r)
{
	int o[2], e[2], status;
	pid_t pid;

	ck_assert_int_eq(pipe(o), 0);
	ck_assert_int_eq(pipe(e), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		pid_t inner;

		close(o[0]);
		close(e[0]);
		if (geteuid() == 0 && unshare(CLONE_NEWNS))
			_exit(94);
		if (!pid_ns)
			exec_init(o[1], e[1]);
		if (unshare(CLONE_NEWPID))
			_exit(77);
		inner = fork();
		if (inner < 0)
			_exit(95);
		if (inner == 0)
			exec_init(o[1], e[1]);
		if (waitpid(inner, &status, 0) != inner)
			_exit(96);
		if (WIFSIGNALED(status))
			_exit(128 + WTERMSIG(status)); /* e.g. 159: SIGSYS */
		_exit(WEXITSTATUS(status));
	}
	close(o[1]);
	close(e[1]);
	slurp(o[0], r->out, sizeof(r->out));
	slurp(e[0], r->err, sizeof(r->err));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	r->status = status;
	if (pid_ns && WIFEXITED(status) && WEXITSTATUS(status) == 77)
		return false;
	return true;
}

static void assert_refused(const struct run *r, const char *reason)
{
	const char *nl = strchr(r->err, '\n');

	ck_assert_msg(WIFEXITED(r->status),
		      "the init was killed by signal %d (SIGSYS: it tried to "
		      "mount, load a module or reboot)",
		      WIFSIGNALED(r->status) ? WTERMSIG(r->status) : 0);
	ck_assert_msg(WEXITSTATUS(r->status) == 1,
		      "exit status %d, want 1 (159: killed by SIGSYS in the PID "
		      "namespace: it tried to mount, load a module or reboot; "
		      "9x: the test's own setup); stderr: %s",
		      WEXITSTATUS(r->status), r->err);
	ck_assert_str_eq(r->out, "");
	ck_assert_msg(nl && nl[1] == 0, "not one line: '%s'", r->err);
	ck_assert_msg(strstr(r->err, reason), "'%s' lacks '%s'", r->err, reason);
}

START_TEST(test_not_pid1)
{
	struct run r;

	ck_assert_msg(access(init_bin(), X_OK) == 0, "%s: not built", init_bin());
	ck_assert(run_init(false, &r));
	assert_refused(&r, "minivmm-oci-init: refusing to run: not PID 1");
}
END_TEST

START_TEST(test_pid1_of_child_namespace)
{
	struct run r;

	if (!run_init(true, &r)) {
		printf("check_oci_init_pid1: no PID namespace here (not root): "
		       "only the not-PID-1 case ran\n");
		return;
	}
	assert_refused(&r, "refusing to run: PID 1 of a child PID namespace");
}
END_TEST

static Suite *pid1_suite(void)
{
	Suite *s = suite_create("oci_init_pid1");
	TCase *tc = tcase_create("refuse");

	tcase_add_test(tc, test_not_pid1);
	tcase_add_test(tc, test_pid1_of_child_namespace);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(pid1_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
