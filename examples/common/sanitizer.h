/* SPDX-License-Identifier: MIT */
/* SANITIZER_BUILD: 1 in an AddressSanitizer build (GCC or clang).  The
 * programs skip seccomp there: the sanitizer's runtime (LeakSanitizer at
 * exit) needs ptrace and clone, which no allow-list has. */
#ifndef VMM_EXAMPLES_SANITIZER_H
#define VMM_EXAMPLES_SANITIZER_H

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZER_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZER_BUILD 1
#endif
#endif
#ifndef SANITIZER_BUILD
#define SANITIZER_BUILD 0
#endif

#endif
