/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

int parse_uint(const char *s, unsigned long long min, unsigned long long max,
	       unsigned long long *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v, mult = 1ull << 20;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end) {
		switch (*end) {
		case 'k': case 'K': mult = 1ull << 10; break;
		case 'm': case 'M': mult = 1ull << 20; break;
		case 'g': case 'G': mult = 1ull << 30; break;
		case 't': case 'T': mult = 1ull << 40; break;
		default: return -1;
		}
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'b' || *end == 'B')
			end++;
		if (*end)
			return -1;
	}
	if (v > UINT64_MAX / mult)
		return -1;
	*out = v * mult;
	return 0;
}

int parse_bool(const char *s, bool *out)
{
	if (!strcmp(s, "on") || !strcmp(s, "true") || !strcmp(s, "1") ||
	    !strcmp(s, "yes")) {
		*out = true;
		return 0;
	}
	if (!strcmp(s, "off") || !strcmp(s, "false") || !strcmp(s, "0") ||
	    !strcmp(s, "no")) {
		*out = false;
		return 0;
	}
	return -1;
}
