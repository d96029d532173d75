/* SPDX-License-Identifier: MIT */
/*
 * KVM binary statistics (KVM_GET_STATS_FD, Linux 5.14+): the counters
 * kvm_stat shows, read from a vCPU's stats fd by name.
 */
#ifndef VMM_KVMSTATS_H
#define VMM_KVMSTATS_H

#include <stdint.h>

#include "util/compiler.h"

#define KVMSTATS_MAX 8

struct kvmstats {
	int fd;				/* -1: unavailable */
	unsigned int nr;
	uint64_t offset[KVMSTATS_MAX];	/* byte offset of each value, or
					   UINT64_MAX if the name is unknown */
};

/*
 * Open @obj_fd's stats fd (a vCPU or VM fd) and look up @names; a name may
 * list alternatives, "a|b": each architecture's KVM names some counters
 * its own way (x86 mmio_exits, arm64 mmio_exit_user).
 * Returns 0, -ENOTSUP without binary stats, or -errno.
 */
int kvmstats_open(struct kvmstats *ks, int obj_fd, const char *const *names,
		  unsigned int nr) __must_check;
/* Read the values (UINT64_MAX for unknown names). Returns 0 or -errno. */
int kvmstats_read(const struct kvmstats *ks, uint64_t *vals);
void kvmstats_close(struct kvmstats *ks);

#endif
