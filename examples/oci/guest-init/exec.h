/* SPDX-License-Identifier: MIT */
/*
 * The guest init's side of `minivmm-oci exec` and `ps` (exec-proto.h):
 * a non-blocking AF_VSOCK listener on EXEC_PORT, and one forked server
 * process per connection, so that no request ever blocks PID 1's own
 * duties (reaping, the main process, its signals and terminal).
 *
 * A server reads the request (within EXEC_REQ_MS), enters the container
 * the way the main process is in it (its mount and PID namespaces from
 * /proc/MAIN/ns, its root from /proc/MAIN/root; the UTS, IPC and network
 * namespaces are the VM's, which the main process shares), then:
 *  - PS: lists the processes its /proc (the container's) shows;
 *  - EXEC: starts the process (process.h) on pipes, or on a pty of the
 *    container's devpts sized by the request, relays its stdio and the
 *    host's stdin, resize and signal frames with bounded queues both ways
 *    (back pressure: a host that stops reading stops the process's
 *    output being read), and ends with EXIT.  A host that goes away ends
 *    the process (SIGKILL): nobody could read its output or status.
 */
#ifndef MINIVMM_OCI_INIT_EXEC_H
#define MINIVMM_OCI_INIT_EXEC_H

#include <sys/types.h>

#define EXEC_REQ_MS 10000     /* the request must arrive within this */
#define EXEC_MAX_SERVERS 64   /* connections served at once; more closed */

/* The listener (O_NONBLOCK, CLOEXEC), or -1 (no vsock: logged). */
int init_exec_listen(void);
/*
 * Accept what is pending on @lfd and fork a server for each, at most
 * EXEC_MAX_SERVERS running (*@nservers, which the caller decrements when
 * it reaps one).  @main_pid: the container's main process.  Never
 * blocks.  Context: PID 1's loop.
 */
void init_exec_accept(int lfd, pid_t main_pid, unsigned int *nservers);

#endif
