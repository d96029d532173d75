/* SPDX-License-Identifier: MIT */
/*
 * What a refused call does in VMM_SECCOMP_KILL mode (libvmm/core/sandbox-trap.c),
 * KVM-free, each case in a forked child with the real filters:
 *  - one line on stderr names the thread, its class and the system call
 *    (name and number), then the process is killed by SIGSYS (the status
 *    of SECCOMP_RET_KILL_PROCESS, 159 in a shell), for a plain refused call
 *    and for one refused by an argument check (mmap PROT_EXEC);
 *  - the same when the thread was created with every signal blocked;
 *  - an embedder's own SIGSYS handler is kept: no report, still killed by
 *    SIGSYS (the filters fall back to SECCOMP_RET_KILL_PROCESS);
 *  - a SIGSYS that is not a trap of ours (kill -SYS) ends the process as
 *    the default disposition does, without a report;
 *  - VMM_SECCOMP_ERRNO is unchanged: EPERM, no report, the process lives;
 *  - a stderr that is a full pipe nobody reads: no report, still killed
 *    by SIGSYS at once (the report never blocks);
 *  - the line for a call of a foreign architecture (int 0x80).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <pthread.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox-trap.h"
#include "sandbox.h"
#include "vmm/vmm.h"

struct child_res {
	int status;
	char err[2048]; /* the child's stderr */
};

struct job {
	enum sandbox_class cls;
	int mode;
	void (*body)(void);
	struct sandbox *sb;
};

static void *job_thread(void *arg)
{
	struct job *j = arg;

	pthread_setname_np(pthread_self(), "vmm-io7");
	if (sandbox_install(j->sb, j->cls))
		_exit(3);
	j->body();
	return NULL;
}

/* Fork; the child runs @setup (unconfined, before the filters are built),
 * builds them in @mode and runs @body on a thread confined with @cls. */
static void run_child(enum sandbox_class cls, int mode, void (*setup)(void),
		      void (*body)(void), struct child_res *res)
{
	FILE *err = tmpfile();
	size_t n;
	pid_t pid;

	ck_assert_ptr_nonnull(err);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct job j = { .cls = cls, .mode = mode, .body = body };
		pthread_t t;

		if (dup2(fileno(err), STDERR_FILENO) < 0)
			_exit(4);
		if (setup)
			setup();
		if (sandbox_build(mode, &j.sb))
			_exit(5);
		if (pthread_create(&t, NULL, job_thread, &j))
			_exit(6);
		pthread_join(t, NULL);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &res->status, 0), pid);
	rewind(err);
	n = fread(res->err, 1, sizeof(res->err) - 1, err);
	res->err[n] = '\0';
	fclose(err);
}

static void assert_sigsys(const struct child_res *r)
{
	ck_assert_msg(WIFSIGNALED(r->status) && WTERMSIG(r->status) == SIGSYS,
		      "status 0x%x, expected killed by SIGSYS; stderr: %s",
		      r->status, r->err);
}

static void do_openat(void)
{
	syscall(SYS_openat, AT_FDCWD, "/etc/passwd", O_RDONLY);
	fprintf(stderr, "openat returned\n");
	_exit(1);
}

static void do_mmap_exec(void)
{
	mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fprintf(stderr, "mmap PROT_EXEC returned\n");
	_exit(1);
}

/* The system call numbers are the build's own (x86-64: openat 257, mmap 9;
 * arm64: 56, 222). */
START_TEST(report_names_the_call)
{
	struct child_res r;
	char want[160];

	run_child(SANDBOX_CLASS_IO, VMM_SECCOMP_KILL, NULL, do_openat, &r);
	assert_sigsys(&r);
	snprintf(want, sizeof(want), ", io allow-list) made system call openat (%d), "
		 "which its list refuses: ending the process (SIGSYS)\n", SYS_openat);
	ck_assert_msg(strstr(r.err, "libvmm: seccomp: thread vmm-io7 (tid ") &&
			      strstr(r.err, want),
		      "report: %s", r.err);
	ck_assert_ptr_null(strstr(r.err, "openat returned"));

	run_child(SANDBOX_CLASS_VCPU, VMM_SECCOMP_KILL, NULL, do_mmap_exec, &r);
	assert_sigsys(&r);
	snprintf(want, sizeof(want), "vcpu allow-list) made system call mmap (%d)", SYS_mmap);
	ck_assert_msg(strstr(r.err, want), "report: %s", r.err);
}
END_TEST

static void block_all(void)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* inherited by the thread */
}

START_TEST(report_with_signals_blocked)
{
	struct child_res r;
	char want[80];

	run_child(SANDBOX_CLASS_CONSOLE, VMM_SECCOMP_KILL, block_all, do_openat, &r);
	assert_sigsys(&r);
	snprintf(want, sizeof(want), "console allow-list) made system call openat (%d)",
		 SYS_openat);
	ck_assert_msg(strstr(r.err, want), "report: %s", r.err);
}
END_TEST

static void embedder_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	if (write(STDERR_FILENO, "EMBEDDER HANDLER\n", 17) < 0)
		_exit(7);
	_exit(8);
}

static void embedder_sigsys(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = embedder_handler;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSYS, &sa, NULL);
}

START_TEST(embedder_sigsys_handler_kept)
{
	struct child_res r;

	run_child(SANDBOX_CLASS_IO, VMM_SECCOMP_KILL, embedder_sigsys, do_openat, &r);
	assert_sigsys(&r);
	ck_assert_msg(!strstr(r.err, "libvmm: seccomp:"), "report despite the "
		      "embedder's handler: %s", r.err);
	ck_assert_msg(!strstr(r.err, "EMBEDDER HANDLER"),
		      "KILL_PROCESS must not reach a handler: %s", r.err);
}
END_TEST

/* The embedder's handler is still the disposition after sandbox_build(). */
START_TEST(embedder_sigsys_handler_not_replaced)
{
	struct sandbox *sb;
	struct sigaction cur;
	pid_t pid = fork();
	int st;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		embedder_sigsys();
		if (sandbox_build(VMM_SECCOMP_KILL, &sb))
			_exit(5);
		if (sigaction(SIGSYS, NULL, &cur) || !(cur.sa_flags & SA_SIGINFO) ||
		    cur.sa_sigaction != embedder_handler)
			_exit(1);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status 0x%x", st);
}
END_TEST

static void foreign_sigsys(void)
{
	/* Not a trap: si_code SI_TKILL (tgkill is allowed inside the process). */
	syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGSYS);
	pause();
	_exit(1);
}

START_TEST(foreign_sigsys_is_default)
{
	struct child_res r;

	run_child(SANDBOX_CLASS_VCPU, VMM_SECCOMP_KILL, NULL, foreign_sigsys, &r);
	assert_sigsys(&r);
	ck_assert_msg(!strstr(r.err, "libvmm: seccomp:"), "report for a kill -SYS: %s",
		      r.err);
}
END_TEST

static void errno_openat(void)
{
	long fd = syscall(SYS_openat, AT_FDCWD, "/etc/passwd", O_RDONLY);

	if (fd != -1 || errno != EPERM) {
		fprintf(stderr, "openat: %ld %d\n", fd, errno);
		_exit(1);
	}
}

START_TEST(errno_mode_unchanged)
{
	struct child_res r;

	run_child(SANDBOX_CLASS_IO, VMM_SECCOMP_ERRNO, NULL, errno_openat, &r);
	ck_assert_msg(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
		      "status 0x%x: %s", r.status, r.err);
	ck_assert_msg(!strstr(r.err, "libvmm: seccomp:"), "report in ERRNO mode: %s",
		      r.err);
}
END_TEST

/*
 * stderr is a pipe that is full and never read (a stalled supervisor):
 * the report is dropped, and the process still ends by SIGSYS at once.
 * The old handler blocked in write(2) there, and the violating thread
 * never died.
 */
static int full_pipe[2];

static void stderr_full(void)
{
	static char junk[4096];
	int fl;

	if (pipe(full_pipe))
		_exit(7);
	fl = fcntl(full_pipe[1], F_GETFL);
	fcntl(full_pipe[1], F_SETFL, fl | O_NONBLOCK);
	while (write(full_pipe[1], junk, sizeof(junk)) > 0 ||
	       write(full_pipe[1], junk, 1) > 0)
		;
	fcntl(full_pipe[1], F_SETFL, fl); /* blocking, as the embedder's */
	if (dup2(full_pipe[1], STDERR_FILENO) < 0)
		_exit(8);
}

START_TEST(report_into_a_full_stderr)
{
	struct job j = { .cls = SANDBOX_CLASS_IO, .mode = VMM_SECCOMP_KILL,
			 .body = do_openat };
	int status = 0;
	pid_t pid = fork(), w = 0;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		pthread_t t;

		stderr_full();
		if (sandbox_build(j.mode, &j.sb))
			_exit(5);
		if (pthread_create(&t, NULL, job_thread, &j))
			_exit(6);
		pthread_join(t, NULL);
		_exit(0);
	}
	for (int i = 0; i < 2000 && w == 0; i++) {
		w = waitpid(pid, &status, WNOHANG);
		if (!w)
			usleep(10000);
	}
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		ck_abort_msg("the violating process was still alive 20 s later: "
			     "its report blocked on the full stderr");
	}
	ck_assert_int_eq(w, pid);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS,
		      "status 0x%x, expected killed by SIGSYS", status);
}
END_TEST

/* The line itself, for what a live test cannot easily make: a call of a
 * foreign architecture, an unknown number, a thread never recorded. */
START_TEST(format_lines)
{
	siginfo_t si;
	char line[256];

	memset(&si, 0, sizeof(si));
	si.si_signo = SIGSYS;
	si.si_syscall = 5;
	si.si_arch = AUDIT_ARCH_I386;
	sandbox_trap_format(&si, line, sizeof(line));
	ck_assert_msg(strstr(line, "made system call ? (5, arch 0x40000003)"), "%s", line);
	ck_assert_msg(strstr(line, "libvmm: seccomp: thread ? (tid "), "%s", line);
	ck_assert_ptr_null(strstr(line, "allow-list"));

	si.si_arch = seccomp_arch_native();
	si.si_syscall = 100000;
	sandbox_trap_format(&si, line, sizeof(line));
	ck_assert_msg(strstr(line, "made system call ? (100000)"), "%s", line);

	si.si_syscall = SYS_socket;
	/* A short buffer gets a terminated prefix. */
	ck_assert_uint_gt(sandbox_trap_format(&si, line, 10), 10);
	ck_assert_str_eq(line, "libvmm: s");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("seccomp_report");
	TCase *tc = tcase_create("report");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, report_names_the_call);
	tcase_add_test(tc, report_with_signals_blocked);
	tcase_add_test(tc, embedder_sigsys_handler_kept);
	tcase_add_test(tc, embedder_sigsys_handler_not_replaced);
	tcase_add_test(tc, foreign_sigsys_is_default);
	tcase_add_test(tc, errno_mode_unchanged);
	tcase_add_test(tc, report_into_a_full_stderr);
	tcase_add_test(tc, format_lines);
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
