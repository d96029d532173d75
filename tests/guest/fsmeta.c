/* SPDX-License-Identifier: MIT */
/*
 * fsmeta: the guest side of bench/fs_bench.sh's metadata runs, which
 * busybox cannot time (a process per file would cost more than the file
 * operation in the rig, and busybox's date has no sub-second clock).
 *
 *   fsmeta meta DIR N        mkdir DIR; create N empty files in it (open
 *                            O_CREAT|O_EXCL, close); sync; drop the
 *                            guest's dentry and inode caches; stat the N
 *                            files; unlink them; rmdir DIR.  Prints
 *                            "create_ms=.. stat_ms=.. unlink_ms=.. files=N"
 *   fsmeta time CMD ARGS...  runs CMD, prints "ms=.." (its wall time) and
 *                            exits with CMD's status
 *
 * The cache drop (/proc/sys/vm/drop_caches = 2) makes the stat phase ask
 * the file system (virtio-fs: a FUSE LOOKUP per file; ext4: its inode
 * tables) instead of the dentries the create phase left behind; failure
 * to drop (not root) is reported, not fatal.  Times from CLOCK_MONOTONIC.
 *
 * Exit: 0 done, 1 a file operation failed, 2 bad arguments.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int fail(const char *what, const char *path)
{
	fprintf(stderr, "fsmeta: %s %s: %s\n", what, path, strerror(errno));
	return 1;
}

static void drop_caches(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);

	if (fd < 0 || write(fd, "2\n", 2) != 2)
		fprintf(stderr, "fsmeta: cannot drop caches: %s\n", strerror(errno));
	if (fd >= 0)
		close(fd);
}

static int meta(const char *dir, long n)
{
	char path[4096];
	struct stat st;
	double t0, t1, t2, t3;

	if (mkdir(dir, 0755))
		return fail("mkdir", dir);
	t0 = now_ms();
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);

		if (fd < 0)
			return fail("create", path);
		close(fd);
	}
	t1 = now_ms();
	sync();
	drop_caches();
	t2 = now_ms(); /* sync + drop: reported apart, not in a phase */
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		if (stat(path, &st))
			return fail("stat", path);
	}
	t3 = now_ms();
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		if (unlink(path))
			return fail("unlink", path);
	}
	if (rmdir(dir))
		return fail("rmdir", dir);
	printf("create_ms=%.1f stat_ms=%.1f unlink_ms=%.1f files=%ld sync_drop_ms=%.1f\n",
	       t1 - t0, t3 - t2, now_ms() - t3, n, t2 - t1);
	return 0;
}

static int timed(char **argv)
{
	double t0 = now_ms();
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return fail("fork", argv[0]);
	if (!pid) {
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return fail("wait", argv[0]);
	printf("ms=%.1f\n", now_ms() - t0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "meta")) {
		char *end;
		long n = strtol(argv[3], &end, 10);

		if (*end || n <= 0)
			return 2;
		return meta(argv[2], n);
	}
	if (argc >= 3 && !strcmp(argv[1], "time"))
		return timed(argv + 2);
	fprintf(stderr, "usage: fsmeta meta DIR N | fsmeta time CMD [ARGS...]\n");
	return 2;
}
