/* SPDX-License-Identifier: MIT */
/*
 * `minivmm-oci exec` and `ps`: the host side of the exec channel
 * (exec-proto.h), through the VMM process's hybrid vsock socket
 * STATE/vsock.sock (the shim adds the device), to the guest init.
 */
#ifndef MINIVMM_OCI_EXEC_CMD_H
#define MINIVMM_OCI_EXEC_CMD_H

#include <stdbool.h>

#include "cli.h"
#include "exec-proto.h"

#define OCI_VSOCK_SOCKET "vsock.sock" /* in the container's state dir */
#define OCI_EXEC_CONNECT_MS 10000     /* the vsock CONNECT answer */
#define OCI_EXEC_START_MS 30000	      /* STARTED or ERROR */

/* What main.c lends exec: create's pty maker (the master goes to the
 * console socket; the raw slave is returned). */
struct oci_exec_hooks {
	int (*make_tty)(const char *console_socket, int *slave, char *err,
			size_t errlen);
};

/*
 * The relay between the host's side of the process and the connection,
 * after STARTED: @in read (when the queue has room) into STDIN frames,
 * its EOF sent once; STDOUT/STDERR frames written (blocking) to @out and
 * @err; @sigfd's signals (a signalfd) forwarded as SIGNAL frames, and
 * SIGWINCH (or, without a controlling terminal, a size change polled
 * every OCI_EXEC_WINCH_POLL_MS) as RESIZE of @tty's size when @tty >= 0;
 * a size that differs from @rows x @cols already at the start (changed
 * since the request) is sent at once.
 * @rd: the reader the request's answer came through (frames may already
 * wait in it).  A connection the VM closed before taking all we sent (a
 * process that ended at once, our stdin's EOF refused) is read on to its
 * end: its EXIT still counts.  Returns the process's status (code, or
 * 128 + signal), or 255 with the reason in @why when the connection broke
 * or ended without EXIT or a frame was malformed.  @conn must be
 * non-blocking.
 */
#define OCI_EXEC_WINCH_POLL_MS 500
struct oci_exec_io {
	int conn, in, out, err, sigfd, tty;
	bool tty_polled; /* no SIGWINCH comes: poll @tty's size */
	unsigned short rows, cols; /* the size the request gave the guest */
	struct exec_reader *rd;
};
int oci_exec_relay(const struct oci_exec_io *io, char *why, size_t whylen);

int oci_cmd_exec(const struct oci_cli *c, const struct oci_exec_hooks *h);
int oci_cmd_ps(const struct oci_cli *c);

#endif
