/* SPDX-License-Identifier: MIT */
/*
 * A Unix stream socket listening at a path that exists only once it
 * listens: the programs' control and back-end sockets (minivmm's API
 * socket, minivmm-blkd's vhost-user socket).  A supervisor that starts the
 * next program when the path appears -- the usual way to wait for a
 * vhost-user back end or an API socket -- is never refused.
 */
#ifndef VMM_EXAMPLES_UNIX_LISTEN_H
#define VMM_EXAMPLES_UNIX_LISTEN_H

#include <sys/types.h>

/*
 * Listen on @path (SOCK_STREAM | @type_flags, e.g. SOCK_CLOEXEC |
 * SOCK_NONBLOCK; @backlog).  The socket is bound under a temporary name
 * beside @path ("PATH.PID~") and renamed onto it after listen(); a socket
 * already at @path (a program that died) is replaced in that one step,
 * anything else there is left alone.  Where the temporary name would not
 * fit in sun_path, @path itself is bound after the old socket is removed.
 * @mask: the umask bind() runs under (0177: 0600 from the start, no moment
 * where another user could connect), or -1 for the process's.
 * Returns 0 with the socket in *@fd, or:
 *   -ENAMETOOLONG  @path does not fit in sun_path
 *   -EEXIST        @path exists and is not a socket
 *   -errno         of socket(), bind(), listen() or rename()
 * Context: any thread; with @mask >= 0, where no other thread creates
 * files (the umask is the process's).
 */
int unix_listen(const char *path, int type_flags, int backlog, int mask, int *fd);

#endif
