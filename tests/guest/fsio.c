/* SPDX-License-Identifier: MIT */
/*
 * fsio: the guest side of tests/e2e/fs.sh's data-integrity cases, which
 * busybox cannot do (no mmap, no msync, no fsync, no O_DIRECT).
 *
 *   fsio mmap   SRC DST  DST sized to SRC, mapped MAP_SHARED, SRC's bytes
 *                        stored through the mapping, msync(MS_SYNC)
 *   fsio fsync  SRC DST  SRC's bytes write()n to DST, fsync()
 *   fsio direct SRC DST  DST opened O_DIRECT, SRC's bytes written from an
 *                        aligned buffer (SRC's size: a multiple of 4096),
 *                        read back with O_DIRECT and compared
 *
 * The host then reads DST and compares it with SRC's checksum.  So that
 * what it reads is what msync/fsync sent (and not what a later close
 * sent: FUSE's close is a FLUSH that writes the dirty pages back), the
 * work is done by a child that keeps DST open (and mapped) until the VM
 * stops; the parent never opens DST and exits with the child's verdict
 * once the sync call returned.  The guest script turns periodic writeback
 * off beforehand, so nothing but msync writes the mapping's pages.
 *
 * O_DIRECT: an open or I/O that fails with EINVAL prints
 * "fsio: O_DIRECT refused: ..." and exits 3, so the test can tell a
 * refusal by the share's cache mode from a failure.
 *
 * The child prints "fsio MODE DST: N bytes, held open by pid P" (P: the
 * pid to kill to let DST go).
 *
 * Exit: 0 done, 1 I/O error or mismatch, 2 bad arguments, 3 O_DIRECT
 * refused (EINVAL).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ALIGN 4096

static const char *mode, *dst;

static int fail(const char *what)
{
	fprintf(stderr, "fsio %s %s: %s: %s\n", mode, dst, what, strerror(errno));
	return 1;
}

static int refused(const char *what)
{
	printf("fsio: O_DIRECT refused: %s %s: %s\n", what, dst, strerror(errno));
	return 3;
}

/* SRC's bytes, whole, in a buffer aligned for O_DIRECT. */
static int read_src(const char *src, char **buf, size_t *len)
{
	struct stat st;
	size_t got = 0;
	int fd = open(src, O_RDONLY);

	if (fd < 0 || fstat(fd, &st))
		return fail("open SRC");
	*len = (size_t)st.st_size;
	if (posix_memalign((void **)buf, ALIGN, *len ? *len : 1))
		return fail("posix_memalign");
	while (got < *len) {
		ssize_t n = read(fd, *buf + got, *len - got);

		if (n <= 0)
			return fail("read SRC");
		got += (size_t)n;
	}
	close(fd);
	return 0;
}

static int write_all(int fd, const char *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);

		if (n < 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

static int do_mmap(const char *buf, size_t len)
{
	int fd = open(dst, O_RDWR | O_CREAT | O_TRUNC, 0644);
	char *map;

	if (fd < 0)
		return fail("open");
	if (ftruncate(fd, (off_t)len))
		return fail("ftruncate");
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return fail("mmap MAP_SHARED");
	memcpy(map, buf, len);
	if (msync(map, len, MS_SYNC))
		return fail("msync");
	return 0; /* the mapping and fd stay until the VM stops */
}

static int do_fsync(const char *buf, size_t len)
{
	int fd = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return fail("open");
	if (write_all(fd, buf, len))
		return fail("write");
	if (fsync(fd))
		return fail("fsync");
	return 0;
}

static int do_direct(const char *buf, size_t len)
{
	char *back;
	size_t done = 0;
	int fd;

	if (len % ALIGN) {
		fprintf(stderr, "fsio direct: SRC size %zu not a multiple of %d\n", len, ALIGN);
		return 2;
	}
	fd = open(dst, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
	if (fd < 0)
		return errno == EINVAL ? refused("open") : fail("open O_DIRECT");
	if (write_all(fd, buf, len))
		return errno == EINVAL ? refused("write") : fail("write O_DIRECT");
	if (posix_memalign((void **)&back, ALIGN, len ? len : 1))
		return fail("posix_memalign");
	while (done < len) {
		ssize_t n = pread(fd, back + done, len - done, (off_t)done);

		if (n < 0)
			return errno == EINVAL ? refused("read") : fail("read O_DIRECT");
		if (n == 0)
			break;
		done += (size_t)n;
	}
	if (done != len || memcmp(buf, back, len)) {
		fprintf(stderr, "fsio direct %s: read back %zu of %zu bytes, other bytes\n",
			dst, done, len);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int (*op)(const char *, size_t);
	int pipefd[2];
	unsigned char verdict = 1;
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (argc != 4) {
		fprintf(stderr, "usage: fsio mmap|fsync|direct SRC DST\n");
		return 2;
	}
	mode = argv[1];
	dst = argv[3];
	if (!strcmp(mode, "mmap"))
		op = do_mmap;
	else if (!strcmp(mode, "fsync"))
		op = do_fsync;
	else if (!strcmp(mode, "direct"))
		op = do_direct;
	else {
		fprintf(stderr, "fsio: unknown operation %s\n", mode);
		return 2;
	}
	if (pipe(pipefd))
		return fail("pipe");
	switch (fork()) {
	case -1:
		return fail("fork");
	case 0:
		close(pipefd[0]);
		rc = read_src(argv[2], &buf, &len);
		if (!rc)
			rc = op(buf, len);
		verdict = (unsigned char)rc;
		if (!rc)
			printf("fsio %s %s: %zu bytes, held open by pid %d\n", mode,
			       dst, len, (int)getpid());
		fflush(stdout);
		if (write(pipefd[1], &verdict, 1) != 1)
			return 1;
		close(pipefd[1]);
		if (rc)
			return rc;
		/* Hold DST (and its mapping) open: the host reads it now. */
		close(0);
		close(1);
		close(2);
		for (;;)
			pause();
	default:
		close(pipefd[1]);
		if (read(pipefd[0], &verdict, 1) != 1)
			verdict = 1;
		return verdict;
	}
}
