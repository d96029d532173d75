/* SPDX-License-Identifier: MIT */
/*
 * The arm64 "virt"-like platform (machine-int.h's hooks): KVM's in-kernel
 * GICv3 with an ITS (every MSI-X vector an LPI), the architected timer,
 * KVM's in-kernel PSCI 0.2+ (secondary vCPUs come up through CPU_ON,
 * SYSTEM_OFF/SYSTEM_RESET end the VM), an ns16550a UART on MMIO, a PL061
 * GPIO controller whose line 3 is a gpio-keys power key, a generic
 * ECAM PCI host bridge for the virtio devices, and a device tree built
 * with libfdt (arch/arm64/fdt.c) that says all of it.  The kernel is a
 * Linux arm64 Image (arch/arm64/loader.c).
 *
 * Guest-physical map (below RAM, under 1 GiB, 32-bit addresses so that
 * every PCI BAR is a 32-bit one):
 *   0x0800_0000  GIC distributor          64 KiB
 *   0x0808_0000  GIC ITS                  128 KiB
 *   0x0900_0000  UART (ns16550a, SPI 1)   4 KiB
 *   0x0903_0000  GPIO (PL061, SPI 7)      4 KiB: the power key, line 3
 *   0x0a00_0000  GIC redistributors       128 KiB per vCPU (up to 768)
 *   0x1000_0000  PCI memory window        752 MiB
 *   0x3f00_0000  PCI ECAM, bus 0          1 MiB
 *   0x4000_0000  RAM, one piece (the device tree in its top 2 MiB)
 *
 * The device tree needs every vCPU's MPIDR, which KVM assigns at
 * KVM_ARM_VCPU_INIT: it is written once the vCPUs exist
 * (machine_arch_setup_vcpus()); machine_arch_load_boot() only loads the
 * Image and the initrd.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arm64/fdt.h"
#include "arm64/gic.h"
#include "arm64/loader.h"
#include "arm64/vcpu-init.h"
#include "machine-config.h"
#include "kvm.h"
#include "log.h"
#include "machine-int.h"
#include "memory.h"
#include "pci/pci.h"
#include "gpio/pl061.h"
#include "serial/uart8250.h"
#include "vcpu.h"
#include "vm.h"

#define VIRT_GICD_BASE 0x08000000ull
#define VIRT_GITS_BASE 0x08080000ull
#define VIRT_UART_BASE 0x09000000ull
#define VIRT_UART_SIZE 0x1000ull
#define VIRT_UART_SPI 1u
/* The 16550's input clock as the device tree states it (only divisors
 * derive from it; the model has no baud rate). */
#define VIRT_UART_CLOCK_HZ 1843200u
#define VIRT_GPIO_BASE 0x09030000ull
#define VIRT_GPIO_SPI 7u
#define VIRT_POWER_KEY_LINE 3u
#define VIRT_GICR_BASE 0x0a000000ull
#define VIRT_GICR_END 0x10000000ull
#define VIRT_PCI_MMIO_BASE 0x10000000ull
#define VIRT_PCI_MMIO_SIZE 0x2f000000ull
#define VIRT_ECAM_BASE 0x3f000000ull
#define VIRT_RAM_BASE 0x40000000ull

_Static_assert(VIRT_PCI_MMIO_BASE + VIRT_PCI_MMIO_SIZE <= VIRT_ECAM_BASE &&
		       VIRT_ECAM_BASE + PCI_ECAM_BUS_SIZE <= VIRT_RAM_BASE,
	       "the PCI windows overlap");
_Static_assert(VIRT_GITS_BASE + ARM64_GITS_SIZE <= VIRT_UART_BASE &&
		       VIRT_GICD_BASE + ARM64_GICD_SIZE <= VIRT_GITS_BASE,
	       "the GIC frames overlap");
_Static_assert(VIRT_UART_SPI + ARM64_GIC_SPI_BASE < ARM64_GIC_NR_IRQS &&
		       VIRT_GPIO_SPI + ARM64_GIC_SPI_BASE < ARM64_GIC_NR_IRQS &&
		       VIRT_GPIO_SPI != VIRT_UART_SPI,
	       "the UART's or GPIO's SPI is not implemented");
_Static_assert(VIRT_UART_BASE + VIRT_UART_SIZE <= VIRT_GPIO_BASE &&
		       VIRT_GPIO_BASE + PL061_SIZE <= VIRT_GICR_BASE,
	       "the GPIO controller overlaps");

/* Redistributors that fit below the PCI window. */
#define VIRT_MAX_VCPUS ((unsigned int)((VIRT_GICR_END - VIRT_GICR_BASE) / \
				       ARM64_GICR_SIZE_PER_CPU))

struct machine_arch {
	struct arm64_boot boot;
	struct arm64_gic gic;
	struct uart8250 *uart;
	struct pl061 *gpio;
	/* KVM_IRQ_LINE failures come at the guest's pace: rate-limited. */
	struct log_limit irq_log;
};

static const struct guest_layout virt_layout = {
	.ram_base = VIRT_RAM_BASE,
	.hole_start = 0,
	.hole_end = 0,
};

/* The gpio-keys power key: pressed now, released once the guest's driver
 * has read it pressed (pl061_pulse_input(): no timer, no sleep here).
 * Context: the caller of vmm_shutdown() (the control thread: KVM_IRQ_LINE
 * is in its seccomp list). */
int machine_arch_power_button(struct vmm *vm, struct machine *m)
{
	(void)vm;
	return pl061_pulse_input(m->arch->gpio, VIRT_POWER_KEY_LINE);
}

/* The virtual counter keeps counting across a pause: the guest sees the
 * time pass, as after a host suspend. */
void machine_arch_pause(struct vmm *vm, struct machine *m)
{
	(void)vm;
	(void)m;
}

void machine_arch_resume(struct vmm *vm, struct machine *m)
{
	(void)vm;
	(void)m;
}

int machine_arch_create(struct vmm *vm, struct machine *m)
{
	int ret;

	if (vm->nr_vcpus > VIRT_MAX_VCPUS) {
		vmm_err("%u vCPUs: this arm64 machine has room for %u "
			"redistributors", vm->nr_vcpus, VIRT_MAX_VCPUS);
		return -EINVAL;
	}
	m->arch = calloc(1, sizeof(*m->arch));
	if (!m->arch)
		return -ENOMEM;
	log_limit_init(&m->arch->irq_log, "failed interrupt line changes");
	/* KVM wants the GIC before any vCPU (gic.h). */
	ret = arm64_gic_create(vm->vm_fd, VIRT_GICD_BASE, VIRT_GICR_BASE,
			       VIRT_GITS_BASE, &m->arch->gic);
	if (ret)
		return ret;
	/* With an ITS, KVM requires a device ID on every MSI: what
	 * irq_platform.msi_devid promises.  The VM says so only once the
	 * ITS exists (KVM_CAP_MSI_DEVID on the VM fd). */
	if (kvm_check_cap(vm->vm_fd, KVM_CAP_MSI_DEVID) <= 0) {
		vmm_err("KVM does not take device IDs on MSIs (KVM_CAP_MSI_DEVID)");
		return -ENOTSUP;
	}
	return 0;
}

int machine_arch_load_boot(struct vmm *vm, struct machine *m)
{
	return arm64_load_files(&vm->mem, VIRT_RAM_BASE, vm->config->kernel_path,
				vm->config->initrd_path, &m->arch->boot);
}

/* Context: vCPU thread, the UART's lock held. */
static void virt_set_uart_irq(void *opaque, int level)
{
	struct vmm *vm = opaque;
	int ret = arm64_gic_set_spi(vm->vm_fd, VIRT_UART_SPI, level);

	if (ret)
		log_limited(&vm->machine->arch->irq_log, VMM_LOG_WARN, "uart",
			    "KVM_IRQ_LINE SPI %u: %s", VIRT_UART_SPI,
			    strerror(-ret));
}

/* Context: a vCPU thread (register access) or vmm_shutdown()'s caller;
 * the PL061's lock held. */
static void virt_set_gpio_irq(void *opaque, int level)
{
	struct vmm *vm = opaque;
	int ret = arm64_gic_set_spi(vm->vm_fd, VIRT_GPIO_SPI, level);

	if (ret)
		log_limited(&vm->machine->arch->irq_log, VMM_LOG_WARN, "gpio",
			    "KVM_IRQ_LINE SPI %u: %s", VIRT_GPIO_SPI,
			    strerror(-ret));
}

int machine_arch_setup_devices(struct vmm *vm, struct machine *m)
{
	int ret;

	ret = uart8250_create(&vm->mmio, VIRT_UART_BASE, virt_set_uart_irq, vm,
			      machine_console_output, m->console, &m->arch->uart);
	if (!ret)
		ret = pl061_create(&vm->mmio, VIRT_GPIO_BASE, virt_set_gpio_irq,
				   vm, &m->arch->gpio);
	if (ret)
		return ret;
	/* The bus also answers x86's 0xCF8 ports on vm->pio, which no arm64
	 * guest can reach: the ECAM window is its configuration space. */
	ret = pci_bus_create(&vm->pio, &vm->mmio, VIRT_PCI_MMIO_BASE,
			     VIRT_PCI_MMIO_SIZE, &m->pci);
	if (ret)
		return ret;
	return pci_bus_set_ecam(m->pci, VIRT_ECAM_BASE);
}

/* The device tree into the top of RAM, for the vCPUs' MPIDRs. */
static int virt_write_fdt(struct vmm *vm, struct machine_arch *a)
{
	struct arm64_fdt_config c = {
		.nr_cpus = vm->nr_vcpus,
		.ram = { VIRT_RAM_BASE, vm->mem.size },
		.cmdline = vm->config->cmdline,
		.initrd = { a->boot.initrd_gpa, a->boot.initrd_size },
		.gicd = { VIRT_GICD_BASE, ARM64_GICD_SIZE },
		.gicr = { VIRT_GICR_BASE, ARM64_GICR_SIZE_PER_CPU * vm->nr_vcpus },
		.its = { VIRT_GITS_BASE, ARM64_GITS_SIZE },
		.uart = { VIRT_UART_BASE, VIRT_UART_SIZE },
		.uart_spi = VIRT_UART_SPI,
		.uart_clock_hz = VIRT_UART_CLOCK_HZ,
		.ecam = { VIRT_ECAM_BASE, PCI_ECAM_BUS_SIZE },
		.last_bus = 0,
		.pci_mmio = { VIRT_PCI_MMIO_BASE, VIRT_PCI_MMIO_SIZE },
		.gpio = { VIRT_GPIO_BASE, PL061_SIZE },
		.gpio_spi = VIRT_GPIO_SPI,
		.power_key_line = VIRT_POWER_KEY_LINE,
	};
	uint64_t *mpidr;
	void *p;
	long n;
	int ret = 0;

	p = guest_mem_ptr(&vm->mem, a->boot.fdt_gpa, ARM64_FDT_MAX_SIZE);
	mpidr = calloc(vm->nr_vcpus, sizeof(*mpidr));
	if (!p || !mpidr) {
		free(mpidr);
		return p ? -ENOMEM : -EINVAL;
	}
	for (unsigned int i = 0; i < vm->nr_vcpus && !ret; i++)
		ret = arm64_vcpu_mpidr(&vm->vcpus[i], &mpidr[i]);
	if (!ret) {
		c.mpidr = mpidr;
		n = arm64_fdt_write(p, ARM64_FDT_MAX_SIZE, &c);
		if (n < 0) {
			vmm_err("cannot write the device tree: %s",
				strerror((int)-n));
			ret = (int)n;
		} else {
			vmm_dbg("device tree: %ld bytes at 0x%llx", n,
				(unsigned long long)a->boot.fdt_gpa);
		}
	}
	free(mpidr);
	return ret;
}

int machine_arch_setup_vcpus(struct vmm *vm, struct machine *m)
{
	struct machine_arch *a = m->arch;
	struct kvm_vcpu_init target;
	int ret;

	ret = arm64_vcpu_target(vm->vm_fd, &target);
	if (ret)
		return ret;
	for (unsigned int i = 0; i < vm->nr_vcpus && !ret; i++) {
		ret = vcpu_create(vm, i, &vm->vcpus[i]);
		/* vCPU 0 boots; the others wait powered off for CPU_ON. */
		if (!ret)
			ret = arm64_vcpu_init(&vm->vcpus[i], &target, i == 0);
	}
	if (!ret)
		ret = arm64_gic_init(&a->gic);
	if (!ret)
		ret = virt_write_fdt(vm, a);
	if (!ret)
		ret = arm64_vcpu_set_entry(&vm->vcpus[0], a->boot.entry,
					   a->boot.fdt_gpa);
	return ret;
}

/* Nothing to speed up yet: the UART, GPIO and ECAM are the only MMIO exits,
 * and all must be seen at once. */
void machine_arch_late(struct vmm *vm, struct machine *m)
{
	(void)vm;
	(void)m;
}

const struct kvm_cap_name *machine_arch_kvm_caps(size_t *n)
{
	static const struct kvm_cap_name caps[] = {
		KVM_CAP_NAME(KVM_CAP_ARM_PSCI_0_2),
		KVM_CAP_NAME(KVM_CAP_ONE_REG),
		KVM_CAP_NAME(KVM_CAP_DEVICE_CTRL),
	};

	*n = ARRAY_SIZE(caps);
	return caps;
}

const struct guest_layout *machine_arch_guest_layout(void)
{
	return &virt_layout;
}

const struct irq_platform *machine_arch_irq_platform(void)
{
	return arm64_irq_platform();
}

size_t machine_arch_console_input(struct vmm *vm, const void *buf, size_t len)
{
	return uart8250_push_input(vm->machine->arch->uart, buf, len);
}

void machine_arch_destroy(struct vmm *vm, struct machine *m)
{
	struct machine_arch *a = m->arch;

	(void)vm;
	if (m->pci) /* the virtio devices on it are gone (machine.c) */
		pci_bus_destroy(m->pci);
	m->pci = NULL;
	if (!a)
		return;
	if (a->uart)
		uart8250_destroy(a->uart);
	pl061_destroy(a->gpio);
	arm64_gic_destroy(&a->gic);
	log_limit_destroy(&a->irq_log, "until the VM was destroyed");
	free(a);
	m->arch = NULL;
}
