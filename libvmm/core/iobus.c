/* SPDX-License-Identifier: MIT */
/*
 * Range dispatch for port and memory-mapped I/O exits.  A sorted array with
 * binary search: the number of ranges is small (tens to a few hundred BARs),
 * lookups vastly outnumber updates, and a flat array is cache friendly.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iobus.h"

int iobus_init(struct iobus *bus, const char *name)
{
	int ret;

	memset(bus, 0, sizeof(*bus));
	bus->name = name;
	ret = pthread_rwlock_init(&bus->lock, NULL);
	return -ret;
}

void iobus_destroy(struct iobus *bus)
{
	free(bus->ranges);
	bus->ranges = NULL;
	bus->nr = bus->cap = 0;
	pthread_rwlock_destroy(&bus->lock);
}

/* Index of the first range whose end is above @addr (caller holds lock). */
static unsigned int iobus_lower_bound(const struct iobus *bus, uint64_t addr)
{
	unsigned int lo = 0, hi = bus->nr;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		const struct iobus_range *r = &bus->ranges[mid];

		if (addr - r->base >= r->len && addr >= r->base)
			lo = mid + 1; /* range lies entirely below addr */
		else if (addr < r->base)
			hi = mid;
		else
			return mid; /* addr inside r */
	}
	return lo;
}

static int iobus_add(struct iobus *bus, uint64_t base, uint64_t len, iobus_fn fn,
		     void *opaque, bool unlocked)
{
	unsigned int i;
	int ret = 0;

	if (!fn || len == 0 || base + len < base)
		return -EINVAL;
	pthread_rwlock_wrlock(&bus->lock);
	i = iobus_lower_bound(bus, base);
	/* ranges[i] is the first range ending above base: it must start at or
	 * after our end, and ranges[i-1] ends at or before base by construction. */
	if (i < bus->nr && bus->ranges[i].base < base + len) {
		ret = -EEXIST;
		goto out;
	}
	if (bus->nr == bus->cap) {
		unsigned int cap = bus->cap ? bus->cap * 2 : 16;
		struct iobus_range *n = realloc(bus->ranges, cap * sizeof(*n));

		if (!n) {
			ret = -ENOMEM;
			goto out;
		}
		bus->ranges = n;
		bus->cap = cap;
	}
	memmove(&bus->ranges[i + 1], &bus->ranges[i],
		(bus->nr - i) * sizeof(bus->ranges[0]));
	bus->ranges[i] = (struct iobus_range){ base, len, fn, opaque, unlocked };
	bus->nr++;
out:
	pthread_rwlock_unlock(&bus->lock);
	return ret;
}

int iobus_register(struct iobus *bus, uint64_t base, uint64_t len, iobus_fn fn,
		   void *opaque)
{
	return iobus_add(bus, base, len, fn, opaque, false);
}

int iobus_register_unlocked(struct iobus *bus, uint64_t base, uint64_t len,
			    iobus_fn fn, void *opaque)
{
	return iobus_add(bus, base, len, fn, opaque, true);
}

int iobus_unregister(struct iobus *bus, uint64_t base)
{
	unsigned int i;
	int ret = -ENOENT;

	pthread_rwlock_wrlock(&bus->lock);
	i = iobus_lower_bound(bus, base);
	if (i < bus->nr && bus->ranges[i].base == base) {
		memmove(&bus->ranges[i], &bus->ranges[i + 1],
			(bus->nr - i - 1) * sizeof(bus->ranges[0]));
		bus->nr--;
		ret = 0;
	}
	pthread_rwlock_unlock(&bus->lock);
	return ret;
}

int iobus_dispatch(struct iobus *bus, uint64_t addr, void *data, uint32_t len,
		   bool is_write)
{
	const struct iobus_range *r;
	struct iobus_range copy = { 0 };
	unsigned int i;
	int ret = -ENOENT;

	pthread_rwlock_rdlock(&bus->lock);
	i = iobus_lower_bound(bus, addr);
	if (i < bus->nr) {
		r = &bus->ranges[i];
		/* The whole access must be inside the range (guest-controlled
		 * addr/len; len is at most 8 from KVM). */
		if (addr >= r->base && len <= r->len &&
		    addr - r->base <= r->len - len) {
			if (r->unlocked)
				copy = *r; /* called below, without the lock */
			else
				r->fn(r->opaque, addr - r->base, data, len, is_write);
			ret = 0;
		}
	}
	pthread_rwlock_unlock(&bus->lock);
	if (copy.fn)
		copy.fn(copy.opaque, addr - copy.base, data, len, is_write);
	if (ret && !is_write)
		memset(data, 0xff, len);
	return ret;
}
