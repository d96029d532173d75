/* SPDX-License-Identifier: MIT */
/* MC146818 CMOS real-time clock (see rtc.h). */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "legacy/rtc.h"
#include "util/compiler.h"

/* Register indices (MC146818 datasheet; Linux's mc146818rtc.h names). */
#define REG_SECONDS 0x00
#define REG_MINUTES 0x02
#define REG_HOURS 0x04
#define REG_DAY_OF_WEEK 0x06
#define REG_DAY_OF_MONTH 0x07
#define REG_MONTH 0x08
#define REG_YEAR 0x09
#define REG_A 0x0a
#define REG_B 0x0b
#define REG_C 0x0c
#define REG_D 0x0d
#define REG_CENTURY 0x32 /* where PC firmware keeps it */
#define CMOS_SIZE 128

#define A_UIP 0x80
#define B_SET 0x80
#define B_DM_BINARY 0x04
#define B_24H 0x02
#define D_VRT 0x80
#define HOURS_PM 0x80 /* 12-hour mode */

/* Power-on values: 32.768 kHz time base, 1024 Hz rate; 24-hour BCD. */
#define A_DEFAULT 0x26
#define B_DEFAULT B_24H

struct rtc {
	struct iobus *pio;
	/* Taken by the vCPU threads; protects everything below. */
	pthread_mutex_t lock;
	uint8_t index;
	uint8_t ram[CMOS_SIZE]; /* time registers hold the SET-mode image */
	int64_t offset;	/* guest UTC seconds minus host UTC seconds */
};

static bool is_time_reg(unsigned int reg)
{
	/* Alarm registers 1, 3 and 5 are plain storage. */
	return reg <= REG_YEAR && reg != 1 && reg != 3 && reg != 5;
}

static uint8_t to_reg(const struct rtc *r, unsigned int v)
{
	if (r->ram[REG_B] & B_DM_BINARY)
		return (uint8_t)v;
	return (uint8_t)((v / 10) << 4 | v % 10);
}

/* Decodes a guest-written value; garbage gives garbage, never a crash. */
static unsigned int from_reg(const struct rtc *r, uint8_t v)
{
	if (r->ram[REG_B] & B_DM_BINARY)
		return v;
	return (v >> 4) * 10u + (v & 0xf);
}

static int64_t host_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec;
}

/*
 * Calendar arithmetic (proleptic Gregorian, UTC) by hand, because glibc's
 * gmtime_r() and timegm() initialise the time zone on first use: they open
 * /etc/localtime, which the vCPU threads' seccomp filter rightly kills.
 * Days from/to 1970-01-01: H. Hinnant's days_from_civil/civil_from_days.
 */
struct civil {
	int64_t year;
	unsigned int month, day, hour, min, sec, wday; /* month 1-12, wday 0 = Sunday */
};

static int64_t days_from_civil(int64_t y, unsigned int m, unsigned int d)
{
	int64_t era;
	unsigned int yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned int)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_secs(int64_t t, struct civil *c)
{
	int64_t days = (t >= 0 ? t : t - 86399) / 86400, era;
	unsigned int sod = (unsigned int)(t - days * 86400), doe, yoe, doy, mp;

	c->hour = sod / 3600;
	c->min = sod / 60 % 60;
	c->sec = sod % 60;
	c->wday = (unsigned int)((days % 7 + 11) % 7); /* 1970-01-01: Thursday */
	days += 719468;
	era = (days >= 0 ? days : days - 146096) / 146097;
	doe = (unsigned int)(days - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	c->day = doy - (153 * mp + 2) / 5 + 1;
	c->month = mp < 10 ? mp + 3 : mp - 9;
	c->year = (int64_t)yoe + era * 400 + (c->month <= 2);
}

/* The guest's current time into the time registers (and the century). */
static void rtc_latch(struct rtc *r)
{
	struct civil c;
	unsigned int year;

	civil_from_secs(host_now() + r->offset, &c);
	/* Two BCD digits of year and century: keep years 0..9999. */
	year = c.year < 0 ? 0 : c.year > 9999 ? 9999 : (unsigned int)c.year;
	r->ram[REG_SECONDS] = to_reg(r, c.sec);
	r->ram[REG_MINUTES] = to_reg(r, c.min);
	if (r->ram[REG_B] & B_24H)
		r->ram[REG_HOURS] = to_reg(r, c.hour);
	else
		r->ram[REG_HOURS] = (uint8_t)(to_reg(r, c.hour % 12 ? c.hour % 12 : 12) |
					      (c.hour >= 12 ? HOURS_PM : 0));
	r->ram[REG_DAY_OF_WEEK] = to_reg(r, c.wday + 1);
	r->ram[REG_DAY_OF_MONTH] = to_reg(r, c.day);
	r->ram[REG_MONTH] = to_reg(r, c.month);
	r->ram[REG_YEAR] = to_reg(r, year % 100);
	r->ram[REG_CENTURY] = to_reg(r, year / 100);
}

/* The time registers as the guest wrote them become the clock. */
static void rtc_commit(struct rtc *r)
{
	unsigned int hour = from_reg(r, r->ram[REG_HOURS] & 0x7f);
	unsigned int year = from_reg(r, r->ram[REG_YEAR]) % 100;
	unsigned int month = from_reg(r, r->ram[REG_MONTH]);
	unsigned int day = from_reg(r, r->ram[REG_DAY_OF_MONTH]);
	int64_t t;

	if (!(r->ram[REG_B] & B_24H)) {
		hour %= 12;
		if (r->ram[REG_HOURS] & HOURS_PM)
			hour += 12;
	}
	/* Nonsense (month 0 or 13, day 0) is clamped into range rather than
	 * trusted: the guest gets a wrong clock, the VMM no overflow. */
	month = MIN(MAX(month, 1u), 12u);
	day = MIN(MAX(day, 1u), 31u);
	/* Linux's rule without a firmware century: 70..99 are 19xx. */
	t = days_from_civil(year + (year < 70 ? 2000 : 1900), month, day) * 86400 +
	    (int64_t)hour * 3600 + (int64_t)from_reg(r, r->ram[REG_MINUTES]) * 60 +
	    (int64_t)from_reg(r, r->ram[REG_SECONDS]);
	r->offset = t - host_now();
}

/* Context: vCPU thread, r->lock held. */
static uint8_t rtc_read_reg(struct rtc *r, unsigned int reg)
{
	if ((is_time_reg(reg) || reg == REG_CENTURY) &&
	    !(r->ram[REG_B] & B_SET)) {
		rtc_latch(r);
		return r->ram[reg];
	}
	switch (reg) {
	case REG_A:
		return r->ram[REG_A] & (uint8_t)~A_UIP; /* never mid-update */
	case REG_C:
		return 0; /* no interrupt is ever pending */
	case REG_D:
		return D_VRT;
	default:
		return r->ram[reg];
	}
}

/* Context: vCPU thread, r->lock held.  @val is guest-controlled. */
static void rtc_write_reg(struct rtc *r, unsigned int reg, uint8_t val)
{
	bool was_set = r->ram[REG_B] & B_SET;

	if (is_time_reg(reg)) {
		/* Outside SET mode a write changes the running clock: the
		 * other fields keep their current values. */
		if (!was_set)
			rtc_latch(r);
		r->ram[reg] = val;
		if (!was_set)
			rtc_commit(r);
		return;
	}
	switch (reg) {
	case REG_B:
		/* Entering SET freezes the registers at the current time (the
		 * guest then overwrites them); leaving it starts the clock
		 * from them.  A mode change (BCD/binary, 12/24 h) re-encodes
		 * them on the next read. */
		if (!was_set && (val & B_SET))
			rtc_latch(r);
		r->ram[REG_B] = val;
		if (was_set && !(val & B_SET))
			rtc_commit(r);
		break;
	case REG_A:
		r->ram[REG_A] = val & (uint8_t)~A_UIP;
		break;
	case REG_C:
	case REG_D:
		break; /* read-only */
	default:
		r->ram[reg] = val;
		break;
	}
}

static void rtc_index_io(void *opaque, uint64_t off, void *data, uint32_t len,
			 bool is_write)
{
	struct rtc *r = opaque;

	if (!is_write) {
		memset(data, 0xff, len); /* write-only on a PC */
		return;
	}
	pthread_mutex_lock(&r->lock);
	/* The last byte wins; bit 7 masks NMIs on a PC, nothing here. */
	r->index = ((const uint8_t *)data)[len - 1] & (CMOS_SIZE - 1);
	pthread_mutex_unlock(&r->lock);
}

static void rtc_data_io(void *opaque, uint64_t off, void *data, uint32_t len,
			bool is_write)
{
	struct rtc *r = opaque;
	uint8_t *p = data;

	pthread_mutex_lock(&r->lock);
	for (uint32_t i = 0; i < len; i++) {
		if (is_write)
			rtc_write_reg(r, r->index, p[i]);
		else
			p[i] = rtc_read_reg(r, r->index);
	}
	pthread_mutex_unlock(&r->lock);
}

int rtc_create(struct iobus *pio, struct rtc **out)
{
	struct rtc *r;
	int ret;

	if (!pio || !out)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->pio = pio;
	r->ram[REG_A] = A_DEFAULT;
	r->ram[REG_B] = B_DEFAULT;
	ret = -pthread_mutex_init(&r->lock, NULL);
	if (ret)
		goto err_free;
	ret = iobus_register(pio, RTC_INDEX_PORT, 1, rtc_index_io, r);
	if (ret)
		goto err_mutex;
	ret = iobus_register(pio, RTC_DATA_PORT, 1, rtc_data_io, r);
	if (ret)
		goto err_index;
	*out = r;
	return 0;

err_index:
	iobus_unregister(pio, RTC_INDEX_PORT);
err_mutex:
	pthread_mutex_destroy(&r->lock);
err_free:
	free(r);
	return ret;
}

void rtc_destroy(struct rtc *r)
{
	if (!r)
		return;
	iobus_unregister(r->pio, RTC_DATA_PORT);
	iobus_unregister(r->pio, RTC_INDEX_PORT);
	pthread_mutex_destroy(&r->lock);
	free(r);
}
