/* SPDX-License-Identifier: MIT */
/*
 * The rate-limit keys of --disk and --net (struct vmm_rate_limit):
 *   rate-bw=N[K|M|G|T]          bytes per second (binary suffixes: 50M is
 *                               50 MiB/s; a bare number is bytes)
 *   rate-bw-burst=N[K|M|G|T]    bucket size in bytes (default: one second)
 *   rate-bw-one-time=N[K|M|G|T] extra bytes once
 *   rate-ops=N                  operations per second
 *   rate-ops-burst=N, rate-ops-one-time=N
 */
#ifndef VMM_EXAMPLES_RATE_SPEC_H
#define VMM_EXAMPLES_RATE_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/vmm.h"

/* N with an optional binary suffix K/M/G/T (also "KiB"...), in bytes,
 * at most 2^60.  0 or -1. */
int rate_parse_bytes(const char *s, uint64_t *out);
/*
 * If @key is one of the keys above, parse @val into @r (struct_size set)
 * and return 0, or -1 with a reason naming @opt ("--disk") in @err.
 * Returns 1 for any other key (@r untouched).
 */
int rate_spec_key(const char *key, const char *val, struct vmm_rate_limit *r,
		  const char *opt, char *err, size_t errlen);
/* After the last key: a burst without its rate is an error.  0 or -1. */
int rate_spec_check(const struct vmm_rate_limit *r, const char *opt, char *err,
		    size_t errlen);
/* Whether @r sets anything (then hand it to the library). */
bool rate_spec_any(const struct vmm_rate_limit *r);

#endif
