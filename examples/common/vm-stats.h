/* SPDX-License-Identifier: MIT */
#ifndef VMM_PROGS_VM_STATS_H
#define VMM_PROGS_VM_STATS_H

#include <stdbool.h>
#include <stdio.h>

#include "vmm/vmm.h"

/* Print disk, queue, NIC and KVM counters (text, or one JSON object). */
void stats_print(struct vmm *vm, unsigned int nr_disks, unsigned int nr_nets,
		 bool json, FILE *f);

#endif
