/* SPDX-License-Identifier: MIT */
/*
 * virtiofsd_spawn() (examples/common/virtiofsd.c) hands virtiofsd a socket
 * already listening (--fd=3), never a path to bind: a path exists a
 * moment before its listen() (a VMM connecting then was refused: seen in
 * the arm64 rig), and Debian's virtiofsd locks a path with a pid file in
 * /var/run/virtiofsd, which root of a user namespace only (rootless
 * podman's runtime) may not write.  This program is its own fake
 * virtiofsd (MINIVMM_VIRTIOFSD): started with --fd=3 it accepts on fd 3,
 * with --socket-path=P it writes its pid file as virtiofsd does, binds P,
 * takes 300 ms before it listens (as a loaded host may), and answers "fd"
 * or "path".
 *  - with this process's own credentials: a client that connects as soon
 *    as the spawn returned gets "fd";
 *  - a program that cannot be run: its reason, from the child;
 *  - a share of one host file (virtiofsd_spawn_file(), rw and ro): the
 *    served directory holds that file alone and is read-only, the file
 *    is writable (the host's file changes) unless ro;
 *  - a caller with its stdio closed (the stderr pipe and the socket on
 *    fds 1 and 2), and a caller that is pid 1 of a pid namespace;
 *  - as root of a user namespace over uid 65534 (made when we are root
 *    and not chrooted, which refuses user namespaces; said when not run):
 *    the answer comes; a fake that dies at once leaves a socket that
 *    refuses (our copy of the listening socket was closed).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "virtiofsd.h"

static char fake[256]; /* a copy of this program anyone may run */

/* The fake virtiofsd.  Never returns. */
static void fake_main(int argc, char **argv)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	const char *mode = NULL, *src = NULL;
	char ans[256];
	int l = -1, c;

	if (getenv("FAKE_DIE"))
		_exit(3);
	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "source=", 7)) {
			src = argv[i] + 7;
		} else if (!strcmp(argv[i], "--fd=3")) {
			l = 3;
			mode = "fd";
		} else if (!strncmp(argv[i], "--socket-path=", 14)) {
			char pid[96];
			int f;

			/* As virtiofsd: the socket path locked by a pid file. */
			snprintf(pid, sizeof(pid), "/var/run/virtiofsd/check-vfsd.%d.pid",
				 (int)getpid());
			if ((mkdir("/var/run/virtiofsd", 0700) && errno != EEXIST) ||
			    (f = open(pid, O_WRONLY | O_CREAT | O_EXCL, 0600)) < 0)
				_exit(7);
			close(f);
			unlink(pid);
			snprintf(a.sun_path, sizeof(a.sun_path), "%s", argv[i] + 14);
			l = socket(AF_UNIX, SOCK_STREAM, 0);
			if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)))
				_exit(4);
			usleep(300000);
			if (listen(l, 1))
				_exit(4);
			mode = "path";
		}
	}
	if (!mode || (c = accept(l, NULL, NULL)) < 0)
		_exit(5);
	snprintf(ans, sizeof(ans), "%s", mode);
	/* A share of one file (virtiofsd_spawn_file()): what the served
	 * directory holds, whether anything can be made beside the file,
	 * whether the file can be written (then a '+' appended to it). */
	if (src) {
		char p[4200], got[32] = "";
		int f, n = 0;

		snprintf(p, sizeof(p), "%s/" VIRTIOFSD_FILE, src);
		f = open(p, O_RDONLY);
		if (f >= 0) {
			n = (int)read(f, got, sizeof(got) - 1);
			got[n > 0 ? n : 0] = 0;
			close(f);
			snprintf(p, sizeof(p), "%s/new", src);
			f = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
			n = snprintf(ans, sizeof(ans), "%s:%s:%s", mode, got,
				     f < 0 && errno == EROFS ? "dir-ro" : "dir-rw");
			if (f >= 0)
				close(f);
			snprintf(p, sizeof(p), "%s/" VIRTIOFSD_FILE, src);
			f = open(p, O_WRONLY | O_APPEND);
			snprintf(ans + n, sizeof(ans) - (size_t)n, ":%s",
				 f >= 0 && write(f, "+", 1) == 1 ? "file-rw" : "file-ro");
			if (f >= 0)
				close(f);
		}
	}
	if (write(c, ans, strlen(ans)) < 0)
		_exit(6);
	_exit(0);
}

/* Connect to @path; its answer in @buf, or "" (errno in *@err). */
static void ask(const char *path, char *buf, size_t len, int *err)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ssize_t n = -1;

	*err = 0;
	buf[0] = 0;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)))
		*err = errno;
	else if ((n = read(fd, buf, len - 1)) >= 0)
		buf[n] = 0;
	close(fd);
}

START_TEST(test_own_credentials)
{
	struct virtiofsd d;
	char err[256] = "", buf[16];
	int e;

	ck_assert_msg(virtiofsd_spawn(&d, "/", false, "test", -1, err, sizeof(err)) == 0,
		      "spawn: %s", err);
	ask(d.sock, buf, sizeof(buf), &e);
	ck_assert_int_eq(e, 0);
	ck_assert_str_eq(buf, "fd");
	virtiofsd_reap(&d);
}
END_TEST

START_TEST(test_cannot_run)
{
	struct virtiofsd d;
	char err[256] = "";

	setenv("MINIVMM_VIRTIOFSD", "/nonexistent/virtiofsd", 1);
	ck_assert_int_eq(virtiofsd_spawn(&d, "/", false, "test", -1, err, sizeof(err)), -1);
	setenv("MINIVMM_VIRTIOFSD", fake, 1);
	ck_assert_msg(strstr(err, "test: cannot run /nonexistent/virtiofsd: No such file"),
		      "%s", err);
	ck_assert_int_eq(d.child, 0);
	virtiofsd_reap(&d); /* removes the socket's directory */
	ck_assert_int_ne(access(d.sock, F_OK), 0);
}
END_TEST

/* A share of one host file (virtiofsd_spawn_file()), @ro or not: the
 * served directory holds that file alone (its bytes), nothing can be made
 * beside it, and it is writable -- a write reaching the host's file --
 * unless @ro.  0, 20 (not root: no mount namespace), or the step that
 * failed.  Context: a child process of the test. */
static int file_share(int ro)
{
	char t[] = "/tmp/check-vfsd-file.XXXXXX", src[64], share[64], err[256] = "",
	     buf[64], want[64], host[16] = "";
	struct virtiofsd d;
	int e, f, n;

	if (geteuid())
		return 20;
	if (!mkdtemp(t))
		return 40;
	snprintf(src, sizeof(src), "%s/src", t);
	snprintf(share, sizeof(share), "%s/share", t);
	f = open(src, O_WRONLY | O_CREAT, 0644);
	if (f < 0 || write(f, "hello", 5) != 5 || close(f) || mkdir(share, 0700))
		return 41;
	if (virtiofsd_spawn_file(&d, share, src, ro, "test", -1, err, sizeof(err))) {
		fprintf(stderr, "spawn_file: %s\n", err);
		virtiofsd_reap(&d);
		return 42;
	}
	ask(d.sock, buf, sizeof(buf), &e);
	virtiofsd_reap(&d);
	snprintf(want, sizeof(want), "fd:hello:dir-ro:%s", ro ? "file-ro" : "file-rw");
	if (e || strcmp(buf, want)) {
		fprintf(stderr, "file share: got '%s' (errno %d), want '%s'\n", buf, e, want);
		return 43;
	}
	f = open(src, O_RDONLY);
	n = f >= 0 ? (int)read(f, host, sizeof(host) - 1) : -1;
	host[n > 0 ? n : 0] = 0;
	if (f >= 0)
		close(f);
	if (strcmp(host, ro ? "hello" : "hello+"))
		return 44;
	snprintf(buf, sizeof(buf), "rm -rf %s", t);
	return system(buf) ? 45 : 0;
}

/* Spawn, connect, expect "fd"; 0 or a status naming the step that
 * failed.  Context: a child process of the test. */
static int spawn_and_ask(int errfd)
{
	struct virtiofsd d;
	char err[256] = "", buf[16];
	int e;

	if (virtiofsd_spawn(&d, "/", false, "test", errfd, err, sizeof(err))) {
		virtiofsd_reap(&d); /* its socket's directory */
		return 30;
	}
	ask(d.sock, buf, sizeof(buf), &e);
	virtiofsd_reap(&d);
	return e == 0 && !strcmp(buf, "fd") ? 0 : 31;
}

/* Run @body(@arg) in a child process, which must exit 0; its status 20
 * means the case cannot be set up here (said with @skip), not a failure. */
static void in_child(int (*body)(int), int arg, const char *what, const char *skip)
{
	pid_t pid = fork();
	int st;

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(body(arg));
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 20) {
		printf("check_virtiofsd_fd: %s\n", skip);
		return;
	}
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %d", what,
		      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* A caller with its stdio closed: the stderr pipe given as @errfd lands
 * on fd 1 and the listening socket on fd 2, where the child's dup2()s
 * onto 0-3 must not overwrite one with another. */
static int stdio_closed(int unused)
{
	int p[2];

	(void)unused;
	close(0);
	close(1);
	close(2);
	if (pipe(p) || p[1] != 1)
		return 40;
	return spawn_and_ask(p[1]);
}

START_TEST(test_stdio_closed)
{
	in_child(stdio_closed, 0, "stdio closed", "");
}
END_TEST

/* A caller that is pid 1 of its pid namespace (a container's first
 * process): its child's parent is pid 1 while it lives. */
static int as_pid1(int unused)
{
	pid_t init;
	int st;

	(void)unused;
	if (unshare(CLONE_NEWPID))
		return errno == EPERM || errno == EINVAL ? 20 : 10;
	init = fork();
	if (init < 0)
		return 11;
	if (init == 0)
		_exit(getpid() == 1 ? spawn_and_ask(-1) : 12);
	if (waitpid(init, &st, 0) != init || !WIFEXITED(st))
		return 13;
	return WEXITSTATUS(st);
}

START_TEST(test_parent_is_pid1)
{
	if (geteuid() != 0)
		return; /* a pid namespace needs root */
	in_child(as_pid1, 0, "pid 1", "no pid namespace here: the pid 1 case not run");
}
END_TEST

/* In a child: uid 65534, then a user namespace in which it is root. */
static int in_userns(int die)
{
	struct virtiofsd d;
	char err[256] = "", buf[16];
	int e, fd;

	/* (Dumpable again after the uid change: /proc/self/ *_map then
	 * belong to us.) */
	if (setgroups(0, NULL) || setgid(65534) || setuid(65534) || prctl(PR_SET_DUMPABLE, 1))
		return 10;
	/* A chrooted process gets no user namespace (the rigs run their
	 * commands in a chroot: e2e/arm64_unit_on_kvm). */
	if (unshare(CLONE_NEWUSER))
		return errno == EPERM ? 20 : 10;
	fd = open("/proc/self/setgroups", O_WRONLY);
	if (fd < 0 || write(fd, "deny", 4) != 4)
		return 11;
	close(fd);
	fd = open("/proc/self/uid_map", O_WRONLY);
	if (fd < 0 || write(fd, "0 65534 1", 9) != 9)
		return 12;
	close(fd);
	fd = open("/proc/self/gid_map", O_WRONLY);
	if (fd < 0 || write(fd, "0 65534 1", 9) != 9)
		return 13;
	close(fd);
	if (!die)
		return spawn_and_ask(-1);
	setenv("FAKE_DIE", "1", 1);
	if (virtiofsd_spawn(&d, "/", false, "test", -1, err, sizeof(err)))
		return strstr(err, "exited at start") ? 0 : 15;
	/* Dead, its listening socket with it: refused. */
	waitpid(d.child, NULL, 0);
	d.child = 0;
	ask(d.sock, buf, sizeof(buf), &e);
	virtiofsd_unlink(&d);
	return e == ECONNREFUSED ? 0 : 16;
}

static void userns_case(int die)
{
	if (geteuid() != 0)
		return; /* uid 65534 needs root; the own-credentials case ran */
	in_child(in_userns, die, "user namespace case",
		 "no user namespace here (EPERM: a chroot?): the --fd case not run");
}

START_TEST(test_file_share)
{
	in_child(file_share, 0, "a share of one file", "not root: the file share was not run");
	in_child(file_share, 1, "a read-only share of one file",
		 "not root: the file share was not run");
}
END_TEST

START_TEST(test_userns_fd)
{
	userns_case(0);
}
END_TEST

START_TEST(test_userns_dead)
{
	userns_case(1);
}
END_TEST

int main(int argc, char **argv)
{
	char dir[] = "/tmp/check-vfsd.XXXXXX", cmd[8400];
	Suite *s = suite_create("virtiofsd_fd");
	TCase *tc = tcase_create("fd");
	SRunner *sr;
	int failed;

	if (argc > 1)
		fake_main(argc, argv);
	/* The fake where uid 65534 may run it (the build tree may not be). */
	if (!mkdtemp(dir) || chmod(dir, 0755))
		return 1;
	snprintf(fake, sizeof(fake), "%s/fake-virtiofsd", dir);
	snprintf(cmd, sizeof(cmd), "cp /proc/%d/exe %s && chmod 0755 %s", (int)getpid(), fake,
		 fake);
	if (system(cmd))
		return 1;
	setenv("MINIVMM_VIRTIOFSD", fake, 1);
	tcase_add_test(tc, test_own_credentials);
	tcase_add_test(tc, test_cannot_run);
	tcase_add_test(tc, test_stdio_closed);
	tcase_add_test(tc, test_parent_is_pid1);
	tcase_add_test(tc, test_file_share);
	tcase_add_test(tc, test_userns_fd);
	tcase_add_test(tc, test_userns_dead);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	unlink(fake);
	rmdir(dir);
	return failed ? 1 : 0;
}
