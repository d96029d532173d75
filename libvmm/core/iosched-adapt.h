/* SPDX-License-Identifier: MIT */
/*
 * The adaptive I/O-thread policy's decision (vmm_set_iothread_sched(),
 * VMM_IOTHREAD_SCHED_ADAPTIVE): a pure state machine fed, per I/O thread,
 * with how deep its queue was at each wake-up by a kick (requests waiting
 * plus those in service: the queue service's count) -- or, for a queue
 * the device fills (a NIC's RX), how many entries one round filled when
 * two or more (vq-service.c, fill_note()) -- answering
 * whether the thread should now run as SCHED_BATCH or SCHED_OTHER.
 *
 * Why: where vCPUs and I/O threads share a CPU, SCHED_BATCH lets the
 * kicking vCPU go on queueing, so a deep queue is served in batches with
 * few kicks and interrupts; but a lone request then waits for the vCPU to
 * idle.  SCHED_OTHER serves a lone request at once but, under a deep
 * queue, preempts the vCPU at every kick, so every wake finds one request
 * waiting -- the same signal as a shallow queue, hence the requests in
 * service count too.  Then:
 *
 *  - BATCH, wakes find batches (>= 2 requests): stay.
 *  - BATCH, IOSA_LONELY consecutive wakes find <= 1: the queue is shallow;
 *    go NORMAL.
 *  - NORMAL, a wake finds a batch: go BATCH at once.
 *  - NORMAL for probe_every wakes: probe, i.e. go BATCH for up to
 *    IOSA_PROBE wakes.  A probe that sees a batch stays BATCH and resets
 *    probe_every to IOSA_PROBE_MIN; one that does not goes back to NORMAL
 *    and doubles probe_every (at most IOSA_PROBE_MAX), so a steady shallow
 *    queue pays IOSA_PROBE batch-policy wakes per up to IOSA_PROBE_MAX.
 *
 * A policy change costs the caller one sched_setscheduler(); nothing else
 * here makes a system call.
 */
#ifndef VMM_IOSCHED_ADAPT_H
#define VMM_IOSCHED_ADAPT_H

#include <stdbool.h>
#include <stdint.h>

#define IOSA_LONELY 16	  /* lone wakes before BATCH -> NORMAL */
#define IOSA_PROBE 4	  /* batch-policy wakes a probe lasts */
#define IOSA_PROBE_MIN 32 /* NORMAL wakes before the first probe */
#define IOSA_PROBE_MAX 256 /* ... and at most, after failed probes */

struct iosched_adapt {
	bool batch;		/* the policy now */
	bool probing;		/* BATCH for a probe out of NORMAL */
	uint32_t count;		/* lone wakes (BATCH) or NORMAL wakes */
	uint32_t probe_every;	/* NORMAL wakes before the next probe */
	uint64_t switches;	/* policy changes (statistics) */
};

/* Start in BATCH (a deep queue's first wakes are batched). */
void iosched_adapt_init(struct iosched_adapt *a);

/*
 * One wake-up by a kick that found the queue @found requests deep.  Returns true
 * if the policy changed (a->batch is the new one).  Context: the owning
 * I/O thread (or a unit test).
 */
bool iosched_adapt_wake(struct iosched_adapt *a, uint32_t found);

#endif
