/* SPDX-License-Identifier: MIT */
/*
 * 16550A UART emulation (see uart8250.h).  What Linux's 8250 autoconfig
 * probes, and what this file must therefore get right:
 *  - IER keeps exactly its low 4 bits (writes 0x00/0x0F read back; bit 6
 *    reads 0 or it thinks it found an XScale UART);
 *  - MCR loopback: MSR's top nibble mirrors DTR/RTS/OUT1/OUT2 (the probe
 *    writes LOOP|RTS|OUT2 and expects MSR & 0xF0 == 0x90);
 *  - FCR enabling the FIFO sets IIR bits 7:6 (0xC0 => 16550A), and IIR
 *    bit 5 never sets (not a 16750), IIR is never 0 under DLAB (no EFR);
 *  - THRE is re-asserted whenever IER.ETBEI goes 0->1 with the transmitter
 *    empty, or serial8250_startup() flags UART_BUG_THRE and falls back to a
 *    polling timer.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "serial/uart8250.h"

/* Register offsets. */
#define UART_RBR 0 /* read, DLAB=0 */
#define UART_THR 0 /* write, DLAB=0 */
#define UART_DLL 0 /* DLAB=1 */
#define UART_IER 1 /* DLAB=0 */
#define UART_DLM 1 /* DLAB=1 */
#define UART_IIR 2 /* read */
#define UART_FCR 2 /* write */
#define UART_LCR 3
#define UART_MCR 4
#define UART_LSR 5
#define UART_MSR 6
#define UART_SCR 7
#define UART_NR_REGS 8

#define IER_ERBFI 0x01 /* received data available */
#define IER_ETBEI 0x02 /* transmitter holding register empty */
#define IER_ELSI 0x04 /* receiver line status */
#define IER_EDSSI 0x08 /* modem status */
#define IER_MASK 0x0f

#define IIR_NO_INT 0x01
#define IIR_MSI 0x00
#define IIR_THRI 0x02
#define IIR_RDI 0x04
#define IIR_RLSI 0x06
#define IIR_ID_MASK 0x0e
#define IIR_FIFO_ENABLED 0xc0

#define FCR_ENABLE 0x01
#define FCR_CLEAR_RCVR 0x02
#define FCR_CLEAR_XMIT 0x04
#define FCR_STORED 0xc9 /* enable, DMA mode, trigger level */

#define LCR_DLAB 0x80

#define MCR_DTR 0x01
#define MCR_RTS 0x02
#define MCR_OUT1 0x04
#define MCR_OUT2 0x08
#define MCR_LOOP 0x10
#define MCR_MASK 0x1f

#define LSR_DR 0x01
#define LSR_OE 0x02
#define LSR_THRE 0x20
#define LSR_TEMT 0x40

#define MSR_DCTS 0x01
#define MSR_DDSR 0x02
#define MSR_TERI 0x04
#define MSR_DDCD 0x08
#define MSR_CTS 0x10
#define MSR_DSR 0x20
#define MSR_RI 0x40
#define MSR_DCD 0x80

struct uart8250 {
	/* Constant after create. */
	struct iobus *bus;
	uint64_t base;
	void (*set_irq)(void *opaque, int level);
	void *irq_opaque;
	uart8250_tx_fn tx;
	void *tx_opaque;

	/*
	 * Protects everything below: the registers, the RX FIFO and irq_level.
	 * Taken by vCPU threads (register access) and the console thread
	 * (push_input).  Held across the tx callback so bytes from
	 * concurrent THR writers leave in the order the UART accepted them
	 * (the callback never blocks), and across set_irq() so level changes
	 * are reported in order.
	 */
	pthread_mutex_t lock;
	uint8_t ier, lcr, mcr, fcr, scr, dll, dlm;
	uint8_t msr_delta; /* MSR bits 3:0, cleared by reading MSR */
	bool overrun; /* LSR.OE, cleared by reading LSR */
	bool thr_ipending; /* THRE interrupt source latched */
	int irq_level;
	unsigned int rx_head, rx_count;
	uint8_t rx[UART8250_RX_FIFO_SIZE];
};

/* Modem status lines (MSR 7:4): in loopback they follow MCR's outputs;
 * otherwise report a connected modem (DCD, DSR, CTS) so getty/agetty that
 * wait for carrier don't block. */
static uint8_t uart_msr_lines(const struct uart8250 *u)
{
	uint8_t m = 0;

	if (!(u->mcr & MCR_LOOP))
		return MSR_DCD | MSR_DSR | MSR_CTS;
	if (u->mcr & MCR_DTR)
		m |= MSR_DSR;
	if (u->mcr & MCR_RTS)
		m |= MSR_CTS;
	if (u->mcr & MCR_OUT1)
		m |= MSR_RI;
	if (u->mcr & MCR_OUT2)
		m |= MSR_DCD;
	return m;
}

/* Highest-priority pending interrupt, as IIR reports it. */
static uint8_t uart_iir(const struct uart8250 *u)
{
	uint8_t fifo = (u->fcr & FCR_ENABLE) ? IIR_FIFO_ENABLED : 0;

	if ((u->ier & IER_ELSI) && u->overrun)
		return fifo | IIR_RLSI;
	if ((u->ier & IER_ERBFI) && u->rx_count)
		return fifo | IIR_RDI;
	if ((u->ier & IER_ETBEI) && u->thr_ipending)
		return fifo | IIR_THRI;
	if ((u->ier & IER_EDSSI) && u->msr_delta)
		return fifo | IIR_MSI;
	return fifo | IIR_NO_INT;
}

/* Caller holds u->lock. */
static void uart_update_irq(struct uart8250 *u)
{
	int level = !(uart_iir(u) & IIR_NO_INT);

	if (level == u->irq_level)
		return;
	u->irq_level = level;
	if (u->set_irq)
		u->set_irq(u->irq_opaque, level);
}

static void uart_rx_clear(struct uart8250 *u)
{
	u->rx_head = 0;
	u->rx_count = 0;
}

/* Returns false (and flags an overrun) when the FIFO is full. */
static bool uart_rx_put(struct uart8250 *u, uint8_t b)
{
	if (u->rx_count == UART8250_RX_FIFO_SIZE) {
		u->overrun = true;
		return false;
	}
	u->rx[(u->rx_head + u->rx_count) % UART8250_RX_FIFO_SIZE] = b;
	u->rx_count++;
	return true;
}

static uint8_t uart_rx_get(struct uart8250 *u)
{
	uint8_t b;

	if (!u->rx_count)
		return 0;
	b = u->rx[u->rx_head];
	u->rx_head = (u->rx_head + 1) % UART8250_RX_FIFO_SIZE;
	u->rx_count--;
	return b;
}

/* Caller holds u->lock.  The callback never blocks (uart8250.h): what
 * the host cannot take is its business, never the guest's. */
static void uart_output(struct uart8250 *u, uint8_t b)
{
	if (u->tx)
		u->tx(u->tx_opaque, &b, 1);
}

static void uart_set_mcr(struct uart8250 *u, uint8_t val)
{
	uint8_t old = uart_msr_lines(u), cur, chg;

	u->mcr = val & MCR_MASK;
	cur = uart_msr_lines(u);
	chg = old ^ cur;
	if (chg & MSR_CTS)
		u->msr_delta |= MSR_DCTS;
	if (chg & MSR_DSR)
		u->msr_delta |= MSR_DDSR;
	if ((old & MSR_RI) && !(cur & MSR_RI))
		u->msr_delta |= MSR_TERI; /* trailing edge only */
	if (chg & MSR_DCD)
		u->msr_delta |= MSR_DDCD;
}

/* Context: vCPU thread, u->lock held.  @val is guest-controlled; every
 * register masks it to its implemented bits. */
static void uart_write_reg(struct uart8250 *u, unsigned int reg, uint8_t val)
{
	bool dlab = u->lcr & LCR_DLAB;

	switch (reg) {
	case UART_THR:
		if (dlab) {
			u->dll = val;
			break;
		}
		if (u->mcr & MCR_LOOP)
			uart_rx_put(u, val); /* echo into our own receiver */
		else
			uart_output(u, val);
		/* Transmission is instantaneous: THR is empty again. */
		u->thr_ipending = true;
		break;
	case UART_IER:
		if (dlab) {
			u->dlm = val;
			break;
		}
		/* THRE re-asserts when its enable goes 0->1 (Linux's
		 * UART_BUG_THRE test depends on it). */
		if ((val & IER_ETBEI) && !(u->ier & IER_ETBEI))
			u->thr_ipending = true;
		u->ier = val & IER_MASK;
		break;
	case UART_FCR:
		/* Toggling the FIFO enable resets both FIFOs, as on a 16550. */
		if ((val ^ u->fcr) & FCR_ENABLE || (val & FCR_CLEAR_RCVR))
			uart_rx_clear(u);
		u->fcr = val & FCR_STORED;
		break;
	case UART_LCR:
		u->lcr = val;
		break;
	case UART_MCR:
		uart_set_mcr(u, val);
		break;
	case UART_SCR:
		u->scr = val;
		break;
	default: /* LSR, MSR: writes are factory-test only; ignore */
		break;
	}
}

/* Context: vCPU thread, u->lock held. */
static uint8_t uart_read_reg(struct uart8250 *u, unsigned int reg)
{
	bool dlab = u->lcr & LCR_DLAB;
	uint8_t v;

	switch (reg) {
	case UART_RBR:
		return dlab ? u->dll : uart_rx_get(u);
	case UART_IER:
		return dlab ? u->dlm : u->ier;
	case UART_IIR:
		v = uart_iir(u);
		/* Reading IIR acknowledges a THRE interrupt it reports. */
		if ((v & IIR_ID_MASK) == IIR_THRI && !(v & IIR_NO_INT))
			u->thr_ipending = false;
		return v;
	case UART_LCR:
		return u->lcr;
	case UART_MCR:
		return u->mcr;
	case UART_LSR:
		v = LSR_THRE | LSR_TEMT;
		if (u->rx_count)
			v |= LSR_DR;
		if (u->overrun)
			v |= LSR_OE;
		u->overrun = false;
		return v;
	case UART_MSR:
		v = uart_msr_lines(u) | u->msr_delta;
		u->msr_delta = 0;
		return v;
	case UART_SCR:
		return u->scr;
	}
	return 0xff;
}

/* Context: vCPU thread.  Wider accesses touch consecutive registers. */
static void uart_io(void *opaque, uint64_t off, void *data, uint32_t len,
		    bool is_write)
{
	struct uart8250 *u = opaque;
	uint8_t *p = data;

	pthread_mutex_lock(&u->lock);
	for (uint32_t i = 0; i < len; i++) {
		/* The bus guarantees off + len <= UART_NR_REGS. */
		unsigned int reg = (unsigned int)(off + i);

		if (is_write)
			uart_write_reg(u, reg, p[i]);
		else
			p[i] = uart_read_reg(u, reg);
	}
	uart_update_irq(u);
	pthread_mutex_unlock(&u->lock);
}

int uart8250_create(struct iobus *bus, uint64_t base,
		    void (*set_irq)(void *opaque, int level), void *irq_opaque,
		    uart8250_tx_fn tx, void *tx_opaque, struct uart8250 **out)
{
	struct uart8250 *u;
	int ret;

	if (!bus || !out)
		return -EINVAL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->bus = bus;
	u->base = base;
	u->set_irq = set_irq;
	u->irq_opaque = irq_opaque;
	u->tx = tx;
	u->tx_opaque = tx_opaque;
	/* What firmware leaves behind: 9600 8N1, OUT2 (IRQ gate) on. */
	u->lcr = 0x03;
	u->mcr = MCR_OUT2;
	u->dll = 12;
	ret = -pthread_mutex_init(&u->lock, NULL);
	if (ret)
		goto err_free;
	ret = iobus_register(bus, base, UART_NR_REGS, uart_io, u);
	if (ret)
		goto err_mutex;
	*out = u;
	return 0;

err_mutex:
	pthread_mutex_destroy(&u->lock);
err_free:
	free(u);
	return ret;
}

void uart8250_destroy(struct uart8250 *u)
{
	if (!u)
		return;
	iobus_unregister(u->bus, u->base);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

/* Context: any thread (normally the console input thread). */
size_t uart8250_push_input(struct uart8250 *u, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t n = 0;

	pthread_mutex_lock(&u->lock);
	/* In loopback the serial input is disconnected from the receiver. */
	if (!(u->mcr & MCR_LOOP)) {
		while (n < len && u->rx_count < UART8250_RX_FIFO_SIZE)
			uart_rx_put(u, p[n++]);
		uart_update_irq(u);
	}
	pthread_mutex_unlock(&u->lock);
	return n;
}

bool uart8250_can_accept(struct uart8250 *u)
{
	bool ok;

	pthread_mutex_lock(&u->lock);
	ok = !(u->mcr & MCR_LOOP) && u->rx_count < UART8250_RX_FIFO_SIZE;
	pthread_mutex_unlock(&u->lock);
	return ok;
}
