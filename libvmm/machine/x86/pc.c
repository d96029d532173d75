/* SPDX-License-Identifier: MIT */
/*
 * The x86 PC-like platform (machine-int.h's hooks): in-kernel
 * LAPIC/IOAPIC/PIC and PIT, ACPI tables (MADT for
 * SMP, up to 1024 vCPUs with x2APIC; a DSDT with the PCI host bridge and
 * COM1; a full FADT whose PM1 registers power the VM off) and, for guests
 * booted with acpi=off, an MP table (up to 254 vCPUs); an e820 map in
 * boot_params, COM1, an i8042 for `reboot=k`, a CMOS RTC, and a PCI bus
 * (configuration mechanism #1) for virtio devices.
 *
 * Why a full FADT and not a hardware-reduced one: hardware-reduced ACPI
 * makes Linux drop the PIT as a timer and the 8259 PIC, and take ISA IRQs
 * (COM1's) through a dynamic domain; with PM1 blocks the legacy platform
 * stays exactly what the MP-table boot has, and power-off is two more
 * registers (devices/legacy/acpipm.h).
 */
#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "kvm.h"
#include "legacy/acpipm.h"
#include "legacy/i8042.h"
#include "legacy/pvexit.h"
#include "legacy/rtc.h"
#include "machine-config.h"
#include "log.h"
#include "machine-int.h"
#include "pci/pci.h"
#include "serial/uart8250.h"
#include "vcpu.h"
#include "virtio/virtio-pci.h"
#include "vm.h"
#include "x86/acpi.h"
#include "x86/boot.h"
#include "x86/cpuid.h"
#include "x86/e820.h"
#include "x86/irqchip.h"
#include "x86/loader.h"
#include "x86/mptable.h"
#include "x86/vcpu-init.h"

#define COM1_BASE 0x3f8
#define COM1_IRQ 4
/* ACPI PM1a event (4 bytes) and control (2 bytes) blocks, where the ICH9
 * chipset has them, and the SCI's ISA IRQ (never raised: no ACPI events). */
#define ACPI_PM_BASE 0x600
#define ACPI_SCI_IRQ 9
#define ACPI_RESET_PORT 0xcf9 /* the host bridge's RST_CNT (pci.h) */
#define ACPI_RESET_VALUE 0x06 /* SYS_RST | RST_CPU: hard reset */
/* KVM needs three pages for the TSS (VMX real-mode emulation) and one for
 * the EPT identity map, below 4 GiB and outside RAM: the top of the PCI
 * hole, under the BIOS ROM area (docs/design-notes.md, Machine). */
#define KVM_TSS_GPA 0xfffbd000ull
#define KVM_IDENTITY_MAP_GPA 0xfffbc000ull
/* 32-bit MMIO window for PCI BARs: from the PCI hole start up to the IOAPIC. */
#define PCI_MMIO32_BASE 0xe0000000ull
#define PCI_MMIO32_SIZE (0xfec00000ull - PCI_MMIO32_BASE)


_Static_assert(VMM_MAX_VCPUS <= ACPI_MAX_CPUS &&
		       VMM_MAX_MPTABLE_VCPUS == MPTABLE_MAX_CPUS,
	       "vCPU limits of vmm.h and the firmware tables");

/* Over all disks, what KVM's route table holds besides the irqchip's
 * routes (one MSI route per queue). */
_Static_assert(VPCI_MSI_ROUTES(VMM_MAX_QUEUES) == IRQ_MAX_ROUTES - X86_IRQ_CHIP_ROUTES,
	       "VMM_MAX_QUEUES is what KVM's route table leaves");

struct machine_arch {
	struct x86_boot_entry entry; /* the BSP's, from the boot image */
	struct uart8250 *uart;
	struct i8042 *kbd;
	struct rtc *rtc;
	struct pvexit *pvexit;
	struct acpipm *pm;
	/* kvmclock at vmm_pause(), set again at vmm_resume() */
	struct kvm_clock_data paused_clock;
	bool clock_saved;
	/* KVM_IRQ_LINE failures come at the guest's UART pace: rate-limited. */
	struct log_limit irq_log;
};

/* Raise/lower legacy IRQ line @line on the in-kernel PIC + IOAPIC. */
static void pc_irq_line(struct vmm *vm, unsigned int line, int level,
			const char *who)
{
	struct kvm_irq_level irq = { .irq = line, .level = (uint32_t)level };

	if (ioctl(vm->vm_fd, KVM_IRQ_LINE, &irq) < 0)
		log_limited(&vm->machine->arch->irq_log, VMM_LOG_WARN, who,
			    "KVM_IRQ_LINE %u: %s", irq.irq, strerror(errno));
}

/* The UART's line.  Context: vCPU or console thread. */
static void pc_set_irq_line(void *opaque, int level)
{
	pc_irq_line(opaque, COM1_IRQ, level, "uart");
}

/* The ACPI SCI (level, active high: the MADT's override).  Context: a vCPU
 * writing PM1, or vmm_shutdown()'s caller. */
static void pc_set_sci(void *opaque, int level)
{
	pc_irq_line(opaque, ACPI_SCI_IRQ, level, "acpi");
}

/* The ACPI tables at ACPI_TABLES_GPA, describing this machine. */
static int pc_write_acpi(struct vmm *vm)
{
	const struct acpi_config ac = {
		.nr_cpus = vm->nr_vcpus,
		.pm1a_evt_port = ACPI_PM_BASE + ACPIPM_PM1_STS,
		.pm1a_cnt_port = ACPI_PM_BASE + ACPIPM_PM1_CNT,
		.sci_irq = ACPI_SCI_IRQ,
		.reset_port = ACPI_RESET_PORT,
		.reset_value = ACPI_RESET_VALUE,
		.ioapic_addr = MPTABLE_IOAPIC_ADDR,
		.lapic_addr = MPTABLE_LAPIC_ADDR,
		.mmio32_base = PCI_MMIO32_BASE,
		.mmio32_size = PCI_MMIO32_SIZE,
		.com1_port = COM1_BASE,
		.com1_irq = COM1_IRQ,
	};
	void *p = guest_mem_ptr(&vm->mem, ACPI_TABLES_GPA, ACPI_TABLES_ROOM);
	long n;

	if (!p) {
		vmm_err("no guest RAM for the ACPI tables at 0x%x", ACPI_TABLES_GPA);
		return -EINVAL;
	}
	n = acpi_write(p, ACPI_TABLES_ROOM, ACPI_TABLES_GPA, &ac);
	if (n < 0) {
		vmm_err("cannot write the ACPI tables: %s", strerror((int)-n));
		return (int)n;
	}
	return 0;
}


/*
 * KVM's in-kernel IOAPIC has 8-bit destinations, so a legacy interrupt
 * (COM1, the RTC, the PIT) whose affinity lands on an APIC ID >= 255 would
 * reach the wrong CPU, or all of them (255 is the broadcast).  Linux
 * spreads IRQs over all CPUs by default; irqaffinity=0 keeps the
 * non-managed ones on CPU 0 (per-queue MSI-X vectors are managed and still
 * follow their queue's CPU).  Added unless the command line sets
 * irqaffinity itself.  *@out: NULL when the command line stays as it is,
 * else a string to free.
 */
static int pc_cmdline(struct vmm *vm, char **out)
{
	static const char extra[] = " irqaffinity=0";
	const char *c = vm->config->cmdline ? vm->config->cmdline : "";

	*out = NULL;
	if (vm->nr_vcpus <= X86_MAX_XAPIC_VCPUS || strstr(c, "irqaffinity="))
		return 0;
	if (strlen(c) + sizeof(extra) - 1 > VMM_MAX_CMDLINE) {
		vmm_err("the command line has no room for \"%s\" (needed "
			"with more than 255 vCPUs)", extra + 1);
		return -EINVAL;
	}
	if (asprintf(out, "%s%s", c, extra) < 0) {
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

int machine_arch_load_boot(struct vmm *vm, struct machine *m)
{
	char *cmdline;
	int ret;

	ret = pc_write_acpi(vm);
	if (ret)
		return ret;
	ret = pc_cmdline(vm, &cmdline);
	if (ret)
		return ret;
	ret = x86_load_files(&vm->mem, vm->config->kernel_path, vm->config->initrd_path,
			     cmdline ? cmdline : vm->config->cmdline, vm->nr_vcpus,
			     ACPI_TABLES_GPA, &m->arch->entry);
	free(cmdline);
	return ret;
}

/*
 * More than 255 vCPUs: APIC IDs need 32 bits in KVM's MSI routes and
 * KVM_SIGNAL_MSI (the destination's high bits in address_hi, irq.c), and a
 * broadcast is 0xffffffff in x2APIC mode, not 0xff.  Before any vCPU
 * exists (KVM refuses it afterwards).
 */
static int pc_enable_x2apic_api(struct vmm *vm)
{
	struct kvm_enable_cap cap = {
		.cap = KVM_CAP_X2APIC_API,
		.args[0] = KVM_X2APIC_API_USE_32BIT_IDS |
			   KVM_X2APIC_API_DISABLE_BROADCAST_QUIRK,
	};

	if (vm->nr_vcpus <= X86_MAX_XAPIC_VCPUS)
		return 0;
	if (ioctl(vm->vm_fd, KVM_ENABLE_CAP, &cap) < 0) {
		int ret = -errno;

		vmm_err("%u vCPUs need KVM_CAP_X2APIC_API: %s", vm->nr_vcpus,
			strerror(-ret));
		return ret == -EINVAL ? -ENOTSUP : ret;
	}
	return 0;
}

static int pc_setup_kvm(struct vmm *vm)
{
	struct kvm_pit_config pit = { .flags = KVM_PIT_SPEAKER_DUMMY };
	int ret;

	if (ioctl(vm->vm_fd, KVM_SET_TSS_ADDR, (unsigned long)KVM_TSS_GPA) < 0) {
		vmm_err("KVM_SET_TSS_ADDR: %s", strerror(errno));
		return -EIO;
	}
	{
		uint64_t idmap = KVM_IDENTITY_MAP_GPA;

		if (ioctl(vm->vm_fd, KVM_SET_IDENTITY_MAP_ADDR, &idmap) < 0)
			vmm_dbg("KVM_SET_IDENTITY_MAP_ADDR: %s", strerror(errno));
	}
	ret = pc_enable_x2apic_api(vm);
	if (ret)
		return ret;
	if (ioctl(vm->vm_fd, KVM_CREATE_IRQCHIP, 0) < 0) {
		vmm_err("KVM_CREATE_IRQCHIP: %s", strerror(errno));
		return -EIO;
	}
	if (ioctl(vm->vm_fd, KVM_CREATE_PIT2, &pit) < 0) {
		vmm_err("KVM_CREATE_PIT2: %s", strerror(errno));
		return -EIO;
	}
	return 0;
}


int machine_arch_create(struct vmm *vm, struct machine *m)
{
	m->arch = calloc(1, sizeof(*m->arch));
	if (!m->arch)
		return -ENOMEM;
	log_limit_init(&m->arch->irq_log, "failed interrupt line changes");
	return pc_setup_kvm(vm);
}

static struct kvm_cpuid2 *pc_supported_cpuid(struct vmm *vm)
{
	for (unsigned int n = 128; n <= 4096; n *= 2) {
		struct kvm_cpuid2 *c =
			calloc(1, sizeof(*c) + n * sizeof(c->entries[0]));

		if (!c)
			return NULL;
		c->nent = n;
		if (ioctl(vm->kvm.fd, KVM_GET_SUPPORTED_CPUID, c) == 0)
			return c;
		free(c);
		if (errno != E2BIG) {
			vmm_err("KVM_GET_SUPPORTED_CPUID: %s", strerror(errno));
			return NULL;
		}
	}
	return NULL;
}

int machine_arch_setup_vcpus(struct vmm *vm, struct machine *m)
{
	struct kvm_cpuid2 *cpuid;
	int ret = 0;

	cpuid = pc_supported_cpuid(vm);
	if (!cpuid)
		return -EIO;
	/*
	 * The TSC-deadline timer is the LAPIC timer mode Linux prefers: it
	 * needs no calibration.  Without it Linux calibrates the LAPIC timer
	 * against the PIT, which fails when the host is itself virtual or busy
	 * ("APIC timer disabled due to verification failure"), and the guest
	 * then runs on periodic PIT ticks that CPU 0 forwards to every other
	 * vCPU by IPI, never idle-tickless (docs/design-notes.md, Machine).
	 */
	if (kvm_check_cap(vm->kvm.fd, KVM_CAP_TSC_DEADLINE_TIMER) > 0)
		cpuid_set_tsc_deadline(cpuid);
	for (unsigned int i = 0; i < vm->nr_vcpus && !ret; i++) {
		ret = vcpu_create(vm, i, &vm->vcpus[i]);
		if (!ret)
			ret = x86_vcpu_init(&vm->vcpus[i], cpuid);
	}
	free(cpuid);
	if (ret)
		return ret;
	/* Only the BSP gets an entry state; APs wait for INIT-SIPI from Linux
	 * in the in-kernel LAPIC (KVM_MP_STATE_UNINITIALIZED). */
	return x86_vcpu_set_entry(&vm->vcpus[0], &m->arch->entry);
}

/*
 * PCI configuration mechanism #1 is a write of the address to 0xCF8 and
 * an access to 0xCFC: two exits to us per configuration access.  The
 * address write has no effect the guest can see until its next access to
 * 0xCF8-0xCFF, and every exit drains the coalesced ring first, so KVM may
 * log it instead of exiting: half the exits for configuration space.
 * (Linux probes a lot of it: on AMD family 0Fh/10h CPUs
 * arch/x86/kernel/aperture_64.c scans all 256 buses twice looking for an
 * AGP bridge; docs/design-notes.md, Machine.)
 * The zone also holds 0xCF9 (reset control), so a reset written there
 * takes effect at the vCPU's next exit to us rather than at once; Linux
 * follows it with a triple fault, which is such an exit.  Optional: only
 * slower without.
 */
void machine_arch_late(struct vmm *vm, struct machine *m)
{
	int ret = vm_coalesce_pio(vm, 0xcf8, 4);

	if (ret)
		vmm_dbg("coalesced PIO for 0xcf8 not available: %s",
			strerror(-ret));
}

const struct kvm_cap_name *machine_arch_kvm_caps(size_t *n)
{
	static const struct kvm_cap_name caps[] = {
		KVM_CAP_NAME(KVM_CAP_PIT2),
		KVM_CAP_NAME(KVM_CAP_SET_TSS_ADDR),
		KVM_CAP_NAME(KVM_CAP_EXT_CPUID),
	};

	*n = ARRAY_SIZE(caps);
	return caps;
}

const struct guest_layout *machine_arch_guest_layout(void)
{
	return &x86_guest_layout;
}

const struct irq_platform *machine_arch_irq_platform(void)
{
	return x86_irq_platform();
}

size_t machine_arch_console_input(struct vmm *vm, const void *buf, size_t len)
{
	return uart8250_push_input(vm->machine->arch->uart, buf, len);
}

/*
 * The guest's kvmclock stops while paused: read at the pause, set back at
 * the resume, so its monotonic time does not jump by the pause (its wall
 * clock then lags by that much, as after a host suspend, until the guest
 * syncs it).  KVM_KVMCLOCK_CTRL tells each vCPU's guest that it was
 * stopped by the host, so its soft-lockup watchdog does not fire; -EINVAL
 * means the guest set up no kvmclock page for that vCPU (ignored).
 */
void machine_arch_pause(struct vmm *vm, struct machine *m)
{
	struct machine_arch *a = m->arch;

	a->clock_saved = ioctl(vm->vm_fd, KVM_GET_CLOCK, &a->paused_clock) == 0;
	if (!a->clock_saved)
		vmm_warn("pause: KVM_GET_CLOCK: %s", strerror(errno));
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		if (ioctl(vm->vcpus[i].fd, KVM_KVMCLOCK_CTRL, 0) < 0 &&
		    errno != EINVAL)
			vmm_warn("pause: vCPU %u: KVM_KVMCLOCK_CTRL: %s", i,
				 strerror(errno));
}

void machine_arch_resume(struct vmm *vm, struct machine *m)
{
	struct machine_arch *a = m->arch;
	struct kvm_clock_data c = { .clock = a->paused_clock.clock };

	if (a->clock_saved && ioctl(vm->vm_fd, KVM_SET_CLOCK, &c) < 0)
		vmm_warn("resume: KVM_SET_CLOCK: %s", strerror(errno));
	a->clock_saved = false;
}

int machine_arch_setup_devices(struct vmm *vm, struct machine *m)
{
	struct machine_arch *a = m->arch;
	int ret;

	ret = uart8250_create(&vm->pio, COM1_BASE, pc_set_irq_line, vm,
			      machine_console_output, m->console, &a->uart);
	if (ret)
		return ret;
	ret = i8042_create(&vm->pio, machine_guest_reset, vm, &a->kbd);
	if (ret)
		return ret;
	ret = rtc_create(&vm->pio, &a->rtc);
	if (ret)
		return ret;
	ret = pvexit_create(&vm->pio, VMM_EXIT_PORT, machine_guest_exit, vm,
			    &a->pvexit);
	if (ret)
		return ret;
	ret = pci_bus_create(&vm->pio, &vm->mmio, PCI_MMIO32_BASE,
			     PCI_MMIO32_SIZE, &m->pci);
	if (ret)
		return ret;
	pci_bus_set_reset_handler(m->pci, machine_guest_reset, vm);
	ret = acpipm_create(&vm->pio, ACPI_PM_BASE, ACPI_SLP_TYP_S5,
			    machine_guest_poweroff, vm, &a->pm);
	if (!ret)
		acpipm_set_sci(a->pm, pc_set_sci, vm);
	return ret;
}

int machine_arch_power_button(struct vmm *vm, struct machine *m)
{
	(void)vm;
	acpipm_power_button(m->arch->pm);
	return 0;
}

void machine_arch_destroy(struct vmm *vm, struct machine *m)
{
	struct machine_arch *a = m->arch;

	if (m->pci) /* the virtio devices on it are gone (machine.c) */
		pci_bus_destroy(m->pci);
	m->pci = NULL;
	if (!a)
		return;
	if (a->kbd)
		i8042_destroy(a->kbd);
	rtc_destroy(a->rtc);
	pvexit_destroy(a->pvexit);
	acpipm_destroy(a->pm);
	if (a->uart)
		uart8250_destroy(a->uart);
	log_limit_destroy(&a->irq_log, "until the VM was destroyed");
	free(a);
	m->arch = NULL;
}
