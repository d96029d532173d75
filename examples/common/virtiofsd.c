/* SPDX-License-Identifier: MIT */
/* A virtiofsd child (see virtiofsd.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
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

/* Debian's virtiofsd (QEMU 7.2) locks the socket path it is given with a
 * pid file in its build's local state directory, /var/run/virtiofsd,
 * which only root may write: as root of a user namespace only (rootless
 * podman's runtime) it refuses to start ("Could not create
 * '/var/run/virtiofsd/...pid'").  There the socket is made here,
 * listening before the fork, and handed over with --fd, which skips that
 * lock.  Context: the parent. */
#define VIRTIOFSD_LOCK_DIR "/var/run/virtiofsd"
#define VIRTIOFSD_LOCK_PARENT "/var/run"
static bool lock_dir_writable(void)
{
	if (!access(VIRTIOFSD_LOCK_DIR, W_OK | X_OK))
		return true;
	return errno == ENOENT && !access(VIRTIOFSD_LOCK_PARENT, W_OK | X_OK);
}

/* Only the three stdio fds (and @lfd, the listening socket, as fd 3)
 * reach virtiofsd: an inherited pipe or socket would keep its peer
 * waiting for an end that comes with virtiofsd's. */
static void child_stdio(int errfd, int lfd)
{
	int null;

	if (errfd >= 0) {
		null = open("/dev/null", O_RDWR);
		if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
		    (errfd != 2 && dup2(errfd, 2) < 0))
			_exit(127);
	}
	if (lfd >= 0 && (lfd == 3 ? fcntl(3, F_SETFD, 0) : dup2(lfd, 3)) < 0)
		_exit(127);
	close_range(lfd >= 0 ? 4 : 3, ~0u, 0);
}

/* The child: the read-only bind if asked, then virtiofsd.  Never returns. */
static void child_exec(const struct virtiofsd *d, const char *path, bool ro,
		       const char *opts, unsigned int pool, const char *what, int errfd,
		       int lfd)
{
	const char *bin = getenv("MINIVMM_VIRTIOFSD");
	char sock[128], src[4200], threads[48];

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
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() == 1)
		_exit(127);
	child_stdio(errfd, lfd);
	if (lfd >= 0)
		snprintf(sock, sizeof(sock), "--fd=3");
	else
		snprintf(sock, sizeof(sock), "--socket-path=%s", d->sock);
	snprintf(src, sizeof(src), "source=%s", path);
	if (ro && (unshare(CLONE_NEWNS) ||
		   mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		   mount(path, path, NULL, MS_BIND | MS_REC, NULL) ||
		   mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL))) {
		fprintf(stderr, "%s: read-only bind of %s: %s\n", what, path,
			strerror(errno));
		_exit(127);
	}
	snprintf(threads, sizeof(threads), "--thread-pool-size=%u", pool);
	execl(bin, bin, sock, "-o", src, "-o", opts, "-o", "sandbox=namespace",
	      threads, (char *)NULL);
	fprintf(stderr, "%s: cannot run %s: %s\n", what, bin, strerror(errno));
	_exit(127);
}

int virtiofsd_spawn(struct virtiofsd *d, const char *path, bool ro, const char *what,
		    int errfd, char *err, size_t errlen)
{
	/* No thread pool: Debian 12's virtiofsd (glib 2.74) dies on its own
	 * seccomp filter when the pool starts a thread (sched_getaffinity),
	 * and the guest then waits forever on the share. */
	return virtiofsd_spawn_opts(d, path, ro, "cache=auto", 0, what, errfd, err, errlen);
}

int virtiofsd_spawn_opts(struct virtiofsd *d, const char *path, bool ro,
			 const char *opts, unsigned int pool, const char *what,
			 int errfd, char *err, size_t errlen)
{
	struct stat st;
	int lfd = -1;

	memset(d, 0, sizeof(*d));
	if (stat(path, &st) || !S_ISDIR(st.st_mode))
		return errf(err, errlen, "%s: %s is not a directory", what, path);
	snprintf(d->dir, sizeof(d->dir), "/tmp/minivmm-fs.XXXXXX");
	if (!mkdtemp(d->dir)) { /* mode 0700: the socket is ours alone */
		d->dir[0] = '\0';
		return errf(err, errlen, "%s: mkdtemp: %s", what, strerror(errno));
	}
	snprintf(d->sock, sizeof(d->sock), "%s/virtiofsd.sock", d->dir);
	if (!lock_dir_writable()) {
		int ret = unix_listen(d->sock, SOCK_CLOEXEC, 1, -1, &lfd);

		if (ret)
			return errf(err, errlen, "%s: socket %s: %s", what, d->sock,
				    strerror(-ret));
	}
	d->child = fork();
	if (d->child < 0) {
		d->child = 0;
		if (lfd >= 0)
			close(lfd);
		return errf(err, errlen, "%s: fork: %s", what, strerror(errno));
	}
	if (!d->child)
		child_exec(d, path, ro, opts, pool, what, errfd, lfd);
	if (lfd >= 0) {
		/* Listening already: only virtiofsd holds the socket now,
		 * so a VMM connects to it or, once it died, is refused. */
		close(lfd);
		if (waitpid(d->child, NULL, WNOHANG) == d->child) {
			d->child = 0;
			return errf(err, errlen, "%s: virtiofsd exited at start", what);
		}
		return 0;
	}
	for (int i = 0; i < 500; i++) { /* 5 s */
		struct timespec ts = { 0, 10000000 };

		if (!stat(d->sock, &st) && S_ISSOCK(st.st_mode))
			return 0;
		if (waitpid(d->child, NULL, WNOHANG) == d->child) {
			d->child = 0;
			return errf(err, errlen, "%s: virtiofsd exited at start", what);
		}
		nanosleep(&ts, NULL);
	}
	return errf(err, errlen, "%s: virtiofsd did not create its socket in 5 s",
		    what);
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
