/* SPDX-License-Identifier: MIT */
/*
 * start_bench - what a guest's DRIVER_OK and reset cost a vCPU in the
 * device itself, with one queue per I/O thread, without KVM.
 *
 * A virtio-blk device (vblk_dev, null engine) on the real virtio-pci
 * transport, the real PCI bus and the real I/O threads, over the unit
 * tests' fake KVM (tests/harness/fake_vpci.c: every KVM ioctl is a table
 * update, so the wiring costs next to nothing here and what is timed is
 * the transport and the device start).  For each N the driver brings up N
 * queues on N vectors like virtio_pci_modern, then resets, R times; each
 * time it records how long the DRIVER_OK write and the reset write held
 * the "vCPU" (this thread), and the transport's own driver_ok_ns_max.
 * The device start attaches each queue to its I/O thread: a call to that
 * thread, all of them posted before any is waited for, so one wait for N
 * threads (in parallel on a host with the cores) rather than N round trips
 * one after another; a reset detaches them the same way.
 *
 * What the real DRIVER_OK adds on top is KVM's wiring (bench/wiring_bench:
 * the routes and irqfds) and, in a guest, the vCPU's exit; what a boot
 * sees of it: minivmm --stats' driver_ok_ns_max (bench/boot_profile.sh).
 * Not measured here: the io_uring engine's set-up and drain (the null
 * engine serves the queues), I/O threads shared by several queues, and
 * resets with requests in flight (the queues are idle).
 *
 * transport_driver_ok_ns_max is the transport's own figure (what minivmm
 * --stats reports), a maximum since the machine was made: with --rounds 1
 * (start_bench.sh) it is that round's.
 *
 * Output: one JSON object per measurement on stdout; a summary (medians)
 * on stderr.  Never asserts timings; exits 1 if the device fails to start.
 *
 * usage: start_bench [--rounds R] [--queues N]...   (default 1 8 32 128 384)
 */
#include <errno.h>
#include <getopt.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "blk/vblk.h"
#include "blk/virtio-blk.h"
#include "iothread.h"
#include "memory.h"
#include "pci/msix.h"
#include "virtio/virtio-pci.h"

#include "fake_vpci.h"

#define MAX_QUEUES 1024
#define QSIZE 64
#define RING_STRIDE 0x2000ull /* desc 1 KiB, avail, used: one slot per queue */
#define RING_BASE 0x100000ull
#define RAM_SIZE (RING_BASE + MAX_QUEUES * RING_STRIDE)
#define MAX_ROUNDS 64

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double median_ms(uint64_t *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[(n - 1) / 2] / 1e6;
}

struct machine {
	struct fv v;
	struct guest_mem mem;
	void *ram;
	struct iothread **io;
	unsigned int nq;
	struct vblk_dev *dev;
	int img;
};

static void machine_down(struct machine *m)
{
	fv_destroy(&m->v); /* the transport first: it stops the device */
	if (m->dev)
		vblk_dev_destroy(m->dev);
	for (unsigned int i = 0; m->io && i < m->nq; i++)
		iothread_destroy(m->io[i]);
	free(m->io);
	if (m->img >= 0)
		close(m->img);
	if (m->ram)
		munmap(m->ram, RAM_SIZE);
}

static int machine_up(struct machine *m, unsigned int nq)
{
	struct vblk_options bo = { .num_queues = (uint16_t)nq, .queue_size = QSIZE,
				   .flags = VBLK_OPT_NO_LOCK };
	struct vblk_dev_params dp = { .nr_iothreads = nq, .null_engine = true };
	struct vpci_params vp;
	struct vblk *blk;
	int ret;

	memset(m, 0, sizeof(*m));
	m->img = -1;
	m->nq = nq;
	m->ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m->ram == MAP_FAILED) {
		m->ram = NULL;
		return -errno;
	}
	guest_mem_init_buf(&m->mem, m->ram, RAM_SIZE);
	if ((ret = fv_init(&m->v, -1, FV_MMIO_BASE, FV_MMIO_SIZE, &m->mem)))
		return ret;
	m->img = memfd_create("start_bench", MFD_CLOEXEC);
	if (m->img < 0 || ftruncate(m->img, 64 << 20) < 0)
		return -errno;
	bo.fd = m->img;
	m->io = calloc(nq, sizeof(*m->io));
	if (!m->io)
		return -ENOMEM;
	for (unsigned int i = 0; i < nq; i++) {
		if ((ret = iothread_create(i, 64, &m->io[i])))
			return ret;
		if ((ret = iothread_start(m->io[i])))
			return ret;
	}
	if ((ret = vblk_open(&bo, &blk)))
		return ret;
	dp.blk = blk;
	dp.iothreads = m->io;
	if ((ret = vblk_dev_create(&dp, &m->dev))) {
		vblk_close(blk);
		return ret;
	}
	vp = fv_params(&m->v);
	vp.ops = vblk_dev_ops();
	vp.dev = m->dev;
	vp.num_queues = nq;
	vp.max_queue_size = QSIZE;
	vp.ioeventfd_any_length = true;
	return fv_create(&m->v, &vp);
}

/* Linux's order: negotiate, MSI-X (config vector 0, queue q on q + 1),
 * every queue, then DRIVER_OK, which is timed. */
static int bring_up(struct machine *m, uint64_t *ns)
{
	uint64_t want = (1ull << VIRTIO_F_VERSION_1) |
			(1ull << VIRTIO_RING_F_EVENT_IDX);
	uint64_t t0;
	int ret;

	if ((ret = fv_negotiate(&m->v, want, NULL)))
		return ret;
	fv_msix_ctrl(&m->v, MSIX_CTRL_ENABLE | MSIX_CTRL_MASKALL);
	for (unsigned int vec = 0; vec <= m->nq; vec++) {
		fv_msix_write(&m->v, vec, 0xfee00000u, 0x4000u + vec);
		fv_msix_mask(&m->v, vec, false);
	}
	fv_msix_ctrl(&m->v, MSIX_CTRL_ENABLE);
	FV_COMMON_WR(&m->v, MSIX, 0, 2);
	for (unsigned int q = 0; q < m->nq; q++) {
		uint64_t base = RING_BASE + q * RING_STRIDE;

		memset((char *)m->ram + base, 0, RING_STRIDE);
		if (fv_queue_setup(&m->v, q, QSIZE, base, base + 0x400,
				   base + 0x1000, (uint16_t)(q + 1)) != q + 1)
			return -EIO;
	}
	t0 = now_ns();
	fv_status_add(&m->v, VIRTIO_CONFIG_S_DRIVER_OK);
	*ns = now_ns() - t0;
	return fv_status(&m->v) & VIRTIO_CONFIG_S_NEEDS_RESET ? -EIO : 0;
}

static uint64_t reset(struct machine *m)
{
	uint64_t t0 = now_ns();

	FV_COMMON_WR(&m->v, STATUS, 0, 1);
	return now_ns() - t0;
}

static int run(unsigned int nq, unsigned int rounds)
{
	uint64_t up[MAX_ROUNDS], down[MAX_ROUNDS];
	struct machine m;
	int ret;

	ret = machine_up(&m, nq);
	if (ret) {
		fprintf(stderr, "start_bench: %u queues: set-up: %s\n", nq,
			strerror(-ret));
		machine_down(&m);
		return ret;
	}
	for (unsigned int r = 0; r < rounds; r++) {
		struct vpci_stats st;

		ret = bring_up(&m, &up[r]);
		if (ret) {
			fprintf(stderr, "start_bench: %u queues: DRIVER_OK failed\n", nq);
			break;
		}
		vpci_get_stats(m.v.t, &st);
		down[r] = reset(&m);
		printf("{\"bench\":\"start\",\"queues\":%u,\"iothreads\":%u,"
		       "\"round\":%u,\"driver_ok_ns\":%llu,\"transport_driver_ok_ns_max\":%llu,"
		       "\"reset_ns\":%llu}\n",
		       nq, nq, r + 1, (unsigned long long)up[r],
		       (unsigned long long)st.driver_ok_ns_max,
		       (unsigned long long)down[r]);
	}
	if (!ret)
		fprintf(stderr, "start_bench: %4u queues on %4u I/O threads: "
				"DRIVER_OK %8.3f ms, reset %8.3f ms (medians of %u)\n",
			nq, nq, median_ms(up, rounds), median_ms(down, rounds),
			rounds);
	fflush(stdout);
	machine_down(&m);
	return ret;
}

int main(int argc, char **argv)
{
	static const unsigned int defaults[] = { 1, 8, 32, 128, 384 };
	unsigned int counts[32], nr = 0, rounds = 9;
	struct rlimit rl;
	int c, ret = 0;

	while ((c = getopt_long(argc, argv, "r:q:", (const struct option[]){
			{ "rounds", required_argument, NULL, 'r' },
			{ "queues", required_argument, NULL, 'q' },
			{ 0 } }, NULL)) != -1) {
		switch (c) {
		case 'r':
			rounds = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'q':
			if (nr == 32) {
				fprintf(stderr, "start_bench: at most 32 --queues\n");
				return 2;
			}
			counts[nr++] = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: start_bench [--rounds R] [--queues N]...\n");
			return 2;
		}
	}
	if (!rounds || rounds > MAX_ROUNDS) {
		fprintf(stderr, "start_bench: --rounds 1..%d\n", MAX_ROUNDS);
		return 2;
	}
	if (!nr) {
		nr = sizeof(defaults) / sizeof(defaults[0]);
		memcpy(counts, defaults, sizeof(defaults));
	}
	/*
	 * Each I/O thread holds a ring and two eventfds and each queue two
	 * eventfds: a few fds per queue, more than the usual soft limit of
	 * 1024 at 384 queues.  Each ring's table of registered files is sized
	 * by this limit too (iothread-ring.c): 4096 keeps 384 tables small.
	 */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_max >= 4096) {
		rl.rlim_cur = 4096;
		setrlimit(RLIMIT_NOFILE, &rl);
	} else {
		fprintf(stderr, "start_bench: RLIMIT_NOFILE's hard limit is below 4096: "
				"large queue counts may fail to set up\n");
	}
	for (unsigned int i = 0; i < nr; i++) {
		if (!counts[i] || counts[i] > MAX_QUEUES) {
			fprintf(stderr, "start_bench: --queues 1..%d\n", MAX_QUEUES);
			return 2;
		}
		if (run(counts[i], rounds))
			ret = 1;
	}
	return ret;
}
