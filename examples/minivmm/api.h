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

#include <stdbool.h>
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
	API_SET_RATE_LIMIT, /* a disk's or NIC's rate limits (struct api_request) */
	API_SET_LINK,	    /* a NIC's link up or down */
};

/* A request with its arguments (set-rate-limit's, set-link's). */
struct api_request {
	enum api_cmd cmd;
	bool net;		    /* "device":"netN", else "diskN" */
	unsigned int index;	    /* N */
	struct vmm_rate_limit rate; /* members absent: 0 (unlimited) */
	bool up;		    /* set-link */
};
/*
 * api_parse_request() with the arguments: {"command":"set-rate-limit",
 * "device":"disk0"|"net0", "bw":N, "bw_burst":N, "bw_one_time":N, "ops":N,
 * "ops_burst":N, "ops_one_time":N}, each number an integer 0..2^60, every
 * one optional (the request replaces all the device's limits); or
 * {"command":"set-link", "device":"netN", "up":true|false}, both required.
 * 0, or -1 with a reason in @err.
 */
int api_parse(const char *buf, size_t len, struct api_request *req, char *err,
	      size_t errlen);

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
	unsigned int nr_nets; /* "stats": the NICs' pairs */
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

/* minivmm --api PATH COMMAND [ARGS]: send {"command":COMMAND}, print the
 * answer on stdout.  set-rate-limit's ARGS: DEVICE (disk0, net0) and the
 * --disk rate-*=N keys (rate-spec.h), none for unlimited.  Returns the process exit status: 0 ok, 1 refused or
 * failed, 2 usage. */
int api_client(const char *path, const char *command, int argc, char **argv);

#endif
