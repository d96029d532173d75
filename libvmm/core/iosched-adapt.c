/* SPDX-License-Identifier: MIT */
/* The adaptive I/O-thread policy's state machine (iosched-adapt.h). */
#include "iosched-adapt.h"

_Static_assert(IOSA_LONELY > 1, "a restart's wake must not leave BATCH");

void iosched_adapt_init(struct iosched_adapt *a)
{
	*a = (struct iosched_adapt){ .batch = true,
				     .probe_every = IOSA_PROBE_MIN };
}

static bool set(struct iosched_adapt *a, bool batch)
{
	a->batch = batch;
	a->count = 0;
	a->switches++;
	return true;
}

/* BATCH: a batch keeps it (and ends a probe as a success); lone wakes
 * accumulate towards NORMAL (fewer of them during a probe). */
static bool wake_batch(struct iosched_adapt *a, uint32_t found)
{
	if (found >= 2) {
		a->count = 0;
		if (a->probing) {
			a->probing = false;
			a->probe_every = IOSA_PROBE_MIN;
		}
		return false;
	}
	if (++a->count < (a->probing ? IOSA_PROBE : IOSA_LONELY))
		return false;
	if (a->probing) {
		a->probing = false;
		a->probe_every = a->probe_every * 2 > IOSA_PROBE_MAX ?
					 IOSA_PROBE_MAX : a->probe_every * 2;
	}
	return set(a, false);
}

/* NORMAL: a batch turns BATCH at once; lone wakes count to a probe. */
static bool wake_normal(struct iosched_adapt *a, uint32_t found)
{
	if (found >= 2) {
		/* Batches even under NORMAL: the queue is deep. */
		a->probe_every = IOSA_PROBE_MIN;
		return set(a, true);
	}
	if (++a->count < a->probe_every)
		return false;
	a->probing = true;
	return set(a, true);
}

bool iosched_adapt_wake(struct iosched_adapt *a, uint32_t found,
			uint64_t now_ns)
{
	bool changed = false;

	if (a->last_ns && now_ns - a->last_ns >= IOSA_IDLE_NS) {
		/* After an idle spell: the state at init, but the statistics
		 * go on, and a switch counts only if the policy changes. */
		uint64_t switches = a->switches;

		changed = !a->batch;
		iosched_adapt_init(a);
		a->switches = switches + changed;
	}
	a->last_ns = now_ns;
	/* The restart leaves BATCH with no lone wake counted: this wake
	 * cannot switch back (IOSA_LONELY > 1). */
	return (a->batch ? wake_batch(a, found) : wake_normal(a, found)) ||
	       changed;
}
