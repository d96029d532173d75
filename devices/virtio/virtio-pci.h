/* SPDX-License-Identifier: MIT */
/*
 * Modern virtio-pci transport (virtio 1.x, section 4.1; VIRTIO_F_VERSION_1
 * required, no legacy/transitional interface, no INTx).
 *
 * The transport owns a PCI function: its config space and capabilities
 * (common/notify/ISR/device vendor caps, the PCI_CFG access window, MSI-X),
 * one memory BAR holding every register region plus the MSI-X table and
 * PBA, the status state machine and the virtqueue configuration.  It knows
 * nothing of the device type: the device model plugs in through
 * struct virtio_device_ops (virtio/virtio.h).
 *
 * Wiring (done by vq-wiring.h, which knows no PCI; the transport says
 * where).  Every queue's kick eventfd (kick_fd) is created by vpci_create()
 * and stays the same open file until vpci_destroy(); it is registered with
 * KVM as an ioeventfd on the queue's own 4-byte notify address as soon as
 * the BAR is mapped (at pci_register_device(), before the guest runs),
 * and moved only when the guest really moves the BAR (virtio-pci-irq.c,
 * "Notify ioeventfds").  When the driver sets DRIVER_OK, ONE wiring
 * transaction (one KVM_SET_GSI_ROUTING) gives every enabled queue that
 * has an MSI-X vector a GSI with an MSI route plus an irqfd (call_fd);
 * then ops->start() runs.  A device reset (status 0) calls ops->stop()
 * and undoes the interrupt wiring in one transaction (call_fd is
 * recreated each time).  Later MSI-X message
 * changes are batched: one routing update per unmask, whatever the number
 * of vectors rewritten while masked; a vector rewritten while unmasked
 * sends its interrupts with KVM_SIGNAL_MSI and the live message until its
 * route is refreshed at the next unmask or, from the I/O thread, after
 * VPCI_LAZY_FLUSH_USES such interrupts (rate-limited; see vq-wiring.h).
 *
 * Bus mastering.  Clearing COMMAND.MASTER stops the device's DMA (ops->stop()
 * before the config write returns) and holds its MSI-X interrupts pending
 * in the PBA; setting it again restarts the device where it was and sends
 * what was held (vpci_bus_master() in virtio-pci-regs.c).
 *
 * Logging.  Every message a guest can cause is rate-limited per transport
 * (log.h): the first of a burst in full, then "N more ..." summaries.
 *
 * Threading.
 *  - Register accesses come from vCPU threads (BAR MMIO, possibly several
 *    at once, and config space under the PCI bus lock).  A mutex per
 *    transport serialises them; ops->start(), ops->stop(),
 *    ops->set_features(), ops->config_read() and ops->config_write() are
 *    called with it held, so they must not call vpci_* functions.
 *  - ops->start() gets all num_queues queues (queues[i].index == i; check
 *    .enabled); if it fails it must undo its own partial work (the
 *    transport then unwires and sets NEEDS_RESET without ops->stop()).
 *  - virtio_queue_notify() and virtio_transport_needs_reset() never block
 *    on the transport (virtio_queue_notify() may trylock it to refresh
 *    routes) and may be called from any device thread, including while the
 *    device is being stopped or started (by ops->stop()/ops->start()).
 *  - vpci_create()/vpci_destroy() run on the API thread with no vCPU
 *    running; vpci_destroy() must come before pci_bus_destroy().
 *
 * Errors: 0 on success, -errno on failure, as listed per function.
 */
#ifndef VMM_DEVICES_VIRTIO_VIRTIO_PCI_H
#define VMM_DEVICES_VIRTIO_VIRTIO_PCI_H

#include <stdbool.h>
#include <stdint.h>

#include "irq.h"
#include "memory.h"
#include "pci/pci.h"
#include "util/compiler.h"
#include "virtio/virtio.h"
#include "virtio/vq-wiring.h"

#define VPCI_VENDOR_ID 0x1af4
#define VPCI_DEVICE_ID_BASE 0x1040 /* + VIRTIO_ID_* for modern devices */
#define VPCI_REVISION 1		   /* modern-only device */
#define VPCI_MAX_QUEUES 1024u
/* KVM MSI routes (GSIs) a transport with @nq queues may hold at once: one
 * per queue that has a vector; the configuration vector has none (its
 * interrupts go out with KVM_SIGNAL_MSI). */
#define VPCI_MSI_ROUTES(nq) (nq)

/*
 * BAR 0 (32-bit, non-prefetchable memory) layout, every region 4 KiB
 * aligned so the MSI-X table and PBA share no page with other registers
 * (PCI spec recommendation; lets a future VFIO-style mapping trap them).
 */
#define VPCI_BAR 0
#define VPCI_COMMON_OFF 0x0000u
#define VPCI_COMMON_LEN 0x38u /* through queue_used_hi */
#define VPCI_ISR_OFF 0x1000u
#define VPCI_ISR_LEN 4u
#define VPCI_DEVCFG_OFF 0x2000u
#define VPCI_DEVCFG_MAX 0x1000u /* largest ops->config_size */
#define VPCI_NOTIFY_OFF 0x3000u
#define VPCI_NOTIFY_MULT 4u /* notify_off_multiplier: 4 bytes per queue */

/* The lazy route refresh of a vector rewritten while unmasked (see
 * vq-wiring.h). */
#define VPCI_LAZY_FLUSH_USES VQW_LAZY_FLUSH_USES
#define VPCI_LAZY_FLUSH_INTERVAL_NS VQW_LAZY_FLUSH_INTERVAL_NS

struct vpci_params {
	struct pci_bus *bus;
	struct vm_irq *irq;
	const struct guest_mem *mem;
	const struct virtio_device_ops *ops;
	void *dev;		   /* the device model, passed to every op */
	unsigned int num_queues;   /* 1..VPCI_MAX_QUEUES */
	uint16_t max_queue_size;   /* power of two, <= VIRTQ_MAX_SIZE */
	/* KVM_CAP_IOEVENTFD_ANY_LENGTH: register the notify ioeventfds with
	 * length 0 so a kick of any width hits them; otherwise length 2 (the
	 * 16-bit write the Linux driver does; other widths exit to the VMM,
	 * which forwards them to kick_fd). */
	bool ioeventfd_any_length;
	/* Wire each queue's route and irqfd at DRIVER_OK in a commit of its
	 * own (one KVM_SET_GSI_ROUTING per vector, the whole table each
	 * time) instead of one commit for all: the way the batching
	 * replaces, kept as a knob to measure the difference. */
	bool per_vector_wiring;
	/* The device's queues are served by another process that writes
	 * call_fd itself (virtio_device.external_queues). */
	bool external_queues;
	/* KVM coalesces MMIO writes into a ring the VM drains before every
	 * exit it handles (vm_coalesced_ring_offset()): let it log the
	 * writes to the queue registers instead of exiting (see "Coalesced
	 * registers" in virtio-pci-irq.c). */
	bool coalesce_queue_regs;
	uint16_t subsystem_id;	   /* 0: the PCI device ID */
};

/* The device's declaration (virtio.h) into @p: ops, dev, num_queues and
 * max_queue_size, the same for every device type. */
static inline void vpci_params_set_device(struct vpci_params *p,
					  const struct virtio_device *d)
{
	p->ops = d->ops;
	p->dev = d->dev;
	p->num_queues = d->num_queues;
	p->max_queue_size = d->queue_size;
	p->external_queues = d->external_queues;
}

struct vpci_stats {
	uint64_t wiring_commits;    /* transactions committed (or rolled back) */
	uint64_t wiring_ioctls;     /* KVM ioctls they made */
	uint64_t wiring_ns;	    /* wall time inside them */
	uint64_t interrupts;	    /* queue interrupts sent (call_fd writes) */
	uint64_t interrupts_masked; /* queue interrupts left pending (masked) */
	uint64_t config_interrupts; /* configuration-change MSIs sent */
	uint64_t interrupts_direct; /* queue interrupts sent with KVM_SIGNAL_MSI
				       because the vector was rewritten and
				       its route not refreshed yet */
	uint64_t route_flushes;	    /* MSI-X route refreshes committed */
	uint64_t route_flushes_lazy; /* of which started by an I/O thread */
	uint64_t resets;	    /* device resets by the driver (status 0) */
	uint64_t needs_reset;	    /* times DEVICE_NEEDS_RESET was set */
	uint64_t driver_ok_ns_max;  /* longest DRIVER_OK write: the wiring,
				       the MSI-X table zone's removal and the
				       device start the driver waited for */
};

/*
 * vpci_create - build the PCI function (IDs, capabilities, BAR, MSI-X with
 * num_queues + 1 vectors), create the queues' kick eventfds and register
 * it on @p->bus, which places the notify ioeventfds with the BAR (if KVM
 * refuses them, kicks take the MMIO path and the error is only logged).
 * Returns 0, -EINVAL (NULL pointer, num_queues 0 or > VPCI_MAX_QUEUES,
 * bad max_queue_size, device id > 0x3f, config_size > VPCI_DEVCFG_MAX,
 * missing start/stop or config ops, features without VIRTIO_F_VERSION_1),
 * -ENOMEM, -EMFILE/-ENFILE (eventfds), or pci_register_device()'s
 * -ENOSPC/-EEXIST.
 */
int vpci_create(const struct vpci_params *p, struct virtio_transport **out)
	__must_check;

/*
 * vpci_destroy - unregister the function, stop the device (ops->stop) if
 * it is live, remove all its KVM wiring and free everything.  NULL-safe.
 * Context: API thread, no vCPU running, before pci_bus_destroy().
 */
void vpci_destroy(struct virtio_transport *t);

/*
 * vpci_quiesce - stop the device (ops->stop(): in-flight requests drained,
 * no device thread touches the queues afterwards) and remove its interrupt
 * wiring, if it is live; the register state stays as the guest left it, and
 * the notify ioeventfds stay with the BAR.
 * For VM shutdown, before the I/O threads are stopped.  Idempotent;
 * vpci_destroy() does it too.  Context: API thread, vCPUs stopped.
 */
void vpci_quiesce(struct virtio_transport *t);

/*
 * vpci_shutdown - vpci_quiesce() for the end of the VM: the device is
 * stopped the same way, but its KVM wiring is not removed call by call; it
 * is forgotten, and goes with the VM fd, which the caller closes before
 * the KVM VM is used again (if ever).  Only vpci_destroy() may follow.
 * Context: API thread, vCPUs stopped.
 */
void vpci_shutdown(struct virtio_transport *t);

/* Counters since creation (each read atomically; not a snapshot). */
void vpci_get_stats(struct virtio_transport *t, struct vpci_stats *st);

/* Queue @q's kick eventfd (the same file for the transport's life), or -1
 * if out of range. */
int vpci_kick_fd(struct virtio_transport *t, unsigned int q);

/* Interrupts sent for queue @q (0 if out of range). */
uint64_t vpci_queue_interrupts(struct virtio_transport *t, unsigned int q);

/*
 * The device changed its configuration space: bump config_generation, set
 * ISR bit 1 and send the configuration vector (or leave it pending while
 * masked).  Context: any thread; lock-free.
 */
void vpci_config_changed(struct virtio_transport *t);

/*
 * Set DEVICE_NEEDS_RESET and send a configuration-change interrupt (logged
 * once until reset): what virtio_queue_needs_reset() does on this
 * transport.  Context: any thread; lock-free.
 */
void virtio_transport_needs_reset(struct virtio_transport *t, const char *why);

/* The PCI function (for tests and for the machine to find its slot). */
struct pci_device *vpci_pci_device(struct virtio_transport *t);

#endif
