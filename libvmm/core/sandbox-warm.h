/* SPDX-License-Identifier: MIT */
/*
 * glibc state that would otherwise be initialised lazily by a confined
 * thread (see sandbox-warm.c), below the filters of sandbox.c, which call
 * both.
 */
#ifndef VMM_SANDBOX_WARM_H
#define VMM_SANDBOX_WARM_H

/* Context: the thread that builds the filters (sandbox_build()). */
void sandbox_warm_process(void);
/* Context: each thread, right before it confines itself
 * (sandbox_install()). */
void sandbox_warm_thread(void);

#endif
