/* SPDX-License-Identifier: MIT */
/*
 * What the guest init does for every process it starts in the container:
 * the container's main process (init.c) and those `exec` asks for
 * (exec.c): the process's rlimits, umask, capabilities, groups, gid, uid,
 * cwd, no_new_privs, signal mask and environment, then execvp().  Also
 * the small helpers both use.
 */
#ifndef MINIVMM_OCI_INIT_PROCESS_H
#define MINIVMM_OCI_INIT_PROCESS_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* One line on the kernel console (stderr): "minivmm-init[T]: ...". */
void init_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* write() all of @p to @fd (EINTR retried; stops at an error). */
void init_write_full(int fd, const void *p, size_t n);
/* TIOCSWINSZ on @fd unless @rows or @cols is 0. */
void init_set_winsize(int fd, uint16_t rows, uint16_t cols);
/* Report a failure to the parent through @pipe_fd (a status byte, the
 * text) and _exit(@status).  Context: a child before its execvp(). */
void __attribute__((noreturn, format(printf, 3, 4)))
init_child_fail(int pipe_fd, int status, const char *fmt, ...);
/*
 * Become @c's process and execvp() it, its stdio already in place:
 * rlimits, umask, the bounding set, groups, gid, uid, the other
 * capability sets, cwd, no_new_privs, an empty signal mask, the
 * environment.  Never returns: a failure goes to @pipe_fd
 * (init_child_fail(): 127 not found, 126 not executable, 1 otherwise).
 * Context: the process's child, in the container's root.
 */
void __attribute__((noreturn)) init_process_exec(const struct init_config *c,
						 int pipe_fd);

#endif
