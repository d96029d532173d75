/* SPDX-License-Identifier: MIT */
/*
 * What the hostile driver's modes share (hostile.c: the virtio-blk and
 * console modes, the PCI take-over, DMA pages, output; net.c: the
 * virtio-net mode): the ring layout, the function's mapped regions, MMIO
 * accessors and the helpers below.  See hostile.c for the program.
 */
#ifndef HOSTILE_H
#define HOSTILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define PAGE 4096u
#define QSZ 256u	 /* our ring size: one page of descriptors */
#define WAIT_S 15.0	 /* a request must be answered within this (TCG) */
#define NO_VECTOR 0xffffu
#define F(b) (1ull << (b))

struct desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

struct avail {
	uint16_t flags;
	uint16_t idx;
	uint16_t ring[QSZ];
	uint16_t used_event;
};

struct used_elem {
	uint32_t id;
	uint32_t len;
};

struct used {
	uint16_t flags;
	uint16_t idx;
	struct used_elem ring[QSZ];
	uint16_t avail_event;
};

_Static_assert(sizeof(struct desc) * QSZ == PAGE, "descriptor table page");
_Static_assert(sizeof(struct used) <= PAGE, "used ring page");

struct page {
	uint8_t *va;
	uint64_t pa;
};

struct dev {
	char sys[128]; /* /sys/bus/pci/devices/BDF */
	int cfg_fd;
	uint8_t cfg[256];
	volatile uint8_t *bar;
	size_t bar_len;
	uint64_t bar_pa;
	volatile uint8_t *common, *notify, *isr, *devcfg;
	uint32_t notify_mult, notify_len;
	uint32_t notify_spare; /* unused bytes after the doorbells, <= 128 */
	unsigned int msix_cap, msix_n;
	volatile uint8_t *msix_table;
	uint16_t nq, notify_off;
	uint64_t offered;
	uint64_t capacity;
	uint32_t seg_max;
	struct desc *desc;
	struct avail *avail;
	struct used *used;
	uint16_t avail_idx, last_used;
	bool msix;
};

/* ---- MMIO (volatile accesses of the width asked) ------------------------ */

static inline uint8_t rd8(volatile uint8_t *b, unsigned int off)
{
	return *(volatile uint8_t *)(b + off);
}

static inline uint16_t rd16(volatile uint8_t *b, unsigned int off)
{
	return *(volatile uint16_t *)(b + off);
}

static inline uint32_t rd32(volatile uint8_t *b, unsigned int off)
{
	return *(volatile uint32_t *)(b + off);
}

static inline void wr8(volatile uint8_t *b, unsigned int off, uint8_t v)
{
	*(volatile uint8_t *)(b + off) = v;
}

static inline void wr16(volatile uint8_t *b, unsigned int off, uint16_t v)
{
	*(volatile uint16_t *)(b + off) = v;
}

static inline void wr32(volatile uint8_t *b, unsigned int off, uint32_t v)
{
	*(volatile uint32_t *)(b + off) = v;
}

static inline void wr64(volatile uint8_t *b, unsigned int off, uint64_t v)
{
	*(volatile uint64_t *)(b + off) = v;
}

/* ---- shared helpers (hostile.c) ----------------------------------------- */

extern double phase_s; /* -s: seconds per timed phase */

double now(void);
void pause_us(long us);
void __attribute__((format(printf, 1, 2), noreturn)) die(const char *fmt, ...);
/* An unexpected answer: "ABUSE FAIL ...", counted for the RESULT line. */
void __attribute__((format(printf, 1, 2))) failf(const char *fmt, ...);
uint64_t failures(void);
void phase_begin(const char *name);
void __attribute__((format(printf, 2, 3))) phase_done(const char *name,
						      const char *fmt, ...);
bool want(const char *name);
uint8_t status(struct dev *d);
void set_status(struct dev *d, uint8_t s);
void driver_ok(struct dev *d);
void dev_reset(struct dev *d);
uint64_t virt_to_phys(int pagemap_fd, const void *va);
/* Map the function's BAR, find its virtio regions and MSI-X table. */
void take_over(struct dev *d, const char *bdf);
void msix_function(struct dev *d, bool enable, bool maskall);
void unbind(const char *bdf);

/* ---- rings of the net and vsock modes (ring.c) -------------------------- */

struct vq {
	uint16_t idx; /* the device's queue index */
	uint16_t notify_off;
	struct desc *desc;
	struct avail *avail;
	struct used *used;
	uint16_t avail_idx, last_used;
};

extern uint64_t ring_kicks; /* doorbells rung by vq_kick() */

/* @n mlock'ed pages and their guest-physical addresses. */
void dma_pages(struct page *p, unsigned int n);
/* After a reset: ACKNOWLEDGE, DRIVER, the offered features that are in
 * @want, FEATURES_OK (dies if refused); returns the offered features. */
uint64_t dev_negotiate(struct dev *d, uint64_t want);
/* Queue @idx, QSZ entries, rings in pages @p[0..2] (cleared), no vector,
 * enabled. */
void vq_setup(struct dev *d, struct vq *x, const struct page *p, uint16_t idx);
void vq_kick(struct dev *d, struct vq *x);
void vq_desc(struct vq *x, unsigned int i, uint64_t addr, uint32_t len,
	     uint16_t flags, uint16_t next);
void vq_publish(struct vq *x, uint16_t head);
uint16_t vq_used_idx(struct vq *x);
/* Until @x has a used entry not yet taken (last_used): 0; the device set
 * NEEDS_RESET instead: -1; nothing after WAIT_S: -2. */
int vq_wait(struct dev *d, struct vq *x);

/* net.c: the virtio-net mode (-n); vsock.c: the virtio-vsock mode (-v);
 * each returns the exit status. */
int net_main(struct dev *d, const char *bdf);
int vsock_main(struct dev *d, const char *bdf);

#endif
