/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: minivmm's API socket requests (examples/minivmm/api.c),
 * api_parse() on the raw bytes a client sent.  Checked beyond the
 * sanitizers (abort()): an accepted request names a known command, a
 * refused one says why; input over API_MAX_REQUEST is always refused;
 * set-rate-limit and set-link carry what they may, the others nothing.
 */
#include <stdint.h>
#include <stdlib.h>

#include "api.h"
#include "fuzz.h"

int fuzz_api_request(const uint8_t *data, size_t size)
{
	struct api_request req;
	enum api_cmd cmd;
	char err[256] = "";
	int r = api_parse((const char *)data, size, &req, err, sizeof(err));

	cmd = req.cmd;
	if (r == 0 && (size > API_MAX_REQUEST || (unsigned int)cmd > API_SET_LINK))
		abort();
	/* set-rate-limit: a device in range, limits bounded, no burst
	 * without its rate; the others carry nothing. */
	if (r == 0 && cmd == API_SET_RATE_LIMIT &&
	    (req.index >= VMM_MAX_DISKS || req.rate.bw > (1ull << 60) ||
	     req.rate.ops > (1ull << 60) ||
	     (!req.rate.bw && req.rate.bw_burst) || (!req.rate.ops && req.rate.ops_burst)))
		abort();
	/* set-link: a NIC in range, no limits. */
	if (r == 0 && cmd == API_SET_LINK &&
	    (!req.net || req.index >= VMM_MAX_DISKS || req.rate.bw || req.rate.ops))
		abort();
	if (r == 0 && cmd != API_SET_RATE_LIMIT && cmd != API_SET_LINK &&
	    (req.index || req.rate.bw || req.rate.ops || req.up))
		abort();
	if (r != 0 && (r != -1 || !err[0]))
		abort();
	return 0;
}

FUZZ_TARGET(fuzz_api_request)
