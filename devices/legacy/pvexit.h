/* SPDX-License-Identifier: MIT */
/*
 * Paravirtual exit device: one 32-bit I/O port (VMM_EXIT_PORT, 0xf4) through
 * which the guest hands the VMM an exit status and ends the VM, as test
 * kernels use a debug-exit port (the value is reported as written, not as
 * (value << 1) | 1).
 *
 * A write of 1, 2 or 4 bytes at the port base (an `outb`/`outw`/`outl`)
 * calls exit(opaque, value) with the value zero-extended to 32 bits.  Writes
 * at other offsets of the 4-byte range are ignored (only the base means
 * anything, so a guest cannot report half a status); reads return the
 * signature VMM_EXIT_PORT_MAGIC so a guest can probe for the device.
 *
 * The guest can already end the VM (reset, triple fault); this adds a
 * status, not a power.  The value is guest-controlled and opaque to the
 * device: the embedder decides what it means (minivmm-oci: the container
 * process's wait status).
 */
#ifndef VMM_LEGACY_PVEXIT_H
#define VMM_LEGACY_PVEXIT_H

#include <stdint.h>

#include "iobus.h"
#include "util/compiler.h"

#define PVEXIT_LEN 4u

struct pvexit;

/*
 * pvexit_create - register [@port, @port + 4) on @pio.
 * @exit: called on the vCPU thread, no device lock held, for every write at
 *        @port; must tolerate being called again (another vCPU, or a guest
 *        that writes twice before it stops).
 * Returns 0, -EINVAL (NULL @pio/@exit/@out), -ENOMEM, -EEXIST (port taken).
 */
int pvexit_create(struct iobus *pio, uint16_t port,
		  void (*exit)(void *opaque, uint32_t status), void *opaque,
		  struct pvexit **out) __must_check;

/* Unregisters the port and frees @d.  NULL-safe.  No vCPU may be running. */
void pvexit_destroy(struct pvexit *d);

#endif
