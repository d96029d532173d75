/* SPDX-License-Identifier: MIT */
/*
 * virtio-vsock with vhost=on, without /dev/vhost-vsock: what the driver is
 * offered for what the host's vhost-vsock implements, and the set-up's
 * error paths (no device: -ENOENT named "open"; not a vhost file: the
 * first request fails; no RAM: -EINVAL), nothing left open.  The shared
 * vhost file code (vhost/vhost-kern.h) the same way.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "memory.h"
#include "vhost/vhost-kern.h"
#include "vsock/vhost-vsock.h"

#define BIT(n) (1ull << (n))

START_TEST(offer_follows_vhost)
{
	/* A host's vhost-vsock: ring features, LOG_ALL, no SEQPACKET. */
	uint64_t vh = BIT(32) | BIT(29) | BIT(28) | BIT(26) | BIT(27);

	ck_assert_uint_eq(vhost_vsock_offer(vh), BIT(32) | BIT(29) | BIT(28));
	ck_assert_uint_eq(vhost_vsock_offer(vh | BIT(1)),
			  BIT(32) | BIT(29) | BIT(28) | BIT(1));
	/* Never what the device does not implement (LOG_ALL, ANY_LAYOUT). */
	ck_assert(!(vhost_vsock_offer(~0ull) & (BIT(26) | BIT(27))));
	ck_assert_uint_eq(vhost_vsock_offer(0), 0);
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

START_TEST(create_errors)
{
	struct guest_mem none = { 0 };
	struct vhost_vsock *d = NULL;
	const char *what = NULL;
	int before = nr_open_fds();

	guest_mem_init_buf(&mem, ram, sizeof(ram));
	ck_assert_int_eq(vhost_vsock_create("/nonexistent/vhost-vsock", &mem, 3,
					    &d, &what), -ENOENT);
	ck_assert_str_eq(what, "open");
	ck_assert_int_eq(vhost_vsock_create("/dev/null", &none, 3, &d, &what),
			 -EINVAL);
	ck_assert_int_eq(vhost_vsock_create("/dev/null", &mem, 3, &d, &what),
			 -ENOTTY);
	ck_assert_str_eq(what, "VHOST_SET_OWNER");
	ck_assert_ptr_null(d);
	ck_assert_int_eq(nr_open_fds(), before);
	vhost_vsock_destroy(NULL);
}
END_TEST

START_TEST(kern_errors)
{
	struct virtio_queue q = { .kick_fd = -1, .call_fd = -1 };
	const char *what = NULL;
	uint64_t f = 0;
	int fd = -1, before = nr_open_fds();

	guest_mem_init_buf(&mem, ram, sizeof(ram));
	ck_assert_int_eq(vhost_kern_open("/nonexistent", &mem, &fd, &f, &what),
			 -ENOENT);
	ck_assert_int_eq(vhost_kern_open("/dev/null", &mem, &fd, &f, &what),
			 -ENOTTY);
	ck_assert_int_eq(fd, -1);
	ck_assert_int_eq(nr_open_fds(), before);
	/* The ring requests on a file that is no vhost device: the first
	 * fails and is named. */
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(vhost_kern_set_features(fd, BIT(32), &what), -ENOTTY);
	ck_assert_str_eq(what, "VHOST_SET_FEATURES");
	ck_assert_int_eq(vhost_kern_ring(fd, 0, &q, &what), -ENOTTY);
	ck_assert_str_eq(what, "VHOST_SET_VRING_NUM");
	ck_assert_int_eq(vhost_kern_ring_base(fd, 0, &q), -ENOTTY);
	close(fd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vsock_vhost");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, offer_follows_vhost);
	tcase_add_test(tc, create_errors);
	tcase_add_test(tc, kern_errors);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
