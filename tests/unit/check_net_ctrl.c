/* SPDX-License-Identifier: MIT */
/*
 * virtio-net control queue (vnet_ctrl()): VQ_PAIRS_SET within and out of
 * range, receive-mode and MAC-table commands accepted when well formed,
 * garbage answered VIRTIO_NET_ERR, a chain with no status byte -EPROTO.
 */
#include <check.h>
#include <errno.h>
#include <linux/virtio_config.h>
#include <linux/virtio_net.h>
#include <stdlib.h>
#include <string.h>

#include "fake_guest.h"
#include "net/vnet.h"

#define RAM_SIZE (4u << 20)
#define BIT(n) (1ull << (n))

static struct fake_guest g;
static struct fg_vq fvq;
static struct virtq vq;
static struct virtq_chain *chain;
static struct vnet n;

static void setup(void)
{
	struct vnet_params p = { .mac = { 0x52, 0x54, 0, 1, 2, 3 }, .max_pairs = 4 };

	ck_assert_int_eq(fg_init(&g, RAM_SIZE), 0);
	ck_assert_int_eq(fg_vq_init(&g, &fvq, 16, 0), 0);
	ck_assert_int_eq(fg_vq_attach(&fvq, &vq), 0);
	chain = malloc(sizeof(*chain));
	ck_assert_int_eq(vnet_init(&n, &p), 0);
	ck_assert_int_eq(vnet_set_features(&n, vnet_device_features(&n)), 0);
}

static void teardown(void)
{
	free(chain);
	fg_vq_destroy(&fvq);
	fg_destroy(&g);
}

/* Send one command (@len bytes at @cmd) and return its status byte. */
static int command(const void *cmd, uint32_t len, bool *changed)
{
	struct fg_buf b[2] = {
		{ fg_alloc(&g, len, 8), len, false },
		{ fg_alloc(&g, 1, 1), 1, true },
	};
	uint32_t id, used;

	memcpy(fg_ptr(&g, b[0].gpa, len), cmd, len);
	*(uint8_t *)fg_ptr(&g, b[1].gpa, 1) = 0xaa;
	ck_assert_int_ge(fg_vq_add(&fvq, b, 2, false), 0);
	fg_vq_publish(&fvq);
	ck_assert_int_eq(vnet_ctrl(&n, &vq, chain, changed), 1);
	ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &used), 1);
	ck_assert_uint_eq(used, 1);
	return *(uint8_t *)fg_ptr(&g, b[1].gpa, 1);
}

START_TEST(pairs_set)
{
	uint8_t c[4] = { VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, 4, 0 };
	bool changed = false;

	ck_assert_uint_eq(n.curr_pairs, 1);
	ck_assert_int_eq(command(c, 4, &changed), VIRTIO_NET_OK);
	ck_assert(changed);
	ck_assert_uint_eq(n.curr_pairs, 4);
	c[2] = 5; /* above max_pairs */
	changed = false;
	ck_assert_int_eq(command(c, 4, &changed), VIRTIO_NET_ERR);
	c[2] = 0;
	ck_assert_int_eq(command(c, 4, &changed), VIRTIO_NET_ERR);
	ck_assert_int_eq(command(c, 3, &changed), VIRTIO_NET_ERR); /* short */
	ck_assert(!changed);
	ck_assert_uint_eq(n.curr_pairs, 4);
}
END_TEST

START_TEST(pairs_need_mq)
{
	uint8_t c[4] = { VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, 2, 0 };
	bool changed = false;

	ck_assert_int_eq(vnet_set_features(&n, BIT(VIRTIO_F_VERSION_1) |
						       BIT(VIRTIO_NET_F_CTRL_VQ)), 0);
	ck_assert_int_eq(command(c, 4, &changed), VIRTIO_NET_ERR);
	ck_assert_uint_eq(n.curr_pairs, 1);
}
END_TEST

START_TEST(rx_mode_and_mac_table)
{
	uint8_t promisc[3] = { VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, 1 };
	uint8_t nobcast[3] = { VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_NOBCAST, 1 };
	/* One unicast, two multicast entries. */
	uint8_t table[2 + 4 + 6 + 4 + 12] = { VIRTIO_NET_CTRL_MAC,
					      VIRTIO_NET_CTRL_MAC_TABLE_SET, 1 };
	bool changed = false;

	table[12] = 2;
	ck_assert_int_eq(command(promisc, 3, &changed), VIRTIO_NET_OK);
	ck_assert_int_eq(command(nobcast, 3, &changed), VIRTIO_NET_ERR);
	ck_assert_int_eq(command(promisc, 2, &changed), VIRTIO_NET_ERR);
	ck_assert_int_eq(command(table, sizeof(table), &changed), VIRTIO_NET_OK);
	/* Counts that do not match the bytes sent. */
	ck_assert_int_eq(command(table, sizeof(table) - 1, &changed), VIRTIO_NET_ERR);
	table[12] = 0xff;
	ck_assert_int_eq(command(table, sizeof(table), &changed), VIRTIO_NET_ERR);
	ck_assert(!changed);
}
END_TEST

START_TEST(garbage)
{
	uint8_t c[8] = { 0xff, 0xff, 1, 2, 3, 4, 5, 6 };
	uint8_t mac_set[8] = { VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET };
	uint8_t *big = calloc(1, 4096);
	bool changed = false;

	ck_assert_int_eq(command(c, 8, &changed), VIRTIO_NET_ERR);
	ck_assert_int_eq(command(c, 1, &changed), VIRTIO_NET_ERR);
	ck_assert_int_eq(command(mac_set, 8, &changed), VIRTIO_NET_ERR);
	big[0] = VIRTIO_NET_CTRL_MAC;
	ck_assert_int_eq(command(big, 4096, &changed), VIRTIO_NET_ERR);
	free(big);
}
END_TEST

/* No writable byte for the answer: the driver broke the protocol. */
START_TEST(no_status_byte)
{
	struct fg_buf b = { fg_alloc(&g, 4, 8), 4, false };
	bool changed = false;

	ck_assert_int_ge(fg_vq_add(&fvq, &b, 1, false), 0);
	fg_vq_publish(&fvq);
	ck_assert_int_eq(vnet_ctrl(&n, &vq, chain, &changed), -EPROTO);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("net_ctrl");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, pairs_set);
	tcase_add_test(tc, pairs_need_mq);
	tcase_add_test(tc, rx_mode_and_mac_table);
	tcase_add_test(tc, garbage);
	tcase_add_test(tc, no_status_byte);
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
