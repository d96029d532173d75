/* minivmm command-line parsing: sizes, disk specs, usage errors. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "vmm/vmm-bench.h"

static int parse(struct cli_opts *o, char *err, int argc, ...)
{
	char *argv[32];
	va_list ap;
	int ret;

	va_start(ap, argc);
	argv[0] = (char *)"minivmm";
	for (int i = 1; i <= argc; i++)
		argv[i] = va_arg(ap, char *);
	argv[argc + 1] = NULL;
	va_end(ap);
	ret = cli_parse(argc + 1, argv, o, err, 256);
	return ret;
}

START_TEST(sizes)
{
	uint64_t v;

	ck_assert_int_eq(cli_parse_size("512M", &v), 0);
	ck_assert_uint_eq(v, 512ull << 20);
	ck_assert_int_eq(cli_parse_size("2G", &v), 0);
	ck_assert_uint_eq(v, 2ull << 30);
	ck_assert_int_eq(cli_parse_size("2GiB", &v), 0);
	ck_assert_uint_eq(v, 2ull << 30);
	ck_assert_int_eq(cli_parse_size("1024K", &v), 0);
	ck_assert_uint_eq(v, 1ull << 20);
	ck_assert_int_eq(cli_parse_size("300", &v), 0); /* MiB, like QEMU -m */
	ck_assert_uint_eq(v, 300ull << 20);
	ck_assert_int_eq(cli_parse_size("", &v), -1);
	ck_assert_int_eq(cli_parse_size("-1G", &v), -1);
	ck_assert_int_eq(cli_parse_size("0", &v), -1);
	ck_assert_int_eq(cli_parse_size("12X", &v), -1);
	ck_assert_int_eq(cli_parse_size("1Gx", &v), -1);
	ck_assert_int_eq(cli_parse_size("99999999999999999999G", &v), -1);
	ck_assert_int_eq(cli_parse_size("17179869184T", &v), -1); /* overflow */
}
END_TEST

START_TEST(defaults)
{
	struct cli_opts o;
	char err[256];

	ck_assert_int_eq(parse(&o, err, 2, "--kernel", "bz"), 0);
	ck_assert_uint_eq(o.smp, 1);
	ck_assert_uint_eq(o.mem, 256ull << 20);
	ck_assert_str_eq(o.cmdline, CLI_DEFAULT_CMDLINE);
	ck_assert_str_eq(o.kernel, "bz");
	cli_free(&o);
}
END_TEST

START_TEST(full)
{
	struct cli_opts o;
	char err[256];

	ck_assert_int_eq(parse(&o, err, 12, "--smp", "32", "--mem", "2G",
			       "--kernel", "bz", "--initrd", "rd", "--cmdline",
			       "console=ttyS0", "--append", "quiet"),
			 0);
	ck_assert_uint_eq(o.smp, 32);
	ck_assert_uint_eq(o.mem, 2ull << 30);
	ck_assert_str_eq(o.initrd, "rd");
	ck_assert_str_eq(o.cmdline, "console=ttyS0 quiet");
	cli_free(&o);
}
END_TEST

START_TEST(io_sched)
{
	struct cli_opts o;
	char err[256];

	ck_assert_int_eq(parse(&o, err, 2, "--kernel", "bz"), 0);
	ck_assert_int_eq(o.io_sched, VMM_IOTHREAD_SCHED_BATCH);
	cli_free(&o);
	ck_assert_int_eq(parse(&o, err, 4, "--kernel", "bz", "--io-sched", "normal"), 0);
	ck_assert_int_eq(o.io_sched, VMM_IOTHREAD_SCHED_NORMAL);
	cli_free(&o);
	ck_assert_int_eq(parse(&o, err, 4, "--kernel", "bz", "--io-sched", "batch"), 0);
	ck_assert_int_eq(o.io_sched, VMM_IOTHREAD_SCHED_BATCH);
	cli_free(&o);
	ck_assert_int_eq(parse(&o, err, 4, "--kernel", "bz", "--io-sched", "adaptive"), 0);
	ck_assert_int_eq(o.io_sched, VMM_IOTHREAD_SCHED_ADAPTIVE);
	cli_free(&o);
	ck_assert_int_eq(parse(&o, err, 4, "--kernel", "bz", "--io-sched", "fifo"), -1);
	ck_assert_str_eq(err, "--io-sched must be batch, normal or adaptive, got 'fifo'");
	cli_free(&o);
}
END_TEST

START_TEST(mem_backend)
{
	static const struct {
		const char *arg;
		int backend;
	} ok[] = {
		{ "anon", VMM_MEMORY_ANON },
		{ "memfd", VMM_MEMORY_MEMFD },
		{ "hugetlb", VMM_MEMORY_HUGETLB },
	};
	struct cli_opts o;
	char err[256];

	ck_assert_int_eq(parse(&o, err, 2, "--kernel", "bz"), 0);
	ck_assert_int_eq(o.mem_backend, VMM_MEMORY_ANON);
	cli_free(&o);
	for (unsigned int i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_int_eq(parse(&o, err, 4, "--kernel", "bz", "--mem-backend",
				       ok[i].arg), 0);
		ck_assert_int_eq(o.mem_backend, ok[i].backend);
		cli_free(&o);
	}
	ck_assert_int_eq(parse(&o, err, 4, "--kernel", "bz", "--mem-backend", "shm"), -1);
	ck_assert_str_eq(err, "--mem-backend must be anon, memfd or hugetlb, got 'shm'");
	cli_free(&o);
}
END_TEST

START_TEST(usage_errors)
{
	static const char *const bad[][3] = {
		{ "--smp", "0", NULL },	     { "--smp", "1025", NULL },
		{ "--smp", "x", NULL },	     { "--smp", "-3", NULL },
		{ "--mem", "1M", NULL },     { "--mem", "lots", NULL },
		{ "--bogus", NULL, NULL },   { "--disk", "path=", NULL },
		{ "--disk", "path=x,junk", NULL },   { "--disk", "path=x,num-queues=0", NULL },
		{ "--disk", "path=x,queue-size=100", NULL },
		{ "--disk", "path=x,ro=maybe", NULL },
		{ "--disk", "path=x,colour=red", NULL },
		{ "--disk", "num-queues=2", NULL },
		{ "--disk", "path=x,serial=123456789012345678901", NULL },
		{ "stray", NULL, NULL },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cli_opts o;
		char err[256] = "";
		int argc = 2 + (bad[i][1] ? 2 : 1);
		int ret = bad[i][1] ? parse(&o, err, 4, "--kernel", "bz",
					    bad[i][0], bad[i][1])
				    : parse(&o, err, 3, "--kernel", "bz", bad[i][0]);

		(void)argc;
		ck_assert_msg(ret == -1, "accepted %s %s", bad[i][0],
			      bad[i][1] ? bad[i][1] : "");
		ck_assert_msg(strlen(err) > 0 && !strchr(err, '\n'),
			      "reason must be one line: '%s'", err);
		cli_free(&o);
	}
}
END_TEST

START_TEST(missing_kernel_and_value)
{
	struct cli_opts o;
	char err[256];

	ck_assert_int_eq(parse(&o, err, 2, "--smp", "2"), -1);
	ck_assert_ptr_nonnull(strstr(err, "--kernel"));
	cli_free(&o);
	ck_assert_int_eq(parse(&o, err, 3, "--kernel", "bz", "--smp"), -1);
	ck_assert_ptr_nonnull(strstr(err, "needs a value"));
	cli_free(&o);
}
END_TEST

START_TEST(help_version)
{
	struct cli_opts o;
	char err[256];

	ck_assert_int_eq(parse(&o, err, 1, "--help"), 0);
	ck_assert(o.help);
	cli_free(&o);
	ck_assert_int_eq(parse(&o, err, 1, "--version"), 0);
	ck_assert(o.version);
	cli_free(&o);
}
END_TEST

START_TEST(disk_specs)
{
	struct cli_disk d;
	char err[256];

	ck_assert_int_eq(cli_parse_disk("img.raw", &d, err, sizeof(err)), 0);
	ck_assert_str_eq(d.cfg.path, "img.raw");
	ck_assert_uint_eq(d.cfg.num_queues, 0);
	ck_assert_uint_eq(d.cfg.struct_size, sizeof(d.cfg));
	free(d.spec);

	ck_assert_int_eq(cli_parse_disk("path=/x/y.img,num-queues=4,queue-size=512,"
					"ro=on,serial=abc,direct=on,poll-us=50",
					&d, err, sizeof(err)),
			 0);
	ck_assert_str_eq(d.cfg.path, "/x/y.img");
	ck_assert_uint_eq(d.cfg.num_queues, 4);
	ck_assert_uint_eq(d.cfg.queue_size, 512);
	ck_assert_uint_eq(d.cfg.flags, VMM_DISK_READONLY | VMM_DISK_DIRECT);
	ck_assert_str_eq(d.cfg.serial, "abc");
	ck_assert_uint_eq(d.cfg.poll_us, 50);
	free(d.spec);

	ck_assert_int_eq(cli_parse_disk("path=a,event-idx=off,cache=unsafe", &d, err,
					sizeof(err)),
			 0);
	ck_assert_uint_eq(d.cfg.flags, VMM_DISK_NO_EVENT_IDX | VMM_DISK_NO_FLUSH);
	free(d.spec);
	ck_assert_int_eq(cli_parse_disk("path=a,cache=none", &d, err, sizeof(err)), -1);
	free(d.spec);

	/* wiring=per-vector|batched (the default). */
	ck_assert_int_eq(cli_parse_disk("path=a,wiring=per-vector", &d, err, sizeof(err)), 0);
	ck_assert_uint_eq(d.cfg.flags, VMM_DISK_PER_VECTOR_WIRING);
	free(d.spec);
	ck_assert_int_eq(cli_parse_disk("path=a,wiring=per-vector,wiring=batched", &d, err,
					sizeof(err)),
			 0);
	ck_assert_uint_eq(d.cfg.flags, 0);
	free(d.spec);
	ck_assert_int_eq(cli_parse_disk("path=a,wiring=lazy", &d, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "wiring must be batched or per-vector"));
	free(d.spec);
}
END_TEST

/* lock=off|on: image locking (VMM_DISK_NO_LOCK); on is the default. */
START_TEST(disk_lock)
{
	struct cli_disk d;
	char err[256];

	ck_assert_int_eq(cli_parse_disk("path=a", &d, err, sizeof(err)), 0);
	ck_assert_uint_eq(d.cfg.flags & VMM_DISK_NO_LOCK, 0);
	free(d.spec);
	ck_assert_int_eq(cli_parse_disk("path=a,lock=off,ro=on", &d, err, sizeof(err)), 0);
	ck_assert_uint_eq(d.cfg.flags, VMM_DISK_NO_LOCK | VMM_DISK_READONLY);
	free(d.spec);
	ck_assert_int_eq(cli_parse_disk("path=a,lock=off,lock=on", &d, err, sizeof(err)), 0);
	ck_assert_uint_eq(d.cfg.flags, 0);
	free(d.spec);
	ck_assert_int_eq(cli_parse_disk("path=a,lock=maybe", &d, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "lock must be on or off"));
	free(d.spec);
}
END_TEST

/* Disk limits are usage errors, stated with the numbers: num-queues per
 * disk, disks, queues over all disks (KVM's MSI routes). */
static int parse_argv(struct cli_opts *o, char *err, char **argv, int argc)
{
	return cli_parse(argc, argv, o, err, 256);
}

START_TEST(disk_limits)
{
	char *argv[3 + 2 * (VMM_MAX_DISKS + 1) + 1], spec[VMM_MAX_DISKS + 1][64],
		err[256];
	struct cli_opts o;
	int n;

	ck_assert_int_eq(parse(&o, err, 4, "--kernel", "bz", "--disk",
			       "path=x,num-queues=1025"), -1);
	ck_assert_str_eq(err, "--disk: num-queues must be 1..1024, got '1025'");
	cli_free(&o);

	argv[0] = (char *)"minivmm";
	argv[1] = (char *)"--kernel";
	argv[2] = (char *)"bz";
	/* VMM_MAX_DISKS + 1 disks: one too many. */
	n = 3;
	for (int i = 0; i < VMM_MAX_DISKS + 1; i++) {
		snprintf(spec[i], sizeof(spec[i]), "path=d%d", i);
		argv[n++] = (char *)"--disk";
		argv[n++] = spec[i];
	}
	argv[n] = NULL;
	ck_assert_int_eq(parse_argv(&o, err, argv, n), -1);
	ck_assert_str_eq(err, "at most 247 disks");
	cli_free(&o);
	ck_assert_int_eq(parse_argv(&o, err, argv, n - 2), 0); /* 247 */
	cli_free(&o);

	/* 4 x 1024 queues: 40 more than the routes allow. */
	n = 3;
	for (int i = 0; i < 4; i++) {
		snprintf(spec[i], sizeof(spec[i]), "path=d%d,num-queues=%d", i,
			 i == 3 ? 1024 - 40 : 1024);
		argv[n++] = (char *)"--disk";
		argv[n++] = spec[i];
	}
	argv[n] = NULL;
	ck_assert_int_eq(parse_argv(&o, err, argv, n), 0); /* exactly 4056 */
	cli_free(&o);
	snprintf(spec[3], sizeof(spec[3]), "path=d3,num-queues=1024");
	ck_assert_int_eq(parse_argv(&o, err, argv, n), -1);
	ck_assert_str_eq(err, "--disk: 4096 queues in all (num-queues, 1 for a disk "
			      "without) but KVM's interrupt routes allow 4056");
	cli_free(&o);
	/* A disk without num-queues counts as one (it shrinks to fit). */
	snprintf(spec[3], sizeof(spec[3]), "path=d3,num-queues=984");
	argv[n++] = (char *)"--disk";
	argv[n++] = (char *)"d4";
	argv[n] = NULL;
	ck_assert_int_eq(parse_argv(&o, err, argv, n), -1);
	ck_assert_ptr_nonnull(strstr(err, "4057 queues in all"));
	cli_free(&o);
}
END_TEST

static Suite *cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, sizes);
	tcase_add_test(tc, defaults);
	tcase_add_test(tc, full);
	tcase_add_test(tc, usage_errors);
	tcase_add_test(tc, missing_kernel_and_value);
	tcase_add_test(tc, help_version);
	tcase_add_test(tc, disk_specs);
	tcase_add_test(tc, disk_lock);
	tcase_add_test(tc, io_sched);
	tcase_add_test(tc, disk_limits);
	tcase_add_test(tc, mem_backend);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cli_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
