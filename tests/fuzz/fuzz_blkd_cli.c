/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: minivmm-blkd's command line (examples/blkd/blkd-cli.c):
 * blkd_parse() on an argv split from the input at NUL bytes (at most 64
 * arguments) after a first byte giving the host's CPU count (0..255), twice
 * in a row (getopt's state must not leak from one parse into the next).
 * --disk goes through minivmm's cli_parse_disk(), which fuzz_cli covers
 * on its own.
 *
 * Checked beyond the sanitizers (abort()): a refusal has a reason; a
 * successful parse (not --help/--version) has a socket path that fits a
 * sockaddr_un, a disk with a non-empty path and a power-of-two queue size,
 * 1..1024 queues and 1 to that many I/O threads; both parses agree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "blkd-cli.h"
#include "fuzz.h"

#define MAX_ARGS 64

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_blkd_cli: %s\n", what);
	abort();
}

static int parse(int argc, char **strs, unsigned int ncpus, struct blkd_opts *o)
{
	char *argv[MAX_ARGS + 2], err[256];
	struct sockaddr_un sa;
	int r;

	memcpy(argv, strs, sizeof(char *) * (size_t)(argc + 1));
	memset(err, 0xff, sizeof(err));
	r = blkd_parse(argc, argv, ncpus, o, err, sizeof(err));
	if (r && (!memchr(err, '\0', sizeof(err)) || !err[0]))
		fail("a refusal without a reason");
	if (r || o->help || o->version)
		return r;
	if (!o->socket || !*o->socket || strlen(o->socket) >= sizeof(sa.sun_path))
		fail("a socket path that does not fit");
	if (!o->has_disk || !o->disk.cfg.path || !*o->disk.cfg.path ||
	    (o->disk.cfg.queue_size & (o->disk.cfg.queue_size - 1)))
		fail("a disk without a path, or a queue size not a power of two");
	if (o->disk.cfg.num_queues < 1 || o->disk.cfg.num_queues > 1024 ||
	    o->iothreads < 1 || o->iothreads > o->disk.cfg.num_queues)
		fail("queue or I/O thread count out of range");
	return 0;
}

int fuzz_blkd_cli(const uint8_t *data, size_t size)
{
	unsigned int ncpus = size ? data[0] : 1; /* then the argv */
	char *buf, *strs[MAX_ARGS + 2];
	int argc = fuzz_argv(size ? data + 1 : data, size ? size - 1 : 0,
			     "minivmm-blkd", strs, MAX_ARGS, &buf), ra, rb;
	struct blkd_opts a, b;

	ra = parse(argc, strs, ncpus, &a);
	rb = parse(argc, strs, ncpus, &b);
	if (ra != rb || (!ra && (a.iothreads != b.iothreads ||
				 a.disk.cfg.num_queues != b.disk.cfg.num_queues ||
				 a.socket != b.socket)))
		fail("two parses of one argv differ");
	blkd_free(&a);
	blkd_free(&b);
	free(buf);
	return 0;
}

FUZZ_TARGET(fuzz_blkd_cli)
