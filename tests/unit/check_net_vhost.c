/* SPDX-License-Identifier: MIT */
/*
 * virtio-net with vhost=on, without /dev/vhost-net: which features the
 * driver is offered for what the host's vhost-net implements, what
 * VHOST_SET_FEATURES would get, a driver that takes more than offered,
 * the queues declared external to the transport, and the error paths
 * (no device, not a vhost file, a start that fails: an error for the
 * transport, nothing left open or started), and the link held down and
 * let up on a vhost=on NIC (the status bit and its configuration
 * interrupt, on the calling thread: no I/O thread is asked).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <linux/virtio_config.h>
#include <linux/virtio_net.h>
#include <linux/virtio_ring.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iothread.h"
#include "memory.h"
#include "net/vhost-net.h"
#include "net/virtio-net.h"

#define BIT(n) (1ull << (n))
#define RING (BIT(VIRTIO_F_VERSION_1) | BIT(VIRTIO_RING_F_EVENT_IDX) |       \
	      BIT(VIRTIO_RING_F_INDIRECT_DESC) | BIT(VIRTIO_NET_F_MRG_RXBUF))
#define DEVICE (BIT(VIRTIO_NET_F_CSUM) | BIT(VIRTIO_NET_F_GUEST_CSUM) |      \
		BIT(VIRTIO_NET_F_MQ) | BIT(VIRTIO_NET_F_CTRL_VQ) |           \
		BIT(VIRTIO_NET_F_STATUS) | BIT(VIRTIO_NET_F_MTU))

START_TEST(offer_follows_vhost)
{
	uint64_t model = RING | DEVICE;
	/* A host's vhost-net: the ring features, no EVENT_IDX. */
	uint64_t vh = BIT(VIRTIO_F_VERSION_1) | BIT(VIRTIO_RING_F_INDIRECT_DESC) |
		      BIT(VIRTIO_NET_F_MRG_RXBUF) | BIT(VIRTIO_F_ANY_LAYOUT);

	ck_assert_uint_eq(vhost_net_offer(model, RING), model);
	ck_assert_uint_eq(vhost_net_offer(model, vh),
			  model & ~BIT(VIRTIO_RING_F_EVENT_IDX));
	/* The device's own features never depend on vhost-net. */
	ck_assert_uint_eq(vhost_net_offer(model, 0), DEVICE);
	/* vhost-net's extras are not offered unless the model has them. */
	ck_assert(!(vhost_net_offer(model, vh) & BIT(VIRTIO_F_ANY_LAYOUT)));
	ck_assert_uint_eq(vhost_net_acked(model), RING);
	ck_assert_uint_eq(vhost_net_acked(DEVICE), 0);
}
END_TEST

static struct guest_mem mem;
static uint8_t ram[1 << 16];

static int nr_open_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

START_TEST(open_errors)
{
	const char *what = NULL;
	struct guest_mem none = { 0 };
	uint64_t f = 0;
	int fd = -1, before = nr_open_fds();

	guest_mem_init_buf(&mem, ram, sizeof(ram));
	ck_assert_int_eq(vhost_net_open("/nonexistent/vhost-net", &mem, &fd, &f,
					&what), -ENOENT);
	ck_assert_str_eq(what, "open");
	ck_assert_int_eq(vhost_net_open("/dev/null", &none, &fd, &f, &what), -EINVAL);
	/* Not a vhost device: the first request fails, the file is closed. */
	ck_assert_int_eq(vhost_net_open("/dev/null", &mem, &fd, &f, &what), -ENOTTY);
	ck_assert_str_eq(what, "VHOST_SET_OWNER");
	ck_assert_int_eq(fd, -1);
	ck_assert_int_eq(nr_open_fds(), before);
}
END_TEST

static struct iothread *io;
static unsigned int link_changes;
static pthread_t link_thread;

/* The device's link_changed: counted, and which thread made the change. */
static void count_link_change(void *opaque)
{
	(void)opaque;
	link_thread = pthread_self();
	__atomic_fetch_add(&link_changes, 1, __ATOMIC_SEQ_CST);
}

static struct virtio_net *make(bool vhost, uint64_t vhost_features)
{
	int taps[2], vfds[2];
	struct virtio_net *d = NULL;
	struct virtio_net_params p = {
		.net = { .max_pairs = 2, .mac = { 0x52, 0x54, 0, 0, 0, 1 } },
		.fds = taps,
		.iothreads = &io,
		.nr_iothreads = 1,
		.vhost_fds = vhost ? vfds : NULL,
		.vhost_features = vhost_features,
		.link_changed = count_link_change,
	};

	/* Neither a tap nor a vhost file: every request to them fails. */
	for (int i = 0; i < 2; i++) {
		taps[i] = open("/dev/null", O_RDWR | O_CLOEXEC);
		vfds[i] = open("/dev/null", O_RDWR | O_CLOEXEC);
		ck_assert_int_ge(taps[i], 0);
		ck_assert_int_ge(vfds[i], 0);
	}
	ck_assert_int_eq(virtio_net_create(&p, &d), 0);
	if (!vhost)
		for (int i = 0; i < 2; i++)
			close(vfds[i]);
	return d;
}

/* One create, refused start, stop and destroy with vhost=on. */
static void vhost_cycle(void)
{
	uint64_t vh = BIT(VIRTIO_F_VERSION_1) | BIT(VIRTIO_NET_F_MRG_RXBUF);
	struct virtio_net *d = make(true, vh);
	struct virtio_queue qs[5];
	struct virtio_device vd;
	uint64_t f;

	virtio_net_virtio(d, &vd);
	ck_assert(vd.external_queues);
	ck_assert_uint_eq(vd.num_queues, 5);
	f = vd.ops->features(vd.dev);
	ck_assert(!(f & BIT(VIRTIO_RING_F_EVENT_IDX)));
	ck_assert(!(f & BIT(VIRTIO_RING_F_INDIRECT_DESC)));
	ck_assert(f & BIT(VIRTIO_NET_F_MRG_RXBUF));
	ck_assert(f & BIT(VIRTIO_NET_F_MQ));
	ck_assert(f & BIT(VIRTIO_NET_F_GUEST_CSUM));
	/* A driver taking what vhost-net cannot do is refused. */
	ck_assert_int_eq(vd.ops->set_features(vd.dev, f | BIT(VIRTIO_RING_F_EVENT_IDX)),
			 -EINVAL);
	ck_assert_int_eq(vd.ops->set_features(vd.dev, f), 0);
	/* DRIVER_OK with a back end that refuses: an error (the transport
	 * sets NEEDS_RESET), no pair or queue left started. */
	memset(qs, 0, sizeof(qs));
	for (unsigned int i = 0; i < 5; i++) {
		qs[i].index = i;
		qs[i].enabled = true;
		qs[i].kick_fd = qs[i].call_fd = -1;
	}
	ck_assert_int_lt(vd.ops->start(vd.dev, qs, 5), 0);
	vd.ops->stop(vd.dev);
	virtio_net_destroy(d);
}

START_TEST(device_with_vhost)
{
	struct virtio_device vd;
	struct virtio_net *d;
	int before;

	ck_assert_int_eq(iothread_create(0, 64, &io), 0);
	vhost_cycle(); /* the first log line opens the log's own files */
	before = nr_open_fds();
	vhost_cycle();
	ck_assert_int_eq(nr_open_fds(), before);

	d = make(false, 0);
	virtio_net_virtio(d, &vd);
	ck_assert(!vd.external_queues);
	ck_assert(vd.ops->features(vd.dev) & BIT(VIRTIO_RING_F_EVENT_IDX));
	virtio_net_destroy(d);
	iothread_destroy(io);
}
END_TEST

static uint16_t net_status(const struct virtio_device *vd)
{
	uint16_t st = 0;

	vd->ops->config_read(vd->dev, offsetof(struct virtio_net_config, status),
			     &st, sizeof(st));
	return st;
}

/* vhost=on, set-link: the state, the status bit and one configuration
 * interrupt per change, made on this thread, where the userspace data
 * path makes it on the running I/O thread.  No pair is on vhost (no
 * start), so no vhost request is made. */
START_TEST(link_with_vhost)
{
	struct virtio_device vd;
	struct virtio_net *d;

	ck_assert_int_eq(iothread_create(0, 64, &io), 0);
	ck_assert_int_eq(iothread_start(io), 0);
	d = make(false, 0);
	ck_assert_int_eq(virtio_net_set_link(d, false), 0);
	ck_assert_uint_eq(link_changes, 1);
	ck_assert(!pthread_equal(link_thread, pthread_self()));
	virtio_net_destroy(d);
	link_changes = 0;

	d = make(true, BIT(VIRTIO_F_VERSION_1));
	virtio_net_virtio(d, &vd);
	ck_assert(vd.ops->features(vd.dev) & BIT(VIRTIO_NET_F_STATUS));
	ck_assert(net_status(&vd) & VIRTIO_NET_S_LINK_UP);
	ck_assert_int_eq(virtio_net_set_link(d, false), 0);
	ck_assert(pthread_equal(link_thread, pthread_self()));
	ck_assert(!virtio_net_link_up(d));
	ck_assert(!(net_status(&vd) & VIRTIO_NET_S_LINK_UP));
	ck_assert_uint_eq(link_changes, 1);
	ck_assert_int_eq(virtio_net_set_link(d, false), 0); /* nothing */
	ck_assert_uint_eq(link_changes, 1);
	ck_assert_int_eq(virtio_net_set_link(d, true), 0);
	ck_assert(virtio_net_link_up(d));
	ck_assert(net_status(&vd) & VIRTIO_NET_S_LINK_UP);
	ck_assert_uint_eq(link_changes, 2);
	virtio_net_destroy(d);
	iothread_stop(io);
	iothread_destroy(io);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("net_vhost");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, offer_follows_vhost);
	tcase_add_test(tc, open_errors);
	tcase_add_test(tc, device_with_vhost);
	tcase_add_test(tc, link_with_vhost);
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
