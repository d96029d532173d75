/* SPDX-License-Identifier: MIT */
/*
 * seccomp-bpf confinement of the VMM's threads, one allow-list per thread
 * class, built with libseccomp (never hand-written BPF).
 *
 * The filters are compiled once per VM by vmm_start() (seccomp_filters_build,
 * on the thread that starts the VM, so a build error is an ordinary -errno
 * of vmm_start) and exported as classic BPF; each thread then installs its
 * class's program on itself (seccomp_install: no_new_privs +
 * SECCOMP_SET_MODE_FILTER), after its setup and before it serves the guest:
 *   vCPU     in the vCPU thread, right before the KVM_RUN loop
 *   I/O      on the I/O thread (iothread_call_sync) once the devices exist
 *   console  in the console-input thread, before its loop
 *   control  only when the embedder asks, on its own thread
 *            (vmm_seccomp_confine_current_thread()); minivmm does it
 * A filter is per thread and irreversible; the kernel copies the program,
 * so the built set may be freed once the threads have installed it.
 */
#ifndef VMM_SECCOMP_H
#define VMM_SECCOMP_H

#include "util/compiler.h"

enum seccomp_class {
	SECCOMP_CLASS_VCPU,
	SECCOMP_CLASS_IO,
	SECCOMP_CLASS_CONSOLE,
	SECCOMP_CLASS_CONTROL,
	SECCOMP_CLASS_NR,
};

struct seccomp_filters;

/*
 * Build every class's filter for @mode (VMM_SECCOMP_KILL: kill the process
 * on a call outside the list; VMM_SECCOMP_ERRNO: fail it with EPERM).
 * Returns 0; -EINVAL for another mode; -ENOMEM; -ENOTSUP if libseccomp
 * cannot build or export a filter on this host.
 */
int seccomp_filters_build(int mode, struct seccomp_filters **out) __must_check;
void seccomp_filters_free(struct seccomp_filters *f);

/*
 * Install @cls's filter on the calling thread.  @f NULL: nothing to do, 0.
 * Returns 0 or -errno from prctl()/seccomp() (-EINVAL: the kernel has no
 * seccomp filters; -EACCES: no_new_privs could not be set).
 */
int seccomp_install(const struct seccomp_filters *f, enum seccomp_class cls) __must_check;

/* Number of distinct system calls @cls allows (for tests and the README). */
unsigned int seccomp_class_nr_syscalls(enum seccomp_class cls);
const char *seccomp_class_name(enum seccomp_class cls);

#endif
