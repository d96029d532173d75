/* SPDX-License-Identifier: MIT */
/*
 * wiring_bench - cost of wiring N virtqueues into KVM, batched vs per-vector.
 *
 * For each N, a fresh VM (KVM_CREATE_VM + in-kernel irqchip, no vCPUs) gets
 * N queues wired: N eventfd pairs, N MSI GSIs, N MSI routes + N irqfds + N
 * ioeventfds (MMIO, 4 bytes apart, len 0 with KVM_CAP_IOEVENTFD_ANY_LENGTH,
 * else 2), then everything is torn down again.  Two ways, alternated A B A B
 * per round so drift hits both alike:
 *
 *   batched   libvmm: one wiring transaction for all N queues (one
 *             KVM_SET_GSI_ROUTING), one more to tear them down;
 *   pervector the kvmtool / Cloud Hypervisor / Firecracker way: one
 *             transaction per vector, each resending the whole route table
 *             (N KVM_SET_GSI_ROUTING calls, the table growing 1..N), and the
 *             same per vector on teardown;
 *   driverok  libvmm today: the ioeventfds are placed beforehand, with the
 *             BAR, in one transaction per device (placement_ns: before the
 *             guest runs), so the measured setup -- what a guest's
 *             DRIVER_OK waits for -- is the routes and irqfds only, one
 *             transaction per device; teardown likewise (the ioeventfds
 *             stay with the BAR; removed afterwards, not timed).
 *
 * KVM ioctls are counted by an ioctl hook handed to irq_create() (so the
 * counts are what really reached KVM, independent of libvmm's own
 * statistics) and cross-checked against irq_get_stats().  Shapes "dXqY"
 * wire X devices of Y queues, one transaction per device when batched (the
 * seed's 16 disks x 24 queues).
 *
 * Output: one JSON object per line on stdout (JSON Lines), one per
 * measurement; a human summary on stderr.  Never asserts timings; exits 1
 * only if KVM refuses something or a batched transaction issued other than
 * exactly one KVM_SET_GSI_ROUTING.
 *
 * usage: wiring_bench [--rounds R] [--max N] [--shape DxQ]... [--no-default-shapes]
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/kvm.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "irq.h"
#include "x86/irqchip.h"

#define MMIO_BASE 0xd0000000ull /* where the notify addresses start */

struct counts {
	uint64_t set_gsi_routing, irqfd, ioeventfd, other;
	uint64_t max_routes; /* largest table pushed */
	uint64_t routing_ns, irqfd_ns, ioeventfd_ns; /* wall time inside them */
};

static uint64_t now_ns(void);

static int counting_ioctl(void *opaque, int fd, unsigned long req, void *arg)
{
	struct counts *c = opaque;
	uint64_t t0 = now_ns();
	int ret = ioctl(fd, req, arg) < 0 ? -errno : 0;
	uint64_t dt = now_ns() - t0;

	if (req == KVM_SET_GSI_ROUTING) {
		struct kvm_irq_routing *r = arg;

		c->set_gsi_routing++;
		c->routing_ns += dt;
		if (r->nr > c->max_routes)
			c->max_routes = r->nr;
	} else if (req == KVM_IRQFD) {
		c->irqfd++;
		c->irqfd_ns += dt;
	} else if (req == KVM_IOEVENTFD) {
		c->ioeventfd++;
		c->ioeventfd_ns += dt;
	} else {
		c->other++;
	}
	return ret;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t ctotal(const struct counts *c)
{
	return c->set_gsi_routing + c->irqfd + c->ioeventfd + c->other;
}

struct queue {
	int kick_fd, call_fd;
	uint32_t gsi;
	uint64_t addr;
};

enum mode { MODE_BATCHED, MODE_PERVECTOR, MODE_DRIVEROK, NR_MODES };

static const char *const mode_names[NR_MODES] = { "batched", "pervector",
						  "driverok" };

struct result {
	uint64_t setup_ns, teardown_ns;
	uint64_t placement_ns, placement_ioeventfd; /* driverok only */
	struct counts setup, teardown;
	uint64_t commits_setup, commits_teardown;
	bool one_routing_per_commit;
};

static int kvm_fd = -1;
static uint32_t ioev_len;

/* What one queue stages: its interrupt (route + irqfd), its ioeventfd. */
#define STAGE_IRQ 1u
#define STAGE_KICK 2u

static void stage_queue(struct wiring_txn *t, const struct queue *q, bool assign,
			unsigned int what)
{
	if (what & STAGE_IRQ) {
		if (assign)
			wiring_route(t, q->gsi, true, 0xfee00000ull,
				     0x4000 | (0x30 + q->gsi % 200), 0);
		else
			wiring_route(t, q->gsi, false, 0, 0, 0);
		wiring_irqfd(t, q->call_fd, q->gsi, assign);
	}
	if (what & STAGE_KICK)
		wiring_ioeventfd(t, q->kick_fd, q->addr, ioev_len, false, assign);
}

/*
 * Wire (@assign) or unwire the @n queues as n / @per transactions of @per
 * queues each, counting commits; *one_routing is cleared if a commit made
 * other than exactly one KVM_SET_GSI_ROUTING (@c counts what reached KVM).
 * Returns 0 or the failing commit's -errno (reported).
 */
static int wire_phase(struct vm_irq *irq, const struct queue *qs, unsigned int n,
		      unsigned int per, bool assign, unsigned int what,
		      const struct counts *c, uint64_t *commits, bool *one_routing)
{
	for (unsigned int i = 0; i < n; i += per) {
		uint64_t before = c->set_gsi_routing;
		struct wiring_txn t;
		int err;

		wiring_begin(&t, irq);
		for (unsigned int j = i; j < i + per; j++)
			stage_queue(&t, &qs[j], assign, what);
		err = wiring_commit(&t);
		if (err) {
			fprintf(stderr, "wiring_commit (%s, n=%u): %s\n",
				assign ? "setup" : "teardown", n, strerror(-err));
			return err;
		}
		(*commits)++;
		if ((what & STAGE_IRQ) && c->set_gsi_routing - before != 1)
			*one_routing = false;
	}
	return 0;
}

/*
 * Wire @ndev devices of @nq queues each into a fresh VM and tear them down,
 * the @mode way (top of file).
 */
static int run_one(unsigned int ndev, unsigned int nq, enum mode mode,
		   struct result *res)
{
	bool batched = mode != MODE_PERVECTOR;
	unsigned int what = mode == MODE_DRIVEROK ? STAGE_IRQ : STAGE_IRQ | STAGE_KICK;
	uint64_t placement_commits = 0, unused_commits = 0;
	bool unused_one = true;
	struct counts placed = { 0 };
	unsigned int n = ndev * nq;
	struct counts c = { 0 };
	struct vm_irq *irq = NULL;
	struct queue *qs = calloc(n, sizeof(*qs));
	int vm_fd, ret = -1;

	memset(res, 0, sizeof(*res));
	res->one_routing_per_commit = true;
	if (!qs)
		return -1;
	for (unsigned int i = 0; i < n; i++)
		qs[i].kick_fd = qs[i].call_fd = -1;
	vm_fd = ioctl(kvm_fd, KVM_CREATE_VM, 0);
	if (vm_fd < 0) {
		perror("KVM_CREATE_VM");
		goto out;
	}
	if (ioctl(vm_fd, KVM_CREATE_IRQCHIP, 0) < 0) {
		perror("KVM_CREATE_IRQCHIP");
		goto out;
	}
	if (irq_create(vm_fd, x86_irq_platform(), counting_ioctl, &c, &irq)) {
		fprintf(stderr, "irq_create failed\n");
		goto out;
	}
	for (unsigned int i = 0; i < n; i++) {
		qs[i].kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		qs[i].call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (qs[i].kick_fd < 0 || qs[i].call_fd < 0) {
			perror("eventfd");
			goto out;
		}
		if (irq_gsi_alloc(irq, &qs[i].gsi)) {
			fprintf(stderr, "irq_gsi_alloc failed at %u\n", i);
			goto out;
		}
		qs[i].addr = MMIO_BASE + 4ull * i;
	}

	/* driverok: the ioeventfds first, one transaction per device, as
	 * libvmm places them with the BAR before the guest runs. */
	uint64_t t0 = now_ns();
	if (mode == MODE_DRIVEROK) {
		if (wire_phase(irq, qs, n, nq, true, STAGE_KICK, &c,
			       &placement_commits, &unused_one))
			goto out;
		res->placement_ns = now_ns() - t0;
		res->placement_ioeventfd = c.ioeventfd;
		placed = c;
		memset(&c, 0, sizeof(c));
	}

	/* setup, then teardown, each as n / per transactions */
	unsigned int per = batched ? nq : 1;
	t0 = now_ns();
	if (wire_phase(irq, qs, n, per, true, what, &c, &res->commits_setup,
		       &res->one_routing_per_commit))
		goto out;
	res->setup_ns = now_ns() - t0;
	res->setup = c;

	memset(&c, 0, sizeof(c));
	t0 = now_ns();
	if (wire_phase(irq, qs, n, per, false, what, &c, &res->commits_teardown,
		       &res->one_routing_per_commit))
		goto out;
	res->teardown_ns = now_ns() - t0;
	res->teardown = c;

	/* libvmm's own statistics must agree with what reached KVM */
	struct irq_stats st;
	irq_get_stats(irq, &st);
	if (st.set_gsi_routing != res->setup.set_gsi_routing + res->teardown.set_gsi_routing ||
	    st.irqfd_calls != res->setup.irqfd + res->teardown.irqfd ||
	    st.ioeventfd_calls != placed.ioeventfd + res->setup.ioeventfd +
					  res->teardown.ioeventfd) {
		fprintf(stderr, "irq_get_stats disagrees with the ioctl hook\n");
		goto out;
	}
	if (mode == MODE_DRIVEROK) {
		memset(&c, 0, sizeof(c));
		if (wire_phase(irq, qs, n, nq, false, STAGE_KICK, &c,
			       &unused_commits, &unused_one))
			goto out;
	}
	ret = 0;
out:
	if (irq) {
		for (unsigned int i = 0; i < n; i++)
			if (qs[i].gsi)
				irq_gsi_free(irq, qs[i].gsi);
		irq_destroy(irq);
	}
	for (unsigned int i = 0; i < n; i++) {
		if (qs[i].kick_fd >= 0)
			close(qs[i].kick_fd);
		if (qs[i].call_fd >= 0)
			close(qs[i].call_fd);
	}
	if (vm_fd >= 0)
		close(vm_fd);
	free(qs);
	return ret;
}

static void emit(const char *shape, unsigned int ndev, unsigned int nq, enum mode mode,
		 unsigned int round, const struct result *r)
{
	printf("{\"bench\":\"wiring\",\"mode\":\"%s\",\"shape\":\"%s\",\"devices\":%u,"
	       "\"queues_per_device\":%u,\"n\":%u,\"round\":%u,\"ioeventfd_len\":%u,"
	       "\"setup_ns\":%" PRIu64 ",\"teardown_ns\":%" PRIu64 ","
	       "\"setup_commits\":%" PRIu64 ",\"setup_ioctls\":%" PRIu64
	       ",\"setup_set_gsi_routing\":%" PRIu64 ",\"setup_irqfd\":%" PRIu64
	       ",\"setup_ioeventfd\":%" PRIu64 ",\"setup_max_table\":%" PRIu64 ","
	       "\"setup_routing_ns\":%" PRIu64 ",\"setup_irqfd_ns\":%" PRIu64
	       ",\"setup_ioeventfd_ns\":%" PRIu64 ","
	       "\"teardown_routing_ns\":%" PRIu64 ",\"teardown_irqfd_ns\":%" PRIu64
	       ",\"teardown_ioeventfd_ns\":%" PRIu64 ","
	       "\"teardown_commits\":%" PRIu64 ",\"teardown_ioctls\":%" PRIu64
	       ",\"teardown_set_gsi_routing\":%" PRIu64 ","
	       "\"placement_ns\":%" PRIu64 ",\"placement_ioeventfd\":%" PRIu64 ","
	       "\"one_set_gsi_routing_per_commit\":%s}\n",
	       mode_names[mode], shape, ndev, nq, ndev * nq, round,
	       ioev_len, r->setup_ns, r->teardown_ns, r->commits_setup,
	       ctotal(&r->setup), r->setup.set_gsi_routing, r->setup.irqfd,
	       r->setup.ioeventfd, r->setup.max_routes, r->setup.routing_ns,
	       r->setup.irqfd_ns, r->setup.ioeventfd_ns, r->teardown.routing_ns,
	       r->teardown.irqfd_ns, r->teardown.ioeventfd_ns, r->commits_teardown,
	       ctotal(&r->teardown), r->teardown.set_gsi_routing,
	       r->placement_ns, r->placement_ioeventfd,
	       r->one_routing_per_commit ? "true" : "false");
	fflush(stdout);
}

static int measure(const char *shape, unsigned int ndev, unsigned int nq, unsigned int rounds)
{
	for (unsigned int r = 0; r < rounds; r++) {
		for (unsigned int m = 0; m < NR_MODES; m++) {
			/* A B C, B C A, ...: the starting mode rotates per round */
			enum mode mode = (enum mode)((r + m) % NR_MODES);
			bool batched = mode != MODE_PERVECTOR;
			struct result res;

			if (run_one(ndev, nq, mode, &res))
				return -1;
			emit(shape, ndev, nq, mode, r, &res);
			if (batched && !res.one_routing_per_commit) {
				fprintf(stderr, "FAIL: batched %s issued more than one "
						"KVM_SET_GSI_ROUTING per transaction\n", shape);
				return -1;
			}
			fprintf(stderr, "wiring %-6s %-9s n=%-4u round %u: %8.3f ms (routing %7.3f ms), %5" PRIu64
					" ioctls (%" PRIu64 " SET_GSI_ROUTING); teardown %8.3f ms",
				shape, mode_names[mode], ndev * nq, r,
				res.setup_ns / 1e6, res.setup.routing_ns / 1e6, ctotal(&res.setup),
				res.setup.set_gsi_routing, res.teardown_ns / 1e6);
			if (mode == MODE_DRIVEROK)
				fprintf(stderr, "; ioeventfds placed before: %8.3f ms",
					res.placement_ns / 1e6);
			fputc('\n', stderr);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int rounds = 5, max = 384;
	unsigned int shapes[8][2];
	unsigned int nshapes = 0;
	bool default_shapes = true;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
			rounds = (unsigned int)strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--max") && i + 1 < argc) {
			max = (unsigned int)strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--shape") && i + 1 < argc && nshapes < 8) {
			if (sscanf(argv[++i], "%ux%u", &shapes[nshapes][0], &shapes[nshapes][1]) != 2 ||
			    !shapes[nshapes][0] || !shapes[nshapes][1]) {
				fprintf(stderr, "bad --shape %s (want DxQ)\n", argv[i]);
				return 2;
			}
			nshapes++;
		} else if (!strcmp(argv[i], "--no-default-shapes")) {
			default_shapes = false;
		} else {
			fprintf(stderr, "usage: %s [--rounds R] [--max N] [--shape DxQ]... "
					"[--no-default-shapes]\n", argv[0]);
			return 2;
		}
	}
	if (!rounds || !max || max > 1024) {
		fprintf(stderr, "bad --rounds/--max\n");
		return 2;
	}
	if (default_shapes && nshapes == 0) {
		shapes[0][0] = 16;
		shapes[0][1] = 24;
		nshapes = 1;
	}
	kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm_fd < 0) {
		perror("/dev/kvm");
		return 77;
	}
	ioev_len = ioctl(kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_IOEVENTFD_ANY_LENGTH) > 0 ? 0 : 2;

	/* warm-up, not reported: the first VM of a process pays one-time costs */
	{
		struct result res;

		if (run_one(1, 1, MODE_BATCHED, &res))
			return 1;
	}
	/* N = 1, 2, 4, ..., 256, then 384 (the pseries boot of the QEMU fix) */
	for (unsigned int n = 1; n <= max; n = n < 256 ? n * 2 : n + 128) {
		char shape[32];

		snprintf(shape, sizeof(shape), "n%u", n);
		if (measure(shape, 1, n, rounds))
			return 1;
		if (n >= 384)
			break;
	}
	for (unsigned int s = 0; s < nshapes; s++) {
		char shape[32];

		snprintf(shape, sizeof(shape), "d%uq%u", shapes[s][0], shapes[s][1]);
		if (measure(shape, shapes[s][0], shapes[s][1], rounds))
			return 1;
	}
	close(kvm_fd);
	return 0;
}
