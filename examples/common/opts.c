/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "errf.h"
#include "opts.h"
#include "vmm/vmm.h"

void opts_reset(void)
{
	/* 0, not 1: glibc then also forgets its position inside a cluster of
	 * short options ("-vX") that an earlier call returned from early;
	 * with 1 the next call resumed scanning that old, possibly freed,
	 * argv string (found by tests/fuzz/fuzz_cli). */
	optind = 0;
	opterr = 0;
}

int opts_next(int argc, char **argv, const char *shortopts,
	      const struct option *longopts, const struct opts_common *oc,
	      char *err, size_t errlen)
{
	for (;;) {
		int c = getopt_long(argc, argv, shortopts, longopts, NULL);

		switch (c) {
		case -1:
			if (optind < argc) {
				errf(err, errlen, "unexpected argument '%s'",
				     argv[optind]);
				return OPTS_ERR;
			}
			return OPTS_END;
		case 'v':
			if (*oc->log_level < VMM_LOG_DEBUG)
				(*oc->log_level)++;
			continue;
		case 'q':
			*oc->log_level = VMM_LOG_ERROR;
			continue;
		case 'h':
			*oc->help = true;
			return OPTS_STOP;
		case 'V':
			*oc->version = true;
			return OPTS_STOP;
		case ':':
			errf(err, errlen, "option '%s' needs a value",
			     argv[optind - 1]);
			return OPTS_ERR;
		case '?':
			errf(err, errlen, "unknown option '%s'", argv[optind - 1]);
			return OPTS_ERR;
		default:
			return c;
		}
	}
}

int opts_io_sched(const char *v, int *out, char *err, size_t errlen)
{
	if (!strcmp(v, "batch"))
		*out = VMM_IOTHREAD_SCHED_BATCH;
	else if (!strcmp(v, "normal"))
		*out = VMM_IOTHREAD_SCHED_NORMAL;
	else if (!strcmp(v, "adaptive"))
		*out = VMM_IOTHREAD_SCHED_ADAPTIVE;
	else
		return errf(err, errlen,
			    "--io-sched must be batch, normal or adaptive, got '%s'", v);
	return 0;
}
