/* SPDX-License-Identifier: MIT */
/* See fake_vpci.h. */
#include "fake_vpci.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/kvm.h>
#include <linux/virtio_config.h>

#include "machine-int.h"
#include "pci/msix.h"

static void __attribute__((noreturn, format(printf, 1, 2)))
fv_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("fake_vpci: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

#define FV_CHECK(cond)                                                   \
	do {                                                             \
		if (!(cond))                                             \
			fv_fail("%s:%d: %s", __FILE__, __LINE__, #cond); \
	} while (0)

/* ---- fake KVM ------------------------------------------------------------ */

static bool is_deassign(unsigned long req, void *arg)
{
	if (req == KVM_IRQFD)
		return ((struct kvm_irqfd *)arg)->flags & KVM_IRQFD_FLAG_DEASSIGN;
	if (req == KVM_IOEVENTFD)
		return ((struct kvm_ioeventfd *)arg)->flags & KVM_IOEVENTFD_FLAG_DEASSIGN;
	return req == KVM_UNREGISTER_COALESCED_MMIO;
}

static void kvm_routing(struct fv_kvm *k, struct kvm_irq_routing *r)
{
	k->routing_calls++;
	FV_CHECK(r->nr <= IRQ_MAX_ROUTES);
	memset(k->route_valid, 0, sizeof(k->route_valid));
	k->nr_msi = 0;
	for (unsigned int i = 0; i < r->nr; i++) {
		struct kvm_irq_routing_entry *e = &r->entries[i];

		FV_CHECK(e->gsi < IRQ_MAX_ROUTES);
		if (e->type != KVM_IRQ_ROUTING_MSI)
			continue;
		k->route_valid[e->gsi] = true;
		k->route_addr[e->gsi] = e->u.msi.address_lo |
					(uint64_t)e->u.msi.address_hi << 32;
		k->route_data[e->gsi] = e->u.msi.data;
		k->route_devid[e->gsi] = e->flags & KVM_MSI_VALID_DEVID ?
						 (int64_t)e->u.msi.devid : -1;
		if (e->gsi > k->max_gsi)
			k->max_gsi = e->gsi;
		k->nr_msi++;
	}
}

static void kvm_irqfd(struct fv_kvm *k, struct kvm_irqfd *a)
{
	k->irqfd_calls++;
	FV_CHECK(a->fd < FV_MAX_FD);
	if (a->flags & KVM_IRQFD_FLAG_DEASSIGN) {
		FV_CHECK(k->irqfd_gsi[a->fd] != -1); /* deassign of nothing */
		k->irqfd_gsi[a->fd] = -1;
		k->live_irqfd--;
	} else {
		FV_CHECK(k->irqfd_gsi[a->fd] == -1); /* double assign */
		k->irqfd_gsi[a->fd] = (int)a->gsi;
		k->live_irqfd++;
	}
}

static void kvm_ioeventfd(struct fv_kvm *k, struct kvm_ioeventfd *a)
{
	k->ioeventfd_calls++;
	FV_CHECK(a->fd >= 0);
	FV_CHECK(a->fd < FV_MAX_FD);
	FV_CHECK(!(a->flags & KVM_IOEVENTFD_FLAG_DATAMATCH));
	FV_CHECK(!(a->flags & KVM_IOEVENTFD_FLAG_PIO));
	if (a->flags & KVM_IOEVENTFD_FLAG_DEASSIGN) {
		FV_CHECK(k->ioev[a->fd]);
		FV_CHECK(k->ioev_addr[a->fd] == a->addr);
		k->ioev[a->fd] = false;
		k->live_ioev--;
	} else {
		FV_CHECK(!k->ioev[a->fd]);
		/* KVM refuses two ioeventfds on one address. */
		for (int f = 0; f < k->ioev_end; f++)
			if (k->ioev[f] && k->ioev_addr[f] == a->addr)
				fv_fail("two ioeventfds at 0x%llx",
					(unsigned long long)a->addr);
		k->ioev[a->fd] = true;
		k->ioev_addr[a->fd] = a->addr;
		k->ioev_len[a->fd] = a->len;
		if (a->fd >= k->ioev_end)
			k->ioev_end = a->fd + 1;
		k->live_ioev++;
	}
}

static void kvm_zone(struct fv_kvm *k, bool reg,
		     const struct kvm_coalesced_mmio_zone *z)
{
	k->zone_calls++;
	FV_CHECK(!z->pio && z->size > 0);
	for (unsigned int i = 0; i < k->nr_zones; i++) {
		bool same = k->zone_addr[i] == z->addr && k->zone_len[i] == z->size;

		if (!reg && same) {
			k->nr_zones--;
			k->zone_addr[i] = k->zone_addr[k->nr_zones];
			k->zone_len[i] = k->zone_len[k->nr_zones];
			return;
		}
		if (reg && z->addr < k->zone_addr[i] + k->zone_len[i] &&
		    k->zone_addr[i] < z->addr + z->size)
			fv_fail("overlapping coalesced zones at 0x%llx",
				(unsigned long long)z->addr);
	}
	if (!reg)
		fv_fail("no coalesced zone at 0x%llx", (unsigned long long)z->addr);
	FV_CHECK(k->nr_zones < FV_MAX_ZONES);
	k->zone_addr[k->nr_zones] = z->addr;
	k->zone_len[k->nr_zones++] = z->size;
}

int fv_kvm_ioctl(void *opaque, int fd, unsigned long req, void *arg)
{
	struct fv_kvm *k = opaque;
	int ret = 0;

	(void)fd;
	pthread_mutex_lock(&k->lock);
	if (++k->calls == k->fail_at &&
	    (k->fail_deassign || !is_deassign(req, arg))) {
		ret = -ENOSPC;
	} else if (req == KVM_SET_GSI_ROUTING) {
		kvm_routing(k, arg);
	} else if (req == KVM_IRQFD) {
		kvm_irqfd(k, arg);
	} else if (req == KVM_IOEVENTFD) {
		kvm_ioeventfd(k, arg);
	} else if (req == KVM_REGISTER_COALESCED_MMIO ||
		   req == KVM_UNREGISTER_COALESCED_MMIO) {
		kvm_zone(k, req == KVM_REGISTER_COALESCED_MMIO, arg);
	} else if (req == KVM_SIGNAL_MSI) {
		struct kvm_msi *m = arg;

		k->msi_calls++;
		k->msi_addr = m->address_lo | (uint64_t)m->address_hi << 32;
		k->msi_data = m->data;
		k->msi_devid = m->flags & KVM_MSI_VALID_DEVID ? (int64_t)m->devid : -1;
		ret = k->msi_fail ? k->msi_fail : 1; /* 1: delivered */
	} else {
		k->unknown_calls++;
		ret = -ENOTTY;
	}
	pthread_mutex_unlock(&k->lock);
	return ret;
}

int fv_kvm_kick_fd(struct fv_kvm *k, uint64_t addr)
{
	int ret = -1;

	pthread_mutex_lock(&k->lock);
	for (int f = 0; f < k->ioev_end; f++) {
		if (k->ioev[f] && k->ioev_addr[f] == addr) {
			FV_CHECK(ret == -1); /* one per address */
			ret = f;
		}
	}
	pthread_mutex_unlock(&k->lock);
	return ret;
}

int fv_kvm_call_fd(struct fv_kvm *k, uint64_t addr, uint32_t data)
{
	int ret = -1;

	pthread_mutex_lock(&k->lock);
	for (int f = 0; f < FV_MAX_FD; f++) {
		int gsi = k->irqfd_gsi[f];

		if (gsi < 0 || !k->route_valid[gsi] || k->route_addr[gsi] != addr ||
		    k->route_data[gsi] != data)
			continue;
		FV_CHECK(ret == -1);
		ret = f;
	}
	pthread_mutex_unlock(&k->lock);
	return ret;
}

unsigned int fv_kvm_get(struct fv_kvm *k, const unsigned int *field)
{
	unsigned int v;

	pthread_mutex_lock(&k->lock);
	v = *field;
	pthread_mutex_unlock(&k->lock);
	return v;
}

/* ---- the machine --------------------------------------------------------- */

int fv_init(struct fv *v, int vm_fd, uint64_t mmio_base, uint64_t mmio_size,
	    struct guest_mem *mem)
{
	return fv_init_platform(v, vm_fd, machine_arch_irq_platform(), mmio_base,
				mmio_size, mem);
}

int fv_init_platform(struct fv *v, int vm_fd, const struct irq_platform *plat,
		     uint64_t mmio_base, uint64_t mmio_size, struct guest_mem *mem)
{
	int ret;

	memset(v, 0, sizeof(*v));
	v->mem = mem;
	v->mmio_base = mmio_base;
	v->kvm = calloc(1, sizeof(*v->kvm));
	if (!v->kvm)
		return -ENOMEM;
	pthread_mutex_init(&v->kvm->lock, NULL);
	for (int i = 0; i < FV_MAX_FD; i++)
		v->kvm->irqfd_gsi[i] = -1;
	if ((ret = iobus_init(&v->pio, "pio")) || (ret = iobus_init(&v->mmio, "mmio")) ||
	    (ret = pci_bus_create(&v->pio, &v->mmio, mmio_base, mmio_size, &v->bus)) ||
	    (ret = irq_create(vm_fd, plat, fv_kvm_ioctl, v->kvm, &v->irq)))
		return ret;
	return 0;
}

void fv_destroy(struct fv *v)
{
	vpci_destroy(v->t);
	v->t = NULL;
	pci_bus_destroy(v->bus);
	irq_destroy(v->irq);
	iobus_destroy(&v->mmio);
	iobus_destroy(&v->pio);
	if (v->kvm) {
		pthread_mutex_destroy(&v->kvm->lock);
		free(v->kvm);
	}
	memset(v, 0, sizeof(*v));
}

struct vpci_params fv_params(struct fv *v)
{
	return (struct vpci_params){ .bus = v->bus, .irq = v->irq, .mem = v->mem };
}

int fv_create(struct fv *v, struct vpci_params *p)
{
	int ret;

	if (!p->bus)
		p->bus = v->bus;
	if (!p->irq)
		p->irq = v->irq;
	if (!p->mem)
		p->mem = v->mem;
	if ((ret = vpci_create(p, &v->t)))
		return ret;
	return fv_probe(v);
}

/* ---- config space through 0xCF8/0xCFC, BAR MMIO ------------------------ */

void fv_drain(struct fv *v)
{
	for (unsigned int i = 0; i < v->nr_logged; i++) {
		int ret = iobus_dispatch(&v->mmio, v->logged[i].addr,
					 &v->logged[i].val, v->logged[i].len, true);

		if (ret)
			fv_fail("logged write 0x%llx+%u: %d",
				(unsigned long long)v->logged[i].addr,
				v->logged[i].len, ret);
	}
	v->nr_logged = 0;
}

/* Would KVM log a write to [@addr, +@len) in the ring? */
static bool fv_in_zone(struct fv *v, uint64_t addr, unsigned int len)
{
	struct fv_kvm *k = v->kvm;
	bool in = false;

	pthread_mutex_lock(&k->lock);
	for (unsigned int i = 0; i < k->nr_zones && !in; i++)
		in = addr >= k->zone_addr[i] &&
		     addr + len <= k->zone_addr[i] + k->zone_len[i];
	pthread_mutex_unlock(&k->lock);
	return in;
}

int fv_cfg_access(struct fv *v, unsigned int slot, unsigned int off,
		  uint32_t *val, unsigned int len, bool write)
{
	uint32_t a = 0x80000000u | slot << 11 | (off & 0xfc);
	int ret, ret2;

	fv_drain(v); /* an exit */
	ret = iobus_dispatch(&v->pio, 0xcf8, &a, 4, true);
	ret2 = iobus_dispatch(&v->pio, 0xcfc + (off & 3), val, len, write);
	return ret ? ret : ret2;
}

uint32_t fv_cfg_rd(struct fv *v, unsigned int off, unsigned int len)
{
	uint32_t val = 0;
	int ret = fv_cfg_access(v, v->slot, off, &val, len, false);

	if (ret)
		fv_fail("config read %u+%u: %d", off, len, ret);
	return val;
}

void fv_cfg_wr(struct fv *v, unsigned int off, uint32_t val, unsigned int len)
{
	int ret = fv_cfg_access(v, v->slot, off, &val, len, true);

	if (ret)
		fv_fail("config write %u+%u: %d", off, len, ret);
}

uint64_t fv_mr(struct fv *v, uint32_t off, unsigned int len)
{
	uint64_t val = 0;
	int ret;

	fv_drain(v);
	v->exits++;
	ret = iobus_dispatch(&v->mmio, v->bar + off, &val, len, false);

	if (ret)
		fv_fail("BAR read 0x%x+%u: %d", off, len, ret);
	return val;
}

void fv_mw(struct fv *v, uint32_t off, uint64_t val, unsigned int len)
{
	int ret;

	if (v->defer && v->nr_logged < FV_RING_ENTRIES &&
	    fv_in_zone(v, v->bar + off, len)) {
		v->logged[v->nr_logged].addr = v->bar + off;
		v->logged[v->nr_logged].val = val;
		v->logged[v->nr_logged++].len = len;
		return;
	}
	fv_drain(v);
	v->exits++;
	ret = iobus_dispatch(&v->mmio, v->bar + off, &val, len, true);

	if (ret)
		fv_fail("BAR write 0x%x+%u: %d", off, len, ret);
}

uint8_t fv_status(struct fv *v)
{
	return (uint8_t)FV_COMMON_RD(v, STATUS, 1);
}

void fv_status_add(struct fv *v, uint8_t bits)
{
	FV_COMMON_WR(v, STATUS, fv_status(v) | bits, 1);
}

/* ---- probing ------------------------------------------------------------- */

#define PROBE_CHECK(cond)                                                  \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "fake_vpci: probe: %s\n", #cond);  \
			return -EPROTO;                                    \
		}                                                          \
	} while (0)

static int probe_vndr(struct fv *v, unsigned int ptr)
{
	PROBE_CHECK(fv_cfg_rd(v, ptr + VIRTIO_PCI_CAP_BAR, 1) == VPCI_BAR);
	switch (fv_cfg_rd(v, ptr + VIRTIO_PCI_CAP_CFG_TYPE, 1)) {
	case VIRTIO_PCI_CAP_COMMON_CFG:
		v->common = fv_cfg_rd(v, ptr + VIRTIO_PCI_CAP_OFFSET, 4);
		PROBE_CHECK(fv_cfg_rd(v, ptr + VIRTIO_PCI_CAP_LENGTH, 4) >=
			    sizeof(struct virtio_pci_common_cfg));
		break;
	case VIRTIO_PCI_CAP_NOTIFY_CFG:
		PROBE_CHECK(fv_cfg_rd(v, ptr + VIRTIO_PCI_CAP_LEN, 1) >= 20);
		v->notify = fv_cfg_rd(v, ptr + VIRTIO_PCI_CAP_OFFSET, 4);
		v->notify_len = fv_cfg_rd(v, ptr + VIRTIO_PCI_CAP_LENGTH, 4);
		v->mult = fv_cfg_rd(v, ptr + VIRTIO_PCI_NOTIFY_CAP_MULT, 4);
		break;
	case VIRTIO_PCI_CAP_ISR_CFG:
		v->isr = fv_cfg_rd(v, ptr + VIRTIO_PCI_CAP_OFFSET, 4);
		break;
	case VIRTIO_PCI_CAP_DEVICE_CFG:
		v->devcfg = fv_cfg_rd(v, ptr + VIRTIO_PCI_CAP_OFFSET, 4);
		v->devcfg_len = fv_cfg_rd(v, ptr + VIRTIO_PCI_CAP_LENGTH, 4);
		break;
	case VIRTIO_PCI_CAP_PCI_CFG:
		v->pcicfg = ptr;
		break;
	default:
		PROBE_CHECK(!"unknown virtio cap");
	}
	return 0;
}

int fv_probe(struct fv *v)
{
	unsigned int ptr, n = 0;
	uint32_t bar;
	int ret;

	for (v->slot = 1; v->slot < PCI_MAX_SLOTS; v->slot++)
		if (fv_cfg_rd(v, PCI_CFG_VENDOR_ID, 2) == VPCI_VENDOR_ID)
			break;
	if (v->slot >= PCI_MAX_SLOTS)
		return -ENODEV;
	bar = fv_cfg_rd(v, PCI_CFG_BAR0, 4);
	PROBE_CHECK((bar & 0xf) == 0); /* 32-bit, non-prefetchable memory */
	v->bar = bar & ~0xfu;
	PROBE_CHECK(v->bar >= v->mmio_base);
	PROBE_CHECK(fv_cfg_rd(v, PCI_CFG_STATUS, 2) & PCI_STS_CAP_LIST);
	v->common = v->notify = v->isr = v->devcfg = UINT32_MAX;
	v->pcicfg = v->msix = 0;
	for (ptr = fv_cfg_rd(v, PCI_CFG_CAP_PTR, 1); ptr;
	     ptr = fv_cfg_rd(v, ptr + 1, 1)) {
		unsigned int id = fv_cfg_rd(v, ptr, 1);

		PROBE_CHECK(++n < 16);
		PROBE_CHECK(ptr >= PCI_CAP_START);
		if (id == PCI_CAPID_MSIX) {
			uint32_t ctrl = fv_cfg_rd(v, ptr + MSIX_CAP_CTRL, 2);
			uint32_t tbl = fv_cfg_rd(v, ptr + MSIX_CAP_TABLE, 4);
			uint32_t pba = fv_cfg_rd(v, ptr + MSIX_CAP_PBA, 4);

			v->msix = ptr;
			v->nr_vectors = (ctrl & MSIX_CTRL_QSIZE) + 1;
			PROBE_CHECK((tbl & 7) == VPCI_BAR);
			PROBE_CHECK((pba & 7) == VPCI_BAR);
			v->table = tbl & ~7u;
			v->pba = pba & ~7u;
			continue;
		}
		if (id == PCI_CAPID_VNDR && (ret = probe_vndr(v, ptr)))
			return ret;
	}
	if (v->common == UINT32_MAX || v->notify == UINT32_MAX ||
	    v->isr == UINT32_MAX || v->devcfg == UINT32_MAX || !v->pcicfg ||
	    !v->msix) {
		fprintf(stderr, "fake_vpci: probe: capability missing\n");
		return -ENODEV;
	}
	v->nq = (unsigned int)FV_COMMON_RD(v, NUMQ, 2);
	return 0;
}

/* ---- MSI-X, queues, bring-up ------------------------------------------- */

void fv_msix_ctrl(struct fv *v, uint16_t bits)
{
	fv_cfg_wr(v, v->msix + MSIX_CAP_CTRL, bits, 2);
}

void fv_msix_write(struct fv *v, unsigned int vec, uint64_t addr, uint32_t data)
{
	uint32_t e = v->table + vec * MSIX_ENTRY_SIZE;

	fv_mw(v, e + MSIX_ENTRY_ADDR_LO, (uint32_t)addr, 4);
	fv_mw(v, e + MSIX_ENTRY_ADDR_HI, (uint32_t)(addr >> 32), 4);
	fv_mw(v, e + MSIX_ENTRY_DATA, data, 4);
}

void fv_msix_mask(struct fv *v, unsigned int vec, bool masked)
{
	fv_mw(v, v->table + vec * MSIX_ENTRY_SIZE + MSIX_ENTRY_CTRL, masked, 4);
}

bool fv_pba_bit(struct fv *v, unsigned int vec)
{
	return fv_mr(v, v->pba + (vec / 64) * 8, 8) >> (vec % 64) & 1;
}

uint64_t fv_notify_addr(struct fv *v, unsigned int q)
{
	uint32_t off;

	FV_COMMON_WR(v, Q_SELECT, q, 2);
	off = (uint32_t)FV_COMMON_RD(v, Q_NOFF, 2);
	return v->bar + v->notify + off * v->mult;
}

int fv_negotiate(struct fv *v, uint64_t want, uint64_t *offered)
{
	uint64_t f;

	FV_COMMON_WR(v, STATUS, 0, 1);
	if (fv_status(v) != 0)
		return -EIO;
	fv_status_add(v, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	fv_status_add(v, VIRTIO_CONFIG_S_DRIVER);
	FV_COMMON_WR(v, DFSELECT, 0, 4);
	f = FV_COMMON_RD(v, DF, 4);
	FV_COMMON_WR(v, DFSELECT, 1, 4);
	f |= FV_COMMON_RD(v, DF, 4) << 32;
	if (offered)
		*offered = f;
	if ((f & want) != want)
		return -ENOTSUP;
	FV_COMMON_WR(v, GFSELECT, 0, 4);
	FV_COMMON_WR(v, GF, (uint32_t)want, 4);
	FV_COMMON_WR(v, GFSELECT, 1, 4);
	FV_COMMON_WR(v, GF, (uint32_t)(want >> 32), 4);
	fv_status_add(v, VIRTIO_CONFIG_S_FEATURES_OK);
	if (!(fv_status(v) & VIRTIO_CONFIG_S_FEATURES_OK))
		return -EIO;
	return 0;
}

uint16_t fv_queue_setup(struct fv *v, unsigned int q, uint16_t size,
			uint64_t desc, uint64_t avail, uint64_t used,
			uint16_t vector)
{
	uint16_t got;

	FV_COMMON_WR(v, Q_SELECT, q, 2);
	FV_COMMON_WR(v, Q_SIZE, size, 2);
	FV_COMMON_WR(v, Q_DESCLO, desc, 8);
	FV_COMMON_WR(v, Q_AVAILLO, avail, 8);
	FV_COMMON_WR(v, Q_USEDLO, used, 8);
	FV_COMMON_WR(v, Q_MSIX, vector, 2);
	got = (uint16_t)FV_COMMON_RD(v, Q_MSIX, 2);
	FV_COMMON_WR(v, Q_ENABLE, 1, 2);
	return got;
}
