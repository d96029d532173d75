/* SPDX-License-Identifier: MIT */
/*
 * Many confined threads, KILL mode, KVM-free: a forked child builds the real
 * filters (libvmm/core/sandbox.c) the way vmm_start() does, then starts 72
 * threads of every class (as a 32-vCPU VM has 32 vCPU + 32 I/O threads, the
 * console and the control thread), each of which confines itself with
 * sandbox_install() and only then does what VMM threads do under their
 * filters: allocate and free (small, tcache-sized, bin-sized, mmap-sized;
 * bursts that make glibc trim a thread arena's heap), realloc, log through
 * the library's default sink, format errors with strerror() (known and
 * unknown numbers), format numbers, sleep, and end.  All threads are alive
 * at once, so glibc's malloc has to create more arenas than it does for a
 * small VM.  The child runs in a non-"C" locale (C.UTF-8, as a program that
 * calls setlocale(LC_ALL, "") under LANG=C.UTF-8 does), so strerror() goes
 * through gettext; in another, the process first freed a 1 MiB block (which
 * raises glibc's trim threshold to 2 MiB) and each thread frees 3 MiB.
 *
 * Before the fix, glibc's lazy initialisation on these paths (the arena
 * limit read from /sys/devices/system/cpu/online once more than 8 arenas
 * exist, /proc/sys/vm/overcommit_memory read at the first trim of a thread
 * arena, the message catalog opened at the first strerror()) made a
 * confined thread call openat(): the whole child died of SIGSYS.  The test
 * asserts the child exits 0 and every thread finished its work.
 */
#include <check.h>
#include <errno.h>
#include <locale.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "sandbox.h"
#include "vmm/vmm.h"

#define NR_THREADS 72 /* 64+ confined threads, every class */
#define ROUNDS 20

/* In the child (not the Check runner): a failed expectation ends it. */
#define CHILD_ASSERT(c)            \
	do {                       \
		if (!(c))          \
			_exit(10); \
	} while (0)

static struct sandbox *sb;
static bool big_bursts; /* each thread also frees one 3 MiB burst */
static pthread_barrier_t all_confined;
static int done_count; /* threads that finished their work (atomic) */

/* One round of the allocation patterns a VMM thread may produce. */
static void alloc_round(unsigned int seed)
{
	void *volatile held[256];
	char *p;
	size_t n;

	/* tcache and fastbin sizes */
	for (unsigned int i = 0; i < 64; i++) {
		held[i] = malloc(16 + ((seed + i) * 24) % 1024);
		CHILD_ASSERT(held[i]);
	}
	for (unsigned int i = 0; i < 64; i++)
		free(held[i]);
	/* A burst of ~1 KiB objects (~256 KiB) freed in reverse: the freed
	 * space merges into the arena's top, which glibc then trims
	 * (heap_trim/shrink_heap in a thread arena, systrim in the main one). */
	for (unsigned int i = 0; i < 256; i++) {
		held[i] = malloc(1000 + (seed % 7) * 8);
		CHILD_ASSERT(held[i]);
		memset(held[i], (int)i, 16);
	}
	for (unsigned int i = 256; i-- > 0;)
		free(held[i]);
	/* bin sizes and a few mmap-sized ones (above the 128 KiB threshold) */
	for (unsigned int i = 0; i < 8; i++) {
		n = (i & 1) ? 200u << 10 : (4u << 10) * (i + 1);
		held[i] = calloc(1, n);
		CHILD_ASSERT(held[i]);
	}
	for (unsigned int i = 0; i < 8; i++)
		free(held[i]);
	/* realloc growth */
	p = NULL;
	for (n = 64; n <= (512u << 10); n *= 4) {
		char *q = realloc(p, n);

		CHILD_ASSERT(q);
		q[n - 1] = 1;
		p = q;
	}
	free(p);
}

/* What error paths do: strerror() of known and unknown numbers, formatted
 * log lines (the default sink: stderr), numbers. */
static void format_round(unsigned int idx, unsigned int round)
{
	static const int errs[] = { EIO, ENOSPC, EINVAL, ENOMEM, EAGAIN, EPERM,
				    EFAULT, EBADF, ENOTSUP, 4095 };
	char buf[160];
	const char *s = strerror(errs[(idx + round) % (sizeof(errs) / sizeof(errs[0]))]);

	CHILD_ASSERT(s);
	snprintf(buf, sizeof(buf), "thread %u round %u: %s %.3f %lld %p", idx,
		 round, s, idx / 3.0, (long long)idx << 40, (void *)buf);
	if (round % 5 == 0)
		vmm_err("confined thread %u: %s (%s)", idx, buf,
			strerror(-(-EIO)));
}

static void *worker(void *arg)
{
	unsigned int idx = (unsigned int)(uintptr_t)arg;
	enum sandbox_class cls = (enum sandbox_class)(idx % SANDBOX_CLASS_NR);
	struct timespec ts;
	char name[16];
	int ret;

	snprintf(name, sizeof(name), "vmm-t%u", idx);
	pthread_setname_np(pthread_self(), name);
	ret = sandbox_install(sb, cls);
	if (ret) {
		fprintf(stderr, "thread %u: sandbox_install: %s\n", idx, strerror(-ret));
		_exit(3);
	}
	/* Everyone confined before anyone allocates: as many threads without
	 * an arena at once as a big VM has. */
	pthread_barrier_wait(&all_confined);
	if (big_bursts) {
		/* 3 MiB in 16 KiB pieces, freed in reverse: the arena's top
		 * passes a raised trim threshold (see child()). */
		void *volatile held[192];

		for (unsigned int i = 0; i < 192; i++)
			CHILD_ASSERT(held[i] = malloc(16u << 10));
		for (unsigned int i = 192; i-- > 0;)
			free(held[i]);
	}
	for (unsigned int r = 0; r < ROUNDS; r++) {
		alloc_round(idx * 31 + r);
		format_round(idx, r);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if (r % 4 == 0)
			usleep(100);
	}
	__atomic_fetch_add(&done_count, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* Child: build, start NR_THREADS threads, join.  Exit 0 if all finished.
 * Its stderr (@err_fd) collects the confined threads' log lines and, if
 * one is killed, the seccomp report naming the call. */
static void child(const char *locale, bool raise_trim, int err_fd)
{
	pthread_t t[NR_THREADS];
	int ret;

	if (dup2(err_fd, STDERR_FILENO) < 0)
		_exit(4);
	if (raise_trim) {
		/* What an embedder does before vmm_start() all the time: free
		 * a 1 MiB buffer.  glibc then raises its mmap threshold to
		 * 1 MiB and the trim threshold to 2 MiB (dynamic thresholds). */
		void *volatile big = malloc(1u << 20);

		CHILD_ASSERT(big);
		free(big);
		big_bursts = true;
	}
	if (locale && !setlocale(LC_ALL, locale))
		_exit(5);
	vmm_set_log(NULL, NULL, VMM_LOG_ERROR);
	/* Every class, minivmm-blkd's vhost-user one included. */
	ret = sandbox_build_classes(VMM_SECCOMP_KILL, (1u << SANDBOX_CLASS_NR) - 1, &sb);
	if (ret)
		_exit(6);
	if (pthread_barrier_init(&all_confined, NULL, NR_THREADS))
		_exit(7);
	for (unsigned int i = 0; i < NR_THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i))
			_exit(8);
	for (unsigned int i = 0; i < NR_THREADS; i++)
		pthread_join(t[i], NULL);
	_exit(__atomic_load_n(&done_count, __ATOMIC_RELAXED) == NR_THREADS ? 0 : 9);
}

/* The seccomp report in the child's stderr, if any. */
static void find_report(FILE *err, char *out, size_t size)
{
	char line[512];

	snprintf(out, size, "(no report)");
	rewind(err);
	while (fgets(line, sizeof(line), err))
		if (strstr(line, "libvmm: seccomp:")) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(out, size, "%s", line);
			return;
		}
}

static void run(const char *locale, bool raise_trim)
{
	FILE *err = tmpfile();
	char report[512];
	int status;
	pid_t pid;

	ck_assert_ptr_nonnull(err);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		child(locale, raise_trim, fileno(err));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	find_report(err, report, sizeof(report));
	fclose(err);
	ck_assert_msg(!WIFSIGNALED(status),
		      "child killed by signal %d (%s): a confined thread made a "
		      "call its allow-list refuses: %s",
		      WTERMSIG(status), strsignal(WTERMSIG(status)), report);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child exited %d", WEXITSTATUS(status));
}

START_TEST(many_threads_c_locale)
{
	run(NULL, false);
}
END_TEST

/* The embedder freed a large block first: the trim threshold is 2 MiB, and
 * each confined thread frees a 3 MiB burst. */
START_TEST(many_threads_raised_trim_threshold)
{
	run(NULL, true);
}
END_TEST

START_TEST(many_threads_utf8_locale)
{
	if (!setlocale(LC_ALL, "C.UTF-8")) {
		printf("no C.UTF-8 locale here: skipped\n");
		return;
	}
	setlocale(LC_ALL, "C");
	run("C.UTF-8", false);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("seccomp_threads");
	TCase *tc = tcase_create("kill_mode");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, many_threads_c_locale);
	tcase_add_test(tc, many_threads_utf8_locale);
	tcase_add_test(tc, many_threads_raised_trim_threshold);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
