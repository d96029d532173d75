/* SPDX-License-Identifier: MIT */
/*
 * vmm_set_cpu_affinity()'s CPUs applied at vmm_start(): vCPU i and I/O
 * thread i on the i-th CPU of the list (round robin).
 */
#ifndef VMM_MACHINE_AFFINITY_H
#define VMM_MACHINE_AFFINITY_H

#include "util/compiler.h"

struct machine;
struct vmm;

/* Every listed CPU is one the process may run on: 0, or -EINVAL after an
 * error line naming the CPU.  Context: vmm_start(), before any thread. */
int affinity_check(const struct vmm *vm) __must_check;

/* Pin the running vCPU and I/O threads.  A thread that cannot be pinned
 * (gone, or its CPU since taken away) gets a warning and runs unpinned.
 * Context: vmm_start(), once the threads run, not confined. */
void affinity_pin(struct vmm *vm, struct machine *m);

#endif
