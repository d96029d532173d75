/* SPDX-License-Identifier: MIT */
/*
 * A machine device's virtio-pci function on the machine's bus: the
 * parameters every device kind (disks.c, nets.c, ports.c, fs.c, vsocks.c)
 * gives vpci_create().
 * Header-only, so that the device files depend on no other machine file.
 */
#ifndef VMM_MACHINE_PCI_PARAMS_H
#define VMM_MACHINE_PCI_PARAMS_H

#include "machine-int.h"
#include "virtio/virtio-pci.h"
#include "vm.h"

/* The device's own fields are left zero: vpci_params_set_device() fills
 * them. */
static inline void machine_vpci_params(struct vmm *vm, const struct machine *m,
				       struct vpci_params *tp)
{
	*tp = (struct vpci_params){
		.bus = m->pci,
		.irq = vm->irq,
		.mem = &vm->mem,
		.ioeventfd_any_length = m->ioeventfd_any_length,
		.coalesce_queue_regs = m->coalesce_mmio,
	};
}

#endif
