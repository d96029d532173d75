/* SPDX-License-Identifier: MIT */
/* Paravirtual exit device (see pvexit.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "legacy/pvexit.h"
#include "vmm/vmm.h"

/* Stateless apart from the callback: no lock. */
struct pvexit {
	struct iobus *pio;
	uint16_t port;
	void (*exit)(void *opaque, uint32_t status);
	void *opaque;
};

/* Context: vCPU thread. */
static void pvexit_io(void *opaque, uint64_t off, void *data, uint32_t len,
		      bool is_write)
{
	struct pvexit *d = opaque;
	uint32_t v = 0;

	if (!is_write) {
		uint32_t magic = VMM_EXIT_PORT_MAGIC;

		/* Byte-wise view of the little-endian signature. */
		for (uint32_t i = 0; i < len; i++)
			((uint8_t *)data)[i] =
				off + i < 4 ? (uint8_t)(magic >> (8 * (off + i))) : 0xff;
		return;
	}
	/* Guest-controlled value and width: only a write at the base of 1, 2
	 * or 4 bytes counts (iobus hands at most 4 for port I/O). */
	if (off != 0 || len > 4)
		return;
	memcpy(&v, data, len);
	d->exit(d->opaque, v);
}

int pvexit_create(struct iobus *pio, uint16_t port,
		  void (*exit)(void *opaque, uint32_t status), void *opaque,
		  struct pvexit **out)
{
	struct pvexit *d;
	int ret;

	if (!pio || !exit || !out)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->pio = pio;
	d->port = port;
	d->exit = exit;
	d->opaque = opaque;
	ret = iobus_register(pio, port, PVEXIT_LEN, pvexit_io, d);
	if (ret) {
		free(d);
		return ret;
	}
	*out = d;
	return 0;
}

void pvexit_destroy(struct pvexit *d)
{
	if (!d)
		return;
	iobus_unregister(d->pio, d->port);
	free(d);
}
