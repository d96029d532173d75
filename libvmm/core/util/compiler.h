/* SPDX-License-Identifier: MIT */
/* Small compiler helpers shared by every module. */
#ifndef VMM_UTIL_COMPILER_H
#define VMM_UTIL_COMPILER_H

#include <stddef.h>

#define __must_check __attribute__((warn_unused_result))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define ALIGN_UP(x, a) (((x) + ((a) - 1)) & ~((__typeof__(x))(a) - 1))
#define ALIGN_DOWN(x, a) ((x) & ~((__typeof__(x))(a) - 1))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* A busy-wait loop's hint to the CPU (x86 PAUSE, arm64 YIELD): less power,
 * and a sibling hyperthread gets the pipeline.  The one place outside
 * libvmm/arch that may name an architecture (tests/layering.sh). */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

#endif
