/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "blkd-cli.h"
#include "errf.h"
#include "opts.h"
#include "parse.h"

enum {
	OPT_SOCKET = 256,
	OPT_DISK,
	OPT_IOTHREADS,
	OPT_IO_SCHED,
	OPT_NO_SECCOMP,
	OPT_STATS_JSON,
};

static const struct option long_opts[] = {
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "disk", required_argument, NULL, OPT_DISK },
	{ "iothreads", required_argument, NULL, OPT_IOTHREADS },
	{ "io-sched", required_argument, NULL, OPT_IO_SCHED },
	{ "no-seccomp", no_argument, NULL, OPT_NO_SECCOMP },
	{ "stats-json", no_argument, NULL, OPT_STATS_JSON },
	OPTS_COMMON_LONG,
	{ NULL, 0, NULL, 0 },
};

void blkd_usage(const char *prog, void *file)
{
	fprintf(file,
		"Usage: %s --socket PATH --disk SPEC [options]\n"
		"Serve a disk image as a vhost-user-blk back end (libvmm %s): the\n"
		"virtio-blk device and I/O threads of minivmm, driven by a vhost-user\n"
		"front end such as QEMU's vhost-user-blk-pci.\n"
		"\n"
		"      --socket PATH    listen on this Unix socket (a stale socket\n"
		"                       at PATH is replaced; the file stays after exit)\n"
		"      --disk SPEC      the disk, as minivmm's --disk: IMG or\n"
		"                       path=IMG[,num-queues=N][,queue-size=N][,ro=on]\n"
		"                       [,serial=S][,direct=on][,poll-us=N]\n"
		"                       [,cache=writeback|unsafe][,event-idx=off]\n"
		"                       [,lock=off]\n"
		"                       num-queues: the most the front end may use\n"
		"                       (default %d, all virtio-pci allows: the\n"
		"                       front end picks, QEMU one per guest vCPU);\n"
		"                       queue-size: the largest ring it may set\n"
		"                       (default 256)\n"
		"      --iothreads N    I/O threads, started up front; queue i is\n"
		"                       served by thread i mod N (default: one per\n"
		"                       CPU the daemon may run on, at most\n"
		"                       num-queues: a front end with Q queues keeps\n"
		"                       min(Q, N) of them busy)\n"
		"      --io-sched P     I/O threads' scheduling policy: batch\n"
		"                       (default), normal or adaptive, as\n"
		"                       minivmm's\n"
		"      --no-seccomp     do not confine the threads with seccomp-bpf\n"
		"                       allow-lists (on by default)\n"
		"      --stats-json     when a front end disconnects, print the\n"
		"                       device's counters so far (requests,\n"
		"                       doorbells, kicks, interrupts, per queue\n"
		"                       a front end started) as one JSON line on\n"
		"                       stdout\n"
		OPTS_COMMON_HELP
		"\n"
		"One front end at a time; when it disconnects (or is killed) the\n"
		"back end stops its rings and waits for the next.  SIGINT or SIGTERM\n"
		"stop the daemon (exit status 0).  Exit status: 0 stopped by a\n"
		"signal, 1 failure, 2 usage error.\n",
		prog, VMM_VERSION_STRING, VMM_MAX_DISK_QUEUES);
}

int blkd_parse(int argc, char **argv, unsigned int ncpus, struct blkd_opts *o,
	       char *err, size_t errlen)
{
	struct sockaddr_un sa;
	struct opts_common oc = { &o->log_level, &o->help, &o->version };
	unsigned long long n;
	int c;

	memset(o, 0, sizeof(*o));
	o->log_level = VMM_LOG_WARN;
	opts_reset();
	while ((c = opts_next(argc, argv, ":" OPTS_COMMON_SHORT, long_opts,
			      &oc, err, errlen)) >= 0) {
		switch (c) {
		case OPT_SOCKET:
			if (!*optarg)
				return errf(err, errlen, "--socket needs a path");
			if (strlen(optarg) >= sizeof(sa.sun_path))
				return errf(err, errlen,
					    "--socket: path longer than %zu bytes",
					    sizeof(sa.sun_path) - 1);
			o->socket = optarg;
			break;
		case OPT_DISK:
			if (o->has_disk)
				return errf(err, errlen,
					    "one --disk per daemon (run one per disk)");
			o->has_disk = true;
			if (cli_parse_disk(optarg, &o->disk, err, errlen))
				return -1;
			if (o->disk.cfg.rate_limit)
				return errf(err, errlen, "--disk: rate limits are "
					    "the VMM's (minivmm --disk rate-*=): "
					    "not applied by a vhost-user back end");
			break;
		case OPT_IOTHREADS:
			if (parse_uint(optarg, 1, 1024, &n))
				return errf(err, errlen,
					    "--iothreads must be a number from 1 to 1024, got '%s'",
					    optarg);
			o->iothreads = (unsigned int)n;
			break;
		case OPT_IO_SCHED:
			if (opts_io_sched(optarg, &o->io_sched, err, errlen))
				return -1;
			break;
		case OPT_NO_SECCOMP:
			o->no_seccomp = true;
			break;
		case OPT_STATS_JSON:
			o->stats_json = true;
			break;
		}
	}
	if (c != OPTS_END)
		return c == OPTS_STOP ? 0 : -1;
	if (!o->socket)
		return errf(err, errlen, "--socket is required");
	if (!o->has_disk)
		return errf(err, errlen, "--disk is required");
	/* The queue count is the front end's business (a front end typically
	 * asks for one per guest vCPU, however many CPUs this host has): offer all virtio-pci allows.  The I/O threads are
	 * this host's: one per CPU, no more than there are queues to serve. */
	if (!o->disk.cfg.num_queues)
		o->disk.cfg.num_queues = VMM_MAX_DISK_QUEUES;
	if (!o->iothreads)
		o->iothreads = ncpus < 1 ? 1 : ncpus < o->disk.cfg.num_queues ?
			       ncpus : o->disk.cfg.num_queues;
	if (o->iothreads > o->disk.cfg.num_queues)
		return errf(err, errlen,
			    "--iothreads %u: more I/O threads than queues (%u)",
			    o->iothreads, o->disk.cfg.num_queues);
	return 0;
}

void blkd_free(struct blkd_opts *o)
{
	free(o->disk.spec);
	o->disk.spec = NULL;
}

unsigned int blkd_host_cpus(void)
{
	cpu_set_t set;
	long n;

	/* The affinity mask, not the online count: a daemon started under
	 * taskset or in a cpuset gains nothing from threads for CPUs it
	 * cannot run on (the kernel answers the mask and the active CPUs).
	 * A host with more than CPU_SETSIZE CPUs gets EINVAL: the online
	 * count then. */
	if (!sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) > 0)
		return (unsigned int)CPU_COUNT(&set);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned int)n : 1;
}
