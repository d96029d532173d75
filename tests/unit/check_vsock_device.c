/* SPDX-License-Identifier: MIT */
/*
 * The virtio-vsock device without KVM: the real device on a real I/O
 * thread through the queue service and the virtio-pci transport over the
 * fake KVM (tests/harness/fake_vpci.h); the test is the driver.  Checks
 * the device id and guest_cid, a host client's handshake and data through
 * the rings (the host sockets watched on the I/O thread), a guest
 * connection to PATH_P, a device reset closing every host socket (a new
 * client waits until the next DRIVER_OK), and a malformed tx ring
 * setting NEEDS_RESET.
 */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <linux/virtio_config.h>
#include <linux/virtio_pci.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fake_guest.h"
#include "fake_vpci.h"
#include "iothread.h"
#include "pci/msix.h"
#include "vsock/virtio-vsock.h"
#include "vsock/vsock-host.h"
#include "vsock/vsock-proto.h"
#include "test_clock.h"

#define RAM_SIZE (16ull << 20)
#define QSIZE 64
#define CID 42u
#define WAIT_MS 10000

static struct {
	struct fake_guest g;
	struct fv v;
	struct iothread *io;
	struct virtio_vsock *dev;
	struct fg_vq q[3];
	int kick_fd[3];
	uint64_t gpa[QSIZE];
	char dir[64], path[96];
} R;

static void kick(unsigned int q)
{
	uint64_t one = 1;

	fg_vq_publish(&R.q[q]);
	ck_assert_int_eq(write(R.kick_fd[q], &one, 8), 8);
}

static void rx_fill(unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		struct fg_buf b = { .gpa = fg_alloc(&R.g, 4096, 8), .len = 4096,
				    .writable = true };
		int head = fg_vq_add(&R.q[VSOCK_QUEUE_RX], &b, 1, false);

		ck_assert_int_ge(head, 0);
		R.gpa[head] = b.gpa;
	}
	kick(VSOCK_QUEUE_RX);
}

/* The next packet on rx: header (host order) and payload. */
static void rx_wait(struct vsock_hdr *h, void *data, size_t cap)
{
	uint64_t deadline = test_now_ms() + WAIT_MS;
	uint32_t id, len;

	while (!fg_vq_get_used(&R.q[VSOCK_QUEUE_RX], &id, &len)) {
		ck_assert_msg(test_now_ms() < deadline, "no packet on rx");
		usleep(1000);
	}
	ck_assert_uint_ge(len, sizeof(*h));
	memcpy(h, fg_ptr(&R.g, R.gpa[id], len), sizeof(*h));
	vsock_hdr_from_le(h);
	ck_assert_uint_eq(h->len, len - sizeof(*h));
	if (data)
		memcpy(data, fg_ptr(&R.g, R.gpa[id] + sizeof(*h), h->len),
		       MIN((size_t)h->len, cap));
	rx_fill(1);
}

static void tx_send(uint16_t op, uint32_t sport, uint32_t dport,
		    const void *data, uint32_t len)
{
	struct vsock_hdr h = {
		.src_cid = htole64(CID), .dst_cid = htole64(VSOCK_HOST_CID),
		.src_port = htole32(sport), .dst_port = htole32(dport),
		.len = htole32(len), .type = htole16(VSOCK_TYPE_STREAM),
		.op = htole16(op), .buf_alloc = htole32(65536),
	};
	struct fg_buf b = { .gpa = fg_alloc(&R.g, sizeof(h) + len, 8),
			    .len = (uint32_t)sizeof(h) + len };

	memcpy(fg_ptr(&R.g, b.gpa, sizeof(h)), &h, sizeof(h));
	if (len)
		memcpy(fg_ptr(&R.g, b.gpa + sizeof(h), len), data, len);
	ck_assert_int_ge(fg_vq_add(&R.q[VSOCK_QUEUE_TX], &b, 1, false), 0);
	kick(VSOCK_QUEUE_TX);
}

static ssize_t host_read(int fd, void *buf, size_t len)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	ck_assert_int_eq(poll(&p, 1, WAIT_MS), 1);
	return read(fd, buf, len);
}

static int host_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Probe, features, MSI-X, the three queues, DRIVER_OK. */
static void driver_ok(void)
{
	uint64_t offered;

	ck_assert_int_eq(fv_negotiate(&R.v, 1ull << VIRTIO_F_VERSION_1, &offered), 0);
	ck_assert(offered & (1ull << VIRTIO_F_VERSION_1));
	ck_assert_uint_eq(fv_mr(&R.v, R.v.devcfg, 8), CID);
	fv_msix_ctrl(&R.v, MSIX_CTRL_ENABLE);
	for (unsigned int v = 0; v < R.v.nr_vectors; v++) {
		fv_msix_write(&R.v, v, 0xfee00000ull, 0x4000u + v);
		fv_msix_mask(&R.v, v, false);
	}
	for (unsigned int q = 0; q < 3; q++) {
		fg_vq_destroy(&R.q[q]);
		ck_assert_int_eq(fg_vq_init(&R.g, &R.q[q], QSIZE, 0), 0);
		fv_queue_setup(&R.v, q, QSIZE, R.q[q].desc_gpa, R.q[q].avail_gpa,
			       R.q[q].used_gpa, (uint16_t)(q + 1));
	}
	fv_status_add(&R.v, VIRTIO_CONFIG_S_DRIVER_OK);
	ck_assert(!(fv_status(&R.v) & VIRTIO_CONFIG_S_NEEDS_RESET));
	for (unsigned int q = 0; q < 3; q++) {
		R.kick_fd[q] = fv_kvm_kick_fd(R.v.kvm, fv_notify_addr(&R.v, q));
		ck_assert_int_ge(R.kick_fd[q], 0);
	}
	rx_fill(16);
}

static void setup(void)
{
	struct virtio_vsock_params p = { .vsock.guest_cid = CID, .nr_iothreads = 1 };
	struct vpci_params vp;
	struct virtio_device vd;

	memset(&R, 0, sizeof(R));
	snprintf(R.dir, sizeof(R.dir), "/tmp/vsock-dev-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(R.dir));
	snprintf(R.path, sizeof(R.path), "%s/v.sock", R.dir);
	ck_assert_int_eq(iothread_create(0, 64, &R.io), 0);
	ck_assert_int_eq(iothread_start(R.io), 0);
	ck_assert_int_eq(vsock_host_listen(R.path, &p.vsock.listen_fd), 0);
	p.vsock.path = R.path;
	p.iothreads = &R.io;
	ck_assert_int_eq(virtio_vsock_create(&p, &R.dev), 0);
	ck_assert_int_eq(fg_init(&R.g, RAM_SIZE), 0);
	ck_assert_int_eq(fv_init(&R.v, -1, FV_MMIO_BASE, FV_MMIO_SIZE, &R.g.mem), 0);
	vp = fv_params(&R.v);
	vp.ioeventfd_any_length = true;
	virtio_vsock_virtio(R.dev, &vd);
	vpci_params_set_device(&vp, &vd);
	ck_assert_int_eq(fv_create(&R.v, &vp), 0);
	ck_assert_uint_eq(fv_cfg_rd(&R.v, PCI_CFG_DEVICE_ID, 2),
			  VPCI_DEVICE_ID_BASE + VSOCK_DEVICE_ID);
	driver_ok();
}

static void teardown(void)
{
	char p[128];

	vpci_destroy(R.v.t);
	R.v.t = NULL;
	virtio_vsock_destroy(R.dev);
	iothread_stop(R.io);
	iothread_destroy(R.io);
	fv_destroy(&R.v);
	for (unsigned int q = 0; q < 3; q++)
		fg_vq_destroy(&R.q[q]);
	fg_destroy(&R.g);
	unlink(R.path);
	snprintf(p, sizeof(p), "%s_600", R.path);
	unlink(p);
	rmdir(R.dir);
}

START_TEST(test_host_client)
{
	struct virtio_vsock_stats st;
	struct vsock_hdr h;
	char buf[64];
	int fd = host_connect(R.path);

	ck_assert_int_eq(write(fd, "CONNECT 5000\nhi", 15), 15);
	rx_wait(&h, NULL, 0);
	ck_assert_uint_eq(h.op, VSOCK_OP_REQUEST);
	ck_assert_uint_eq(h.dst_cid, CID);
	ck_assert_uint_eq(h.dst_port, 5000);
	tx_send(VSOCK_OP_RESPONSE, 5000, h.src_port, NULL, 0);
	ck_assert_int_gt(host_read(fd, buf, 3), 0);
	while (buf[0] && host_read(fd, buf, 1) == 1 && buf[0] != '\n')
		;
	rx_wait(&h, buf, sizeof(buf));
	ck_assert_uint_eq(h.op, VSOCK_OP_RW);
	ck_assert_uint_eq(h.len, 2);
	ck_assert(!memcmp(buf, "hi", 2));
	tx_send(VSOCK_OP_RW, 5000, h.src_port, "there", 5);
	ck_assert_int_eq(host_read(fd, buf, sizeof(buf)), 5);
	ck_assert(!memcmp(buf, "there", 5));
	virtio_vsock_get_stats(R.dev, &st);
	ck_assert_uint_eq(st.vsock.conns_open, 1);
	ck_assert_uint_eq(st.vsock.bytes_to_guest, 2);
	ck_assert_uint_eq(st.vsock.bytes_from_guest, 5);
	ck_assert_uint_gt(st.kicks, 0);
	/* A device reset ends the connection; a client then waits in the
	 * listen backlog until the next DRIVER_OK. */
	FV_COMMON_WR(&R.v, STATUS, 0, 1);
	ck_assert_int_eq(host_read(fd, buf, sizeof(buf)), 0);
	close(fd);
	virtio_vsock_get_stats(R.dev, &st);
	ck_assert_uint_eq(st.vsock.conns_open, 0);
	fd = host_connect(R.path);
	ck_assert_int_eq(write(fd, "CONNECT 7\n", 10), 10);
	driver_ok();
	rx_wait(&h, NULL, 0);
	ck_assert_uint_eq(h.op, VSOCK_OP_REQUEST);
	ck_assert_uint_eq(h.dst_port, 7);
	close(fd);
}
END_TEST

START_TEST(test_guest_connect)
{
	char p[128], buf[8];
	struct vsock_hdr h;
	int lfd, hs;

	snprintf(p, sizeof(p), "%s_600", R.path);
	ck_assert_int_eq(vsock_host_listen(p, &lfd), 0);
	tx_send(VSOCK_OP_REQUEST, 1234, 600, NULL, 0);
	rx_wait(&h, NULL, 0);
	ck_assert_uint_eq(h.op, VSOCK_OP_RESPONSE);
	ck_assert_uint_eq(h.src_port, 600);
	ck_assert_uint_eq(h.dst_port, 1234);
	hs = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	ck_assert_int_ge(hs, 0);
	tx_send(VSOCK_OP_RW, 1234, 600, "abc", 3);
	ck_assert_int_eq(host_read(hs, buf, sizeof(buf)), 3);
	close(hs);
	close(lfd);
}
END_TEST

START_TEST(test_malformed_tx_ring)
{
	uint64_t deadline = test_now_ms() + WAIT_MS;

	fg_vq_set_avail_idx(&R.q[VSOCK_QUEUE_TX], (uint16_t)(QSIZE + 9));
	ck_assert_int_eq(write(R.kick_fd[VSOCK_QUEUE_TX], &(uint64_t){ 1 }, 8), 8);
	while (!(fv_status(&R.v) & VIRTIO_CONFIG_S_NEEDS_RESET)) {
		ck_assert_msg(test_now_ms() < deadline, "no NEEDS_RESET");
		usleep(1000);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vsock_device");
	TCase *tc = tcase_create("device");
	SRunner *sr;
	int nf;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_host_client);
	tcase_add_test(tc, test_guest_connect);
	tcase_add_test(tc, test_malformed_tx_ring);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
