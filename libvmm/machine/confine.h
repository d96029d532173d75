/* SPDX-License-Identifier: MIT */
/*
 * Seccomp confinement of the VM's threads (core/sandbox.h): the filters
 * are built before anything else at vmm_start(); each thread installs its
 * class's own, vCPU and console threads themselves, the I/O threads and
 * the port threads here.
 */
#ifndef VMM_MACHINE_CONFINE_H
#define VMM_MACHINE_CONFINE_H

#include "util/compiler.h"

struct vmm;
struct machine;

/* The filters of the configured mode into vm->seccomp (NULL when off).
 * Returns 0 or -errno. */
int confine_build(struct vmm *vm) __must_check;
/* Free vm->seccomp (after every confined thread is joined). */
void confine_free(struct vmm *vm);
/* Each I/O thread installs its filter, once every device exists (their
 * set-up calls, e.g. watching ioeventfds, ran unconfined).  0 or -errno
 * (logged). */
int confine_iothreads(struct vmm *vm, struct machine *m) __must_check;
/* vcon_params.thread_init of the port threads (@seccomp: vm->seccomp,
 * NULL: none).  Context: the port thread, before its loop. */
int confine_port_thread(void *seccomp);

#endif
