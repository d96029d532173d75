/* SPDX-License-Identifier: MIT */
/*
 * Work done before a thread confines itself, so that glibc never has to do
 * it under a filter.  glibc initialises some state lazily, on the first use
 * by any thread of the process, with system calls no allow-list has (each
 * found with tests/unit/check_seccomp_threads.c, 72 confined threads, and
 * strace of minivmm at 32 vCPUs; see tests/e2e/seccomp_profile.sh):
 *
 *  - malloc's arena limit: a thread's first malloc attaches it to an arena
 *    (arena_get2); once more than 8 arenas exist and no limit is set, glibc
 *    computes the limit from the CPU count, reading
 *    /sys/devices/system/cpu/online (glibc 2.36; sched_getaffinity in later
 *    ones).  A VM with 8+ vCPUs has 16+ threads, and a thread confined
 *    before its first malloc opened that file: the 32-vCPU SIGSYS of issue
 *    13 (comm="vmm-io7" syscall=257).  Fixed twice over: every thread
 *    allocates before it confines itself (sandbox_warm_thread), and the
 *    limit is set explicitly (M_ARENA_MAX) to the value glibc would compute,
 *    so no later arena_get2 (a thread re-attaching after an allocation
 *    failure, arena_get_retry) reads it under a filter either.
 *  - heap trimming: the first time a thread arena's heap shrinks
 *    (shrink_heap, after frees leave more than the trim threshold at its
 *    top), glibc reads /proc/sys/vm/overcommit_memory once per process.
 *    Any thread that frees a burst of memory can be the first.  Each thread
 *    here allocates and frees 256 KiB in 32 KiB pieces, which makes glibc
 *    trim its arena (default threshold 128 KiB) while unconfined, and a
 *    thread of its own, alone at the first filter build, makes sure of it
 *    at a raised threshold (prime_trim(), prime_alone()).
 *  - tcache: built at a thread's first malloc (an allocation only).
 *  - strerror(): translated through gettext, which opens the C library's
 *    message catalog (/usr/share/locale/<locale>/LC_MESSAGES/libc.mo) the
 *    first time in a process whose LC_MESSAGES is not "C"/"POSIX" (e.g. a
 *    program that called setlocale(LC_ALL, "") under LANG=C.UTF-8).  The
 *    result, found or not, is cached: one strerror() here primes it.
 *
 * Paths checked and found harmless: the default log sink (log.c) writes
 * with write(2), not stdio (a buffered stream's first output calls
 * fstat); thread exit (tcache and arena released: futex, munmap, madvise);
 * vsnprintf of the library's formats; usleep (clock_nanosleep);
 * clock_gettime (vDSO, else the allowed system call).  The library never
 * calls pthread_cancel/pthread_exit (which dlopen libgcc_s), qsort (reads
 * the memory size), time zones or getrandom on confined threads.
 */
#include <errno.h>
#include <locale.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>

#include "log.h"
#include "sandbox-warm.h"

static pthread_once_t arena_once = PTHREAD_ONCE_INIT;

/*
 * Set glibc's arena limit to glibc's own default (8 per online CPU on 64-bit
 * hosts, NARENAS_FROM_NCORES) unless the environment already sets one
 * (MALLOC_ARENA_MAX, the glibc.malloc.arena_max tunable): the process then
 * behaves as before, minus the lazy read.  Once per process: an embedder
 * that sets M_ARENA_MAX itself does it after the first vmm_start().
 */
static void arena_limit(void)
{
#if defined(__GLIBC__) && defined(M_ARENA_MAX)
	const char *t = getenv("GLIBC_TUNABLES");
	int n;

	if (getenv("MALLOC_ARENA_MAX") || (t && strstr(t, "glibc.malloc.arena_max")))
		return;
	n = get_nprocs(); /* the read glibc would do later, done here */
	if (n < 1)
		n = 2; /* glibc's own fallback */
	mallopt(M_ARENA_MAX, n * (sizeof(long) == 4 ? 2 : 8));
#endif
}

#if defined(__SANITIZE_ADDRESS__)
#define WARM_GLIBC_MALLOC 0 /* the sanitizer's allocator, not glibc's */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WARM_GLIBC_MALLOC 0
#endif
#endif
#if !defined(WARM_GLIBC_MALLOC) && defined(__GLIBC__) && __GLIBC_PREREQ(2, 33)
#define WARM_GLIBC_MALLOC 1
#endif
#ifndef WARM_GLIBC_MALLOC
#define WARM_GLIBC_MALLOC 0
#endif

#if WARM_GLIBC_MALLOC
#define PIECE (32u << 10) /* below any mmap threshold (>= 128 KiB) */
#define MAX_PIECES ((48u << 20) / PIECE)

static int trim_tried; /* prime_trim() ran (or runs) once (atomic) */

/*
 * Whether @p (a fresh malloc() result) lies in a thread arena: glibc marks
 * such chunks with NON_MAIN_ARENA, bit 2 of the size word before the user
 * pointer (malloc/malloc.c, unchanged since glibc 2.3).  Only read, as a
 * hint: a wrong answer costs one more (or one useless) priming round.
 */
static bool in_thread_arena(const void *p)
{
	return ((const size_t *)p)[-1] & 4;
}

/*
 * Once per process, on a thread whose arena is a thread arena: make glibc
 * shrink that arena's heap, whatever its trim threshold.  The threshold is
 * 128 KiB by default, but glibc raises it to twice the largest mmap()ed
 * block freed so far (up to 64 MiB): an embedder that freed a 1 MiB buffer
 * before vmm_start() has a 2 MiB threshold, and a vCPU thread freeing a
 * device's queue state on a guest reset may be the first to reach it.
 * Rounds of 256 KiB, 2 MiB, 16 MiB and 48 MiB in 32 KiB pieces, freed in
 * reverse, until the arenas' system memory (mallinfo2) drops, i.e. a heap
 * was trimmed; with a threshold above 48 MiB a thread arena's heap (64 MiB
 * at most) practically never trims.  Costs one round (~0.1 ms) usually,
 * four (~20 ms, 6 MiB touched) at worst; one attempt per process.
 */
static void prime_trim(void)
{
	static const size_t rounds[] = { 256u << 10, 2u << 20, 16u << 20, 48u << 20 };
	void **p = malloc(MAX_PIECES * sizeof(*p));

	if (!p)
		return;
	for (unsigned int r = 0; r < sizeof(rounds) / sizeof(rounds[0]); r++) {
		unsigned int n = 0;
		size_t before, after;

		while (n < rounds[r] / PIECE && (p[n] = malloc(PIECE)))
			n++;
		before = mallinfo2().arena;
		while (n > 0)
			free(p[--n]);
		after = mallinfo2().arena;
		if (after < before)
			break;
	}
	free(p);
}

/* Context: a thread of its own (prime_alone()). */
static void *prime_thread(void *arg)
{
	void *volatile p = malloc(PIECE); /* volatile: in_thread_arena() reads
					     below it, which the compiler
					     would flag on a known block */
	bool thread_arena = p && in_thread_arena(p);

	free(p);
	if (thread_arena)
		prime_trim();
	*(bool *)arg = thread_arena;
	return NULL;
}

static pthread_once_t prime_once = PTHREAD_ONCE_INIT;

/*
 * Once per process, from sandbox_warm_process(): prime_trim() on a fresh
 * thread (so in a thread arena of its own), started and joined here while
 * no thread the library confines runs yet.  Alone, because mallinfo2()
 * sums every arena: another thread's trim of the main arena (sbrk) or
 * heap growth elsewhere during a round would look like -- or hide -- the
 * heap shrink prime_trim() waits for.  On a confined thread's first burst
 * the false "done" was a SIGSYS (1 in ~300 runs of check_seccomp_threads'
 * raised-threshold case: a control thread's openat of
 * /proc/sys/vm/overcommit_memory).  If the thread cannot start or lands
 * in the main arena, the first confined thread in a thread arena primes
 * instead (sandbox_warm_thread()), as before.
 */
static void prime_alone(void)
{
	bool done = false;
	pthread_t t;

	if (pthread_create(&t, NULL, prime_thread, &done))
		return;
	pthread_join(t, NULL);
	if (done)
		__atomic_store_n(&trim_tried, 1, __ATOMIC_RELAXED);
}
#endif

void sandbox_warm_process(void)
{
	locale_t old;

	pthread_once(&arena_once, arena_limit);
#if WARM_GLIBC_MALLOC
	pthread_once(&prime_once, prime_alone);
#endif
	/* Loads (or looks for) the catalog of LC_MESSAGES: this thread's
	 * locale (it may confine itself, vmm_seccomp_confine_current_thread)
	 * and the global one, which the library's threads use (a uselocale()
	 * of this thread is not inherited).  Every sandbox_build(): the
	 * locale may have changed since the last VM. */
	(void)strerror(EIO);
	old = uselocale(LC_GLOBAL_LOCALE);
	(void)strerror(EIO);
	if (old)
		uselocale(old);
	/* The default log sink's way to stderr (an open() and an fstat()
	 * that no allow-list has): a confined thread only writes. */
	log_prepare_stderr();
}

void sandbox_warm_thread(void)
{
	void *volatile p[8]; /* volatile: the compiler may not elide the pairs */

	/* The first allocation attaches this thread to an arena and builds
	 * its tcache; freed in reverse, the pieces merge into the arena's top
	 * and make glibc trim it at the default threshold (see above). */
	for (unsigned int i = 0; i < 8; i++)
		p[i] = malloc(32u << 10);
#if WARM_GLIBC_MALLOC
	/* The first thread found in a thread arena primes for all. */
	if (p[0] && in_thread_arena(p[0]) &&
	    !__atomic_exchange_n(&trim_tried, 1, __ATOMIC_RELAXED)) {
		for (unsigned int i = 8; i-- > 0;)
			free(p[i]);
		prime_trim();
		return;
	}
#endif
	for (unsigned int i = 8; i-- > 0;)
		free(p[i]);
}
