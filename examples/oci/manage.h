/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci's commands that manage existing containers or write a spec
 * (manage.c).  Each prints its one-line error through oci_err() and
 * returns the process's exit status: 0 or 1.
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

#endif
