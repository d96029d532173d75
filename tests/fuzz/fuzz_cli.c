/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: minivmm's command line -- cli_parse() on an argv split from
 * the input at NUL bytes (at most 64 arguments), then cli_parse_disk() and
 * cli_parse_size() on every argument, as --disk and --mem values.  Each
 * input parses twice in a row, so state getopt keeps between calls (a
 * library embedding the parser parses more than once) cannot leak from one
 * parse into the next.
 *
 * Checked beyond the sanitizers (abort()): a successful parse has a kernel
 * (or --help/--version) and disks with a non-empty path, a serial of at
 * most 20 bytes and a power-of-two queue size; a successful size is
 * non-zero.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fuzz.h"

#define MAX_ARGS 64

static void check_disk(const struct cli_disk *d)
{
	if (!d->spec || !d->cfg.path || !*d->cfg.path)
		abort();
	if (d->cfg.serial && strlen(d->cfg.serial) > 20)
		abort();
	if (d->cfg.queue_size & (d->cfg.queue_size - 1))
		abort();
}

static void parse_argv(int argc, char **strs)
{
	char *argv[MAX_ARGS + 2];
	struct cli_opts o;
	char err[256];

	/* getopt permutes argv: give it a fresh copy of the pointers. */
	memcpy(argv, strs, sizeof(char *) * (size_t)(argc + 1));
	memset(err, 0xff, sizeof(err));
	if (cli_parse(argc, argv, &o, err, sizeof(err)) == 0) {
		if (!o.kernel && !o.help && !o.version)
			abort();
		if (!o.cmdline)
			abort();
		for (unsigned int i = 0; i < o.nr_disks; i++)
			check_disk(&o.disks[i]);
	} else if (!memchr(err, '\0', sizeof(err))) {
		abort();
	}
	cli_free(&o);
}

int fuzz_cli(const uint8_t *data, size_t size)
{
	char *buf, *strs[MAX_ARGS + 2];
	int argc = fuzz_argv(data, size, "minivmm", strs, MAX_ARGS, &buf);

	parse_argv(argc, strs);
	parse_argv(argc, strs);

	for (int i = 1; i < argc; i++) {
		struct cli_disk d;
		char err[256];
		uint64_t v;

		if (cli_parse_disk(strs[i], &d, err, sizeof(err)) == 0)
			check_disk(&d);
		free(d.spec);
		if (cli_parse_size(strs[i], &v) == 0 && v == 0)
			abort();
	}
	free(buf);
	return 0;
}

FUZZ_TARGET(fuzz_cli)
