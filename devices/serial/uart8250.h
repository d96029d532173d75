/* SPDX-License-Identifier: MIT */
/*
 * 16550A-compatible UART (what Linux's 8250 driver autodetects on COM1:
 * 0x3f8, 8 registers).  Output is instantaneous: every THR byte is handed
 * at once to the transmit callback, which must not block (libvmm's is
 * console_write(): a bounded buffer that drops what does not fit), so
 * THRE/TEMT always read as set and the guest never waits for the host's
 * reader.  Input is a bounded RX FIFO fed by uart8250_push_input() from a
 * console thread.
 *
 * The interrupt output is level-triggered: set_irq(irq_opaque, level) is
 * called whenever the computed line level changes (never twice with the same
 * level).  The device knows nothing about KVM; the caller maps the level to
 * KVM_IRQ_LINE.
 *
 * Context: register accesses come from vCPU threads (through the PIO bus),
 * push_input/can_accept from any thread.  set_irq is called with the UART's
 * lock held (so that level changes reach the caller in order) from either
 * kind of thread; it must not call back into the UART.
 */
#ifndef VMM_SERIAL_UART8250_H
#define VMM_SERIAL_UART8250_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iobus.h"
#include "util/compiler.h"

/* Bytes of guest input buffered before push_input() starts refusing. */
#define UART8250_RX_FIFO_SIZE 1024

struct uart8250;

/*
 * Transmit callback: @len bytes the guest wrote to THR.  Called with the
 * UART's lock held (so bytes from concurrent vCPUs arrive in the order the
 * UART accepted them), from a vCPU thread; must return promptly whatever
 * the host does with them, and must not call back into the UART.
 */
typedef void (*uart8250_tx_fn)(void *opaque, const uint8_t *buf, size_t len);

/*
 * uart8250_create - create a UART and register its 8 registers at @base on
 * @bus: I/O ports (x86's COM1) or MMIO with one byte per register
 * (reg-shift 0, reg-io-width 1: a device tree's ns16550a).
 * @set_irq: called with the new line level (0/1) on every change; may be NULL.
 * @tx:      where THR bytes go, or NULL to discard output.
 * Returns 0, -EINVAL (NULL @bus/@out), -ENOMEM, or -EEXIST (range taken).
 */
int uart8250_create(struct iobus *bus, uint64_t base,
		    void (*set_irq)(void *opaque, int level), void *irq_opaque,
		    uart8250_tx_fn tx, void *tx_opaque,
		    struct uart8250 **out) __must_check;

/* Unregisters the registers and frees @u.  NULL-safe.  No vCPU may be running. */
void uart8250_destroy(struct uart8250 *u);

/*
 * uart8250_push_input - queue guest input.  Returns how many bytes of @buf
 * were accepted (0 when the FIFO is full or the UART is in loopback mode,
 * where the serial input is disconnected).  The caller retries the rest
 * later.  Context: any thread.
 */
size_t uart8250_push_input(struct uart8250 *u, const void *buf, size_t len);

/* True if push_input() would accept at least one byte now. */
bool uart8250_can_accept(struct uart8250 *u);

#endif
