/* SPDX-License-Identifier: MIT */
/*
 * The guest init's network setup (net.c): lo up, and the NIC the runtime
 * connected to the container's network namespace given what it read
 * there (struct init_net): the virtio-net interface with that MAC is
 * renamed (eth0), gets the MTU, is brought up, then gets the addresses
 * and routes (rtnetlink).  No DHCP: the addresses are the namespace's.
 */
#ifndef MINIVMM_OCI_INIT_NET_H
#define MINIVMM_OCI_INIT_NET_H

#include <stddef.h>

#include "config.h"

/*
 * Configure the VM's network from @n (no NIC without n->has_link).
 * Returns 0, or -1 with a reason in @err (no interface with that MAC
 * within 5 s, an address or route the kernel refused).  Context: the
 * init, before the container's process is started.
 */
int init_net_setup(const struct init_net *n, char *err, size_t errlen);

#endif
