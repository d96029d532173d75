/* SPDX-License-Identifier: MIT */
/*
 * process.capabilities applied to the container's process by the guest
 * init (caps.c), in the reference runtime's order: the bounding set and PR_SET_KEEPCAPS
 * before the uid/gid change, the effective, permitted and inheritable sets
 * (capset) and the ambient set after it.  Split from init.c so that a unit
 * test runs the same code on the host, in a forked child.
 */
#ifndef MINIVMM_OCI_INIT_CAPS_H
#define MINIVMM_OCI_INIT_CAPS_H

#include <stddef.h>
#include <stdint.h>

#include "../proto.h"

/*
 * Before setgroups()/setgid()/setuid(): drop from the bounding set every
 * capability @caps[PROTO_CAP_BOUNDING] lacks (needs CAP_SETPCAP: the init
 * is root with every capability), and set PR_SET_KEEPCAPS so that a change
 * to a non-zero uid keeps the permitted set for init_caps_after_user().
 * Capabilities this kernel does not have are left out.  0, or -errno with a
 * one-line reason in @err.
 */
int init_caps_before_user(const uint64_t caps[PROTO_CAP_SETS], char *err,
			  size_t errlen);

/*
 * After the uid/gid change: clear PR_SET_KEEPCAPS, set the effective,
 * permitted and inheritable sets to @caps' (capset: the effective set must
 * be within the permitted one, the inheritable within the bounding one),
 * then make the ambient set exactly @caps[PROTO_CAP_AMBIENT] (each must be
 * permitted and inheritable).  At execve() the kernel then gives a root
 * process its bounding and inheritable sets (within the permitted set when
 * no_new_privs is on), any other uid its ambient set, as OCI runtimes do.
 * 0, or -errno with a one-line reason in @err.
 */
int init_caps_after_user(const uint64_t caps[PROTO_CAP_SETS], char *err,
			 size_t errlen);

#endif
