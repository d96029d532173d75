/* SPDX-License-Identifier: MIT */
/*
 * One-line error reasons of the programs (minivmm, minivmm-blkd,
 * minivmm-oci and its guest init): parsers and setup functions write why
 * they failed into the caller's buffer and return a failure value in one
 * statement: `return errf(err, errlen, "--smp must be ...", ...);`.
 */
#ifndef VMM_EXAMPLES_ERRF_H
#define VMM_EXAMPLES_ERRF_H

#include <stddef.h>

/* Format into @err (@len bytes, truncated) and return -1. */
int errf(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same, returning @ret (e.g. a -errno value). */
int errf_ret(char *err, size_t len, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* errf(), then every control character of the text made a space: for
 * reasons that quote untrusted input (a newline or a terminal escape in
 * it would otherwise reach stderr and logs as it is). */
int errf_line(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
