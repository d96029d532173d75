/* SPDX-License-Identifier: MIT */
/*
 * Memory barriers for rings shared with the guest (or a simulated driver).
 * The guest runs on other CPUs, so these must be real SMP fences, not just
 * compiler barriers, except where x86's TSO already gives the ordering:
 *   vmm_rmb: load->load   (x86: compiler barrier; loads are not reordered)
 *   vmm_wmb: store->store (x86: compiler barrier; stores are not reordered)
 *   vmm_mb:  store->load  (x86: mfence-class, the only reordering TSO allows)
 * Every call site names the barrier it pairs with.
 */
#ifndef VMM_UTIL_BARRIER_H
#define VMM_UTIL_BARRIER_H

#define vmm_rmb() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define vmm_wmb() __atomic_thread_fence(__ATOMIC_RELEASE)
#define vmm_mb() __atomic_thread_fence(__ATOMIC_SEQ_CST)

#define READ_ONCE(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

#endif
