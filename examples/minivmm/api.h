/* SPDX-License-Identifier: MIT */
/*
 * minivmm --api-socket PATH: a JSON control socket (schema: minivmm(1),
 * "API SOCKET"), and minivmm --api PATH COMMAND, its client.
 *
 * One request per connection: the client writes one JSON object
 * ({"command":"info"}), ended by a newline or by shutting down its
 * writing side; the server answers one JSON object and a newline
 * ({"ok":true,...} or {"ok":false,"error":"..."}) and closes.  Requests
 * over API_MAX_REQUEST bytes, or not complete within API_REQUEST_MS, are
 * refused; so is a peer of another uid (SO_PEERCRED; root may).
 */
#ifndef MINIVMM_API_H
#define MINIVMM_API_H

#include <stddef.h>
#include <stdint.h>

#include "vmm/vmm.h"

#define API_MAX_REQUEST 4096
#define API_REQUEST_MS 1000

enum api_cmd {
	API_INFO,
	API_STATS,
	API_PAUSE,
	API_RESUME,
	API_STOP,
	API_SHUTDOWN,
};

/*
 * Parse one request (@len bytes, no terminating NUL needed).  Returns 0
 * with *@cmd set, or -1 with a one-line reason in @err.  Pure: unit-tested
 * and fuzzed.
 */
int api_parse_request(const char *buf, size_t len, enum api_cmd *cmd,
		      char *err, size_t errlen);

/* What "info" reports besides the VM's state. */
struct api_info {
	unsigned int vcpus;
	uint64_t memory;
	unsigned int nr_disks;
};

struct api_server;

/*
 * Create the listening socket at @path (0600; a stale socket left there
 * is replaced, any other file is not), and a child process that removes
 * it when minivmm ends.  Context: while the process has one thread,
 * before anything is confined.  0 or -errno with a reason in @err.
 */
int api_server_open(const char *path, struct api_server **out, char *err,
		    size_t errlen);
/* The fd to poll for POLLIN (a client is waiting). */
int api_server_fd(const struct api_server *s);
/*
 * Serve one waiting client: accept, check its credentials, read its
 * request (bounded), act on @vm, answer, close.  Returns 1 if the request
 * was "stop" or "shutdown" and was carried out (the VM is ending), else 0.
 * Context: the control thread (seccomp's control class suffices).
 */
int api_server_serve(struct api_server *s, struct vmm *vm,
		     const struct api_info *info);
/* Close the socket; its path goes when the process ends (the remover). */
void api_server_close(struct api_server *s);

/* minivmm --api PATH COMMAND: send {"command":COMMAND}, print the answer
 * on stdout.  Returns the process exit status: 0 ok, 1 refused or
 * failed, 2 usage. */
int api_client(const char *path, const char *command);

#endif
