/* SPDX-License-Identifier: MIT */
/*
 * hostile: a hostile user-space driver for one virtio-blk-pci function,
 * run as root inside the L2 guest by the "abuse" payload (tests/guest/abuse,
 * tests/e2e/abuse.sh).  Built static on the host by tests/rig/mktools.sh and
 * shipped on the tools disk.
 *
 *     hostile [-s SECONDS] [-r RESETS] [-p PHASE,...] BDF
 *
 * The payload has unbound BDF from virtio-pci.  We enable memory space and
 * bus mastering through /sys/bus/pci/devices/BDF/config, map the BAR through
 * .../resourceN, find the virtio capabilities (common, notify, ISR, device
 * configuration) and the MSI-X table, and drive the device ourselves: rings,
 * request headers, buffers and indirect tables live in mlock'ed pages whose
 * guest-physical addresses come from /proc/self/pagemap (the guest has no
 * IOMMU: bus address = guest-physical address).  Every structure fits in one
 * 4 KiB page, so no physical contiguity is needed.
 *
 * Phases (each bounded by SECONDS, default 3, or an iteration count; -p
 * runs only the phases listed, in this order):
 *   kick-idle      notify writes with nothing queued (KVM ioeventfd path)
 *   kick-busy      notify writes while 64 reads are kept in flight
 *   kick-slow      doorbells of other widths (user space unless KVM has
 *                  IOEVENTFD_ANY_LENGTH), of a queue that is not enabled
 *                  and past the last doorbell (always user space)
 *   kick-broken    notify writes at a queue broken by a descriptor loop
 *   msix-masked    mask / rewrite the message 8 times / unmask, with the
 *                  function mask toggled now and then, reads in flight
 *   msix-unmasked  rewrites of UNMASKED vectors (32- and 64-bit), reads in
 *                  flight; messages go to Linux's reschedule vector
 *   reset          reset + full re-initialisation (MSI-X vectors, queue
 *                  enabled) RESETS times (default 1000; at most 4 x
 *                  SECONDS), a quarter with a read queued before
 *                  DRIVER_OK, a quarter with one kicked just before the
 *                  reset
 *   bigchain       a full-page indirect table (256 descriptors) and direct
 *                  chains over the device's seg_max
 *   malformed      out-of-range addresses and indices, loops, wrong
 *                  lengths and directions, bad indirect tables, transport
 *                  misuse; each must complete with OK/IOERR/UNSUPP or set
 *                  DEVICE_NEEDS_RESET, as README.md promises
 *   sanity         after a reset: write, flush, read back, read sector 0
 *
 * Net mode (-n, net.c) and vsock mode (-v, vsock.c): the same abuse of a
 * virtio-net function (control-queue garbage, malformed TX chains, bad RX
 * buffers, resets under load, an ARP round trip) and of a virtio-vsock
 * function (malformed packets, credit updates, a REQUEST flood past the
 * connection limit, a connection to the host); their phases are listed
 * there, their rings are ring.c's.  Output "ABUSE net ..." / "ABUSE vsock
 * ...", with their own totals and RESULT lines.
 *
 * Console mode (a root container against minivmm-oci, tests/e2e/
 * oci_hostile.sh), BDF "console" or a virtio-console function's:
 *     hostile [-S BYTES] -c FRAMES [-u PAGES] [-x STATUS] console
 *   -S  first write BYTES to COM1 (ioperm(0x3f8) + rep outsb);
 *   -c  take the virtio-console over and send FRAMES ERROR frames (512
 *       bytes each) on port 0's transmit queue (minivmm.ctl), kicked,
 *       in chains of 16 pages, each completion awaited;
 *   -u  then make PAGES pages of them available without a kick (at most
 *       128: 512 KiB, more than a socket buffer; only the device's stop
 *       finds them);
 *   -x  then end the VM: outl(STATUS, 0xf4) (the exit port).
 *
 * Output, one line each on stdout (the console):
 *     ABUSE phase=NAME begin
 *     ABUSE phase=NAME done key=value...
 *     ABUSE FAIL what          (for each unexpected answer)
 *     ABUSE totals key=value... (what the device must have counted)
 *     ABUSE RESULT ok|FAIL n
 * Exit status: 0 when every request got the expected answer, 1 if not,
 * 2 if the device could not be taken over.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <sys/io.h> /* ioperm, outl: -S and -x are x86 port I/O */
#endif
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/pci_regs.h>
#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>
#include <linux/virtio_console.h>
#include <linux/virtio_pci.h>
#include <linux/virtio_ring.h>

#include "hostile.h"

#define NDATA 64u	 /* data pages */
#define NBUSY 64u	 /* requests kept in flight by the busy phases */
#define KICK_MAX 5000000ull
/* MSI messages we program: fixed delivery, edge, physical destination
 * APIC 0 or 1, Linux's RESCHEDULE_VECTOR, whose handler only acks and
 * looks at need_resched: harmless whenever a completion fires it. */
#define HARMLESS_VECTOR 0xfdu

/* Our pages (one 4 KiB page each). */
enum {
	PG_DESC,
	PG_AVAIL,
	PG_USED,
	PG_HDR,	 /* request headers, 16 bytes per head */
	PG_STAT, /* status bytes, one per head */
	PG_IND0, /* indirect tables */
	PG_IND1,
	PG_MISC, /* GET_ID buffers, discard ranges */
	PG_DATA,
	NPAGES = PG_DATA + NDATA,
};

/* Request classes, as the VMM counts them (vmm_queue_stats.requests[]). */
enum { C_READ, C_WRITE, C_FLUSH, C_GET_ID, C_DISCARD, C_WZ, C_OTHER, C_NR };
static const char *const cls_name[C_NR] = {
	"read", "write", "flush", "get_id", "discard", "write_zeroes", "other",
};


/* One chain we made available, by head. */
struct trk {
	bool busy;
	uint8_t cls;
	int expect;	     /* VIRTIO_BLK_S_* or -1: any */
	uint32_t data_bytes; /* IN: device-writable data bytes; OUT: data bytes */
	uint8_t *st;	     /* its status byte */
	const char *what;
};

/* What the device must have counted (see abuse.sh) and our own tallies. */
static struct {
	uint64_t reqs[C_NR];
	uint64_t read_bytes, write_bytes;
	uint64_t ok, ioerr, unsupp, needs_reset, resets, kicks, rewrites;
	uint64_t reset_completed; /* in flight at a reset, returned by it */
	uint64_t reset_dropped;	  /* made available, never popped */
	uint64_t failures;
} C;

static struct page pg[NPAGES];
static struct trk trk[QSZ];
double phase_s = 3.0;
static unsigned int max_resets = 1000;
static const char *only; /* -p: comma-separated phase names, or NULL */
static bool console_mode;  /* -c: the function is a virtio-console */
static bool net_mode;	   /* -n: the function is a virtio-net (net.c) */
static bool vsock_mode;	   /* -v: the function is a virtio-vsock (vsock.c) */
static uint16_t qsel;	   /* the queue queue_setup() sets up */
static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* ---- utilities -------------------------------------------------------- */

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void pause_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

void __attribute__((format(printf, 1, 2), noreturn)) die(const char *fmt, ...)
{
	va_list ap;

	printf("ABUSE FATAL ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(2);
}

void __attribute__((format(printf, 1, 2))) failf(const char *fmt, ...)
{
	va_list ap;

	C.failures++;
	if (C.failures > 50)
		return; /* counted, not printed: keep the console usable */
	printf("ABUSE FAIL ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

uint64_t failures(void)
{
	return C.failures;
}

void phase_begin(const char *name)
{
	printf("ABUSE phase=%s begin\n", name);
}

void __attribute__((format(printf, 2, 3))) phase_done(const char *name,
							      const char *fmt, ...)
{
	va_list ap;

	printf("ABUSE phase=%s done ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* ---- MMIO and config space ------------------------------------------- */

static uint16_t cfg_rd16(struct dev *d, unsigned int off)
{
	uint16_t v;

	if (pread(d->cfg_fd, &v, 2, off) != 2)
		die("config read at 0x%x: %s", off, strerror(errno));
	return v;
}

static void cfg_wr16(struct dev *d, unsigned int off, uint16_t v)
{
	if (pwrite(d->cfg_fd, &v, 2, off) != 2)
		die("config write at 0x%x: %s", off, strerror(errno));
}

uint8_t status(struct dev *d)
{
	return rd8(d->common, VIRTIO_PCI_COMMON_STATUS);
}

void set_status(struct dev *d, uint8_t s)
{
	wr8(d->common, VIRTIO_PCI_COMMON_STATUS, s);
}

/* ---- DMA memory --------------------------------------------------------- */

uint64_t virt_to_phys(int pm, const void *va)
{
	uint64_t e;
	off_t off = (off_t)((uintptr_t)va / PAGE) * 8;

	if (pread(pm, &e, 8, off) != 8)
		die("pagemap read: %s", strerror(errno));
	if (!(e & (1ull << 63)))
		die("page %p not present", va);
	e &= (1ull << 55) - 1;
	if (!e)
		die("pagemap shows PFN 0 (not root / CAP_SYS_ADMIN?)");
	return e * PAGE;
}

static void dma_setup(bool check_only)
{
	static uint8_t *mem;
	int pm = open("/proc/self/pagemap", O_RDONLY);

	if (pm < 0)
		die("/proc/self/pagemap: %s", strerror(errno));
	if (!mem) {
		mem = mmap(NULL, (size_t)NPAGES * PAGE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (mem == MAP_FAILED)
			die("mmap: %s", strerror(errno));
		/* No THP collapse (it would move our pages). */
		madvise(mem, (size_t)NPAGES * PAGE, MADV_NOHUGEPAGE);
		memset(mem, 0, (size_t)NPAGES * PAGE);
		if (mlock(mem, (size_t)NPAGES * PAGE))
			die("mlock: %s", strerror(errno));
	}
	for (unsigned int i = 0; i < NPAGES; i++) {
		uint64_t pa = virt_to_phys(pm, mem + (size_t)i * PAGE);

		if (check_only) {
			if (pa != pg[i].pa)
				failf("page %u moved from 0x%" PRIx64 " to 0x%" PRIx64
				      " (DMA results after that are void)",
				      i, pg[i].pa, pa);
			continue;
		}
		pg[i].va = mem + (size_t)i * PAGE;
		pg[i].pa = pa;
	}
	close(pm);
}

static uint64_t pa_of(unsigned int page, unsigned int off)
{
	return pg[page].pa + off;
}

static void *va_of(unsigned int page, unsigned int off)
{
	return pg[page].va + off;
}

/* ---- taking the function over ---------------------------------------- */

static void map_bar(struct dev *d, unsigned int bar)
{
	char path[192];
	struct stat sb;
	FILE *f;
	int fd;

	if (d->bar)
		return;
	snprintf(path, sizeof(path), "%s/resource%u", d->sys, bar);
	fd = open(path, O_RDWR | O_SYNC);
	if (fd < 0 || fstat(fd, &sb))
		die("%s: %s", path, strerror(errno));
	d->bar_len = (size_t)sb.st_size;
	d->bar = mmap(NULL, d->bar_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (d->bar == MAP_FAILED)
		die("mmap %s: %s", path, strerror(errno));
	close(fd);
	/* Its guest-physical address (for the "DMA into MMIO" case). */
	snprintf(path, sizeof(path), "%s/resource", d->sys);
	f = fopen(path, "r");
	if (!f)
		die("%s: %s", path, strerror(errno));
	for (unsigned int i = 0; i <= bar; i++) {
		unsigned long long start, end, flags;

		if (fscanf(f, "%llx %llx %llx", &start, &end, &flags) != 3)
			die("%s: bad line %u", path, i);
		d->bar_pa = start;
	}
	fclose(f);
}

static volatile uint8_t *bar_ptr(struct dev *d, unsigned int bar, uint32_t off,
				 uint32_t len)
{
	if (bar > 5)
		die("capability in BAR %u", bar);
	map_bar(d, bar);
	if (off > d->bar_len || len > d->bar_len - off)
		die("capability region 0x%x+0x%x beyond the BAR (0x%zx)", off,
		    len, d->bar_len);
	return d->bar + off;
}

void take_over(struct dev *d, const char *bdf)
{
	char path[192];
	uint16_t cmd;
	unsigned int cap, bar = 6, guard = 0;

	snprintf(d->sys, sizeof(d->sys), "/sys/bus/pci/devices/%s", bdf);
	snprintf(path, sizeof(path), "%s/config", d->sys);
	d->cfg_fd = open(path, O_RDWR);
	if (d->cfg_fd < 0)
		die("%s: %s", path, strerror(errno));
	if (pread(d->cfg_fd, d->cfg, sizeof(d->cfg), 0) != (ssize_t)sizeof(d->cfg))
		die("%s: short read (not root?)", path);
	if (d->cfg[0] != 0xf4 || d->cfg[1] != 0x1a)
		die("%s is not a virtio function", bdf);

	/* Memory space + bus mastering (the unbound function may have lost
	 * bus mastering in pci_disable_device()). */
	cmd = cfg_rd16(d, PCI_COMMAND);
	cfg_wr16(d, PCI_COMMAND, cmd | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);

	if (!(d->cfg[PCI_STATUS] & PCI_STATUS_CAP_LIST))
		die("no capability list");
	for (cap = d->cfg[PCI_CAPABILITY_LIST] & ~3u; cap && guard < 48;
	     cap = d->cfg[cap + 1] & ~3u, guard++) {
		uint8_t id = d->cfg[cap];

		if (cap > sizeof(d->cfg) - 16)
			die("capability at 0x%x", cap);
		if (id == PCI_CAP_ID_MSIX) {
			uint32_t table;

			d->msix_cap = cap;
			d->msix_n = (d->cfg[cap + 2] | d->cfg[cap + 3] << 8) & PCI_MSIX_FLAGS_QSIZE;
			d->msix_n++;
			memcpy(&table, &d->cfg[cap + PCI_MSIX_TABLE], 4);
			d->msix_table = bar_ptr(d, table & PCI_MSIX_TABLE_BIR,
						table & PCI_MSIX_TABLE_OFFSET,
						16 * d->msix_n);
		} else if (id == PCI_CAP_ID_VNDR) {
			uint8_t type = d->cfg[cap + 3], b = d->cfg[cap + 4];
			uint32_t off, len;

			memcpy(&off, &d->cfg[cap + 8], 4);
			memcpy(&len, &d->cfg[cap + 12], 4);
			if (type < VIRTIO_PCI_CAP_COMMON_CFG ||
			    type > VIRTIO_PCI_CAP_DEVICE_CFG)
				continue; /* PCI_CFG window and vendor extras */
			if (bar != 6 && b != bar)
				die("virtio regions in two BARs");
			bar = b;
			switch (type) {
			case VIRTIO_PCI_CAP_COMMON_CFG:
				d->common = bar_ptr(d, b, off, len);
				break;
			case VIRTIO_PCI_CAP_NOTIFY_CFG:
				d->notify = bar_ptr(d, b, off, len);
				d->notify_len = len;
				memcpy(&d->notify_mult, &d->cfg[cap + 16], 4);
				break;
			case VIRTIO_PCI_CAP_ISR_CFG:
				d->isr = bar_ptr(d, b, off, len);
				break;
			case VIRTIO_PCI_CAP_DEVICE_CFG:
				d->devcfg = bar_ptr(d, b, off, len);
				break;
			}
		}
	}
	if (!d->common || !d->notify || !d->isr || !d->devcfg || !d->msix_table)
		die("missing a virtio capability or MSI-X");
	/* Bytes after the last doorbell that belong to no register: up to
	 * the end of the BAR or the MSI-X table, whichever comes first. */
	{
		size_t end = (size_t)(d->notify - d->bar) + d->notify_len;
		size_t lim = d->bar_len, tab = (size_t)(d->msix_table - d->bar);

		if (tab >= end && tab < lim)
			lim = tab;
		d->notify_spare = (uint32_t)(lim - end < 128 ? lim - end : 128) & ~1u;
	}
	d->nq = rd16(d->common, VIRTIO_PCI_COMMON_NUMQ);
	d->desc = va_of(PG_DESC, 0);
	d->avail = va_of(PG_AVAIL, 0);
	d->used = va_of(PG_USED, 0);
	if (console_mode || net_mode || vsock_mode) {
		printf("ABUSE %s %s: %u queues\n",
		       net_mode ? "net" : vsock_mode ? "vsock" : "console", bdf, d->nq);
		return;
	}
	d->capacity = rd32(d->devcfg, 0) | (uint64_t)rd32(d->devcfg, 4) << 32;
	d->seg_max = rd32(d->devcfg, 12);
	printf("ABUSE device %s: BAR 0x%" PRIx64 "+0x%zx, %u queues, %u MSI-X "
	       "vectors, notify x%u, capacity %" PRIu64 " sectors, seg_max %u\n",
	       bdf, d->bar_pa, d->bar_len, d->nq, d->msix_n, d->notify_mult,
	       d->capacity, d->seg_max);
	if (d->capacity < 4096)
		die("victim disk too small (%" PRIu64 " sectors)", d->capacity);
}

/* ---- MSI-X -------------------------------------------------------------- */

void msix_function(struct dev *d, bool enable, bool maskall)
{
	uint16_t ctrl = cfg_rd16(d, d->msix_cap + PCI_MSIX_FLAGS);

	ctrl &= (uint16_t)~(PCI_MSIX_FLAGS_ENABLE | PCI_MSIX_FLAGS_MASKALL);
	if (enable)
		ctrl |= PCI_MSIX_FLAGS_ENABLE;
	if (maskall)
		ctrl |= PCI_MSIX_FLAGS_MASKALL;
	cfg_wr16(d, d->msix_cap + PCI_MSIX_FLAGS, ctrl);
}

static uint64_t msi_addr(unsigned int apic)
{
	return 0xfee00000ull | (uint64_t)(apic & 0xff) << 12;
}

static void msix_mask(struct dev *d, unsigned int v, bool masked)
{
	wr32(d->msix_table, 16 * v + 12, masked ? 1 : 0);
}

/* Rewrite vector @v's message: @wide uses one 64-bit address write. */
static void msix_msg(struct dev *d, unsigned int v, unsigned int apic, bool wide)
{
	uint64_t a = msi_addr(apic);

	if (wide) {
		wr64(d->msix_table, 16 * v, a);
	} else {
		wr32(d->msix_table, 16 * v, (uint32_t)a);
		wr32(d->msix_table, 16 * v + 4, (uint32_t)(a >> 32));
	}
	wr32(d->msix_table, 16 * v + 8, HARMLESS_VECTOR);
	C.rewrites++;
}

/* ---- driver side of the ring --------------------------------------------- */

static void kick(struct dev *d)
{
	/* Everything we wrote into the rings before the doorbell. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	wr16(d->notify, (uint32_t)d->notify_off * d->notify_mult, 0);
	C.kicks++;
}

static void set_desc(struct desc *t, unsigned int i, uint64_t addr, uint32_t len,
		     uint16_t flags, uint16_t next)
{
	t[i].addr = addr;
	t[i].len = len;
	t[i].flags = flags;
	t[i].next = next;
}

static void track(uint16_t head, uint8_t cls, int expect, uint32_t data_bytes,
		  uint8_t *st, const char *what)
{
	struct trk *t = &trk[head];

	if (t->busy)
		die("internal: head %u reused while in flight (%s)", head, what);
	t->busy = true;
	t->cls = cls;
	t->expect = expect;
	t->data_bytes = data_bytes;
	t->st = st;
	t->what = what;
	*st = 0xee; /* the device must overwrite it */
}

static void publish(struct dev *d, uint16_t head)
{
	d->avail->ring[d->avail_idx % QSZ] = head;
	__atomic_store_n(&d->avail->idx, (uint16_t)(d->avail_idx + 1),
			 __ATOMIC_RELEASE);
	d->avail_idx++;
}

static unsigned int inflight(void)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < QSZ; i++)
		n += trk[i].busy;
	return n;
}

static uint32_t expect_used_len(const struct trk *t, uint8_t st)
{
	if (st != VIRTIO_BLK_S_OK)
		return 1;
	if (t->cls == C_READ)
		return t->data_bytes + 1;
	if (t->cls == C_GET_ID)
		return (t->data_bytes < VIRTIO_BLK_ID_BYTES ? t->data_bytes :
							       VIRTIO_BLK_ID_BYTES) + 1;
	return 1;
}

/* Account every used entry the device has published. */
static unsigned int reap(struct dev *d)
{
	uint16_t uidx = __atomic_load_n(&d->used->idx, __ATOMIC_ACQUIRE);
	unsigned int n = 0;

	if ((uint16_t)(uidx - d->last_used) > QSZ) {
		failf("used->idx jumped from %u to %u", d->last_used, uidx);
		d->last_used = uidx;
		return 0;
	}
	while (d->last_used != uidx) {
		struct used_elem e = d->used->ring[d->last_used % QSZ];
		struct trk *t;
		uint8_t st;

		d->last_used++;
		n++;
		if (e.id >= QSZ || !trk[e.id].busy) {
			failf("used entry for head %u, which is not in flight", e.id);
			continue;
		}
		t = &trk[e.id];
		t->busy = false;
		st = *t->st;
		C.reqs[t->cls]++;
		if (st == VIRTIO_BLK_S_OK) {
			C.ok++;
			if (t->cls == C_READ)
				C.read_bytes += t->data_bytes;
			else if (t->cls == C_WRITE)
				C.write_bytes += t->data_bytes;
		} else if (st == VIRTIO_BLK_S_IOERR) {
			C.ioerr++;
		} else if (st == VIRTIO_BLK_S_UNSUPP) {
			C.unsupp++;
		} else {
			failf("%s: status byte 0x%02x", t->what, st);
			continue;
		}
		if (t->expect >= 0 && st != t->expect)
			failf("%s: status %u, expected %d", t->what, st, t->expect);
		if (e.len != expect_used_len(t, st))
			failf("%s: used len %u, expected %u", t->what, e.len,
			      expect_used_len(t, st));
	}
	return n;
}

/* Forget what the device did not return before a reset: it was never
 * popped, so the device did not count it either. */
static unsigned int drop_inflight(void)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < QSZ; i++) {
		n += trk[i].busy;
		trk[i].busy = false;
	}
	return n;
}

/* Wait until nothing is in flight.  0, or -1 if NEEDS_RESET, -2 timeout. */
static int wait_idle(struct dev *d, double timeout)
{
	double t0 = now();

	for (unsigned int i = 0;; i++) {
		reap(d);
		if (!inflight())
			return 0;
		if (i < 64)
			continue;
		if (status(d) & VIRTIO_CONFIG_S_NEEDS_RESET)
			return -1;
		if (now() - t0 > timeout)
			return -2;
		pause_us(20);
	}
}

/* ---- device bring-up --------------------------------------------------- */

#define FEAT_BASE                                                        \
	(F(VIRTIO_F_VERSION_1) | F(VIRTIO_BLK_F_SEG_MAX) |               \
	 F(VIRTIO_BLK_F_BLK_SIZE) | F(VIRTIO_BLK_F_FLUSH) |              \
	 F(VIRTIO_BLK_F_DISCARD) | F(VIRTIO_BLK_F_WRITE_ZEROES))
#define FEAT_DEFAULT (FEAT_BASE | F(VIRTIO_RING_F_INDIRECT_DESC))

void dev_reset(struct dev *d)
{
	set_status(d, 0);
	for (unsigned int i = 0; status(d) != 0; i++) {
		if (i > 100000)
			die("status does not read 0 after a reset");
		pause_us(10);
	}
	C.resets++;
}

/* Reset, then take what the device returned (in-flight requests complete
 * to the used ring during the reset) and forget the rest. */
static void dev_reset_reap(struct dev *d)
{
	dev_reset(d);
	C.reset_completed += reap(d);
	C.reset_dropped += drop_inflight();
}

/* Optional features: asked for only when offered. */
#define FEAT_OPTIONAL                                                    \
	(F(VIRTIO_BLK_F_SEG_MAX) | F(VIRTIO_BLK_F_BLK_SIZE) |             \
	 F(VIRTIO_BLK_F_FLUSH) | F(VIRTIO_BLK_F_DISCARD) |                \
	 F(VIRTIO_BLK_F_WRITE_ZEROES))

/* Reset through FEATURES_OK; returns whether FEATURES_OK stuck. */
static bool dev_features(struct dev *d, uint64_t want)
{
	uint64_t f;

	dev_reset_reap(d);
	set_status(d, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	set_status(d, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
	wr32(d->common, VIRTIO_PCI_COMMON_DFSELECT, 0);
	f = rd32(d->common, VIRTIO_PCI_COMMON_DF);
	wr32(d->common, VIRTIO_PCI_COMMON_DFSELECT, 1);
	f |= (uint64_t)rd32(d->common, VIRTIO_PCI_COMMON_DF) << 32;
	d->offered = f;
	want &= ~(FEAT_OPTIONAL & ~f);
	wr32(d->common, VIRTIO_PCI_COMMON_GFSELECT, 0);
	wr32(d->common, VIRTIO_PCI_COMMON_GF, (uint32_t)want);
	wr32(d->common, VIRTIO_PCI_COMMON_GFSELECT, 1);
	wr32(d->common, VIRTIO_PCI_COMMON_GF, (uint32_t)(want >> 32));
	set_status(d, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
			      VIRTIO_CONFIG_S_FEATURES_OK);
	return status(d) & VIRTIO_CONFIG_S_FEATURES_OK;
}

/* Fresh rings for queue 0 (after a reset). */
static void rings_clear(struct dev *d)
{
	memset(va_of(PG_DESC, 0), 0, PAGE);
	memset(va_of(PG_AVAIL, 0), 0, PAGE);
	memset(va_of(PG_USED, 0), 0, PAGE);
	d->avail_idx = d->last_used = 0;
}

static void queue_setup(struct dev *d, uint16_t size, uint64_t desc,
			uint64_t avail, uint64_t used, bool msix)
{
	wr16(d->common, VIRTIO_PCI_COMMON_MSIX, msix ? 0 : NO_VECTOR);
	wr16(d->common, VIRTIO_PCI_COMMON_Q_SELECT, qsel);
	wr16(d->common, VIRTIO_PCI_COMMON_Q_SIZE, size);
	wr16(d->common, VIRTIO_PCI_COMMON_Q_MSIX, msix ? 1 : NO_VECTOR);
	wr32(d->common, VIRTIO_PCI_COMMON_Q_DESCLO, (uint32_t)desc);
	wr32(d->common, VIRTIO_PCI_COMMON_Q_DESCHI, (uint32_t)(desc >> 32));
	wr32(d->common, VIRTIO_PCI_COMMON_Q_AVAILLO, (uint32_t)avail);
	wr32(d->common, VIRTIO_PCI_COMMON_Q_AVAILHI, (uint32_t)(avail >> 32));
	wr32(d->common, VIRTIO_PCI_COMMON_Q_USEDLO, (uint32_t)used);
	wr32(d->common, VIRTIO_PCI_COMMON_Q_USEDHI, (uint32_t)(used >> 32));
	d->notify_off = rd16(d->common, VIRTIO_PCI_COMMON_Q_NOFF);
	wr16(d->common, VIRTIO_PCI_COMMON_Q_ENABLE, 1);
}

void driver_ok(struct dev *d)
{
	set_status(d, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
			      VIRTIO_CONFIG_S_FEATURES_OK | VIRTIO_CONFIG_S_DRIVER_OK);
}

/* Full bring-up of queue 0 (size QSZ), optionally on MSI-X vectors 0/1;
 * @pre, if set, is called with the rings ready but before DRIVER_OK. */
static void dev_up_pre(struct dev *d, uint64_t feats, bool msix,
		       void (*pre)(struct dev *))
{
	uint8_t s;

	if (!dev_features(d, feats))
		die("FEATURES_OK refused for 0x%" PRIx64 " (offered 0x%" PRIx64 ")",
		    feats, d->offered);
	rings_clear(d);
	queue_setup(d, QSZ, pa_of(PG_DESC, 0), pa_of(PG_AVAIL, 0),
		    pa_of(PG_USED, 0), msix);
	if (msix && rd16(d->common, VIRTIO_PCI_COMMON_Q_MSIX) != 1)
		die("queue vector 1 refused");
	d->msix = msix;
	if (pre)
		pre(d);
	driver_ok(d);
	s = status(d);
	if (!(s & VIRTIO_CONFIG_S_DRIVER_OK) || (s & VIRTIO_CONFIG_S_NEEDS_RESET))
		die("bring-up failed: status 0x%02x", s);
}

static void dev_up(struct dev *d, uint64_t feats, bool msix)
{
	dev_up_pre(d, feats, msix, NULL);
}

/* ---- request builders ---------------------------------------------------- */

static struct virtio_blk_outhdr *hdr_of(uint16_t head)
{
	return va_of(PG_HDR, 16u * head);
}

static void set_hdr(uint16_t head, uint32_t type, uint64_t sector)
{
	struct virtio_blk_outhdr *h = hdr_of(head);

	h->type = type;
	h->ioprio = 0;
	h->sector = sector;
}

/* A 3-descriptor request at descriptors head..head+2: header, one data
 * buffer (data page @dp, @len bytes), status. */
static void put_rw(struct dev *d, uint16_t head, uint32_t type, uint64_t sector,
		   unsigned int dp, uint32_t len, int expect, const char *what)
{
	bool in = type == VIRTIO_BLK_T_IN;

	set_hdr(head, type, sector);
	set_desc(d->desc, head, pa_of(PG_HDR, 16u * head), 16, VRING_DESC_F_NEXT,
		 (uint16_t)(head + 1));
	set_desc(d->desc, head + 1u, pa_of(dp, 0), len,
		 VRING_DESC_F_NEXT | (in ? VRING_DESC_F_WRITE : 0),
		 (uint16_t)(head + 2));
	set_desc(d->desc, head + 2u, pa_of(PG_STAT, head), 1, VRING_DESC_F_WRITE, 0);
	track(head, in ? C_READ : C_WRITE, expect, len, va_of(PG_STAT, head), what);
	publish(d, head);
}

static uint64_t rnd_sector(struct dev *d, uint32_t len)
{
	uint64_t n = d->capacity - len / 512;

	return (rnd() % n) & ~7ull;
}

/* One request, kicked and waited for; returns its status (or -1 if the
 * device set NEEDS_RESET, -2 on timeout). */
static int run_one(struct dev *d, uint16_t head)
{
	int r;

	kick(d);
	r = wait_idle(d, WAIT_S);
	if (r)
		return r;
	return *trk[head].st;
}

/* A good 4 KiB read at descriptors 0..2 that must complete OK. */
static void good_read(struct dev *d, const char *what)
{
	int r;

	put_rw(d, 0, VIRTIO_BLK_T_IN, rnd_sector(d, 4096), PG_DATA, 4096,
	       VIRTIO_BLK_S_OK, what);
	r = run_one(d, 0);
	if (r != VIRTIO_BLK_S_OK)
		failf("%s: %s", what, r == -1 ? "device needs reset" :
				      r == -2 ? "no answer" : "bad status");
}

/* ---- phase (a): kick storms --------------------------------------------- */

static void phase_kick_idle(struct dev *d)
{
	uint64_t n = 0;
	double t0, dt;

	phase_begin("kick-idle");
	dev_up(d, FEAT_DEFAULT, false);
	t0 = now();
	while (n < KICK_MAX && ((n & 1023) || now() - t0 < phase_s)) {
		kick(d);
		n++;
	}
	dt = now() - t0;
	good_read(d, "read after the idle kick storm");
	phase_done("kick-idle", "kicks=%" PRIu64 " seconds=%.1f rate=%.0f/s", n, dt,
		   (double)n / dt);
}

/* Keep NBUSY 4 KiB reads (heads 3*i) in flight; re-post what completed. */
static unsigned int busy_refill(struct dev *d, const char *what)
{
	unsigned int posted = 0;

	reap(d);
	for (unsigned int i = 0; i < NBUSY; i++) {
		uint16_t head = (uint16_t)(3 * i);

		if (trk[head].busy)
			continue;
		put_rw(d, head, VIRTIO_BLK_T_IN, rnd_sector(d, 4096), PG_DATA + i,
		       4096, VIRTIO_BLK_S_OK, what);
		posted++;
	}
	return posted;
}

static void busy_drain(struct dev *d, const char *what)
{
	int r;

	kick(d);
	r = wait_idle(d, WAIT_S);
	if (r)
		failf("%s: %s with %u requests in flight", what,
		      r == -1 ? "device needs reset" : "no answer", inflight());
}

static void phase_kick_busy(struct dev *d)
{
	uint64_t n = 0, reqs0 = C.reqs[C_READ];
	double t0, dt;

	phase_begin("kick-busy");
	dev_up(d, FEAT_DEFAULT, false);
	t0 = now();
	while (n < KICK_MAX && ((n & 1023) || now() - t0 < phase_s)) {
		if (!(n & 15))
			busy_refill(d, "kick-busy read");
		kick(d);
		n++;
	}
	busy_drain(d, "kick-busy");
	dt = now() - t0;
	phase_done("kick-busy", "kicks=%" PRIu64 " seconds=%.1f requests=%" PRIu64,
		   n, dt, C.reqs[C_READ] - reqs0);
}

/* Doorbell writes the VMM sees in user space. */
static void phase_kick_slow(struct dev *d)
{
	uint32_t q0 = (uint32_t)d->notify_off * d->notify_mult;
	uint32_t qlast = (uint32_t)(d->nq - 1) * d->notify_mult;
	uint64_t n = 0;
	double t0, dt;

	phase_begin("kick-slow");
	dev_up(d, FEAT_DEFAULT, false);
	t0 = now();
	while ((n & 255) || now() - t0 < phase_s) {
		switch (n % 4) {
		case 0: /* 32-bit doorbell of queue 0 */
			wr32(d->notify, q0, 0);
			break;
		case 1: /* 8-bit doorbell of queue 0 */
			wr8(d->notify, q0, 0);
			break;
		case 2: /* the last queue, never enabled */
			wr16(d->notify, qlast, (uint16_t)(d->nq - 1));
			break;
		default: /* past the last doorbell: no register there */
			if (d->notify_spare)
				wr16(d->notify, d->notify_len +
					 (2 * (uint32_t)n) % d->notify_spare, 0);
			else
				wr16(d->notify, qlast, (uint16_t)(d->nq - 1));
			break;
		}
		n++;
	}
	C.kicks += n;
	dt = now() - t0;
	good_read(d, "read after the slow-path kick storm");
	phase_done("kick-slow", "kicks=%" PRIu64 " seconds=%.1f rate=%.0f/s", n, dt,
		   (double)n / dt);
}

/* Wait for NEEDS_RESET after a malformed chain; the chain must not come
 * back in the used ring.  Returns whether NEEDS_RESET was seen. */
static bool expect_needs_reset(struct dev *d, const char *what)
{
	double t0 = now();
	uint16_t used0 = d->last_used;

	kick(d);
	while (!(status(d) & VIRTIO_CONFIG_S_NEEDS_RESET)) {
		if (now() - t0 > WAIT_S) {
			failf("%s: no DEVICE_NEEDS_RESET after %.0f s (status 0x%02x)",
			      what, WAIT_S, status(d));
			return false;
		}
		pause_us(50);
	}
	C.needs_reset++;
	if (__atomic_load_n(&d->used->idx, __ATOMIC_ACQUIRE) != used0)
		failf("%s: the device returned a malformed chain", what);
	return true;
}

static void put_loop(struct dev *d, const char *what)
{
	set_hdr(0, VIRTIO_BLK_T_IN, 0);
	set_desc(d->desc, 0, pa_of(PG_HDR, 0), 16, VRING_DESC_F_NEXT, 1);
	set_desc(d->desc, 1, pa_of(PG_DATA, 0), 512,
		 VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 0);
	track(0, C_READ, -1, 512, va_of(PG_STAT, 0), what);
	publish(d, 0);
}

static void phase_kick_broken(struct dev *d)
{
	uint64_t n = 0;
	double t0, dt;
	uint8_t s;

	phase_begin("kick-broken");
	dev_up(d, FEAT_DEFAULT, false);
	put_loop(d, "descriptor loop before the broken-queue storm");
	expect_needs_reset(d, "descriptor loop");
	t0 = now();
	while (n < KICK_MAX && ((n & 1023) || now() - t0 < phase_s)) {
		kick(d);
		n++;
	}
	dt = now() - t0;
	s = status(d);
	if (!(s & VIRTIO_CONFIG_S_NEEDS_RESET))
		failf("NEEDS_RESET went away without a reset (status 0x%02x)", s);
	dev_up(d, FEAT_DEFAULT, false);
	good_read(d, "read after the broken-queue storm");
	phase_done("kick-broken", "kicks=%" PRIu64 " seconds=%.1f", n, dt);
}

/* ---- phase (b): MSI-X rewrites ----------------------------------------- */

static void msix_program(struct dev *d)
{
	msix_function(d, true, true);
	for (unsigned int v = 0; v < 2; v++) {
		msix_msg(d, v, v, false);
		msix_mask(d, v, false);
	}
	msix_function(d, true, false);
}

static void phase_msix(struct dev *d, bool unmasked)
{
	const char *name = unmasked ? "msix-unmasked" : "msix-masked";
	uint64_t cycles = 0, rw0 = C.rewrites, reqs0 = C.reqs[C_READ];
	uint32_t lo, data;
	double t0, dt;

	phase_begin(name);
	msix_program(d);
	dev_up(d, FEAT_DEFAULT, true);
	t0 = now();
	while ((cycles & 7) || now() - t0 < phase_s) {
		if (busy_refill(d, unmasked ? "msix-unmasked read" : "msix-masked read"))
			kick(d);
		if (unmasked) {
			/* 16 rewrites of the live queue vector, alternating
			 * targets and access widths, one of the config
			 * vector. */
			for (unsigned int i = 0; i < 16; i++)
				msix_msg(d, 1, i & 1, i & 2);
			msix_msg(d, 0, (unsigned int)cycles & 1, false);
		} else {
			msix_mask(d, 1, true);
			for (unsigned int i = 0; i < 8; i++)
				msix_msg(d, 1, i & 1, i & 2);
			msix_mask(d, 1, false);
			if ((cycles & 31) == 31) {
				/* Function mask around a config vector rewrite. */
				msix_function(d, true, true);
				msix_msg(d, 0, 1, false);
				msix_function(d, true, false);
			}
		}
		cycles++;
	}
	busy_drain(d, name);
	dt = now() - t0;
	/* The table keeps what was written last: vector 1 -> APIC 1. */
	lo = rd32(d->msix_table, 16 * 1);
	data = rd32(d->msix_table, 16 * 1 + 8);
	if (lo != (uint32_t)msi_addr(1) || data != HARMLESS_VECTOR)
		failf("%s: MSI-X entry 1 reads 0x%08x/0x%x", name, lo, data);
	good_read(d, unmasked ? "read after unmasked rewrites" :
				"read after masked rewrites");
	if (status(d) & VIRTIO_CONFIG_S_NEEDS_RESET)
		failf("%s: device needs reset", name);
	phase_done(name, "rewrites=%" PRIu64 " cycles=%" PRIu64 " seconds=%.1f "
		   "requests=%" PRIu64, C.rewrites - rw0, cycles, dt,
		   C.reqs[C_READ] - reqs0);
}

/* ---- phase (c): reset loop --------------------------------------------- */

/*
 * Reads that may still be in flight at the next reset expect OK or IOERR
 * (-1): a reset cancels what the host has not finished (the request then
 * completes with IOERR before the reset returns, or not at all if it was
 * never popped); reap() still rejects any other status.
 */
static void post_early_read(struct dev *d)
{
	put_rw(d, 0, VIRTIO_BLK_T_IN, rnd_sector(d, 4096), PG_DATA, 4096,
	       -1, "read queued before DRIVER_OK");
}

static void phase_reset(struct dev *d)
{
	uint64_t r0 = C.resets, c0 = C.reset_completed, d0 = C.reset_dropped;
	unsigned int i, early = 0, racing = 0;
	double t0, dt;

	phase_begin("reset");
	msix_program(d);
	t0 = now();
	for (i = 0; i < max_resets && now() - t0 < 4 * phase_s; i++) {
		/* dev_up() resets first and accounts what the reset
		 * returned: requests queued before DRIVER_OK or in flight. */
		if (i % 4 == 1) {
			dev_up_pre(d, FEAT_DEFAULT, true, post_early_read);
			early++;
		} else {
			dev_up(d, FEAT_DEFAULT, true);
		}
		if (i % 4 == 3) {
			/* In flight (or not yet popped) at the next reset. */
			put_rw(d, 0, VIRTIO_BLK_T_IN, rnd_sector(d, 4096), PG_DATA,
			       4096, -1, "read in flight at a reset");
			kick(d);
			racing++;
		}
	}
	dev_reset_reap(d);
	dt = now() - t0;
	dev_up(d, FEAT_DEFAULT, true);
	good_read(d, "read after the reset loop");
	phase_done("reset", "resets=%" PRIu64 " cycles=%u seconds=%.1f early=%u "
		   "racing=%u completed_at_reset=%" PRIu64 " dropped=%" PRIu64,
		   C.resets - r0, i, dt, early, racing, C.reset_completed - c0,
		   C.reset_dropped - d0);
}

/* ---- phase (d): huge chains --------------------------------------------- */

/* 512-byte segment @i of the data pages. */
static uint64_t seg_pa(unsigned int i)
{
	return pa_of(PG_DATA + (i / 8) % NDATA, (i % 8) * 512);
}

/*
 * A request with @nseg 512-byte data segments, in an indirect table
 * (@indirect) or as a direct chain from descriptor 0.  @tight packs
 * nseg + 1 descriptors: a read's status byte is the 513th byte of its last
 * segment, a write's header shares its first descriptor with the first
 * segment; otherwise nseg + 2 (header, segments, status).
 */
static void put_big(struct dev *d, uint32_t type, unsigned int nseg, bool tight,
		    bool indirect, int expect, const char *what)
{
	struct desc *t = indirect ? va_of(PG_IND0, 0) : d->desc;
	bool in = type == VIRTIO_BLK_T_IN;
	uint16_t dflag = in ? VRING_DESC_F_WRITE : 0;
	unsigned int n = 0, first = 0;
	uint8_t *st = va_of(PG_STAT, 0);

	set_hdr(0, type, in ? 0 : 8192);
	if (!in) {
		/* Data a wrongly accepted write would leave in the image. */
		for (unsigned int i = 0; i < nseg; i++)
			memset(va_of(PG_DATA + (i / 8) % NDATA, (i % 8) * 512), 0x5a, 512);
	}
	if (!in && tight) {
		/* Header + segment 0 in one 528-byte buffer of its own page. */
		uint8_t *b = va_of(PG_DATA + NDATA - 2, 0);

		memcpy(b, hdr_of(0), 16);
		memset(b + 16, 0x5a, 512);
		set_desc(t, n, pa_of(PG_DATA + NDATA - 2, 0), 528, VRING_DESC_F_NEXT,
			 (uint16_t)(n + 1));
		first = 1;
	} else {
		set_desc(t, n, pa_of(PG_HDR, 0), 16, VRING_DESC_F_NEXT, (uint16_t)(n + 1));
	}
	n++;
	for (unsigned int i = first; i < nseg; i++, n++) {
		if (in && tight && i + 1 == nseg) {
			/* Last segment + status byte: a page of its own. */
			set_desc(t, n, pa_of(PG_DATA + NDATA - 1, 0), 513,
				 VRING_DESC_F_WRITE, 0);
			st = va_of(PG_DATA + NDATA - 1, 512);
			n++;
			break;
		}
		set_desc(t, n, seg_pa(i), 512, (uint16_t)(dflag | VRING_DESC_F_NEXT),
			 (uint16_t)(n + 1));
	}
	if (!(in && tight)) {
		set_desc(t, n, pa_of(PG_STAT, 0), 1, VRING_DESC_F_WRITE, 0);
		n++;
	}
	if (n > (indirect ? PAGE / 16 : QSZ))
		die("internal: %s has %u descriptors", what, n);
	if (indirect)
		set_desc(d->desc, 0, pa_of(PG_IND0, 0), n * 16, VRING_DESC_F_INDIRECT, 0);
	track(0, in ? C_READ : C_WRITE, expect, nseg * 512u, st, what);
	publish(d, 0);
}

static void big_one(struct dev *d, uint32_t type, unsigned int nseg,
		    bool tight, bool indirect, const char *what,
		    unsigned int *oks, unsigned int *errs)
{
	int expect = nseg <= d->seg_max ? VIRTIO_BLK_S_OK : VIRTIO_BLK_S_IOERR;
	int r;

	put_big(d, type, nseg, tight, indirect, expect, what);
	r = run_one(d, 0);
	if (r == VIRTIO_BLK_S_OK)
		(*oks)++;
	else if (r == VIRTIO_BLK_S_IOERR)
		(*errs)++;
	else
		failf("%s: %s", what, r == -1 ? "device needs reset" : "no answer");
}

static void phase_bigchain(struct dev *d)
{
	unsigned int rounds = 0, oks = 0, errs = 0;
	double t0;

	phase_begin("bigchain");
	dev_up(d, FEAT_DEFAULT, false);
	t0 = now();
	while (rounds < 1000 && (!rounds || now() - t0 < phase_s)) {
		/* A full page of indirect descriptors: 254 data segments
		 * (OK when seg_max >= 254), then 255. */
		big_one(d, VIRTIO_BLK_T_IN, 254, false, true,
			"indirect table of 256: 254 segments", &oks, &errs);
		big_one(d, VIRTIO_BLK_T_IN, 255, true, true,
			"indirect table of 256: 255 segments", &oks, &errs);
		/* The whole ring as one direct chain: 255 segments. */
		big_one(d, VIRTIO_BLK_T_IN, 255, true, false,
			"direct chain of 256: 255 segments", &oks, &errs);
		/* Exactly seg_max, direct. */
		if (d->seg_max + 2 <= QSZ)
			big_one(d, VIRTIO_BLK_T_IN, d->seg_max, false, false,
				"direct chain of seg_max segments", &oks, &errs);
		/* Writes over seg_max (must not reach the image). */
		big_one(d, VIRTIO_BLK_T_OUT, 255, true, true,
			"indirect write of 255 segments", &oks, &errs);
		big_one(d, VIRTIO_BLK_T_OUT, 255, true, false,
			"direct write of 255 segments", &oks, &errs);
		rounds++;
	}
	if (status(d) & VIRTIO_CONFIG_S_NEEDS_RESET)
		failf("bigchain: device needs reset");
	phase_done("bigchain", "rounds=%u ok=%u ioerr=%u seg_max=%u seconds=%.1f",
		   rounds, oks, errs, d->seg_max, now() - t0);
}

/* ---- phase (e): malformed requests ------------------------------------- */

/* Requests the device must complete, with this status. */
struct good_case {
	const char *what;
	int expect;
	void (*build)(struct dev *d, const char *what, int expect);
};

static void b_short_hdr(struct dev *d, const char *what, int expect)
{
	/* 8-byte header: counted as "other" (the type is never read). */
	set_hdr(0, VIRTIO_BLK_T_IN, 0);
	set_desc(d->desc, 0, pa_of(PG_HDR, 0), 8, VRING_DESC_F_NEXT, 1);
	set_desc(d->desc, 1, pa_of(PG_STAT, 0), 1, VRING_DESC_F_WRITE, 0);
	track(0, C_OTHER, expect, 0, va_of(PG_STAT, 0), what);
	publish(d, 0);
}

static void b_odd_len(struct dev *d, const char *what, int expect)
{
	put_rw(d, 0, VIRTIO_BLK_T_IN, 0, PG_DATA, 100, expect, what);
}

static void b_past_end(struct dev *d, const char *what, int expect)
{
	put_rw(d, 0, VIRTIO_BLK_T_IN, d->capacity, PG_DATA, 512, expect, what);
}

static void b_straddle_end(struct dev *d, const char *what, int expect)
{
	put_rw(d, 0, VIRTIO_BLK_T_IN, d->capacity - 4, PG_DATA, 4096, expect, what);
}

static void b_sector_wrap(struct dev *d, const char *what, int expect)
{
	put_rw(d, 0, VIRTIO_BLK_T_IN, UINT64_MAX - 1, PG_DATA, 4096, expect, what);
}

static void b_no_data(struct dev *d, const char *what, int expect)
{
	set_hdr(0, VIRTIO_BLK_T_IN, 0);
	set_desc(d->desc, 0, pa_of(PG_HDR, 0), 16, VRING_DESC_F_NEXT, 1);
	set_desc(d->desc, 1, pa_of(PG_STAT, 0), 1, VRING_DESC_F_WRITE, 0);
	track(0, C_READ, expect, 0, va_of(PG_STAT, 0), what);
	publish(d, 0);
}

static void b_read_with_out_data(struct dev *d, const char *what, int expect)
{
	set_hdr(0, VIRTIO_BLK_T_IN, 0);
	set_desc(d->desc, 0, pa_of(PG_HDR, 0), 16, VRING_DESC_F_NEXT, 1);
	set_desc(d->desc, 1, pa_of(PG_DATA, 0), 512, VRING_DESC_F_NEXT, 2);
	set_desc(d->desc, 2, pa_of(PG_DATA + 1, 0), 512,
		 VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 3);
	set_desc(d->desc, 3, pa_of(PG_STAT, 0), 1, VRING_DESC_F_WRITE, 0);
	track(0, C_READ, expect, 512, va_of(PG_STAT, 0), what);
	publish(d, 0);
}

static void b_write_with_in_data(struct dev *d, const char *what, int expect)
{
	set_hdr(0, VIRTIO_BLK_T_OUT, 8192);
	set_desc(d->desc, 0, pa_of(PG_HDR, 0), 16, VRING_DESC_F_NEXT, 1);
	set_desc(d->desc, 1, pa_of(PG_DATA, 0), 512,
		 VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 2);
	set_desc(d->desc, 2, pa_of(PG_STAT, 0), 1, VRING_DESC_F_WRITE, 0);
	track(0, C_WRITE, expect, 0, va_of(PG_STAT, 0), what);
	publish(d, 0);
}

static void b_unknown_type(struct dev *d, const char *what, int expect)
{
	set_hdr(0, 0x7f, 0);
	set_desc(d->desc, 0, pa_of(PG_HDR, 0), 16, VRING_DESC_F_NEXT, 1);
	set_desc(d->desc, 1, pa_of(PG_STAT, 0), 1, VRING_DESC_F_WRITE, 0);
	track(0, C_OTHER, expect, 0, va_of(PG_STAT, 0), what);
	publish(d, 0);
}

static void get_id(struct dev *d, uint32_t len, const char *what, int expect)
{
	memset(va_of(PG_MISC, 0), 0xaa, 64);
	set_hdr(0, VIRTIO_BLK_T_GET_ID, 0);
	set_desc(d->desc, 0, pa_of(PG_HDR, 0), 16, VRING_DESC_F_NEXT, 1);
	set_desc(d->desc, 1, pa_of(PG_MISC, 0), len,
		 VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 2);
	set_desc(d->desc, 2, pa_of(PG_STAT, 0), 1, VRING_DESC_F_WRITE, 0);
	track(0, C_GET_ID, expect, len, va_of(PG_STAT, 0), what);
	publish(d, 0);
}

static void b_get_id(struct dev *d, const char *what, int expect)
{
	get_id(d, VIRTIO_BLK_ID_BYTES, what, expect);
}

static void b_get_id_short(struct dev *d, const char *what, int expect)
{
	get_id(d, 4, what, expect);
}

static void dwz(struct dev *d, uint32_t type, uint64_t sector, uint32_t nsec,
		uint32_t flags, uint8_t cls, const char *what, int expect)
{
	struct virtio_blk_discard_write_zeroes *r = va_of(PG_MISC, 1024);

	r->sector = sector;
	r->num_sectors = nsec;
	r->flags = flags;
	set_hdr(0, type, 0);
	set_desc(d->desc, 0, pa_of(PG_HDR, 0), 16, VRING_DESC_F_NEXT, 1);
	set_desc(d->desc, 1, pa_of(PG_MISC, 1024), sizeof(*r), VRING_DESC_F_NEXT, 2);
	set_desc(d->desc, 2, pa_of(PG_STAT, 0), 1, VRING_DESC_F_WRITE, 0);
	track(0, cls, expect, 0, va_of(PG_STAT, 0), what);
	publish(d, 0);
}

static void b_discard_unmap(struct dev *d, const char *what, int expect)
{
	dwz(d, VIRTIO_BLK_T_DISCARD, 0, 8, VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP,
	    C_DISCARD, what, expect);
}

static void b_wz_past_end(struct dev *d, const char *what, int expect)
{
	dwz(d, VIRTIO_BLK_T_WRITE_ZEROES, d->capacity - 4, 8, 0, C_WZ, what, expect);
}

static void b_zero_len_descs(struct dev *d, const char *what, int expect)
{
	set_hdr(0, VIRTIO_BLK_T_IN, 16);
	set_desc(d->desc, 0, pa_of(PG_HDR, 0), 16, VRING_DESC_F_NEXT, 1);
	set_desc(d->desc, 1, 0, 0, VRING_DESC_F_NEXT, 2);
	set_desc(d->desc, 2, pa_of(PG_DATA, 0), 512,
		 VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 3);
	set_desc(d->desc, 3, 1ull << 50, 0, VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 4);
	set_desc(d->desc, 4, pa_of(PG_STAT, 0), 1, VRING_DESC_F_WRITE, 0);
	track(0, C_READ, expect, 512, va_of(PG_STAT, 0), what);
	publish(d, 0);
}

static void b_split_hdr(struct dev *d, const char *what, int expect)
{
	set_hdr(0, VIRTIO_BLK_T_IN, 24);
	set_desc(d->desc, 0, pa_of(PG_HDR, 0), 5, VRING_DESC_F_NEXT, 1);
	set_desc(d->desc, 1, pa_of(PG_HDR, 5), 11, VRING_DESC_F_NEXT, 2);
	set_desc(d->desc, 2, pa_of(PG_DATA, 0), 1024,
		 VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 3);
	set_desc(d->desc, 3, pa_of(PG_STAT, 0), 1, VRING_DESC_F_WRITE, 0);
	track(0, C_READ, expect, 1024, va_of(PG_STAT, 0), what);
	publish(d, 0);
}

static void b_unaligned_buf(struct dev *d, const char *what, int expect)
{
	/* Data at an odd address, status byte right after it. */
	set_hdr(0, VIRTIO_BLK_T_IN, 32);
	set_desc(d->desc, 0, pa_of(PG_HDR, 0), 16, VRING_DESC_F_NEXT, 1);
	set_desc(d->desc, 1, pa_of(PG_DATA, 7), 513, VRING_DESC_F_WRITE, 0);
	track(0, C_READ, expect, 512, va_of(PG_DATA, 7 + 512), what);
	publish(d, 0);
}

static const struct good_case good_cases[] = {
	{ "8-byte header", VIRTIO_BLK_S_IOERR, b_short_hdr },
	{ "read of 100 bytes", VIRTIO_BLK_S_IOERR, b_odd_len },
	{ "read at the capacity", VIRTIO_BLK_S_IOERR, b_past_end },
	{ "read across the end", VIRTIO_BLK_S_IOERR, b_straddle_end },
	{ "read at sector 2^64-2", VIRTIO_BLK_S_IOERR, b_sector_wrap },
	{ "read without data", VIRTIO_BLK_S_IOERR, b_no_data },
	{ "read with readable data", VIRTIO_BLK_S_IOERR, b_read_with_out_data },
	{ "write with writable data", VIRTIO_BLK_S_IOERR, b_write_with_in_data },
	{ "request type 0x7f", VIRTIO_BLK_S_UNSUPP, b_unknown_type },
	{ "GET_ID into 4 bytes", VIRTIO_BLK_S_OK, b_get_id_short },
	{ "GET_ID", VIRTIO_BLK_S_OK, b_get_id },
	{ "discard with UNMAP", VIRTIO_BLK_S_UNSUPP, b_discard_unmap },
	{ "write-zeroes across the end", VIRTIO_BLK_S_IOERR, b_wz_past_end },
	{ "zero-length descriptors", VIRTIO_BLK_S_OK, b_zero_len_descs },
	{ "header split 5+11", VIRTIO_BLK_S_OK, b_split_hdr },
	{ "odd buffer address", VIRTIO_BLK_S_OK, b_unaligned_buf },
};

/* Chains that break the queue: the device must set NEEDS_RESET. */
struct bad_case {
	const char *what;
	void (*build)(struct dev *d);
};

static void n_loop(struct dev *d)
{
	put_loop(d, "descriptor loop");
}

static void chain3(struct dev *d, uint64_t data, uint32_t len, uint16_t next1)
{
	set_hdr(0, VIRTIO_BLK_T_IN, 0);
	set_desc(d->desc, 0, pa_of(PG_HDR, 0), 16, VRING_DESC_F_NEXT, 1);
	set_desc(d->desc, 1, data, len, VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, next1);
	set_desc(d->desc, 2, pa_of(PG_STAT, 0), 1, VRING_DESC_F_WRITE, 0);
	track(0, C_READ, -1, len, va_of(PG_STAT, 0), "malformed");
	publish(d, 0);
}

static void n_next_range(struct dev *d)
{
	chain3(d, pa_of(PG_DATA, 0), 512, 300);
}

static void n_addr_1t(struct dev *d)
{
	chain3(d, 1ull << 40, 512, 2);
}

static void n_addr_wrap(struct dev *d)
{
	chain3(d, UINT64_MAX - 255, 512, 2);
}

static void n_addr_mmio(struct dev *d)
{
	chain3(d, d->bar_pa, 512, 2);
}

static void n_len_4g(struct dev *d)
{
	chain3(d, pa_of(PG_DATA, 0), UINT32_MAX, 2);
}

static void n_head_range(struct dev *d)
{
	chain3(d, pa_of(PG_DATA, 0), 512, 2);
	d->avail->ring[(uint16_t)(d->avail_idx - 1) % QSZ] = 999;
}

static void n_idx_jump(struct dev *d)
{
	chain3(d, pa_of(PG_DATA, 0), 512, 2);
	d->avail_idx = (uint16_t)(d->avail_idx + 299);
	__atomic_store_n(&d->avail->idx, d->avail_idx, __ATOMIC_RELEASE);
}

static void n_no_status(struct dev *d)
{
	set_hdr(0, VIRTIO_BLK_T_IN, 0);
	set_desc(d->desc, 0, pa_of(PG_HDR, 0), 16, VRING_DESC_F_NEXT, 1);
	set_desc(d->desc, 1, pa_of(PG_DATA, 0), 512, 0, 0);
	track(0, C_READ, -1, 0, va_of(PG_STAT, 0), "malformed");
	publish(d, 0);
}

static void n_only_empty_writable(struct dev *d)
{
	set_hdr(0, VIRTIO_BLK_T_IN, 0);
	set_desc(d->desc, 0, pa_of(PG_HDR, 0), 16, VRING_DESC_F_NEXT, 1);
	set_desc(d->desc, 1, pa_of(PG_STAT, 0), 0, VRING_DESC_F_WRITE, 0);
	track(0, C_READ, -1, 0, va_of(PG_STAT, 0), "malformed");
	publish(d, 0);
}

static void n_read_after_write(struct dev *d)
{
	set_hdr(0, VIRTIO_BLK_T_IN, 0);
	set_desc(d->desc, 0, pa_of(PG_HDR, 0), 16, VRING_DESC_F_NEXT, 1);
	set_desc(d->desc, 1, pa_of(PG_STAT, 0), 1, VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 2);
	set_desc(d->desc, 2, pa_of(PG_DATA, 0), 512, 0, 0);
	track(0, C_READ, -1, 0, va_of(PG_STAT, 0), "malformed");
	publish(d, 0);
}

/* Descriptor 0 points at an indirect table in PG_IND0 of @n entries
 * (header, 512-byte read, status) with @flags added to descriptor 0. */
static void indirect3(struct dev *d, uint64_t table, uint32_t len, uint16_t flags)
{
	struct desc *t = va_of(PG_IND0, 0);

	set_hdr(0, VIRTIO_BLK_T_IN, 0);
	set_desc(t, 0, pa_of(PG_HDR, 0), 16, VRING_DESC_F_NEXT, 1);
	set_desc(t, 1, pa_of(PG_DATA, 0), 512, VRING_DESC_F_NEXT | VRING_DESC_F_WRITE, 2);
	set_desc(t, 2, pa_of(PG_STAT, 0), 1, VRING_DESC_F_WRITE, 0);
	set_desc(d->desc, 0, table, len, (uint16_t)(VRING_DESC_F_INDIRECT | flags), 1);
	set_desc(d->desc, 1, pa_of(PG_STAT, 1), 1, VRING_DESC_F_WRITE, 0);
	track(0, C_READ, -1, 512, va_of(PG_STAT, 0), "malformed");
	publish(d, 0);
}

static void n_ind_next(struct dev *d)
{
	indirect3(d, pa_of(PG_IND0, 0), 48, VRING_DESC_F_NEXT);
}

static void n_ind_len0(struct dev *d)
{
	indirect3(d, pa_of(PG_IND0, 0), 0, 0);
}

static void n_ind_len24(struct dev *d)
{
	indirect3(d, pa_of(PG_IND0, 0), 24, 0);
}

static void n_ind_1025(struct dev *d)
{
	indirect3(d, pa_of(PG_IND0, 0), 1025 * 16, 0);
}

static void n_ind_addr(struct dev *d)
{
	indirect3(d, 1ull << 40, 48, 0);
}

static void n_ind_nested(struct dev *d)
{
	struct desc *t = va_of(PG_IND0, 0);

	indirect3(d, pa_of(PG_IND0, 0), 48, 0);
	set_desc(t, 1, pa_of(PG_IND1, 0), 16, VRING_DESC_F_INDIRECT | VRING_DESC_F_NEXT, 2);
}

static void n_ind_loop(struct dev *d)
{
	struct desc *t = va_of(PG_IND0, 0);

	indirect3(d, pa_of(PG_IND0, 0), 48, 0);
	t[2].flags = VRING_DESC_F_WRITE | VRING_DESC_F_NEXT;
	t[2].next = 1;
}

static const struct bad_case bad_cases[] = {
	{ "descriptor loop", n_loop },
	{ "next index 300", n_next_range },
	{ "buffer at 1 TiB", n_addr_1t },
	{ "buffer address wraps", n_addr_wrap },
	{ "buffer in the device's BAR", n_addr_mmio },
	{ "buffer of 4 GiB", n_len_4g },
	{ "head index 999", n_head_range },
	{ "avail idx jumps by 300", n_idx_jump },
	{ "no writable descriptor", n_no_status },
	{ "only an empty writable descriptor", n_only_empty_writable },
	{ "readable after writable", n_read_after_write },
	{ "indirect with NEXT", n_ind_next },
	{ "indirect of 0 bytes", n_ind_len0 },
	{ "indirect of 24 bytes", n_ind_len24 },
	{ "indirect of 1025 entries", n_ind_1025 },
	{ "indirect table at 1 TiB", n_ind_addr },
	{ "nested indirect", n_ind_nested },
	{ "loop inside an indirect table", n_ind_loop },
};

/* Transport misuse; each returns whether NEEDS_RESET is expected. */
static void t_expect_nr(struct dev *d, const char *what)
{
	uint8_t s = status(d);

	if (!(s & VIRTIO_CONFIG_S_NEEDS_RESET)) {
		failf("%s: status 0x%02x, expected DEVICE_NEEDS_RESET", what, s);
		return;
	}
	C.needs_reset++;
}

static unsigned int transport_cases(struct dev *d)
{
	unsigned int n = 0;

	/* queue_size not a power of two. */
	dev_features(d, FEAT_DEFAULT);
	wr16(d->common, VIRTIO_PCI_COMMON_Q_SELECT, 0);
	wr16(d->common, VIRTIO_PCI_COMMON_Q_SIZE, 100);
	t_expect_nr(d, "queue_size 100");
	n++;

	/* Rings outside guest RAM. */
	dev_features(d, FEAT_DEFAULT);
	rings_clear(d);
	queue_setup(d, QSZ, 1ull << 40, pa_of(PG_AVAIL, 0), pa_of(PG_USED, 0), false);
	driver_ok(d);
	t_expect_nr(d, "descriptor table at 1 TiB");
	n++;

	/* DRIVER_OK without FEATURES_OK. */
	dev_reset(d);
	set_status(d, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
	set_status(d, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER |
			      VIRTIO_CONFIG_S_DRIVER_OK);
	t_expect_nr(d, "DRIVER_OK without FEATURES_OK");
	n++;

	/* Status bits cleared without a reset. */
	dev_up(d, FEAT_DEFAULT, false);
	set_status(d, VIRTIO_CONFIG_S_ACKNOWLEDGE);
	t_expect_nr(d, "status bits cleared");
	n++;

	/* Features that were not offered: FEATURES_OK must not stick. */
	if (dev_features(d, FEAT_DEFAULT | F(62)))
		failf("FEATURES_OK accepted an unoffered feature bit");
	if (status(d) & VIRTIO_CONFIG_S_NEEDS_RESET)
		failf("an unoffered feature set NEEDS_RESET");

	/* Indirect descriptor without VIRTIO_RING_F_INDIRECT_DESC. */
	dev_up(d, FEAT_BASE, false);
	indirect3(d, pa_of(PG_IND0, 0), 48, 0);
	if (expect_needs_reset(d, "indirect not negotiated"))
		n++;
	drop_inflight();
	return n;
}

static void phase_malformed(struct dev *d)
{
	unsigned int rounds = 0, completed = 0, broke = 0;
	double t0 = now();

	phase_begin("malformed");
	while (rounds < 100 && (!rounds || now() - t0 < phase_s)) {
		dev_up(d, FEAT_DEFAULT, false);
		for (size_t i = 0; i < sizeof(good_cases) / sizeof(good_cases[0]); i++) {
			const struct good_case *c = &good_cases[i];
			int r;

			c->build(d, c->what, c->expect);
			r = run_one(d, 0);
			if (r < 0) {
				failf("%s: %s", c->what, r == -1 ? "device needs reset" : "no answer");
				dev_up(d, FEAT_DEFAULT, false);
				drop_inflight();
				continue;
			}
			completed++;
		}
		/* The serial the device answered GET_ID with ("victim"). */
		if (!rounds)
			printf("ABUSE get_id=%.20s\n", (const char *)va_of(PG_MISC, 0));
		for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
			dev_up(d, FEAT_DEFAULT, false);
			bad_cases[i].build(d);
			if (expect_needs_reset(d, bad_cases[i].what))
				broke++;
			drop_inflight();
		}
		broke += transport_cases(d);
		rounds++;
	}
	dev_up(d, FEAT_DEFAULT, false);
	good_read(d, "read after the malformed requests");
	phase_done("malformed", "rounds=%u completed=%u needs_reset=%u seconds=%.1f",
		   rounds, completed, broke, now() - t0);
}

/* ---- phase (f): sanity ------------------------------------------------- */

static void phase_sanity(struct dev *d)
{
	char *w = va_of(PG_DATA, 0), *r = va_of(PG_DATA + 1, 0);
	char sec0[33];
	bool ok = true;
	int s;

	phase_begin("sanity");
	dev_up(d, FEAT_DEFAULT, false);
	for (unsigned int i = 0; i < PAGE; i++)
		w[i] = (char)('A' + (i * 7 + (unsigned int)C.kicks) % 26);
	memcpy(w, "ABUSE-SANITY", 12);
	put_rw(d, 0, VIRTIO_BLK_T_OUT, 2048, PG_DATA, PAGE, VIRTIO_BLK_S_OK,
	       "sanity write");
	s = run_one(d, 0);
	ok &= s == VIRTIO_BLK_S_OK;
	set_hdr(0, VIRTIO_BLK_T_FLUSH, 0);
	set_desc(d->desc, 0, pa_of(PG_HDR, 0), 16, VRING_DESC_F_NEXT, 1);
	set_desc(d->desc, 1, pa_of(PG_STAT, 0), 1, VRING_DESC_F_WRITE, 0);
	track(0, C_FLUSH, VIRTIO_BLK_S_OK, 0, va_of(PG_STAT, 0), "sanity flush");
	publish(d, 0);
	s = run_one(d, 0);
	ok &= s == VIRTIO_BLK_S_OK;
	memset(r, 0, PAGE);
	put_rw(d, 0, VIRTIO_BLK_T_IN, 2048, PG_DATA + 1, PAGE, VIRTIO_BLK_S_OK,
	       "sanity read back");
	s = run_one(d, 0);
	ok &= s == VIRTIO_BLK_S_OK;
	if (memcmp(w, r, PAGE)) {
		failf("sanity: data read back differs from data written");
		ok = false;
	}
	memset(r, 0, PAGE);
	put_rw(d, 0, VIRTIO_BLK_T_IN, 0, PG_DATA + 1, 512, VIRTIO_BLK_S_OK,
	       "sanity read of sector 0");
	s = run_one(d, 0);
	ok &= s == VIRTIO_BLK_S_OK;
	for (unsigned int i = 0; i < sizeof(sec0) - 1; i++)
		sec0[i] = r[i] >= 0x21 && r[i] < 0x7f ? r[i] : 0;
	sec0[sizeof(sec0) - 1] = 0;
	if (!ok)
		failf("sanity: a request did not complete OK");
	phase_done("sanity", "ok=%d sector0=%s", ok, sec0);
}

/* ---- console mode ------------------------------------------------------ */

#define CON_QSZ 128u	 /* the device's queue size (VCON_QUEUE_SIZE) */
#define CON_CHAIN 16u	 /* pages per chain */
#define CON_FRAME 512u	 /* bytes per ERROR frame: 8 per page */

#if defined(__x86_64__)
/* -S: @bytes to COM1's data register with `rep outsb`, a page at a time. */
static void serial_flood(size_t bytes)
{
	static char line[PAGE];
	size_t done = 0;
	double t0 = now();

	if (ioperm(0x3f8, 8, 1))
		die("ioperm(0x3f8): %s", strerror(errno));
	for (unsigned int i = 0; i < PAGE; i++)
		line[i] = (i % 64 == 63) ? '\n' : (char)('a' + i % 26);
	while (done < bytes) {
		const char *p = line;
		size_t n = bytes - done < PAGE ? bytes - done : PAGE;
		size_t left = n;

		__asm__ volatile("rep outsb" : "+S"(p), "+c"(left) : "d"(0x3f8) : "memory");
		done += n;
	}
	printf("ABUSE serial bytes=%zu seconds=%.1f\n", done, now() - t0);
}
#else
static void serial_flood(size_t bytes)
{
	(void)bytes;
	die("-S: COM1 port I/O exists on x86 only");
}
#endif

/* The first virtio-console function (vendor 0x1af4, device 0x1043). */
static void find_console(char *bdf, size_t len)
{
	DIR *dir = opendir("/sys/bus/pci/devices");
	struct dirent *e;

	while (dir && (e = readdir(dir))) {
		char path[300], dev[16] = "";
		FILE *f;

		if (e->d_name[0] == '.' || strlen(e->d_name) >= len ||
		    strlen(e->d_name) > 32)
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%.32s/device", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(dev, sizeof(dev), f))
			dev[0] = 0;
		fclose(f);
		if (!strncmp(dev, "0x1043", 6)) {
			memcpy(bdf, e->d_name, strlen(e->d_name) + 1);
			closedir(dir);
			return;
		}
	}
	die("no virtio-console function in /sys/bus/pci/devices");
}

/* Let go of the function's driver (the guest's ports go away with it). */
void unbind(const char *bdf)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver/unbind", bdf);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return; /* no driver bound */
	if (write(fd, bdf, strlen(bdf)) < 0)
		die("%s: %s", path, strerror(errno));
	close(fd);
}

/* Chain @c of the ring: CON_CHAIN descriptors, one data page each. */
static void con_post(struct dev *d, unsigned int c)
{
	uint16_t head = (uint16_t)(c * CON_CHAIN % CON_QSZ);

	for (unsigned int k = 0; k < CON_CHAIN; k++)
		set_desc(d->desc, head + k, pa_of(PG_DATA + (head + k) % NDATA, 0), PAGE,
			 k + 1 < CON_CHAIN ? VRING_DESC_F_NEXT : 0,
			 (uint16_t)(head + k + 1));
	d->avail->ring[d->avail_idx % CON_QSZ] = head;
	__atomic_store_n(&d->avail->idx, (uint16_t)(d->avail_idx + 1), __ATOMIC_RELEASE);
	d->avail_idx++;
}

static void console_flood(struct dev *d, unsigned long frames, unsigned int unkicked)
{
	const unsigned int per_chain = CON_CHAIN * (PAGE / CON_FRAME);
	const unsigned int batch = CON_QSZ / CON_CHAIN;
	unsigned long sent = 0;
	double t0 = now();

	/* Every data page: 8 ERROR frames (u32 length, type, text). */
	for (unsigned int pgn = 0; pgn < NDATA; pgn++)
		for (unsigned int f = 0; f < PAGE / CON_FRAME; f++) {
			uint8_t *b = va_of(PG_DATA + pgn, f * CON_FRAME);
			uint32_t len = CON_FRAME - 4;

			memcpy(b, &len, 4);
			b[4] = 4; /* PROTO_MSG_ERROR */
			memset(b + 5, 'E', CON_FRAME - 5);
			memcpy(b + 5, "hostile container: error flood ", 31);
		}
	qsel = 1; /* port 0 (minivmm.ctl): receiveq 0, transmitq 1 */
	if (!dev_features(d, F(VIRTIO_F_VERSION_1) | F(VIRTIO_CONSOLE_F_MULTIPORT)))
		die("FEATURES_OK refused");
	rings_clear(d);
	queue_setup(d, CON_QSZ, pa_of(PG_DESC, 0), pa_of(PG_AVAIL, 0),
		    pa_of(PG_USED, 0), false);
	driver_ok(d);
	while (sent < frames) {
		uint16_t want_used = (uint16_t)(d->avail_idx + batch);
		double tw = now();

		for (unsigned int c = 0; c < batch; c++)
			con_post(d, c);
		kick(d);
		while (__atomic_load_n(&d->used->idx, __ATOMIC_ACQUIRE) != want_used) {
			if (status(d) & VIRTIO_CONFIG_S_NEEDS_RESET)
				die("console: device needs reset");
			if (now() - tw > WAIT_S * 4)
				die("console: chains not returned in %.0f s", WAIT_S * 4);
			pause_us(100);
		}
		sent += (unsigned long)batch * per_chain;
	}
	printf("ABUSE console frames=%lu seconds=%.1f\n", sent, now() - t0);
	if (unkicked > CON_QSZ)
		unkicked = CON_QSZ;
	for (unsigned int c = 0; c < unkicked / CON_CHAIN; c++)
		con_post(d, c);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	printf("ABUSE console unkicked_bytes=%u\n", unkicked / CON_CHAIN * CON_CHAIN * PAGE);
}

static void exit_port(uint32_t status)
{
#if defined(__x86_64__)
	if (ioperm(0xf4, 4, 1))
		die("ioperm(0xf4): %s", strerror(errno));
	outl(status, 0xf4);
	die("still running after the exit port write");
#else
	(void)status;
	die("-x: the exit port exists on x86 only");
#endif
}

bool want(const char *name)
{
	size_t n = strlen(name);
	const char *p = only;

	if (!p)
		return true;
	while (*p) {
		size_t len = strcspn(p, ",");

		if (len == n && !strncmp(p, name, n))
			return true;
		p += len;
		if (*p)
			p++;
	}
	return false;
}

int main(int argc, char **argv)
{
	struct dev d = { .cfg_fd = -1 };
	double t0 = now();
	unsigned long frames = 0, serial = 0;
	unsigned int unkicked = 0;
	long exit_status = -1;
	char bdf[64];
	int opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "s:r:p:c:u:x:S:nv")) != -1) {
		switch (opt) {
		case 'n':
			net_mode = true;
			break;
		case 'v':
			vsock_mode = true;
			break;
		case 'c':
			console_mode = true;
			frames = strtoul(optarg, NULL, 0);
			break;
		case 'u':
			unkicked = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'x':
			exit_status = strtol(optarg, NULL, 0);
			break;
		case 'S':
			serial = strtoul(optarg, NULL, 0);
			break;
		case 's':
			phase_s = atof(optarg);
			break;
		case 'r':
			max_resets = (unsigned int)atoi(optarg);
			break;
		case 'p':
			only = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s [-s SECONDS] [-r RESETS] [-p PHASE,...] [-n|-v] BDF\n"
				"       %s [-S BYTES] -c FRAMES [-u PAGES] [-x STATUS] "
				"console|BDF\n", argv[0], argv[0]);
			return 2;
		}
	}
	if (optind + 1 != argc || phase_s <= 0) {
		fprintf(stderr, "usage: %s [-s SECONDS] [-r RESETS] [-p PHASE,...] BDF\n",
			argv[0]);
		return 2;
	}
	dma_setup(false);
	if (console_mode) {
		if (serial)
			serial_flood(serial);
		if (!strcmp(argv[optind], "console"))
			find_console(bdf, sizeof(bdf));
		else
			snprintf(bdf, sizeof(bdf), "%s", argv[optind]);
		unbind(bdf);
		take_over(&d, bdf);
		console_flood(&d, frames, unkicked);
		if (exit_status >= 0)
			exit_port((uint32_t)exit_status);
		return 0;
	}
	take_over(&d, argv[optind]);
	if (net_mode)
		return net_main(&d, argv[optind]);
	if (vsock_mode)
		return vsock_main(&d, argv[optind]);

	if (want("kick-idle"))
		phase_kick_idle(&d);
	if (want("kick-busy"))
		phase_kick_busy(&d);
	if (want("kick-slow"))
		phase_kick_slow(&d);
	if (want("kick-broken"))
		phase_kick_broken(&d);
	if (want("msix-masked"))
		phase_msix(&d, false);
	if (want("msix-unmasked"))
		phase_msix(&d, true);
	if (want("reset"))
		phase_reset(&d);
	if (want("bigchain"))
		phase_bigchain(&d);
	if (want("malformed"))
		phase_malformed(&d);
	if (want("sanity"))
		phase_sanity(&d);

	/* Leave the function quiet: reset, MSI-X off. */
	dev_reset_reap(&d);
	msix_function(&d, false, false);
	dma_setup(true);

	printf("ABUSE totals");
	for (unsigned int c = 0; c < C_NR; c++)
		printf(" %s=%" PRIu64, cls_name[c], C.reqs[c]);
	printf(" read_bytes=%" PRIu64 " write_bytes=%" PRIu64 " ok=%" PRIu64
	       " ioerr=%" PRIu64 " unsupp=%" PRIu64 " needs_reset=%" PRIu64
	       " resets=%" PRIu64 " kicks=%" PRIu64 " rewrites=%" PRIu64
	       " seconds=%.1f\n",
	       C.read_bytes, C.write_bytes, C.ok, C.ioerr, C.unsupp, C.needs_reset,
	       C.resets, C.kicks, C.rewrites, now() - t0);
	if (C.failures) {
		printf("ABUSE RESULT FAIL %" PRIu64 "\n", C.failures);
		return 1;
	}
	printf("ABUSE RESULT ok\n");
	return 0;
}
