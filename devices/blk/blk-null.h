/* SPDX-License-Identifier: MIT */
/*
 * Null I/O engine: every request completes inside submit() without touching
 * the image (reads leave the guest buffers as they are).  It measures the
 * pure virtio + I/O-thread cost of the device; benchmarks select it with
 * virtio_blk_params.null_engine.
 */
#ifndef VMM_DEVICES_BLK_BLK_NULL_H
#define VMM_DEVICES_BLK_BLK_NULL_H

#include "blk/blk-engine.h"

/* Stateless: one instance may serve any number of queues and threads.
 * Returns 0 or -ENOMEM. */
int blk_null_engine_create(struct blk_engine **out) __must_check;

#endif
