/* SPDX-License-Identifier: MIT */
/*
 * PIO / MMIO dispatch: a sorted table of non-overlapping [base, base+len)
 * ranges, each with a handler.  A VM has two buses (PIO and MMIO); devices
 * register ranges explicitly.  Lookups (from any vCPU thread) take a read
 * lock; register/unregister take the write lock, so a handler must never
 * (un)register on the bus it is being called from (it may on the other bus:
 * a PCI config write on the PIO bus moves a BAR on the MMIO bus) -- unless
 * its range was registered with iobus_register_unlocked().
 */
#ifndef VMM_IOBUS_H
#define VMM_IOBUS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/compiler.h"

/*
 * Handler for an access at @off bytes into the registered range.
 * @data holds @len (1, 2, 4 or 8; MMIO may be up to 8) bytes: the value to
 * write, or the buffer to fill on a read.  Little-endian, as on the guest.
 * Context: vCPU thread (or a unit test).
 */
typedef void (*iobus_fn)(void *opaque, uint64_t off, void *data, uint32_t len,
			 bool is_write);

struct iobus_range {
	uint64_t base;
	uint64_t len;
	iobus_fn fn;
	void *opaque;
	bool unlocked; /* iobus_register_unlocked() */
};

struct iobus {
	pthread_rwlock_t lock; /* protects ranges/nr/cap */
	struct iobus_range *ranges; /* sorted by base, non-overlapping */
	unsigned int nr, cap;
	const char *name; /* "pio" / "mmio", for messages */
};

int iobus_init(struct iobus *bus, const char *name) __must_check;
void iobus_destroy(struct iobus *bus);

/*
 * Returns 0, -EINVAL for len 0 / wrap-around / NULL fn, -EEXIST when the
 * range overlaps a registered one, -ENOMEM.
 */
int iobus_register(struct iobus *bus, uint64_t base, uint64_t len, iobus_fn fn,
		   void *opaque) __must_check;

/*
 * As iobus_register(), but the handler runs after the bus lock is dropped,
 * so it may (un)register ranges on this same bus: a PCI ECAM window on the
 * MMIO bus, whose configuration writes map and move BARs there.  In
 * exchange @opaque and the handler must stay valid until the bus itself is
 * destroyed (an access may still be running after iobus_unregister()
 * returns).  Same errors as iobus_register().
 */
int iobus_register_unlocked(struct iobus *bus, uint64_t base, uint64_t len,
			    iobus_fn fn, void *opaque) __must_check;

/* Removes the range registered at exactly @base. Returns 0 or -ENOENT. */
int iobus_unregister(struct iobus *bus, uint64_t base);

/*
 * Dispatches one access; the whole access must lie inside one range.
 * Returns 0 if handled, -ENOENT if no range covers it (reads then return
 * all-ones, as unclaimed bus cycles do on PC hardware; writes are dropped).
 */
int iobus_dispatch(struct iobus *bus, uint64_t addr, void *data, uint32_t len,
		   bool is_write);

#endif
