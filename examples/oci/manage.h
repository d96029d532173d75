/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci's commands that manage existing containers or write a spec
 * (manage.c), and run (run.c).  Each prints its one-line error through
 * oci_err() and returns the process's exit status: 0 or 1 (run: the
 * container's).
 */
#ifndef MINIVMM_OCI_MANAGE_H
#define MINIVMM_OCI_MANAGE_H

#include <stdbool.h>

#include "cli.h"

/* pause (@pause) or resume c->id's VM: running -> paused -> running. */
int oci_cmd_pause(const struct oci_cli *c, bool pause);
/* Every container under c->root: a table, c->quiet ids only, or
 * c->format "json" (an array of state objects). */
int oci_cmd_list(const struct oci_cli *c);
/* Write a starting config.json into c->bundle (default "."), never over
 * an existing one; c->rootless adds a user namespace for the caller. */
int oci_cmd_spec(const struct oci_cli *c);

/* What run does in its steps: create, start, delete (the executable's
 * commands; tests give their own). */
struct oci_run_steps {
	int (*create)(const struct oci_cli *c);
	int (*start)(const struct oci_cli *c);
	int (*remove)(const struct oci_cli *c); /* called with c->force set */
};
/* run: create and start c->id; with c->detach return then.  Otherwise
 * wait for the VMM process (made run's child: run is a subreaper),
 * forwarding INT/TERM/HUP/QUIT/USR1/USR2 to it, remove the container
 * unless c->keep, and return its exit status (128+N when killed by N);
 * 1 when a step failed (a failed start removes the container). */
int oci_cmd_run(const struct oci_cli *c, const struct oci_run_steps *steps);

struct oci_spec;
/* update: the options' resources (--resources FILE|- first, then the
 * flags over it) into @r (call spec_free() after).  0, or -1 + @err. */
int oci_update_resources(const struct oci_cli *c, struct oci_spec *r, char *err,
			 size_t len);
/* Apply @r to the cgroup @cgdir: cpu.max, cpuset; a memory limit only if
 * it gives the VM the size it has (memory.max), else an error; pids: a
 * warning.  0, or -1 + @err. */
int oci_update_cgroup(const char *cgdir, const struct oci_spec *r, char *err, size_t len);
/* update ID: the above on the container's cgroup. */
int oci_cmd_update(const struct oci_cli *c);

/* events ID (events.c): a JSON line of statistics now (c->stats) or
 * every c->interval_ms until the container stops or is deleted (then 0);
 * an "oom" line before a sample whose cgroup counted a new OOM kill.
 * 1 when it is not running or paused at the first sample. */
int oci_cmd_events(const struct oci_cli *c);

#endif
