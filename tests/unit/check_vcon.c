/* SPDX-License-Identifier: MIT */
/*
 * virtio-console (multiport) without KVM: the real device threads and
 * virtio-pci transport over the fake KVM (tests/harness/fake_vpci.h); the
 * test is the guest driver, doing what Linux's virtio_console does: control
 * handshake (DEVICE_READY -> PORT_ADD -> PORT_READY -> PORT_NAME +
 * PORT_OPEN), page-sized receive buffers, transmit chains.  Checks binary
 * data both ways byte-exact, input split over small buffers, EOF on the
 * host fd delivered as PORT_OPEN 0 after the data, input held in the host
 * fd until a guest program opens the port, output queued at stop
 * written out, and a malformed chain setting NEEDS_RESET.  A stop is
 * bounded whatever the reader does: output queued (not kicked) beyond a
 * socket buffer that nobody reads, or a port thread stuck on a stalled
 * pipe, is dropped and counted after VCON_STOP_FLUSH_MS, and the
 * embedder's pipe keeps its blocking flags.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/virtio_config.h>
#include <linux/virtio_console.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_pci.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "console/vcon.h"
#include "fake_guest.h"
#include "fake_vpci.h"
#include "pci/msix.h"
#include "test_clock.h"

#define RAM_SIZE (16ull << 20)
#define QSIZE 64
#define NPORTS 2
#define NQ (2 * (NPORTS + 1))
#define WAIT_MS 10000
#define DRV_FEATURES \
	((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_CONSOLE_F_MULTIPORT))

struct drvq {
	struct fg_vq vq;
	int kick_fd;
	uint64_t gpa[QSIZE]; /* buffer of each head (receive queues) */
};

static struct {
	struct fv v;
	struct fake_guest g;
	struct vcon *dev;
	struct drvq q[NQ];
	int in_w;  /* test writes port 0's input here */
	int out_r; /* and reads port 0's output here */
	int err_r; /* port 1's output */
	bool out_sock; /* port 0's output is a socket, not a pipe */
	int out_w_dup; /* our copy of the write end the device got */
} R;

static void kick(unsigned int q)
{
	uint64_t one = 1;

	fg_vq_publish(&R.q[q].vq); /* kick whatever it decides */
	ck_assert_int_eq(write(R.q[q].kick_fd, &one, 8), 8);
}

/* Give receive queue @q @n writable buffers of @len bytes. */
static void rx_fill(unsigned int q, unsigned int n, uint32_t len)
{
	for (unsigned int i = 0; i < n; i++) {
		struct fg_buf b = { .gpa = fg_alloc(&R.g, len, 8), .len = len,
				    .writable = true };
		int head;

		ck_assert_uint_ne(b.gpa, 0);
		head = fg_vq_add(&R.q[q].vq, &b, 1, false);
		ck_assert_int_ge(head, 0);
		R.q[q].gpa[head] = b.gpa;
	}
	kick(q);
}

/* Wait for one used entry on @q: returns its length, its data in @buf. */
static uint32_t used_wait(unsigned int q, void *buf, uint32_t cap)
{
	uint64_t deadline = test_now_ms() + WAIT_MS;
	uint32_t id, len;

	while (!fg_vq_get_used(&R.q[q].vq, &id, &len)) {
		ck_assert_msg(test_now_ms() < deadline, "no used entry on queue %u", q);
		usleep(1000);
	}
	if (buf) {
		ck_assert_uint_le(len, cap);
		memcpy(buf, fg_ptr(&R.g, R.q[q].gpa[id], len), len);
	}
	return len;
}

static void ctl_expect(uint32_t id, uint16_t event, uint16_t value,
		       const char *name)
{
	uint8_t buf[4096];
	struct virtio_console_control m;
	uint32_t len = used_wait(2, buf, sizeof(buf));

	ck_assert_uint_ge(len, sizeof(m));
	memcpy(&m, buf, sizeof(m));
	ck_assert_uint_eq(le32toh(m.id), id);
	ck_assert_uint_eq(le16toh(m.event), event);
	ck_assert_uint_eq(le16toh(m.value), value);
	if (name) {
		ck_assert_uint_eq(len - sizeof(m), strlen(name));
		ck_assert(!memcmp(buf + sizeof(m), name, strlen(name)));
	}
	rx_fill(2, 1, 4096); /* give the buffer back, as Linux does */
}

/* Guest -> host: a chain of readable buffers holding @data. */
static void tx_send(unsigned int q, const void *data, uint32_t len, bool do_kick)
{
	struct fg_buf b = { .gpa = fg_alloc(&R.g, len, 8), .len = len };

	ck_assert_uint_ne(b.gpa, 0);
	memcpy(fg_ptr(&R.g, b.gpa, len), data, len);
	ck_assert_int_ge(fg_vq_add(&R.q[q].vq, &b, 1, false), 0);
	if (do_kick)
		kick(q);
	else
		fg_vq_publish(&R.q[q].vq);
}

static void ctl_send(uint32_t id, uint16_t event, uint16_t value)
{
	struct virtio_console_control m = {
		.id = htole32(id), .event = htole16(event), .value = htole16(value),
	};

	tx_send(3, &m, sizeof(m), true);
	used_wait(3, NULL, 0);
}

static void read_exact(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		ck_assert_int_eq(poll(&p, 1, WAIT_MS), 1);
		n = read(fd, (uint8_t *)buf + got, len - got);
		ck_assert_int_gt(n, 0);
		got += (size_t)n;
	}
}

/* The device up to the queues' addresses, DRIVER_OK not yet set. */
static void setup_queues(void)
{
	int in[2], out[2], err[2];
	struct vcon_port_params pp[NPORTS];
	struct vcon_params cp = { .ports = pp, .nr_ports = NPORTS };
	struct vpci_params vp = { .num_queues = NQ, .max_queue_size = QSIZE,
				  .ioeventfd_any_length = true };
	uint64_t offered;
	bool sock = R.out_sock;

	memset(&R, 0, sizeof(R));
	R.out_sock = sock;
	ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
	if (sock)
		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, out), 0);
	else
		ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	R.out_w_dup = fcntl(out[1], F_DUPFD_CLOEXEC, 0);
	ck_assert_int_ge(R.out_w_dup, 0);
	ck_assert_int_eq(pipe2(err, O_CLOEXEC), 0);
	pp[0] = (struct vcon_port_params){ "minivmm.io", in[0], out[1] };
	pp[1] = (struct vcon_port_params){ "minivmm.err", -1, err[1] };
	R.in_w = in[1];
	R.out_r = out[0];
	R.err_r = err[0];
	ck_assert_int_eq(vcon_create(&cp, &R.dev), 0);
	ck_assert_uint_eq(vcon_num_queues(R.dev), NQ);
	ck_assert_int_eq(vcon_start_threads(R.dev), 0);

	ck_assert_int_eq(fg_init(&R.g, RAM_SIZE), 0);
	ck_assert_int_eq(fv_init(&R.v, -1, FV_MMIO_BASE, FV_MMIO_SIZE, &R.g.mem), 0);
	vp.bus = R.v.bus;
	vp.irq = R.v.irq;
	vp.mem = &R.g.mem;
	vp.ops = vcon_dev_ops();
	vp.dev = R.dev;
	ck_assert_int_eq(vpci_create(&vp, &R.v.t), 0);
	ck_assert_int_eq(fv_probe(&R.v), 0);
	ck_assert_uint_eq(fv_cfg_rd(&R.v, PCI_CFG_DEVICE_ID, 2),
			  VPCI_DEVICE_ID_BASE + VIRTIO_ID_CONSOLE);

	ck_assert_int_eq(fv_negotiate(&R.v, DRV_FEATURES, &offered), 0);
	ck_assert_uint_eq(fv_mr(&R.v, R.v.devcfg + 4, 4), NPORTS); /* max_nr_ports */
	fv_msix_ctrl(&R.v, MSIX_CTRL_ENABLE);
	for (unsigned int v = 0; v < R.v.nr_vectors; v++) {
		fv_msix_write(&R.v, v, 0xfee00000ull, 0x4000u + v);
		fv_msix_mask(&R.v, v, false);
	}
	for (unsigned int q = 0; q < NQ; q++) {
		ck_assert_int_eq(fg_vq_init(&R.g, &R.q[q].vq, QSIZE, 0), 0);
		fv_queue_setup(&R.v, q, QSIZE, R.q[q].vq.desc_gpa,
			       R.q[q].vq.avail_gpa, R.q[q].vq.used_gpa,
			       (uint16_t)(q + 1));
	}
}

static void setup(void)
{
	setup_queues();
	fv_status_add(&R.v, VIRTIO_CONFIG_S_DRIVER_OK);
	for (unsigned int q = 0; q < NQ; q++) {
		R.q[q].kick_fd = fv_kvm_kick_fd(R.v.kvm, fv_notify_addr(&R.v, q));
		ck_assert_int_ge(R.q[q].kick_fd, 0);
	}
	/* Linux: control receive buffers, then DEVICE_READY. */
	rx_fill(2, 8, 4096);
	ctl_send(VIRTIO_CONSOLE_BAD_ID, VIRTIO_CONSOLE_DEVICE_READY, 1);
	ctl_expect(0, VIRTIO_CONSOLE_PORT_ADD, 0, NULL);
	ctl_expect(1, VIRTIO_CONSOLE_PORT_ADD, 0, NULL);
	for (uint32_t p = 0; p < NPORTS; p++) {
		rx_fill(p ? 2 * p + 2 : 0, 4, 16); /* small: input gets split */
		ctl_send(p, VIRTIO_CONSOLE_PORT_READY, 1);
		ctl_expect(p, VIRTIO_CONSOLE_PORT_NAME, 0,
			   p ? "minivmm.err" : "minivmm.io");
		ctl_expect(p, VIRTIO_CONSOLE_PORT_OPEN, 1, NULL);
	}
	ck_assert(!(fv_status(&R.v) & VIRTIO_CONFIG_S_NEEDS_RESET));
}

static void teardown(void)
{
	vpci_destroy(R.v.t);
	R.v.t = NULL;
	vcon_destroy(R.dev);
	fv_destroy(&R.v);
	for (unsigned int q = 0; q < NQ; q++)
		fg_vq_destroy(&R.q[q].vq);
	fg_destroy(&R.g);
	if (R.in_w >= 0)
		close(R.in_w);
	close(R.out_r);
	close(R.err_r);
	close(R.out_w_dup);
}

START_TEST(test_input_binary_split)
{
	static const uint8_t data[] = "line1\r\nline2\n\0\xff\x80 binary\x1b[0m end";
	uint8_t got[sizeof(data)];
	size_t have = 0;

	ck_assert_int_eq(write(R.in_w, data, sizeof(data)), (ssize_t)sizeof(data));
	ctl_send(0, VIRTIO_CONSOLE_PORT_OPEN, 1); /* a guest program opens it */
	while (have < sizeof(data)) {
		uint32_t n;

		if (!fg_vq_used_pending(&R.q[0].vq) && have)
			rx_fill(0, 1, 16);
		n = used_wait(0, got + have, (uint32_t)(sizeof(got) - have));
		ck_assert_uint_gt(n, 0);
		have += n;
	}
	ck_assert(!memcmp(got, data, sizeof(data)));
}
END_TEST

START_TEST(test_output_binary)
{
	uint8_t data[3000], got[3000];
	struct vcon_port_stats st;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 13);
	data[10] = '\n';
	data[11] = '\r';
	tx_send(1, data, 1000, false);
	tx_send(1, data + 1000, 2000, true);
	read_exact(R.out_r, got, sizeof(got));
	ck_assert(!memcmp(got, data, sizeof(data)));
	tx_send(5, "err\n", 4, true); /* port 1 transmitq: its own fd */
	read_exact(R.err_r, got, 4);
	ck_assert(!memcmp(got, "err\n", 4));
	/* The port thread counts a chain's bytes after writing them out and
	 * before it returns the chain: the two used entries, not the data on
	 * the pipe, say the count is complete (a test that read the counter
	 * right after the data failed once at load: 1000 of 3000). */
	used_wait(1, NULL, 0);
	used_wait(1, NULL, 0);
	ck_assert_int_eq(vcon_port_stats(R.dev, 0, &st), 0);
	ck_assert_uint_eq(st.bytes_out, sizeof(data));
	ck_assert_int_eq(vcon_port_stats(R.dev, 2, &st), -ENOENT);
}
END_TEST

START_TEST(test_eof_after_data)
{
	char got[8];

	ck_assert_int_eq(write(R.in_w, "abc", 3), 3);
	close(R.in_w);
	R.in_w = -1;
	ctl_send(0, VIRTIO_CONSOLE_PORT_OPEN, 1);
	ck_assert_uint_eq(used_wait(0, got, sizeof(got)), 3);
	ck_assert(!memcmp(got, "abc", 3));
	/* Host disconnected, after the data. */
	ctl_expect(0, VIRTIO_CONSOLE_PORT_OPEN, 0, NULL);
	/* A port opened again keeps saying so: no reply. */
	ctl_send(0, VIRTIO_CONSOLE_PORT_OPEN, 0);
	ctl_send(0, VIRTIO_CONSOLE_PORT_OPEN, 1);
	ck_assert_uint_eq(fg_vq_used_pending(&R.q[2].vq), 0);
}
END_TEST

/*
 * Input that is there before a guest program opens the port (a piped
 * stdin written at once) waits in the host fd: Linux's driver drops what
 * arrives on a closed port.  Nothing is delivered while the port is
 * closed, everything once it is opened; closed again, input waits again.
 */
START_TEST(test_input_waits_for_open)
{
	char got[8];

	ck_assert_int_eq(write(R.in_w, "early", 5), 5);
	usleep(200 * 1000);
	ck_assert_uint_eq(fg_vq_used_pending(&R.q[0].vq), 0);
	ctl_send(0, VIRTIO_CONSOLE_PORT_OPEN, 1);
	ck_assert_uint_eq(used_wait(0, got, sizeof(got)), 5);
	ck_assert(!memcmp(got, "early", 5));
	ctl_send(0, VIRTIO_CONSOLE_PORT_OPEN, 0);
	/* The close reaches the port thread before the next input: the
	 * control thread handles messages in order, and this one is
	 * answered by nothing, so wait for it to be taken. */
	usleep(200 * 1000);
	ck_assert_int_eq(write(R.in_w, "late", 4), 4);
	usleep(200 * 1000);
	ck_assert_uint_eq(fg_vq_used_pending(&R.q[0].vq), 0);
	ctl_send(0, VIRTIO_CONSOLE_PORT_OPEN, 1);
	ck_assert_uint_eq(used_wait(0, got, sizeof(got)), 4);
	ck_assert(!memcmp(got, "late", 4));
}
END_TEST

START_TEST(test_stop_writes_out_queued_output)
{
	char got[5];

	/* Published, never kicked: only the stop (VM end) finds it. */
	tx_send(1, "late!", 5, false);
	vpci_quiesce(R.v.t);
	read_exact(R.out_r, got, 5);
	ck_assert(!memcmp(got, "late!", 5));
}
END_TEST

/* A stop right after the start, before the port threads have taken the
 * queues (woken, not yet scheduled): the output the guest had queued is
 * still written out (the stop does it for an idle thread).  It used to be
 * lost whenever the thread was slow, e.g. under load.  Many rounds make
 * both orders happen. */
START_TEST(test_stop_right_after_start)
{
	for (int round = 0; round < 100; round++) {
		char got[6];

		setup_queues();
		tx_send(1, "early!", 6, false); /* port 0's transmitq */
		fv_status_add(&R.v, VIRTIO_CONFIG_S_DRIVER_OK);
		vpci_quiesce(R.v.t);
		read_exact(R.out_r, got, sizeof(got));
		ck_assert_msg(!memcmp(got, "early!", 6), "round %d", round);
		teardown();
	}
}
END_TEST

START_TEST(test_malformed_chain)
{
	struct fg_buf b = { .gpa = RAM_SIZE + 4096, .len = 64 };

	ck_assert_int_ge(fg_vq_add(&R.q[1].vq, &b, 1, false), 0);
	kick(1);
	for (uint64_t deadline = test_now_ms() + WAIT_MS;
	     !(fv_status(&R.v) & VIRTIO_CONFIG_S_NEEDS_RESET);)
		ck_assert_msg(test_now_ms() < deadline, "no NEEDS_RESET");
	/* The other ports still work. */
	tx_send(5, "ok", 2, true);
	{
		char got[2];

		read_exact(R.err_r, got, 2);
	}
}
END_TEST

START_TEST(test_create_errors)
{
	struct vcon_port_params pp[2] = { { "a", -1, -1 }, { "a", -1, -1 } };
	struct vcon_params cp = { .ports = pp, .nr_ports = 2 };
	struct vcon *c;

	ck_assert_int_eq(vcon_create(&cp, &c), -EINVAL); /* duplicate name */
	pp[1].name = "";
	ck_assert_int_eq(vcon_create(&cp, &c), -EINVAL);
	cp.nr_ports = 0;
	ck_assert_int_eq(vcon_create(&cp, &c), -EINVAL);
	cp.nr_ports = 1;
	ck_assert_int_eq(vcon_create(&cp, &c), 0);
	vcon_destroy(c);
}
END_TEST

/* Context: a helper thread: the stop the VM's end performs. */
static void *quiesce_thread(void *arg)
{
	vpci_quiesce(R.v.t);
	__atomic_store_n((bool *)arg, true, __ATOMIC_RELEASE);
	return NULL;
}

/* Stop the device on a helper thread; fail unless it returns within
 * @limit_ms.  Returns how long it took. */
static uint64_t stop_within(uint64_t limit_ms)
{
	uint64_t t0 = test_now_ms();
	bool done = false;
	pthread_t th;

	ck_assert_int_eq(pthread_create(&th, NULL, quiesce_thread, &done), 0);
	while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
		ck_assert_msg(test_now_ms() - t0 < limit_ms,
			      "the device stop still waits for the reader after %llu ms",
			      (unsigned long long)(test_now_ms() - t0));
		usleep(5000);
	}
	pthread_join(th, NULL);
	return test_now_ms() - t0;
}

/* minivmm-oci's case: the guest queues (without a kick) more than a socket
 * buffer on a port whose only reader is the thread that stops the VM.  The
 * stop used to write it all out with blocking writes: forever. */
START_TEST(test_stop_bounded_socket_nobody_reads)
{
	enum { CHUNK = 64 << 10, CHUNKS = 32 }; /* 2 MiB */
	static uint8_t chunk[CHUNK];
	struct vcon_port_stats st;
	uint64_t ms;
	int avail = 0;

	memset(chunk, 'x', sizeof(chunk));
	for (int i = 0; i < CHUNKS; i++)
		tx_send(1, chunk, CHUNK, false);
	ms = stop_within(5000);
	ck_assert_int_eq(vcon_port_stats(R.dev, 0, &st), 0);
	ck_assert_int_eq(ioctl(R.out_r, FIONREAD, &avail), 0);
	/* What the socket took, the rest dropped and counted. */
	ck_assert_uint_eq(st.bytes_out, (uint64_t)avail);
	ck_assert_uint_eq(st.bytes_out + st.dropped, (uint64_t)CHUNK * CHUNKS);
	ck_assert_uint_gt(st.dropped, 0);
	ck_assert_uint_ge(ms, VCON_STOP_FLUSH_MS / 2);
}
END_TEST

/* A port thread waiting, while the VM runs, for a pipe whose reader
 * stalled (conmon's stdout): the stop reaches it, and the embedder's file
 * description stays blocking (the device writes through its own reopen). */
START_TEST(test_stop_bounded_pipe_stalled)
{
	enum { LEN = 1 << 20 };
	uint8_t *data = malloc(LEN);
	struct vcon_port_stats st;
	uint64_t deadline = test_now_ms() + WAIT_MS;
	int avail = 0;

	ck_assert_ptr_nonnull(data);
	memset(data, 'y', LEN);
	tx_send(1, data, LEN, true);
	/* The thread filled the pipe (64 KiB) and waits for room. */
	do {
		ck_assert_int_eq(ioctl(R.out_r, FIONREAD, &avail), 0);
		ck_assert_msg(test_now_ms() < deadline, "the port thread wrote %d bytes", avail);
		usleep(1000);
	} while (avail < 65536);
	stop_within(5000);
	ck_assert_int_eq(vcon_port_stats(R.dev, 0, &st), 0);
	ck_assert_uint_eq(st.bytes_out + st.dropped, LEN);
	ck_assert_uint_gt(st.dropped, 0);
	ck_assert_int_eq(fcntl(R.out_w_dup, F_GETFL) & O_NONBLOCK, 0);
	free(data);
}
END_TEST

static void setup_sock(void)
{
	R.out_sock = true;
	setup();
}

static void teardown_sock(void)
{
	teardown();
	R.out_sock = false;
}

static Suite *vcon_suite(void)
{
	Suite *s = suite_create("vcon");
	TCase *tc = tcase_create("ports");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_input_binary_split);
	tcase_add_test(tc, test_output_binary);
	tcase_add_test(tc, test_eof_after_data);
	tcase_add_test(tc, test_input_waits_for_open);
	tcase_add_test(tc, test_stop_writes_out_queued_output);
	tcase_add_test(tc, test_malformed_chain);
	tcase_add_test(tc, test_create_errors);
	suite_add_tcase(s, tc);
	/* Its own rounds of set-up and teardown, no fixture. */
	tc = tcase_create("stop_race");
	tcase_set_timeout(tc, 120); /* 100 rounds: ~3 s here, ASan under load more */
	tcase_add_test(tc, test_stop_right_after_start);
	suite_add_tcase(s, tc);
	tc = tcase_create("stop_bounded");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_stop_bounded_pipe_stalled);
	suite_add_tcase(s, tc);
	tc = tcase_create("stop_bounded_socket");
	tcase_add_checked_fixture(tc, setup_sock, teardown_sock);
	tcase_add_test(tc, test_stop_bounded_socket_nobody_reads);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(vcon_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
