/* SPDX-License-Identifier: MIT */
/*
 * The arm64 machine's device tree (libvmm/arch/arm64/fdt.c), KVM-free on
 * any host: read back with libfdt node by node, decompiled with dtc
 * (Debian's device-tree-compiler, which also checks unit addresses,
 * phandles and #cells) and compared with the tree written out by hand
 * below, and refused configurations.
 */
#include <check.h>
#include <errno.h>
#include <libfdt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arm64/fdt.h"

#define BUF_SIZE (1u << 20)

/* A small machine, addresses as the arm64 platform lays them out. */
static struct arm64_fdt_config config(unsigned int cpus)
{
	return (struct arm64_fdt_config){
		.nr_cpus = cpus,
		.ram = { 0x80000000ull, 512ull << 20 },
		.cmdline = "console=ttyS0 quiet",
		.initrd = { 0x90000000ull, 0x100000 },
		.gicd = { 0x08000000, 0x10000 },
		.its = { 0x08080000, 0x20000 },
		.gicr = { 0x10000000, 0x20000ull * cpus },
		.uart = { 0x09000000, 0x1000 },
		.uart_spi = 1,
		.uart_clock_hz = 1843200,
		.ecam = { 0x30000000, 0x10000000 },
		.last_bus = 0,
		.pci_mmio = { 0x40000000, 0x40000000 },
		.gpio = { 0x09030000, 0x1000 },
		.gpio_spi = 7,
		.power_key_line = 3,
	};
}

static void *build(const struct arm64_fdt_config *c, long *len)
{
	void *buf = calloc(1, BUF_SIZE);

	ck_assert_ptr_nonnull(buf);
	*len = arm64_fdt_write(buf, BUF_SIZE, c);
	ck_assert_int_gt(*len, 0);
	ck_assert_int_eq(fdt_check_header(buf), 0);
	ck_assert_int_eq((long)fdt_totalsize(buf), *len);
	return buf;
}

static const void *prop(const void *fdt, const char *path, const char *name,
			int *len)
{
	int off = fdt_path_offset(fdt, path);
	const void *p;

	ck_assert_msg(off >= 0, "no node %s", path);
	p = fdt_getprop(fdt, off, name, len);
	ck_assert_msg(p, "no %s in %s", name, path);
	return p;
}

static uint32_t cell(const void *fdt, const char *path, const char *name,
		     int i)
{
	int len;
	const fdt32_t *p = prop(fdt, path, name, &len);

	ck_assert_int_ge(len, (i + 1) * 4);
	return fdt32_ld(&p[i]);
}

static void assert_str(const void *fdt, const char *path, const char *name,
		       const char *want)
{
	int len;
	const char *p = prop(fdt, path, name, &len);

	ck_assert_int_eq(len, (int)strlen(want) + 1);
	ck_assert_str_eq(p, want);
}

START_TEST(nodes_and_properties)
{
	struct arm64_fdt_config c = config(4);
	long len;
	void *fdt = build(&c, &len);
	int n = 0, off, plen;
	const fdt64_t *r64;
	const char *s;

	assert_str(fdt, "/", "compatible", "linux,dummy-virt");
	ck_assert_uint_eq(cell(fdt, "/", "#address-cells", 0), 2);
	ck_assert_uint_eq(cell(fdt, "/", "interrupt-parent", 0),
			  cell(fdt, "/intc@8000000", "phandle", 0));
	/* /chosen: command line, initrd [start, end), console. */
	assert_str(fdt, "/chosen", "bootargs", "console=ttyS0 quiet");
	r64 = prop(fdt, "/chosen", "linux,initrd-start", &plen);
	ck_assert_int_eq(plen, 8);
	ck_assert_uint_eq(fdt64_ld(r64), 0x90000000ull);
	r64 = prop(fdt, "/chosen", "linux,initrd-end", &plen);
	ck_assert_uint_eq(fdt64_ld(r64), 0x90100000ull);
	s = prop(fdt, "/chosen", "stdout-path", &plen);
	ck_assert_int_ge(fdt_path_offset(fdt, s), 0);
	/* Memory. */
	r64 = prop(fdt, "/memory@80000000", "reg", &plen);
	ck_assert_int_eq(plen, 16);
	ck_assert_uint_eq(fdt64_ld(&r64[0]), 0x80000000ull);
	ck_assert_uint_eq(fdt64_ld(&r64[1]), 512ull << 20);
	/* vCPUs: one node each, reg = MPIDR, PSCI to start them. */
	fdt_for_each_subnode(off, fdt, fdt_path_offset(fdt, "/cpus")) {
		const fdt32_t *reg = fdt_getprop(fdt, off, "reg", &plen);

		ck_assert_ptr_nonnull(reg);
		ck_assert_uint_eq(fdt32_ld(reg), n);
		ck_assert_str_eq(fdt_getprop(fdt, off, "enable-method", NULL), "psci");
		ck_assert_str_eq(fdt_getprop(fdt, off, "device_type", NULL), "cpu");
		n++;
	}
	ck_assert_int_eq(n, 4);
	assert_str(fdt, "/psci", "method", "hvc");
	ck_assert_int_eq(fdt_node_check_compatible(fdt, fdt_path_offset(fdt, "/psci"),
						   "arm,psci-0.2"), 0);
	/* GICv3: distributor + redistributors, the ITS under it. */
	r64 = prop(fdt, "/intc@8000000", "reg", &plen);
	ck_assert_int_eq(plen, 32);
	ck_assert_uint_eq(fdt64_ld(&r64[0]), 0x08000000);
	ck_assert_uint_eq(fdt64_ld(&r64[2]), 0x10000000);
	ck_assert_uint_eq(fdt64_ld(&r64[3]), 4 * 0x20000);
	prop(fdt, "/intc@8000000", "interrupt-controller", &plen);
	ck_assert_int_eq(plen, 0);
	prop(fdt, "/intc@8000000/its@8080000", "msi-controller", &plen);
	/* Timer: four PPIs, level-high. */
	ck_assert_uint_eq(cell(fdt, "/timer", "interrupts", 0), 1);
	ck_assert_uint_eq(cell(fdt, "/timer", "interrupts", 1), 13);
	ck_assert_uint_eq(cell(fdt, "/timer", "interrupts", 10), 10);
	/* UART: SPI 1. */
	ck_assert_uint_eq(cell(fdt, "/uart@9000000", "interrupts", 0), 0);
	ck_assert_uint_eq(cell(fdt, "/uart@9000000", "interrupts", 1), 1);
	/* PCI: ECAM for bus 0 only, MSIs to the ITS by requester ID. */
	assert_str(fdt, "/pcie@30000000", "compatible", "pci-host-ecam-generic");
	r64 = prop(fdt, "/pcie@30000000", "reg", &plen);
	ck_assert_uint_eq(fdt64_ld(&r64[1]), 1u << 20);
	ck_assert_uint_eq(cell(fdt, "/pcie@30000000", "msi-map", 1),
			  cell(fdt, "/intc@8000000/its@8080000", "phandle", 0));
	ck_assert_uint_eq(cell(fdt, "/pcie@30000000", "msi-map", 3), 0x10000);
	ck_assert_uint_eq(cell(fdt, "/pcie@30000000", "ranges", 0), 0x02000000);
	ck_assert_uint_eq(cell(fdt, "/pcie@30000000", "ranges", 2), 0x40000000);
	/* PL061 on SPI 7 with its AMBA clock; the power key on its line 3. */
	ck_assert_int_eq(fdt_node_check_compatible(fdt, fdt_path_offset(fdt, "/pl061@9030000"),
						   "arm,primecell"), 0);
	ck_assert_uint_eq(cell(fdt, "/pl061@9030000", "interrupts", 1), 7);
	assert_str(fdt, "/pl061@9030000", "clock-names", "apb_pclk");
	ck_assert_uint_eq(cell(fdt, "/pl061@9030000", "clocks", 0),
			  cell(fdt, "/apb-pclk", "phandle", 0));
	ck_assert_uint_eq(cell(fdt, "/gpio-keys/poweroff", "linux,code", 0), 116);
	ck_assert_uint_eq(cell(fdt, "/gpio-keys/poweroff", "gpios", 0),
			  cell(fdt, "/pl061@9030000", "phandle", 0));
	ck_assert_uint_eq(cell(fdt, "/gpio-keys/poweroff", "gpios", 1), 3);
	free(fdt);
}
END_TEST

/* Past 16 vCPUs the MPIDR's Aff1 counts (KVM: Aff0 = id & 0xf). */
START_TEST(many_cpus_mpidr)
{
	struct arm64_fdt_config c = config(300);
	long len;
	void *fdt = build(&c, &len);
	int n = 0, off;

	ck_assert_uint_eq(arm64_fdt_default_mpidr(300), 0x120c);
	ck_assert_uint_eq(arm64_fdt_default_mpidr(17), 0x101);
	ck_assert_uint_eq(arm64_fdt_default_mpidr(4095), 0xff0f);
	fdt_for_each_subnode(off, fdt, fdt_path_offset(fdt, "/cpus")) {
		const fdt32_t *reg = fdt_getprop(fdt, off, "reg", NULL);
		char name[32];

		ck_assert_uint_eq(fdt32_ld(reg), arm64_fdt_default_mpidr(n));
		snprintf(name, sizeof(name), "cpu@%llx",
			 (unsigned long long)arm64_fdt_default_mpidr(n));
		ck_assert_str_eq(fdt_get_name(fdt, off, NULL), name);
		n++;
	}
	ck_assert_int_eq(n, 300);
	ck_assert_uint_eq(cell(fdt, "/cpus/cpu@120b", "reg", 0), 0x120b);
	free(fdt);

	/* Explicit MPIDRs (KVM_GET_ONE_REG) win over the default. */
	{
		uint64_t mp[2] = { 0x80000000ull | 0x0100, 0x0203 };

		c = config(2);
		c.mpidr = mp;
		fdt = build(&c, &len);
		ck_assert_uint_eq(cell(fdt, "/cpus/cpu@100", "reg", 0), 0x100);
		ck_assert_uint_eq(cell(fdt, "/cpus/cpu@203", "reg", 0), 0x203);
		free(fdt);
	}
	/* The most vCPUs fit in the 2 MiB booting.rst allows. */
	c = config(ARM64_FDT_MAX_CPUS);
	fdt = build(&c, &len);
	ck_assert_int_lt(len, ARM64_FDT_MAX_SIZE);
	free(fdt);
}
END_TEST

START_TEST(refused)
{
	static uint8_t buf[BUF_SIZE];
	struct arm64_fdt_config c;
	uint64_t aff3[1] = { 1ull << 32 };

	c = config(0);
	ck_assert_int_eq(arm64_fdt_write(buf, sizeof(buf), &c), -EINVAL);
	c = config(ARM64_FDT_MAX_CPUS + 1);
	ck_assert_int_eq(arm64_fdt_write(buf, sizeof(buf), &c), -EINVAL);
	c = config(1);
	c.uart.base = c.gicd.base + 0x1000; /* inside the distributor */
	ck_assert_int_eq(arm64_fdt_write(buf, sizeof(buf), &c), -EINVAL);
	c = config(1);
	c.pci_mmio.base = c.ram.base; /* window over RAM */
	ck_assert_int_eq(arm64_fdt_write(buf, sizeof(buf), &c), -EINVAL);
	c = config(1);
	c.initrd.base = c.ram.base + c.ram.size - 0x1000; /* runs past RAM */
	ck_assert_int_eq(arm64_fdt_write(buf, sizeof(buf), &c), -EINVAL);
	c = config(1);
	c.ram.size = 0;
	ck_assert_int_eq(arm64_fdt_write(buf, sizeof(buf), &c), -EINVAL);
	c = config(1);
	c.its.base = UINT64_MAX - 0x100; /* wraps */
	ck_assert_int_eq(arm64_fdt_write(buf, sizeof(buf), &c), -EINVAL);
	c = config(1);
	c.last_bus = 16; /* ECAM of 256 MiB holds 256 buses: fine ... */
	ck_assert_int_gt(arm64_fdt_write(buf, sizeof(buf), &c), 0);
	c.ecam.size = 16u << 20; /* ... 16 MiB only 16 */
	ck_assert_int_eq(arm64_fdt_write(buf, sizeof(buf), &c), -EINVAL);
	c = config(1);
	c.gpio.base = c.uart.base; /* GPIO over the UART */
	ck_assert_int_eq(arm64_fdt_write(buf, sizeof(buf), &c), -EINVAL);
	c = config(1);
	c.power_key_line = 8; /* a PL061 has lines 0-7 */
	ck_assert_int_eq(arm64_fdt_write(buf, sizeof(buf), &c), -EINVAL);
	c = config(1);
	c.gpio.size = 0; /* no GPIO: no power key either */
	ck_assert_int_gt(arm64_fdt_write(buf, sizeof(buf), &c), 0);
	ck_assert_int_lt(fdt_path_offset(buf, "/gpio-keys"), 0);
	c = config(1);
	c.mpidr = aff3;
	ck_assert_int_eq(arm64_fdt_write(buf, sizeof(buf), &c), -EINVAL);
	c = config(1);
	ck_assert_int_eq(arm64_fdt_write(NULL, sizeof(buf), &c), -EINVAL);
	ck_assert_int_eq(arm64_fdt_write(buf, 256, &c), -ENOSPC);
	c = config(64);
	ck_assert_int_eq(arm64_fdt_write(buf, 2048, &c), -ENOSPC);
}
END_TEST

/* ---- dtc: the compiler's own reading of the blob ---- */

static bool have_dtc(void)
{
	return system("command -v dtc >/dev/null 2>&1") == 0;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

/* The tree of config(2) as it should read, written out by hand from the
 * bindings (not from the code's output). */
static const char want_dts[] =
	"/dts-v1/;\n"
	"\n"
	"/ {\n"
	"\tcompatible = \"linux,dummy-virt\";\n"
	"\tmodel = \"libvmm arm64\";\n"
	"\t#address-cells = <0x02>;\n"
	"\t#size-cells = <0x02>;\n"
	"\tinterrupt-parent = <0x01>;\n"
	"\n"
	"\tchosen {\n"
	"\t\tbootargs = \"console=ttyS0 quiet\";\n"
	"\t\tlinux,initrd-start = <0x00 0x90000000>;\n"
	"\t\tlinux,initrd-end = <0x00 0x90100000>;\n"
	"\t\tstdout-path = \"/uart@9000000\";\n"
	"\t};\n"
	"\n"
	"\tmemory@80000000 {\n"
	"\t\tdevice_type = \"memory\";\n"
	"\t\treg = <0x00 0x80000000 0x00 0x20000000>;\n"
	"\t};\n"
	"\n"
	"\tcpus {\n"
	"\t\t#address-cells = <0x01>;\n"
	"\t\t#size-cells = <0x00>;\n"
	"\n"
	"\t\tcpu@0 {\n"
	"\t\t\tdevice_type = \"cpu\";\n"
	"\t\t\tcompatible = \"arm,arm-v8\";\n"
	"\t\t\tenable-method = \"psci\";\n"
	"\t\t\treg = <0x00>;\n"
	"\t\t};\n"
	"\n"
	"\t\tcpu@1 {\n"
	"\t\t\tdevice_type = \"cpu\";\n"
	"\t\t\tcompatible = \"arm,arm-v8\";\n"
	"\t\t\tenable-method = \"psci\";\n"
	"\t\t\treg = <0x01>;\n"
	"\t\t};\n"
	"\t};\n"
	"\n"
	"\tpsci {\n"
	"\t\tcompatible = \"arm,psci-1.0\\0arm,psci-0.2\";\n"
	"\t\tmethod = \"hvc\";\n"
	"\t};\n"
	"\n"
	"\tintc@8000000 {\n"
	"\t\tcompatible = \"arm,gic-v3\";\n"
	"\t\t#interrupt-cells = <0x03>;\n"
	"\t\tinterrupt-controller;\n"
	"\t\treg = <0x00 0x8000000 0x00 0x10000 0x00 0x10000000 0x00 0x40000>;\n"
	"\t\t#redistributor-regions = <0x01>;\n"
	"\t\t#address-cells = <0x02>;\n"
	"\t\t#size-cells = <0x02>;\n"
	"\t\tranges;\n"
	"\t\tphandle = <0x01>;\n"
	"\n"
	"\t\tits@8080000 {\n"
	"\t\t\tcompatible = \"arm,gic-v3-its\";\n"
	"\t\t\tmsi-controller;\n"
	"\t\t\t#msi-cells = <0x01>;\n"
	"\t\t\treg = <0x00 0x8080000 0x00 0x20000>;\n"
	"\t\t\tphandle = <0x02>;\n"
	"\t\t};\n"
	"\t};\n"
	"\n"
	"\ttimer {\n"
	"\t\tcompatible = \"arm,armv8-timer\";\n"
	"\t\tinterrupts = <0x01 0x0d 0x04 0x01 0x0e 0x04 0x01 0x0b 0x04 0x01 0x0a 0x04>;\n"
	"\t\talways-on;\n"
	"\t};\n"
	"\n"
	"\tuart@9000000 {\n"
	"\t\tcompatible = \"ns16550a\";\n"
	"\t\treg = <0x00 0x9000000 0x00 0x1000>;\n"
	"\t\tinterrupts = <0x00 0x01 0x04>;\n"
	"\t\tclock-frequency = <0x1c2000>;\n"
	"\t};\n"
	"\n"
	"\tpcie@30000000 {\n"
	"\t\tcompatible = \"pci-host-ecam-generic\";\n"
	"\t\tdevice_type = \"pci\";\n"
	"\t\t#address-cells = <0x03>;\n"
	"\t\t#size-cells = <0x02>;\n"
	"\t\treg = <0x00 0x30000000 0x00 0x100000>;\n"
	"\t\tbus-range = <0x00 0x00>;\n"
	"\t\tranges = <0x2000000 0x00 0x40000000 0x00 0x40000000 0x00 0x40000000>;\n"
	"\t\tmsi-map = <0x00 0x02 0x00 0x10000>;\n"
	"\t\tlinux,pci-domain = <0x00>;\n"
	"\t\tdma-coherent;\n"
	"\t};\n"
	"\n"
	"\tapb-pclk {\n"
	"\t\tcompatible = \"fixed-clock\";\n"
	"\t\t#clock-cells = <0x00>;\n"
	"\t\tclock-frequency = <0x16e3600>;\n"
	"\t\tclock-output-names = \"clk24mhz\";\n"
	"\t\tphandle = <0x03>;\n"
	"\t};\n"
	"\n"
	"\tpl061@9030000 {\n"
	"\t\tcompatible = \"arm,pl061\\0arm,primecell\";\n"
	"\t\treg = <0x00 0x9030000 0x00 0x1000>;\n"
	"\t\tinterrupts = <0x00 0x07 0x04>;\n"
	"\t\tgpio-controller;\n"
	"\t\t#gpio-cells = <0x02>;\n"
	"\t\tclocks = <0x03>;\n"
	"\t\tclock-names = \"apb_pclk\";\n"
	"\t\tphandle = <0x04>;\n"
	"\t};\n"
	"\n"
	"\tgpio-keys {\n"
	"\t\tcompatible = \"gpio-keys\";\n"
	"\n"
	"\t\tpoweroff {\n"
	"\t\t\tlabel = \"GPIO Key Poweroff\";\n"
	"\t\t\tlinux,code = <0x74>;\n"
	"\t\t\tgpios = <0x04 0x03 0x00>;\n"
	"\t\t};\n"
	"\t};\n"
	"};\n";

START_TEST(dtc_reads_it)
{
	struct arm64_fdt_config c = config(2);
	char dir[] = "/tmp/check_arm64_fdt.XXXXXX", cmd[512], path[300];
	long len;
	void *fdt;
	char *dts, *log;
	FILE *f;
	int rc;

	ck_assert_msg(have_dtc(), "no dtc: scripts/deps.sh installs device-tree-compiler");
	fdt = build(&c, &len);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/virt.dtb", dir);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fwrite(fdt, 1, (size_t)len, f), (size_t)len);
	fclose(f);

	/* Decompile: no warning (dtc checks unit addresses against reg,
	 * phandle references, #cells), and the text is the tree above. */
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && dtc -q -I dtb -O dts -o virt.dts virt.dtb 2>log && "
		 "dtc -I dtb -O dts -o /dev/null virt.dtb 2>>log", dir);
	rc = system(cmd);
	ck_assert_int_eq(rc, 0);
	snprintf(path, sizeof(path), "%s/log", dir);
	log = slurp(path, NULL);
	ck_assert_msg(!log[0], "dtc complained: %s", log);
	free(log);
	snprintf(path, sizeof(path), "%s/virt.dts", dir);
	dts = slurp(path, NULL);
	ck_assert_str_eq(dts, want_dts);
	free(dts);

	free(fdt);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *fdt_suite(void)
{
	Suite *s = suite_create("arm64-fdt");
	TCase *tc = tcase_create("fdt");

	tcase_add_test(tc, nodes_and_properties);
	tcase_add_test(tc, many_cpus_mpidr);
	tcase_add_test(tc, refused);
	tcase_add_test(tc, dtc_reads_it);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(fdt_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
