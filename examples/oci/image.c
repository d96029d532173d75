/* SPDX-License-Identifier: MIT */
/*
 * The container's root disk: an ext4 image made from the root file system
 * with `mkfs.ext4 -d` (e2fsprogs copies the tree, owners, modes, xattrs,
 * devices and hard links), sized from a scan of the tree, without a journal
 * (the image lives and dies with the container), plus the files the spec
 * bind-mounts from the host, written into it with debugfs.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oci.h"
#include "errf.h"

#define MIB (1ull << 20)

/* nftw has no context argument: the scan is single-threaded, in create. */
static uint64_t scan_bytes, scan_inodes;

static int scan_one(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	scan_inodes++;
	if (flag == FTW_F || flag == FTW_SL)
		scan_bytes += (uint64_t)st->st_blocks * 512;
	else
		scan_bytes += 4096;
	return 0;
}

/*
 * Run @argv with stdout and stderr into @out (NUL-terminated, truncated).
 * Returns the exit status, or -1 if it could not run.
 */
static int run_capture(const char *const argv[], char *out, size_t len)
{
	int p[2], status;
	size_t have = 0;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		dup2(null, 0);
		dup2(p[1], 1);
		dup2(p[1], 2);
		execvp(argv[0], (char *const *)argv); /* execvp does not write */
		dprintf(2, "cannot run %s: %s", argv[0], strerror(errno));
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		char buf[1024];
		ssize_t n = read(p[0], buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n && have + 1 < len; i++)
			out[have++] = buf[i] == '\n' ? ' ' : buf[i];
	}
	out[have] = 0;
	close(p[0]);
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* debugfs takes a line per command, arguments split on blanks. */
static bool debugfs_safe(const char *s)
{
	return s && *s && !strpbrk(s, " \t\n\"\\");
}

static int inject_files(const struct oci_spec *s, const char *img, char *err,
			size_t errlen)
{
	char cmds[4200], out[2048];
	bool any = false;
	FILE *f;
	int fd, ret;

	snprintf(cmds, sizeof(cmds), "%s.debugfs", img);
	fd = open(cmds, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f)
		return errf(err, errlen, "%s: %s", cmds, strerror(errno));
	for (unsigned int i = 0; i < s->nmounts; i++) {
		const struct spec_mount *m = &s->mounts[i];
		char dir[4096];

		/* Mount points of the guest's mounts exist in the image, so a
		 * read-only root needs no mkdir at run time (the reference
		 * runtime creates them before it remounts the root read-only). */
		if (m->kind == SPEC_MOUNT_GUEST && debugfs_safe(m->dest)) {
			snprintf(dir, sizeof(dir), "%s/", m->dest);
			for (char *p = dir + 1; (p = strchr(p, '/')); p++) {
				*p = 0;
				fprintf(f, "mkdir %s\n", dir);
				*p = '/';
			}
			any = true;
			continue;
		}
		if (m->kind != SPEC_MOUNT_FILE_COPY)
			continue;
		if (!debugfs_safe(m->dest) || !debugfs_safe(m->source)) {
			fclose(f);
			unlink(cmds);
			return errf(err, errlen, "bind mount %s on %s: paths with blanks "
				    "or quotes are not supported", m->source, m->dest);
		}
		/* Parents first (an existing one is an error debugfs skips). */
		snprintf(dir, sizeof(dir), "%s", m->dest);
		for (char *p = dir + 1; (p = strchr(p, '/')); p++) {
			*p = 0;
			fprintf(f, "mkdir %s\n", dir);
			*p = '/';
		}
		fprintf(f, "rm %s\nwrite %s %s\n", m->dest, m->source, m->dest);
		any = true;
	}
	fclose(f);
	if (!any) {
		unlink(cmds);
		return 0;
	}
	{
		const char *argv[] = { "debugfs", "-w", "-f", cmds, img, NULL };

		ret = run_capture(argv, out, sizeof(out));
	}
	unlink(cmds);
	if (ret)
		return errf(err, errlen, "copying bind-mounted files into the root image "
			    "(debugfs) failed (%d): %s", ret, out);
	return 0;
}

int oci_image_build(const struct oci_spec *s, const char *img,
		    uint64_t free_bytes, struct oci_image_stats *stats,
		    char *err, size_t errlen)
{
	char size_k[32], inodes[32], out[2048];
	uint64_t t0 = oci_now_ns(), t1, size, extra = 0, n_inodes;
	struct stat st;
	int ret;

	memset(stats, 0, sizeof(*stats));
	scan_bytes = scan_inodes = 0;
	if (nftw(s->root_path, scan_one, 64, FTW_PHYS | FTW_MOUNT))
		return errf(err, errlen, "reading the root file system %s: %s",
			    s->root_path, strerror(errno));
	for (unsigned int i = 0; i < s->nmounts; i++)
		if (s->mounts[i].kind == SPEC_MOUNT_FILE_COPY &&
		    !stat(s->mounts[i].source, &st))
			extra += (uint64_t)st.st_size + 4096;
	t1 = oci_now_ns();
	stats->bytes = scan_bytes;
	stats->inodes = scan_inodes;
	stats->scan_ns = t1 - t0;

	/* Room for the data (+ 1/8 for block rounding and directories),
	 * 256-byte inodes with a quarter spare, bitmaps and group
	 * descriptors (16 MiB covers them up to ~100 GiB), the copied files,
	 * and the writable root's free space. */
	n_inodes = scan_inodes + scan_inodes / 4 + 1024;
	if (!s->root_ro)
		n_inodes += free_bytes / 16384;
	size = scan_bytes + scan_bytes / 8 + n_inodes * 256 + extra + 16 * MIB;
	if (!s->root_ro)
		size += free_bytes;
	size = (size + MIB - 1) & ~(MIB - 1);
	snprintf(size_k, sizeof(size_k), "%lluk", (unsigned long long)(size >> 10));
	snprintf(inodes, sizeof(inodes), "%llu", (unsigned long long)n_inodes);
	unlink(img);
	{
		const char *argv[] = { "mkfs.ext4", "-q", "-F", "-b", "4096", "-I", "256",
				 "-N", inodes, "-m", "0", "-L", "minivmm-root",
				 "-O", "^has_journal,^resize_inode",
				 "-E", "lazy_itable_init=1,nodiscard",
				 "-d", s->root_path, img, size_k, NULL };

		ret = run_capture(argv, out, sizeof(out));
	}
	stats->mkfs_ns = oci_now_ns() - t1;
	if (ret)
		return errf(err, errlen, "building the root image with mkfs.ext4 -d %s "
			    "failed (%d): %s", s->root_path, ret, out);
	t1 = oci_now_ns();
	if (inject_files(s, img, err, errlen))
		return -1;
	stats->inject_ns = oci_now_ns() - t1;
	stats->image_bytes = size;
	return 0;
}
