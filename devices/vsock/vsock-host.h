/* SPDX-License-Identifier: MIT */
/*
 * The host side of the hybrid vsock (vsock.h): Unix stream sockets.  A
 * host program connects to PATH and writes "CONNECT <port>\n"; a guest
 * connection to host port P is a connection to the Unix socket "PATH_P".
 * No state: the socket calls and the parser of the CONNECT line.
 */
#ifndef VMM_DEVICES_VSOCK_VSOCK_HOST_H
#define VMM_DEVICES_VSOCK_VSOCK_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "util/compiler.h"

/* Longest CONNECT line taken, '\n' included ("CONNECT 4294967295\r\n" is
 * 20 bytes); a longer one is refused. */
#define VSOCK_LINE_MAX 32u
/* Longest PATH: "PATH_4294967295" must fit in sockaddr_un.sun_path. */
#define VSOCK_PATH_MAX (108u - 1 - 11)

/*
 * Parse the start of what a host client sent, @buf of @len bytes: a line
 * "CONNECT <port>\n" (or "\r\n"), port in decimal 0..4294967295 without
 * sign or leading blanks.  Returns 1 (*@port and *@line_len, the line's
 * bytes with its newline, are set), 0 (no newline yet and fewer than
 * VSOCK_LINE_MAX bytes: wait for more) or -EINVAL (not such a line).
 * Pure: never reads past @len.
 */
int vsock_parse_connect(const char *buf, size_t len, uint32_t *port,
			size_t *line_len);

/* Create, bind and listen on the Unix socket @path (non-blocking,
 * close-on-exec), which appears only once it listens (bound as
 * "PATH.PID~", renamed onto @path); a socket already there that nobody
 * listens on is replaced in that rename.  Returns 0 (*@fd) or -errno:
 * -ENAMETOOLONG (@path over VSOCK_PATH_MAX), -EADDRINUSE (@path is another
 * file, or a socket in use), what socket()/bind()/listen()/rename() say. */
int vsock_host_listen(const char *path, int *fd) __must_check;

/* Connect a non-blocking socket to "@path_@port".  Returns 0 (*@fd) or
 * -errno (-ECONNREFUSED, -ENOENT: nobody listens; -EAGAIN: its backlog is
 * full).  Context: the device's I/O thread (socket, connect). */
int vsock_host_connect(const char *path, uint32_t port, int *fd) __must_check;

#endif
