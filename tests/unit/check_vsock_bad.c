/* SPDX-License-Identifier: MIT */
/*
 * Hybrid vsock against bad guest packets, KVM-free
 * (tests/harness/vsock_drv.h): a wrong CID, a SEQPACKET socket, an
 * unknown operation, a length beyond the buffer or 64 KiB, data for no
 * connection each get an RST (an RST never does); a bad packet on an
 * established connection resets it and closes the host socket; a packet
 * shorter than its header is counted and dropped; RSTs owed while the
 * guest gives no receive buffer are bounded; a malformed ring or a
 * receive buffer too small for a header is -EPROTO (NEEDS_RESET).
 */
#include <check.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "vsock_drv.h"

static struct vsock_drv d;

static void setup(void)
{
	vd_init(&d, 0, 0);
}

static void teardown(void)
{
	vd_fini(&d);
}

static struct vsock_hdr good(uint16_t op)
{
	return (struct vsock_hdr){
		.src_cid = VD_CID, .dst_cid = VSOCK_HOST_CID, .src_port = 1000,
		.dst_port = 2000, .type = VSOCK_TYPE_STREAM, .op = op,
		.buf_alloc = 4096,
	};
}

/* Send @h; expect exactly one RST back (@rst) or nothing. */
static void expect(const struct vsock_hdr *h, uint32_t len, bool rst)
{
	static uint8_t data[2 * VSOCK_MAX_PKT_PAYLOAD];
	struct vsock_hdr r;

	ck_assert_int_eq(vd_send_hdr(&d, h, data, len), 0);
	ck_assert_int_eq(vd_pump(&d), 0);
	if (rst) {
		ck_assert_int_eq(vd_recv(&d, &r, NULL, 0), 1);
		ck_assert_uint_eq(r.op, VSOCK_OP_RST);
		ck_assert_uint_eq(r.dst_cid, VD_CID);
		ck_assert_uint_eq(r.src_port, h->dst_port);
		ck_assert_uint_eq(r.dst_port, h->src_port);
	}
	ck_assert_int_eq(vd_recv(&d, &r, NULL, 0), 0);
}

START_TEST(test_rst_for_bad_packets)
{
	struct vsock_stats st;
	struct vsock_hdr h;

	vd_post_rx(&d, 32);
	h = good(VSOCK_OP_REQUEST), h.src_cid = 4;
	expect(&h, 0, true);
	h = good(VSOCK_OP_REQUEST), h.dst_cid = 1;
	expect(&h, 0, true);
	h = good(VSOCK_OP_REQUEST), h.type = VSOCK_TYPE_SEQPACKET;
	expect(&h, 0, true);
	h = good(VSOCK_OP_REQUEST), h.type = 0;
	expect(&h, 0, true);
	h = good(99);
	expect(&h, 0, true);
	h = good(VSOCK_OP_INVALID);
	expect(&h, 0, true);
	h = good(VSOCK_OP_RW), h.len = 100; /* no connection */
	expect(&h, 100, true);
	h = good(VSOCK_OP_RW), h.len = 101; /* more than the chain holds */
	expect(&h, 100, true);
	h = good(VSOCK_OP_RW), h.len = VSOCK_MAX_PKT_PAYLOAD + 1;
	expect(&h, VSOCK_MAX_PKT_PAYLOAD + 1, true);
	/* These cross an RST after a close: reset again, not counted. */
	h = good(VSOCK_OP_SHUTDOWN);
	expect(&h, 0, true);
	h = good(VSOCK_OP_CREDIT_UPDATE);
	expect(&h, 0, true);
	h = good(VSOCK_OP_RESPONSE);
	expect(&h, 0, true);
	/* Never an RST for an RST, wrong as it may be. */
	h = good(VSOCK_OP_RST);
	expect(&h, 0, false);
	h = good(VSOCK_OP_RST), h.src_cid = 7;
	expect(&h, 0, false);
	vsock_get_stats(d.v, &st);
	ck_assert_uint_eq(st.bad_packets, 11);
	ck_assert_uint_eq(st.resets, 12);
	ck_assert_uint_eq(st.conns_open, 0);
}
END_TEST

/* A bad packet on an established connection resets it. */
START_TEST(test_bad_packet_resets_connection)
{
	int lfd = vd_host_listen(&d, 2000);
	static const uint16_t ops[] = { VSOCK_OP_REQUEST, 42, VSOCK_OP_RESPONSE };
	struct vsock_hdr h, r;
	char buf[8];

	vd_post_rx(&d, 32);
	for (unsigned int i = 0; i < 3; i++) {
		int hs = vd_guest_connect(&d, lfd, 1000, 2000, 4096);

		ck_assert_int_ge(hs, 0);
		h = good(ops[i]);
		ck_assert_int_eq(vd_send_hdr(&d, &h, NULL, 0), 0);
		ck_assert_int_eq(vd_pump(&d), 0);
		ck_assert_int_eq(vd_recv(&d, &r, NULL, 0), 1);
		ck_assert_uint_eq(r.op, VSOCK_OP_RST);
		ck_assert_int_eq(vd_recv(&d, &r, NULL, 0), 0);
		ck_assert_int_eq(vd_host_read(hs, buf, sizeof(buf)), 0);
		close(hs);
	}
	close(lfd);
}
END_TEST

START_TEST(test_short_packet)
{
	struct vsock_stats st;
	struct fg_buf b = { d.tx_gpa, 20, false };
	bool pushed = false;
	uint32_t id, len;

	vd_post_rx(&d, 4);
	ck_assert_int_ge(fg_vq_add(&d.tx, &b, 1, false), 0);
	fg_vq_publish(&d.tx);
	ck_assert_int_eq(vsock_tx_process(d.v, &d.dtx, &pushed), 0);
	ck_assert(pushed);
	ck_assert_int_eq(fg_vq_get_used(&d.tx, &id, &len), 1);
	ck_assert_int_eq(vd_pump(&d), 0);
	ck_assert_int_eq(vd_recv(&d, &(struct vsock_hdr){ 0 }, NULL, 0), 0);
	vsock_get_stats(d.v, &st);
	ck_assert_uint_eq(st.bad_packets, 1);
}
END_TEST

/* No receive buffers: the RSTs owed are bounded, the rest dropped. */
START_TEST(test_rst_queue_bounded)
{
	struct vsock_stats st;
	struct vsock_hdr h = good(VSOCK_OP_RW), r;
	unsigned int n = 0;

	for (unsigned int i = 0; i < 3 * VSOCK_RST_QUEUE; i++) {
		h.src_port = 5000 + i;
		ck_assert_int_eq(vd_send_hdr(&d, &h, NULL, 0), 0);
	}
	vsock_get_stats(d.v, &st);
	ck_assert_uint_eq(st.rst_dropped, 2 * VSOCK_RST_QUEUE);
	vd_post_rx(&d, 200);
	ck_assert_int_eq(vd_pump(&d), 0);
	while (vd_recv(&d, &r, NULL, 0) == 1) {
		ck_assert_uint_eq(r.op, VSOCK_OP_RST);
		ck_assert_uint_eq(r.dst_port, 5000 + n);
		n++;
	}
	ck_assert_uint_eq(n, VSOCK_RST_QUEUE);
}
END_TEST

START_TEST(test_malformed_tx_ring)
{
	bool pushed = false;

	/* The avail index runs ahead by more than the queue size. */
	fg_vq_set_avail_idx(&d.tx, (uint16_t)(VD_QSIZE + 5));
	ck_assert_int_eq(vsock_tx_process(d.v, &d.dtx, &pushed), -EPROTO);
}
END_TEST

START_TEST(test_rx_buffer_too_small)
{
	struct vsock_hdr h = good(VSOCK_OP_RW);
	struct fg_buf b = { d.pool[0], 44, true }; /* a header, no data */

	ck_assert_int_eq(vd_send_hdr(&d, &h, NULL, 0), 0); /* an RST is owed */
	ck_assert_int_ge(fg_vq_add(&d.rx, &b, 1, false), 0);
	fg_vq_publish(&d.rx);
	ck_assert_int_eq(vd_pump(&d), -EPROTO);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vsock_bad");
	TCase *tc = tcase_create("bad");
	SRunner *sr;
	int nf;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_rst_for_bad_packets);
	tcase_add_test(tc, test_bad_packet_resets_connection);
	tcase_add_test(tc, test_short_packet);
	tcase_add_test(tc, test_rst_queue_bounded);
	tcase_add_test(tc, test_malformed_tx_ring);
	tcase_add_test(tc, test_rx_buffer_too_small);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
