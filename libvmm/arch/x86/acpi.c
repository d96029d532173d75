/* SPDX-License-Identifier: MIT */
/*
 * ACPI 6.0 tables, written the way a firmware would leave them in the BIOS
 * area: RSDP -> XSDT -> {FADT -> {FACS, DSDT}, MADT}.  No RSDT: every guest
 * we boot understands a revision 2 RSDP, and Linux and ACPICA take the XSDT
 * whenever one is present.
 *
 * Layout at @gpa (offsets are fixed up to the DSDT, whose size only
 * depends on whether there is a 64-bit MMIO window; the MADT, whose size
 * grows with the vCPUs, comes last):
 *
 *     0  RSDP  36 bytes
 *    48  XSDT  52 bytes (2 entries)
 *   128  FACS  64 bytes (64-byte aligned, as the spec requires)
 *   192  FADT  276 bytes
 *   480  DSDT  244 bytes, 290 with a 64-bit MMIO window
 *   ...  MADT  44 + 8 per xAPIC vCPU + 16 per x2APIC vCPU + 28 (+ 12)
 *
 * Interrupt routing is the same as the MP table's (mptable.c): KVM's
 * IOAPIC connects GSI i to pin i and the in-kernel PIT raises GSI 0, so
 * there is no override for IRQ 0; the only override says the SCI is
 * level-triggered, active high, as the ACPI spec wants for a shareable SCI.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "util/compiler.h"
#include "x86/acpi.h"
#include "x86/fwtable.h"
#include "x86/aml.h"

/* Tables are assembled in packed host structs: the host must be x86's
 * byte order.  The AML (aml.c) is written byte by byte instead. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "ACPI tables are little-endian");

#define ACPI_OEM_ID "LIBVMM"
#define ACPI_OEM_TABLE_ID "LIBVMM  "
#define ACPI_OEM_REVISION 1
#define ACPI_CREATOR_ID "LVMM"
#define ACPI_CREATOR_REVISION 1

#define ISA_IRQS 16
#define FOUR_GIB 0x100000000ull

struct acpi_rsdp {
	char signature[8];		/* "RSD PTR " */
	uint8_t checksum;		/* first 20 bytes (the ACPI 1.0 part) */
	char oem_id[6];
	uint8_t revision;		/* 2: the fields below exist */
	uint32_t rsdt_address;
	uint32_t length;
	uint64_t xsdt_address;
	uint8_t ext_checksum;		/* all 36 bytes */
	uint8_t reserved[3];
} __attribute__((packed));

struct acpi_sdt_header {
	char signature[4];
	uint32_t length;		/* header included */
	uint8_t revision;
	uint8_t checksum;		/* the whole table sums to 0 */
	char oem_id[6];
	char oem_table_id[8];
	uint32_t oem_revision;
	char creator_id[4];
	uint32_t creator_revision;
} __attribute__((packed));

/* Generic Address Structure */
struct acpi_gas {
	uint8_t space_id;
	uint8_t bit_width;
	uint8_t bit_offset;
	uint8_t access_size;
	uint64_t address;
} __attribute__((packed));

#define GAS_SYSTEM_IO 1
#define GAS_ACCESS_UNDEFINED 0		/* legacy: the bit width says it */
#define GAS_ACCESS_BYTE 1

struct acpi_facs {
	char signature[4];		/* "FACS" */
	uint32_t length;
	uint32_t hardware_signature;
	uint32_t firmware_waking_vector;
	uint32_t global_lock;
	uint32_t flags;
	uint64_t x_firmware_waking_vector;
	uint8_t version;
	uint8_t reserved1[3];
	uint32_t ospm_flags;
	uint8_t reserved2[24];
} __attribute__((packed));

struct acpi_fadt {
	struct acpi_sdt_header h;
	uint32_t firmware_ctrl;
	uint32_t dsdt;
	uint8_t reserved0;		/* INT_MODEL in ACPI 1.0 */
	uint8_t preferred_pm_profile;
	uint16_t sci_int;
	uint32_t smi_cmd;
	uint8_t acpi_enable;
	uint8_t acpi_disable;
	uint8_t s4bios_req;
	uint8_t pstate_cnt;
	uint32_t pm1a_evt_blk;
	uint32_t pm1b_evt_blk;
	uint32_t pm1a_cnt_blk;
	uint32_t pm1b_cnt_blk;
	uint32_t pm2_cnt_blk;
	uint32_t pm_tmr_blk;
	uint32_t gpe0_blk;
	uint32_t gpe1_blk;
	uint8_t pm1_evt_len;
	uint8_t pm1_cnt_len;
	uint8_t pm2_cnt_len;
	uint8_t pm_tmr_len;
	uint8_t gpe0_blk_len;
	uint8_t gpe1_blk_len;
	uint8_t gpe1_base;
	uint8_t cst_cnt;
	uint16_t p_lvl2_lat;
	uint16_t p_lvl3_lat;
	uint16_t flush_size;
	uint16_t flush_stride;
	uint8_t duty_offset;
	uint8_t duty_width;
	uint8_t day_alrm;
	uint8_t mon_alrm;
	uint8_t century;
	uint16_t iapc_boot_arch;
	uint8_t reserved1;
	uint32_t flags;
	struct acpi_gas reset_reg;
	uint8_t reset_value;
	uint16_t arm_boot_arch;
	uint8_t minor_version;
	uint64_t x_firmware_ctrl;
	uint64_t x_dsdt;
	struct acpi_gas x_pm1a_evt_blk;
	struct acpi_gas x_pm1b_evt_blk;
	struct acpi_gas x_pm1a_cnt_blk;
	struct acpi_gas x_pm1b_cnt_blk;
	struct acpi_gas x_pm2_cnt_blk;
	struct acpi_gas x_pm_tmr_blk;
	struct acpi_gas x_gpe0_blk;
	struct acpi_gas x_gpe1_blk;
	struct acpi_gas sleep_control_reg;
	struct acpi_gas sleep_status_reg;
	uint64_t hypervisor_vendor_id;
} __attribute__((packed));

#define FADT_REVISION 6
#define FADT_MINOR_VERSION 0

/* IAPC_BOOT_ARCH */
#define BOOT_ARCH_8042 (1u << 1)
#define BOOT_ARCH_NO_VGA (1u << 2)

/* FADT flags */
#define FADT_WBINVD (1u << 0)
#define FADT_PROC_C1 (1u << 2)
#define FADT_SLP_BUTTON (1u << 5)	/* set: no fixed-feature sleep button */
#define FADT_RESET_REG_SUP (1u << 10)

/* P_LVLx_LAT above these values: the state is not supported. */
#define FADT_NO_C2_LAT 101
#define FADT_NO_C3_LAT 1001

#define PM1_EVT_LEN 4			/* PM1_STS + PM1_EN */
#define PM1_CNT_LEN 2

struct acpi_madt {
	struct acpi_sdt_header h;
	uint32_t lapic_addr;
	uint32_t flags;
} __attribute__((packed));

#define MADT_REVISION 5
#define MADT_PCAT_COMPAT 1		/* dual 8259s present: mask them */

enum {
	MADT_LAPIC = 0,
	MADT_IOAPIC = 1,
	MADT_ISO = 2,
	MADT_LAPIC_NMI = 4,
	MADT_X2APIC = 9,
	MADT_X2APIC_NMI = 10,
};

struct madt_lapic {
	uint8_t type;
	uint8_t length;
	uint8_t uid;
	uint8_t apic_id;
	uint32_t flags;
} __attribute__((packed));

struct madt_ioapic {
	uint8_t type;
	uint8_t length;
	uint8_t id;
	uint8_t reserved;
	uint32_t address;
	uint32_t gsi_base;
} __attribute__((packed));

struct madt_iso {
	uint8_t type;
	uint8_t length;
	uint8_t bus;			/* 0: ISA */
	uint8_t source;			/* ISA IRQ */
	uint32_t gsi;
	uint16_t flags;
} __attribute__((packed));

struct madt_lapic_nmi {
	uint8_t type;
	uint8_t length;
	uint8_t uid;
	uint16_t flags;
	uint8_t lint;
} __attribute__((packed));

struct madt_x2apic {
	uint8_t type;
	uint8_t length;
	uint16_t reserved;
	uint32_t x2apic_id;
	uint32_t flags;
	uint32_t uid;
} __attribute__((packed));

struct madt_x2apic_nmi {
	uint8_t type;
	uint8_t length;
	uint16_t flags;
	uint32_t uid;
	uint8_t lint;
	uint8_t reserved[3];
} __attribute__((packed));

#define MADT_ENABLED 1
/* MPS INTI flags: polarity bits 1:0 = 01 active high, trigger bits 3:2 =
 * 11 level. */
#define MADT_INTI_HIGH_LEVEL 0x000D
#define MADT_ALL_XAPIC_UIDS 0xFF
#define MADT_ALL_X2APIC_UIDS 0xFFFFFFFFu
#define MADT_NMI_LINT 1			/* NMI is wired to LINT1 on every LAPIC */
/*
 * The spec wants the xAPIC entry for APIC IDs below 255 and the x2APIC one
 * from 255 up (255 is the xAPIC broadcast id, so it cannot be in type 0).
 */
#define MADT_FIRST_X2APIC_ID 255u

#define FACS_VERSION 2
#define XSDT_ENTRIES 2			/* FADT, MADT */
#define DSDT_REVISION 2			/* 64-bit AML integers */

_Static_assert(sizeof(struct acpi_rsdp) == 36, "RSDP layout");
_Static_assert(sizeof(struct acpi_sdt_header) == 36, "SDT header layout");
_Static_assert(sizeof(struct acpi_gas) == 12, "GAS layout");
_Static_assert(sizeof(struct acpi_facs) == 64, "FACS layout");
_Static_assert(offsetof(struct acpi_facs, version) == 32, "FACS layout");
/* The FADT offsets of the ACPI 6.0 spec, table 5-33. */
_Static_assert(offsetof(struct acpi_fadt, firmware_ctrl) == 36, "FADT");
_Static_assert(offsetof(struct acpi_fadt, dsdt) == 40, "FADT");
_Static_assert(offsetof(struct acpi_fadt, preferred_pm_profile) == 45, "FADT");
_Static_assert(offsetof(struct acpi_fadt, sci_int) == 46, "FADT");
_Static_assert(offsetof(struct acpi_fadt, smi_cmd) == 48, "FADT");
_Static_assert(offsetof(struct acpi_fadt, pm1a_evt_blk) == 56, "FADT");
_Static_assert(offsetof(struct acpi_fadt, pm1a_cnt_blk) == 64, "FADT");
_Static_assert(offsetof(struct acpi_fadt, pm_tmr_blk) == 76, "FADT");
_Static_assert(offsetof(struct acpi_fadt, pm1_evt_len) == 88, "FADT");
_Static_assert(offsetof(struct acpi_fadt, pm1_cnt_len) == 89, "FADT");
_Static_assert(offsetof(struct acpi_fadt, p_lvl2_lat) == 96, "FADT");
_Static_assert(offsetof(struct acpi_fadt, century) == 108, "FADT");
_Static_assert(offsetof(struct acpi_fadt, iapc_boot_arch) == 109, "FADT");
_Static_assert(offsetof(struct acpi_fadt, flags) == 112, "FADT");
_Static_assert(offsetof(struct acpi_fadt, reset_reg) == 116, "FADT");
_Static_assert(offsetof(struct acpi_fadt, reset_value) == 128, "FADT");
_Static_assert(offsetof(struct acpi_fadt, arm_boot_arch) == 129, "FADT");
_Static_assert(offsetof(struct acpi_fadt, minor_version) == 131, "FADT");
_Static_assert(offsetof(struct acpi_fadt, x_firmware_ctrl) == 132, "FADT");
_Static_assert(offsetof(struct acpi_fadt, x_dsdt) == 140, "FADT");
_Static_assert(offsetof(struct acpi_fadt, x_pm1a_evt_blk) == 148, "FADT");
_Static_assert(offsetof(struct acpi_fadt, x_pm1a_cnt_blk) == 172, "FADT");
_Static_assert(offsetof(struct acpi_fadt, x_pm_tmr_blk) == 208, "FADT");
_Static_assert(offsetof(struct acpi_fadt, sleep_control_reg) == 244, "FADT");
_Static_assert(offsetof(struct acpi_fadt, sleep_status_reg) == 256, "FADT");
_Static_assert(offsetof(struct acpi_fadt, hypervisor_vendor_id) == 268,
	       "FADT");
_Static_assert(sizeof(struct acpi_fadt) == 276, "FADT layout");
_Static_assert(sizeof(struct acpi_madt) == 44, "MADT layout");
_Static_assert(sizeof(struct madt_lapic) == 8, "MADT LAPIC layout");
_Static_assert(sizeof(struct madt_ioapic) == 12, "MADT IOAPIC layout");
_Static_assert(sizeof(struct madt_iso) == 10, "MADT ISO layout");
_Static_assert(sizeof(struct madt_lapic_nmi) == 6, "MADT NMI layout");
_Static_assert(sizeof(struct madt_x2apic) == 16, "MADT x2APIC layout");
_Static_assert(sizeof(struct madt_x2apic_nmi) == 12, "MADT x2APIC NMI");

/* Fixed part of the layout (see the top of the file). */
#define RSDP_OFF 0
#define XSDT_OFF ALIGN_UP(RSDP_OFF + sizeof(struct acpi_rsdp), 16)
#define XSDT_SIZE (sizeof(struct acpi_sdt_header) + XSDT_ENTRIES * 8)
#define FACS_OFF ALIGN_UP(XSDT_OFF + XSDT_SIZE, 64)
#define FADT_OFF ALIGN_UP(FACS_OFF + sizeof(struct acpi_facs), 16)
#define DSDT_OFF ALIGN_UP(FADT_OFF + sizeof(struct acpi_fadt), 16)

/*
 * Scratch space the DSDT is assembled in before its size is known: the
 * PkgLength in front of each scope takes 1 to 4 bytes depending on what
 * follows.  The DSDT needs at most 290 bytes; running out is a bug, caught
 * by the unit test through acpi_size() == 0.
 */
#define DSDT_MAX 512
#define CRS_MAX 160			/* largest _CRS buffer: 130 bytes */

#define MADT_SIZE_MAX                                                        \
	(sizeof(struct acpi_madt) +                                          \
	 MADT_FIRST_X2APIC_ID * sizeof(struct madt_lapic) +                  \
	 (ACPI_MAX_CPUS - MADT_FIRST_X2APIC_ID) * sizeof(struct madt_x2apic) + \
	 sizeof(struct madt_ioapic) + sizeof(struct madt_iso) +              \
	 sizeof(struct madt_lapic_nmi) + sizeof(struct madt_x2apic_nmi))

/* Everything fits below the MP table for the most vCPUs we support. */
_Static_assert(ALIGN_UP(DSDT_OFF + DSDT_MAX, 16) + MADT_SIZE_MAX <=
	       ACPI_TABLES_ROOM, "ACPI tables outgrow their area");
_Static_assert((ACPI_TABLES_GPA & 15) == 0, "RSDP must be 16-byte aligned");

/* ---- DSDT ---- */

/* Config mechanism #1 ports, the only configuration access we offer. */
#define PCI_CONF1_PORT 0xCF8
#define PCI_CONF1_LEN 8
#define COM_LEN 8

/*
 * The host bridge: bus 0 only, and the windows a guest may assign BARs
 * from.  The I/O windows are all of the port space except the CF8-CFF
 * config ports, which the bridge itself consumes; ISA devices (COM1, the
 * PIT, ...) sit inside the first window, as they do on a PC.
 */
static void dsdt_pci0(struct aml *a, const struct acpi_config *cfg)
{
	uint8_t crs_buf[CRS_MAX];
	struct aml crs = { .buf = crs_buf, .cap = sizeof(crs_buf) };
	size_t dev;

	aml_res_word(&crs, AML_RES_TYPE_BUS, 0, 0, 1);
	aml_res_io(&crs, PCI_CONF1_PORT, 1, PCI_CONF1_LEN);
	aml_res_word(&crs, AML_RES_TYPE_IO, AML_RES_IO_ENTIRE_RANGE, 0,
		     PCI_CONF1_PORT);
	aml_res_word(&crs, AML_RES_TYPE_IO, AML_RES_IO_ENTIRE_RANGE,
		     PCI_CONF1_PORT + PCI_CONF1_LEN,
		     0x10000 - (PCI_CONF1_PORT + PCI_CONF1_LEN));
	aml_res_dword_memory(&crs, (uint32_t)cfg->mmio32_base,
			     (uint32_t)cfg->mmio32_size);
	if (cfg->mmio64_size)
		aml_res_qword_memory(&crs, cfg->mmio64_base, cfg->mmio64_size);
	aml_res_end(&crs);

	dev = aml_device_open(a, "PCI0");
	aml_name_eisaid(a, "_HID", "PNP0A08");	/* PCI Express root bridge */
	aml_name_eisaid(a, "_CID", "PNP0A03");	/* ... compatible with PCI */
	aml_name_integer(a, "_UID", 0);
	aml_name_integer(a, "_SEG", 0);
	aml_name_integer(a, "_BBN", 0);
	aml_name_buffer(a, "_CRS", &crs);
	aml_pkg_close(a, dev);
}

static void dsdt_com1(struct aml *a, const struct acpi_config *cfg)
{
	uint8_t crs_buf[CRS_MAX];
	struct aml crs = { .buf = crs_buf, .cap = sizeof(crs_buf) };
	size_t dev;

	aml_res_io(&crs, cfg->com1_port, 1, COM_LEN);
	aml_res_irq_noflags(&crs, cfg->com1_irq);
	aml_res_end(&crs);

	dev = aml_device_open(a, "COM1");
	aml_name_eisaid(a, "_HID", "PNP0501");	/* 16550A-compatible UART */
	aml_name_integer(a, "_UID", 1);
	aml_name_buffer(a, "_CRS", &crs);
	aml_pkg_close(a, dev);
}

/*
 * Builds the whole DSDT, header included (checksum still 0), into @buf.
 * Returns its length, or -EOVERFLOW if @cap is too small.
 */
static long dsdt_build(uint8_t *buf, size_t cap, const struct acpi_config *cfg)
{
	struct aml a = { .buf = buf, .cap = cap };
	struct acpi_sdt_header h;
	size_t pkg;

	/* Header placeholder; the real one needs the length. */
	memset(&h, 0, sizeof(h));
	aml_put(&a, &h, sizeof(h));

	/*
	 * Name(\_S5_, Package(4) {SLP_TYP a, SLP_TYP b, 0, 0}): what the guest
	 * writes to PM1a_CNT (and the absent PM1b_CNT) to power off.
	 */
	aml_u8(&a, AML_NAME_OP);
	aml_name(&a, "\\_S5_");
	aml_u8(&a, AML_PACKAGE_OP);
	pkg = aml_pkg_open(&a);
	aml_u8(&a, 4);			/* NumElements */
	aml_integer(&a, ACPI_SLP_TYP_S5);
	aml_integer(&a, ACPI_SLP_TYP_S5);
	aml_integer(&a, 0);
	aml_integer(&a, 0);
	aml_pkg_close(&a, pkg);

	aml_u8(&a, AML_SCOPE_OP);
	pkg = aml_pkg_open(&a);
	aml_name(&a, "\\_SB_");
	dsdt_pci0(&a, cfg);
	dsdt_com1(&a, cfg);
	aml_pkg_close(&a, pkg);

	return a.overflow ? -EOVERFLOW : (long)a.len;
}

/* ---- Tables ---- */

static size_t madt_size(unsigned int nr_cpus)
{
	size_t xapic = MIN(nr_cpus, MADT_FIRST_X2APIC_ID);
	size_t x2apic = nr_cpus - xapic;

	return sizeof(struct acpi_madt) + xapic * sizeof(struct madt_lapic) +
	       x2apic * sizeof(struct madt_x2apic) +
	       sizeof(struct madt_ioapic) + sizeof(struct madt_iso) +
	       sizeof(struct madt_lapic_nmi) +
	       (x2apic ? sizeof(struct madt_x2apic_nmi) : 0);
}

static void sdt_header(struct acpi_sdt_header *h, const char *sig,
		       size_t len, uint8_t rev)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->signature, sig, sizeof(h->signature));
	h->length = (uint32_t)len;
	h->revision = rev;
	memcpy(h->oem_id, ACPI_OEM_ID, sizeof(h->oem_id));
	memcpy(h->oem_table_id, ACPI_OEM_TABLE_ID, sizeof(h->oem_table_id));
	h->oem_revision = ACPI_OEM_REVISION;
	memcpy(h->creator_id, ACPI_CREATOR_ID, sizeof(h->creator_id));
	h->creator_revision = ACPI_CREATOR_REVISION;
}

/* Fills in the checksum of the complete table at @table (its checksum
 * byte still 0). */
static void sdt_checksum(uint8_t *table, size_t len)
{
	table[offsetof(struct acpi_sdt_header, checksum)] =
		fwtable_checksum(table, len);
}

static void write_facs(uint8_t *dst)
{
	struct acpi_facs facs;

	/* Nothing to fill in but the identity: no S4BIOS, no waking vector
	 * (no sleep states but S5), the global lock free. */
	memset(&facs, 0, sizeof(facs));
	memcpy(facs.signature, "FACS", 4);
	facs.length = sizeof(facs);
	facs.version = FACS_VERSION;
	fwtable_put(dst, &facs, sizeof(facs));
}

static struct acpi_gas gas_io(uint8_t bit_width, uint8_t access_size,
			      uint16_t port)
{
	struct acpi_gas g = {
		.space_id = GAS_SYSTEM_IO,
		.bit_width = bit_width,
		.access_size = access_size,
		.address = port,
	};

	return g;
}

static void write_fadt(uint8_t *dst, uint32_t gpa, const struct acpi_config *cfg)
{
	struct acpi_fadt f;

	memset(&f, 0, sizeof(f));
	sdt_header(&f.h, "FACP", sizeof(f), FADT_REVISION);
	f.minor_version = FADT_MINOR_VERSION;
	/*
	 * The FACS and DSDT are below 4 GiB.  The FACS goes in the 32-bit
	 * field only (the spec wants X_FIRMWARE_CTRL 0 when FIRMWARE_CTRL is
	 * used); the DSDT in both, as most firmware does, since some OSes only
	 * read X_DSDT from a revision 3+ FADT.
	 */
	f.firmware_ctrl = gpa + (uint32_t)FACS_OFF;
	f.dsdt = gpa + (uint32_t)DSDT_OFF;
	f.x_dsdt = f.dsdt;
	f.sci_int = cfg->sci_irq;
	/* SMI_CMD 0: there is no SMM to hand over from, ACPI mode is on from
	 * the start (PM1_CNT.SCI_EN reads 1). */
	f.smi_cmd = 0;
	f.pm1a_evt_blk = cfg->pm1a_evt_port;
	f.pm1a_cnt_blk = cfg->pm1a_cnt_port;
	f.pm1_evt_len = PM1_EVT_LEN;
	f.pm1_cnt_len = PM1_CNT_LEN;
	/* No P_BLK, so no C2/C3 anyway; say so instead of claiming a 0 us
	 * latency. */
	f.p_lvl2_lat = FADT_NO_C2_LAT;
	f.p_lvl3_lat = FADT_NO_C3_LAT;
	/*
	 * An 8042 is present (the guest keeps its i8042 driver, and its
	 * reboot fallback), VGA is not.  MSI and ASPM stay allowed: virtio-pci
	 * depends on MSI-X.
	 */
	f.iapc_boot_arch = BOOT_ARCH_8042 | BOOT_ARCH_NO_VGA;
	/* Not HW_REDUCED_ACPI: the PM1 blocks above are real.  PWR_BUTTON
	 * (bit 4) clear: the fixed-feature power button is there (PM1
	 * PWRBTN_STS/EN, vmm_shutdown()); no sleep button. */
	f.flags = FADT_WBINVD | FADT_PROC_C1 |
		  FADT_SLP_BUTTON | FADT_RESET_REG_SUP;
	f.reset_reg = gas_io(8, GAS_ACCESS_BYTE, cfg->reset_port);
	f.reset_value = cfg->reset_value;
	/* The extended blocks must agree with the 32-bit ones (address and
	 * bit width = 8 * length), or ACPICA warns and picks one. */
	f.x_pm1a_evt_blk = gas_io(PM1_EVT_LEN * 8, GAS_ACCESS_UNDEFINED,
				  cfg->pm1a_evt_port);
	f.x_pm1a_cnt_blk = gas_io(PM1_CNT_LEN * 8, GAS_ACCESS_UNDEFINED,
				  cfg->pm1a_cnt_port);
	fwtable_put(dst, &f, sizeof(f));
	sdt_checksum(dst, sizeof(f));
}

static void write_dsdt(uint8_t *dst, const uint8_t *aml, size_t len)
{
	struct acpi_sdt_header h;

	memcpy(dst, aml, len);
	sdt_header(&h, "DSDT", len, DSDT_REVISION);
	fwtable_put(dst, &h, sizeof(h));
	sdt_checksum(dst, len);
}

/* The processors' entries of the MADT at @pos; returns the end. */
static uint8_t *madt_put_cpus(uint8_t *pos, unsigned int nr_cpus)
{
	/* Ascending APIC IDs, the boot CPU (0) first: Linux numbers CPUs in
	 * MADT order. */
	for (unsigned int i = 0; i < nr_cpus; i++) {
		if (i < MADT_FIRST_X2APIC_ID) {
			struct madt_lapic e = {
				.type = MADT_LAPIC,
				.length = sizeof(e),
				.uid = (uint8_t)i,
				.apic_id = (uint8_t)i,
				.flags = MADT_ENABLED,
			};

			pos = fwtable_put(pos, &e, sizeof(e));
		} else {
			struct madt_x2apic e = {
				.type = MADT_X2APIC,
				.length = sizeof(e),
				.x2apic_id = i,
				.flags = MADT_ENABLED,
				.uid = i,
			};

			pos = fwtable_put(pos, &e, sizeof(e));
		}
	}
	return pos;
}

/* The interrupt controller and interrupt entries of the MADT at @pos:
 * IOAPIC, the SCI's override, the NMI lines; returns the end. */
static uint8_t *madt_put_interrupts(uint8_t *pos, const struct acpi_config *cfg)
{
	{
		/* Id 0: the reset value of KVM's IOAPIC id register. */
		struct madt_ioapic e = {
			.type = MADT_IOAPIC,
			.length = sizeof(e),
			.id = 0,
			.address = cfg->ioapic_addr,
			.gsi_base = 0,
		};

		pos = fwtable_put(pos, &e, sizeof(e));
	}
	{
		struct madt_iso e = {
			.type = MADT_ISO,
			.length = sizeof(e),
			.bus = 0,
			.source = cfg->sci_irq,
			.gsi = cfg->sci_irq,
			.flags = MADT_INTI_HIGH_LEVEL,
		};

		pos = fwtable_put(pos, &e, sizeof(e));
	}
	{
		struct madt_lapic_nmi e = {
			.type = MADT_LAPIC_NMI,
			.length = sizeof(e),
			.uid = MADT_ALL_XAPIC_UIDS,
			.flags = 0,	/* conforms to the bus */
			.lint = MADT_NMI_LINT,
		};

		pos = fwtable_put(pos, &e, sizeof(e));
	}
	/* The x2APIC processors need their own NMI entry: the xAPIC one's
	 * 8-bit UID cannot name them. */
	if (cfg->nr_cpus > MADT_FIRST_X2APIC_ID) {
		struct madt_x2apic_nmi e = {
			.type = MADT_X2APIC_NMI,
			.length = sizeof(e),
			.flags = 0,
			.uid = MADT_ALL_X2APIC_UIDS,
			.lint = MADT_NMI_LINT,
		};

		pos = fwtable_put(pos, &e, sizeof(e));
	}
	return pos;
}

static void write_madt(uint8_t *dst, const struct acpi_config *cfg)
{
	size_t size = madt_size(cfg->nr_cpus);
	uint8_t *pos = dst + sizeof(struct acpi_madt);
	struct acpi_madt madt;

	pos = madt_put_cpus(pos, cfg->nr_cpus);
	madt_put_interrupts(pos, cfg);
	memset(&madt, 0, sizeof(madt));
	sdt_header(&madt.h, "APIC", size, MADT_REVISION);
	madt.lapic_addr = cfg->lapic_addr;
	madt.flags = MADT_PCAT_COMPAT;
	fwtable_put(dst, &madt, sizeof(madt));
	sdt_checksum(dst, size);
}

static void write_xsdt(uint8_t *dst, uint64_t fadt, uint64_t madt)
{
	struct acpi_sdt_header h;
	uint8_t *pos;

	sdt_header(&h, "XSDT", XSDT_SIZE, 1);
	pos = fwtable_put(dst, &h, sizeof(h));
	pos = fwtable_put(pos, &fadt, sizeof(fadt));
	fwtable_put(pos, &madt, sizeof(madt));
	sdt_checksum(dst, XSDT_SIZE);
}

static void write_rsdp(uint8_t *dst, uint64_t xsdt)
{
	struct acpi_rsdp r;

	memset(&r, 0, sizeof(r));
	memcpy(r.signature, "RSD PTR ", sizeof(r.signature));
	memcpy(r.oem_id, ACPI_OEM_ID, sizeof(r.oem_id));
	r.revision = 2;
	r.rsdt_address = 0;		/* XSDT only */
	r.length = sizeof(r);
	r.xsdt_address = xsdt;
	r.checksum = fwtable_checksum(&r, offsetof(struct acpi_rsdp, length));
	r.ext_checksum = fwtable_checksum(&r, sizeof(r));
	fwtable_put(dst, &r, sizeof(r));
}

static bool config_valid(const struct acpi_config *cfg)
{
	if (cfg->nr_cpus < 1 || cfg->nr_cpus > ACPI_MAX_CPUS)
		return false;
	/* Both are ISA IRQs: the ISO's source and the IRQ descriptor's mask
	 * have room for 0..15 only. */
	if (cfg->sci_irq >= ISA_IRQS || cfg->com1_irq >= ISA_IRQS)
		return false;
	/* A full (not hardware-reduced) FADT must have PM1a blocks. */
	if (!cfg->pm1a_evt_port || !cfg->pm1a_cnt_port)
		return false;
	/* The 32-bit window goes in a DWord descriptor: its end and its
	 * length (so not all 4 GiB) must fit in 32 bits. */
	if (!cfg->mmio32_size || cfg->mmio32_size > UINT32_MAX ||
	    cfg->mmio32_base >= FOUR_GIB ||
	    cfg->mmio32_size > FOUR_GIB - cfg->mmio32_base)
		return false;
	if (cfg->mmio64_size &&
	    cfg->mmio64_size - 1 > UINT64_MAX - cfg->mmio64_base)
		return false;
	return true;
}

/*
 * Builds the DSDT into @dsdt (DSDT_MAX bytes) and works out where the MADT
 * goes and how big everything is.  Returns the DSDT length or -EOVERFLOW.
 */
static long acpi_layout(const struct acpi_config *cfg, uint8_t *dsdt,
			size_t *madt_off, size_t *size)
{
	long dsdt_len = dsdt_build(dsdt, DSDT_MAX, cfg);

	if (dsdt_len < 0)
		return dsdt_len;
	*madt_off = ALIGN_UP(DSDT_OFF + (size_t)dsdt_len, 16);
	*size = *madt_off + madt_size(cfg->nr_cpus);
	return dsdt_len;
}

size_t acpi_size(const struct acpi_config *cfg)
{
	uint8_t dsdt[DSDT_MAX];
	size_t madt_off, size;

	if (!cfg || acpi_layout(cfg, dsdt, &madt_off, &size) < 0)
		return 0;
	return size;
}

long acpi_write(void *dst, size_t room, uint32_t gpa,
		const struct acpi_config *cfg)
{
	uint8_t dsdt[DSDT_MAX];
	uint8_t *base = dst;
	size_t madt_off, size;
	long dsdt_len;

	if (!dst || !cfg || (gpa & 15) || !config_valid(cfg))
		return -EINVAL;
	dsdt_len = acpi_layout(cfg, dsdt, &madt_off, &size);
	if (dsdt_len < 0)
		return dsdt_len;
	/* The FADT and XSDT entries would still reach 64-bit addresses, but
	 * FIRMWARE_CTRL is 32 bits, and a BIOS-area table never is above. */
	if ((uint64_t)gpa + size > FOUR_GIB)
		return -EINVAL;
	if (room < size)
		return -ENOSPC;

	memset(base, 0, size);		/* the padding between the tables */
	write_facs(base + FACS_OFF);
	write_fadt(base + FADT_OFF, gpa, cfg);
	write_dsdt(base + DSDT_OFF, dsdt, (size_t)dsdt_len);
	write_madt(base + madt_off, cfg);
	write_xsdt(base + XSDT_OFF, (uint64_t)gpa + FADT_OFF,
		   (uint64_t)gpa + madt_off);
	write_rsdp(base + RSDP_OFF, (uint64_t)gpa + XSDT_OFF);
	return (long)size;
}
