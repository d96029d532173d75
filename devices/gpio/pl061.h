/* SPDX-License-Identifier: MIT */
/*
 * An ARM PrimeCell PL061 GPIO controller (8 lines) on MMIO, the part a
 * guest's driver (Linux: drivers/gpio/gpio-pl061.c, matched on the AMBA
 * bus by its peripheral ID) uses to read input lines and take their
 * interrupts: the power key of a device-tree machine (gpio-keys).
 *
 *   0x000-0x3fc GPIODATA   address bits 9:2 mask the lines an access sees;
 *                          a write changes the masked output lines only
 *   0x400 GPIODIR  1 = output        0x404 GPIOIS   1 = level-sensitive
 *   0x408 GPIOIBE  1 = both edges    0x40c GPIOIEV  1 = rising edge/high
 *   0x410 GPIOIE   1 = unmasked      0x414 GPIORIS  raw status (RO)
 *   0x418 GPIOMIS  RIS & IE (RO)     0x41c GPIOIC   write 1 clears an edge
 *   0x420 GPIOAFSEL stored           0xfe0-0xffc peripheral and PrimeCell IDs
 *
 * The interrupt output is the OR of GPIOMIS.  Accesses of any width and
 * offset are taken byte by byte over 32-bit registers; offsets nothing is
 * at read 0, and writes there are ignored.
 */
#ifndef VMM_GPIO_PL061_H
#define VMM_GPIO_PL061_H

#include <stdint.h>

#include "iobus.h"
#include "util/compiler.h"

#define PL061_SIZE 0x1000u
#define PL061_NR_LINES 8u
#define PL061_DIR 0x400u
#define PL061_IS 0x404u
#define PL061_IBE 0x408u
#define PL061_IEV 0x40cu
#define PL061_IE 0x410u
#define PL061_RIS 0x414u
#define PL061_MIS 0x418u
#define PL061_IC 0x41cu
#define PL061_AFSEL 0x420u
#define PL061_ID_BASE 0xfe0u

struct pl061;

/*
 * pl061_create - register [@base, @base + PL061_SIZE) on @mmio.
 * @irq: called with the interrupt output's new level on each change, from
 *       the thread that changed it (a vCPU's register write, or a caller
 *       of pl061_set_input()/pl061_pulse_input()), the device lock held;
 *       it must not call back into the device.
 * Returns 0, -EINVAL (NULL @mmio/@irq/@out), -ENOMEM, -EEXIST (range taken).
 */
int pl061_create(struct iobus *mmio, uint64_t base,
		 void (*irq)(void *opaque, int level), void *opaque,
		 struct pl061 **out) __must_check;

/* Drive input line @line (< PL061_NR_LINES) to @level: edge or level
 * detection as the guest configured it.  -EINVAL for a bad @line.
 * Context: any thread. */
int pl061_set_input(struct pl061 *d, unsigned int line, int level);

/*
 * A key press and release on input line @line: the line goes high, and
 * goes low again once the guest has read GPIODATA with the line in the
 * mask while high -- its driver then saw the press, and the falling edge
 * tells it of the release.  Needs no timer; a guest that never reads the
 * line keeps it high (a second pulse is then not seen, as a key held
 * down).  -EINVAL for a bad @line.  Context: any thread.
 */
int pl061_pulse_input(struct pl061 *d, unsigned int line);

/* Unregisters the range and frees @d.  NULL-safe.  No vCPU may be running. */
void pl061_destroy(struct pl061 *d);

#endif
