/* SPDX-License-Identifier: MIT */
/*
 * x86 machine assembly (see machine.h).  Platform, as in kvmtool and
 * Firecracker: in-kernel LAPIC/IOAPIC/PIC and PIT, ACPI tables (MADT for
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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blk/vblk.h"
#include "blk/virtio-blk.h"
#include "console.h"
#include "console/vcon.h"
#include "irq.h"
#include "iothread.h"
#include "kvm.h"
#include "legacy/acpipm.h"
#include "legacy/i8042.h"
#include "legacy/pvexit.h"
#include "legacy/rtc.h"
#include "log.h"
#include "machine.h"
#include "pci/msix.h"
#include "pci/pci.h"
#include "sandbox.h"
#include "serial/uart8250.h"
#include "virtio/virtio-pci.h"
#include "vcpu.h"
#include "vm.h"
#include "x86/acpi.h"
#include "x86/boot.h"
#include "x86/loader.h"
#include "x86/mptable.h"
#include "x86/cpuid.h"

#define COM1_BASE 0x3f8
#define COM1_IRQ 4
/* ACPI PM1a event (4 bytes) and control (2 bytes) blocks, where QEMU's
 * ICH9 has them, and the SCI's ISA IRQ (never raised: no ACPI events). */
#define ACPI_PM_BASE 0x600
#define ACPI_SCI_IRQ 9
#define ACPI_RESET_PORT 0xcf9 /* the host bridge's RST_CNT (pci.h) */
#define ACPI_RESET_VALUE 0x06 /* SYS_RST | RST_CPU: hard reset */
/* KVM needs three pages for the TSS (VMX real-mode emulation) and one for
 * the EPT identity map, below 4 GiB and outside RAM: the top of the PCI
 * hole, under the BIOS ROM area, as QEMU and kvmtool place them. */
#define KVM_TSS_GPA 0xfffbd000ull
#define KVM_IDENTITY_MAP_GPA 0xfffbc000ull
/* 32-bit MMIO window for PCI BARs: from the PCI hole start up to the IOAPIC. */
#define PCI_MMIO32_BASE 0xe0000000ull
#define PCI_MMIO32_SIZE (0xfec00000ull - PCI_MMIO32_BASE)

/* Queue caps: per disk as QEMU's virtio_pci_optimal_num_queues() (at most
 * VIRTIO_QUEUE_MAX queues, an MSI-X table of 2048 entries including the
 * configuration vector); over all disks what KVM's route table holds
 * besides the irqchip's routes (one MSI route per queue). */
_Static_assert(VMM_MAX_DISK_QUEUES <= VPCI_MAX_QUEUES &&
		       VMM_MAX_DISK_QUEUES + 1 <= MSIX_MAX_VECTORS,
	       "per-disk queue cap");
_Static_assert(VPCI_MSI_ROUTES(VMM_MAX_QUEUES) == IRQ_MAX_MSI_ROUTES,
	       "VMM_MAX_QUEUES is what KVM's route table leaves");
_Static_assert(VMM_MAX_VCPUS <= ACPI_MAX_CPUS &&
		       VMM_MAX_MPTABLE_VCPUS == MPTABLE_MAX_CPUS,
	       "vCPU limits of vmm.h and the firmware tables");
_Static_assert(VMM_MAX_DISKS < (PCI_MAX_SLOTS - 1) * PCI_MAX_FUNCTIONS,
	       "a PCI function for every disk and the console device");

/* io_uring entries per I/O thread (CQ is 4x): room for a few queues' worth
 * of requests per submit batch. */
#define IOTHREAD_RING_ENTRIES 512u

/* vmm_disk_config.flags are handed to vblk as they are. */
_Static_assert(VMM_DISK_READONLY == VBLK_OPT_READONLY &&
		       VMM_DISK_DIRECT == VBLK_OPT_DIRECT &&
		       VMM_DISK_NO_FLUSH == VBLK_OPT_NO_FLUSH &&
		       VMM_DISK_NO_EVENT_IDX == VBLK_OPT_NO_EVENT_IDX &&
		       VMM_DISK_NO_LOCK == VBLK_OPT_NO_LOCK,
	       "disk flag values differ");

struct machine_disk {
	struct vblk_dev *dev;
	struct virtio_transport *transport;
	unsigned int nq; /* its queues (disk_queues_in()) */
};

struct machine {
	struct machine_disk *disks; /* vm->nr_disks of them */
	/* virtio-console with the vmm_add_port() ports, if any. */
	struct vcon *ports;
	struct virtio_transport *ports_transport;
	struct iothread **iothreads;
	unsigned int nr_iothreads;
	struct uart8250 *uart;
	struct i8042 *kbd;
	struct rtc *rtc;
	struct pvexit *pvexit;
	struct acpipm *pm;
	struct pci_bus *pci;
	/* Host side of COM1: the console fds and the "vmm-console" thread. */
	struct console *console;
	/* KVM_IRQ_LINE failures come at the guest's UART pace: rate-limited. */
	struct log_limit irq_log;
};

/* Raise/lower a legacy IRQ line on the in-kernel PIC + IOAPIC. */
static void machine_set_irq_line(void *opaque, int level)
{
	struct vmm *vm = opaque;
	struct kvm_irq_level irq = { .irq = COM1_IRQ, .level = (uint32_t)level };

	if (ioctl(vm->vm_fd, KVM_IRQ_LINE, &irq) < 0)
		log_limited(&vm->machine->irq_log, VMM_LOG_WARN, "uart",
			    "KVM_IRQ_LINE %u: %s", irq.irq, strerror(errno));
}

static void machine_guest_reset(void *opaque)
{
	vmm_info("guest requested a reset");
	vm_request_exit(opaque, VMM_EXIT_GUEST_RESET);
}

/* Context: vCPU thread.  ACPI S5. */
static void machine_guest_poweroff(void *opaque)
{
	vmm_info("guest powered off");
	vm_request_exit(opaque, VMM_EXIT_POWEROFF);
}

/* Context: vCPU thread.  The guest wrote its exit status (guest-controlled,
 * any value: only stored and reported). */
static void machine_guest_exit(void *opaque, uint32_t status)
{
	struct vmm *vm = opaque;
	bool unclaimed = false;

	if (!__atomic_compare_exchange_n(&vm->guest_status_claimed, &unclaimed,
					 true, false, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED))
		return; /* a status was reported already */
	vm->guest_status = status;
	vmm_info("guest reported exit status %u", status);
	vm_request_exit(vm, VMM_EXIT_GUEST_STATUS);
}

/* The ACPI tables at ACPI_TABLES_GPA, describing this machine. */
static int machine_write_acpi(struct vmm *vm)
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
static int machine_cmdline(struct vmm *vm, char **out)
{
	static const char extra[] = " irqaffinity=0";
	const char *c = vm->cmdline ? vm->cmdline : "";

	*out = NULL;
	if (vm->nr_vcpus <= VCPU_MAX_XAPIC_VCPUS || strstr(c, "irqaffinity="))
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

static int machine_load_boot(struct vmm *vm, struct x86_boot_entry *entry)
{
	char *cmdline;
	int ret;

	ret = machine_write_acpi(vm);
	if (ret)
		return ret;
	ret = machine_cmdline(vm, &cmdline);
	if (ret)
		return ret;
	ret = x86_load_files(&vm->mem, vm->kernel_path, vm->initrd_path,
			     cmdline ? cmdline : vm->cmdline, vm->nr_vcpus,
			     ACPI_TABLES_GPA, entry);
	free(cmdline);
	return ret;
}

/*
 * More than 255 vCPUs: APIC IDs need 32 bits in KVM's MSI routes and
 * KVM_SIGNAL_MSI (the destination's high bits in address_hi, irq.c), and a
 * broadcast is 0xffffffff in x2APIC mode, not 0xff.  Before any vCPU
 * exists (KVM refuses it afterwards).
 */
static int machine_enable_x2apic_api(struct vmm *vm)
{
	struct kvm_enable_cap cap = {
		.cap = KVM_CAP_X2APIC_API,
		.args[0] = KVM_X2APIC_API_USE_32BIT_IDS |
			   KVM_X2APIC_API_DISABLE_BROADCAST_QUIRK,
	};

	if (vm->nr_vcpus <= VCPU_MAX_XAPIC_VCPUS)
		return 0;
	if (ioctl(vm->vm_fd, KVM_ENABLE_CAP, &cap) < 0) {
		int ret = -errno;

		vmm_err("%u vCPUs need KVM_CAP_X2APIC_API: %s", vm->nr_vcpus,
			strerror(-ret));
		return ret == -EINVAL ? -ENOTSUP : ret;
	}
	return 0;
}

static int machine_setup_kvm(struct vmm *vm)
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
	ret = machine_enable_x2apic_api(vm);
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

static int machine_setup_memory(struct vmm *vm)
{
	int ret = guest_mem_init(&vm->mem, vm->ram_size, vm->mem_backend);

	if (ret)
		return ret;
	for (unsigned int i = 0; i < vm->mem.nr_regions; i++) {
		const struct guest_region *r = &vm->mem.regions[i];
		struct kvm_userspace_memory_region slot = {
			.slot = i,
			.guest_phys_addr = r->gpa,
			.memory_size = r->size,
			.userspace_addr = (uintptr_t)r->hva,
		};

		if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &slot) < 0) {
			ret = -errno;
			vmm_err("KVM_SET_USER_MEMORY_REGION slot %u: %s", i,
				strerror(errno));
			return ret == -ENOMEM ? ret : -EIO;
		}
	}
	return 0;
}

static struct kvm_cpuid2 *machine_supported_cpuid(struct vmm *vm)
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

static int machine_setup_vcpus(struct vmm *vm, const struct x86_boot_entry *entry)
{
	struct kvm_cpuid2 *cpuid;
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	int ret = 0;

	cpuid = machine_supported_cpuid(vm);
	if (!cpuid)
		return -EIO;
	/*
	 * The TSC-deadline timer is the LAPIC timer mode Linux prefers: it
	 * needs no calibration.  Without it Linux calibrates the LAPIC timer
	 * against the PIT, which fails when the host is itself virtual or busy
	 * ("APIC timer disabled due to verification failure"), and the guest
	 * then runs on periodic PIT ticks that CPU 0 forwards to every other
	 * vCPU by IPI, never idle-tickless: in the nested rig 3,000 PV-IPI
	 * hypercalls and 4,000 EOI exits per boot.  QEMU enables it too.
	 */
	if (kvm_check_cap(vm->kvm.fd, KVM_CAP_TSC_DEADLINE_TIMER) > 0)
		cpuid_set_tsc_deadline(cpuid);
	vm->vcpus = calloc(vm->nr_vcpus, sizeof(*vm->vcpus));
	if (!vm->vcpus) {
		free(cpuid);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		vm->vcpus[i].fd = -1;
		vm->vcpus[i].stats.fd = -1;
	}
	for (unsigned int i = 0; i < vm->nr_vcpus && !ret; i++)
		ret = vcpu_create(vm, i, cpuid, &vm->vcpus[i]);
	free(cpuid);
	if (ret)
		return ret;
	/* Only the BSP gets an entry state; APs wait for INIT-SIPI from Linux
	 * in the in-kernel LAPIC (KVM_MP_STATE_UNINITIALIZED). */
	ret = vcpu_get_sregs(&vm->vcpus[0], &sregs);
	if (ret)
		return ret;
	memset(&regs, 0, sizeof(regs));
	x86_boot_regs(entry, &regs, &sregs);
	return vcpu_set_boot_regs(&vm->vcpus[0], &regs, &sregs);
}

/*
 * PCI configuration mechanism #1 is a write of the address to 0xCF8 and
 * an access to 0xCFC: two exits to us per configuration access.  The
 * address write has no effect the guest can see until its next access to
 * 0xCF8-0xCFF, and every exit drains the coalesced ring first, so KVM may
 * log it instead of exiting: half the exits for configuration space.
 * (Linux probes a lot of it: on AMD family 0Fh/10h CPUs, as QEMU's TCG
 * models report, arch/x86/kernel/aperture_64.c scans all 256 buses twice
 * looking for an AGP bridge: 32,000 exits, a fifth of a boot in the rig.)
 * The zone also holds 0xCF9 (reset control), so a reset written there
 * takes effect at the vCPU's next exit to us rather than at once; Linux
 * follows it with a triple fault, which is such an exit.  Optional: only
 * slower without.
 */
static void machine_coalesce_pci_address(struct vmm *vm)
{
	int ret = vm_coalesce_pio(vm, 0xcf8, 4);

	if (ret)
		vmm_dbg("coalesced PIO for 0xcf8 not available: %s",
			strerror(-ret));
}

/* Context: console thread.  Guest input for COM1. */
static size_t machine_console_input(void *opaque, const void *buf, size_t len)
{
	struct vmm *vm = opaque;

	return uart8250_push_input(vm->machine->uart, buf, len);
}

/* Context: console thread, which could not be confined. */
static void machine_console_failed(void *opaque)
{
	vm_request_exit(opaque, VMM_EXIT_ERROR);
}

/* Context: vCPU thread, COM1's lock held.  Never blocks (console.h). */
static void machine_console_output(void *opaque, const uint8_t *buf, size_t len)
{
	console_write(opaque, buf, len);
}

static int machine_setup_devices(struct vmm *vm, struct machine *m)
{
	struct console_params cp = {
		.in_fd = vm->console_in,
		.out_fd = vm->console_out,
		.push_input = machine_console_input,
		.opaque = vm,
		.seccomp = vm->seccomp,
		.failed = machine_console_failed,
	};
	int ret;

	ret = console_create(&cp, &m->console);
	if (ret)
		return ret;
	ret = uart8250_create(&vm->pio, COM1_BASE, machine_set_irq_line, vm,
			      machine_console_output, m->console, &m->uart);
	if (ret)
		return ret;
	ret = i8042_create(&vm->pio, machine_guest_reset, vm, &m->kbd);
	if (ret)
		return ret;
	ret = rtc_create(&vm->pio, &m->rtc);
	if (ret)
		return ret;
	ret = pvexit_create(&vm->pio, VMM_EXIT_PORT, machine_guest_exit, vm,
			    &m->pvexit);
	if (ret)
		return ret;
	ret = pci_bus_create(&vm->pio, &vm->mmio, PCI_MMIO32_BASE,
			     PCI_MMIO32_SIZE, &m->pci);
	if (ret)
		return ret;
	pci_bus_set_reset_handler(m->pci, machine_guest_reset, vm);
	/* Up to 31 devices: one slot each, as always; more fill the slots
	 * 8 functions at a time, in the order they are added. */
	if (vm->nr_disks + (vm->nr_ports ? 1u : 0u) > PCI_MAX_SLOTS - 1) {
		ret = pci_bus_set_functions_per_slot(m->pci, PCI_MAX_FUNCTIONS);
		if (ret)
			return ret;
	}
	return acpipm_create(&vm->pio, ACPI_PM_BASE, ACPI_SLP_TYP_S5,
			     machine_guest_poweroff, vm, &m->pm);
}

/*
 * How many queues disk @id gets when the disks may have @budget queues in
 * all: its num_queues, or by default one per vCPU up to
 * VMM_MAX_DISK_QUEUES, and no more than an equal share of what the explicit
 * counts leave of @budget among the disks that take the default.  At least
 * 1 (machine_check_queues() has checked that everything fits).
 */
static unsigned int disk_queues_in(const struct vmm *vm, unsigned int id,
				   unsigned int budget)
{
	const struct vmm_disk_config *c = &vm->disks[id].cfg;
	unsigned int explicit = 0, defaults = 0, share;

	if (c->num_queues)
		return c->num_queues;
	for (unsigned int i = 0; i < vm->nr_disks; i++) {
		if (vm->disks[i].cfg.num_queues)
			explicit += vm->disks[i].cfg.num_queues;
		else
			defaults++;
	}
	share = explicit < budget ? (budget - explicit) / defaults : 0;
	return MAX(1u, MIN(vm->nr_vcpus, MIN((unsigned int)VMM_MAX_DISK_QUEUES,
					     share)));
}

/* MSI routes of the virtio-console (vmm_add_port()), if it has ports. */
static unsigned int port_routes(const struct vmm *vm)
{
	return vm->nr_ports ? VPCI_MSI_ROUTES(VCON_NUM_QUEUES(vm->nr_ports)) : 0;
}

/* Queues of disk @id: as started, or as a start would make them. */
static unsigned int disk_num_queues(const struct vmm *vm, unsigned int id)
{
	const struct machine *m = vm->machine;

	if (m && m->disks && m->disks[id].nq)
		return m->disks[id].nq;
	return disk_queues_in(vm, id, VMM_MAX_QUEUES > port_routes(vm) ?
					      VMM_MAX_QUEUES - port_routes(vm) : 0);
}

/*
 * Before anything is built: every queue of every disk gets an MSI route,
 * and KVM's table (what this kernel reports for KVM_CAP_IRQ_ROUTING, at
 * most IRQ_MAX_ROUTES) must hold them next to the irqchip's routes.  A
 * configuration that cannot fit fails here, not as a NEEDS_RESET at the
 * guest's DRIVER_OK.  The virtio-console's queues (vmm_add_port()) take
 * routes too.  *@budget: the queues all disks may have.
 */
static int machine_check_queues(struct vmm *vm, unsigned int *budget)
{
	int cap = kvm_check_cap(vm->kvm.fd, KVM_CAP_IRQ_ROUTING);
	unsigned int routes = IRQ_MAX_ROUTES, need = 0;

	if (cap > 0 && (unsigned int)cap < routes)
		routes = (unsigned int)cap;
	*budget = routes > IRQ_CHIP_ROUTES ? routes - IRQ_CHIP_ROUTES : 0;
	*budget = MIN(*budget, (unsigned int)VMM_MAX_QUEUES);
	*budget = *budget > port_routes(vm) ? *budget - port_routes(vm) : 0;
	for (unsigned int i = 0; i < vm->nr_disks; i++) {
		unsigned int nq = vm->disks[i].cfg.num_queues;

		need += VPCI_MSI_ROUTES(nq ? nq : 1);
	}
	if (need > *budget) {
		vmm_err("the disks need %u queues (one KVM MSI route each) but "
			"KVM's routing table leaves room for %u (%u entries, %u "
			"for the PIC and IOAPIC, %u for the console ports): "
			"lower num_queues", need, *budget, routes,
			IRQ_CHIP_ROUTES, port_routes(vm));
		return -ENOSPC;
	}
	return 0;
}

/* Descriptors this process has open now, or 0 when /proc cannot say. */
static unsigned int machine_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned int n = 0;

	if (!d)
		return 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n > 3 ? n - 3 : 0; /* ".", ".." and the DIR's own fd */
}

/*
 * Every queue holds two eventfds (kick, interrupt), every vCPU two fds
 * (its own, its statistics), every I/O thread three (io_uring, two
 * eventfds).  Without room for them a disk would fail at the guest's
 * DRIVER_OK ("out of eventfds", a device reset in the middle of its boot):
 * say so now.  An estimate with some slack, compared with RLIMIT_NOFILE's
 * soft limit (minivmm raises it to the hard one).
 */
static int machine_check_fds(struct vmm *vm)
{
	unsigned long long need = 64, queues = 0;
	struct rlimit rl;
	unsigned int open;

	for (unsigned int i = 0; i < vm->nr_disks; i++)
		queues += disk_num_queues(vm, i);
	need += 2 * queues + 5ull * vm->nr_vcpus + 2ull * vm->nr_disks;
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	open = machine_open_fds();
	if (open + need <= rl.rlim_cur)
		return 0;
	vmm_err("%u vCPUs and %u disks (%llu queues, two eventfds each) need "
		"about %llu more file descriptors; %u are open and "
		"RLIMIT_NOFILE is %llu: raise it (ulimit -n) or lower "
		"num_queues", vm->nr_vcpus, vm->nr_disks, queues, need, open,
		(unsigned long long)rl.rlim_cur);
	return -EMFILE;
}

static int machine_setup_disks(struct vmm *vm, struct machine *m,
			       unsigned int budget)
{
	int ret;

	if (!vm->nr_disks)
		return 0;
	m->disks = calloc(vm->nr_disks, sizeof(*m->disks));
	m->iothreads = calloc(vm->nr_vcpus, sizeof(*m->iothreads));
	if (!m->disks || !m->iothreads)
		return -ENOMEM;
	/* One I/O thread per vCPU: queue i of every disk is served by thread
	 * i mod nr_vcpus, so by default queue, vector and thread match one
	 * vCPU. */
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		ret = iothread_create(i, IOTHREAD_RING_ENTRIES, &m->iothreads[i]);
		if (ret)
			return ret;
		m->nr_iothreads++;
		iothread_set_batch(m->iothreads[i],
				   vm->iothread_sched == VMM_IOTHREAD_SCHED_BATCH);
		ret = iothread_start(m->iothreads[i]);
		if (ret)
			return ret;
	}
	for (unsigned int i = 0; i < vm->nr_disks; i++) {
		const struct vmm_disk_config *c = &vm->disks[i].cfg;
		struct vblk_options o = {
			.path = c->path,
			.fd = vm->disks[i].fd,
			.flags = c->flags,
			.num_queues = (uint16_t)disk_queues_in(vm, i, budget),
			.queue_size = c->queue_size,
			.serial = c->serial,
		};
		struct vblk_dev_params dp = {
			.iothreads = m->iothreads,
			.nr_iothreads = m->nr_iothreads,
			.poll_us = c->poll_us,
		};
		struct vpci_params tp = {
			.bus = m->pci,
			.irq = vm->irq,
			.mem = &vm->mem,
			.ops = vblk_dev_ops(),
			.num_queues = o.num_queues,
			.ioeventfd_any_length =
				kvm_check_cap(vm->vm_fd, KVM_CAP_IOEVENTFD_ANY_LENGTH) > 0,
		};
		struct vblk *blk;

		if (!c->num_queues && o.num_queues < MIN(vm->nr_vcpus,
							 (unsigned int)VMM_MAX_DISK_QUEUES))
			vmm_info("disk %u: %u queues instead of one per vCPU, so "
				 "that every disk's queues fit in KVM's MSI routes",
				 i, o.num_queues);
		m->disks[i].nq = o.num_queues;
		ret = vblk_open(&o, &blk);
		if (ret) {
			vmm_err("disk %u (%s): cannot open the image: %s", i,
				c->path ? c->path : "fd", strerror(-ret));
			return ret;
		}
		dp.blk = blk;
		ret = vblk_dev_create(&dp, &m->disks[i].dev);
		if (ret) {
			vblk_close(blk);
			return ret;
		}
		tp.dev = m->disks[i].dev;
		tp.max_queue_size = vblk_queue_size(blk);
		ret = vpci_create(&tp, &m->disks[i].transport);
		if (ret) {
			vmm_err("disk %u: cannot create its virtio-pci device: %s", i,
				strerror(-ret));
			return ret;
		}
		vmm_info("disk %u: %s, %u queues of %u, %llu sectors", i,
			 c->path ? c->path : "fd", o.num_queues, tp.max_queue_size,
			 (unsigned long long)vblk_capacity(blk));
	}
	return 0;
}

/* Port threads confine themselves (console class) before their loop. */
static int machine_confine_port_thread(void *opaque)
{
	return sandbox_install(opaque, SANDBOX_CLASS_CONSOLE);
}

/* The virtio-console device of vmm_add_port(): its own copies of the fds
 * (the configuration keeps its own, so a failed start can be retried). */
static int machine_setup_ports(struct vmm *vm, struct machine *m)
{
	struct vcon_port_params pp[VCON_MAX_PORTS];
	struct vcon_params cp = {
		.ports = pp,
		.nr_ports = vm->nr_ports,
		.thread_init = machine_confine_port_thread,
		.thread_opaque = vm->seccomp, /* NULL: no filter */
	};
	struct vpci_params tp = {
		.bus = m->pci,
		.irq = vm->irq,
		.mem = &vm->mem,
		.ops = vcon_dev_ops(),
		.max_queue_size = VCON_QUEUE_SIZE,
		.ioeventfd_any_length =
			kvm_check_cap(vm->vm_fd, KVM_CAP_IOEVENTFD_ANY_LENGTH) > 0,
	};
	int ret;

	if (!vm->nr_ports)
		return 0;
	for (unsigned int i = 0; i < vm->nr_ports; i++) {
		const struct vm_port_cfg *c = &vm->ports[i];

		pp[i].name = c->name;
		pp[i].in_fd = c->in_fd >= 0 ? fcntl(c->in_fd, F_DUPFD_CLOEXEC, 0) : -1;
		pp[i].out_fd = c->out_fd >= 0 ? fcntl(c->out_fd, F_DUPFD_CLOEXEC, 0) : -1;
	}
	ret = vcon_create(&cp, &m->ports); /* owns the dups, even on failure */
	if (ret)
		return ret;
	tp.dev = m->ports;
	tp.num_queues = vcon_num_queues(m->ports);
	ret = vpci_create(&tp, &m->ports_transport);
	if (ret)
		vmm_err("cannot create the virtio-console device: %s", strerror(-ret));
	return ret;
}

/* Stop every disk (drain in-flight I/O) and then the I/O threads.  The
 * VM fd goes next (machine_join() is never followed by another run of
 * it): its KVM wiring is left for KVM to drop (vpci_shutdown()). */
static void machine_stop_disks(struct vmm *vm, struct machine *m)
{
	for (unsigned int i = 0; m->disks && i < vm->nr_disks; i++)
		if (m->disks[i].transport)
			vpci_shutdown(m->disks[i].transport);
	for (unsigned int i = 0; i < m->nr_iothreads; i++)
		iothread_stop(m->iothreads[i]);
}

static void machine_destroy_ports(struct machine *m)
{
	vpci_destroy(m->ports_transport); /* stops the device first */
	m->ports_transport = NULL;
	vcon_destroy(m->ports);
	m->ports = NULL;
}

static void machine_destroy_disks(struct vmm *vm, struct machine *m)
{
	for (unsigned int i = 0; m->disks && i < vm->nr_disks; i++) {
		vpci_destroy(m->disks[i].transport);
		vblk_dev_destroy(m->disks[i].dev);
	}
	free(m->disks);
	m->disks = NULL;
	for (unsigned int i = 0; i < m->nr_iothreads; i++)
		iothread_destroy(m->iothreads[i]);
	free(m->iothreads);
	m->iothreads = NULL;
	m->nr_iothreads = 0;
}

/* Context: I/O thread (iothread_call_sync). */
static int machine_confine_iothread(void *opaque)
{
	return sandbox_install(opaque, SANDBOX_CLASS_IO);
}

/* The I/O threads take their filter once every device exists (their setup
 * calls, e.g. watching ioeventfds, ran unconfined); vCPU and console
 * threads install theirs themselves. */
static int machine_confine_iothreads(struct vmm *vm, struct machine *m)
{
	int ret;

	for (unsigned int i = 0; vm->seccomp && i < m->nr_iothreads; i++) {
		ret = iothread_call_sync(m->iothreads[i], machine_confine_iothread,
					 vm->seccomp);
		if (ret) {
			vmm_err("seccomp: cannot confine I/O thread %u: %s", i,
				strerror(-ret));
			return ret;
		}
	}
	return 0;
}

int machine_start(struct vmm *vm)
{
	struct x86_boot_entry entry;
	struct machine *m;
	unsigned int budget;
	int ret;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	log_limit_init(&m->irq_log, "failed interrupt line changes");
	vm->machine = m;

	ret = machine_check_queues(vm, &budget);
	if (!ret)
		ret = machine_check_fds(vm);
	if (ret)
		goto err;

	if (vm->seccomp_mode != VMM_SECCOMP_OFF) {
		ret = sandbox_build(vm->seccomp_mode, &vm->seccomp);
		if (ret)
			goto err;
	}
	ret = machine_setup_kvm(vm);
	if (ret)
		goto err;
	ret = machine_setup_memory(vm);
	if (ret)
		goto err;
	ret = machine_load_boot(vm, &entry);
	if (ret)
		goto err;
	ret = irq_create(vm->vm_fd, NULL, NULL, &vm->irq);
	if (ret)
		goto err;
	ret = machine_setup_devices(vm, m);
	if (ret)
		goto err;
	ret = machine_setup_disks(vm, m, budget);
	if (ret)
		goto err;
	ret = machine_setup_ports(vm, m);
	if (ret)
		goto err;
	ret = machine_setup_vcpus(vm, &entry);
	if (ret)
		goto err;
	machine_coalesce_pci_address(vm);
	/* Every file is open; no thread is confined or runs the guest yet:
	 * the embedder's hook, e.g. a uid/gid drop (vmm_set_start_hook()). */
	if (vm->start_hook && (ret = vm->start_hook(vm->start_hook_opaque))) {
		ret = ret < 0 ? ret : -ECANCELED;
		vmm_err("start hook: %s", strerror(-ret));
		goto err;
	}
	ret = machine_confine_iothreads(vm, m);
	if (ret)
		goto err;
	ret = console_start(m->console);
	if (ret)
		goto err;
	/* After the start hook: threads confined before a uid drop would
	 * die on glibc's set*id broadcast. */
	if (m->ports) {
		ret = vcon_start_threads(m->ports);
		if (ret)
			goto err;
	}
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		ret = vcpu_start(&vm->vcpus[i]);
		if (ret) {
			vm_request_exit(vm, VMM_EXIT_ERROR);
			goto err;
		}
	}
	return 0;
err:
	machine_join(vm);
	machine_destroy(vm);
	return ret;
}

void machine_join(struct vmm *vm)
{
	struct machine *m = vm->machine;

	/* vCPU threads end by themselves once the VM is stopping
	 * (vm_request_exit() kicked them); joining them is the wait. */
	if (vm->vcpus)
		for (unsigned int i = 0; i < vm->nr_vcpus; i++)
			vcpu_join(&vm->vcpus[i]);
	if (m)
		machine_stop_disks(vm, m);
	/* Writes out what the guest queued on its ports (vcon.h). */
	if (m && m->ports_transport)
		vpci_quiesce(m->ports_transport);
	/* Last: the guest's final output is flushed (for a bounded time). */
	if (m)
		console_stop(m->console);
}

void machine_destroy(struct vmm *vm)
{
	struct machine *m = vm->machine;

	/* The ring lives in vCPU 0's mapping. */
	vm->coalesced_ring = NULL;
	if (vm->vcpus) {
		for (unsigned int i = 0; i < vm->nr_vcpus; i++)
			vcpu_destroy(&vm->vcpus[i]);
		free(vm->vcpus);
		vm->vcpus = NULL;
	}
	if (m) {
		/* Disks before the bus they sit on, and before the I/O
		 * threads their queues were served by. */
		machine_destroy_disks(vm, m);
		machine_destroy_ports(m);
		if (m->pci)
			pci_bus_destroy(m->pci);
		if (m->kbd)
			i8042_destroy(m->kbd);
		rtc_destroy(m->rtc);
		pvexit_destroy(m->pvexit);
		acpipm_destroy(m->pm);
		if (m->uart)
			uart8250_destroy(m->uart);
		console_destroy(m->console);
		log_limit_destroy(&m->irq_log, "until the VM was destroyed");
		free(m);
		vm->machine = NULL;
	}
	irq_destroy(vm->irq);
	vm->irq = NULL;
	guest_mem_destroy(&vm->mem);
	sandbox_free(vm->seccomp);
	vm->seccomp = NULL;
}

int machine_disk_stats(struct vmm *vm, unsigned int id, struct vmm_disk_stats *st)
{
	struct machine *m = vm->machine;
	struct vpci_stats ts;
	struct vmm_queue_stats q;
	struct machine_disk *d;

	st->num_queues = disk_num_queues(vm, id);
	if (!m || !m->disks || !m->disks[id].dev)
		return 0; /* never started: all zero */
	d = &m->disks[id];
	vpci_get_stats(d->transport, &ts);
	st->wiring_commits = ts.wiring_commits;
	st->wiring_ioctls = ts.wiring_ioctls;
	st->wiring_ns = ts.wiring_ns;
	st->masked_interrupts = ts.interrupts_masked;
	st->resets = ts.resets;
	st->needs_reset = ts.needs_reset;
	st->config_interrupts = ts.config_interrupts;
	st->interrupts_direct = ts.interrupts_direct;
	st->route_flushes = ts.route_flushes;
	st->route_flushes_lazy = ts.route_flushes_lazy;
	for (unsigned int i = 0; i < st->num_queues; i++) {
		struct vblk_dev_queue_stats ds;

		if (vblk_dev_queue_stats(d->dev, i, &ds) ||
		    machine_queue_stats(vm, id, i, &q))
			continue;
		st->doorbells += ds.doorbells;
		st->cancelled += ds.blk.cancelled;
		for (unsigned int t = 0; t < VMM_REQ_TYPES; t++)
			st->total.requests[t] += q.requests[t];
		st->total.bytes_read += q.bytes_read;
		st->total.bytes_written += q.bytes_written;
		st->total.io_errors += q.io_errors;
		st->total.unsupported += q.unsupported;
		st->total.kicks += q.kicks;
		st->total.interrupts += q.interrupts;
		st->total.suppressed += q.suppressed;
	}
	return 0;
}

int machine_queue_stats(struct vmm *vm, unsigned int id, unsigned int q,
			struct vmm_queue_stats *st)
{
	struct machine *m = vm->machine;
	struct vblk_dev_queue_stats ds;
	int ret;

	if (!m || !m->disks || !m->disks[id].dev)
		return -ENOENT;
	ret = vblk_dev_queue_stats(m->disks[id].dev, q, &ds);
	if (ret)
		return ret;
	memset(st, 0, sizeof(*st));
	/* enum vmm_req_type and enum vblk_stat_type list the same types in
	 * the same order. */
	for (unsigned int t = 0; t < VMM_REQ_TYPES && t < VBLK_STAT_NR; t++)
		st->requests[t] = ds.blk.reqs[t];
	st->bytes_read = ds.blk.bytes_read;
	st->bytes_written = ds.blk.bytes_written;
	st->io_errors = ds.blk.io_errors;
	st->unsupported = ds.blk.unsupported;
	st->kicks = ds.kicks;
	st->interrupts = ds.interrupts;
	st->suppressed = ds.suppressed;
	st->iothread = ds.iothread;
	return 0;
}

int machine_kvm_stats(struct vmm *vm, struct vmm_kvm_stats *st)
{
	uint64_t sum[VCPU_STAT_NR] = { 0 };
	int ret;

	if (!vm->vcpus)
		return -EBUSY;
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		ret = vcpu_add_stats(&vm->vcpus[i], sum);
		if (ret)
			return ret;
	}
	st->nr_vcpus = vm->nr_vcpus;
	st->exits = sum[VCPU_STAT_EXITS];
	st->io_exits = sum[VCPU_STAT_IO_EXITS];
	st->mmio_exits = sum[VCPU_STAT_MMIO_EXITS];
	st->halt_exits = sum[VCPU_STAT_HALT_EXITS];
	st->irq_exits = sum[VCPU_STAT_IRQ_EXITS];
	st->irq_injections = sum[VCPU_STAT_IRQ_INJECTIONS];
	st->signal_exits = sum[VCPU_STAT_SIGNAL_EXITS];
	return 0;
}

void machine_console_stats(struct vmm *vm, struct vmm_console_stats *st)
{
	struct machine *m = vm->machine;
	struct console_stats cs;

	if (!m || !m->console)
		return;
	console_get_stats(m->console, &cs);
	st->bytes_out = cs.bytes_out;
	st->bytes_dropped = cs.bytes_dropped;
	st->bytes_in = cs.bytes_in;
}
