/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: minivmm's API socket requests (examples/minivmm/api.c),
 * api_parse_request() on the raw bytes a client sent.  Checked beyond the
 * sanitizers (abort()): an accepted request names a known command, a
 * refused one says why; input over API_MAX_REQUEST is always refused.
 */
#include <stdint.h>
#include <stdlib.h>

#include "api.h"
#include "fuzz.h"

int fuzz_api_request(const uint8_t *data, size_t size)
{
	enum api_cmd cmd = (enum api_cmd)-1;
	char err[256] = "";
	int r = api_parse_request((const char *)data, size, &cmd, err, sizeof(err));

	if (r == 0 && (size > API_MAX_REQUEST || (unsigned int)cmd > API_SHUTDOWN))
		abort();
	if (r != 0 && (r != -1 || !err[0]))
		abort();
	return 0;
}

FUZZ_TARGET(fuzz_api_request)
