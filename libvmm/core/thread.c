/* SPDX-License-Identifier: MIT */
/* Library threads start with asynchronous signals blocked (see thread.h). */
#include <errno.h>

#include "thread.h"

/* The mask of a library thread: every signal but the synchronous ones. */
static void thread_signal_mask(sigset_t *set)
{
	static const int synchronous[] = {
		SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS, SIGABRT,
	};

	sigfillset(set);
	for (unsigned int i = 0; i < ARRAY_SIZE(synchronous); i++)
		sigdelset(set, synchronous[i]);
}

int thread_spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	sigset_t set;
	int ret;

	ret = pthread_attr_init(&attr);
	if (ret)
		return -ret;
	thread_signal_mask(&set);
	/* The new thread starts with this mask (glibc 2.32+): no window in
	 * which it could take a signal with its creator's mask. */
	ret = pthread_attr_setsigmask_np(&attr, &set);
	if (!ret)
		ret = pthread_create(t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return -ret;
}
