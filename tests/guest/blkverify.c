/* SPDX-License-Identifier: MIT */
/*
 * blkverify: a small static disk verifier for guests that have no fio (the
 * arm64 guest: Debian's fio pulls in a large library closure).  It does
 * what tests/guest/blk-mq asks of fio --verify=crc32c: one worker per CPU,
 * pinned, each on its own region (cpu_index * N MiB), O_DIRECT random
 * writes of every block (a seeded permutation), a flush, then every block
 * read back in another random order and checked.
 *
 * Block layout (bs bytes, little-endian as both x86_64 and aarch64 are):
 *   0  u64 magic   8 u64 byte offset   16 u64 seed   24 u32 cpu index
 *  28  u32 sequence (position in the write permutation)
 *  32  pseudo-random payload from (seed, offset), up to bs - 4
 *  bs-4 u32 crc32c of bytes [0, bs - 4)
 * Everything is a function of (seed, offset), so --mode verify can re-check
 * after a reboot what an earlier write-verify with the same seed wrote.
 *
 * Depth D: D threads per CPU, all pinned to that CPU, each doing plain
 * pwrite/pread on every D-th block, so the CPU's queue sees up to D
 * concurrent requests without io_uring (libc only, builds -static).
 *
 * Exit: 0 verified, 1 mismatch or I/O error, 2 bad arguments or setup.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAGIC 0x594649524556424bull /* "KBVERIFY" */
#define HDR 32
#define MAX_REPORTS 10
#define USAGE "usage: blkverify [--cpus LIST|all] [--mb-per-cpu N] [--depth D] [--bs BYTES]\n" \
	      "        [--seed S] [--mode write-verify|verify] DEVICE_OR_FILE"

static struct {
	unsigned int cpus[CPU_SETSIZE], ncpus, depth, bs;
	uint64_t mb, seed, blocks; /* blocks per CPU */
	int verify_only, fd;
	const char *path;
} cfg = { .mb = 16, .depth = 1, .bs = 4096, .seed = 1 };

/* One thread: D of them per CPU share that CPU's region and orders. */
struct job {
	unsigned int idx;            /* index into cfg.cpus, region number */
	unsigned int k;              /* takes permutation positions k, k+D, ... */
	uint32_t *wperm, *rperm;     /* write order; read order over wperm */
};

static pthread_barrier_t phase;
static atomic_int failed;        /* an I/O error: the others skip work */
static atomic_ullong mismatches; /* 64 bits: never wraps back to "OK" */
static uint32_t crc_table[256];

__attribute__((format(printf, 2, 3), noreturn))
static void die(int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("blkverify: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(rc);
}

/* Castagnoli, reflected (0x82F63B78): what fio's crc32c and iSCSI use. */
static void crc32c_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t crc32c(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t c = ~0u;

	while (len--)
		c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

/* splitmix64: good enough to make every block and permutation distinct. */
static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t *permutation(uint64_t n, uint64_t seed)
{
	uint32_t *p = malloc(n * sizeof(*p));

	if (!p)
		die(2, "out of memory for %" PRIu64 " blocks", n);
	for (uint64_t i = 0; i < n; i++)
		p[i] = (uint32_t)i;
	for (uint64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
		uint64_t j = mix(&seed) % (i + 1), t = p[i];
		p[i] = p[j];
		p[j] = (uint32_t)t;
	}
	return p;
}

static void fill_block(uint8_t *b, uint64_t off, unsigned int cpu, uint32_t seq)
{
	/* cpu and seq share word 3: cpu low, seq high on little-endian */
	uint64_t hdr[4] = { MAGIC, off, cfg.seed, cpu | (uint64_t)seq << 32 };
	uint64_t s = cfg.seed ^ (off * 0xd6e8feb86659fd93ull);
	uint32_t crc;

	memcpy(b, hdr, HDR);
	for (unsigned int i = HDR; i < cfg.bs - 4; i += 8) {
		uint64_t r = mix(&s);
		memcpy(b + i, &r, 8); /* bs >= 512 and a power of two: fits */
	}
	crc = crc32c(b, cfg.bs - 4);
	memcpy(b + cfg.bs - 4, &crc, 4);
}

/* Full transfers only; a short one is retried for the rest, EOF is an error. */
static int xfer(int wr, void *buf, uint64_t off)
{
	size_t done = 0;

	while (done < cfg.bs) {
		ssize_t n = wr ? pwrite(cfg.fd, (char *)buf + done, cfg.bs - done, (off_t)(off + done))
			       : pread(cfg.fd, (char *)buf + done, cfg.bs - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "blkverify: %s at offset %" PRIu64 ": %s\n",
				wr ? "write" : "read", off, n ? strerror(errno) : "end of file");
			return -1;
		}
		done += (size_t)n;
	}
	return 0;
}

__attribute__((format(printf, 3, 4)))
static void report(uint64_t off, unsigned int cpu, const char *fmt, ...)
{
	va_list ap;

	if (atomic_fetch_add(&mismatches, 1) >= MAX_REPORTS)
		return;
	flockfile(stderr); /* one line per mismatch, whatever the threads do */
	fprintf(stderr, "BLKVERIFY MISMATCH cpu=%u offset=%" PRIu64 " (0x%" PRIx64 "): ",
		cpu, off, off);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}

/* Says which field differs first: a misdirected or stale block shows as a
 * good crc with the wrong offset or seed, a torn or unwritten one as a bad
 * crc (its header says which). */
static void check(const uint8_t *got, const uint8_t *want, uint64_t off, unsigned int cpu)
{
	static const char *const names[] = { "magic", "offset", "seed", "seq<<32|cpu" };
	uint64_t g[4], e[4];
	uint32_t crc;

	if (!memcmp(got, want, cfg.bs))
		return;
	memcpy(g, got, HDR);
	memcpy(e, want, HDR);
	memcpy(&crc, got + cfg.bs - 4, 4);
	if (crc32c(got, cfg.bs - 4) != crc) {
		report(off, cpu, "crc32c bad: stored 0x%08x computed 0x%08x; magic 0x%" PRIx64
		       " offset 0x%" PRIx64 " seed 0x%" PRIx64, crc, crc32c(got, cfg.bs - 4),
		       g[0], g[1], g[2]);
		return;
	}
	for (int i = 0; i < 4; i++)
		if (g[i] != e[i]) {
			report(off, cpu, "%s expected 0x%" PRIx64 " got 0x%" PRIx64, names[i], e[i], g[i]);
			return;
		}
	for (unsigned int i = HDR; i < cfg.bs; i++)
		if (got[i] != want[i]) {
			report(off, cpu, "payload byte %u expected 0x%02x got 0x%02x", i, want[i], got[i]);
			return;
		}
}

/* Context: a thread pinned to cfg.cpus[j->idx]. */
static void *run(void *arg)
{
	struct job *j = arg;
	unsigned int cpu = cfg.cpus[j->idx];
	uint64_t base = j->idx * cfg.blocks * cfg.bs;
	uint8_t *buf, *want;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die(2, "cannot pin to cpu %u: %s", cpu, strerror(errno));
	/* 4 KiB alignment satisfies O_DIRECT on any logical block size <= 4K
	 * (and bs, a multiple of it, is checked against BLKSSZGET). */
	if (posix_memalign((void **)&buf, 4096, cfg.bs) ||
	    posix_memalign((void **)&want, 4096, cfg.bs))
		die(2, "out of memory");

	for (uint64_t i = j->k; !cfg.verify_only && i < cfg.blocks && !failed; i += cfg.depth) {
		uint64_t off = base + (uint64_t)j->wperm[i] * cfg.bs;
		fill_block(buf, off, j->idx, (uint32_t)i);
		if (xfer(1, buf, off))
			failed = 1;
	}
	/* Every write of every CPU is done before anyone reads back: a write
	 * landing on another region's block is then caught by its reader. */
	if (pthread_barrier_wait(&phase) == PTHREAD_BARRIER_SERIAL_THREAD &&
	    !cfg.verify_only && fdatasync(cfg.fd)) {
		fprintf(stderr, "blkverify: fdatasync: %s\n", strerror(errno));
		failed = 1;
	}
	pthread_barrier_wait(&phase);

	for (uint64_t i = j->k; i < cfg.blocks && !failed; i += cfg.depth) {
		uint64_t pos = j->rperm[i], off = base + (uint64_t)j->wperm[pos] * cfg.bs;
		if (xfer(0, buf, off)) {
			failed = 1;
			break;
		}
		fill_block(want, off, j->idx, (uint32_t)pos);
		check(buf, want, off, cpu);
	}
	free(buf);
	free(want);
	return NULL;
}

static uint64_t number(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v < min || v > max)
		die(2, "%s: '%s' is not a number in [%" PRIu64 ", %" PRIu64 "]", opt, s, min, max);
	return v;
}

/* "all" is the CPUs we may run on; else "0-3,6": each must be one of them. */
static void parse_cpus(const char *s)
{
	cpu_set_t allowed, want;
	char *copy = strdup(s), *save, *tok;

	if (!copy || sched_getaffinity(0, sizeof(allowed), &allowed))
		die(2, "cannot read the CPU affinity: %s", strerror(errno));
	CPU_ZERO(&want);
	if (!strcmp(s, "all")) {
		want = allowed;
	} else {
		for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			char *dash = strchr(tok, '-');
			uint64_t lo, hi;
			if (dash)
				*dash = 0;
			lo = number("--cpus", tok, 0, CPU_SETSIZE - 1);
			hi = dash ? number("--cpus", dash + 1, lo, CPU_SETSIZE - 1) : lo;
			for (uint64_t c = lo; c <= hi; c++) {
				if (!CPU_ISSET(c, &allowed))
					die(2, "--cpus: cpu %" PRIu64 " is not available here", c);
				CPU_SET(c, &want);
			}
		}
	}
	free(copy);
	cfg.ncpus = 0;
	for (unsigned int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &want))
			cfg.cpus[cfg.ncpus++] = c;
	if (!cfg.ncpus)
		die(2, "--cpus: '%s' names no CPU", s);
}

static void parse(int argc, char **argv)
{
	const char *cpus = "all";
	int i;

	for (i = 1; i < argc && !strncmp(argv[i], "--", 2); i += 2) {
		const char *o = argv[i], *v = argv[i + 1];
		if (!v)
			die(2, "%s needs a value", o);
		if (!strcmp(o, "--cpus"))
			cpus = v;
		else if (!strcmp(o, "--mb-per-cpu"))
			cfg.mb = number(o, v, 1, 1 << 16);
		else if (!strcmp(o, "--depth"))
			cfg.depth = (unsigned int)number(o, v, 1, 256);
		else if (!strcmp(o, "--bs"))
			cfg.bs = (unsigned int)number(o, v, 512, 1 << 20);
		else if (!strcmp(o, "--seed"))
			cfg.seed = number(o, v, 0, UINT64_MAX);
		else if (!strcmp(o, "--mode") && (!strcmp(v, "verify") || !strcmp(v, "write-verify")))
			cfg.verify_only = !strcmp(v, "verify");
		else if (!strcmp(o, "--mode"))
			die(2, "--mode: '%s' is neither write-verify nor verify", v);
		else
			die(2, "%s", USAGE);
	}
	if (i != argc - 1)
		die(2, "%s", USAGE);
	cfg.path = argv[i];
	if (cfg.bs & (cfg.bs - 1))
		die(2, "--bs: %u is not a power of two", cfg.bs);
	parse_cpus(cpus);
	cfg.blocks = (cfg.mb << 20) / cfg.bs;
}

/* O_DIRECT always on devices; a regular file on a filesystem that refuses
 * it (EINVAL) falls back to buffered I/O, said aloud: reads then come from
 * the page cache and prove less. */
static void open_target(void)
{
	int flags = cfg.verify_only ? O_RDONLY : O_RDWR;
	uint64_t size, need = cfg.ncpus * (cfg.mb << 20);
	struct stat st;
	int lbs;

	if (stat(cfg.path, &st))
		die(2, "%s: %s", cfg.path, strerror(errno));
	if (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode))
		die(2, "%s: neither a block device nor a regular file", cfg.path);
	cfg.fd = open(cfg.path, flags | O_DIRECT | O_CLOEXEC);
	if (cfg.fd < 0 && errno == EINVAL && S_ISREG(st.st_mode)) {
		fprintf(stderr, "blkverify: %s: O_DIRECT refused by the filesystem, using buffered I/O\n",
			cfg.path);
		cfg.fd = open(cfg.path, flags | O_CLOEXEC);
	}
	if (cfg.fd < 0)
		die(2, "%s: %s", cfg.path, strerror(errno));
	size = (uint64_t)st.st_size;
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(cfg.fd, BLKGETSIZE64, &size))
			die(2, "%s: BLKGETSIZE64: %s", cfg.path, strerror(errno));
		if (!ioctl(cfg.fd, BLKSSZGET, &lbs) && cfg.bs % (unsigned int)lbs)
			die(2, "--bs %u is not a multiple of %s's %d-byte sectors", cfg.bs, cfg.path, lbs);
	}
	if (need > size)
		die(2, "%s: %u CPUs x %" PRIu64 " MiB = %" PRIu64 " bytes do not fit in its %" PRIu64 " bytes",
		    cfg.path, cfg.ncpus, cfg.mb, need, size);
}

int main(int argc, char **argv)
{
	struct job *jobs;
	pthread_t *tids;
	unsigned int n;
	struct timespec t0, t1;
	double secs;

	crc32c_init();
	if (crc32c("123456789", 9) != 0xE3069283u) /* the standard check value */
		die(2, "crc32c self-test failed");
	parse(argc, argv);
	open_target();

	n = cfg.ncpus * cfg.depth;
	jobs = calloc(n, sizeof(*jobs));
	tids = calloc(n, sizeof(*tids));
	if (!jobs || !tids || pthread_barrier_init(&phase, NULL, n))
		die(2, "out of memory");
	for (unsigned int t = 0; t < n; t++) {
		uint64_t c = t / cfg.depth, s = cfg.seed * 0x100000001b3ull + 2 * c;
		jobs[t] = (struct job){ (unsigned int)c, t % cfg.depth, NULL, NULL };
		jobs[t].wperm = t % cfg.depth ? jobs[t - 1].wperm : permutation(cfg.blocks, s);
		jobs[t].rperm = t % cfg.depth ? jobs[t - 1].rperm : permutation(cfg.blocks, s + 1);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned int t = 0; t < n; t++) {
		errno = pthread_create(&tids[t], NULL, run, &jobs[t]);
		if (errno)
			die(2, "pthread_create: %s", strerror(errno));
	}
	for (unsigned int t = 0; t < n; t++)
		pthread_join(tids[t], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	for (unsigned int t = 0; t < n; t += cfg.depth) {
		free(jobs[t].wperm);
		free(jobs[t].rperm);
	}
	free(jobs);
	free(tids);
	close(cfg.fd);

	if (failed || mismatches) {
		printf("BLKVERIFY FAIL mismatches=%llu io_error=%d (at most %d shown)\n",
		       (unsigned long long)mismatches, (int)failed, MAX_REPORTS);
		return 1;
	}
	printf("BLKVERIFY OK cpus=%u blocks=%" PRIu64 " mb=%" PRIu64 " bytes_written=%" PRIu64
	       " seconds=%.2f\n", cfg.ncpus, cfg.ncpus * cfg.blocks, cfg.ncpus * cfg.mb,
	       cfg.verify_only ? 0 : cfg.ncpus * cfg.blocks * cfg.bs, secs);
	return 0;
}
