/* SPDX-License-Identifier: MIT */
/*
 * Comparison-only modes of libvmm: for bench/, the tests and minivmm's
 * --disk event-idx=off and wiring=per-vector.  Not part of the installed
 * API (only vmm.h is installed).  A library built with VMM_BENCH_MODES=ON
 * (CMake option, the default) takes these flags in struct
 * vmm_disk_config.flags; one built with it OFF refuses them (-EINVAL from
 * vmm_add_disk()).
 */
#ifndef VMM_VMM_BENCH_H
#define VMM_VMM_BENCH_H

#include "vmm/vmm.h"

/* Do not offer VIRTIO_RING_F_EVENT_IDX: one interrupt per completion batch
 * and kicks not suppressed. */
#define VMM_DISK_NO_EVENT_IDX (1u << 3)
/* At the driver's DRIVER_OK, wire each queue's MSI route and irqfd into
 * KVM in a transaction of its own (one KVM_SET_GSI_ROUTING per vector,
 * each resending the whole table) instead of one for the device.  Slower. */
#define VMM_DISK_PER_VECTOR_WIRING (1u << 5)

#define VMM_DISK_BENCH_FLAGS (VMM_DISK_NO_EVENT_IDX | VMM_DISK_PER_VECTOR_WIRING)

#endif
