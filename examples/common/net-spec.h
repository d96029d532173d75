/* SPDX-License-Identifier: MIT */
/* --net SPEC (vmm_add_net()), as minivmm takes it. */
#ifndef MINIVMM_NET_SPEC_H
#define MINIVMM_NET_SPEC_H

#include <stddef.h>

#include "vmm/vmm.h"

#define CLI_MAX_NETS VMM_MAX_NETS

struct cli_net {
	struct vmm_net_config cfg; /* tap, stream point into spec, fds into fds */
	char *spec;		   /* owned copy of the argument */
	int fds[VMM_MAX_NET_PAIRS];
	struct vmm_rate_limit rate; /* rate-* keys (rate-spec.h); cfg.rate_limit
				       points here when one is given */
};

/* "tap=NAME[,mac=MAC][,queue-pairs=N][,queue-size=N][,mtu=N]" or
 * "fd=N[:N...][,mac=MAC][,queue-size=N][,mtu=N]", either with
 * [,vhost=on|off] (VMM_NET_VHOST), or
 * "stream=PATH[,mac=MAC][,queue-size=N][,mtu=N]" (passt's socket), each
 * with the rate-* keys (rate-spec.h; not with vhost=on).  0, or -1 with a reason
 * in @err; free n->spec either way. */
int cli_parse_net(const char *spec, struct cli_net *n, char *err, size_t errlen);
/* "aa:bb:cc:dd:ee:ff", unicast.  0 or -1. */
int cli_parse_mac(const char *s, uint8_t mac[6]);

#endif
