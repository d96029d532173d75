/* SPDX-License-Identifier: MIT */
/* minivmm-blkd command-line parsing (apart from main() so it is unit-tested). */
#ifndef MINIVMM_BLKD_CLI_H
#define MINIVMM_BLKD_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "disk-spec.h" /* --disk: the same syntax as minivmm's */

struct blkd_opts {
	const char *socket;	/* --socket PATH */
	struct cli_disk disk;	/* --disk SPEC (num_queues 0: the default) */
	bool has_disk;
	unsigned int iothreads; /* --iothreads N (resolved: see blkd_parse()) */
	int io_sched;		/* --io-sched: enum vmm_iothread_sched */
	bool no_seccomp;
	bool stats_json;	/* --stats-json */
	int log_level;
	bool help, version;
};

/*
 * Parse argv.  Returns 0 (check help/version), or -1 with a one-line reason
 * in @err (usage error: exit status 2).  Call blkd_free() in both cases.
 * On success num_queues and iothreads are resolved: num-queues defaults to
 * VMM_MAX_DISK_QUEUES whatever the host (the front end picks how many it
 * uses), iothreads to min(@ncpus, num-queues) -- @ncpus being the CPUs the
 * daemon may run on (blkd_host_cpus()).
 */
int blkd_parse(int argc, char **argv, unsigned int ncpus, struct blkd_opts *o,
	       char *err, size_t errlen);
void blkd_free(struct blkd_opts *o);
/* The online CPUs this process may run on (its affinity mask, as nproc
 * counts them; the online count if that fails), at least 1. */
unsigned int blkd_host_cpus(void);
void blkd_usage(const char *prog, void *file);

#endif
