/* SPDX-License-Identifier: MIT */
/* --disk SPEC, the same syntax in minivmm and minivmm-blkd. */
#ifndef VMM_EXAMPLES_DISK_SPEC_H
#define VMM_EXAMPLES_DISK_SPEC_H

#include <stddef.h>

#include "vmm/vmm.h"

struct cli_disk {
	struct vmm_disk_config cfg; /* path/serial point into the spec copy */
	char *spec;		    /* owned copy of the --disk argument */
	struct vmm_rate_limit rate; /* rate-* keys; cfg.rate_limit points
				       here when one is given */
};

/* "IMG" or "path=IMG,num-queues=N,queue-size=N,ro=on,serial=S,direct=on,
 * poll-us=N,cache=writeback|unsafe,event-idx=off,lock=off,
 * wiring=per-vector" and the rate-* keys (rate-spec.h).  0, or -1 with a reason in @err; free d->spec
 * either way. */
int cli_parse_disk(const char *spec, struct cli_disk *d, char *err, size_t errlen);

#endif
