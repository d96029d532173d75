/* SPDX-License-Identifier: MIT */
/*
 * MC146818 CMOS real-time clock at ports 0x70 (index; bit 7 is the NMI
 * mask, ignored) and 0x71 (data), as much of it as Linux uses:
 *  - time and date registers 0x00-0x09: UTC from the host's clock plus an
 *    offset the guest sets by writing them (with or without status B's SET
 *    bit, as mc146818_set_time() and hwclock do); BCD or binary and 24- or
 *    12-hour, as the guest selects in status B;
 *  - status A: rate/divider bits as written, UIP (bit 7) never set;
 *  - status B: as written (power-on value 24-hour BCD, 0x02);
 *  - status C: no interrupt flag is ever set; status D: VRT (valid);
 *  - the remaining 114 bytes of CMOS RAM, zero at power-on.
 *
 * Why it exists: without a clock at 0x70/0x71 the data port reads 0xFF,
 * whose UIP bit never clears, and Linux's mc146818_avoid_UIP() polls it for
 * a whole second (10,000 reads of status A, 20,000 port I/O exits) each
 * time it reads the clock (rtc_cmos probe, hctosys): half the port I/O
 * exits of a boot, and a second of guest busy-waiting.
 *
 * Not emulated: interrupts (IRQ 8).  Alarm, periodic and update-ended
 * interrupts are never raised, so a guest that sleeps until an RTC alarm
 * (rtcwake) sleeps forever; Linux's boot and timekeeping do not use them.
 */
#ifndef VMM_LEGACY_RTC_H
#define VMM_LEGACY_RTC_H

#include "iobus.h"
#include "util/compiler.h"

#define RTC_INDEX_PORT 0x70
#define RTC_DATA_PORT 0x71

struct rtc;

/*
 * rtc_create - register ports 0x70 and 0x71 on @pio.
 * Returns 0, -EINVAL (NULL @pio/@out), -ENOMEM, or -EEXIST (ports taken).
 */
int rtc_create(struct iobus *pio, struct rtc **out) __must_check;

/* Unregisters the ports and frees @r.  NULL-safe.  No vCPU may be running. */
void rtc_destroy(struct rtc *r);

#endif
