/* SPDX-License-Identifier: MIT */
/* 16550A UART: registers, interrupts, FIFO, loopback, output, threads. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iobus.h"
#include "serial/uart8250.h"

#define BASE 0x3f8
#define RBR 0
#define THR 0
#define IER 1
#define IIR 2
#define FCR 2
#define LCR 3
#define MCR 4
#define LSR 5
#define MSR 6
#define SCR 7

struct irq_rec {
	int level; /* atomics: set from the pushing thread too */
	int changes;
};

static void rec_irq(void *opaque, int level)
{
	struct irq_rec *r = opaque;

	ck_assert_int_ne(level, __atomic_load_n(&r->level, __ATOMIC_SEQ_CST));
	__atomic_store_n(&r->level, level, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&r->changes, 1, __ATOMIC_SEQ_CST);
}

static struct iobus pio;
static struct uart8250 *u;
static struct irq_rec irq;
static int pfd[2];

/* The fixture's transmit callback: bytes go to a non-blocking pipe the
 * tests read back (the callback must never block: a full pipe would fail
 * the write assertion instead). */
static void pipe_tx(void *opaque, const uint8_t *buf, size_t len)
{
	int fd = *(int *)opaque;

	ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
}

static uint8_t in8(unsigned int reg)
{
	uint8_t v = 0;

	ck_assert_int_eq(iobus_dispatch(&pio, BASE + reg, &v, 1, false), 0);
	return v;
}

static void out8(unsigned int reg, uint8_t v)
{
	ck_assert_int_eq(iobus_dispatch(&pio, BASE + reg, &v, 1, true), 0);
}

static int irq_level(void)
{
	return __atomic_load_n(&irq.level, __ATOMIC_SEQ_CST);
}

static void setup(void)
{
	memset(&irq, 0, sizeof(irq));
	ck_assert_int_eq(iobus_init(&pio, "pio"), 0);
	ck_assert_int_eq(pipe2(pfd, O_NONBLOCK), 0);
	ck_assert_int_eq(uart8250_create(&pio, BASE, rec_irq, &irq, pipe_tx,
					 &pfd[1], &u),
			 0);
}

static void teardown(void)
{
	uart8250_destroy(u);
	close(pfd[0]);
	close(pfd[1]);
	iobus_destroy(&pio);
}

START_TEST(test_create_errors)
{
	struct uart8250 *u2;

	/* ports already taken by the fixture's UART */
	ck_assert_int_eq(uart8250_create(&pio, BASE + 4, NULL, NULL, NULL, NULL, &u2),
			 -EEXIST);
	ck_assert_int_eq(uart8250_create(NULL, BASE, NULL, NULL, NULL, NULL, &u2),
			 -EINVAL);
	/* a second UART elsewhere (COM2), and destroy frees its ports */
	ck_assert_int_eq(uart8250_create(&pio, 0x2f8, NULL, NULL, NULL, NULL, &u2), 0);
	uart8250_destroy(u2);
	ck_assert_int_eq(uart8250_create(&pio, 0x2f8, NULL, NULL, NULL, NULL, &u2), 0);
	uart8250_destroy(u2);
	uart8250_destroy(NULL);
}
END_TEST

START_TEST(test_thr_output)
{
	const char *msg = "hello, world\n";
	char buf[64];
	ssize_t n;

	for (const char *p = msg; *p; p++) {
		ck_assert(in8(LSR) & 0x20); /* THRE before each byte */
		out8(THR, (uint8_t)*p);
	}
	n = read(pfd[0], buf, sizeof(buf));
	ck_assert_int_eq(n, (ssize_t)strlen(msg));
	ck_assert(!memcmp(buf, msg, strlen(msg)));
	/* no interrupt without IER */
	ck_assert_int_eq(irq_level(), 0);
	ck_assert_int_eq(irq.changes, 0);
}
END_TEST

START_TEST(test_lsr_bits)
{
	uint8_t lsr = in8(LSR);

	ck_assert_uint_eq(lsr, 0x60); /* THRE | TEMT, no data */
	ck_assert_uint_eq(uart8250_push_input(u, "x", 1), 1);
	ck_assert_uint_eq(in8(LSR), 0x61);
	ck_assert_uint_eq(in8(RBR), 'x');
	ck_assert_uint_eq(in8(LSR), 0x60);
	/* reading an empty RBR is harmless */
	ck_assert_uint_eq(in8(RBR), 0);
	ck_assert_uint_eq(in8(LSR), 0x60);
}
END_TEST

START_TEST(test_rx_fifo_rda_irq)
{
	const char *in = "abc";

	out8(IER, 0x01); /* ERBFI */
	ck_assert_int_eq(irq_level(), 0);
	ck_assert_uint_eq(in8(IIR) & 0x0f, 0x01);
	ck_assert_uint_eq(uart8250_push_input(u, in, 3), 3);
	ck_assert_int_eq(irq_level(), 1);
	ck_assert_uint_eq(in8(IIR) & 0x0f, 0x04);
	ck_assert_uint_eq(in8(RBR), 'a');
	ck_assert_int_eq(irq_level(), 1); /* still data */
	ck_assert_uint_eq(in8(RBR), 'b');
	ck_assert_uint_eq(in8(RBR), 'c');
	ck_assert_int_eq(irq_level(), 0);
	ck_assert_uint_eq(in8(IIR) & 0x0f, 0x01);
	ck_assert_int_eq(irq.changes, 2);
	/* masking ERBFI drops the line, unmasking raises it again */
	uart8250_push_input(u, "d", 1);
	ck_assert_int_eq(irq_level(), 1);
	out8(IER, 0);
	ck_assert_int_eq(irq_level(), 0);
	out8(IER, 0x01);
	ck_assert_int_eq(irq_level(), 1);
}
END_TEST

START_TEST(test_fifo_bound)
{
	static uint8_t big[UART8250_RX_FIFO_SIZE + 100];

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)i;
	ck_assert(uart8250_can_accept(u));
	ck_assert_uint_eq(uart8250_push_input(u, big, sizeof(big)),
			  UART8250_RX_FIFO_SIZE);
	ck_assert(!uart8250_can_accept(u));
	ck_assert_uint_eq(uart8250_push_input(u, big, 1), 0);
	ck_assert_uint_eq(in8(LSR) & 0x02, 0); /* refusing is not an overrun */
	ck_assert_uint_eq(in8(RBR), 0);
	ck_assert(uart8250_can_accept(u));
	ck_assert_uint_eq(uart8250_push_input(u, big, 2), 1);
	for (size_t i = 1; i < UART8250_RX_FIFO_SIZE; i++)
		ck_assert_uint_eq(in8(RBR), (uint8_t)i);
	ck_assert_uint_eq(in8(RBR), 0); /* the late byte, big[0] */
	ck_assert_uint_eq(in8(LSR) & 0x01, 0);
	/* FCR clear-receiver empties the FIFO */
	uart8250_push_input(u, "zz", 2);
	out8(FCR, 0x01 | 0x02);
	ck_assert_uint_eq(in8(LSR) & 0x01, 0);
}
END_TEST

START_TEST(test_thre_irq)
{
	out8(IER, 0x02); /* ETBEI 0->1: THRE interrupt */
	ck_assert_int_eq(irq_level(), 1);
	ck_assert_uint_eq(in8(IIR) & 0x0f, 0x02);
	/* reading IIR acknowledged it */
	ck_assert_int_eq(irq_level(), 0);
	ck_assert_uint_eq(in8(IIR) & 0x0f, 0x01);
	/* writing THR empties the transmitter again at once: re-asserted */
	out8(THR, 'A');
	ck_assert_int_eq(irq_level(), 1);
	/* Linux's UART_BUG_THRE test: IER 0 then THRI must re-assert */
	ck_assert_uint_eq(in8(IIR) & 0x0f, 0x02);
	out8(IER, 0);
	out8(IER, 0x02);
	ck_assert_uint_eq(in8(IIR) & 0x0f, 0x02);
	/* disabling ETBEI drops a latched THRE */
	out8(THR, 'B');
	ck_assert_int_eq(irq_level(), 1);
	out8(IER, 0);
	ck_assert_int_eq(irq_level(), 0);
}
END_TEST

START_TEST(test_iir_priorities)
{
	out8(FCR, 0x01); /* FIFO on: IIR 7:6 set */
	ck_assert_uint_eq(in8(IIR), 0xc1);
	out8(IER, 0x0f);
	uart8250_push_input(u, "q", 1);
	/* RDA (0x4) outranks THRE (0x2) */
	ck_assert_uint_eq(in8(IIR), 0xc4);
	ck_assert_uint_eq(in8(IIR), 0xc4); /* RDA is not cleared by IIR */
	ck_assert_uint_eq(in8(RBR), 'q');
	ck_assert_uint_eq(in8(IIR), 0xc2);
	ck_assert_uint_eq(in8(IIR), 0xc1); /* THRE acked by the IIR read */
	/* modem status (0x0) is lowest: loopback MCR change makes deltas */
	/* LOOP | RTS: the lines go from "connected" (DCD|DSR|CTS) to CTS */
	out8(MCR, 0x10 | 0x02);
	out8(THR, 'r'); /* looped back: RDA and THRE pending */
	ck_assert_uint_eq(in8(IIR), 0xc4);
	ck_assert_uint_eq(in8(RBR), 'r');
	ck_assert_uint_eq(in8(IIR), 0xc2);
	ck_assert_uint_eq(in8(IIR), 0xc0); /* MSI */
	ck_assert_int_eq(irq_level(), 1);
	ck_assert_uint_eq(in8(MSR), 0x10 | 0x08 | 0x02); /* CTS, DDCD, DDSR */
	ck_assert_uint_eq(in8(MSR), 0x10); /* deltas cleared by the read */
	ck_assert_uint_eq(in8(IIR), 0xc1);
	ck_assert_int_eq(irq_level(), 0);
	/* receiver line status (overrun) outranks everything */
	for (int i = 0; i < UART8250_RX_FIFO_SIZE + 1; i++)
		out8(THR, 'o');
	ck_assert_uint_eq(in8(IIR), 0xc6);
	ck_assert_uint_eq(in8(LSR) & 0x03, 0x03); /* OE | DR; OE now clear */
	ck_assert_uint_eq(in8(IIR), 0xc4);
	/* FIFO off: IIR 7:6 clear */
	out8(FCR, 0x00);
	ck_assert_uint_eq(in8(IIR) & 0xc0, 0);
}
END_TEST

START_TEST(test_dlab)
{
	out8(IER, 0x05);
	out8(LCR, 0x83); /* DLAB */
	ck_assert_uint_eq(in8(LCR), 0x83);
	out8(0, 0x01); /* DLL: 115200 */
	out8(1, 0x00); /* DLM */
	ck_assert_uint_eq(in8(0), 0x01);
	ck_assert_uint_eq(in8(1), 0x00);
	out8(0, 0x34);
	out8(1, 0x12);
	ck_assert_uint_eq(in8(0), 0x34);
	ck_assert_uint_eq(in8(1), 0x12);
	out8(LCR, 0x03);
	ck_assert_uint_eq(in8(IER), 0x05); /* IER untouched by DLM writes */
	/* nothing went out while DLAB was set */
	{
		char c;

		ck_assert_int_eq(read(pfd[0], &c, 1), -1);
		ck_assert_int_eq(errno, EAGAIN);
	}
	out8(LCR, 0x83);
	ck_assert_uint_eq(in8(0), 0x34); /* divisor latched */
}
END_TEST

START_TEST(test_scratch_ier_mask)
{
	out8(SCR, 0xa5);
	ck_assert_uint_eq(in8(SCR), 0xa5);
	/* Linux autoconfig: IER keeps exactly bits 3:0 */
	out8(IER, 0x00);
	ck_assert_uint_eq(in8(IER) & 0x0f, 0);
	out8(IER, 0x0f);
	ck_assert_uint_eq(in8(IER) & 0x0f, 0x0f);
	out8(IER, 0xff);
	ck_assert_uint_eq(in8(IER), 0x0f);
	out8(IER, 0);
}
END_TEST

START_TEST(test_loopback)
{
	char c;

	/* the autoconfig probe: LOOP | RTS | OUT2 -> CTS | DCD */
	out8(MCR, 0x10 | 0x0a);
	ck_assert_uint_eq(in8(MSR) & 0xf0, 0x90);
	out8(MCR, 0x10 | 0x05); /* DTR | OUT1 -> DSR | RI */
	ck_assert_uint_eq(in8(MSR) & 0xf0, 0x60);
	/* echo: bytes come back in RBR and are not transmitted */
	out8(THR, 0x55);
	out8(THR, 0xaa);
	ck_assert_uint_eq(in8(LSR) & 0x01, 0x01);
	ck_assert_uint_eq(in8(RBR), 0x55);
	ck_assert_uint_eq(in8(RBR), 0xaa);
	ck_assert_uint_eq(in8(LSR) & 0x01, 0);
	ck_assert_int_eq(read(pfd[0], &c, 1), -1);
	/* external input is disconnected in loopback */
	ck_assert(!uart8250_can_accept(u));
	ck_assert_uint_eq(uart8250_push_input(u, "x", 1), 0);
	/* back to normal: connected modem lines, output flows */
	out8(MCR, 0x0b);
	ck_assert_uint_eq(in8(MSR) & 0xf0, 0xb0);
	out8(THR, 'k');
	ck_assert_int_eq(read(pfd[0], &c, 1), 1);
	ck_assert_int_eq(c, 'k');
	ck_assert(uart8250_can_accept(u));
}
END_TEST

/* The register sequence of Linux's autoconfig()/autoconfig_16550a(): it
 * must conclude "16550A", not 8250/16450/16650/16750/XScale. */
START_TEST(test_linux_autoconfig)
{
	uint8_t save_lcr = in8(LCR), save_mcr = in8(MCR);

	out8(IER, 0);
	ck_assert_uint_eq(in8(IER) & 0x0f, 0);
	out8(IER, 0x0f);
	ck_assert_uint_eq(in8(IER) & 0x0f, 0x0f);
	out8(IER, 0);
	out8(MCR, 0x10 | 0x0a);
	ck_assert_uint_eq(in8(MSR) & 0xf0, 0x90);
	out8(MCR, save_mcr);
	out8(LCR, 0xbf);
	out8(LCR, 0);
	out8(FCR, 0x01);
	ck_assert_uint_eq(in8(IIR) >> 6, 3); /* -> autoconfig_16550a */
	out8(LCR, 0x80);
	ck_assert_uint_ne(in8(IIR), 0); /* no EFR (not a 16650) */
	out8(LCR, 0xbf);
	ck_assert_uint_ne(in8(IIR), 0);
	out8(LCR, 0);
	out8(FCR, 0x01 | 0x20); /* 64-byte FIFO request */
	ck_assert_uint_eq(in8(IIR) & 0xe0, 0xc0); /* not a 16750 */
	out8(IER, 0x40); /* UUE */
	ck_assert_uint_eq(in8(IER) & 0x40, 0); /* not XScale */
	out8(LCR, save_lcr);
	ck_assert_uint_ne(in8(LSR), 0xff);
}
END_TEST

struct tx_rec {
	uint8_t bytes[256];
	size_t n;
	unsigned int calls;
};

static void rec_tx(void *opaque, const uint8_t *buf, size_t len)
{
	struct tx_rec *r = opaque;

	r->calls++;
	for (size_t i = 0; i < len && r->n < sizeof(r->bytes); i++)
		r->bytes[r->n++] = buf[i];
}

/* Every THR byte reaches the transmit callback at once, in order, and
 * THRE/TEMT stay set (output is instantaneous: whatever the host does
 * with the bytes, the guest never waits); no callback discards. */
START_TEST(test_output_callback)
{
	struct uart8250 *u2;
	struct iobus pio2;
	struct tx_rec rec = { .n = 0 };
	uint8_t b;

	ck_assert_int_eq(iobus_init(&pio2, "pio2"), 0);
	ck_assert_int_eq(uart8250_create(&pio2, BASE, NULL, NULL, rec_tx, &rec,
					 &u2), 0);
	for (unsigned int i = 0; i < 100; i++) {
		b = (uint8_t)i;
		ck_assert_int_eq(iobus_dispatch(&pio2, BASE, &b, 1, true), 0);
		ck_assert_int_eq(iobus_dispatch(&pio2, BASE + LSR, &b, 1, false), 0);
		ck_assert_uint_eq(b & 0x60, 0x60);
	}
	ck_assert_uint_eq(rec.calls, 100);
	ck_assert_uint_eq(rec.n, 100);
	for (unsigned int i = 0; i < 100; i++)
		ck_assert_uint_eq(rec.bytes[i], i);
	uart8250_destroy(u2);
	/* no callback: output is discarded */
	ck_assert_int_eq(uart8250_create(&pio2, BASE, NULL, NULL, NULL, NULL, &u2), 0);
	ck_assert_int_eq(iobus_dispatch(&pio2, BASE, &b, 1, true), 0);
	b = 0;
	ck_assert_int_eq(iobus_dispatch(&pio2, BASE + LSR, &b, 1, false), 0);
	ck_assert_uint_eq(b, 0x60);
	uart8250_destroy(u2);
	iobus_destroy(&pio2);
}
END_TEST

#define THREAD_BYTES 20000

static void *pusher(void *arg)
{
	(void)arg;
	for (unsigned int i = 0; i < THREAD_BYTES;) {
		uint8_t b[7];
		size_t n = 0;

		for (unsigned int k = 0; k < sizeof(b); k++)
			b[k] = (uint8_t)(i + k);
		if (i + sizeof(b) <= THREAD_BYTES)
			n = uart8250_push_input(u, b, sizeof(b));
		else
			n = uart8250_push_input(u, b, THREAD_BYTES - i);
		i += (unsigned int)n;
		if (!n)
			usleep(10);
	}
	return NULL;
}

/* Input from a console thread while a "vCPU" drains the FIFO the way
 * Linux's interrupt handler does (IIR, then LSR.DR / RBR): every byte
 * arrives once, in order, and the line is low when all is read. */
START_TEST(test_input_thread)
{
	pthread_t t;
	unsigned int got = 0;

	out8(FCR, 0x01);
	out8(IER, 0x01);
	ck_assert_int_eq(pthread_create(&t, NULL, pusher, NULL), 0);
	while (got < THREAD_BYTES) {
		if (!irq_level())
			continue;
		(void)in8(IIR);
		while (in8(LSR) & 0x01) {
			ck_assert_uint_eq(in8(RBR), (uint8_t)got);
			got++;
		}
	}
	pthread_join(t, NULL);
	ck_assert_uint_eq(in8(LSR) & 0x01, 0);
	ck_assert_int_eq(irq_level(), 0);
	ck_assert_uint_eq(in8(IIR) & 0x0f, 0x01);
}
END_TEST

static Suite *uart_suite(void)
{
	Suite *s = suite_create("uart8250");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_create_errors);
	tcase_add_test(tc, test_thr_output);
	tcase_add_test(tc, test_lsr_bits);
	tcase_add_test(tc, test_rx_fifo_rda_irq);
	tcase_add_test(tc, test_fifo_bound);
	tcase_add_test(tc, test_thre_irq);
	tcase_add_test(tc, test_iir_priorities);
	tcase_add_test(tc, test_dlab);
	tcase_add_test(tc, test_scratch_ier_mask);
	tcase_add_test(tc, test_loopback);
	tcase_add_test(tc, test_linux_autoconfig);
	tcase_add_test(tc, test_output_callback);
	tcase_add_test(tc, test_input_thread);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(uart_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
