/* SPDX-License-Identifier: MIT */
/*
 * The report of a refused call in VMM_SECCOMP_KILL mode (see
 * sandbox-trap.c), below the filters of sandbox.c, which mark their traps
 * with SANDBOX_TRAP_DATA and call the two set-up functions.
 */
#ifndef VMM_SANDBOX_TRAP_H
#define VMM_SANDBOX_TRAP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

/* The SECCOMP_RET_DATA of our traps (si_errno of the SIGSYS). */
#define SANDBOX_TRAP_DATA 0x564d /* "VM" */

/*
 * Install the SIGSYS handler if SIGSYS has the default disposition and say
 * whether traps will be reported (false: the embedder has its own handler;
 * use SECCOMP_RET_KILL_PROCESS).  Context: the thread that builds the
 * filters.
 */
bool sandbox_trap_ready(void);
/*
 * Record the calling thread's name and allow-list @cls (a string of static
 * storage: the handler reads it) for the report, and unblock SIGSYS in it.
 * Returns 0 or -errno.  Context: the thread about to confine itself.
 */
int sandbox_trap_thread(const char *cls);
/*
 * Build the report line for a trap @si on the calling thread into @out
 * (async-signal-safe; for the handler and tests); returns its length.
 */
size_t sandbox_trap_format(const siginfo_t *si, char *out, size_t size);

#endif
