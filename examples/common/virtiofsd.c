/* SPDX-License-Identifier: MIT */
/* A virtiofsd child (see virtiofsd.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "errf.h"
#include "unix-listen.h"
#include "virtiofsd.h"

/* The child's failure before exec, as text through @rep (the parent
 * puts it in its error); then exit.  Context: the child. */
static void child_fail(int rep, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n > 0 && write(rep, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1) < 0)
		_exit(126);
	_exit(127);
}

/* Only the three stdio fds and the listening socket @lfd, as fd 3, reach
 * virtiofsd (an inherited pipe or socket would keep its peer waiting for
 * an end that comes with virtiofsd's); @rep, the close-on-exec report
 * pipe, stays open until exec.  Each is first copied above 3, so that no
 * dup2() below overwrites another where the caller had some of 0-2
 * closed (an @errfd or @lfd of 0, 1 or 2).  Returns @rep's new number. */
static int child_fds(int errfd, int lfd, int rep)
{
	int null, moved;

	moved = fcntl(rep, F_DUPFD_CLOEXEC, 4);
	if (moved < 0)
		child_fail(rep, "fcntl: %s", strerror(errno));
	rep = moved;
	if ((errfd >= 0 && (errfd = fcntl(errfd, F_DUPFD_CLOEXEC, 4)) < 0) ||
	    (lfd = fcntl(lfd, F_DUPFD_CLOEXEC, 4)) < 0)
		child_fail(rep, "fcntl: %s", strerror(errno));
	if (errfd >= 0) {
		/* Not close-on-exec: where it lands on 0 or 1, the dup2()
		 * onto itself below keeps it so. */
		null = open("/dev/null", O_RDWR);
		if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(errfd, 2) < 0)
			child_fail(rep, "stdio: %s", strerror(errno));
	}
	if (dup2(lfd, 3) < 0)
		child_fail(rep, "dup2: %s", strerror(errno));
	if (rep > 4)
		close_range(4, rep - 1, 0);
	close_range(rep + 1, ~0u, 0);
	return rep;
}

/* The child: the read-only bind if asked (@file: @path read-only with
 * @file bound on its VIRTIOFSD_FILE), then virtiofsd on fd 3.  Never
 * returns. */
static void child_exec(const char *path, const char *file, bool ro, const char *opts,
		       unsigned int pool, int errfd, int lfd, int rep, pid_t parent)
{
	const char *bin = getenv("MINIVMM_VIRTIOFSD");
	char src[4200], threads[48], on[4200];

	sigset_t none;

	if (!bin || !*bin)
		bin = VIRTIOFSD_DEFAULT;
	/* A parent that reads its signals through a signalfd has them
	 * blocked, and ignores SIGPIPE: neither may reach virtiofsd (a
	 * blocked SIGTERM would make the death signal below a no-op). */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	/* Dies with its parent, whatever ends it. */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() != parent)
		child_fail(rep, "its parent ended");
	rep = child_fds(errfd, lfd, rep);
	snprintf(src, sizeof(src), "source=%s", path);
	snprintf(on, sizeof(on), "%s/" VIRTIOFSD_FILE, path);
	/* The directory read-only, so that a guest that mounts the share
	 * itself cannot create files beside the one bound there. */
	if (file && (unshare(CLONE_NEWNS) ||
		     mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		     mount(path, path, NULL, MS_BIND, NULL) ||
		     mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) ||
		     mount(file, on, NULL, MS_BIND, NULL) ||
		     (ro && mount(NULL, on, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL))))
		child_fail(rep, "bind of %s: %s", file, strerror(errno));
	if (!file && ro && (unshare(CLONE_NEWNS) ||
		   mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		   mount(path, path, NULL, MS_BIND | MS_REC, NULL) ||
		   mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL)))
		child_fail(rep, "read-only bind of %s: %s", path, strerror(errno));
	snprintf(threads, sizeof(threads), "--thread-pool-size=%u", pool);
	execl(bin, bin, "--fd=3", "-o", src, "-o", opts, "-o", "sandbox=namespace", threads,
	      (char *)NULL);
	child_fail(rep, "cannot run %s: %s", bin, strerror(errno));
}

int virtiofsd_spawn(struct virtiofsd *d, const char *path, bool ro, const char *what,
		    int errfd, char *err, size_t errlen)
{
	/* No thread pool: Debian 12's virtiofsd (glib 2.74) dies on its own
	 * seccomp filter when the pool starts a thread (sched_getaffinity),
	 * and the guest then waits forever on the share. */
	return virtiofsd_spawn_opts(d, path, ro, "cache=auto", 0, what, errfd, err, errlen);
}

/* Until the child exec'd virtiofsd (the report pipe closes, empty) or
 * failed before (its reason), 5 s at most (a read-only bind or an exec
 * stuck on a hung file system: the child is killed).  Context: the
 * parent. */
static int wait_exec(struct virtiofsd *d, int rep, const char *what, char *err,
		     size_t errlen)
{
	struct pollfd p = { .fd = rep, .events = POLLIN };
	char msg[512];
	ssize_t n = -1;
	int r, e;

	do
		r = poll(&p, 1, 5000);
	while (r < 0 && errno == EINTR);
	e = r ? errno : ETIMEDOUT;
	if (r > 0) {
		do
			n = read(rep, msg, sizeof(msg) - 1);
		while (n < 0 && errno == EINTR);
		e = errno;
	}
	close(rep);
	if (n == 0)
		return 0;
	if (n < 0)
		kill(d->child, SIGKILL);
	waitpid(d->child, NULL, 0);
	d->child = 0;
	if (n < 0)
		return errf(err, errlen, "%s: virtiofsd's start: %s", what, strerror(e));
	msg[n] = '\0';
	return errf(err, errlen, "%s: %s", what, msg);
}

/* virtiofsd_spawn_opts(), or with @file virtiofsd_spawn_file(). */
static int spawn(struct virtiofsd *d, const char *path, const char *file, bool ro,
		 const char *opts, unsigned int pool, const char *what, int errfd,
		 char *err, size_t errlen)
{
	struct stat st;
	int lfd, rep[2], ret, e;
	pid_t parent;

	memset(d, 0, sizeof(*d));
	if (stat(path, &st) || !S_ISDIR(st.st_mode))
		return errf(err, errlen, "%s: %s is not a directory", what, path);
	if (file) {
		char on[4200];
		int fd;

		if (stat(file, &st) || !S_ISREG(st.st_mode))
			return errf(err, errlen, "%s: %s is not a regular file", what, file);
		snprintf(on, sizeof(on), "%s/" VIRTIOFSD_FILE, path);
		fd = open(on, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return errf(err, errlen, "%s: %s: %s", what, on, strerror(errno));
		close(fd);
	}
	snprintf(d->dir, sizeof(d->dir), "/tmp/minivmm-fs.XXXXXX");
	if (!mkdtemp(d->dir)) { /* mode 0700: the socket is ours alone */
		d->dir[0] = '\0';
		return errf(err, errlen, "%s: mkdtemp: %s", what, strerror(errno));
	}
	snprintf(d->sock, sizeof(d->sock), "%s/virtiofsd.sock", d->dir);
	/* Listening before virtiofsd runs, handed over as fd 3 (--fd=3):
	 * a path virtiofsd binds itself exists a moment before it listens
	 * (a VMM that connects then is refused), and Debian's virtiofsd
	 * locks such a path with a pid file in /var/run/virtiofsd, which
	 * root of a user namespace only (rootless podman's runtime) cannot
	 * write: it refuses to start. */
	ret = unix_listen(d->sock, SOCK_CLOEXEC, 1, -1, &lfd);
	if (ret)
		return errf(err, errlen, "%s: socket %s: %s", what, d->sock, strerror(-ret));
	if (pipe2(rep, O_CLOEXEC)) {
		close(lfd);
		return errf(err, errlen, "%s: pipe: %s", what, strerror(errno));
	}
	parent = getpid();
	d->child = fork();
	e = errno;
	if (!d->child) {
		close(rep[0]);
		child_exec(path, file, ro, opts, pool, errfd, lfd, rep[1], parent);
	}
	/* Only virtiofsd holds the socket now: a VMM connects to it or,
	 * once it died, is refused. */
	close(lfd);
	close(rep[1]);
	if (d->child < 0) {
		d->child = 0;
		close(rep[0]);
		return errf(err, errlen, "%s: fork: %s", what, strerror(e));
	}
	if (wait_exec(d, rep[0], what, err, errlen))
		return -1;
	if (waitpid(d->child, NULL, WNOHANG) == d->child) {
		d->child = 0;
		return errf(err, errlen, "%s: virtiofsd exited at start", what);
	}
	return 0;
}

int virtiofsd_spawn_opts(struct virtiofsd *d, const char *path, bool ro,
			 const char *opts, unsigned int pool, const char *what,
			 int errfd, char *err, size_t errlen)
{
	return spawn(d, path, NULL, ro, opts, pool, what, errfd, err, errlen);
}

int virtiofsd_spawn_file(struct virtiofsd *d, const char *dir, const char *file, bool ro,
			 const char *what, int errfd, char *err, size_t errlen)
{
	/* As virtiofsd_spawn(): no thread pool. */
	return spawn(d, dir, file, ro, "cache=auto", 0, what, errfd, err, errlen);
}

void virtiofsd_unlink(struct virtiofsd *d)
{
	if (!d->dir[0])
		return;
	unlink(d->sock);
	rmdir(d->dir);
	d->dir[0] = '\0';
}

/* Reaped within @ms?  Context: the parent. */
static bool reaped(struct virtiofsd *d, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		struct timespec ts = { 0, 10000000 };

		if (waitpid(d->child, NULL, WNOHANG) == d->child)
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

void virtiofsd_reap(struct virtiofsd *d)
{
	/* Bounded: a parent that gave up root may not signal it (EPERM);
	 * then init reaps it once it ends. */
	if (d->child > 0 && !reaped(d, 2000) &&
	    (kill(d->child, SIGTERM) || !reaped(d, 2000)) &&
	    (kill(d->child, SIGKILL) || !reaped(d, 1000)))
		fprintf(stderr, "virtiofsd %d did not end\n", (int)d->child);
	d->child = 0;
	virtiofsd_unlink(d);
}
