/* SPDX-License-Identifier: MIT */
/* minivmm-blkd's command line (examples/blkd/blkd-cli.c). */
#include <check.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blkd-cli.h"

static int parse(struct blkd_opts *o, char *err, unsigned int ncpus, int argc, ...)
{
	char *argv[16];
	va_list ap;

	argv[0] = (char *)"minivmm-blkd";
	va_start(ap, argc);
	for (int i = 1; i <= argc; i++)
		argv[i] = va_arg(ap, char *);
	va_end(ap);
	argv[argc + 1] = NULL;
	return blkd_parse(argc + 1, argv, ncpus, o, err, 256);
}

START_TEST(defaults)
{
	struct blkd_opts o;
	char err[256];

	ck_assert_int_eq(parse(&o, err, 6, 4, "--socket", "/tmp/s", "--disk", "a.img"), 0);
	ck_assert_str_eq(o.socket, "/tmp/s");
	ck_assert_str_eq(o.disk.cfg.path, "a.img");
	/* All the queues virtio-pci allows, one I/O thread per host CPU. */
	ck_assert_uint_eq(o.disk.cfg.num_queues, 1024);
	ck_assert_uint_eq(o.iothreads, 6);
	ck_assert_int_eq(o.io_sched, VMM_IOTHREAD_SCHED_BATCH);
	ck_assert(!o.no_seccomp);
	ck_assert(!o.stats_json);
	blkd_free(&o);
	/* minivmm's --disk syntax. */
	ck_assert_int_eq(parse(&o, err, 6, 8, "--socket", "/tmp/s", "--disk",
			       "path=b.img,num-queues=4,ro=on,serial=x,queue-size=128",
			       "--iothreads", "2", "--no-seccomp", "--stats-json"), 0);
	ck_assert_str_eq(o.disk.cfg.path, "b.img");
	ck_assert_uint_eq(o.disk.cfg.num_queues, 4);
	ck_assert_uint_eq(o.disk.cfg.queue_size, 128);
	ck_assert(o.disk.cfg.flags & VMM_DISK_READONLY);
	ck_assert_str_eq(o.disk.cfg.serial, "x");
	ck_assert_uint_eq(o.iothreads, 2);
	ck_assert(o.no_seccomp);
	ck_assert(o.stats_json);
	blkd_free(&o);
	/* Many CPUs: 1024 queues, no more threads than queues. */
	ck_assert_int_eq(parse(&o, err, 5000, 4, "--socket", "/s", "--disk", "a"), 0);
	ck_assert_uint_eq(o.disk.cfg.num_queues, 1024);
	ck_assert_uint_eq(o.iothreads, 1024);
	blkd_free(&o);
	ck_assert_int_eq(parse(&o, err, 1, 3, "--socket", "/s", "--help"), 0);
	ck_assert(o.help);
	blkd_free(&o);
}
END_TEST

/*
 * Issue 31: the queue count is the front end's (QEMU asks for one per guest
 * vCPU), the I/O thread count the host's.  A one-CPU host used to offer one
 * queue, which QEMU's default for a 4-vCPU guest made it refuse.
 */
START_TEST(queues_for_the_front_end)
{
	struct blkd_opts o;
	char err[256];

	/* One CPU: every queue offered, one thread serves them all. */
	ck_assert_int_eq(parse(&o, err, 1, 4, "--socket", "/s", "--disk", "a.img"), 0);
	ck_assert_uint_eq(o.disk.cfg.num_queues, VMM_MAX_DISK_QUEUES);
	ck_assert_uint_eq(o.iothreads, 1);
	blkd_free(&o);
	/* num-queues= stays a cap; the threads follow the CPUs below it... */
	ck_assert_int_eq(parse(&o, err, 2, 4, "--socket", "/s", "--disk",
			       "path=a.img,num-queues=8"), 0);
	ck_assert_uint_eq(o.disk.cfg.num_queues, 8);
	ck_assert_uint_eq(o.iothreads, 2);
	blkd_free(&o);
	/* ... and the cap above them. */
	ck_assert_int_eq(parse(&o, err, 16, 4, "--socket", "/s", "--disk",
			       "path=a.img,num-queues=4"), 0);
	ck_assert_uint_eq(o.disk.cfg.num_queues, 4);
	ck_assert_uint_eq(o.iothreads, 4);
	blkd_free(&o);
	/* --iothreads overrides the CPU count, up to the queues offered. */
	ck_assert_int_eq(parse(&o, err, 1, 6, "--socket", "/s", "--disk", "a.img",
			       "--iothreads", "3"), 0);
	ck_assert_uint_eq(o.disk.cfg.num_queues, VMM_MAX_DISK_QUEUES);
	ck_assert_uint_eq(o.iothreads, 3);
	blkd_free(&o);
	ck_assert_int_eq(parse(&o, err, 1, 6, "--socket", "/s", "--disk", "a.img",
			       "--iothreads", "1024"), 0);
	ck_assert_uint_eq(o.iothreads, 1024);
	blkd_free(&o);
	ck_assert_int_eq(parse(&o, err, 1, 6, "--socket", "/s", "--disk",
			       "path=a.img,num-queues=4", "--iothreads", "5"), -1);
	ck_assert_str_eq(err, "--iothreads 5: more I/O threads than queues (4)");
	blkd_free(&o);
	/* The help says so. */
	{
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		ck_assert_ptr_nonnull(f);
		blkd_usage("minivmm-blkd", f);
		fclose(f);
		ck_assert_ptr_nonnull(strstr(text, "(default 1024,"));
		ck_assert_ptr_nonnull(strstr(text, "CPU the daemon may run on"));
		free(text);
	}
}
END_TEST

/* The CPUs the daemon may run on: its affinity mask (taskset, cpusets). */
START_TEST(host_cpus)
{
	cpu_set_t all, one;
	unsigned int n = blkd_host_cpus();

	ck_assert_int_eq(sched_getaffinity(0, sizeof(all), &all), 0);
	ck_assert_uint_eq(n, (unsigned int)CPU_COUNT(&all));
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &all)) {
			CPU_SET(c, &one);
			break;
		}
	ck_assert_int_eq(sched_setaffinity(0, sizeof(one), &one), 0);
	ck_assert_uint_eq(blkd_host_cpus(), 1);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(all), &all), 0);
}
END_TEST

START_TEST(errors)
{
	static char long_path[200];
	struct blkd_opts o;
	char err[256];

	memset(long_path, 'x', sizeof(long_path) - 1);
	ck_assert_int_eq(parse(&o, err, 2, 2, "--disk", "a.img"), -1);
	ck_assert_str_eq(err, "--socket is required");
	blkd_free(&o);
	ck_assert_int_eq(parse(&o, err, 2, 2, "--socket", "/s"), -1);
	ck_assert_str_eq(err, "--disk is required");
	blkd_free(&o);
	ck_assert_int_eq(parse(&o, err, 2, 4, "--socket", long_path, "--disk", "a"), -1);
	ck_assert_str_eq(err, "--socket: path longer than 107 bytes");
	blkd_free(&o);
	ck_assert_int_eq(parse(&o, err, 2, 6, "--socket", "/s", "--disk", "a", "--disk", "b"), -1);
	ck_assert_str_eq(err, "one --disk per daemon (run one per disk)");
	blkd_free(&o);
	ck_assert_int_eq(parse(&o, err, 2, 4, "--socket", "/s", "--disk", "path=a,num-queues=0"), -1);
	ck_assert_str_eq(err, "--disk: num-queues must be 1..1024, got '0'");
	blkd_free(&o);
	ck_assert_int_eq(parse(&o, err, 2, 6, "--socket", "/s", "--disk", "path=a,num-queues=2",
			       "--iothreads", "3"), -1);
	ck_assert_str_eq(err, "--iothreads 3: more I/O threads than queues (2)");
	blkd_free(&o);
	ck_assert_int_eq(parse(&o, err, 2, 6, "--socket", "/s", "--disk", "a", "--iothreads", "0"), -1);
	ck_assert_str_eq(err, "--iothreads must be a number from 1 to 1024, got '0'");
	blkd_free(&o);
	ck_assert_int_eq(parse(&o, err, 2, 6, "--socket", "/s", "--disk", "a", "--io-sched", "rt"), -1);
	ck_assert_str_eq(err, "--io-sched must be batch, normal or adaptive, got 'rt'");
	blkd_free(&o);
	ck_assert_int_eq(parse(&o, err, 2, 5, "--socket", "/s", "--disk", "a", "extra"), -1);
	ck_assert_str_eq(err, "unexpected argument 'extra'");
	blkd_free(&o);
	ck_assert_int_eq(parse(&o, err, 2, 1, "--bogus"), -1);
	ck_assert_str_eq(err, "unknown option '--bogus'");
	blkd_free(&o);
	ck_assert_int_eq(parse(&o, err, 2, 1, "--socket"), -1);
	ck_assert_str_eq(err, "option '--socket' needs a value");
	blkd_free(&o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("blkd_cli");
	TCase *tc = tcase_create("parse");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, defaults);
	tcase_add_test(tc, queues_for_the_front_end);
	tcase_add_test(tc, host_cpus);
	tcase_add_test(tc, errors);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
