/* SPDX-License-Identifier: MIT */
/*
 * What the minivmm-oci ctl.sock tests share (check_oci_pause,
 * check_oci_events): a listening ctl.sock in a directory, one request
 * through the VMM process's real control plane (shim-ctl.c), and a fake
 * VMM process answering every request with a fixed line.
 */
#ifndef TESTS_UNIT_OCI_CTL_FIXTURE_H
#define TESTS_UNIT_OCI_CTL_FIXTURE_H

#include <stddef.h>

#include "shimctl.h"

/* DIR/ctl.sock, listening, non-blocking. */
int bind_ctl(const char *dir);
/* rm -rf DIR. */
void rm_rf(const char *dir);
/* The stop hook of a control plane that has no VM. */
void no_stop(void *opaque);
/* Send @req to DIR/ctl.sock, turn @s's loop until the answer comes. */
void request(struct shim_ctl *s, const char *dir, const char *req, char *ans,
	     size_t len);

struct fake_vmm {
	int listen;
	int stop; /* __atomic: set by the test when done */
	const char *answer;
	char got[64];
	int requests;
};
/* Answers every request it gets with ->answer, until ->stop.  Context:
 * its own thread (pthread_create(..., fake_vmm, f)). */
void *fake_vmm(void *arg);

#endif
