/* SPDX-License-Identifier: MIT */
/*
 * A NIC queue's rate limit (ratelimit.h): frames are sized only once
 * moved (read from the tap, popped from the TX ring), so a queue moves
 * while its limiter holds credit, at most NET_RATE_BUDGET frames a round,
 * and charges what it moved afterwards; a queue in debt waits, woken by
 * its I/O thread's timed wait (vqs_retry_at()); so is a queue whose round
 * used up its budget (net_rate_again()).  RX then leaves frames in
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
/*
 * A limited round moved its whole budget and frames are left: serve @sq
 * again as soon as @rl has credit (at once if it has), on the queue's
 * timed wait, instead of VQS_RETRY.  VQS_RETRY waits for the I/O thread's
 * next round, up to IOTHREAD_RETRY_NS (1 ms) when nothing else wakes it:
 * NET_RATE_BUDGET frames a millisecond, a ceiling under the limit
 * (bench/net_ratelimit_bench.sh measured 18.9 MiB/s of 1514-byte frames
 * for 50 MiB/s).  A wait it schedules is counted like net_rate_wait()'s
 * (@wait_from).  Returns false when @rl is unlimited (the caller returns
 * VQS_RETRY: its round had the full budget).
 */
bool net_rate_again(struct vqs_queue *sq, struct ratelimit *rl,
		    uint64_t *wait_from);

#endif
