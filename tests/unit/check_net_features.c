/* SPDX-License-Identifier: MIT */
/*
 * virtio-net features and configuration (vnet.h): what is offered, which
 * driver combinations are refused, the tap offloads that follow, the
 * configuration space, the queue layout, and derived MAC addresses
 * (stable, locally administered).
 */
#include <check.h>
#include <errno.h>
#include <linux/if_tun.h>
#include <linux/virtio_config.h>
#include <linux/virtio_net.h>
#include <stdlib.h>
#include <string.h>

#include "net/vnet.h"

#define BIT(n) (1ull << (n))

static struct vnet n;

static void setup(void)
{
	struct vnet_params p = { .mac = { 0x52, 0x54, 0, 1, 2, 3 }, .max_pairs = 4,
				 .mtu = 9000 };

	ck_assert_int_eq(vnet_init(&n, &p), 0);
}

START_TEST(offer)
{
	uint64_t f = vnet_device_features(&n);
	struct vnet one;
	struct vnet_params p = { .max_pairs = 1, .no_offloads = true };

	ck_assert(f & BIT(VIRTIO_NET_F_MQ));
	ck_assert(f & BIT(VIRTIO_NET_F_MRG_RXBUF));
	ck_assert(f & BIT(VIRTIO_NET_F_GUEST_TSO6));
	ck_assert(!(f & BIT(VIRTIO_NET_F_GUEST_UFO)));
	ck_assert(!(f & BIT(VIRTIO_NET_F_HOST_UFO)));
	ck_assert_int_eq(vnet_init(&one, &p), 0);
	f = vnet_device_features(&one);
	ck_assert(!(f & BIT(VIRTIO_NET_F_MQ)));
	ck_assert(!(f & BIT(VIRTIO_NET_F_CSUM)));
	ck_assert_uint_eq(vnet_num_queues(&n), 9);
	p.max_pairs = 0;
	ck_assert_int_eq(vnet_init(&one, &p), -EINVAL);
	p.max_pairs = VNET_MAX_PAIRS + 1;
	ck_assert_int_eq(vnet_init(&one, &p), -EINVAL);
}
END_TEST

START_TEST(dependencies)
{
	uint64_t v1 = BIT(VIRTIO_F_VERSION_1);

	ck_assert_int_eq(vnet_set_features(&n, 0), -EINVAL);
	ck_assert_int_eq(vnet_set_features(&n, v1 | BIT(VIRTIO_NET_F_GUEST_UFO)), -EINVAL);
	ck_assert_int_eq(vnet_set_features(&n, v1 | BIT(VIRTIO_NET_F_GUEST_TSO4)), -EINVAL);
	ck_assert_int_eq(vnet_set_features(&n, v1 | BIT(VIRTIO_NET_F_HOST_TSO4)), -EINVAL);
	ck_assert_int_eq(vnet_set_features(&n, v1 | BIT(VIRTIO_NET_F_GUEST_CSUM) |
						       BIT(VIRTIO_NET_F_GUEST_ECN)), -EINVAL);
	ck_assert_int_eq(vnet_set_features(&n, v1 | BIT(VIRTIO_NET_F_MQ)), -EINVAL);
	ck_assert_int_eq(vnet_set_features(&n, vnet_device_features(&n)), 0);
}
END_TEST

START_TEST(tun_offloads)
{
	uint64_t f = BIT(VIRTIO_NET_F_GUEST_CSUM) | BIT(VIRTIO_NET_F_GUEST_TSO4) |
		     BIT(VIRTIO_NET_F_GUEST_ECN);

	ck_assert_uint_eq(vnet_tun_offloads(0), 0);
	ck_assert_uint_eq(vnet_tun_offloads(BIT(VIRTIO_NET_F_GUEST_TSO4)), 0);
	ck_assert_uint_eq(vnet_tun_offloads(f), TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO_ECN);
	ck_assert_uint_eq(vnet_tun_offloads(vnet_device_features(&n)),
			  TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN);
}
END_TEST

START_TEST(config_and_queues)
{
	struct virtio_net_config c;

	memset(&c, 0xff, sizeof(c));
	vnet_config_read(&n, 0, &c, sizeof(c));
	ck_assert_uint_eq(c.mac[5], 3);
	ck_assert_uint_eq(c.status, VIRTIO_NET_S_LINK_UP);
	ck_assert_uint_eq(c.max_virtqueue_pairs, 4);
	ck_assert_uint_eq(c.mtu, 9000);
	ck_assert_uint_eq(c.speed, 0);
	ck_assert_int_eq(vnet_set_features(&n, vnet_device_features(&n)), 0);
	ck_assert(vnet_is_ctrl(&n, 8));
	ck_assert(!vnet_is_ctrl(&n, 2));
	ck_assert_uint_eq(vnet_rx_max_frame(&n), VNET_HDR_LEN + VNET_MAX_GSO_FRAME);
	/* Without MQ the control queue is 2. */
	ck_assert_int_eq(vnet_set_features(&n, BIT(VIRTIO_F_VERSION_1) |
						       BIT(VIRTIO_NET_F_CTRL_VQ)), 0);
	ck_assert(vnet_is_ctrl(&n, 2));
	ck_assert_uint_eq(vnet_rx_max_frame(&n), VNET_HDR_LEN + 9000 + 18);
}
END_TEST

START_TEST(mac)
{
	uint8_t a[6], b[6];

	vnet_mac_derive(42, 0, a);
	vnet_mac_derive(42, 0, b);
	ck_assert_mem_eq(a, b, 6);
	ck_assert_uint_eq(a[0] & 3, 2); /* locally administered, unicast */
	vnet_mac_derive(42, 1, b);
	ck_assert_mem_ne(a, b, 6);
	vnet_mac_derive(43, 0, b);
	ck_assert_mem_ne(a, b, 6);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("net_features");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, offer);
	tcase_add_test(tc, dependencies);
	tcase_add_test(tc, tun_offloads);
	tcase_add_test(tc, config_and_queues);
	tcase_add_test(tc, mac);
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
