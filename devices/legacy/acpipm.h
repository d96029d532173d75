/* SPDX-License-Identifier: MIT */
/*
 * ACPI fixed-hardware power management registers, the part a guest needs
 * to power itself off: the PM1a event block (PM1_STS, PM1_EN) and the PM1a
 * control block (PM1_CNT), as the FADT of libvmm/arch/x86/acpi.h describes them,
 * in one I/O range:
 *
 *   base + 0  PM1_STS  16 bits, write 1 to clear; PWRBTN_STS (bit 8) is set
 *                      by acpipm_power_button()
 *   base + 2  PM1_EN   16 bits, read/write; while PWRBTN_STS and PWRBTN_EN
 *                      are both set the SCI is asserted (level-triggered,
 *                      acpipm_set_sci())
 *   base + 4  PM1_CNT  16 bits: SCI_EN (bit 0) reads 1, the machine is in
 *                      ACPI mode from the start (the FADT has no SMI_CMD);
 *                      SLP_TYP (bits 12:10) is stored; writing SLP_EN
 *                      (bit 13, reads 0) with SLP_TYP = the \_S5_ value
 *                      calls poweroff().  Other sleep types are not in the
 *                      DSDT, so a guest never asks for them; such a write
 *                      is ignored (the guest's S-state code then spins or
 *                      gives up, as on a board without that state).
 *
 * Linux's poweroff (acpi_power_off -> acpi_enter_sleep_state(S5)) clears
 * PM1_STS, writes SLP_TYP, then SLP_TYP | SLP_EN: byte or word accesses.
 */
#ifndef VMM_LEGACY_ACPIPM_H
#define VMM_LEGACY_ACPIPM_H

#include <stdint.h>

#include "iobus.h"
#include "util/compiler.h"

/* Three 16-bit registers; the range is rounded to 8 bytes so that a dword
 * access at PM1_CNT stays inside it (bytes 6-7 read all-ones). */
#define ACPIPM_LEN 8u
#define ACPIPM_REGS_LEN 6u
#define ACPIPM_PM1_STS 0u
#define ACPIPM_PM1_EN 2u
#define ACPIPM_PM1_CNT 4u
#define ACPIPM_SCI_EN (1u << 0)
#define ACPIPM_PWRBTN (1u << 8) /* PWRBTN_STS in PM1_STS, PWRBTN_EN in PM1_EN */
#define ACPIPM_SLP_TYP_SHIFT 10
#define ACPIPM_SLP_TYP_MASK (7u << ACPIPM_SLP_TYP_SHIFT)
#define ACPIPM_SLP_EN (1u << 13)

struct acpipm;

/*
 * acpipm_create - register [@port, @port + ACPIPM_LEN) on @pio.
 * @s5_typ: the SLP_TYP value of \_S5_ (0..7)
 * @poweroff: called on the vCPU thread, no device lock held, when the guest
 *            enters S5; may be called again (another vCPU, a second write).
 * Returns 0, -EINVAL (NULL @pio/@poweroff/@out, @s5_typ > 7), -ENOMEM,
 * -EEXIST (ports taken).
 */
int acpipm_create(struct iobus *pio, uint16_t port, unsigned int s5_typ,
		  void (*poweroff)(void *opaque), void *opaque,
		  struct acpipm **out) __must_check;

/* The SCI line: @sci(opaque, level) on every change of its level, from
 * whichever thread changed it (a vCPU writing PM1_STS/PM1_EN, or the
 * caller of acpipm_power_button()), the device lock held.  Set before the
 * vCPUs run. */
void acpipm_set_sci(struct acpipm *d, void (*sci)(void *opaque, int level),
		    void *opaque);
/* Press the power button: PWRBTN_STS set, the SCI raised if the guest
 * enabled the event.  Context: any thread. */
void acpipm_power_button(struct acpipm *d);

/* Unregisters the ports and frees @d.  NULL-safe.  No vCPU may be running. */
void acpipm_destroy(struct acpipm *d);

#endif
