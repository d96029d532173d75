/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: every I/O port of the x86 PC as a guest reaches it, and the
 * serial console behind COM1.  The devices are the machine's own:
 * machine_arch_setup_devices() (libvmm/machine/x86/pc.c) registers COM1
 * (devices/serial/uart8250.c) writing into a real console
 * (libvmm/core/serial-host.c, its thread started when there is input or
 * buffered output), the i8042 reset, the CMOS
 * RTC, the exit port, the PCI host bridge's 0xCF8-0xCFF with 0xCF9's reset
 * control, and the ACPI PM1 block, on a real PIO bus, with the machine's
 * own callbacks (machine_guest_reset/poweroff/exit -> vcpu_stop_all()).
 * No KVM: the VM is a struct vmm with its buses and exit eventfd, vm_fd -1
 * (machine_arch_create() allocates the platform state before its first
 * KVM ioctl, which then fails: expected; COM1's interrupt line ioctls fail
 * the same way and are only logged).
 *
 * Accesses go through iobus_dispatch() as a vCPU's port I/O exit does
 * (vcpu.c: string I/O is `count` back-to-back items), at any port with 1,
 * 2 or 4 bytes; writes KVM would log in the coalesced ring for
 * 0xCF8-0xCFB are dispatched by vm_flush_coalesced() before the next exit.
 * The host side feeds console input through a pipe (and its EOF) and
 * reads the output pipe (4 KiB: a stalled reader is reachable) or a memfd.
 *
 * Input: [setup u8] then action records [action u8][fields] (fuzz.h).
 * setup: bit 0 output to a memfd (else a pipe), bit 1 the pipe's own
 * description non-blocking, bit 2 no console input.  Actions:
 *  I/O:       [port u8: group (COM1, 0x60, 0x64, 0x70, exit port, ACPI PM,
 *             0xCF8, 0x80) and offset around it; 0xf8 and up: a u16 port
 *             follows][mode u8: bits 0-1 size 1/2/4, bit 2 write, bit 3
 *             string I/O ([count u8] follows: 1..64 items), bit 4 a
 *             pattern ([byte u8], bit 5 incrementing) for 64 times as many
 *             items (a guest flooding COM1)][data, for a write];
 *  coalesced: [n u8: 1..4 entries][sel u8: bits 0-1 size, 2-3 offset into
 *             0xCF8, bit 7 MMIO instead][value u32] per entry;
 *  host in:   [n u8][n bytes] (0: EOF);
 *  host read: [n u8: n * 64 + 1 bytes].
 *
 * Checked beyond the sanitizers (abort()):
 *  - the VM's exit reason is the first exit event a model of the guest's
 *    writes predicts (exit port, i8042 0xFE, 0xCF9 RST_CPU, ACPI S5), and
 *    the guest status the first exit port write's value;
 *  - the exit port reads back its signature;
 *  - console output: every byte the guest wrote to THR (outside DLAB and
 *    loopback, per a model of LCR/MCR) is written out or counted as
 *    dropped (bytes_out + bytes_dropped == bytes written, within 2 s of
 *    the host reading what is there); what the host read is the guest's
 *    output in order with only drops missing, and as long as bytes_out;
 *    to a memfd nothing is dropped; console input taken never exceeds
 *    what the host wrote;
 *  - no file descriptor is leaked.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "serial-host.h"
#include "fuzz.h"
#include "iobus.h"
#include "legacy/acpipm.h"
#include "machine-int.h"
#include "pci/pci.h"
#include "vm.h"
#include "x86/acpi.h"

#define MAX_ACTIONS 256
#define MAX_REP 64	  /* string I/O items per exit */
#define FILL_REP 64	  /* ... times this for a pattern fill */
/* Guest output per input, at most: one THR byte per string I/O item. */
#define OUT_MAX (MAX_ACTIONS * MAX_REP * FILL_REP)
#define MAX_HOST_IN 4	  /* host input actions per input (each may wait) */
#define RING_MAX 8	  /* coalesced ring entries */

/* Where pc.c puts things (kept in step by hand: pc.c's are private). */
#define COM1 0x3f8
#define ACPI_PM 0x600
#define PCI_CF8 0xcf8

enum {
	A_IO,	     /* one port I/O exit, maybe string I/O */
	A_COALESCED, /* writes KVM logs in the coalesced ring */
	A_HOST_IN,   /* host input on the console (0 bytes: EOF) */
	A_HOST_READ, /* the host reads console output */
	A_NR,
};

static const struct {
	uint16_t base, len;
} groups[] = {
	{ COM1, 8 }, { 0x60, 1 }, { 0x64, 1 }, { 0x70, 2 },
	{ VMM_EXIT_PORT, 4 }, { ACPI_PM, ACPIPM_LEN }, { PCI_CF8, 8 }, { 0x80, 1 },
};

struct fz {
	struct fuzz_in in;
	struct vmm vm;
	struct machine m;
	struct kvm_coalesced_mmio_ring *ring;
	int out_r, out_w, in_r, in_w;
	bool out_memfd, console_started;
	unsigned int host_in_actions;
	size_t in_written;
	/* Model of the guest's side. */
	uint8_t lcr, mcr;
	uint8_t *out;	   /* THR bytes that reach the console */
	size_t nout;
	uint8_t *got;	   /* what the host read */
	size_t ngot;
	int first_exit;	   /* VMM_EXIT_* of the first exit event */
	bool status_set;
	uint32_t status;
};

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_pc_ports: %s\n", what);
	abort();
}

static void exit_event(struct fz *f, int reason)
{
	if (f->first_exit == VMM_EXIT_NONE)
		f->first_exit = reason;
}

/* The model: one write of @len bytes at @port that the bus dispatches. */
static void model_write(struct fz *f, uint16_t port, const uint8_t *b,
			uint32_t len)
{
	if (port >= COM1 && port + len <= COM1 + 8) {
		for (uint32_t i = 0; i < len; i++) {
			unsigned int reg = port - COM1 + i;

			if (reg == 3)
				f->lcr = b[i];
			else if (reg == 4)
				f->mcr = b[i] & 0x1f;
			else if (reg == 0 && !(f->lcr & 0x80) && !(f->mcr & 0x10) &&
				 f->nout < OUT_MAX)
				f->out[f->nout++] = b[i];
		}
	} else if (port == 0x64 && len == 1 && b[0] == 0xfe) {
		exit_event(f, VMM_EXIT_GUEST_RESET);
	} else if (port == VMM_EXIT_PORT && len <= 4) {
		uint32_t v = 0;

		memcpy(&v, b, len);
		if (!f->status_set) {
			f->status_set = true;
			f->status = v;
		}
		exit_event(f, VMM_EXIT_GUEST_STATUS);
	} else if (port == PCI_CF8 + 1 && len == 1 && (b[0] & 0x04)) {
		exit_event(f, VMM_EXIT_GUEST_RESET);
	} else if (port >= ACPI_PM && port + len <= ACPI_PM + ACPIPM_LEN) {
		for (uint32_t i = 0; i < len; i++)
			if (port - ACPI_PM + i == ACPIPM_PM1_CNT + 1 &&
			    (b[i] & (ACPIPM_SLP_EN >> 8)) &&
			    ((b[i] >> 2) & 7) == ACPI_SLP_TYP_S5)
				exit_event(f, VMM_EXIT_POWEROFF);
	}
}

/* What KVM logged is dispatched before the next exit is handled. */
static void flush_ring(struct fz *f)
{
	uint32_t first = f->ring->first;

	/* The model sees the same writes, in the same order. */
	while (first != f->ring->last) {
		const struct kvm_coalesced_mmio *e = &f->ring->coalesced_mmio[first];

		if (e->pio)
			model_write(f, (uint16_t)e->phys_addr, e->data, e->len);
		first = (first + 1) % RING_MAX;
	}
	vm_flush_coalesced(&f->vm);
	if (f->ring->first != f->ring->last)
		fail("coalesced ring not drained");
}

static void do_io(struct fz *f)
{
	static const uint32_t sizes[] = { 1, 2, 4, 1 };
	static uint8_t data[MAX_REP * FILL_REP * 4];
	uint8_t sel = fi_u8(&f->in), mode = fi_u8(&f->in);
	uint32_t size = sizes[mode & 3], count = 1;
	bool write = mode & 4;
	uint16_t port;

	if (sel >= 0xf8) {
		port = fi_u16(&f->in);
	} else {
		unsigned int g = sel % ARRAY_SIZE(groups);

		/* In and around the group's range: straddling accesses too. */
		port = (uint16_t)(groups[g].base - 2 +
				  (sel / ARRAY_SIZE(groups)) % (groups[g].len + 4u));
	}
	if (mode & 8)
		count = 1 + fi_u8(&f->in) % MAX_REP;
	memset(data, 0, size * count * FILL_REP);
	if (write && (mode & 0x10)) {
		/* A long string write of one byte pattern (a flood). */
		uint8_t b = fi_u8(&f->in);

		count *= FILL_REP;
		for (uint32_t i = 0; i < size * count; i++)
			data[i] = (uint8_t)(b + (mode & 0x20 ? i : 0));
	} else if (write) {
		fi_bytes(&f->in, data, size * count);
	}
	flush_ring(f);
	/* vcpu.c's vcpu_handle_io(): count items, one dispatch each. */
	for (uint32_t i = 0; i < count; i++) {
		uint8_t *d = data + i * size;
		int r = iobus_dispatch(&f->vm.pio, port, d, size, write);

		if (write && !r)
			model_write(f, port, d, size);
		if (!write && !r && port >= VMM_EXIT_PORT &&
		    port + size <= VMM_EXIT_PORT + 4) {
			uint32_t magic = VMM_EXIT_PORT_MAGIC;

			if (memcmp(d, (uint8_t *)&magic + (port - VMM_EXIT_PORT), size))
				fail("exit port signature");
		}
	}
}

/* Log writes to 0xCF8-0xCFB (the zone pc.c coalesces), or elsewhere. */
static void do_coalesced(struct fz *f)
{
	static const uint32_t sizes[] = { 1, 2, 4, 4 };
	unsigned int n = 1 + fi_u8(&f->in) % 4;

	for (unsigned int i = 0; i < n; i++) {
		uint8_t sel = fi_u8(&f->in);
		uint32_t next = (f->ring->last + 1) % RING_MAX, len = sizes[sel & 3];
		struct kvm_coalesced_mmio *e = &f->ring->coalesced_mmio[f->ring->last];
		uint32_t v = fi_u32(&f->in);

		if (next == f->ring->first)
			return; /* full: KVM would exit instead */
		memset(e, 0, sizeof(*e));
		e->pio = !(sel & 0x80);
		e->phys_addr = e->pio ? PCI_CF8 + ((sel >> 2) & 3u) : 0xe0000000u + sel;
		if (e->pio && (e->phys_addr & 3) + len > 4)
			len = 1;
		e->len = len;
		memcpy(e->data, &v, sizeof(v));
		f->ring->last = next;
	}
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint64_t bytes_in(struct fz *f)
{
	struct serial_host_stats st;

	serial_host_get_stats(f->m.console, &st);
	return st.bytes_in;
}

/* The console thread, started when first needed: host input, or output
 * left in its buffer.  (Thread start and stop cost milliseconds on a busy
 * host; most inputs need neither.) */
static void start_console(struct fz *f)
{
	if (!f->console_started && serial_host_start(f->m.console))
		fail("serial_host_start");
	f->console_started = true;
}

static void do_host_in(struct fz *f)
{
	uint8_t buf[256];
	size_t n = fi_u8(&f->in);
	uint64_t seen;
	double t;

	if (f->in_w < 0 || f->host_in_actions++ >= MAX_HOST_IN)
		return;
	start_console(f);
	if (!n) {
		close(f->in_w); /* EOF */
		f->in_w = -1;
		return;
	}
	n = fi_bytes(&f->in, buf, n);
	if (!n || write(f->in_w, buf, n) != (ssize_t)n)
		return;
	f->in_written += n;
	/* Let the console thread hand it to the UART, as far as its FIFO
	 * takes it (it retries every 5 ms while full): until all of it went
	 * in, or nothing moved for 12 ms. */
	seen = bytes_in(f);
	for (t = now_ms(); seen < f->in_written && now_ms() - t < 12;) {
		uint64_t now = bytes_in(f);

		if (now != seen) {
			seen = now;
			t = now_ms();
		}
		usleep(200);
	}
}

static void host_read(struct fz *f, size_t max)
{
	while (max && f->ngot < OUT_MAX) {
		ssize_t n = read(f->out_r, f->got + f->ngot,
				 MIN(max, (size_t)(OUT_MAX - f->ngot)));

		if (n <= 0)
			return;
		f->ngot += (size_t)n;
		max -= (size_t)n;
	}
}

/* Is a[0..na) a subsequence of b[0..nb)? */
static bool subsequence(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
	size_t j = 0;

	for (size_t i = 0; i < na; i++) {
		while (j < nb && b[j] != a[i])
			j++;
		if (j++ >= nb)
			return false;
	}
	return true;
}

/* Read everything the console will ever write, then stop it. */
static void console_finish(struct fz *f)
{
	struct serial_host_stats st;
	double t0 = now_ms();

	if (f->out_memfd) {
		serial_host_stop(f->m.console);
		f->ngot = (size_t)pread(f->out_w, f->got, OUT_MAX, 0);
		serial_host_get_stats(f->m.console, &st);
		if (st.bytes_dropped || f->ngot != f->nout ||
		    memcmp(f->got, f->out, f->nout) || st.bytes_out != f->nout)
			fail("console output to a memfd differs from the guest's");
		return;
	}
	for (;;) {
		host_read(f, OUT_MAX);
		serial_host_get_stats(f->m.console, &st);
		if (st.bytes_out + st.bytes_dropped < f->nout)
			start_console(f); /* output left in its buffer */
		/* Nothing left in the console's buffer, all of it read. */
		if (st.bytes_out + st.bytes_dropped == f->nout && st.bytes_out == f->ngot)
			break;
		/* (bytes_out may trail what the pipe holds: the console
		 * thread counts a write after it, outside its lock.) */
		if (st.bytes_out + st.bytes_dropped > f->nout)
			fail("console counted bytes the guest never wrote");
		if (now_ms() - t0 > 2000)
			fail("console output neither written nor dropped within 2 s");
		usleep(100);
	}
	close(f->out_r); /* the final flush has nothing to wait for */
	f->out_r = -1;
	serial_host_stop(f->m.console);
	serial_host_get_stats(f->m.console, &st);
	if (st.bytes_out != f->ngot || st.bytes_out + st.bytes_dropped != f->nout)
		fail("console counters changed at stop");
	if (!subsequence(f->got, f->ngot, f->out, f->nout))
		fail("console output is not the guest's, in order");
}

/* machine.c's push_input, minus its static wrapper. */
static size_t push_input(void *opaque, const void *buf, size_t len)
{
	return machine_arch_console_input(opaque, buf, len);
}

static void setup(struct fz *f, uint8_t setup_byte)
{
	int p[2];
	struct serial_host_params cp = { .push_input = push_input, .opaque = &f->vm };

	f->vm.vm_fd = -1;
	f->vm.kvm.fd = -1;
	f->vm.machine = &f->m;
	f->vm.exit_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (f->vm.exit_efd < 0 || iobus_init(&f->vm.pio, "pio") ||
	    iobus_init(&f->vm.mmio, "mmio"))
		fail("vm");
	pthread_mutex_init(&f->vm.coalesced_lock, NULL);
	f->ring = calloc(1, sizeof(*f->ring) +
				   RING_MAX * sizeof(f->ring->coalesced_mmio[0]));
	if (!f->ring)
		fail("ring");
	f->vm.coalesced_ring = f->ring;
	f->vm.coalesced_max = RING_MAX;

	f->out_memfd = setup_byte & 1;
	if (f->out_memfd) {
		f->out_w = memfd_create("fuzz-console", MFD_CLOEXEC);
		f->out_r = -1;
	} else {
		if (pipe2(p, O_CLOEXEC | O_NONBLOCK))
			fail("pipe");
		f->out_r = p[0];
		f->out_w = p[1];
		/* The smallest pipe: a reader that stops is reached soon. */
		(void)fcntl(f->out_w, F_SETPIPE_SZ, 4096);
		/* The console's own description is reopened non-blocking;
		 * make ours blocking so that it has to. */
		if (!(setup_byte & 2))
			(void)fcntl(f->out_w, F_SETFL, 0);
	}
	f->in_r = f->in_w = -1;
	if (!(setup_byte & 4)) {
		if (pipe2(p, O_CLOEXEC))
			fail("pipe");
		f->in_r = p[0];
		f->in_w = p[1];
	}
	cp.in_fd = f->in_r;
	cp.out_fd = f->out_w;
	if (f->out_w < 0 || serial_host_create(&cp, &f->m.console))
		fail("console");
	/* Fails at its first KVM ioctl (vm_fd -1), after it allocated what
	 * the devices need. */
	if (machine_arch_create(&f->vm, &f->m) != -EIO || !f->m.arch ||
	    machine_arch_setup_devices(&f->vm, &f->m))
		fail("machine_arch_setup_devices without KVM");
	/* The UART's power-on state (uart8250.c). */
	f->lcr = 0x03;
	f->mcr = 0x08;
}

static void teardown(struct fz *f)
{
	machine_arch_destroy(&f->vm, &f->m); /* and the PCI bus */
	serial_host_destroy(f->m.console);
	if (f->out_r >= 0)
		close(f->out_r);
	close(f->out_w);
	if (f->in_r >= 0)
		close(f->in_r);
	if (f->in_w >= 0)
		close(f->in_w);
	close(f->vm.exit_efd);
	pthread_mutex_destroy(&f->vm.coalesced_lock);
	iobus_destroy(&f->vm.pio);
	iobus_destroy(&f->vm.mmio);
	free(f->ring);
}

int fuzz_pc_ports(const uint8_t *data, size_t size)
{
	static uint8_t *out, *got;
	struct fz *f = calloc(1, sizeof(*f));
	int fd_before;

	fuzz_quiet_logs();
	/* The console's fast path writes from this thread, which (unlike
	 * the VMM's threads) does not block SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	if (!out && (!(out = malloc(OUT_MAX)) || !(got = malloc(OUT_MAX))))
		abort();
	if (!f)
		abort();
	f->in = (struct fuzz_in){ data, size };
	f->out = out;
	f->got = got;
	fd_before = fuzz_probe_fd();
	setup(f, fi_u8(&f->in));

	for (unsigned int i = 0; i < MAX_ACTIONS && fi_left(&f->in); i++) {
		switch (fi_u8(&f->in) % A_NR) {
		case A_IO:
			do_io(f);
			break;
		case A_COALESCED:
			do_coalesced(f);
			break;
		case A_HOST_IN:
			do_host_in(f);
			break;
		case A_HOST_READ:
			if (f->out_r >= 0)
				host_read(f, 1u + fi_u8(&f->in) * 64u);
			break;
		}
	}
	flush_ring(f); /* the last exit */

	console_finish(f);
	if (bytes_in(f) > f->in_written)
		fail("console input taken exceeds what the host wrote");
	if (f->vm.exit_reason != f->first_exit)
		fail("exit reason is not the first exit event's");
	if (f->status_set != f->vm.guest_status_claimed ||
	    (f->status_set && f->vm.guest_status != f->status))
		fail("guest status is not the first exit port write's");
	teardown(f);
	free(f);
	if (fuzz_probe_fd() != fd_before)
		fail("a file descriptor leaked");
	return 0;
}

FUZZ_TARGET(fuzz_pc_ports)
