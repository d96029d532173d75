/* SPDX-License-Identifier: MIT */
/*
 * Inside the virtio-pci transport: the state its four files share.  They
 * call one way, top to bottom:
 *  - virtio-pci.c: create/destroy/shutdown, statistics (its top comment
 *    has the BAR choice and the locking rules);
 *  - virtio-pci-regs.c: what the driver reads and writes (common
 *    configuration, the BAR, PCI configuration space hooks, bus mastering);
 *  - virtio-pci-status.c: the device status state machine (reset,
 *    FEATURES_OK, DRIVER_OK);
 *  - virtio-pci-irq.c: logging, interrupt delivery, and where the queues'
 *    KVM wiring goes with the BAR.
 * The wiring itself (ioeventfds, routes, irqfds, zones, lazy MSI route
 * refreshes) is vq-wiring.c, which knows no PCI.
 */
#ifndef VMM_VIRTIO_PCI_INT_H
#define VMM_VIRTIO_PCI_INT_H

#include <linux/virtio_config.h>
#include <linux/virtio_pci.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "log.h"
#include "pci/msix.h"
#include "virtio/virtio-pci.h"
#include "virtio/vq-wiring.h"

/* Transport features we do not implement (virtio 1.2 section 6): never
 * offered, whatever the device says. */
#define VPCI_F_ACCESS_PLATFORM 33
#define VPCI_F_RING_PACKED 34
#define VPCI_F_SR_IOV 37
#define VPCI_F_NOTIFICATION_DATA 38
#define VPCI_F_NOTIF_CONFIG_DATA 39
#define VPCI_F_RING_RESET 40
#define VPCI_F_ADMIN_VQ 41
#define VPCI_UNSUPPORTED_FEATURES                                     \
	((1ull << VPCI_F_ACCESS_PLATFORM) | (1ull << VPCI_F_RING_PACKED) | \
	 (1ull << VPCI_F_SR_IOV) | (1ull << VPCI_F_NOTIFICATION_DATA) |    \
	 (1ull << VPCI_F_NOTIF_CONFIG_DATA) | (1ull << VPCI_F_RING_RESET) | \
	 (1ull << VPCI_F_ADMIN_VQ))

#define VPCI_CLASS_STORAGE_OTHER 0x018000
#define VPCI_CLASS_NET_OTHER 0x020000
#define VPCI_CLASS_COMM_OTHER 0x078000
#define VPCI_CLASS_OTHER 0xff0000

/* The coalesced MMIO zones of a transport (vpci_place_zones()): the
 * common configuration's queue registers and the MSI-X table. */
enum { VPCI_ZONE_QREGS, VPCI_ZONE_TABLE, VPCI_NR_ZONES };
#define VPCI_QREGS_OFF (VPCI_COMMON_OFF + VIRTIO_PCI_COMMON_Q_SELECT)
#define VPCI_QREGS_LEN \
	(VIRTIO_PCI_COMMON_Q_USEDHI + 4 - VIRTIO_PCI_COMMON_Q_SELECT)

#define VPCI_CAP_VNDR_LEN 16	/* struct virtio_pci_cap */
#define VPCI_CAP_NOTIFY_LEN 20	/* struct virtio_pci_notify_cap */
#define VPCI_CAP_PCICFG_LEN 20	/* struct virtio_pci_cfg_cap */
#define VPCI_CAP_PCICFG_DATA 16 /* pci_cfg_data in it */

/* Transport side of one queue. */
struct vpci_vq {
	/* Driver-written (t->lock).  Guest-controlled: size validated on
	 * write, the addresses by virtq_start() at DRIVER_OK. */
	uint16_t size;
	uint64_t desc, avail, used;
	uint64_t interrupts; /* __atomic only */
};

struct virtio_transport {
	struct pci_device pci;
	struct msix msix;
	/* Constant after create. */
	struct pci_bus *bus;
	struct vm_irq *irq;
	const struct guest_mem *mem;
	const struct virtio_device_ops *ops;
	void *dev;
	unsigned int nq, nv;
	uint16_t max_qsize;
	uint64_t host_features;
	uint32_t bar_size, notify_len;
	unsigned int pcicfg_cap;

	/* Protects the fields up to the atomics below (see top of file). */
	pthread_mutex_t lock;
	uint64_t bar_gpa; /* from bar_moved(); PCI_BAR_UNMAPPED if off */
	/* The queues' KVM wiring (vq-wiring.h): notify ioeventfds, routes
	 * and irqfds, coalesced zones; w.live: wired (and started, unless
	 * bus mastering is off). */
	struct vqw w;
	uint32_t dfselect, gfselect;
	uint64_t driver_features;
	uint16_t queue_select;
	bool started; /* ops->start() succeeded, ops->stop() not called yet */
	bool master;  /* COMMAND.MASTER as last seen (see vpci_bus_master()) */
	struct virtio_queue *queues; /* [nq], handed to ops->start() */
	struct vpci_vq *vqs;	     /* [nq] */

	/* __atomic only.  Written by the driver path under t->lock and by
	 * virtio_transport_needs_reset() from any thread. */
	uint8_t status;
	uint8_t generation;
	uint8_t isr;
	uint16_t config_vector;
	struct vpci_stats st;

	/*
	 * Every message the guest can cause goes through one of these (log.h:
	 * the first of a burst in full, then "N more ..." summaries), so a
	 * driver that loops on a mistake cannot flood the log.  Own locks;
	 * usable from any thread.
	 */
	struct log_limit log_reset;  /* "device needs reset: ..." */
	struct log_limit log_driver; /* driver mistakes: bad ring, features,
					register misuse */
	/* The wiring's own: w.log_msi, w.log_kvm. */
};

static inline uint64_t vpci_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void stat_add(uint64_t *c, uint64_t n)
{
	/* Relaxed: a statistic, orders nothing. */
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

static inline uint8_t vpci_status(const struct virtio_transport *t)
{
	return __atomic_load_n(&t->status, __ATOMIC_SEQ_CST);
}

/* Store a driver-written status, keeping a NEEDS_RESET that a device
 * thread may set concurrently (pairs with the fetch_or in
 * vpci_set_needs_reset()). */
static inline void vpci_store_status(struct virtio_transport *t, uint8_t val)
{
	uint8_t old = vpci_status(t);

	while (!__atomic_compare_exchange_n(
		&t->status, &old,
		(uint8_t)(val | (old & VIRTIO_CONFIG_S_NEEDS_RESET)), false,
		__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
}

/* virtio-pci-irq.c: logging, interrupt delivery, and where the wiring
 * goes (the bottom of the transport: calls only vq-wiring and msix) */
void vpci_log(struct virtio_transport *t, struct log_limit *l, int level,
	      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
extern const struct vqw_owner_ops vpci_wiring_ops;
extern const struct virtio_transport_ops vpci_transport_ops;
void vpci_deliver(struct virtio_transport *t, unsigned int vec);
void vpci_set_needs_reset(struct virtio_transport *t, const char *why);
void vpci_vector_changed(void *opaque, unsigned int vec);
void vpci_place_kicks(struct virtio_transport *t);
void vpci_place_zones(struct virtio_transport *t);
void vpci_drop_wiring(struct virtio_transport *t);

/* virtio-pci-status.c: the device status state machine */
void vpci_queue_defaults(struct virtio_transport *t);
void vpci_unwire(struct virtio_transport *t);
void vpci_stop(struct virtio_transport *t);
void vpci_write_status(struct virtio_transport *t, uint8_t val);

/* virtio-pci-regs.c: the register file (common configuration, BAR, PCI
 * configuration space) */
void vpci_bar_access(void *opaque, uint64_t off, void *data, uint32_t len,
		     bool is_write);
extern const struct pci_device_ops vpci_pci_ops;

#endif
