/* SPDX-License-Identifier: MIT */
/* The arm64 machine's device tree (see fdt.h). */
#include <errno.h>
#include <libfdt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arm64/fdt.h"

/* Phandles of the nodes others point at. */
enum { PHANDLE_GIC = 1, PHANDLE_ITS = 2, PHANDLE_APB_PCLK = 3, PHANDLE_GPIO = 4 };

/* GIC interrupt specifier: type, number, flags (bindings/interrupt-
 * controller/arm,gic-v3.yaml).  PPI flags carry no CPU mask on GICv3. */
#define GIC_SPI 0
#define GIC_PPI 1
#define IRQ_TYPE_EDGE_RISING 1
#define IRQ_TYPE_LEVEL_HIGH 4

/* include/uapi/linux/input-event-codes.h; GPIO flags: active high. */
#define KEY_POWER 116
#define GPIO_ACTIVE_HIGH 0
/* The fixed clock the AMBA bus enables for a PrimeCell (any rate: the
 * PL061 has no divisor). */
#define APB_PCLK_HZ 24000000u

/* PCI address space code in the phys.hi cell (bindings/pci/pci.txt):
 * 32-bit memory space, not prefetchable. */
#define PCI_SPACE_MEM32 0x02000000u

#define MPIDR_AFF3 (0xffull << 32)
#define MPIDR_AFF_MASK 0xff00ffffffull

uint64_t arm64_fdt_default_mpidr(unsigned int index)
{
	return (uint64_t)(index & 0xf) | (uint64_t)((index >> 4) & 0xff) << 8 |
	       (uint64_t)((index >> 12) & 0xff) << 16;
}

static bool range_ok(const struct arm64_fdt_range *r)
{
	return r->size && r->base + r->size > r->base;
}

static bool overlap(const struct arm64_fdt_range *a,
		    const struct arm64_fdt_range *b)
{
	return a->base < b->base + b->size && b->base < a->base + a->size;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* No two vCPUs with one MPIDR (as the tree says it: affinity bits only,
 * Aff3 already refused): their cpu nodes would share a name, and Linux
 * drops a CPU whose MPIDR it has seen ("Duplicate MPIDRs"). */
static bool mpidrs_unique(const struct arm64_fdt_config *c)
{
	uint32_t aff[ARM64_FDT_MAX_CPUS];

	if (!c->mpidr) /* KVM's default numbering: distinct below 4096 */
		return true;
	for (unsigned int i = 0; i < c->nr_cpus; i++)
		aff[i] = (uint32_t)(c->mpidr[i] & MPIDR_AFF_MASK);
	qsort(aff, c->nr_cpus, sizeof(aff[0]), cmp_u32);
	for (unsigned int i = 1; i < c->nr_cpus; i++)
		if (aff[i] == aff[i - 1])
			return false;
	return true;
}

static bool config_ok(const struct arm64_fdt_config *c)
{
	const struct arm64_fdt_range *r[] = { &c->ram, &c->gicd, &c->gicr,
					      &c->its, &c->uart, &c->ecam,
					      &c->pci_mmio };

	if (!c->nr_cpus || c->nr_cpus > ARM64_FDT_MAX_CPUS)
		return false;
	if (c->gpio.size) {
		if (!range_ok(&c->gpio) || c->power_key_line > 7)
			return false;
		for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
			if (overlap(&c->gpio, r[i]))
				return false;
	}
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		if (!range_ok(r[i]))
			return false;
		for (size_t j = 0; j < i; j++)
			if (overlap(r[i], r[j]))
				return false;
	}
	/* One ECAM bus is 1 MiB (32 devices x 8 functions x 4 KiB). */
	if (c->last_bus > 255 || c->ecam.size < ((uint64_t)c->last_bus + 1) << 20)
		return false;
	if (c->initrd.size && (!range_ok(&c->initrd) ||
			       c->initrd.base < c->ram.base ||
			       c->initrd.base + c->initrd.size > c->ram.base + c->ram.size))
		return false;
	for (unsigned int i = 0; c->mpidr && i < c->nr_cpus; i++)
		if (c->mpidr[i] & MPIDR_AFF3)
			return false;
	return mpidrs_unique(c);
}

/* reg = <base size> with #address-cells = #size-cells = 2. */
static int prop_reg(void *fdt, const struct arm64_fdt_range *const *r, int n)
{
	fdt64_t v[8];

	for (int i = 0; i < n; i++) {
		v[2 * i] = cpu_to_fdt64(r[i]->base);
		v[2 * i + 1] = cpu_to_fdt64(r[i]->size);
	}
	return fdt_property(fdt, "reg", v, (int)(n * 2 * sizeof(v[0])));
}

static int prop_cells(void *fdt, const char *name, const uint32_t *c, int n)
{
	fdt32_t v[16];

	for (int i = 0; i < n; i++)
		v[i] = cpu_to_fdt32(c[i]);
	return fdt_property(fdt, name, v, (int)(n * sizeof(v[0])));
}

/* Each step returns a libfdt error (< 0) or 0; the first one stops the
 * build (FDT_ERR_NOSPACE: the buffer is too small). */
#define TRY(x)                      \
	do {                        \
		int r_ = (x);       \
		if (r_ < 0)         \
			return r_;  \
	} while (0)

static int node_name(char *buf, size_t len, const char *name, uint64_t addr)
{
	int n = snprintf(buf, len, "%s@%llx", name, (unsigned long long)addr);

	return n < 0 || (size_t)n >= len ? -FDT_ERR_BADVALUE : 0;
}

static int write_chosen(void *fdt, const struct arm64_fdt_config *c)
{
	char path[48];

	TRY(fdt_begin_node(fdt, "chosen"));
	if (c->cmdline)
		TRY(fdt_property_string(fdt, "bootargs", c->cmdline));
	if (c->initrd.size) {
		TRY(fdt_property_u64(fdt, "linux,initrd-start", c->initrd.base));
		TRY(fdt_property_u64(fdt, "linux,initrd-end",
				     c->initrd.base + c->initrd.size));
	}
	TRY(node_name(path, sizeof(path), "/uart", c->uart.base));
	TRY(fdt_property_string(fdt, "stdout-path", path));
	return fdt_end_node(fdt);
}

static int write_cpus(void *fdt, const struct arm64_fdt_config *c)
{
	char name[32];

	TRY(fdt_begin_node(fdt, "cpus"));
	TRY(fdt_property_cell(fdt, "#address-cells", 1));
	TRY(fdt_property_cell(fdt, "#size-cells", 0));
	for (unsigned int i = 0; i < c->nr_cpus; i++) {
		uint64_t mpidr = (c->mpidr ? c->mpidr[i] : arm64_fdt_default_mpidr(i)) &
				 MPIDR_AFF_MASK;

		TRY(node_name(name, sizeof(name), "cpu", mpidr));
		TRY(fdt_begin_node(fdt, name));
		TRY(fdt_property_string(fdt, "device_type", "cpu"));
		TRY(fdt_property_string(fdt, "compatible", "arm,arm-v8"));
		/* Secondaries start through PSCI CPU_ON (KVM's in-kernel
		 * PSCI); they wait powered off until then. */
		TRY(fdt_property_string(fdt, "enable-method", "psci"));
		TRY(fdt_property_cell(fdt, "reg", (uint32_t)mpidr));
		TRY(fdt_end_node(fdt));
	}
	return fdt_end_node(fdt);
}

static int write_gic(void *fdt, const struct arm64_fdt_config *c)
{
	static const char its_compat[] = "arm,gic-v3-its";
	const struct arm64_fdt_range *gic_reg[] = { &c->gicd, &c->gicr };
	const struct arm64_fdt_range *its_reg[] = { &c->its };
	char name[48];

	TRY(node_name(name, sizeof(name), "intc", c->gicd.base));
	TRY(fdt_begin_node(fdt, name));
	TRY(fdt_property_string(fdt, "compatible", "arm,gic-v3"));
	TRY(fdt_property_cell(fdt, "#interrupt-cells", 3));
	TRY(fdt_property(fdt, "interrupt-controller", NULL, 0));
	TRY(prop_reg(fdt, gic_reg, 2));
	TRY(fdt_property_cell(fdt, "#redistributor-regions", 1));
	TRY(fdt_property_cell(fdt, "#address-cells", 2));
	TRY(fdt_property_cell(fdt, "#size-cells", 2));
	TRY(fdt_property(fdt, "ranges", NULL, 0));
	TRY(fdt_property_cell(fdt, "phandle", PHANDLE_GIC));

	TRY(node_name(name, sizeof(name), "its", c->its.base));
	TRY(fdt_begin_node(fdt, name));
	TRY(fdt_property(fdt, "compatible", its_compat, sizeof(its_compat)));
	TRY(fdt_property(fdt, "msi-controller", NULL, 0));
	TRY(fdt_property_cell(fdt, "#msi-cells", 1));
	TRY(prop_reg(fdt, its_reg, 1));
	TRY(fdt_property_cell(fdt, "phandle", PHANDLE_ITS));
	TRY(fdt_end_node(fdt));
	return fdt_end_node(fdt);
}

static int write_timer(void *fdt)
{
	static const uint32_t ppis[] = {
		ARM64_PPI_TIMER_SEC_PHYS, ARM64_PPI_TIMER_PHYS,
		ARM64_PPI_TIMER_VIRT, ARM64_PPI_TIMER_HYP,
	};
	uint32_t irqs[3 * 4];

	for (int i = 0; i < 4; i++) {
		irqs[3 * i] = GIC_PPI;
		irqs[3 * i + 1] = ppis[i];
		irqs[3 * i + 2] = IRQ_TYPE_LEVEL_HIGH;
	}
	TRY(fdt_begin_node(fdt, "timer"));
	TRY(fdt_property_string(fdt, "compatible", "arm,armv8-timer"));
	TRY(prop_cells(fdt, "interrupts", irqs, 12));
	TRY(fdt_property(fdt, "always-on", NULL, 0));
	return fdt_end_node(fdt);
}

static int write_uart(void *fdt, const struct arm64_fdt_config *c)
{
	const struct arm64_fdt_range *reg[] = { &c->uart };
	const uint32_t irq[] = { GIC_SPI, c->uart_spi, IRQ_TYPE_LEVEL_HIGH };
	char name[48];

	TRY(node_name(name, sizeof(name), "uart", c->uart.base));
	TRY(fdt_begin_node(fdt, name));
	TRY(fdt_property_string(fdt, "compatible", "ns16550a"));
	TRY(prop_reg(fdt, reg, 1));
	TRY(prop_cells(fdt, "interrupts", irq, 3));
	TRY(fdt_property_cell(fdt, "clock-frequency", c->uart_clock_hz));
	return fdt_end_node(fdt);
}

/* A PL061 (an AMBA PrimeCell: the bus matches it by the ID registers
 * once its "apb_pclk" is on) and the gpio-keys power key on one of its
 * lines: Linux's gpio-keys takes both edges, press and release. */
static int write_gpio(void *fdt, const struct arm64_fdt_config *c)
{
	static const char compat[] = "arm,pl061\0arm,primecell";
	const struct arm64_fdt_range *reg[] = { &c->gpio };
	const uint32_t irq[] = { GIC_SPI, c->gpio_spi, IRQ_TYPE_LEVEL_HIGH };
	const uint32_t gpios[] = { PHANDLE_GPIO, c->power_key_line,
				   GPIO_ACTIVE_HIGH };
	char name[48];

	TRY(fdt_begin_node(fdt, "apb-pclk"));
	TRY(fdt_property_string(fdt, "compatible", "fixed-clock"));
	TRY(fdt_property_cell(fdt, "#clock-cells", 0));
	TRY(fdt_property_cell(fdt, "clock-frequency", APB_PCLK_HZ));
	TRY(fdt_property_string(fdt, "clock-output-names", "clk24mhz"));
	TRY(fdt_property_cell(fdt, "phandle", PHANDLE_APB_PCLK));
	TRY(fdt_end_node(fdt));

	TRY(node_name(name, sizeof(name), "pl061", c->gpio.base));
	TRY(fdt_begin_node(fdt, name));
	TRY(fdt_property(fdt, "compatible", compat, sizeof(compat)));
	TRY(prop_reg(fdt, reg, 1));
	TRY(prop_cells(fdt, "interrupts", irq, 3));
	TRY(fdt_property(fdt, "gpio-controller", NULL, 0));
	TRY(fdt_property_cell(fdt, "#gpio-cells", 2));
	TRY(fdt_property_cell(fdt, "clocks", PHANDLE_APB_PCLK));
	TRY(fdt_property_string(fdt, "clock-names", "apb_pclk"));
	TRY(fdt_property_cell(fdt, "phandle", PHANDLE_GPIO));
	TRY(fdt_end_node(fdt));

	TRY(fdt_begin_node(fdt, "gpio-keys"));
	TRY(fdt_property_string(fdt, "compatible", "gpio-keys"));
	TRY(fdt_begin_node(fdt, "poweroff"));
	TRY(fdt_property_string(fdt, "label", "GPIO Key Poweroff"));
	TRY(fdt_property_cell(fdt, "linux,code", KEY_POWER));
	TRY(prop_cells(fdt, "gpios", gpios, 3));
	TRY(fdt_end_node(fdt));
	return fdt_end_node(fdt);
}

static int write_pci(void *fdt, const struct arm64_fdt_config *c)
{
	const struct arm64_fdt_range ecam = {
		c->ecam.base, ((uint64_t)c->last_bus + 1) << 20,
	};
	const struct arm64_fdt_range *reg[] = { &ecam };
	const uint32_t bus_range[] = { 0, c->last_bus };
	/* <phys.hi phys.mid phys.lo  cpu(2)  size(2)>: the window at the
	 * same address on both sides. */
	const uint32_t ranges[] = {
		PCI_SPACE_MEM32,
		(uint32_t)(c->pci_mmio.base >> 32), (uint32_t)c->pci_mmio.base,
		(uint32_t)(c->pci_mmio.base >> 32), (uint32_t)c->pci_mmio.base,
		(uint32_t)(c->pci_mmio.size >> 32), (uint32_t)c->pci_mmio.size,
	};
	/* Every requester ID (bus/device/function) is the ITS device ID of
	 * the same number: <rid-base &its msi-base length>. */
	const uint32_t msi_map[] = { 0, PHANDLE_ITS, 0, 0x10000 };
	char name[48];

	TRY(node_name(name, sizeof(name), "pcie", c->ecam.base));
	TRY(fdt_begin_node(fdt, name));
	TRY(fdt_property_string(fdt, "compatible", "pci-host-ecam-generic"));
	TRY(fdt_property_string(fdt, "device_type", "pci"));
	TRY(fdt_property_cell(fdt, "#address-cells", 3));
	TRY(fdt_property_cell(fdt, "#size-cells", 2));
	TRY(prop_reg(fdt, reg, 1));
	TRY(prop_cells(fdt, "bus-range", bus_range, 2));
	TRY(prop_cells(fdt, "ranges", ranges, 7));
	TRY(prop_cells(fdt, "msi-map", msi_map, 4));
	TRY(fdt_property_cell(fdt, "linux,pci-domain", 0));
	TRY(fdt_property(fdt, "dma-coherent", NULL, 0));
	return fdt_end_node(fdt);
}

static int write_tree(void *fdt, size_t size, const struct arm64_fdt_config *c)
{
	const struct arm64_fdt_range *ram[] = { &c->ram };
	char name[48];

	TRY(fdt_create(fdt, (int)size));
	TRY(fdt_finish_reservemap(fdt));
	TRY(fdt_begin_node(fdt, ""));
	TRY(fdt_property_string(fdt, "compatible", "linux,dummy-virt"));
	TRY(fdt_property_string(fdt, "model", "libvmm arm64"));
	TRY(fdt_property_cell(fdt, "#address-cells", 2));
	TRY(fdt_property_cell(fdt, "#size-cells", 2));
	TRY(fdt_property_cell(fdt, "interrupt-parent", PHANDLE_GIC));

	TRY(write_chosen(fdt, c));
	TRY(node_name(name, sizeof(name), "memory", c->ram.base));
	TRY(fdt_begin_node(fdt, name));
	TRY(fdt_property_string(fdt, "device_type", "memory"));
	TRY(prop_reg(fdt, ram, 1));
	TRY(fdt_end_node(fdt));
	TRY(write_cpus(fdt, c));
	/* PSCI 0.2+ (KVM_ARM_VCPU_PSCI_0_2): function IDs are the
	 * standard ones, so no cpu_on/cpu_off properties. */
	TRY(fdt_begin_node(fdt, "psci"));
	{
		static const char compat[] = "arm,psci-1.0\0arm,psci-0.2";

		TRY(fdt_property(fdt, "compatible", compat, sizeof(compat)));
	}
	TRY(fdt_property_string(fdt, "method", "hvc"));
	TRY(fdt_end_node(fdt));
	TRY(write_gic(fdt, c));
	TRY(write_timer(fdt));
	TRY(write_uart(fdt, c));
	TRY(write_pci(fdt, c));
	if (c->gpio.size)
		TRY(write_gpio(fdt, c));
	TRY(fdt_end_node(fdt));
	return fdt_finish(fdt);
}

long arm64_fdt_write(void *buf, size_t size, const struct arm64_fdt_config *c)
{
	int ret;

	if (!buf || !c || !config_ok(c))
		return -EINVAL;
	if (size > ARM64_FDT_MAX_SIZE)
		size = ARM64_FDT_MAX_SIZE;
	ret = write_tree(buf, size, c);
	if (ret == -FDT_ERR_NOSPACE)
		return -ENOSPC;
	if (ret < 0)
		return -EINVAL;
	return (long)fdt_totalsize(buf);
}
