/* SPDX-License-Identifier: MIT */
/*
 * What minivmm's and minivmm-blkd's getopt_long() loops share: the options
 * -v/-q/-h/-V, the reasons for a missing value, an unknown option or an
 * operand, and --io-sched.  A parser lists OPTS_COMMON_LONG in its long
 * options and OPTS_COMMON_SHORT in its short ones, calls opts_reset()
 * before its loop and takes its options from opts_next().
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

/* Where a parser keeps what the common options set. */
struct opts_common {
	int *log_level; /* -v raises it (up to debug), -q makes it errors only */
	bool *help, *version;
};

/* opts_next()'s results besides an option of the program's own. */
enum {
	OPTS_END = -2,	/* no more options, and no operand */
	OPTS_STOP = -3, /* --help or --version: stop, successfully */
	OPTS_ERR = -4,	/* the reason (':' a value missing, an unknown
			   option, an operand) is in @err */
};

/* Before a parse: getopt_long() starts afresh (optind 0), silent. */
void opts_reset(void);
/*
 * getopt_long() that handles the common options itself: returns the next
 * option of the program's own (>= 0, optarg set), or OPTS_END, OPTS_STOP,
 * OPTS_ERR.
 */
int opts_next(int argc, char **argv, const char *shortopts,
	      const struct option *longopts, const struct opts_common *oc,
	      char *err, size_t errlen);
/* --io-sched batch|normal|adaptive into an enum vmm_iothread_sched.  0, or -1. */
int opts_io_sched(const char *v, int *out, char *err, size_t errlen);

#endif
