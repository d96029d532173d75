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

/* One "A" or "A-B" at *p; advances past it. */
static int cpulist_range(const char **p, unsigned long *a, unsigned long *b)
{
	char *e;

	if (**p < '0' || **p > '9')
		return -1;
	*a = *b = strtoul(*p, &e, 10);
	if (*e == '-') {
		if (e[1] < '0' || e[1] > '9')
			return -1;
		*b = strtoul(e + 1, &e, 10);
	}
	*p = e;
	return *a > PARSE_CPU_MAX || *b > PARSE_CPU_MAX || *b < *a ? -1 : 0;
}

int parse_cpulist(const char *s, unsigned int *out, unsigned int max, unsigned int *n)
{
	unsigned long a, b;
	const char *p = s;

	*n = 0;
	if (!*p)
		return -1;
	while (*p) {
		if (cpulist_range(&p, &a, &b))
			return -1;
		for (unsigned long c = a; c <= b; c++) {
			if (out) {
				if (*n >= max)
					return -1;
				for (unsigned int i = 0; i < *n; i++)
					if (out[i] == c)
						return -1;
				out[*n] = (unsigned int)c;
			}
			(*n)++;
		}
		if (*p == ',') /* a trailing one too, as cpusets are written */
			p++;
		else if (*p)
			return -1;
	}
	return 0;
}
