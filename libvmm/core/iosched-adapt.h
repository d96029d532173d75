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
 *  - A wake IOSA_IDLE_NS or more after the last one: the load that taught
 *    the state above has ended; start afresh, as at init (BATCH, the
 *    first probe interval).  Without it a stream that follows a phase of
 *    lone requests begins NORMAL with the probe backed off to
 *    IOSA_PROBE_MAX, and each of its kicks, served at once, finds one
 *    request: it stays NORMAL for up to IOSA_PROBE_MAX of its wakes,
 *    long enough (hundreds of ms) for a guest's TCP to settle into a
 *    kick per few packets, which outlasts the switch.  A steady load's
 *    wakes are never that far apart, so only the start of a load after
 *    an idle spell pays: up to IOSA_LONELY lone wakes under BATCH.  A
 *    load sparser than one wake per IOSA_IDLE_NS runs BATCH throughout:
 *    free while the kicking vCPU then idles, a wait for its time slice
 *    where it goes on computing (as under the batch policy).
 *
 * A policy change costs the caller one sched_setscheduler(); nothing else
 * here makes a system call (the caller reads the clock for each wake).
 */
#ifndef VMM_IOSCHED_ADAPT_H
#define VMM_IOSCHED_ADAPT_H

#include <stdbool.h>
#include <stdint.h>

#define IOSA_LONELY 16	  /* lone wakes before BATCH -> NORMAL */
#define IOSA_PROBE 4	  /* batch-policy wakes a probe lasts */
#define IOSA_PROBE_MIN 32 /* NORMAL wakes before the first probe */
#define IOSA_PROBE_MAX 256 /* ... and at most, after failed probes */
/* A gap between wakes that ends a load: far above the wake intervals of
 * any steady one (a QD-1 disk or an echo test in the rig wake every
 * 0.1-3 ms), far below a person's pauses. */
#define IOSA_IDLE_NS (100ull * 1000 * 1000)

struct iosched_adapt {
	bool batch;		/* the policy now */
	bool probing;		/* BATCH for a probe out of NORMAL */
	uint32_t count;		/* lone wakes (BATCH) or NORMAL wakes */
	uint32_t probe_every;	/* NORMAL wakes before the next probe */
	uint64_t last_ns;	/* the last wake's time (0: none yet) */
	uint64_t switches;	/* policy changes (statistics) */
};

/* Start in BATCH (a deep queue's first wakes are batched). */
void iosched_adapt_init(struct iosched_adapt *a);

/*
 * One wake-up by a kick that found the queue @found requests deep, at
 * @now_ns (CLOCK_MONOTONIC, non-decreasing; non-zero).  Returns true if
 * the policy changed (a->batch is the new one).  Context: the owning I/O
 * thread (or a unit test).
 */
bool iosched_adapt_wake(struct iosched_adapt *a, uint32_t found,
			uint64_t now_ns);

#endif
