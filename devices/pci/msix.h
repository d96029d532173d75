/* SPDX-License-Identifier: MIT */
/*
 * MSI-X capability, vector table and pending-bit array (PBA) emulation for a
 * PCI device.  The owner (e.g. the virtio-pci transport):
 *  - calls msix_init() before pci_register_device(), with a BAR it declared
 *    and table/PBA offsets inside it;
 *  - forwards its BAR accesses with msix_bar_access() (or the table/PBA
 *    helpers) and its pci_device_ops.cfg_write calls with msix_cfg_write();
 *  - is told through vector_changed(opaque, vec) whenever a vector's
 *    address/data or effective mask changes (for every vector when MSI-X
 *    enable, the function mask or the function's bus mastering toggles),
 *    so it can rewrite its KVM MSI routes in a batch and, on unmask,
 *    deliver a pending interrupt:
 *        if (!msix_vector_masked(m, vec) && msix_take_pending(m, vec))
 *                send it;
 *  - sends an interrupt from any thread with:
 *        if (msix_try_fire(m, vec)) send it;   (else it is now pending)
 *
 * Bus mastering.  An MSI-X message is a memory write by the function, so
 * with COMMAND.MASTER clear it sends none (PCI: a function without bus
 * mastering issues no requests).  Here every vector
 * counts as masked while MASTER is clear: an interrupt raised meanwhile
 * is latched in the PBA, as for a masked vector, and sent when mastering
 * comes back (if the vector is unmasked then), never lost.  The owner
 * keeps whatever it wired into KVM (irqfds fire only when it writes them,
 * after msix_try_fire() said yes).  pci_register_device() turns MASTER on
 * (firmware's job for a direct kernel boot), which is msix_init()'s
 * assumption; msix_cfg_write() follows the guest's changes.
 *
 * Concurrency: table and PBA words are atomics, so I/O threads may read mask,
 * pending and message state while vCPUs write the table; there is no lock.
 * msix_try_fire() and the unmask path are ordered so that an interrupt raced
 * against an unmask is delivered exactly once (see msix.c).  A message read
 * while the guest rewrites an unmasked vector may mix old and new halves;
 * the PCI spec requires software to mask a vector before changing it.
 * vector_changed runs on the vCPU thread that made the change, with the PCI
 * bus lock held when the change came through config space.
 */
#ifndef VMM_PCI_MSIX_H
#define VMM_PCI_MSIX_H

#include <stdbool.h>
#include <stdint.h>

#include "pci/pci.h"
#include "util/compiler.h"

#define MSIX_MAX_VECTORS 2048
#define MSIX_ENTRY_SIZE 16
#define MSIX_CAP_SIZE 12

/* Capability layout (offsets from the capability). */
#define MSIX_CAP_CTRL 2 /* message control, 16 bits */
#define MSIX_CAP_TABLE 4 /* table offset | BIR */
#define MSIX_CAP_PBA 8 /* PBA offset | BIR */
#define MSIX_CTRL_QSIZE 0x07ff /* table size - 1 */
#define MSIX_CTRL_MASKALL 0x4000
#define MSIX_CTRL_ENABLE 0x8000

/* Table entry layout. */
#define MSIX_ENTRY_ADDR_LO 0
#define MSIX_ENTRY_ADDR_HI 4
#define MSIX_ENTRY_DATA 8
#define MSIX_ENTRY_CTRL 12
#define MSIX_ENTRY_CTRL_MASKED 0x1

struct msix {
	struct pci_device *dev;
	unsigned int nr; /* vectors */
	unsigned int bar;
	uint32_t table_off, pba_off; /* in the BAR */
	unsigned int cap_off; /* in config space */
	/* nr * 4 words; accessed only with __atomic builtins. */
	uint32_t *table;
	/* One bit per vector; __atomic builtins only. */
	uint64_t *pba;
	/* Mirrors of message control and of COMMAND.MASTER (written under
	 * the bus lock, read anywhere); __atomic builtins only. */
	bool enabled, fmasked, master;
	void (*vector_changed)(void *opaque, unsigned int vec);
	void *opaque;
};

/*
 * msix_init - add the MSI-X capability to @dev (not yet registered) and
 * allocate the table, all vectors masked, MSI-X disabled.
 * @bar: BAR index holding table and PBA; if already declared, both must fit.
 * @table_off, @pba_off: 8-byte aligned, non-overlapping.
 * Returns 0, -EINVAL (bad argument), -ENOSPC (no config space), -ENOMEM.
 */
int msix_init(struct msix *m, struct pci_device *dev, unsigned int nr_vectors,
	      unsigned int bar, uint32_t table_off, uint32_t pba_off)
	__must_check;

/* Frees the table.  NULL-safe; the device must be unregistered. */
void msix_exit(struct msix *m);

/* Sets the change callback (before registration). */
void msix_set_notifier(struct msix *m,
		       void (*vector_changed)(void *opaque, unsigned int vec),
		       void *opaque);

/* Bytes of table and PBA for @nr vectors (for sizing the BAR). */
static inline uint32_t msix_table_size(unsigned int nr)
{
	return nr * MSIX_ENTRY_SIZE;
}

static inline uint32_t msix_pba_size(unsigned int nr)
{
	return ((nr + 63) / 64) * 8;
}

/* Forward from the owner's cfg_write hook (bus lock held): picks up
 * enable/function-mask changes if the write touched message control, and
 * bus mastering changes if it touched COMMAND. */
void msix_cfg_write(struct msix *m, uint32_t off, uint32_t len);

/*
 * BAR access helpers (Context: vCPU thread).  @off is relative to the table
 * or the PBA.  Only 4- or 8-byte naturally aligned accesses inside the
 * region act; others are ignored (reads return 0).  The PBA is read-only.
 */
void msix_table_read(struct msix *m, uint64_t off, void *data, uint32_t len);
void msix_table_write(struct msix *m, uint64_t off, const void *data,
		      uint32_t len);
void msix_pba_read(struct msix *m, uint64_t off, void *data, uint32_t len);

/* Routes a BAR access (@off into the BAR) to the table or PBA.  Returns
 * false if it hits neither (the owner handles it). */
bool msix_bar_access(struct msix *m, uint64_t off, void *data, uint32_t len,
		     bool is_write);

bool msix_enabled(const struct msix *m);
/* Entry masked || function masked || MSI-X disabled || bus mastering off
 * (or @vec out of range). */
bool msix_vector_masked(const struct msix *m, unsigned int vec);
/* The message of @vec (0/0 if out of range). */
void msix_get_msg(const struct msix *m, unsigned int vec, uint64_t *addr,
		  uint32_t *data);
void msix_set_pending(struct msix *m, unsigned int vec);
/* Clears @vec's pending bit; returns whether it was set. */
bool msix_take_pending(struct msix *m, unsigned int vec);
/*
 * msix_try_fire - an interrupt for @vec occurred.  Returns true if the
 * caller must send it now; false if @vec is masked and the interrupt was
 * recorded as pending (to be sent from vector_changed on unmask).
 * Context: any thread.
 */
bool msix_try_fire(struct msix *m, unsigned int vec);

#endif
