/* SPDX-License-Identifier: MIT */
/*
 * A NIC queue's rate limit (ratelimit.h): frames are sized only once
 * moved (read from the tap, popped from the TX ring), so a queue moves
 * while its limiter holds credit, at most NET_RATE_BUDGET frames a round,
 * and charges what it moved afterwards; a queue in debt waits, woken by
 * its I/O thread's timed wait (vqs_retry_at()).  RX then leaves frames in
 * the tap (the kernel's queue bounds them), TX leaves chains in the ring.
 * Context: the queue's I/O thread.
 */
#ifndef VMM_DEVICES_NET_NET_RATE_H
#define VMM_DEVICES_NET_NET_RATE_H

#include <stdbool.h>
#include <stdint.h>

#include "ratelimit.h"
#include "virtio/vq-service.h"

/* Frames one round of a limited queue moves at most: the debt a round
 * leaves stays small (16 TSO frames), the average holds either way. */
#define NET_RATE_BUDGET 16u

/*
 * Whether @sq must wait for @rl's tokens (then it is served again when
 * they are back, or within RATELIMIT_RECHECK_NS to see a changed limit).
 * @wait_from: the queue's own record of when it began waiting (0: not).
 * Lowers *@budget for a limited queue.
 */
bool net_rate_wait(struct vqs_queue *sq, struct ratelimit *rl,
		   uint64_t *wait_from, unsigned int *budget);
/* Charge what a round moved. */
void net_rate_charge(struct ratelimit *rl, uint64_t bytes, uint64_t frames);

#endif
