/* SPDX-License-Identifier: MIT */
/*
 * Rate limits of disks and NICs (vmm_rate_limit in vmm.h): the checks of
 * what a caller gives, the conversion to the devices' limiters
 * (ratelimit.h); the public calls are rates.c's.
 */
#ifndef VMM_MACHINE_RATES_H
#define VMM_MACHINE_RATES_H

#include <stdbool.h>

#include "ratelimit.h"
#include "vmm/vmm.h"

/* Check @in (vmm.h's rules) and copy it into @out; NULL @in: all zero
 * (unlimited).  Returns 0 or -EINVAL. */
int machine_rate_in(const struct vmm_rate_limit *in, struct vmm_rate_limit *out);
/* @in as a limiter's configuration. */
void machine_rate_cfg(const struct vmm_rate_limit *in, struct ratelimit_cfg *out);
/* Whether @r limits anything. */
bool machine_rate_any(const struct vmm_rate_limit *r);

#endif
