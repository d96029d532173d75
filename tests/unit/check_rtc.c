/* SPDX-License-Identifier: MIT */
/* CMOS RTC: time registers from the host clock, status registers Linux
 * polls, setting the clock (SET mode and direct writes), CMOS RAM. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "iobus.h"
#include "legacy/rtc.h"
#include "sandbox.h"
#include "vmm/vmm.h"

static struct iobus pio;
static struct rtc *rtc;

static uint8_t rd(uint8_t reg)
{
	uint8_t v = reg, d = 0;

	ck_assert_int_eq(iobus_dispatch(&pio, 0x70, &v, 1, true), 0);
	ck_assert_int_eq(iobus_dispatch(&pio, 0x71, &d, 1, false), 0);
	return d;
}

static void wr(uint8_t reg, uint8_t val)
{
	ck_assert_int_eq(iobus_dispatch(&pio, 0x70, &reg, 1, true), 0);
	ck_assert_int_eq(iobus_dispatch(&pio, 0x71, &val, 1, true), 0);
}

static unsigned int bcd(uint8_t v)
{
	return (v >> 4) * 10u + (v & 0xf);
}

/* The RTC's time (BCD, 24 h, as Linux reads it) in seconds since 1970. */
static time_t rtc_time(void)
{
	struct tm tm = { 0 };

	tm.tm_sec = (int)bcd(rd(0));
	tm.tm_min = (int)bcd(rd(2));
	tm.tm_hour = (int)bcd(rd(4));
	tm.tm_mday = (int)bcd(rd(7));
	tm.tm_mon = (int)bcd(rd(8)) - 1;
	tm.tm_year = (int)(bcd(rd(0x32)) * 100 + bcd(rd(9))) - 1900;
	return timegm(&tm);
}

static void setup(void)
{
	ck_assert_int_eq(iobus_init(&pio, "pio"), 0);
	ck_assert_int_eq(rtc_create(&pio, &rtc), 0);
}

static void teardown(void)
{
	rtc_destroy(rtc);
	iobus_destroy(&pio);
}

START_TEST(test_status_registers)
{
	/* What Linux checks: UIP clear, 24-hour mode, valid RAM and time. */
	ck_assert_int_eq(rd(0x0a) & 0x80, 0);
	ck_assert_int_eq(rd(0x0b) & 0x02, 0x02);
	ck_assert_int_eq(rd(0x0c), 0);
	ck_assert_int_eq(rd(0x0d), 0x80);
	/* UIP stays clear whatever is written; C and D are read-only */
	wr(0x0a, 0xff);
	ck_assert_int_eq(rd(0x0a), 0x7f);
	wr(0x0c, 0xff);
	wr(0x0d, 0x00);
	ck_assert_int_eq(rd(0x0c), 0);
	ck_assert_int_eq(rd(0x0d), 0x80);
}
END_TEST

START_TEST(test_host_time)
{
	time_t now = time(NULL), t = rtc_time();

	ck_assert_msg(t >= now - 2 && t <= now + 2, "rtc %lld host %lld",
		      (long long)t, (long long)now);
}
END_TEST

START_TEST(test_binary_12h)
{
	struct tm tm;
	time_t now = time(NULL);
	unsigned int h;

	gmtime_r(&now, &tm);
	wr(0x0b, 0x04); /* binary, 12-hour */
	h = rd(4);
	ck_assert_uint_eq((h & 0x7f) % 12, (unsigned int)tm.tm_hour % 12);
	ck_assert_uint_eq(!!(h & 0x80), tm.tm_hour >= 12);
	ck_assert_uint_le(rd(0), 59); /* binary seconds */
	ck_assert_uint_eq(rd(8), (unsigned int)tm.tm_mon + 1);
}
END_TEST

START_TEST(test_set_mode)
{
	/* mc146818_set_time(): SET, write the fields, clear SET. */
	wr(0x0b, 0x82);
	wr(0, 0x30);
	wr(2, 0x15);
	wr(4, 0x10);
	wr(7, 0x24);
	wr(8, 0x12);
	wr(9, 0x99);
	ck_assert_int_eq(rd(0), 0x30); /* frozen while SET */
	wr(0x0b, 0x02);
	/* 1999-12-24 10:15:30 UTC, and running from there */
	ck_assert_int_le(llabs((long long)rtc_time() - 946030530LL), 2);
	ck_assert_int_eq(bcd(rd(0x32)), 19);
}
END_TEST

/* Set @t through SET mode, then check what reads back. */
static void set_and_check(int y, int mo, int d, int h, int mi, int sec,
			  int wday)
{
	struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d,
			 .tm_hour = h, .tm_min = mi, .tm_sec = sec };
	time_t want = timegm(&tm);

#define B(v) (uint8_t)(((v) / 10) << 4 | (v) % 10)
	wr(0x0b, 0x82);
	wr(0, B(sec));
	wr(2, B(mi));
	wr(4, B(h));
	wr(7, B(d));
	wr(8, B(mo));
	wr(9, B(y % 100));
	wr(0x0b, 0x02);
#undef B
	ck_assert_int_le(llabs((long long)(rtc_time() - want)), 2);
	/* the weekday register counts from Sunday = 1 */
	if (rd(0) >= 0x02 && rd(0) < 0x58) /* not about to roll over */
		ck_assert_int_eq(bcd(rd(6)), wday + 1);
}

START_TEST(test_calendar)
{
	set_and_check(2000, 2, 29, 12, 0, 0, 2);	/* leap day, Tuesday */
	set_and_check(2024, 2, 29, 0, 0, 10, 4);	/* Thursday */
	set_and_check(2069, 12, 31, 23, 0, 0, 2);	/* last 20xx year */
	set_and_check(1970, 1, 1, 0, 0, 5, 4);	/* the epoch, Thursday */
	set_and_check(1999, 12, 31, 22, 59, 30, 5);	/* Friday */
	set_and_check(2038, 1, 19, 3, 14, 7, 2);	/* past 32-bit time_t */
}
END_TEST

/* The vCPU threads use the clock under their seccomp filter: nothing on
 * its path may open a file, as glibc's gmtime_r() and timegm() do (the
 * time zone) on first use.  Only port I/O in the confined thread; the
 * checks (which use those glibc calls) run after it. */
static uint8_t confined_regs[10];

static void *confined_io(void *arg)
{
	const struct sandbox *sb = arg;

	if (sandbox_install(sb, SANDBOX_CLASS_VCPU))
		return (void *)1;
	/* killed here (SIGSYS) if the RTC made a forbidden call */
	wr(0x0b, 0x82);
	wr(9, 0x30);
	wr(8, 0x06);
	wr(7, 0x15);
	wr(4, 0x12); /* noon: far from a change of date */
	wr(0x0b, 0x02);
	wr(0x0b, 0x06); /* binary: re-encodes on the next read */
	for (unsigned int i = 0; i < 10; i++)
		confined_regs[i] = rd((uint8_t)i);
	return NULL;
}

START_TEST(test_under_vcpu_filter)
{
	struct sandbox *sb;
	pthread_t t;
	void *ret;

	ck_assert_int_eq(sandbox_build(VMM_SECCOMP_KILL, &sb), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, confined_io, sb), 0);
	ck_assert_int_eq(pthread_join(t, &ret), 0);
	ck_assert_ptr_null(ret);
	sandbox_free(sb);
	ck_assert_int_eq(confined_regs[9], 30);
	ck_assert_int_eq(confined_regs[8], 6);
	ck_assert_int_eq(confined_regs[7], 15);
	ck_assert_int_eq(confined_regs[6], 7); /* 2030-06-15: a Saturday */
}
END_TEST

START_TEST(test_direct_write)
{
	time_t now = time(NULL);
	struct tm tm;
	unsigned int year;

	/* Writing the year alone moves the clock by whole years. */
	gmtime_r(&now, &tm);
	year = (unsigned int)tm.tm_year + 1900 + 2;
	wr(9, (uint8_t)((year % 100 / 10) << 4 | year % 10));
	ck_assert_uint_eq(bcd(rd(0x32)) * 100 + bcd(rd(9)), year);
	ck_assert_int_gt((long long)rtc_time(), (long long)now + 365 * 86400);
}
END_TEST

START_TEST(test_cmos_ram)
{
	uint8_t v = 0;

	wr(0x40, 0x5a);
	wr(0x7f, 0xa5);
	ck_assert_int_eq(rd(0x40), 0x5a);
	ck_assert_int_eq(rd(0x7f), 0xa5);
	wr(0xc0, 0x11); /* index bit 7 (NMI mask) is not part of the index */
	ck_assert_int_eq(rd(0x40), 0x11);
	/* the index port reads as nothing */
	ck_assert_int_eq(iobus_dispatch(&pio, 0x70, &v, 1, false), 0);
	ck_assert_int_eq(v, 0xff);
}
END_TEST

START_TEST(test_create_errors)
{
	struct rtc *r;

	ck_assert_int_eq(rtc_create(NULL, &r), -EINVAL);
	ck_assert_int_eq(rtc_create(&pio, NULL), -EINVAL);
	ck_assert_int_eq(rtc_create(&pio, &r), -EEXIST);
	rtc_destroy(NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rtc");
	TCase *tc = tcase_create("rtc");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_status_registers);
	tcase_add_test(tc, test_host_time);
	tcase_add_test(tc, test_binary_12h);
	tcase_add_test(tc, test_set_mode);
	tcase_add_test(tc, test_direct_write);
	tcase_add_test(tc, test_calendar);
	tcase_add_test(tc, test_under_vcpu_filter);
	tcase_add_test(tc, test_cmos_ram);
	tcase_add_test(tc, test_create_errors);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
