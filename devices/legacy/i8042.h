/* SPDX-License-Identifier: MIT */
/*
 * Just enough of an i8042 keyboard controller (ports 0x60 data, 0x64
 * status/command) for Linux's `reboot=k`: command 0xFE ("pulse reset line")
 * written to 0x64 calls reset(opaque).  There is no keyboard or mouse.
 *
 * The status register reads 0x1D: input buffer empty (bit 1 clear), so the
 * kb_wait() loop in arch/x86/kernel/reboot.c exits at once before it writes
 * 0xFE; but output buffer full (bit 0) forever, so the i8042 driver's
 * i8042_flush() gives up after 16 reads and reports "i8042: No controller
 * found" within about a millisecond.  With the output buffer empty instead,
 * the probe would send CTL_RCTR (0x20) and wait 500 ms for a reply that never
 * comes.  Guests may also pass i8042.nokbd/noaux/nopnp; none is required.
 *
 * Port 0x61 (system control port B, PIT channel 2 gate/speaker) is not
 * handled here: KVM's in-kernel PIT serves it when the machine creates the PIT
 * with KVM_CREATE_PIT2 flags = KVM_PIT_SPEAKER_DUMMY (without that flag the
 * port exits to userspace).  Port 0xCF9 (reset control) lives in the PCI host
 * bridge, which owns 0xCF8-0xCFF (see pci/pci.h).
 */
#ifndef VMM_LEGACY_I8042_H
#define VMM_LEGACY_I8042_H

#include "iobus.h"
#include "util/compiler.h"

#define I8042_DATA_PORT 0x60
#define I8042_CMD_PORT 0x64

struct i8042;

/*
 * i8042_create - register ports 0x60 and 0x64 on @pio.
 * @reset: called (on the vCPU thread, no device lock held) for every 0xFE
 *         command; Linux may issue it up to 10 times before the VM stops, so
 *         it must be idempotent.  May be NULL (then 0xFE is ignored).
 * Returns 0, -EINVAL (NULL @pio/@out), -ENOMEM, or -EEXIST (ports taken).
 */
int i8042_create(struct iobus *pio, void (*reset)(void *opaque), void *opaque,
		 struct i8042 **out) __must_check;

/* Unregisters the ports and frees @k.  NULL-safe.  No vCPU may be running. */
void i8042_destroy(struct i8042 *k);

#endif
