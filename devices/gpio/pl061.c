/* SPDX-License-Identifier: MIT */
/* ARM PrimeCell PL061 GPIO controller (see pl061.h). */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "gpio/pl061.h"

/* 0xfe0-0xfec: peripheral ID 0x00041061 (part 0x061, designer ARM 0x41,
 * revision 0); 0xff0-0xffc: the PrimeCell ID 0xb105f00d.  One byte each,
 * in bits 7:0 of its word. */
static const uint8_t pl061_ids[8] = { 0x61, 0x10, 0x04, 0x00,
				      0x0d, 0xf0, 0x05, 0xb1 };

struct pl061 {
	struct iobus *mmio;
	uint64_t base;
	void (*irq)(void *opaque, int level);
	void *opaque;
	/* Any vCPU, and the machine's input calls, reach the registers. */
	pthread_mutex_t lock;
	uint8_t data;	/* output latch */
	uint8_t in;	/* input lines as the machine drives them */
	uint8_t dir, is, ibe, iev, ie, afsel;
	uint8_t edges;	/* latched edge status (the RIS bits of edge lines) */
	uint8_t pulse;	/* lines to lower once the guest read them high */
	bool irq_level;
};

/* The lines' levels: outputs show the latch, inputs what is driven. */
static uint8_t pins(const struct pl061 *d)
{
	return (uint8_t)((d->data & d->dir) | (d->in & ~d->dir));
}

static uint8_t ris(const struct pl061 *d)
{
	uint8_t level_match = (uint8_t)~(pins(d) ^ d->iev);

	return (uint8_t)((d->edges & ~d->is) | (level_match & d->is));
}

/* Lock held: the output follows RIS & IE; the callback only on a change. */
static void update_irq(struct pl061 *d)
{
	bool level = (ris(d) & d->ie) != 0;

	if (level != d->irq_level)
		d->irq(d->opaque, level);
	d->irq_level = level;
}

/* Lock held: latch the edges between the lines' levels @old and now that
 * the edge-sensitive lines' IBE/IEV ask for, then drive the output. */
static void lines_changed(struct pl061 *d, uint8_t old)
{
	uint8_t now = pins(d), changed = old ^ now;
	uint8_t rise = changed & now, fall = changed & old;
	uint8_t hit = (uint8_t)((changed & d->ibe) |
				(rise & d->iev & ~d->ibe) |
				(fall & ~d->iev & ~d->ibe));

	d->edges |= hit & (uint8_t)~d->is;
	update_irq(d);
}

/* Lock held.  GPIODATA at @off: the mask comes from address bits 9:2. */
static uint8_t reg_read(struct pl061 *d, uint32_t off)
{
	uint8_t mask, v, released;

	if (off < PL061_DIR) {
		mask = (uint8_t)(off >> 2);
		v = pins(d) & mask;
		/* A pulsed line the guest has now seen high: released. */
		released = d->pulse & mask & d->in;
		if (released) {
			uint8_t old = pins(d);

			d->pulse &= (uint8_t)~released;
			d->in &= (uint8_t)~released;
			lines_changed(d, old);
		}
		return v;
	}
	switch (off) {
	case PL061_DIR: return d->dir;
	case PL061_IS: return d->is;
	case PL061_IBE: return d->ibe;
	case PL061_IEV: return d->iev;
	case PL061_IE: return d->ie;
	case PL061_RIS: return ris(d);
	case PL061_MIS: return ris(d) & d->ie;
	case PL061_AFSEL: return d->afsel;
	default:
		if (off >= PL061_ID_BASE && off < PL061_SIZE)
			return pl061_ids[(off - PL061_ID_BASE) / 4];
		return 0; /* GPIOIC (write-only) and the reserved words */
	}
}

/* Lock held.  Writes to read-only or reserved words are ignored. */
static void reg_write(struct pl061 *d, uint32_t off, uint8_t v)
{
	uint8_t old = pins(d), *r;

	if (off < PL061_DIR) {
		uint8_t mask = (uint8_t)(off >> 2);

		d->data = (uint8_t)((d->data & ~mask) | (v & mask));
		lines_changed(d, old);
		return;
	}
	switch (off) {
	case PL061_DIR: r = &d->dir; break;
	case PL061_IS: r = &d->is; break;
	case PL061_IBE: r = &d->ibe; break;
	case PL061_IEV: r = &d->iev; break;
	case PL061_IE: r = &d->ie; break;
	case PL061_AFSEL: r = &d->afsel; break;
	case PL061_IC:
		d->edges &= (uint8_t)~v;
		update_irq(d);
		return;
	default:
		return;
	}
	*r = v;
	/* A direction change moves a line between latch and input. */
	lines_changed(d, old);
}

/* Context: vCPU thread.  Guest-chosen offset and width: byte by byte; the
 * registers are 8 bits wide in the low byte of their word, the other
 * bytes read 0 and ignore writes. */
static void pl061_mmio(void *opaque, uint64_t off, void *data, uint32_t len,
		       bool is_write)
{
	struct pl061 *d = opaque;
	uint8_t *b = data;

	pthread_mutex_lock(&d->lock);
	for (uint32_t i = 0; i < len; i++) {
		uint64_t o = off + i;
		bool reg = o < PL061_SIZE && !(o & 3);

		if (is_write) {
			if (reg)
				reg_write(d, (uint32_t)o, b[i]);
		} else {
			b[i] = reg ? reg_read(d, (uint32_t)o) : 0;
		}
	}
	pthread_mutex_unlock(&d->lock);
}

int pl061_create(struct iobus *mmio, uint64_t base,
		 void (*irq)(void *opaque, int level), void *opaque,
		 struct pl061 **out)
{
	struct pl061 *d;
	int ret;

	if (!mmio || !irq || !out)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	ret = -pthread_mutex_init(&d->lock, NULL);
	if (ret) {
		free(d);
		return ret;
	}
	d->mmio = mmio;
	d->base = base;
	d->irq = irq;
	d->opaque = opaque;
	ret = iobus_register(mmio, base, PL061_SIZE, pl061_mmio, d);
	if (ret) {
		pthread_mutex_destroy(&d->lock);
		free(d);
		return ret;
	}
	*out = d;
	return 0;
}

/* Any thread: input line @line to @level; @pulse: released on the
 * guest's next read of it (pl061_pulse_input()). */
static int drive(struct pl061 *d, unsigned int line, int level, bool pulse)
{
	uint8_t bit, old;

	if (!d || line >= PL061_NR_LINES)
		return -EINVAL;
	bit = (uint8_t)(1u << line);
	pthread_mutex_lock(&d->lock);
	old = pins(d);
	d->pulse = pulse ? (uint8_t)(d->pulse | bit) : (uint8_t)(d->pulse & ~bit);
	d->in = level ? (uint8_t)(d->in | bit) : (uint8_t)(d->in & ~bit);
	lines_changed(d, old);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

int pl061_set_input(struct pl061 *d, unsigned int line, int level)
{
	return drive(d, line, level, false);
}

int pl061_pulse_input(struct pl061 *d, unsigned int line)
{
	return drive(d, line, 1, true);
}

void pl061_destroy(struct pl061 *d)
{
	if (!d)
		return;
	iobus_unregister(d->mmio, d->base);
	pthread_mutex_destroy(&d->lock);
	free(d);
}
