/* SPDX-License-Identifier: MIT */
/*
 * devbench: one device-throughput measurement without KVM (see devbench.h).
 *
 *   devbench --target libvmm|vhost --backend null|file [--file IMG]
 *            [--sock PATH --peer qsd --peer-pid PID --capacity BYTES]
 *            [--qd N] [--queues N] [--iothreads N] [--event-idx 0|1]
 *            [--seconds S] [--warmup S] [--poll-us N] [--queue-size N]
 *            [--rep N] [--rate-bw B --rate-bw-burst B --rate-ops N
 *            --rate-ops-burst N]
 *
 * Prints one JSON object on stdout.  CPU time: getrusage(RUSAGE_SELF) of
 * this process plus, for a peer process (vhost-user back end), the sum of
 * its threads' run time from /proc/PID/task/ * /schedstat.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "devbench.h"

#define MAXQ 64

static volatile int stop_flag;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double self_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

/* Run time of every thread of @pid, in seconds (0 if unreadable). */
static double peer_cpu(int pid)
{
	char path[64];
	struct dirent *de;
	double sum = 0;
	DIR *d;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char p[300];
		unsigned long long ns = 0;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/proc/%d/task/%s/schedstat", pid, de->d_name);
		f = fopen(p, "r");
		if (!f)
			continue;
		if (fscanf(f, "%llu", &ns) == 1)
			sum += ns * 1e-9;
		fclose(f);
	}
	closedir(d);
	return sum;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: devbench --target libvmm|vhost --backend null|file [--file IMG]\n"
		"       [--sock PATH] [--peer NAME] [--peer-pid PID] [--peer-iothreads N]\n"
		"       [--capacity BYTES] [--qd N] [--queues N] [--iothreads N]\n"
		"       [--event-idx 0|1] [--seconds S] [--warmup S] [--poll-us N]\n"
		"       [--queue-size N] [--rep N]\n"
		"       [--rate-bw B/s] [--rate-bw-burst B] [--rate-ops N/s]\n"
		"       [--rate-ops-burst N] (libvmm: the disk's rate limits)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "target", 1, 0, 't' },     { "backend", 1, 0, 'b' },
		{ "file", 1, 0, 'f' },	     { "sock", 1, 0, 's' },
		{ "peer", 1, 0, 'P' },	     { "peer-pid", 1, 0, 'p' },
		{ "capacity", 1, 0, 'c' },   { "qd", 1, 0, 'd' },
		{ "queues", 1, 0, 'q' },     { "iothreads", 1, 0, 'i' },
		{ "event-idx", 1, 0, 'e' },  { "seconds", 1, 0, 'S' },
		{ "warmup", 1, 0, 'w' },     { "poll-us", 1, 0, 'u' },
		{ "queue-size", 1, 0, 'z' }, { "rep", 1, 0, 'r' },
		{ "peer-iothreads", 1, 0, 'I' },
		{ "rate-bw", 1, 0, 'B' },    { "rate-bw-burst", 1, 0, 'b' + 256 },
		{ "rate-ops", 1, 0, 'O' },   { "rate-ops-burst", 1, 0, 'O' + 256 },
		{ 0, 0, 0, 0 },
	};
	struct db_cfg c = {
		.target = "libvmm", .backend = "null", .peer = "qsd",
		.qd = 16, .queues = 1, .iothreads = 0, .queue_size = 256,
		.event_idx = 1, .seconds = 2, .warmup = 0.3, .peer_iothreads = 1,
	};
	static struct db_queue q[MAXQ];
	struct db_counters c0[MAXQ], c1[MAXQ];
	double t0, t1, cpu0, cpu1, pcpu0, pcpu1, dcpu0 = 0, dcpu1 = 0;
	double reqs = 0, kicks = 0, irqs = 0, wakeups = 0, errors = 0;
	const struct db_target *tg;
	struct db_ram ram;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 't': c.target = optarg; break;
		case 'b': c.backend = optarg; break;
		case 'f': c.file = optarg; break;
		case 's': c.sock = optarg; break;
		case 'P': c.peer = optarg; break;
		case 'p': c.peer_pid = atoi(optarg); break;
		case 'c': c.capacity = strtoull(optarg, NULL, 0); break;
		case 'd': c.qd = (unsigned int)atoi(optarg); break;
		case 'q': c.queues = (unsigned int)atoi(optarg); break;
		case 'i': c.iothreads = (unsigned int)atoi(optarg); break;
		case 'e': c.event_idx = atoi(optarg); break;
		case 'S': c.seconds = atof(optarg); break;
		case 'w': c.warmup = atof(optarg); break;
		case 'u': c.poll_us = (unsigned int)atoi(optarg); break;
		case 'z': c.queue_size = (unsigned int)atoi(optarg); break;
		case 'r': c.rep = (unsigned int)atoi(optarg); break;
		case 'I': c.peer_iothreads = (unsigned int)atoi(optarg); break;
		case 'B': c.rate_bw = strtoull(optarg, NULL, 0); break;
		case 'b' + 256: c.rate_bw_burst = strtoull(optarg, NULL, 0); break;
		case 'O': c.rate_ops = strtoull(optarg, NULL, 0); break;
		case 'O' + 256: c.rate_ops_burst = strtoull(optarg, NULL, 0); break;
		default: usage();
		}
	}
	if (!c.iothreads)
		c.iothreads = c.queues;
	if (!strcmp(c.target, "libvmm"))
		tg = &db_libvmm_target;
	else if (!strcmp(c.target, "vhost"))
		tg = &db_vhost_target;
	else
		usage();
	if (!c.queues || c.queues > MAXQ || !c.qd || c.qd > c.queue_size ||
	    (strcmp(c.backend, "null") && strcmp(c.backend, "file")) ||
	    (!strcmp(c.backend, "file") && !c.file && !strcmp(c.target, "libvmm")) ||
	    (!strcmp(c.target, "vhost") && !c.sock))
		usage();
	signal(SIGPIPE, SIG_IGN);

	/* Guest RAM: rings + per-request buffers (~4.2 KiB per request). */
	ret = db_ram_init(&ram, 16ull * 1024 * 1024 +
				(uint64_t)c.queues * c.qd * 8192);
	if (ret) {
		fprintf(stderr, "devbench: guest RAM: %s\n", strerror(-ret));
		return 1;
	}
	ret = tg->setup(&c, &ram, q, &stop_flag);
	if (ret) {
		fprintf(stderr, "devbench: %s set-up failed: %s\n", c.target,
			strerror(-ret));
		return 1;
	}
	for (unsigned int i = 0; i < c.queues; i++)
		if ((ret = db_queue_start(&q[i]))) {
			fprintf(stderr, "devbench: thread: %s\n", strerror(-ret));
			return 1;
		}

	usleep((useconds_t)(c.warmup * 1e6));
	for (unsigned int i = 0; i < c.queues; i++) {
		db_queue_counters(&q[i], &c0[i]);
		dcpu0 += db_queue_cpu_ns(&q[i]) * 1e-9;
	}
	if (tg->snapshot)
		tg->snapshot(false);
	cpu0 = self_cpu();
	pcpu0 = peer_cpu(c.peer_pid);
	t0 = now();
	usleep((useconds_t)(c.seconds * 1e6));
	t1 = now();
	cpu1 = self_cpu();
	pcpu1 = peer_cpu(c.peer_pid);
	if (tg->snapshot)
		tg->snapshot(true);
	for (unsigned int i = 0; i < c.queues; i++) {
		db_queue_counters(&q[i], &c1[i]);
		dcpu1 += db_queue_cpu_ns(&q[i]) * 1e-9;
		reqs += (double)(c1[i].reqs - c0[i].reqs);
		kicks += (double)(c1[i].kicks - c0[i].kicks);
		irqs += (double)(c1[i].irqs - c0[i].irqs);
		wakeups += (double)(c1[i].wakeups - c0[i].wakeups);
	}
	stop_flag = 1;
	for (unsigned int i = 0; i < c.queues; i++) {
		db_queue_join(&q[i]);
		errors += (double)q[i].c.errors;
	}

	{
		double secs = t1 - t0, r = reqs > 0 ? reqs : 1;
		double cpu = (cpu1 - cpu0) + (pcpu1 - pcpu0), drv = dcpu1 - dcpu0;
		unsigned int devthreads = !strcmp(c.target, "libvmm") ?
						  (c.iothreads < c.queues ? c.iothreads : c.queues) :
						  c.peer_iothreads;

		printf("{\"target\": \"%s\", \"backend\": \"%s\", \"qd\": %u, "
		       "\"queues\": %u, \"iothreads\": %u, \"event_idx\": %s, "
		       "\"poll_us\": %u, \"queue_size\": %u, \"rep\": %u, "
		       "\"seconds\": %.3f, \"reqs\": %.0f, \"rps\": %.0f, "
		       "\"rps_per_iothread\": %.0f, \"kicks_per_req\": %.4f, "
		       "\"irqs_per_req\": %.4f, \"notifs_per_req\": %.4f, "
		       "\"wakeups_per_req\": %.4f, \"cpu_us_per_req\": %.3f, "
		       "\"driver_cpu_us_per_req\": %.3f, \"device_cpu_us_per_req\": %.3f, "
		       "\"cpu_cores\": %.3f, \"errors\": %.0f",
		       !strcmp(c.target, "libvmm") ? "libvmm" : c.peer, c.backend,
		       c.qd, c.queues, devthreads, c.event_idx ? "true" : "false",
		       c.poll_us, c.queue_size, c.rep, secs, reqs, reqs / secs,
		       reqs / secs / devthreads, kicks / r, irqs / r,
		       (kicks + irqs) / r, wakeups / r, cpu * 1e6 / r, drv * 1e6 / r,
		       (cpu - drv) * 1e6 / r, cpu / secs, errors);
		if (tg->json)
			tg->json(stdout, secs, reqs);
		printf(", \"rate_bw\": %llu, \"rate_ops\": %llu, \"queue_reqs\": [",
		       c.rate_bw, c.rate_ops);
		for (unsigned int i = 0; i < c.queues; i++)
			printf("%s%llu", i ? ", " : "",
			       (unsigned long long)(c1[i].reqs - c0[i].reqs));
		printf("]}\n");
	}
	tg->teardown();
	for (unsigned int i = 0; i < c.queues; i++)
		db_queue_destroy(&q[i]);
	db_ram_destroy(&ram);
	return errors > 0 ? 3 : 0;
}
