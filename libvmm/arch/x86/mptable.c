/* SPDX-License-Identifier: MIT */
/*
 * MP Specification 1.4 tables (the kernel's asm/mpspec_def.h layout, which
 * is not a uapi header, so the structures are spelled out here).
 *
 * Interrupt routing mirrors what KVM does by default: the in-kernel IOAPIC's default routing connects GSI i to pin i,
 * and the in-kernel PIT raises GSI 0, so ISA IRQ i goes to IOAPIC pin i for
 * all 16 ISA IRQs, IRQ 0 included (a PC board would wire IRQ 0 to pin 2,
 * which is wrong for KVM).  IRQ 2 is listed too: nothing raises it, and
 * Linux ignores the cascade.
 */
#include <errno.h>
#include <string.h>

#include "util/compiler.h"
#include "x86/fwtable.h"
#include "x86/mptable.h"

#define MPC_SPEC_REV 4			/* MP spec 1.4 */
#define MP_APIC_VERSION 0x14		/* integrated LAPIC, like KVM's */
#define MP_IOAPIC_VERSION 0x11		/* KVM's IOAPIC version register */
#define MP_APIC_ALL 0xff
#define MP_ISA_IRQS 16

enum { MP_PROCESSOR, MP_BUS, MP_IOAPIC, MP_INTSRC, MP_LINTSRC };
enum { MP_INT, MP_NMI, MP_SMI, MP_EXTINT };

#define CPU_ENABLED 1
#define CPU_BOOTPROCESSOR 2
#define MPC_APIC_USABLE 1
#define MP_IRQ_DEFAULT 0		/* polarity/trigger: conforms to the bus */

/*
 * CPU signature and feature flags of the processor entries.  Linux only
 * prints them; family 6 with FPU and APIC is the plainest that fits.
 */
#define MP_CPU_SIGNATURE 0x600
#define MP_CPU_FEATURES ((1u << 0) | (1u << 9))	/* FPU, APIC */

#define BUS_ID_PCI 0
#define BUS_ID_ISA 1

struct mpf_intel {
	char signature[4];		/* "_MP_" */
	uint32_t physptr;		/* configuration table address */
	uint8_t length;			/* in 16-byte units: 1 */
	uint8_t specification;
	uint8_t checksum;
	uint8_t feature1;		/* 0: a configuration table is present */
	uint8_t feature2;		/* bit 7 IMCR: 0, virtual wire mode */
	uint8_t feature3, feature4, feature5;
} __attribute__((packed));

struct mpc_table {
	char signature[4];		/* "PCMP" */
	uint16_t length;		/* base table, header included */
	uint8_t spec;
	uint8_t checksum;
	char oem[8];
	char productid[12];
	uint32_t oemptr;
	uint16_t oemsize;
	uint16_t oemcount;		/* number of entries */
	uint32_t lapic;
	uint16_t ext_length;
	uint8_t ext_checksum;
	uint8_t reserved;
} __attribute__((packed));

struct mpc_cpu {
	uint8_t type;
	uint8_t apicid;
	uint8_t apicver;
	uint8_t cpuflag;
	uint32_t cpufeature;		/* CPUID signature */
	uint32_t featureflag;		/* CPUID.1:EDX */
	uint32_t reserved[2];
} __attribute__((packed));

struct mpc_bus {
	uint8_t type;
	uint8_t busid;
	char bustype[6];
} __attribute__((packed));

struct mpc_ioapic {
	uint8_t type;
	uint8_t apicid;
	uint8_t apicver;
	uint8_t flags;
	uint32_t apicaddr;
} __attribute__((packed));

/* Same layout for MP_INTSRC and MP_LINTSRC. */
struct mpc_intsrc {
	uint8_t type;
	uint8_t irqtype;
	uint16_t irqflag;
	uint8_t srcbus;
	uint8_t srcbusirq;
	uint8_t dstapic;		/* IOAPIC id, or LAPIC id for LINTSRC */
	uint8_t dstirq;			/* IOAPIC pin, or LINTn */
} __attribute__((packed));

_Static_assert(sizeof(struct mpf_intel) == 16, "mpf_intel layout");
_Static_assert(sizeof(struct mpc_table) == 44, "mpc_table layout");
_Static_assert(sizeof(struct mpc_cpu) == 20, "mpc_cpu layout");
_Static_assert(sizeof(struct mpc_bus) == 8, "mpc_bus layout");
_Static_assert(sizeof(struct mpc_ioapic) == 8, "mpc_ioapic layout");
_Static_assert(sizeof(struct mpc_intsrc) == 8, "mpc_intsrc layout");

#define MP_NR_BUSES 2
#define MP_NR_LINTS 2

size_t mptable_size(unsigned int nr_cpus)
{
	return sizeof(struct mpf_intel) + sizeof(struct mpc_table) +
	       (size_t)nr_cpus * sizeof(struct mpc_cpu) +
	       MP_NR_BUSES * sizeof(struct mpc_bus) +
	       sizeof(struct mpc_ioapic) +
	       MP_ISA_IRQS * sizeof(struct mpc_intsrc) +
	       MP_NR_LINTS * sizeof(struct mpc_intsrc);
}

static uint8_t *put_bus(uint8_t *pos, uint8_t id, const char type[6])
{
	struct mpc_bus bus = { .type = MP_BUS, .busid = id };

	memcpy(bus.bustype, type, sizeof(bus.bustype));
	return fwtable_put(pos, &bus, sizeof(bus));
}

static uint8_t *put_src(uint8_t *pos, uint8_t type, uint8_t irqtype,
			uint8_t srcbusirq, uint8_t dstapic, uint8_t dstirq)
{
	struct mpc_intsrc src = {
		.type = type,
		.irqtype = irqtype,
		.irqflag = MP_IRQ_DEFAULT,
		.srcbus = BUS_ID_ISA,
		.srcbusirq = srcbusirq,
		.dstapic = dstapic,
		.dstirq = dstirq,
	};

	return fwtable_put(pos, &src, sizeof(src));
}

/* The configuration table's entries at @pos: processors, buses, the IOAPIC
 * and the interrupt sources; adds their number to *@entries and returns the
 * end. */
static uint8_t *put_entries(uint8_t *pos, unsigned int nr_cpus,
			    uint16_t *entries)
{
	uint8_t ioapic_id = (uint8_t)nr_cpus;	/* first id after the CPUs */

	for (unsigned int i = 0; i < nr_cpus; i++) {
		struct mpc_cpu cpu = {
			.type = MP_PROCESSOR,
			.apicid = (uint8_t)i,
			.apicver = MP_APIC_VERSION,
			.cpuflag = CPU_ENABLED | (i == 0 ? CPU_BOOTPROCESSOR : 0),
			.cpufeature = MP_CPU_SIGNATURE,
			.featureflag = MP_CPU_FEATURES,
		};

		pos = fwtable_put(pos, &cpu, sizeof(cpu));
		(*entries)++;
	}

	pos = put_bus(pos, BUS_ID_PCI, "PCI   ");
	pos = put_bus(pos, BUS_ID_ISA, "ISA   ");
	*entries += MP_NR_BUSES;

	{
		struct mpc_ioapic io = {
			.type = MP_IOAPIC,
			.apicid = ioapic_id,
			.apicver = MP_IOAPIC_VERSION,
			.flags = MPC_APIC_USABLE,
			.apicaddr = MPTABLE_IOAPIC_ADDR,
		};

		pos = fwtable_put(pos, &io, sizeof(io));
		(*entries)++;
	}

	for (uint8_t irq = 0; irq < MP_ISA_IRQS; irq++) {
		pos = put_src(pos, MP_INTSRC, MP_INT, irq, ioapic_id, irq);
		(*entries)++;
	}

	/* Virtual wire: the 8259 output on LINT0, NMI on LINT1, every LAPIC. */
	pos = put_src(pos, MP_LINTSRC, MP_EXTINT, 0, MP_APIC_ALL, 0);
	pos = put_src(pos, MP_LINTSRC, MP_NMI, 0, MP_APIC_ALL, 1);
	*entries += MP_NR_LINTS;
	return pos;
}

long mptable_write(void *dst, size_t room, uint32_t gpa, unsigned int nr_cpus)
{
	size_t size = mptable_size(nr_cpus);
	uint8_t *base = dst, *pos;
	struct mpf_intel mpf;
	struct mpc_table mpc;
	uint16_t entries = 0;

	if (!dst || nr_cpus < 1 || nr_cpus > MPTABLE_MAX_CPUS || (gpa & 15))
		return -EINVAL;
	if (room < size || (uint64_t)gpa + size > 0x100000000ull)
		return -ENOSPC;

	memset(dst, 0, size);
	pos = base + sizeof(mpf) + sizeof(mpc);	/* header goes in last */

	pos = put_entries(pos, nr_cpus, &entries);

	memset(&mpc, 0, sizeof(mpc));
	memcpy(mpc.signature, "PCMP", 4);
	mpc.length = (uint16_t)(pos - base - sizeof(mpf));
	mpc.spec = MPC_SPEC_REV;
	memcpy(mpc.oem, "LIBVMM  ", sizeof(mpc.oem));
	memcpy(mpc.productid, "000000000000", sizeof(mpc.productid));
	mpc.oemcount = entries;
	mpc.lapic = MPTABLE_LAPIC_ADDR;
	fwtable_put(base + sizeof(mpf), &mpc, sizeof(mpc));
	/* The checksum covers the whole base table, entries included. */
	mpc.checksum = fwtable_checksum(base + sizeof(mpf), mpc.length);
	fwtable_put(base + sizeof(mpf), &mpc, sizeof(mpc));

	memset(&mpf, 0, sizeof(mpf));
	memcpy(mpf.signature, "_MP_", 4);
	mpf.physptr = gpa + (uint32_t)sizeof(mpf);
	mpf.length = 1;
	mpf.specification = MPC_SPEC_REV;
	mpf.checksum = fwtable_checksum(&mpf, sizeof(mpf));
	fwtable_put(base, &mpf, sizeof(mpf));

	return (long)(pos - base);
}
