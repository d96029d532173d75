/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "vmm/vmm-bench.h"

enum {
	OPT_APPEND = 256,
	OPT_STATS,
	OPT_STATS_JSON,
	OPT_NO_SECCOMP,
	OPT_USER,
	OPT_IO_SCHED,
	OPT_MEM_BACKEND,
};

static const struct option long_opts[] = {
	{ "smp", required_argument, NULL, 'c' },
	{ "mem", required_argument, NULL, 'm' },
	{ "kernel", required_argument, NULL, 'k' },
	{ "initrd", required_argument, NULL, 'i' },
	{ "cmdline", required_argument, NULL, 'p' },
	{ "append", required_argument, NULL, OPT_APPEND },
	{ "disk", required_argument, NULL, 'd' },
	{ "stats", no_argument, NULL, OPT_STATS },
	{ "stats-json", no_argument, NULL, OPT_STATS_JSON },
	{ "no-seccomp", no_argument, NULL, OPT_NO_SECCOMP },
	{ "user", required_argument, NULL, OPT_USER },
	{ "io-sched", required_argument, NULL, OPT_IO_SCHED },
	{ "mem-backend", required_argument, NULL, OPT_MEM_BACKEND },
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

void cli_usage(const char *prog, void *file)
{
	fprintf(file,
		"Usage: %s --kernel " CLI_KERNEL_ARG " [options]\n"
		"Boot a Linux kernel in a KVM virtual machine (libvmm %s).\n"
		"\n"
		"  -c, --smp N          number of vCPUs (default 1, max %d)\n"
		"  -m, --mem SIZE       guest RAM: 512M, 2G, or a number of MiB\n"
		"                       (default 256M)\n"
		"      --mem-backend B  guest RAM: anon (default: private, huge\n"
		"                       pages), memfd (shareable; huge pages only\n"
		"                       if shmem THP is enabled) or hugetlb (a\n"
		"                       hugetlbfs memfd, 2 MiB pages reserved at\n"
		"                       start from /proc/sys/vm/nr_hugepages)\n"
		CLI_KERNEL_HELP
		"  -i, --initrd FILE    initrd / initramfs, a regular file\n"
		"  -p, --cmdline S      kernel command line, replacing the default:\n"
		"                       \"%s\"\n"
		"      --append S       add S to the command line\n"
		"  -d, --disk SPEC      virtio-blk-pci disk (repeatable, up to %d): IMG\n"
		"                       or path=IMG[,num-queues=N][,queue-size=N]\n"
		"                       [,ro=on][,serial=S][,direct=on][,poll-us=N]\n"
		"                       [,cache=writeback|unsafe][,event-idx=off]\n"
		"                       [,lock=off][,wiring=per-vector]\n"
		"                       IMG: a regular file or a block device.\n"
		"                       num-queues 1..%d, default the vCPU count;\n"
		"                       all disks together at most %d queues (one\n"
		"                       KVM interrupt route each): defaults are\n"
		"                       lowered to fit.  The image is locked (shared\n"
		"                       if ro=on, else exclusive) unless lock=off\n"
		"                       wiring=per-vector: one KVM routing update\n"
		"                       per queue at driver start (slower; to\n"
		"                       compare with the batched default)\n"
		"      --stats          print disk, KVM and console statistics at exit\n"
		"      --stats-json     the same, as one JSON object on stderr\n"
		"      --no-seccomp     do not confine the VMM's threads with\n"
		"                       seccomp-bpf allow-lists (on by default)\n"
		"      --user UID[:GID] once /dev/kvm, the kernel, initrd and disk\n"
		"                       images are open and before the guest runs,\n"
		"                       drop to this user and group (numbers or\n"
		"                       names; GID defaults to the user's group) with\n"
		"                       no supplementary groups, no capabilities\n"
		"                       (bounding set included) and no_new_privs;\n"
		"                       minivmm must start as root; 0 (root) is\n"
		"                       refused\n"
		"      --io-sched P     I/O threads' scheduling policy: batch\n"
		"                       (default: a kick does not preempt the\n"
		"                       vCPU, so requests are served in batches)\n"
		"                       or normal (lower latency at queue depth 1\n"
		"                       when vCPUs and I/O threads share CPUs)\n"
		"  -v, --verbose        more log messages (repeat for debug)\n"
		"  -q, --quiet          errors only\n"
		"  -h, --help           this text\n"
		"  -V, --version        print the version\n"
		"\n"
		CLI_END_HELP,
		prog, VMM_VERSION_STRING, VMM_MAX_VCPUS, CLI_DEFAULT_CMDLINE,
		VMM_MAX_DISKS, VMM_MAX_DISK_QUEUES, VMM_MAX_QUEUES);
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* Whole-string unsigned decimal in [min, max]. */
static int parse_uint(const char *s, unsigned long long min,
		      unsigned long long max, unsigned long long *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int cli_parse_size(const char *s, uint64_t *out)
{
	unsigned long long v, mult = 1ull << 20;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (*end) {
		switch (*end) {
		case 'k': case 'K': mult = 1ull << 10; break;
		case 'm': case 'M': mult = 1ull << 20; break;
		case 'g': case 'G': mult = 1ull << 30; break;
		case 't': case 'T': mult = 1ull << 40; break;
		default: return -1;
		}
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'b' || *end == 'B')
			end++;
		if (*end)
			return -1;
	}
	if (v == 0 || v > UINT64_MAX / mult)
		return -1;
	*out = v * mult;
	return 0;
}

static int parse_bool(const char *v, bool *out)
{
	if (!strcmp(v, "on") || !strcmp(v, "true") || !strcmp(v, "1") ||
	    !strcmp(v, "yes")) {
		*out = true;
		return 0;
	}
	if (!strcmp(v, "off") || !strcmp(v, "false") || !strcmp(v, "0") ||
	    !strcmp(v, "no")) {
		*out = false;
		return 0;
	}
	return -1;
}

int cli_parse_disk(const char *spec, struct cli_disk *d, char *err, size_t errlen)
{
	struct vmm_disk_config *c = &d->cfg;
	char *save = NULL, *tok;
	unsigned long long n;
	bool b;

	memset(d, 0, sizeof(*d));
	c->struct_size = sizeof(*c);
	c->fd = -1;
	if (!spec || !*spec)
		return fail(err, errlen, "--disk needs a value");
	d->spec = strdup(spec);
	if (!d->spec)
		return fail(err, errlen, "out of memory");
	if (!strchr(d->spec, '=')) { /* plain "--disk IMG" */
		c->path = d->spec;
		return 0;
	}
	for (tok = strtok_r(d->spec, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *val = strchr(tok, '=');

		if (!val)
			return fail(err, errlen, "--disk: '%s' is not key=value", tok);
		*val++ = '\0';
		if (!strcmp(tok, "path") || !strcmp(tok, "file")) {
			if (!*val)
				return fail(err, errlen, "--disk: empty path");
			c->path = val;
		} else if (!strcmp(tok, "num-queues")) {
			if (parse_uint(val, 1, VMM_MAX_DISK_QUEUES, &n))
				return fail(err, errlen,
					    "--disk: num-queues must be 1..%d, got '%s'",
					    VMM_MAX_DISK_QUEUES, val);
			c->num_queues = (uint16_t)n;
		} else if (!strcmp(tok, "queue-size")) {
			if (parse_uint(val, 2, 1024, &n) || (n & (n - 1)))
				return fail(err, errlen,
					    "--disk: queue-size must be a power of two 2..1024, got '%s'",
					    val);
			c->queue_size = (uint16_t)n;
		} else if (!strcmp(tok, "ro") || !strcmp(tok, "readonly")) {
			if (parse_bool(val, &b))
				return fail(err, errlen, "--disk: ro must be on or off");
			c->flags = b ? c->flags | VMM_DISK_READONLY
				     : c->flags & ~VMM_DISK_READONLY;
		} else if (!strcmp(tok, "direct")) {
			if (parse_bool(val, &b))
				return fail(err, errlen, "--disk: direct must be on or off");
			c->flags = b ? c->flags | VMM_DISK_DIRECT
				     : c->flags & ~VMM_DISK_DIRECT;
		} else if (!strcmp(tok, "event-idx")) {
			if (parse_bool(val, &b))
				return fail(err, errlen, "--disk: event-idx must be on or off");
			c->flags = b ? c->flags & ~VMM_DISK_NO_EVENT_IDX
				     : c->flags | VMM_DISK_NO_EVENT_IDX;
		} else if (!strcmp(tok, "lock")) {
			if (parse_bool(val, &b))
				return fail(err, errlen, "--disk: lock must be on or off");
			c->flags = b ? c->flags & ~VMM_DISK_NO_LOCK
				     : c->flags | VMM_DISK_NO_LOCK;
		} else if (!strcmp(tok, "wiring")) {
			if (!strcmp(val, "batched"))
				c->flags &= ~VMM_DISK_PER_VECTOR_WIRING;
			else if (!strcmp(val, "per-vector"))
				c->flags |= VMM_DISK_PER_VECTOR_WIRING;
			else
				return fail(err, errlen,
					    "--disk: wiring must be batched or per-vector");
		} else if (!strcmp(tok, "cache")) {
			if (!strcmp(val, "writeback"))
				c->flags &= ~VMM_DISK_NO_FLUSH;
			else if (!strcmp(val, "unsafe"))
				c->flags |= VMM_DISK_NO_FLUSH;
			else
				return fail(err, errlen,
					    "--disk: cache must be writeback or unsafe");
		} else if (!strcmp(tok, "serial")) {
			if (strlen(val) > 20)
				return fail(err, errlen,
					    "--disk: serial is at most 20 bytes");
			c->serial = val;
		} else if (!strcmp(tok, "poll-us")) {
			if (parse_uint(val, 0, 1000000, &n))
				return fail(err, errlen,
					    "--disk: poll-us must be 0..1000000, got '%s'", val);
			c->poll_us = (uint32_t)n;
		} else {
			return fail(err, errlen, "--disk: unknown key '%s'", tok);
		}
	}
	if (!c->path)
		return fail(err, errlen, "--disk: path= is missing");
	return 0;
}

static int append_cmdline(struct cli_opts *o, const char *s, char *err,
			  size_t errlen)
{
	size_t a = strlen(o->cmdline), b = strlen(s);
	char *n;

	if (a + 1 + b > VMM_MAX_CMDLINE)
		return fail(err, errlen, "kernel command line longer than %d bytes",
			    VMM_MAX_CMDLINE);
	n = realloc(o->cmdline, a + b + 2);
	if (!n)
		return fail(err, errlen, "out of memory");
	if (a)
		n[a++] = ' ';
	memcpy(n + a, s, b + 1);
	o->cmdline = n;
	return 0;
}

/* Every queue of every disk has its own MSI route in KVM: at most
 * VMM_MAX_QUEUES in all (a disk without num-queues is lowered to fit, down
 * to one queue; vmm_add_disk()). */
static int check_queues(const struct cli_opts *o, char *err, size_t errlen)
{
	unsigned long total = 0;

	for (unsigned int i = 0; i < o->nr_disks; i++)
		total += o->disks[i].cfg.num_queues ? o->disks[i].cfg.num_queues : 1;
	if (total > VMM_MAX_QUEUES)
		return fail(err, errlen,
			    "--disk: %lu queues in all (num-queues, 1 for a disk "
			    "without) but KVM's interrupt routes allow %d",
			    total, VMM_MAX_QUEUES);
	return 0;
}

int cli_parse(int argc, char **argv, struct cli_opts *o, char *err, size_t errlen)
{
	unsigned long long n;
	int c;

	memset(o, 0, sizeof(*o));
	o->smp = 1;
	o->mem = 256ull << 20;
	o->log_level = VMM_LOG_WARN;
	o->cmdline = strdup(CLI_DEFAULT_CMDLINE);
	if (!o->cmdline)
		return fail(err, errlen, "out of memory");
	/* 0, not 1: glibc then also forgets its position inside a cluster of
	 * short options ("-vX") that an earlier call returned from early;
	 * with 1 the next call resumed scanning that old, possibly freed,
	 * argv string (found by tests/fuzz/fuzz_cli). */
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:m:k:i:p:d:vqhV", long_opts,
				NULL)) != -1) {
		switch (c) {
		case 'c':
			if (parse_uint(optarg, 1, VMM_MAX_VCPUS, &n))
				return fail(err, errlen,
					    "--smp must be a number from 1 to %d, got '%s'",
					    VMM_MAX_VCPUS, optarg);
			o->smp = (unsigned int)n;
			break;
		case 'm':
			if (cli_parse_size(optarg, &o->mem) ||
			    o->mem < VMM_MIN_MEMORY || (o->mem & 0xfff))
				return fail(err, errlen,
					    "--mem must be a size of at least 16M (e.g. 512M, 2G), got '%s'",
					    optarg);
			break;
		case 'k':
			o->kernel = optarg;
			break;
		case 'i':
			o->initrd = optarg;
			break;
		case 'p':
			free(o->cmdline);
			o->cmdline = strdup("");
			if (!o->cmdline)
				return fail(err, errlen, "out of memory");
			if (append_cmdline(o, optarg, err, errlen))
				return -1;
			break;
		case OPT_APPEND:
			if (append_cmdline(o, optarg, err, errlen))
				return -1;
			break;
		case 'd':
			if (o->nr_disks == CLI_MAX_DISKS)
				return fail(err, errlen, "at most %d disks",
					    CLI_MAX_DISKS);
			if (cli_parse_disk(optarg, &o->disks[o->nr_disks++], err,
					   errlen))
				return -1;
			break;
		case OPT_STATS:
			o->stats = true;
			break;
		case OPT_STATS_JSON:
			o->stats = o->stats_json = true;
			break;
		case OPT_NO_SECCOMP:
			o->no_seccomp = true;
			break;
		case OPT_USER: /* the last one counts */
			user_spec_free(&o->user);
			if (user_parse(optarg, "--user", &o->user, err, errlen))
				return -1;
			break;
		case OPT_MEM_BACKEND:
			if (!strcmp(optarg, "anon"))
				o->mem_backend = VMM_MEMORY_ANON;
			else if (!strcmp(optarg, "memfd"))
				o->mem_backend = VMM_MEMORY_MEMFD;
			else if (!strcmp(optarg, "hugetlb"))
				o->mem_backend = VMM_MEMORY_HUGETLB;
			else
				return fail(err, errlen,
					    "--mem-backend must be anon, memfd or hugetlb, got '%s'",
					    optarg);
			break;
		case OPT_IO_SCHED:
			if (!strcmp(optarg, "batch"))
				o->io_sched = VMM_IOTHREAD_SCHED_BATCH;
			else if (!strcmp(optarg, "normal"))
				o->io_sched = VMM_IOTHREAD_SCHED_NORMAL;
			else
				return fail(err, errlen,
					    "--io-sched must be batch or normal, got '%s'",
					    optarg);
			break;
		case 'v':
			if (o->log_level < VMM_LOG_DEBUG)
				o->log_level++;
			break;
		case 'q':
			o->log_level = VMM_LOG_ERROR;
			break;
		case 'h':
			o->help = true;
			return 0;
		case 'V':
			o->version = true;
			return 0;
		case ':':
			return fail(err, errlen, "option '%s' needs a value",
				    argv[optind - 1]);
		default:
			return fail(err, errlen, "unknown option '%s'",
				    argv[optind - 1]);
		}
	}
	if (optind < argc)
		return fail(err, errlen, "unexpected argument '%s'", argv[optind]);
	if (!o->kernel)
		return fail(err, errlen, "--kernel is required");
	return check_queues(o, err, errlen);
}

void cli_free(struct cli_opts *o)
{
	for (unsigned int i = 0; i < o->nr_disks; i++)
		free(o->disks[i].spec);
	free(o->cmdline);
	o->cmdline = NULL;
	o->nr_disks = 0;
	user_spec_free(&o->user);
}
