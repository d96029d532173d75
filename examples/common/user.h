/* SPDX-License-Identifier: MIT */
/*
 * Dropping a VMM process to an unprivileged user (user.c), shared by
 * minivmm --user and minivmm-oci's VMM process (its `user` setting):
 * parse NAME|UID[:GID], resolve names, empty the capability sets that
 * survive a uid change, then change the ids from libvmm's start hook
 * (vmm_set_start_hook()) once every file of the VM is open.
 */
#ifndef VMM_EXAMPLES_USER_H
#define VMM_EXAMPLES_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * UID[:GID] as given: each side is a number or a name; names are resolved
 * later (user_resolve()), so parsing never consults the user database.
 */
struct user_spec {
	const char *what;	      /* "--user", "user": prefixes the errors */
	bool set;
	bool has_gid;		      /* ":GID" or ":GROUP" given */
	uint32_t uid, gid;	      /* numeric sides (when the name is NULL) */
	char *user_name, *group_name; /* owned: names to resolve, or NULL */
};

/*
 * Parse @s into @u (@what, a static string, names the option or setting in
 * the errors).  Refuses 0 on either side (dropping to root confines
 * nothing), 4294967295, more than one ':', an empty side, anything that is
 * neither digits nor a name ([A-Za-z0-9_.-], a trailing '$', at most 64
 * bytes).  Invalid input is not echoed: the reason stays one line.  0, or
 * -1 with the reason in @err; free @u with user_spec_free() either way.
 */
int user_parse(const char *s, const char *what, struct user_spec *u, char *err,
	       size_t errlen);
void user_spec_free(struct user_spec *u);

/*
 * Turn a parsed spec into ids: names through the user and group
 * databases (getpwnam(), getgrnam()); without ":GID" the group is the
 * user's primary group from its passwd entry, which must then exist.
 * Refuses uid 0 and gid 0.  Call before any thread exists (the NSS calls
 * are not thread-safe).  0, or -1 with a one-line reason in @err.
 */
int user_resolve(const struct user_spec *u, uid_t *uid, gid_t *gid, char *err,
		 size_t errlen);

/*
 * Empty the capability sets a uid change leaves alone, for good: the
 * bounding set (PR_CAPBSET_DROP of every capability the kernel has), the
 * ambient set and the inheritable set, and set no_new_privs, so that no
 * execve() can give a capability back.  The permitted and effective sets
 * stay (opening the VM's files and user_drop() need them): the uid change
 * clears them.  These are per-thread attributes that a new thread inherits
 * and glibc does not broadcast: call it while the process has one thread,
 * before vmm_start() (which starts the I/O threads).  Needs CAP_SETPCAP
 * (root).  0, or -errno with a one-line reason in @err.
 */
int user_restrict(char *err, size_t errlen);

/*
 * Drop the whole process, every thread, to @uid/@gid for good: clear the
 * supplementary groups (setgroups(0), first: it and setresgid() need
 * CAP_SETGID, which the uid change takes away), setresgid(), setresuid(),
 * then check on the calling thread that it holds: real, effective and
 * saved ids are the target, no supplementary group, every capability set
 * empty (permitted, effective, inheritable, ambient, bounding: the last
 * three are user_restrict()'s, which must have run first), no_new_privs
 * set, and setresuid(0)/setresgid(0) fail with EPERM.  glibc makes every
 * other thread repeat the set*id() calls from a signal handler, so they
 * must not be confined by a seccomp filter that forbids them (run it from
 * libvmm's start hook, before any filter is installed).  0, or -errno with
 * a one-line reason in @err.
 */
int user_drop(uid_t uid, gid_t gid, char *err, size_t errlen);

#endif
