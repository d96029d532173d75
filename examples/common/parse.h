/* SPDX-License-Identifier: MIT */
/* Values of the programs' options and settings files: whole strings only
 * (no sign, no leading blanks, nothing after the value).  0, or -1. */
#ifndef VMM_EXAMPLES_PARSE_H
#define VMM_EXAMPLES_PARSE_H

#include <stdbool.h>
#include <stdint.h>

/* Unsigned decimal in [min, max]. */
int parse_uint(const char *s, unsigned long long min, unsigned long long max,
	       unsigned long long *out);
/* A size: "512M", "2G", "1024K", "1T" (K/M/G/T, optionally "iB" or "B":
 * "2GiB"), a bare number being MiB ("4096").  0 is accepted. */
int parse_size(const char *s, uint64_t *out);
/* on/true/1/yes or off/false/0/no. */
int parse_bool(const char *s, bool *out);
/* A CPU list as cpusets and taskset write it ("0-3,8,10-11", a trailing
 * comma allowed; CPUs up to
 * PARSE_CPU_MAX) into @out in its order, at most @max CPUs and none twice;
 * @out NULL only counts (duplicates then not checked).  *@n: how many. */
#define PARSE_CPU_MAX 65535
int parse_cpulist(const char *s, unsigned int *out, unsigned int max, unsigned int *n);

#endif
