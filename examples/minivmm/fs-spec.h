/* SPDX-License-Identifier: MIT */
/*
 * minivmm --fs: a virtio-fs device on a vhost-user back end.
 *   --fs tag=T,socket=PATH[,num-queues=N][,queue-size=N]
 *       a back end already listening on PATH (one VM start per back end:
 *       virtiofsd serves one connection);
 *   --fs tag=T,path=DIR[,ro=on][,num-queues=N][,queue-size=N]
 *       minivmm starts virtiofsd (MINIVMM_VIRTIOFSD, default
 *       /usr/lib/qemu/virtiofsd) on DIR, its socket in a private
 *       temporary directory (removed once the VM is connected), its
 *       stderr ours; it exits when the VM's connection closes, gets
 *       SIGTERM if minivmm dies first (PR_SET_PDEATHSIG), and is reaped
 *       by minivmm (unconfined) or, confined (no wait4), by init after
 *       minivmm's exit.  ro=on: DIR is bind-mounted read-only in a mount
 *       namespace of its own (root only), which virtiofsd's own sandbox
 *       (sandbox=namespace: mount, pid and net namespaces, pivot_root
 *       into DIR) then serves.
 */
#ifndef MINIVMM_FS_SPEC_H
#define MINIVMM_FS_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "vmm/vmm.h"

#define CLI_MAX_FS VMM_MAX_FS
#define FS_VIRTIOFSD_DEFAULT "/usr/lib/qemu/virtiofsd"

struct cli_fs {
	char *spec;	    /* owned copy of the argument; fields point into it */
	const char *tag, *socket, *path;
	bool ro;
	unsigned int num_queues, queue_size;
	/* The virtiofsd minivmm started (path=). */
	pid_t child;
	char dir[64];	    /* its private socket directory, "" if none */
	char sock[96];
};

/* Parse one --fs argument into @f.  0, or -1 with a reason in @err. */
int cli_parse_fs(const char *arg, struct cli_fs *f, char *err, size_t errlen);
/* path=: start virtiofsd and wait (5 s at most) for its socket; f->socket
 * then names it.  0 or -1 with a reason in @err. */
int fs_spawn(struct cli_fs *f, char *err, size_t errlen);
/* Stop (SIGTERM after a grace period; it ends by itself when the VM's
 * connection closes) and reap a started virtiofsd; remove its directory. */
void fs_reap(struct cli_fs *f);
/* The VM is connected: remove the socket and its directory (before the
 * thread is confined: no unlink() after). */
void fs_started(struct cli_fs *f);
void cli_fs_free(struct cli_fs *f);

#endif
