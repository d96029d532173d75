/* SPDX-License-Identifier: MIT */
/*
 * The VMM process's control plane, without the VM (shim.c owns the VM and
 * the loop): frames from and to the guest init on the minivmm.ctl port,
 * the ctl.sock clients (`start`, `signal N`, `pause`, `resume`, `stats`),
 * and the
 * signals the process
 * forwards.  Everything here is driven by the guest or by local clients,
 * and bounded:
 *  - the ctl socket is non-blocking both ways.  Frames to the guest wait
 *    in a queue of at most SHIM_OUT_MAX bytes (written when poll() says
 *    the socket has room); a frame that does not fit is dropped, counted
 *    and logged (rate-limited): a guest that stopped reading its control
 *    port loses signals and resizes, never the shim's loop;
 *  - frames from the guest are read at most SHIM_READ_MAX bytes per turn
 *    of the loop, so a flood cannot starve the exit, signals or clients;
 *    its ERROR lines are rate-limited (struct oci_limit);
 *  - clients are non-blocking: at most SHIM_MAX_CLIENTS at once (more are
 *    closed at once), a request line must arrive within
 *    SHIM_CLIENT_READ_MS, answers are sent with MSG_DONTWAIT.  A `start`
 *    client waits for its answer (STARTED, ERROR, or the VM's end).
 * Context: the shim's one thread (oci_shim_run()), all of it.
 */
#ifndef MINIVMM_OCI_SHIMCTL_H
#define MINIVMM_OCI_SHIMCTL_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

#include "netns.h"
#include "oci.h"
#include "proto.h"

#define SHIM_MAX_CLIENTS 16
#define SHIM_CLIENT_READ_MS 5000
#define SHIM_CLIENT_LINE 128
/* The longest `stats` answer (the socket's default send buffer takes it whole). */
#define SHIM_STATS_MAX (128u << 10)
#define SHIM_OUT_MAX (PROTO_MAX_FRAME + 4u + (64u << 10))
#define SHIM_READ_MAX (256u << 10)
/* Poll entries shim_ctl_pollfds() may fill: ctl, listen, clients. */
#define SHIM_CTL_NFDS (2 + SHIM_MAX_CLIENTS)

struct shim_client {
	int fd;
	bool want_start; /* sent "start": answered at STARTED or the end */
	uint64_t deadline_ns; /* of its request line; 0 once it came */
	size_t have;
	char line[SHIM_CLIENT_LINE];
};

struct shim_ctl {
	const struct oci_shim_params *p;
	int ctl;	/* our end of minivmm.ctl (O_NONBLOCK); -1 when broken */
	struct proto_reader rd;
	bool ready, config_sent, started, start_wanted;
	bool broken;	/* a malformed frame: the VM was stopped */
	char guest_error[512];
	struct shim_client clients[SHIM_MAX_CLIENTS];
	unsigned int nclients;
	/* Frames to the guest not yet written: out[out_off..out_len) of
	 * out_cap bytes (at most 2 x SHIM_OUT_MAX). */
	uint8_t *out;
	size_t out_len, out_off, out_cap;
	uint64_t frames_dropped;
	int exit_code; /* when the VM is stopped by us before start: 128+N */
	/* Stop the VM (a malformed frame; a deadly signal before start). */
	void (*stop_vm)(void *opaque);
	/* Pause (@pause true) or resume the VM's vCPUs: 0 or -errno.  Set
	 * by the caller after shim_ctl_init(); NULL answers "not supported". */
	int (*pause_vm)(void *opaque, bool pause);
	/* The VM's statistics as one line of JSON (malloc'd into *@json,
	 * ending in a newline): 0 or -errno.  Set like pause_vm; NULL
	 * answers "not supported". */
	int (*stats_vm)(void *opaque, char **json);
	void *opaque;
	struct oci_limit guest_log; /* ERROR frames and other guest news */
	int timings_fd; /* JSON timing records, or -1: opened by the caller
			   (before a uid drop), O_APPEND */
	int npoll;		    /* entries of the last shim_ctl_pollfds() */
	/* The VM's NIC in the container's network namespace (its records go
	 * into CONFIG), or NULL: set by the shim after shim_ctl_init() */
	const struct netns_plan *net;
	/* Called (with opaque) once before CONFIG is sent, or NULL: the
	 * shim reads the namespace then and sets net (the NIC connected
	 * at start, spec.h SPEC_ANN_NETWORK) */
	void (*read_net)(void *opaque);
};

/* @ctl: our end of the port's socket (made non-blocking here). */
void shim_ctl_init(struct shim_ctl *s, const struct oci_shim_params *p, int ctl,
		   void (*stop_vm)(void *opaque), void *opaque);
/* Fill up to SHIM_CTL_NFDS entries of @pfd; returns how many. */
int shim_ctl_pollfds(struct shim_ctl *s, struct pollfd *pfd);
/* Handle what poll() reported on the entries shim_ctl_pollfds() filled,
 * and expire clients whose request line is late. */
void shim_ctl_handle(struct shim_ctl *s, const struct pollfd *pfd);
/* poll() timeout in ms until the next client deadline, or -1. */
int shim_ctl_timeout_ms(const struct shim_ctl *s);
/* Append a timing record for @what to timings_fd (if open). */
void shim_ctl_timing(struct shim_ctl *s, const char *what);
/* A signal the process received (SIGWINCH: resize; others forwarded). */
void shim_ctl_signal(struct shim_ctl *s, int sig);
/* The VM ended: read what the guest left in the socket (at most
 * SHIM_READ_MAX bytes more), answer waiting `start` clients, flush the
 * rate limit's count, free.  The ctl fd stays the caller's. */
void shim_ctl_finish(struct shim_ctl *s);

#endif
