/* SPDX-License-Identifier: MIT */
/*
 * acpi_write(): parse the tables back the way a guest's ACPI code would
 * (RSDP -> XSDT -> FADT -> FACS/DSDT, MADT), decode the DSDT's AML by hand,
 * and, where iasl is installed, have ACPICA's disassembler read them too.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "x86/acpi.h"

#define AREA ACPI_TABLES_ROOM
#define HDR 36				/* SDT header */

static const unsigned int cpu_counts[] = { 1, 2, 254, 255, 256, 384, 1024 };

static struct acpi_config config(unsigned int nr_cpus, bool mmio64)
{
	struct acpi_config c = {
		.nr_cpus = nr_cpus,
		.pm1a_evt_port = 0x600,
		.pm1a_cnt_port = 0x604,
		.sci_irq = 9,
		.reset_port = 0xCF9,
		.reset_value = 6,
		.ioapic_addr = 0xFEC00000,
		.lapic_addr = 0xFEE00000,
		.mmio32_base = 0xC0000000,
		.mmio32_size = 0x3EC00000,
		.mmio64_base = mmio64 ? 0x8000000000ull : 0,
		.mmio64_size = mmio64 ? 0x8000000000ull : 0,
		.com1_port = 0x3F8,
		.com1_irq = 4,
	};

	return c;
}

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16;
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static uint8_t sum(const uint8_t *p, size_t len)
{
	uint8_t s = 0;

	while (len--)
		s += *p++;
	return s;
}

/* The tables written into one buffer, and where each one is. */
struct tables {
	uint8_t *buf;
	size_t len;			/* bytes acpi_write() returned */
	const uint8_t *xsdt, *fadt, *facs, *dsdt, *madt;
};

/*
 * Guest-physical @gpa to a pointer into the tables, checking that the
 * @len bytes there lie inside what acpi_write() wrote.
 */
static const uint8_t *at_gpa(const struct tables *t, uint64_t gpa, size_t len)
{
	ck_assert_uint_ge(gpa, ACPI_TABLES_GPA);
	ck_assert_uint_le(gpa - ACPI_TABLES_GPA + len, t->len);
	return t->buf + (gpa - ACPI_TABLES_GPA);
}

/* A table with a standard header at @gpa: signature, length, checksum. */
static const uint8_t *sdt_at(const struct tables *t, uint64_t gpa,
			     const char *sig, uint8_t rev)
{
	const uint8_t *p = at_gpa(t, gpa, HDR);
	uint32_t len = rd32(p + 4);

	ck_assert_msg(!memcmp(p, sig, 4), "expected %s at %#llx", sig,
		      (unsigned long long)gpa);
	ck_assert_uint_ge(len, HDR);
	at_gpa(t, gpa, len);
	ck_assert_uint_eq(gpa % 16, 0);
	ck_assert_uint_eq(p[8], rev);
	ck_assert_msg(sum(p, len) == 0, "%s checksum", sig);
	ck_assert_mem_eq(p + 10, "LIBVMM", 6);
	ck_assert_mem_eq(p + 28, "LVMM", 4);
	return p;
}

static void write_tables(struct tables *t, const struct acpi_config *cfg)
{
	long len;

	memset(t, 0, sizeof(*t));
	t->buf = malloc(AREA);
	ck_assert_ptr_nonnull(t->buf);
	memset(t->buf, 0xcc, AREA);
	len = acpi_write(t->buf, AREA, ACPI_TABLES_GPA, cfg);
	ck_assert_int_gt(len, 0);
	ck_assert_uint_eq((size_t)len, acpi_size(cfg));
	ck_assert_uint_le((size_t)len, AREA);
	t->len = (size_t)len;
}

/* Finds every table from the RSDP, the way ACPICA does, checking each. */
static void find_tables(struct tables *t)
{
	const uint8_t *rsdp = t->buf;
	unsigned int entries, fadts = 0, madts = 0;

	ck_assert_mem_eq(rsdp, "RSD PTR ", 8);
	ck_assert_uint_eq(sum(rsdp, 20), 0);
	ck_assert_uint_eq(rsdp[15], 2);		/* revision */
	ck_assert_uint_eq(rd32(rsdp + 16), 0);	/* no RSDT */
	ck_assert_uint_eq(rd32(rsdp + 20), 36);
	ck_assert_uint_eq(sum(rsdp, 36), 0);
	ck_assert_mem_eq(rsdp + 9, "LIBVMM", 6);

	t->xsdt = sdt_at(t, rd64(rsdp + 24), "XSDT", 1);
	ck_assert_uint_eq((rd32(t->xsdt + 4) - HDR) % 8, 0);
	entries = (rd32(t->xsdt + 4) - HDR) / 8;
	ck_assert_uint_eq(entries, 2);
	for (unsigned int i = 0; i < entries; i++) {
		uint64_t gpa = rd64(t->xsdt + HDR + 8 * i);
		const uint8_t *p = at_gpa(t, gpa, HDR);

		if (!memcmp(p, "FACP", 4)) {
			t->fadt = sdt_at(t, gpa, "FACP", 6);
			fadts++;
		} else if (!memcmp(p, "APIC", 4)) {
			t->madt = sdt_at(t, gpa, "APIC", 5);
			madts++;
		} else {
			ck_abort_msg("unexpected table %.4s", (const char *)p);
		}
	}
	ck_assert_uint_eq(fadts, 1);
	ck_assert_uint_eq(madts, 1);

	t->dsdt = sdt_at(t, rd32(t->fadt + 40), "DSDT", 2);
	ck_assert_uint_eq(rd64(t->fadt + 140), rd32(t->fadt + 40));	/* X_DSDT */

	/* FACS: no checksum, 64-byte aligned, through FIRMWARE_CTRL. */
	ck_assert_uint_eq(rd32(t->fadt + 36) % 64, 0);
	ck_assert_uint_eq(rd64(t->fadt + 132), 0);	/* X_FIRMWARE_CTRL */
	t->facs = at_gpa(t, rd32(t->fadt + 36), 64);
	ck_assert_mem_eq(t->facs, "FACS", 4);
	ck_assert_uint_eq(rd32(t->facs + 4), 64);
	ck_assert_uint_eq(t->facs[32], 2);		/* version */
}

/* No two tables overlap, and the RSDP comes first. */
static void check_disjoint(const struct tables *t)
{
	const uint8_t *p[] = { t->xsdt, t->fadt, t->dsdt, t->madt, t->facs };
	size_t n = sizeof(p) / sizeof(p[0]);

	for (size_t i = 0; i < n; i++) {
		size_t s1 = (size_t)(p[i] - t->buf), e1 = s1 + rd32(p[i] + 4);

		ck_assert_uint_ge(s1, 36);
		for (size_t j = i + 1; j < n; j++) {
			size_t s2 = (size_t)(p[j] - t->buf);
			size_t e2 = s2 + rd32(p[j] + 4);

			ck_assert(e1 <= s2 || e2 <= s1);
		}
	}
}

static void check_gas(const uint8_t *g, uint8_t space, uint8_t width,
		      uint8_t access, uint64_t addr)
{
	ck_assert_uint_eq(g[0], space);
	ck_assert_uint_eq(g[1], width);
	ck_assert_uint_eq(g[2], 0);
	ck_assert_uint_eq(g[3], access);
	ck_assert_uint_eq(rd64(g + 4), addr);
}

static void check_fadt(const uint8_t *f, const struct acpi_config *cfg)
{
	uint32_t flags = rd32(f + 112);

	ck_assert_uint_eq(rd32(f + 4), 276);
	ck_assert_uint_eq(f[131], 0);			/* minor version */
	ck_assert_uint_eq(rd16(f + 46), cfg->sci_irq);
	ck_assert_uint_eq(rd32(f + 48), 0);		/* SMI_CMD */
	ck_assert_uint_eq(rd32(f + 56), cfg->pm1a_evt_port);
	ck_assert_uint_eq(rd32(f + 60), 0);		/* PM1b */
	ck_assert_uint_eq(rd32(f + 64), cfg->pm1a_cnt_port);
	ck_assert_uint_eq(rd32(f + 68), 0);
	ck_assert_uint_eq(rd32(f + 76), 0);		/* no PM timer */
	ck_assert_uint_eq(rd32(f + 80), 0);		/* no GPE blocks */
	ck_assert_uint_eq(rd32(f + 84), 0);
	ck_assert_uint_eq(f[88], 4);			/* PM1_EVT_LEN */
	ck_assert_uint_eq(f[89], 2);			/* PM1_CNT_LEN */
	ck_assert_uint_eq(f[91], 0);			/* PM_TMR_LEN */
	ck_assert_uint_eq(rd16(f + 109), 0x0006);	/* 8042, no VGA */
	ck_assert(!(rd16(f + 109) & (1u << 3)));	/* MSI allowed */
	ck_assert(flags & (1u << 10));			/* RESET_REG_SUP */
	ck_assert(!(flags & (1u << 20)));		/* not HW_REDUCED */
	ck_assert(!(flags & (1u << 4)));		/* a fixed power button */
	ck_assert(flags & (1u << 5));			/* no sleep button */
	/* WBINVD, PROC_C1, SLP_BUTTON, RESET_REG_SUP */
	ck_assert_uint_eq(flags, 0x425);
	check_gas(f + 116, 1, 8, 1, cfg->reset_port);
	ck_assert_uint_eq(f[128], cfg->reset_value);
	check_gas(f + 148, 1, 32, 0, cfg->pm1a_evt_port);
	check_gas(f + 172, 1, 16, 0, cfg->pm1a_cnt_port);
	for (unsigned int off = 184; off < 268; off++)	/* PM1b .. sleep regs */
		ck_assert_uint_eq(f[off], 0);
}

static void check_madt(const uint8_t *m, const struct acpi_config *cfg)
{
	unsigned int n = cfg->nr_cpus, cpus = 0, ioapics = 0, isos = 0;
	unsigned int nmis = 0, x2nmis = 0;
	const uint8_t *e = m + 44, *end = m + rd32(m + 4);

	ck_assert_uint_eq(rd32(m + 36), cfg->lapic_addr);
	ck_assert_uint_eq(rd32(m + 40), 1);		/* PCAT_COMPAT */
	while (e < end) {
		ck_assert_uint_ge(e[1], 2);
		ck_assert(e + e[1] <= end);
		switch (e[0]) {
		case 0:	/* Processor Local APIC */
			ck_assert_uint_eq(e[1], 8);
			ck_assert_uint_lt(cpus, 255);
			ck_assert_uint_eq(e[2], cpus);	/* UID */
			ck_assert_uint_eq(e[3], cpus);	/* APIC ID, ascending */
			ck_assert_uint_eq(rd32(e + 4), 1);
			ck_assert_uint_eq(ioapics + isos + nmis, 0);
			cpus++;
			break;
		case 9:	/* Processor Local x2APIC */
			ck_assert_uint_eq(e[1], 16);
			ck_assert_uint_ge(cpus, 255);
			ck_assert_uint_eq(rd16(e + 2), 0);
			ck_assert_uint_eq(rd32(e + 4), cpus);
			ck_assert_uint_eq(rd32(e + 8), 1);
			ck_assert_uint_eq(rd32(e + 12), cpus);
			ck_assert_uint_eq(ioapics + isos + nmis, 0);
			cpus++;
			break;
		case 1:	/* I/O APIC */
			ck_assert_uint_eq(e[1], 12);
			ck_assert_uint_eq(e[2], 0);
			ck_assert_uint_eq(rd32(e + 4), cfg->ioapic_addr);
			ck_assert_uint_eq(rd32(e + 8), 0);
			ioapics++;
			break;
		case 2:	/* Interrupt Source Override: only the SCI's */
			ck_assert_uint_eq(e[1], 10);
			ck_assert_uint_eq(e[2], 0);
			ck_assert_uint_eq(e[3], cfg->sci_irq);
			ck_assert_uint_eq(rd32(e + 4), cfg->sci_irq);
			ck_assert_uint_eq(rd16(e + 8), 0x000D);
			isos++;
			break;
		case 4:	/* Local APIC NMI */
			ck_assert_uint_eq(e[1], 6);
			ck_assert_uint_eq(e[2], 0xFF);
			ck_assert_uint_eq(rd16(e + 3), 0);
			ck_assert_uint_eq(e[5], 1);
			nmis++;
			break;
		case 10: /* Local x2APIC NMI */
			ck_assert_uint_eq(e[1], 12);
			ck_assert_uint_eq(rd16(e + 2), 0);
			ck_assert_uint_eq(rd32(e + 4), 0xFFFFFFFFu);
			ck_assert_uint_eq(e[8], 1);
			x2nmis++;
			break;
		default:
			ck_abort_msg("unexpected MADT entry type %u", e[0]);
		}
		e += e[1];
	}
	ck_assert_ptr_eq(e, end);
	ck_assert_uint_eq(cpus, n);
	ck_assert_uint_eq(ioapics, 1);
	ck_assert_uint_eq(isos, 1);
	ck_assert_uint_eq(nmis, 1);
	ck_assert_uint_eq(x2nmis, n > 255 ? 1 : 0);
}

START_TEST(test_tables)
{
	struct acpi_config cfg = config(cpu_counts[_i / 2], _i % 2);
	struct tables t;

	write_tables(&t, &cfg);
	find_tables(&t);
	check_disjoint(&t);
	check_fadt(t.fadt, &cfg);
	check_madt(t.madt, &cfg);
	/* RSDP at the start; nothing written past the end. */
	ck_assert_mem_eq(t.buf, "RSD PTR ", 8);
	ck_assert_uint_eq(t.buf[t.len], 0xcc);
	free(t.buf);
}
END_TEST

START_TEST(test_fits)
{
	struct acpi_config cfg = config(ACPI_MAX_CPUS, true);

	ck_assert_uint_gt(acpi_size(&cfg), 0);
	ck_assert_uint_le(acpi_size(&cfg), ACPI_TABLES_ROOM);
	/* Below the MP table at 0xF0000. */
	ck_assert_uint_le(ACPI_TABLES_GPA + acpi_size(&cfg), 0xF0000);
	ck_assert_uint_eq(acpi_size(NULL), 0);
}
END_TEST

START_TEST(test_errors)
{
	struct acpi_config cfg = config(4, false), bad;
	size_t need = acpi_size(&cfg);
	uint8_t *buf = malloc(AREA);

	ck_assert_ptr_nonnull(buf);
	bad = cfg;
	bad.nr_cpus = 0;
	ck_assert_int_eq(acpi_write(buf, AREA, ACPI_TABLES_GPA, &bad), -EINVAL);
	bad.nr_cpus = ACPI_MAX_CPUS + 1;
	ck_assert_int_eq(acpi_write(buf, AREA, ACPI_TABLES_GPA, &bad), -EINVAL);
	ck_assert_int_eq(acpi_write(NULL, AREA, ACPI_TABLES_GPA, &cfg), -EINVAL);
	ck_assert_int_eq(acpi_write(buf, AREA, ACPI_TABLES_GPA, NULL), -EINVAL);
	ck_assert_int_eq(acpi_write(buf, AREA, ACPI_TABLES_GPA + 8, &cfg),
			 -EINVAL);
	ck_assert_int_eq(acpi_write(buf, AREA, ACPI_TABLES_GPA + 1, &cfg),
			 -EINVAL);
	/* The tables would cross 4 GiB. */
	ck_assert_int_eq(acpi_write(buf, AREA, 0xFFFFFF00u, &cfg), -EINVAL);
	ck_assert_int_eq(acpi_write(buf, AREA,
				    (uint32_t)(0x100000000ull - ((need + 15) & ~15ull)),
				    &cfg), (long)need);
	/* Out-of-range configuration. */
	bad = cfg;
	bad.sci_irq = 16;
	ck_assert_int_eq(acpi_write(buf, AREA, ACPI_TABLES_GPA, &bad), -EINVAL);
	bad = cfg;
	bad.com1_irq = 16;
	ck_assert_int_eq(acpi_write(buf, AREA, ACPI_TABLES_GPA, &bad), -EINVAL);
	bad = cfg;
	bad.pm1a_cnt_port = 0;
	ck_assert_int_eq(acpi_write(buf, AREA, ACPI_TABLES_GPA, &bad), -EINVAL);
	bad = cfg;
	bad.mmio32_size = 0;
	ck_assert_int_eq(acpi_write(buf, AREA, ACPI_TABLES_GPA, &bad), -EINVAL);
	bad = cfg;
	bad.mmio32_size = 0x40000001;		/* 0xC0000000 + that > 4 GiB */
	ck_assert_int_eq(acpi_write(buf, AREA, ACPI_TABLES_GPA, &bad), -EINVAL);
	bad = cfg;
	bad.mmio32_base = 0;
	bad.mmio32_size = 0x100000000ull;	/* length does not fit a DWord */
	ck_assert_int_eq(acpi_write(buf, AREA, ACPI_TABLES_GPA, &bad), -EINVAL);
	bad = cfg;
	bad.mmio64_base = 0xFFFFFFFF00000000ull;
	bad.mmio64_size = 0x100000001ull;	/* wraps */
	ck_assert_int_eq(acpi_write(buf, AREA, ACPI_TABLES_GPA, &bad), -EINVAL);
	bad.mmio64_size = 0x100000000ull;	/* ends at the top: fine */
	ck_assert_int_gt(acpi_write(buf, AREA, ACPI_TABLES_GPA, &bad), 0);
	/* Room. */
	ck_assert_int_eq(acpi_write(buf, need - 1, ACPI_TABLES_GPA, &cfg),
			 -ENOSPC);
	ck_assert_int_eq(acpi_write(buf, 0, ACPI_TABLES_GPA, &cfg), -ENOSPC);
	ck_assert_int_eq(acpi_write(buf, need, ACPI_TABLES_GPA, &cfg),
			 (long)need);
	/* Any 16-byte aligned address below 4 GiB works. */
	ck_assert_int_eq(acpi_write(buf, need, 0x10, &cfg), (long)need);
	free(buf);
}
END_TEST

/* ---- DSDT: decode the AML by hand ---- */

/* A PkgLength at @p: returns the length it encodes, *@n its own size. */
static size_t pkg_length(const uint8_t *p, size_t *n)
{
	size_t follow = p[0] >> 6, len;

	if (!follow) {
		*n = 1;
		return p[0] & 0x3F;
	}
	ck_assert_uint_eq(p[0] & 0x30, 0);	/* bits 5:4 reserved */
	len = p[0] & 0x0F;
	for (size_t i = 0; i < follow; i++)
		len |= (size_t)p[1 + i] << (4 + 8 * i);
	*n = 1 + follow;
	return len;
}

/* A ComputationalData integer at @p; *@n is its size. */
static uint64_t aml_int(const uint8_t *p, size_t *n)
{
	switch (p[0]) {
	case 0x00: *n = 1; return 0;
	case 0x01: *n = 1; return 1;
	case 0x0A: *n = 2; return p[1];
	case 0x0B: *n = 3; return rd16(p + 1);
	case 0x0C: *n = 5; return rd32(p + 1);
	case 0x0E: *n = 9; return rd64(p + 1);
	}
	ck_abort_msg("not an integer opcode: %#x", p[0]);
	return 0;
}

static const uint8_t *find(const uint8_t *from, const uint8_t *to,
			   const char *s)
{
	const uint8_t *p = memmem(from, (size_t)(to - from), s, strlen(s));

	ck_assert_msg(p, "\"%s\" not in the DSDT", s);
	return p;
}

/* Name(@name, EisaId(...)) inside [from, to): the id, decoded. */
static void eisaid_of(const uint8_t *from, const uint8_t *to,
		      const char *name, char out[8])
{
	const uint8_t *p = find(from, to, name);
	uint16_t vendor, product;

	ck_assert_uint_eq(p[-1], 0x08);		/* NameOp */
	ck_assert_uint_eq(p[4], 0x0C);		/* DWordPrefix */
	vendor = (uint16_t)(p[5] << 8 | p[6]);
	product = (uint16_t)(p[7] << 8 | p[8]);
	ck_assert_uint_eq(vendor >> 15, 0);
	out[0] = (char)('@' + (vendor >> 10 & 0x1F));
	out[1] = (char)('@' + (vendor >> 5 & 0x1F));
	out[2] = (char)('@' + (vendor & 0x1F));
	snprintf(out + 3, 5, "%04X", product);
}

/*
 * The Device() objects that tile [from, to) exactly: 5B 82 PkgLength Name
 * TermList each.  Returns how many, at most @max, with their extents.
 */
static unsigned int devices(const uint8_t *from, const uint8_t *to,
			    const uint8_t **start, const uint8_t **end,
			    char (*name)[5], unsigned int max)
{
	unsigned int count = 0;
	size_t n, len;

	while (from < to) {
		ck_assert_uint_lt(count, max);
		ck_assert_uint_eq(from[0], 0x5B);
		ck_assert_uint_eq(from[1], 0x82);
		len = pkg_length(from + 2, &n);
		start[count] = from;
		end[count] = from + 2 + len;
		ck_assert(end[count] <= to);
		memcpy(name[count], from + 2 + n, 4);
		name[count][4] = '\0';
		from = end[count++];
	}
	ck_assert_ptr_eq(from, to);
	return count;
}

struct crs {
	unsigned int bus, io, wordio, dword, qword, irq, end;
	uint32_t dword_min, dword_max, dword_len;
	uint64_t qword_min, qword_max, qword_len;
	uint16_t io_min;
	uint16_t irq_mask;
};

/* Name(_CRS, Buffer) inside [from, to): walk its resource descriptors. */
static void parse_crs(const uint8_t *from, const uint8_t *to, struct crs *c)
{
	const uint8_t *p = find(from, to, "_CRS"), *end, *r;
	size_t n, len, size;

	memset(c, 0, sizeof(*c));
	ck_assert_uint_eq(p[4], 0x11);		/* BufferOp */
	len = pkg_length(p + 5, &n);
	end = p + 5 + len;
	ck_assert(end <= to);
	size = (size_t)aml_int(p + 5 + n, &len);
	r = p + 5 + n + len;
	ck_assert_ptr_eq(r + size, end);
	while (r < end) {
		ck_assert_uint_eq(c->end, 0);	/* nothing after EndTag */
		if (r[0] & 0x80) {		/* large */
			size_t l = rd16(r + 1);

			ck_assert(r + 3 + l <= end);
			switch (r[0]) {
			case 0x88:
				ck_assert_uint_eq(l, 13);
				ck_assert_uint_eq(r[4], 0x0C);
				ck_assert_uint_eq(rd16(r + 6), 0);   /* granularity */
				/* fixed window: max = min + len - 1 */
				ck_assert_uint_eq(rd16(r + 10) - rd16(r + 8) + 1,
						  rd16(r + 14));
				if (r[3] == 2) {
					c->bus++;
					ck_assert_uint_eq(rd16(r + 8), 0);
					ck_assert_uint_eq(rd16(r + 10), 0);
				} else {
					ck_assert_uint_eq(r[3], 1);
					ck_assert_uint_eq(r[5], 3);
					c->wordio++;
				}
				break;
			case 0x87:
				ck_assert_uint_eq(l, 23);
				ck_assert_uint_eq(r[3], 0);
				ck_assert_uint_eq(r[4], 0x0C);
				ck_assert_uint_eq(r[5], 0x01);
				c->dword++;
				c->dword_min = rd32(r + 10);
				c->dword_max = rd32(r + 14);
				c->dword_len = rd32(r + 22);
				break;
			case 0x8A:
				ck_assert_uint_eq(l, 43);
				ck_assert_uint_eq(r[3], 0);
				ck_assert_uint_eq(r[4], 0x0C);
				ck_assert_uint_eq(r[5], 0x01);
				c->qword++;
				c->qword_min = rd64(r + 14);
				c->qword_max = rd64(r + 22);
				c->qword_len = rd64(r + 38);
				break;
			default:
				ck_abort_msg("unexpected descriptor %#x", r[0]);
			}
			r += 3 + l;
		} else {			/* small */
			size_t l = r[0] & 7;

			ck_assert(r + 1 + l <= end);
			switch (r[0] >> 3) {
			case 0x08:		/* IO */
				ck_assert_uint_eq(l, 7);
				ck_assert_uint_eq(r[1], 1);
				ck_assert_uint_eq(rd16(r + 2), rd16(r + 4));
				ck_assert_uint_eq(r[7], 8);
				c->io_min = rd16(r + 2);
				c->io++;
				break;
			case 0x04:		/* IRQ */
				ck_assert_uint_eq(l, 2);
				c->irq_mask = rd16(r + 1);
				c->irq++;
				break;
			case 0x0F:		/* End */
				ck_assert_uint_eq(l, 1);
				c->end++;
				break;
			default:
				ck_abort_msg("unexpected descriptor %#x", r[0]);
			}
			r += 1 + l;
		}
	}
	ck_assert_ptr_eq(r, end);
	ck_assert_uint_eq(c->end, 1);
}

START_TEST(test_dsdt)
{
	bool mmio64 = _i;
	struct acpi_config cfg = config(2, mmio64);
	const uint8_t *d, *end, *p, *pci0, *pci0_end, *com1, *com1_end;
	const uint8_t *dev[4], *dev_end[4];
	char names[4][5], id[8];
	struct tables t;
	struct crs crs;
	size_t n, len, size;

	write_tables(&t, &cfg);
	find_tables(&t);
	d = t.dsdt;
	end = d + rd32(d + 4);

	/* Name(\_S5_, Package(4) {5, 5, 0, 0}) first */
	p = d + HDR;
	ck_assert_uint_eq(p[0], 0x08);
	ck_assert_mem_eq(p + 1, "\\_S5_", 5);
	ck_assert_uint_eq(p[6], 0x12);
	len = pkg_length(p + 7, &n);
	ck_assert_uint_eq(p[7 + n], 4);
	ck_assert_uint_eq(aml_int(p + 8 + n, &size), ACPI_SLP_TYP_S5);
	ck_assert_uint_eq(ACPI_SLP_TYP_S5, 5);
	p += 7 + len;

	/* then Scope(\_SB) up to the end of the table: the PkgLengths add up */
	ck_assert_uint_eq(p[0], 0x10);
	len = pkg_length(p + 1, &n);
	ck_assert_ptr_eq(p + 1 + len, end);
	ck_assert_mem_eq(p + 1 + n, "\\_SB_", 5);

	/* holding two devices, back to back */
	ck_assert_uint_eq(devices(p + 1 + n + 5, end, dev, dev_end, names, 4), 2);
	ck_assert_str_eq(names[0], "PCI0");
	ck_assert_str_eq(names[1], "COM1");
	pci0 = dev[0];
	pci0_end = dev_end[0];
	com1 = dev[1];
	com1_end = dev_end[1];

	eisaid_of(pci0, pci0_end, "_HID", id);
	ck_assert_str_eq(id, "PNP0A08");
	eisaid_of(pci0, pci0_end, "_CID", id);
	ck_assert_str_eq(id, "PNP0A03");
	eisaid_of(com1, com1_end, "_HID", id);
	ck_assert_str_eq(id, "PNP0501");

	parse_crs(pci0, pci0_end, &crs);
	ck_assert_uint_eq(crs.bus, 1);
	ck_assert_uint_eq(crs.io, 1);
	ck_assert_uint_eq(crs.io_min, 0xCF8);
	ck_assert_uint_eq(crs.wordio, 2);
	ck_assert_uint_eq(crs.dword, 1);
	ck_assert_uint_eq(crs.dword_min, cfg.mmio32_base);
	ck_assert_uint_eq(crs.dword_max, cfg.mmio32_base + cfg.mmio32_size - 1);
	ck_assert_uint_eq(crs.dword_len, cfg.mmio32_size);
	ck_assert_uint_eq(crs.qword, mmio64 ? 1 : 0);
	if (mmio64) {
		ck_assert_uint_eq(crs.qword_min, cfg.mmio64_base);
		ck_assert_uint_eq(crs.qword_max,
				  cfg.mmio64_base + cfg.mmio64_size - 1);
		ck_assert_uint_eq(crs.qword_len, cfg.mmio64_size);
	}
	ck_assert_uint_eq(crs.irq, 0);

	parse_crs(com1, com1_end, &crs);
	ck_assert_uint_eq(crs.io, 1);
	ck_assert_uint_eq(crs.io_min, cfg.com1_port);
	ck_assert_uint_eq(crs.irq, 1);
	ck_assert_uint_eq(crs.irq_mask, 1u << cfg.com1_irq);
	ck_assert_uint_eq(crs.bus + crs.wordio + crs.dword + crs.qword, 0);
	free(t.buf);
}
END_TEST

/* ---- iasl: ACPICA's own reading of the tables ---- */

static bool have_iasl(void)
{
	return system("command -v iasl >/dev/null 2>&1") == 0;
}

static void write_file(const char *dir, const char *name, const uint8_t *p,
		       size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(p, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

/* Reads @dir/@name into a NUL-terminated malloc'd string. */
static char *read_file(const char *dir, const char *name, size_t *len)
{
	char path[256];
	char *s;
	FILE *f;
	long size;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	ck_assert_msg(f, "%s missing", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	size = ftell(f);
	ck_assert_int_ge(size, 0);
	rewind(f);
	s = malloc((size_t)size + 1);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(fread(s, 1, (size_t)size, f), (size_t)size);
	s[size] = '\0';
	fclose(f);
	if (len)
		*len = (size_t)size;
	return s;
}

/* Runs "iasl @args" in @dir, output to @dir/@log; returns its exit code. */
static int run_iasl(const char *dir, const char *args, const char *log)
{
	char cmd[512];
	int rc;

	snprintf(cmd, sizeof(cmd), "cd '%s' && iasl %s >%s 2>&1", dir, args,
		 log);
	rc = system(cmd);
	ck_assert_int_ne(rc, -1);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/*
 * No line of iasl's output may report an error or a warning; the
 * compiler's summary line ("0 Errors, 0 Warnings, 0 Remarks") is checked
 * for its zeros instead.  None of our tables draws a warning or a remark
 * from iasl 20200925.
 */
static void check_log(const char *dir, const char *log)
{
	char *s = read_file(dir, log, NULL), *line, *save = NULL;

	for (line = strtok_r(s, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strstr(line, "Compilation successful")) {
			ck_assert_msg(strstr(line, " 0 Errors, 0 Warnings, 0 Remarks"),
				      "iasl: %s", line);
			continue;
		}
		ck_assert_msg(!strstr(line, "Error") && !strstr(line, "Warning") &&
			      !strstr(line, "Remark"), "iasl (%s): %s", log, line);
	}
	free(s);
}

/*
 * Disassemble @name.dat, check the log, then compile the disassembly back
 * and compare with the original: iasl must produce the very bytes we wrote
 * after the header (whose compiler id and checksum are iasl's own).  -on
 * keeps the root prefixes we write ("\_S5_", "\_SB_") instead of dropping
 * them, which would otherwise be iasl's only change.
 */
static void iasl_roundtrip(const char *dir, const char *name,
			   const uint8_t *table)
{
	size_t len = rd32(table + 4), relen;
	char file[64], args[192], log[64], *dsl, *aml;

	snprintf(file, sizeof(file), "%s.dat", name);
	write_file(dir, file, table, len);

	snprintf(args, sizeof(args), "-d %s.dat", name);
	snprintf(log, sizeof(log), "%s.dis.log", name);
	ck_assert_msg(run_iasl(dir, args, log) == 0, "iasl -d %s failed", name);
	check_log(dir, log);

	snprintf(args, sizeof(args), "-on -p re_%s %s.dsl", name, name);
	snprintf(log, sizeof(log), "%s.asl.log", name);
	ck_assert_msg(run_iasl(dir, args, log) == 0, "iasl %s.dsl failed", name);
	check_log(dir, log);

	snprintf(file, sizeof(file), "re_%s.aml", name);
	aml = read_file(dir, file, &relen);
	ck_assert_uint_eq(relen, len);
	ck_assert_mem_eq(aml, table, 4);
	ck_assert_mem_eq(aml + HDR, table + HDR, len - HDR);
	free(aml);

	snprintf(file, sizeof(file), "%s.dsl", name);
	dsl = read_file(dir, file, NULL);
	if (!strcmp(name, "dsdt")) {
		static const char *const want[] = {
			"PNP0A08", "PNP0A03", "PNP0501", "_S5_", "WordBusNumber",
			"WordIO", "DWordMemory", "IRQNoFlags",
		};

		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
			ck_assert_msg(strstr(dsl, want[i]), "%s not in %s",
				      want[i], file);
	}
	free(dsl);
}

START_TEST(test_iasl)
{
	/* 256 vCPUs with a 64-bit window: xAPIC and x2APIC entries, both
	 * NMI entries, a QWordMemory descriptor. */
	struct acpi_config cfg = config(_i ? 256 : 1, _i);
	char dir[] = "/tmp/check_acpi.XXXXXX", cmd[64];
	struct tables t;

	if (!have_iasl()) {
		fprintf(stderr, "check_acpi: iasl not installed (acpica-tools): "
			"disassembly checks not run\n");
		return;
	}
	write_tables(&t, &cfg);
	find_tables(&t);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	iasl_roundtrip(dir, "dsdt", t.dsdt);
	iasl_roundtrip(dir, "facp", t.fadt);
	iasl_roundtrip(dir, "apic", t.madt);
	iasl_roundtrip(dir, "xsdt", t.xsdt);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
	free(t.buf);
}
END_TEST

static Suite *acpi_suite(void)
{
	Suite *s = suite_create("acpi");
	TCase *tc = tcase_create("write");

	tcase_add_loop_test(tc, test_tables, 0,
			    2 * (int)(sizeof(cpu_counts) / sizeof(cpu_counts[0])));
	tcase_add_test(tc, test_fits);
	tcase_add_test(tc, test_errors);
	tcase_add_loop_test(tc, test_dsdt, 0, 2);
	tcase_add_loop_test(tc, test_iasl, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(acpi_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
