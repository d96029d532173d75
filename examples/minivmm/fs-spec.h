/* SPDX-License-Identifier: MIT */
/*
 * minivmm --fs: a virtio-fs device on a vhost-user back end.
 *   --fs tag=T,socket=PATH[,num-queues=N][,queue-size=N]
 *       a back end already listening on PATH (one VM start per back end:
 *       virtiofsd serves one connection);
 *   --fs tag=T,path=DIR[,ro=on][,num-queues=N][,queue-size=N]
 *       minivmm starts virtiofsd on DIR (examples/common/virtiofsd.h:
 *       MINIVMM_VIRTIOFSD, default /usr/lib/qemu/virtiofsd; its sandbox,
 *       its end with the VM's connection or minivmm's, ro=on's read-only
 *       bind), its stderr minivmm's; reaped by minivmm (unconfined) or,
 *       confined (no wait4), by init after minivmm's exit.
 */
#ifndef MINIVMM_FS_SPEC_H
#define MINIVMM_FS_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "virtiofsd.h"
#include "vmm/vmm.h"

#define CLI_MAX_FS VMM_MAX_FS

struct cli_fs {
	char *spec;	    /* owned copy of the argument; fields point into it */
	const char *tag, *socket, *path;
	bool ro;
	unsigned int num_queues, queue_size;
	struct virtiofsd d; /* the virtiofsd minivmm started (path=) */
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
