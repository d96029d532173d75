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

int opts_common(int c, char **argv, int *log_level, bool *help, bool *version,
		char *err, size_t errlen)
{
	switch (c) {
	case 'v':
		if (*log_level < VMM_LOG_DEBUG)
			(*log_level)++;
		return 0;
	case 'q':
		*log_level = VMM_LOG_ERROR;
		return 0;
	case 'h':
		*help = true;
		return 1;
	case 'V':
		*version = true;
		return 1;
	case ':':
		return errf(err, errlen, "option '%s' needs a value",
			    argv[optind - 1]);
	default:
		return errf(err, errlen, "unknown option '%s'", argv[optind - 1]);
	}
}

int opts_no_operands(int argc, char **argv, char *err, size_t errlen)
{
	if (optind < argc)
		return errf(err, errlen, "unexpected argument '%s'", argv[optind]);
	return 0;
}

int opts_io_sched(const char *v, int *out, char *err, size_t errlen)
{
	if (!strcmp(v, "batch"))
		*out = VMM_IOTHREAD_SCHED_BATCH;
	else if (!strcmp(v, "normal"))
		*out = VMM_IOTHREAD_SCHED_NORMAL;
	else
		return errf(err, errlen,
			    "--io-sched must be batch or normal, got '%s'", v);
	return 0;
}
