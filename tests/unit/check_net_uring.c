/* SPDX-License-Identifier: MIT */
/*
 * The tap back end's io_uring data path (devices/net/tap-uring.h) in the
 * whole virtio-net device, its queue service and one real I/O thread,
 * KVM-free: the tap's data path (net_tap_backend, without its ioctls) on
 * a SOCK_SEQPACKET socketpair standing in for the tap (one message a
 * frame after the 12-byte header), a simulated driver with MRG_RXBUF.
 *   - TX and RX move frames through the engine (the device's files are
 *     registered with the ring: iothread stats), every byte checked;
 *   - a reset with RX reads started and TX writes the socket cannot take
 *     (whether the kernel answers EAGAIN or parks them on the file, as
 *     6.x does for a file that can wait): the stop returns, nothing is
 *     pushed into either ring afterwards, no read is left in flight (a
 *     frame sent after the reset stays in the socket for the next
 *     reader), and the device starts again on new rings and moves
 *     frames; ASan (VMM_SANITIZE) checks that nothing leaks;
 *   - RX buffers smaller than the largest frame (MRG_RXBUF, GUEST_TSO4's
 *     64 KiB): no read starts until the device holds that much or the
 *     whole ring, and the chains a small packet did not need are used by
 *     the next packets (no buffer is lost, all come back once enough
 *     packets went through), also when the driver does not give any
 *     back (the chains kept by several reads are gathered into one).
 */
#include <check.h>
#include <linux/virtio_config.h>
#include <linux/virtio_net.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fake_guest.h"
#include "iothread.h"
#include "net/net-backend.h"
#include "net/tap-uring.h"
#include "net/virtio-net.h"

#define HDR VNET_HDR_LEN
#define QS 64u
#define RX 0u
#define TX 1u
#define NQ 3u /* rx, tx, ctrl (not enabled) */
#define WAIT_ROUNDS 20000 /* of 0.5 ms: 10 s */

static struct fake_guest g;
static struct fg_vq drv[NQ];
static struct virtio_queue qs[NQ];
static struct iothread *io;
static struct virtio_net *dev;
static struct virtio_device vd;
static struct net_backend be;
static int peer; /* the host side of the "tap" */
static int tap;	 /* the device's side (the test reads it after a reset) */
static uint64_t features;

/* Interrupts per queue (the I/O thread raises them), and the last
 * NEEDS_RESET's reason (none expected: checked at teardown). */
static unsigned int irqs[NQ];
static const char *broken;

static void count_irq(struct virtio_queue *q)
{
	__atomic_add_fetch(&irqs[q->index], 1, __ATOMIC_RELAXED);
}

static void note_broken(struct virtio_queue *q, const char *why)
{
	(void)q;
	broken = why;
}

static const struct virtio_transport_ops t_ops = {
	.queue_notify = count_irq,
	.needs_reset = note_broken,
};

/* Pair 0 counted @n frames sent (@tx) or received, and dropped none.
 * The I/O thread publishes the used index before it interrupts (and may
 * count a frame after its chain was used), so a caller that saw the used
 * entries waits, bounded, for the count and the interrupt as well: the
 * arm64 rig's slow L1 once checked in between. */
static void expect_counted(bool tx, uint64_t n)
{
	struct virtio_net_pair_stats st;

	for (int t = 0; t < WAIT_ROUNDS; t++) {
		ck_assert_int_eq(virtio_net_pair_stats(dev, 0, &st), 0);
		if ((tx ? st.net.tx_packets : st.net.rx_packets) >= n &&
		    __atomic_load_n(&irqs[tx ? TX : RX], __ATOMIC_RELAXED) > 0)
			break;
		usleep(500);
	}
	ck_assert_int_eq(virtio_net_pair_stats(dev, 0, &st), 0);
	ck_assert_uint_eq(tx ? st.net.tx_packets : st.net.rx_packets, n);
	ck_assert_uint_eq(tx ? st.net.tx_drops : st.net.rx_drops, 0);
	/* The completions that used the chains interrupted the driver. */
	ck_assert_uint_gt(__atomic_load_n(&irqs[tx ? TX : RX], __ATOMIC_RELAXED), 0);
}

/* New rings on the queues and DRIVER_OK (the first start or after a
 * reset, as a driver does). */
static void start_rings(void)
{
	ck_assert_int_eq(vd.ops->set_features(vd.dev, features), 0);
	for (unsigned int i = 0; i < NQ; i++) {
		ck_assert_int_eq(fg_vq_init(&g, &drv[i], QS, 0), 0);
		ck_assert_int_eq(fg_vq_attach(&drv[i], &qs[i].vq), 0);
		qs[i].t_ops = &t_ops;
		qs[i].index = i;
		qs[i].enabled = i != 2;
		if (!qs[i].kick_fd)
			qs[i].kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		qs[i].call_fd = -1;
		ck_assert_int_gt(qs[i].kick_fd, 0);
	}
	ck_assert_int_eq(vd.ops->start(vd.dev, qs, NQ), 0);
}

static void setup_with(uint64_t extra, int sndbuf)
{
	int sv[2];
	struct virtio_net_params np = {
		.net = { .max_pairs = 1, .mac = { 0x52, 0x54, 0, 0, 0, 7 } },
		.fds = &sv[0],
		.backend = &be,
		.queue_size = QS,
		.iothreads = &io,
		.nr_iothreads = 1,
	};

	be = net_tap_backend;
	be.set_features = NULL; /* TUNSETOFFLOAD, TUNSETQUEUE: a tap's */
	be.steer = NULL;
	ck_assert(be.uring);
	memset(qs, 0, sizeof(qs));
	memset(irqs, 0, sizeof(irqs));
	broken = NULL;
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK |
						 SOCK_CLOEXEC, 0, sv), 0);
	if (sndbuf)
		ck_assert_int_eq(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf,
					    sizeof(sndbuf)), 0);
	tap = sv[0];
	peer = sv[1];
	features = (1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_NET_F_MRG_RXBUF) | extra;
	ck_assert_int_eq(fg_init(&g, 16ull << 20), 0);
	ck_assert_int_eq(iothread_create(0, 64, &io), 0);
	ck_assert_int_eq(iothread_start(io), 0);
	ck_assert_int_eq(virtio_net_create(&np, &dev), 0);
	virtio_net_virtio(dev, &vd);
	ck_assert_uint_eq(vd.num_queues, NQ);
	start_rings();
}

static void setup(void)
{
	setup_with(0, 0);
}

static void teardown(void);

/* The device again with other features, or the "tap" end's SO_SNDBUF. */
static void reinit(uint64_t extra, int sndbuf)
{
	teardown();
	setup_with(extra, sndbuf);
}

static void teardown(void)
{
	vd.ops->stop(vd.dev);
	ck_assert_msg(!broken, "NEEDS_RESET: %s", broken);
	virtio_net_destroy(dev); /* closes tap */
	iothread_stop(io);
	iothread_destroy(io);
	for (unsigned int i = 0; i < NQ; i++) {
		close(qs[i].kick_fd);
		fg_vq_destroy(&drv[i]);
	}
	fg_destroy(&g);
	close(peer);
}

static void kick(unsigned int q)
{
	fg_vq_publish(&drv[q]);
	ck_assert_int_eq(eventfd_write(qs[q].kick_fd, 1), 0);
}

/* Frame i: @len bytes, byte j = i + j. */
static void fill(uint8_t *p, unsigned int i, uint32_t len)
{
	for (uint32_t j = 0; j < len; j++)
		p[j] = (uint8_t)(i + j);
}

static void post_tx(unsigned int i, uint32_t len)
{
	struct fg_buf b = { fg_alloc(&g, HDR + len, 8), HDR + len, false };
	uint8_t *p = fg_ptr(&g, b.gpa, HDR + len);

	memset(p, 0, HDR);
	fill(p + HDR, i, len);
	ck_assert_int_ge(fg_vq_add(&drv[TX], &b, 1, false), 0);
}

/* @n RX buffers of @len bytes, their addresses by head in gpa[]. */
static void post_rx(unsigned int n, uint32_t len, uint64_t *gpa)
{
	for (unsigned int i = 0; i < n; i++) {
		struct fg_buf b = { fg_alloc(&g, len, 8), len, true };
		int head = fg_vq_add(&drv[RX], &b, 1, false);

		ck_assert_int_ge(head, 0);
		gpa[head] = b.gpa;
	}
}

/* Wait (bounded) until @q's used ring has @n entries more than @base. */
static void wait_used(unsigned int q, uint16_t base, unsigned int n)
{
	int t;

	for (t = 0; t < WAIT_ROUNDS && (uint16_t)(fg_vq_used_idx(&drv[q]) - base) < n; t++)
		usleep(500);
	ck_assert_uint_eq((uint16_t)(fg_vq_used_idx(&drv[q]) - base), n);
}

static void peer_send(unsigned int i, uint32_t len)
{
	uint8_t f[HDR + 2048];

	ck_assert_uint_le(len, 2048);
	memset(f, 0, HDR);
	fill(f + HDR, i, len);
	ck_assert_int_eq(send(peer, f, HDR + len, 0), (ssize_t)(HDR + len));
}

/* Frame i in the guest's buffer at @gpa: header (num_buffers 1), bytes. */
static void check_rx_frame(uint64_t gpa, uint32_t used_len, unsigned int i, uint32_t len)
{
	const uint8_t *p = fg_ptr(&g, gpa, HDR + len);
	uint8_t want[2048];

	ck_assert_uint_eq(used_len, HDR + len);
	ck_assert_uint_eq(p[10] | p[11] << 8, 1); /* num_buffers */
	fill(want, i, len);
	ck_assert_mem_eq(p + HDR, want, len);
}

static void io_stats(struct iothread_stats *st)
{
	iothread_get_stats(io, st);
}

/* TX: 40 frames through the engine, each read by the peer whole and in
 * the order sent (the slots' writes reach the socket in submission
 * order), each chain used once. */
START_TEST(tx_frames)
{
	struct iothread_stats ios;
	uint8_t f[HDR + 2048], want[2048];
	unsigned int n = 40;
	uint32_t id, len;

	io_stats(&ios);
	/* The RX and TX queues each registered the tap: the engine's SQEs
	 * name it by its slot (with the kicks' eventfds and the thread's
	 * own, more than two files). */
	ck_assert_uint_ge(ios.files, 2 + 2);
	for (unsigned int i = 0; i < n; i++)
		post_tx(i, 100 + i);
	kick(TX);
	wait_used(TX, 0, n);
	for (unsigned int i = 0; i < n; i++) {
		ssize_t r = recv(peer, f, sizeof(f), MSG_DONTWAIT);

		ck_assert_int_eq(r, (ssize_t)(HDR + 100 + i));
		fill(want, i, 100 + i);
		ck_assert_mem_eq(f + HDR, want, 100 + i);
	}
	for (unsigned int i = 0; i < n; i++) {
		ck_assert_int_eq(fg_vq_get_used(&drv[TX], &id, &len), 1);
		ck_assert_uint_eq(len, 0);
	}
	expect_counted(true, n);
}
END_TEST

/* RX: frames sent before and after the buffers were posted land whole,
 * in order, one buffer each (num_buffers 1). */
START_TEST(rx_frames)
{
	uint64_t gpa[QS];
	unsigned int n = 48;
	uint32_t id, len;

	for (unsigned int i = 0; i < 8; i++)
		peer_send(i, 60 + i);
	post_rx(n, 2048, gpa);
	kick(RX);
	for (unsigned int i = 8; i < n; i++)
		peer_send(i, 60 + i);
	wait_used(RX, 0, n);
	for (unsigned int i = 0; i < n; i++) {
		ck_assert_int_eq(fg_vq_get_used(&drv[RX], &id, &len), 1);
		check_rx_frame(gpa[id], len, i, 60 + i);
	}
	expect_counted(false, n);
}
END_TEST

/*
 * A reset while RX reads are started (buffers posted, the socket empty)
 * and TX writes wait for room (the socket's buffer full): stop returns,
 * nothing reaches either used ring after it, and a frame sent after it
 * is still in the socket (no read was left in flight to take it).  Then
 * new rings: frames move both ways again.
 */
START_TEST(reset_in_flight)
{
	struct virtio_net_pair_stats st;
	uint64_t gpa[QS];
	uint16_t rx_used, tx_used;
	uint8_t f[HDR + 2048];
	uint32_t id, len;
	ssize_t r;
	int t;

	reinit(0, 8192); /* room for a few frames */
	post_rx(QS, 2048, gpa);
	kick(RX);
	for (unsigned int i = 0; i < QS; i++)
		post_tx(i, 1500);
	kick(TX);
	/* Some TX chains used (the socket took them); the rest wait in the
	 * kernel for room (a file that can wait: 6.x parks the write) or
	 * were refused (EAGAIN: dropped, counted). */
	for (t = 0; t < WAIT_ROUNDS && !fg_vq_used_idx(&drv[TX]); t++)
		usleep(500);
	usleep(20000);
	ck_assert_uint_gt(fg_vq_used_idx(&drv[TX]), 0);
	ck_assert_int_eq(virtio_net_pair_stats(dev, 0, &st), 0);
	ck_assert(fg_vq_used_idx(&drv[TX]) < QS || st.net.tx_drops > 0);
	ck_assert_uint_eq(fg_vq_used_idx(&drv[RX]), 0);

	vd.ops->stop(vd.dev); /* the guest's reset: must return */
	rx_used = fg_vq_used_idx(&drv[RX]);
	tx_used = fg_vq_used_idx(&drv[TX]);
	ck_assert_uint_eq(rx_used, 0);
	/* Every chain the device took finished to the used ring before the
	 * stop returned, written or dropped (a write cancelled by the reset
	 * too): a reset's driver reads back what the device returned. */
	ck_assert_int_eq(virtio_net_pair_stats(dev, 0, &st), 0);
	ck_assert_uint_eq(tx_used, st.net.tx_packets + st.net.tx_drops);
	/* Room again on the TX side, a frame for RX: nothing moves. */
	while (recv(peer, f, sizeof(f), MSG_DONTWAIT) > 0)
		;
	peer_send(7, 77);
	usleep(50000);
	ck_assert_uint_eq(fg_vq_used_idx(&drv[RX]), rx_used);
	ck_assert_uint_eq(fg_vq_used_idx(&drv[TX]), tx_used);
	r = recv(tap, f, sizeof(f), MSG_DONTWAIT);
	ck_assert_int_eq(r, HDR + 77);
	ck_assert_int_eq(recv(peer, f, sizeof(f), MSG_DONTWAIT), -1);

	/* The driver sets up new rings: traffic again. */
	for (unsigned int i = 0; i < NQ; i++)
		fg_vq_destroy(&drv[i]);
	start_rings();
	post_rx(4, 2048, gpa);
	kick(RX);
	peer_send(3, 300);
	wait_used(RX, 0, 1);
	ck_assert_int_eq(fg_vq_get_used(&drv[RX], &id, &len), 1);
	check_rx_frame(gpa[id], len, 3, 300);
	post_tx(5, 500);
	kick(TX);
	wait_used(TX, 0, 1);
	for (t = 0; t < WAIT_ROUNDS && (r = recv(peer, f, sizeof(f), MSG_DONTWAIT)) < 0; t++)
		usleep(500);
	ck_assert_int_eq(r, HDR + 500);
}
END_TEST

/*
 * GUEST_TSO4: the largest frame is 64 KiB, the buffers 4 KiB.  With 8
 * posted (32 KiB, a short ring of 64) no read starts and the frame waits
 * in the socket; with all 64 posted reads start, each on 17 buffers;
 * each small frame uses one and leaves the rest to the reads after it.
 * 200 frames go through the 64 buffers the driver keeps re-posting: no
 * buffer is lost.
 */
START_TEST(mrg_short_ring)
{
	uint64_t gpa[QS];
	unsigned int got = 0, sent = 1, total = 200;
	uint32_t id, len;
	int t;

	reinit((1ull << VIRTIO_NET_F_GUEST_CSUM) | (1ull << VIRTIO_NET_F_GUEST_TSO4), 0);
	post_rx(8, 4096, gpa);
	kick(RX);
	peer_send(0, 100);
	usleep(50000);
	ck_assert_uint_eq(fg_vq_used_idx(&drv[RX]), 0);
	post_rx(QS - 8, 4096, gpa);
	kick(RX);
	for (t = 0; t < WAIT_ROUNDS && got < total; t++) {
		for (; sent < total && sent - got < 8; sent++)
			peer_send(sent, 100 + sent % 50);
		if (fg_vq_get_used(&drv[RX], &id, &len) != 1) {
			usleep(500);
			continue;
		}
		check_rx_frame(gpa[id], len, got, 100 + got % 50);
		got++;
		/* The driver gives the buffer back at once. */
		post_rx(1, 4096, gpa);
		kick(RX);
	}
	ck_assert_uint_eq(got, total);
}
END_TEST

/*
 * The same buffers, never given back (as Linux, which refills only once
 * more than 32 are free): each small frame leaves 16 of its read's 17
 * chains kept, short of the largest frame by a few bytes.  The reads
 * take the kept chains of the others, so 40 frames arrive one after the
 * other through the 64 buffers, none waits in the socket.
 */
START_TEST(mrg_kept_chains)
{
	uint64_t gpa[QS];
	uint32_t id, len;

	reinit((1ull << VIRTIO_NET_F_GUEST_CSUM) | (1ull << VIRTIO_NET_F_GUEST_TSO4), 0);
	post_rx(QS, 4096, gpa);
	kick(RX);
	for (unsigned int i = 0; i < 40; i++) {
		peer_send(i, 60 + i);
		wait_used(RX, (uint16_t)i, 1);
		ck_assert_int_eq(fg_vq_get_used(&drv[RX], &id, &len), 1);
		check_rx_frame(gpa[id], len, i, 60 + i);
	}
}
END_TEST

/*
 * A driver keeping 8 buffers posted, one frame at a time, giving each
 * buffer back once used and kicking only when the ring asks for it
 * (fg_vq_publish(), as virtqueue_kick_prepare(): NO_NOTIFY here).  The reads
 * started hold the buffers, so the ring looks empty to the slots left
 * without a read: the queue still does not ask for a kick after the
 * first (the reads' completions serve it again and take the buffers
 * added meanwhile), and no frame waits for one: all 100 arrive.
 */
START_TEST(rx_no_kick_while_reading)
{
	uint64_t gpa[QS];
	unsigned int due = 0;
	uint32_t id, len;

	post_rx(8, 2048, gpa);
	ck_assert(fg_vq_publish(&drv[RX])); /* kicks on at start: due */
	ck_assert_int_eq(eventfd_write(qs[RX].kick_fd, 1), 0);
	for (unsigned int i = 0; i < 100; i++) {
		peer_send(i, 60 + i % 40);
		wait_used(RX, (uint16_t)i, 1);
		ck_assert_int_eq(fg_vq_get_used(&drv[RX], &id, &len), 1);
		check_rx_frame(gpa[id], len, i, 60 + i % 40);
		post_rx(1, 2048, gpa);
		if (fg_vq_publish(&drv[RX])) {
			due++;
			ck_assert_int_eq(eventfd_write(qs[RX].kick_fd, 1), 0);
		}
	}
	ck_assert_uint_eq(due, 0);
	expect_counted(false, 100);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("net_uring");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, tx_frames);
	tcase_add_test(tc, rx_frames);
	tcase_add_test(tc, reset_in_flight);
	tcase_add_test(tc, mrg_short_ring);
	tcase_add_test(tc, mrg_kept_chains);
	tcase_add_test(tc, rx_no_kick_while_reading);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
