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
 *    trim its arena (default threshold 128 KiB) while unconfined.
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
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>

#include "sandbox.h"

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

void sandbox_warm_process(void)
{
	locale_t old;

	pthread_once(&arena_once, arena_limit);
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
}

void sandbox_warm_thread(void)
{
	void *volatile p[8]; /* volatile: the compiler may not elide the pairs */

	/* The first allocation attaches this thread to an arena and builds
	 * its tcache; freed in reverse, the pieces merge into the arena's top
	 * and make glibc trim it (see above). */
	for (unsigned int i = 0; i < 8; i++)
		p[i] = malloc(32u << 10);
	for (unsigned int i = 8; i-- > 0;)
		free(p[i]);
}
