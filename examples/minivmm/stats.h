/* SPDX-License-Identifier: MIT */
#ifndef MINIVMM_STATS_H
#define MINIVMM_STATS_H

#include <stdbool.h>
#include <stdio.h>

#include "vmm/vmm.h"

/* Print disk, queue and KVM counters (text, or one JSON object). */
void stats_print(struct vmm *vm, unsigned int nr_disks, bool json, FILE *f);

#endif
