/* SPDX-License-Identifier: MIT */
/* ACPI PM1a event and control registers (see acpipm.h). */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "legacy/acpipm.h"

struct acpipm {
	struct iobus *pio;
	uint16_t port;
	unsigned int s5_typ;
	void (*poweroff)(void *opaque);
	void *opaque;
	/* The SCI line (acpipm_set_sci()), and its level as last set. */
	void (*sci)(void *opaque, int level);
	void *sci_opaque;
	bool sci_level;
	/* Any vCPU may access the registers: the lock makes a split
	 * (byte-wise) read-modify-write of one register consistent. */
	pthread_mutex_t lock;
	uint16_t regs[ACPIPM_REGS_LEN / 2]; /* STS, EN, CNT (SLP_TYP only) */
};

static uint16_t reg_read(const struct acpipm *d, unsigned int r)
{
	if (r == ACPIPM_PM1_CNT / 2)
		return (uint16_t)(d->regs[r] | ACPIPM_SCI_EN);
	return d->regs[r];
}

/* Drive the SCI from PM1_STS & PM1_EN: level-triggered, it stays up until
 * the guest clears the status bit or disables the event.  Lock held (the
 * callback only does KVM_IRQ_LINE). */
static void update_sci(struct acpipm *d)
{
	bool level = d->regs[ACPIPM_PM1_STS / 2] & d->regs[ACPIPM_PM1_EN / 2] &
		     ACPIPM_PWRBTN;

	if (d->sci && level != d->sci_level)
		d->sci(d->sci_opaque, level);
	d->sci_level = level;
}

/* A write of @v to register @r, @mask saying which of its bits the access
 * covered.  Returns true when it asks for S5.  Lock held. */
static bool reg_write(struct acpipm *d, unsigned int r, uint16_t v,
		      uint16_t mask)
{
	switch (r) {
	case ACPIPM_PM1_STS / 2:
		d->regs[r] &= (uint16_t)~(v & mask); /* write 1 to clear */
		return false;
	case ACPIPM_PM1_EN / 2:
		d->regs[r] = (uint16_t)((d->regs[r] & ~mask) | (v & mask));
		return false;
	default:
		/* Only SLP_TYP is kept: SCI_EN is fixed, SLP_EN is a
		 * command, the other bits mean nothing here. */
		mask &= ACPIPM_SLP_TYP_MASK | ACPIPM_SLP_EN;
		v &= mask;
		d->regs[r] = (uint16_t)((d->regs[r] & ~(mask & ACPIPM_SLP_TYP_MASK)) |
					(v & ACPIPM_SLP_TYP_MASK));
		return (v & ACPIPM_SLP_EN) &&
		       ((d->regs[r] & ACPIPM_SLP_TYP_MASK) >>
			ACPIPM_SLP_TYP_SHIFT) == d->s5_typ;
	}
}

/* Context: vCPU thread.  Guest-controlled offset and width (1, 2, 4
 * bytes, possibly across two registers): handled byte by byte. */
static void acpipm_io(void *opaque, uint64_t off, void *data, uint32_t len,
		      bool is_write)
{
	struct acpipm *d = opaque;
	uint8_t *b = data;
	bool off_now = false;

	pthread_mutex_lock(&d->lock);
	for (uint32_t i = 0; i < len; i++) {
		uint64_t o = off + i;
		unsigned int r = (unsigned int)(o / 2), sh = (unsigned int)(o % 2) * 8;

		if (o >= ACPIPM_REGS_LEN) {
			if (!is_write)
				b[i] = 0xff;
			continue;
		}
		if (!is_write)
			b[i] = (uint8_t)(reg_read(d, r) >> sh);
		else if (reg_write(d, r, (uint16_t)(b[i] << sh),
				   (uint16_t)(0xffu << sh)))
			off_now = true;
	}
	if (is_write)
		update_sci(d);
	pthread_mutex_unlock(&d->lock);
	if (off_now)
		d->poweroff(d->opaque);
}

int acpipm_create(struct iobus *pio, uint16_t port, unsigned int s5_typ,
		  void (*poweroff)(void *opaque), void *opaque,
		  struct acpipm **out)
{
	struct acpipm *d;
	int ret;

	if (!pio || !poweroff || !out || s5_typ > 7)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	ret = -pthread_mutex_init(&d->lock, NULL);
	if (ret) {
		free(d);
		return ret;
	}
	d->pio = pio;
	d->port = port;
	d->s5_typ = s5_typ;
	d->poweroff = poweroff;
	d->opaque = opaque;
	ret = iobus_register(pio, port, ACPIPM_LEN, acpipm_io, d);
	if (ret) {
		pthread_mutex_destroy(&d->lock);
		free(d);
		return ret;
	}
	*out = d;
	return 0;
}

void acpipm_set_sci(struct acpipm *d, void (*sci)(void *opaque, int level),
		    void *opaque)
{
	pthread_mutex_lock(&d->lock);
	d->sci = sci;
	d->sci_opaque = opaque;
	pthread_mutex_unlock(&d->lock);
}

void acpipm_power_button(struct acpipm *d)
{
	pthread_mutex_lock(&d->lock);
	d->regs[ACPIPM_PM1_STS / 2] |= ACPIPM_PWRBTN;
	update_sci(d);
	pthread_mutex_unlock(&d->lock);
}

void acpipm_destroy(struct acpipm *d)
{
	if (!d)
		return;
	iobus_unregister(d->pio, d->port);
	pthread_mutex_destroy(&d->lock);
	free(d);
}
