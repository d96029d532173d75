/* SPDX-License-Identifier: MIT */
/*
 * Rootless minivmm-oci (rootless podman): the runtime runs as "root" in
 * the user namespace podman made for an unprivileged user.  What differs
 * there, decided here so that it can be tested without one:
 *  - the state directory's default is $XDG_RUNTIME_DIR/minivmm-oci (as
 *    runc's $XDG_RUNTIME_DIR/runc and crun's), not /run/minivmm-oci,
 *    which such a user cannot write;
 *  - a cgroup the user may not create (cgroupfs without delegation: the
 *    cgroup v2 tree belongs to the real root) is passed over with a
 *    warning, as crun does for rootless containers, instead of failing
 *    create: the VM's fixed size still bounds its memory.
 */
#ifndef MINIVMM_OCI_ROOTLESS_H
#define MINIVMM_OCI_ROOTLESS_H

#include <stdbool.h>
#include <stddef.h>

/* Whether the text of a /proc/PID/uid_map is not the initial user
 * namespace's "0 0 4294967295" (runc's RunningInUserNS()): any other
 * mapping, or none, is a user namespace.  NULL (unreadable): false. */
bool oci_rootless_map(const char *uid_map);

/* Whether this process runs in a user namespace other than the initial
 * one (/proc/self/uid_map).  Any thread. */
bool oci_rootless(void);

/* The state root when --root is not given: @xdg + "/minivmm-oci" when
 * @rootless and @xdg ($XDG_RUNTIME_DIR) is an absolute path that fits
 * @buf, else OCI_DEFAULT_ROOT.  Returns @buf or the constant. */
const char *oci_rootless_state_root(bool rootless, const char *xdg, char *buf,
				    size_t len);

/* Whether a failure to create the container's cgroup with @err (an
 * errno) is passed over: only rootless, and only for the errors of a
 * tree that is not this user's (EACCES, EPERM, EROFS). */
bool oci_rootless_cgroup_skip(bool rootless, int err);

#endif
