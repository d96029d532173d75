/* SPDX-License-Identifier: MIT */
/*
 * Threads the library creates.  Each starts with every asynchronous signal
 * blocked, so that signals meant for the embedder (SIGINT handlers,
 * SIGTERM, SIGPIPE, SIGCHLD, a process-directed SIGUSR1, ...) are never
 * taken by a VMM thread: their handlers would run under that thread's
 * seccomp filter, and a SIGPIPE from a console write would end the
 * process.  Only the signals a fault raises on the thread itself stay
 * unblocked (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS, SIGABRT):
 * blocking those would make the kernel kill the process without running
 * the embedder's or a sanitizer's handler.  glibc's internal signals
 * (thread cancellation, set*id broadcast) are never blocked.  vCPU
 * threads unblock VMM_KICK_SIGNAL inside KVM_RUN only (vcpu.c).
 */
#ifndef VMM_THREAD_H
#define VMM_THREAD_H

#include <pthread.h>
#include <signal.h>

#include "util/compiler.h"

/* pthread_create() with that mask (every signal but the synchronous ones
 * blocked).  Returns 0 or -errno. */
int thread_spawn(pthread_t *t, void *(*fn)(void *), void *arg) __must_check;

#endif
