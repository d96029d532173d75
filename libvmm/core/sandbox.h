/* SPDX-License-Identifier: MIT */
/*
 * Sandbox: seccomp-bpf confinement of the VMM's threads, one allow-list per thread
 * class, built with libseccomp (never hand-written BPF).
 *
 * The filters are compiled once per VM by vmm_start() (sandbox_build,
 * on the thread that starts the VM, so a build error is an ordinary -errno
 * of vmm_start) and exported as classic BPF; each thread then installs its
 * class's program on itself (sandbox_install: no_new_privs +
 * SECCOMP_SET_MODE_FILTER), after its setup and before it serves the guest:
 *   vCPU     in the vCPU thread, right before the KVM_RUN loop
 *   I/O      on the I/O thread (iothread_call_sync) once the devices exist
 *   console  in the console-input thread, before its loop
 *   control  only when the embedder asks, on its own thread
 *            (vmm_seccomp_confine_current_thread()); minivmm does it
 *   vhost    not a VM's: the control thread of a vhost-user back end
 *            (minivmm-blkd), which serves the front end's socket and maps
 *            the guest RAM it is given; built on request only
 *   io-sock  the I/O list and the host side of a vsock device: the I/O
 *            thread that serves it; built when the VM has one
 * A filter is per thread and irreversible; the kernel copies the program,
 * so the built set may be freed once the threads have installed it.
 */
#ifndef VMM_SANDBOX_H
#define VMM_SANDBOX_H

#include <stdbool.h>

#include "util/compiler.h"

enum sandbox_class {
	SANDBOX_CLASS_VCPU,
	SANDBOX_CLASS_IO,
	SANDBOX_CLASS_CONSOLE,
	SANDBOX_CLASS_CONTROL,
	SANDBOX_CLASS_VHOST,
	SANDBOX_CLASS_IO_SOCK, /* the I/O thread serving a vsock's host sockets */
	SANDBOX_CLASS_NR,
};

struct sandbox;

/*
 * Build the filters of a VM's classes (vCPU, I/O, console, control) for
 * @mode (VMM_SECCOMP_KILL: end the process on a call outside the list,
 * after a line on stderr naming it when SIGSYS is ours to handle, see
 * sandbox-trap.c; VMM_SECCOMP_ERRNO: fail it with EPERM).  Also warms
 * glibc's lazily initialised state (sandbox-warm.c).  Returns 0; -EINVAL
 * for another mode; -ENOMEM; -ENOTSUP if libseccomp cannot build or export
 * a filter on this host.
 */
int sandbox_build(int mode, struct sandbox **out) __must_check;
/* The same for the classes in @mask (bit (1 << class)): each filter costs
 * a few hundred microseconds to build, so a VM builds only its own. */
int sandbox_build_classes(int mode, unsigned int mask, struct sandbox **out)
	__must_check;
void sandbox_free(struct sandbox *f);

/*
 * Install @cls's filter on the calling thread, after warming its glibc state
 * and recording it for the violation report.  @f NULL: nothing to do, 0.
 * Returns 0; -EINVAL if @f has no filter for @cls; -ENOTSUP if the kernel
 * has no seccomp filters; another -errno from prctl()/seccomp().
 */
int sandbox_install(const struct sandbox *f, enum sandbox_class cls) __must_check;

/* Number of distinct system calls @cls allows (for tests and the README). */
unsigned int sandbox_class_nr_syscalls(enum sandbox_class cls);
const char *sandbox_class_name(enum sandbox_class cls);

#endif
