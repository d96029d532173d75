/* SPDX-License-Identifier: MIT */
/* minivmm --user: resolve the target user and drop to it (user.c). */
#ifndef MINIVMM_USER_H
#define MINIVMM_USER_H

#include <stddef.h>
#include <sys/types.h>

#include "cli.h"

/*
 * Turn a parsed --user into ids: names through the user and group
 * databases (getpwnam(), getgrnam()); without ":GID" the group is the
 * user's primary group from its passwd entry, which must then exist.
 * Refuses uid 0 and gid 0.  Call before any thread exists (the NSS calls
 * are not thread-safe).  0, or -1 with a one-line reason in @err.
 */
int user_resolve(const struct cli_user *u, uid_t *uid, gid_t *gid, char *err,
		 size_t errlen);

/*
 * Drop the whole process, every thread, to @uid/@gid for good: clear the
 * supplementary groups (setgroups(0), first: it and setresgid() need
 * CAP_SETGID, which the uid change takes away), setresgid(), setresuid(),
 * then check that it holds: real, effective and saved ids are the target,
 * no supplementary group, no capability left, and setresuid(0)/
 * setresgid(0) fail with EPERM.  glibc makes every other thread repeat the
 * set*id() calls from a signal handler, so they must not be confined by a
 * seccomp filter that forbids them (minivmm runs this from libvmm's start
 * hook, before any filter is installed).  0, or -errno with a one-line
 * reason in @err.
 */
int user_drop(uid_t uid, gid_t gid, char *err, size_t errlen);

#endif
