/* SPDX-License-Identifier: MIT */
/* minivmm --fs (see fs-spec.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "errf.h"
#include "fs-spec.h"
#include "parse.h"

/* One key=value of the spec. */
static int fs_field(struct cli_fs *f, char *kv, char *err, size_t errlen)
{
	char *v = strchr(kv, '=');
	unsigned long long n;

	if (!v)
		return errf(err, errlen, "--fs: '%s' is not key=value", kv);
	*v++ = '\0';
	if (!strcmp(kv, "tag"))
		f->tag = v;
	else if (!strcmp(kv, "socket"))
		f->socket = v;
	else if (!strcmp(kv, "path"))
		f->path = v;
	else if (!strcmp(kv, "ro") && (!strcmp(v, "on") || !strcmp(v, "off")))
		f->ro = !strcmp(v, "on");
	else if (!strcmp(kv, "num-queues") && !parse_uint(v, 1, VMM_MAX_FS_QUEUES, &n))
		f->num_queues = (unsigned int)n;
	else if (!strcmp(kv, "queue-size") && !parse_uint(v, 4, 1024, &n) &&
		 !(n & (n - 1)))
		f->queue_size = (unsigned int)n;
	else
		return errf(err, errlen, "--fs: bad %s=%s (tag, socket, path, "
			    "ro=on|off, num-queues=1..%d, queue-size=4..1024 "
			    "power of two)", kv, v, VMM_MAX_FS_QUEUES);
	return 0;
}

int cli_parse_fs(const char *arg, struct cli_fs *f, char *err, size_t errlen)
{
	char *save = NULL, *kv;

	memset(f, 0, sizeof(*f));
	f->spec = strdup(arg);
	if (!f->spec)
		return errf(err, errlen, "out of memory");
	for (kv = strtok_r(f->spec, ",", &save); kv; kv = strtok_r(NULL, ",", &save))
		if (fs_field(f, kv, err, errlen))
			return -1;
	if (!f->tag || !*f->tag || strlen(f->tag) > VMM_FS_TAG_MAX)
		return errf(err, errlen, "--fs: tag=T of 1..%d bytes is required",
			    VMM_FS_TAG_MAX);
	if (!f->socket == !f->path)
		return errf(err, errlen, "--fs %s: one of socket=PATH or path=DIR",
			    f->tag);
	if (f->ro && !f->path)
		return errf(err, errlen, "--fs %s: ro=on needs path=DIR (a "
			    "back end of your own decides itself)", f->tag);
	return 0;
}

/* The child: ro=on's read-only bind, then virtiofsd.  Never returns. */
static void fs_exec(const struct cli_fs *f)
{
	const char *bin = getenv("MINIVMM_VIRTIOFSD");
	char sock[128], src[4200];

	if (!bin || !*bin)
		bin = FS_VIRTIOFSD_DEFAULT;
	/* Dies with minivmm, whatever ends it. */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() == 1)
		_exit(127);
	snprintf(sock, sizeof(sock), "--socket-path=%s", f->sock);
	snprintf(src, sizeof(src), "source=%s", f->path);
	if (f->ro && (unshare(CLONE_NEWNS) ||
		      mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		      mount(f->path, f->path, NULL, MS_BIND | MS_REC, NULL) ||
		      mount(NULL, f->path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY,
			    NULL))) {
		fprintf(stderr, "minivmm: --fs %s: read-only bind of %s: %s\n",
			f->tag, f->path, strerror(errno));
		_exit(127);
	}
	execl(bin, bin, sock, "-o", src, "-o", "cache=auto",
	      "--thread-pool-size=4", (char *)NULL);
	fprintf(stderr, "minivmm: --fs %s: cannot run %s: %s\n", f->tag, bin,
		strerror(errno));
	_exit(127);
}

int fs_spawn(struct cli_fs *f, char *err, size_t errlen)
{
	struct stat st;

	if (!f->path)
		return 0;
	if (stat(f->path, &st) || !S_ISDIR(st.st_mode))
		return errf(err, errlen, "--fs %s: %s is not a directory", f->tag,
			    f->path);
	snprintf(f->dir, sizeof(f->dir), "/tmp/minivmm-fs.XXXXXX");
	if (!mkdtemp(f->dir)) { /* mode 0700: the socket is ours alone */
		f->dir[0] = '\0';
		return errf(err, errlen, "--fs %s: mkdtemp: %s", f->tag,
			    strerror(errno));
	}
	snprintf(f->sock, sizeof(f->sock), "%s/virtiofsd.sock", f->dir);
	f->child = fork();
	if (f->child < 0)
		return errf(err, errlen, "--fs %s: fork: %s", f->tag, strerror(errno));
	if (!f->child)
		fs_exec(f);
	for (int i = 0; i < 500; i++) { /* 5 s */
		struct timespec ts = { 0, 10000000 };

		if (!stat(f->sock, &st) && S_ISSOCK(st.st_mode)) {
			f->socket = f->sock;
			return 0;
		}
		if (waitpid(f->child, NULL, WNOHANG) == f->child) {
			f->child = 0;
			return errf(err, errlen, "--fs %s: virtiofsd exited at start",
				    f->tag);
		}
		nanosleep(&ts, NULL);
	}
	return errf(err, errlen, "--fs %s: virtiofsd did not create its socket "
		    "in 5 s", f->tag);
}

void fs_reap(struct cli_fs *f)
{
	if (f->child > 0) {
		/* It ends when the VM's connection closes: give it 2 s. */
		for (int i = 0; i < 200; i++) {
			struct timespec ts = { 0, 10000000 };

			if (waitpid(f->child, NULL, WNOHANG) == f->child) {
				f->child = 0;
				break;
			}
			nanosleep(&ts, NULL);
		}
		if (f->child > 0) {
			kill(f->child, SIGTERM);
			waitpid(f->child, NULL, 0);
			f->child = 0;
		}
	}
	if (f->dir[0]) {
		unlink(f->sock);
		rmdir(f->dir);
		f->dir[0] = '\0';
	}
}

void fs_started(struct cli_fs *f)
{
	if (!f->dir[0])
		return;
	unlink(f->sock);
	rmdir(f->dir);
	f->dir[0] = '\0';
}

void cli_fs_free(struct cli_fs *f)
{
	free(f->spec);
	f->spec = NULL;
}
