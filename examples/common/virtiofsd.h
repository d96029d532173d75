/* SPDX-License-Identifier: MIT */
/*
 * A virtiofsd child for a virtio-fs device (vmm_add_fs()), as minivmm's
 * --fs path=DIR and minivmm-oci's volumes start it: Debian's virtiofsd
 * (MINIVMM_VIRTIOFSD, default VIRTIOFSD_DEFAULT) on DIR, its socket in a
 * private temporary directory (0700, removed once the VM is connected),
 * sandboxed by virtiofsd itself (sandbox=namespace: mount, pid and net
 * namespaces, pivot_root into DIR; its own seccomp filter and a reduced
 * capability set).  It exits when the VM's connection closes, gets
 * SIGTERM if its parent dies first (PR_SET_PDEATHSIG), and is reaped by
 * the parent (virtiofsd_reap()) or, confined without wait4, by init after
 * the parent's exit.  ro: DIR is bind-mounted read-only in a mount
 * namespace of the child's own (root only), which virtiofsd then serves:
 * the host, not the guest, refuses writes.
 */
#ifndef VMM_EXAMPLES_VIRTIOFSD_H
#define VMM_EXAMPLES_VIRTIOFSD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define VIRTIOFSD_DEFAULT "/usr/lib/qemu/virtiofsd"

struct virtiofsd {
	pid_t child;	/* 0: none */
	char dir[64];	/* its private socket directory, "" if none */
	char sock[96];	/* the socket in it */
};

/*
 * Start virtiofsd on directory @path (read-only if @ro).  Its socket
 * (@d->sock) is made here, listening, and handed over as fd 3 (--fd=3):
 * a VMM may connect as soon as this returns, and is refused once
 * virtiofsd died.  (A path virtiofsd binds itself exists a moment before
 * it listens, and Debian's virtiofsd locks it with a pid file in
 * /var/run/virtiofsd, which root of a user namespace only -- rootless
 * podman's runtime -- cannot write.)  Returns once virtiofsd was
 * exec'd (5 s at most: a child stuck before is killed).  @what names it
 * in errors ("--fs T").
 * @errfd: the child's stderr, its stdin and stdout then /dev/null; -1:
 * the caller's stdio.  Every other fd is closed in the child.  0, or -1
 * with a reason in @err (what was started is stopped: virtiofsd_reap()):
 * the child's own when it failed before exec ("cannot run BIN: ...",
 * "read-only bind of DIR: ..."), "virtiofsd exited at start" when it was
 * seen to end at once.
 */
int virtiofsd_spawn(struct virtiofsd *d, const char *path, bool ro, const char *what,
		    int errfd, char *err, size_t errlen);
/* virtiofsd_spawn() with @opts instead of "cache=auto": virtiofsd's -o
 * options, comma-joined (e.g. "cache=always,xattr" for a tree one guest
 * owns); sandbox=namespace always; @pool: its --thread-pool-size
 * (virtiofsd_spawn(): 0, requests served on the queue's thread: Debian
 * 12's virtiofsd seccomp-kills itself when its pool starts a thread). */
int virtiofsd_spawn_opts(struct virtiofsd *d, const char *path, bool ro,
			 const char *opts, unsigned int pool, const char *what,
			 int errfd, char *err, size_t errlen);
/*
 * virtiofsd_spawn() of one host file, @file (a regular file): @dir (an
 * empty directory of the caller's, kept while virtiofsd runs) gets an
 * empty VIRTIOFSD_FILE, and in a mount namespace of the child's own @dir
 * is bound read-only on itself and @file on that VIRTIOFSD_FILE
 * (read-only if @ro); virtiofsd serves @dir.  The guest sees the host
 * file itself: its writes reach it, the host's changes are seen.  Errors
 * as virtiofsd_spawn()'s, and "bind of FILE: ..." from the child.
 */
#define VIRTIOFSD_FILE "file"
int virtiofsd_spawn_file(struct virtiofsd *d, const char *dir, const char *file, bool ro,
			 const char *what, int errfd, char *err, size_t errlen);
/* The VM is connected: remove the socket and its directory. */
void virtiofsd_unlink(struct virtiofsd *d);
/* Reap the child: it ends by itself when the VM's connection closes;
 * SIGTERM after 2 s, SIGKILL after 4 s, given up after 5 s (a parent
 * that dropped root may not signal it; init then reaps it).  Removes its
 * directory. */
void virtiofsd_reap(struct virtiofsd *d);

#endif
