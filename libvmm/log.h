/* SPDX-License-Identifier: MIT */
/* Library logging: routed to the vmm_set_log() callback or stderr. */
#ifndef VMM_LOG_H
#define VMM_LOG_H

#include "vmm/vmm.h"

void vmm_logf(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define vmm_err(...) vmm_logf(VMM_LOG_ERROR, __VA_ARGS__)
#define vmm_warn(...) vmm_logf(VMM_LOG_WARN, __VA_ARGS__)
#define vmm_info(...) vmm_logf(VMM_LOG_INFO, __VA_ARGS__)
#define vmm_dbg(...) vmm_logf(VMM_LOG_DEBUG, __VA_ARGS__)

#endif
