/* SPDX-License-Identifier: MIT */
/*
 * What minivmm's and minivmm-blkd's getopt_long() loops share: the options
 * -v/-q/-h/-V, the reasons for a missing value, an unknown option or an
 * operand, and --io-sched.  A parser lists OPTS_COMMON_LONG in its long
 * options and OPTS_COMMON_SHORT in its short ones, calls opts_reset()
 * before the loop, opts_common() from the switch's default case and
 * opts_no_operands() after the loop.
 */
#ifndef VMM_EXAMPLES_OPTS_H
#define VMM_EXAMPLES_OPTS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

#define OPTS_COMMON_LONG                                                       \
	{ "verbose", no_argument, NULL, 'v' },                                 \
	{ "quiet", no_argument, NULL, 'q' },                                   \
	{ "help", no_argument, NULL, 'h' },                                    \
	{ "version", no_argument, NULL, 'V' }
#define OPTS_COMMON_SHORT "vqhV"
#define OPTS_COMMON_HELP                                                       \
	"  -v, --verbose        more log messages (repeat for debug)\n"        \
	"  -q, --quiet          errors only\n"                                 \
	"  -h, --help           this text\n"                                   \
	"  -V, --version        print the version\n"

/* Before a parse: getopt_long() starts afresh (optind 0), silent. */
void opts_reset(void);
/*
 * The shared cases of getopt_long()'s result @c: -v raises @log_level (up
 * to debug), -q makes it errors only, -h/-V set @help/@version.  Returns 0
 * (handled: go on), 1 (--help or --version: stop, successfully), or -1
 * with the reason for ':' (a value missing) or any other option in @err.
 */
int opts_common(int c, char **argv, int *log_level, bool *help, bool *version,
		char *err, size_t errlen);
/* After the loop: no operands.  0, or -1 with the reason in @err. */
int opts_no_operands(int argc, char **argv, char *err, size_t errlen);
/* --io-sched batch|normal into an enum vmm_iothread_sched.  0, or -1. */
int opts_io_sched(const char *v, int *out, char *err, size_t errlen);

#endif
