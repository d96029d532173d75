/* SPDX-License-Identifier: MIT */
/*
 * libvmm — an embeddable virtual machine monitor on Linux KVM (x86_64).
 *
 * This is the only public header.  One struct vmm is one VM; a process may
 * hold any number of them (the library keeps no global VM state).
 *
 * Conventions
 *  - Every function returns 0 (or a documented non-negative value) on
 *    success and a negative errno value on failure.  errno is neither set nor
 *    read across the API.  Fixed meanings:
 *        -EINVAL   bad argument
 *        -EBUSY    wrong lifecycle state (e.g. configuring after vmm_start())
 *        -ENOENT   unknown id / missing file
 *        -ENOTSUP  missing KVM capability or host feature
 *        -ENOMEM   allocation failed
 *        -EIO      KVM refused or killed the VM
 *  - The library never calls exit() or abort(), whatever the input (API
 *    arguments, kernel images, disk images, or the guest itself).
 *  - Lifecycle: CONFIG --vmm_start()--> RUNNING --(guest exit | vmm_stop())-->
 *    STOPPED.  Configuration calls need CONFIG and return -EBUSY otherwise.
 *
 * Threading
 *  - A VM runs one thread per vCPU ("vmm-vcpuN") and, when it has disks,
 *    one I/O thread per vCPU ("vmm-ioN", each with its own io_uring) that
 *    serves queue i of every disk for i mod nr_vcpus == N.
 *  - vmm_stop(), vmm_wait(), vmm_get_exit_eventfd() and the stats getters
 *    are safe from any thread that the library does not own (not from a
 *    vmm_log_fn callback).  vmm_destroy() must not race with any other call
 *    on the same VM.  Calls on different VMs never interfere.
 *  - Signals.  The library never installs, changes or reads a signal
 *    disposition -- with one exception: with seccomp in KILL mode,
 *    vmm_start() installs its SIGSYS reporter if SIGSYS has the default
 *    disposition (see vmm_set_seccomp()) -- and never changes the mask of a
 *    thread it did not create.
 *    Every thread it creates (vCPU, I/O, console) starts with every signal
 *    blocked except those a fault raises on the thread itself (SIGSEGV,
 *    SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS, SIGABRT) and glibc's internal
 *    ones: process-directed signals (SIGINT, SIGTERM, SIGCHLD, ...) are
 *    delivered to the embedder's threads, never run a handler under a VMM
 *    thread's seccomp filter, and a console write to a closed pipe raises
 *    no SIGPIPE in the process.
 *  - Kicks.  To get a vCPU out of KVM_RUN (vmm_stop(), a guest reset on
 *    another vCPU) the library sends VMM_KICK_SIGNAL to that vCPU's thread
 *    (pthread_kill) and sets kvm_run.immediate_exit.  The vCPU thread keeps
 *    the signal blocked and unblocks it only inside KVM_RUN
 *    (KVM_SET_SIGNAL_MASK: its own mask minus VMM_KICK_SIGNAL), and consumes
 *    it with sigtimedwait() when KVM_RUN returns: no handler ever runs for
 *    a kick, and a kick sent just before KVM_RUN is not lost.  This works
 *    whatever the process does with the signal: SIG_DFL, SIG_IGN (a blocked
 *    signal is never discarded), a handler of the embedder's (with or
 *    without SA_SIGINFO; it is not called for kicks), or the signal blocked
 *    in the thread that calls vmm_start() (vCPU threads do not inherit it).
 *    Several VMs in one process each kick only their own threads.  One
 *    caveat: a VMM_KICK_SIGNAL sent to the whole process (kill(2)) while a
 *    VM runs may be taken by a vCPU thread that is inside KVM_RUN; that
 *    thread passes it on to the process's main thread (tgkill(2), as
 *    SI_TKILL: the sender's siginfo is lost).  An embedder that uses the
 *    signal itself should send it to a thread of its own (pthread_kill).
 */
#ifndef VMM_VMM_H
#define VMM_VMM_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility; what this header declares
 * is its exported ABI (further limited to vmm_* by libvmm/libvmm.map). */
#pragma GCC visibility push(default)

#define VMM_VERSION_MAJOR 0
#define VMM_VERSION_MINOR 2
#define VMM_VERSION_STRING "0.2.0"

/* Signal used to kick vCPU threads out of KVM_RUN (see Threading above). */
#define VMM_KICK_SIGNAL SIGUSR1

/* Limits of this release. */
/* vCPU i has APIC ID i.  Up to 255 vCPUs run in xAPIC mode; with more they
 * start in x2APIC mode and the guest reaches IDs >= 256 through the ACPI
 * MADT and KVM_FEATURE_MSI_EXT_DEST_ID (no IOMMU needed).  The MP table, for
 * guests booted with acpi=off, describes at most 254 (IDs 0..253).  Also
 * capped by the host's KVM_CAP_MAX_VCPUS (arm64 with a GICv3: 512). */
#define VMM_MAX_VCPUS 1024
#define VMM_MAX_MPTABLE_VCPUS 254
#define VMM_MIN_MEMORY (16ull << 20)
#define VMM_MAX_CMDLINE 2047 /* incl. what the library adds; NUL excluded */
/* PCI bus 0: slots 1..31 of 8 functions, one function kept for the
 * virtio-console device.  Up to 31 disks get a slot each; with more, they
 * fill the slots 8 functions at a time (multi-function slots), in order. */
#define VMM_MAX_DISKS 247
#define VMM_MAX_DISK_QUEUES 1024 /* request queues of one disk (virtio-pci's
				    1024 queues, 2048 MSI-X vectors) */
/* Request queues of all disks together: each has its own MSI-X vector and
 * KVM MSI route, and KVM's routing table holds KVM_MAX_IRQ_ROUTES (4096)
 * entries, 40 of which route the PIC and IOAPIC pins (fewer when the host
 * kernel reports a smaller table, and 2 x (ports + 1) fewer with
 * vmm_add_port() ports: see vmm_start()). */
#define VMM_MAX_QUEUES 4056

struct vmm; /* opaque */

/* Log levels (like syslog's order, smaller is more severe). */
enum vmm_log_level {
	VMM_LOG_ERROR = 0,
	VMM_LOG_WARN = 1,
	VMM_LOG_INFO = 2,
	VMM_LOG_DEBUG = 3,
};

/**
 * vmm_log_fn - receives one formatted message without trailing newline.
 * @level:  enum vmm_log_level
 * @msg:    NUL-terminated message, valid only during the call
 * @opaque: the pointer given to vmm_set_log()
 *
 * Context: may run on any thread of any VM, concurrently; must not call back
 * into libvmm.
 */
typedef void (*vmm_log_fn)(int level, const char *msg, void *opaque);

/* Why a VM stopped, as reported by vmm_wait(). */
enum vmm_exit_reason {
	VMM_EXIT_NONE = 0,	   /* still running (never returned by vmm_wait) */
	VMM_EXIT_GUEST_RESET = 1,  /* guest reset the machine: i8042 pulse or
				      port 0xCF9 (Linux `reboot`, reboot=k);
				      arm64: PSCI SYSTEM_RESET */
	VMM_EXIT_TRIPLE_FAULT = 2, /* KVM_EXIT_SHUTDOWN: triple fault (Linux
				      reboot=t uses it, a crash can too);
				      arm64: a crash system event */
	VMM_EXIT_STOPPED = 3,	   /* vmm_stop() was called */
	VMM_EXIT_ERROR = 4,	   /* the VMM failed (KVM error, internal
				      error); see the log for the reason */
	VMM_EXIT_GUEST_STATUS = 5, /* the guest wrote an exit status to the
				      exit port: vmm_get_guest_status() */
	VMM_EXIT_POWEROFF = 6,	   /* the guest powered off: ACPI S5 (Linux
				      `poweroff`, `poweroff -f`, halt -p);
				      arm64: PSCI SYSTEM_OFF */
};

/*
 * Paravirtual exit device, present in every x86 VM (arm64 has no I/O
 * ports; its guests end through PSCI): a 32-bit write (outl; outb
 * and outw count too, zero-extended) to I/O port VMM_EXIT_PORT stops the VM
 * with VMM_EXIT_GUEST_STATUS, and the value written becomes the guest's
 * exit status (vmm_get_guest_status()).  Reads of the port return
 * VMM_EXIT_PORT_MAGIC (little-endian), so a guest can probe for it.  The
 * value is the guest's to choose; the library gives it no meaning (unlike
 * QEMU's isa-debug-exit, it is reported unchanged).  From a Linux guest,
 * as root: ioperm(VMM_EXIT_PORT, 4, 1); outl(status, VMM_EXIT_PORT).
 */
#define VMM_EXIT_PORT 0xf4
#define VMM_EXIT_PORT_MAGIC 0x54495856u /* "VXIT" */

/**
 * vmm_get_version() - runtime library version.
 * @major: out, may be NULL
 * @minor: out, may be NULL
 *
 * Returns: 0.
 */
int vmm_get_version(int *major, int *minor);

/**
 * vmm_set_log() - route library messages to @fn (process-wide).
 * @fn:     callback, or NULL to restore the default: standard error, a
 *          line "libvmm: MSG" per message in one non-blocking write
 *          (vmm_log_write())
 * @opaque: passed to @fn
 * @level:  messages with a level greater than this are dropped
 *
 * This is the only process-wide setting: logging is shared by all VMs.
 * Called from a thread the library confined (a vmm_log_fn), or one
 * confined with vmm_seccomp_confine_current_thread(), it changes the
 * sink but does not look at fd 2 again.  A callback must not block either: a VMM thread that waits in it stalls
 * its vCPU or queue, and vmm_stop() waits for that thread.  One that
 * writes to stderr can do it with vmm_log_write().
 *
 * Returns: 0, or -EINVAL if @level is not an enum vmm_log_level.
 */
int vmm_set_log(vmm_log_fn fn, void *opaque, int level);

/**
 * vmm_log_write() - write text to standard error without blocking for long.
 * @buf:        the text, normally whole lines ending in '\n'
 * @len:        its length in bytes
 * @timeout_ms: how long to wait, each time stderr takes nothing, before
 *              the rest is dropped: 0 never waits (what the default log
 *              sink uses); a final report can afford a little (minivmm's
 *              --stats: 1000)
 *
 * The default log sink's way to stderr, for an embedder's own messages
 * and vmm_log_fn callbacks: a stderr that takes nothing (a pipe nobody
 * reads, as under conmon or systemd when the reader stalls) costs the
 * text, counted in vmm_log_dropped(), never a blocked thread.  The
 * embedder's open file description is not changed: a pipe or terminal is
 * written through a private non-blocking reopen (/proc/self/fd/2, kept
 * at an fd number >= 100, close-on-exec), a socket with
 * send(MSG_DONTWAIT), a regular file directly; where it cannot be
 * reopened (no /proc), after poll() says it is writable, by one thread at
 * a time (the others' texts are dropped), PIPE_BUF bytes at a time to a
 * pipe and 256 to anything else.  Up to PIPE_BUF (4096) bytes reach a
 * pipe whole or not at all; a longer text, or one to a terminal or
 * socket, may be cut (the rest is dropped, and the next text starts on a
 * new line).  After drops, the next text that goes through is preceded
 * by "libvmm: N log lines dropped: standard error would block".  Which
 * file fd 2 is gets looked at again by vmm_create() and vmm_set_log() (a
 * dup2() onto fd 2 takes effect there, and the library stops holding the
 * old one open; so does closing fd 2); an embedder that closes every fd
 * it does not know (closefrom()) calls vmm_set_log() afterwards.
 *
 * Context: any thread, also seccomp-confined ones (vmm_set_seccomp());
 * async-signal-safe.
 * Returns: 0 when all of @buf was written; -EAGAIN: stderr would block,
 * @buf (or what it did not take) dropped; -EINVAL: @buf NULL with a
 * length, or @timeout_ms < 0; another -errno of the write (-EPIPE;
 * -EBADF: fd 2 closed; -EIO).
 */
int vmm_log_write(const char *buf, size_t len, int timeout_ms);

/**
 * vmm_log_dropped() - texts vmm_log_write() and the default log sink
 * dropped (wholly or in part) since the process started.
 *
 * Returns: the count (process-wide, like the sink).
 */
uint64_t vmm_log_dropped(void);

/**
 * vmm_create() - open /dev/kvm and create an empty VM in state CONFIG.
 * @out: receives the new VM on success; untouched on failure
 *
 * Checks that KVM has the API version and capabilities libvmm needs and logs
 * a clear message if not, e.g.
 * "KVM is not available: /dev/kvm: No such file or directory".
 * Defaults: 1 vCPU, 256 MiB RAM, no kernel, console on fds 0/1.
 *
 * Returns: 0; -EINVAL if @out is NULL; -ENOENT if /dev/kvm does not exist;
 * -EACCES/-EPERM if it cannot be opened; -ENOTSUP if KVM lacks a required
 * capability or has a different API version; -ENOMEM; -EIO if
 * KVM_CREATE_VM fails for another reason.
 */
int vmm_create(struct vmm **out);

/**
 * vmm_destroy() - stop the VM if running, join every thread, free all.
 * @vm: VM or NULL (then a no-op)
 *
 * Context: must not race with any other call on @vm.
 */
void vmm_destroy(struct vmm *vm);

/**
 * vmm_set_vcpus() - number of vCPUs.
 * @vm:       VM in state CONFIG
 * @nr_vcpus: 1..VMM_MAX_VCPUS (also capped by KVM_CAP_MAX_VCPUS)
 *
 * Returns: 0; -EINVAL for NULL @vm or a count out of range; -EBUSY if
 * not in CONFIG.
 */
int vmm_set_vcpus(struct vmm *vm, unsigned int nr_vcpus);

/**
 * vmm_set_memory() - guest RAM size.
 * @vm:        VM in state CONFIG
 * @ram_bytes: at least VMM_MIN_MEMORY, a multiple of 4 KiB.  RAM that does
 *             not fit below the PCI hole (3 GiB .. 4 GiB) is placed at 4 GiB.
 *
 * Returns: 0; -EINVAL for NULL @vm or a bad size; -EBUSY if not in CONFIG.
 */
int vmm_set_memory(struct vmm *vm, uint64_t ram_bytes);

/* What guest RAM is made of: vmm_set_memory_backend(). */
enum vmm_memory_backend {
	VMM_MEMORY_ANON = 0,	/* private anonymous memory (default) */
	VMM_MEMORY_MEMFD = 1,	/* a shareable memfd (shmem) */
	VMM_MEMORY_HUGETLB = 2, /* a shareable memfd on hugetlbfs, 2 MiB pages */
};

/**
 * vmm_set_memory_backend() - what guest RAM is made of.
 * @vm:      VM in state CONFIG
 * @backend: enum vmm_memory_backend
 *
 * VMM_MEMORY_ANON (the default): private anonymous memory with
 * MADV_HUGEPAGE, so transparent huge pages under the usual THP settings.
 * VMM_MEMORY_MEMFD: a memfd mapped shared, which another process (a
 * vhost-user back end) can map; sealed against resizing.  It gets huge
 * pages only where /sys/kernel/mm/transparent_hugepage/shmem_enabled is
 * "advise" or "always" (distributions ship "never"): otherwise every page
 * the guest touches first costs a host page fault and an EPT/NPT exit
 * (see the README, "Guest RAM backends", for the measured cost).
 * VMM_MEMORY_HUGETLB: a memfd on hugetlbfs with 2 MiB pages, RAM rounded
 * up to 2 MiB; every page is reserved from the pool
 * (/proc/sys/vm/nr_hugepages) when vmm_start() maps it, so a short pool
 * fails the start (-ENOMEM) rather than the guest later.
 *
 * Returns: 0; -EINVAL for NULL @vm or an unknown @backend; -EBUSY if not
 * in CONFIG.  vmm_start() then fails with -ENOMEM (no memory, too few huge
 * pages) or -ENOTSUP (the kernel has no such memfd).
 */
int vmm_set_memory_backend(struct vmm *vm, int backend);

/**
 * vmm_set_kernel() - Linux kernel to boot directly: on x86 a bzImage (64-bit
 * boot protocol) or an uncompressed vmlinux (PVH); on arm64 an Image.
 * @vm:      VM in state CONFIG
 * @kernel:  x86: path to a bzImage (boot protocol >= 2.06, relocatable or
 *           loadable at its preferred address, 64-bit entry point), or to
 *           an x86-64 ELF vmlinux with a PVH entry note (CONFIG_PVH):
 *           told apart by the file's first bytes.  arm64: path to a Linux
 *           arm64 Image (Documentation/arm64/booting.rst; Debian's
 *           vmlinuz-*-arm64 is one), booted with a device tree the library
 *           writes
 * @initrd:  path to an initrd/initramfs, or NULL
 * @cmdline: kernel command line, or NULL for ""
 *
 * The files are only recorded here; they are opened and validated by
 * vmm_start(), which reports a bad image.  The library appends nothing to the
 * command line that the caller did not ask for, except what the platform
 * needs (see README: "pci=conf1" style options are the caller's choice).
 *
 * Returns: 0; -EINVAL for NULL @vm/@kernel or a command line longer than
 * VMM_MAX_CMDLINE; -ENOMEM; -EBUSY if not in CONFIG.
 */
int vmm_set_kernel(struct vmm *vm, const char *kernel, const char *initrd,
		   const char *cmdline);

/**
 * vmm_set_console() - wire the COM1 8250 UART.
 * @vm:     VM in state CONFIG
 * @in_fd:  bytes read from it are the guest's serial input, or -1 for none.
 *          The library does not change the terminal mode.
 * @out_fd: guest serial output is written here, or -1 to discard it
 *
 * The fds are borrowed: they must stay open until vmm_destroy().  The
 * library never changes their file status flags (O_NONBLOCK stays as the
 * embedder set it, e.g. on a terminal shared with a shell).
 *
 * Console back-pressure: the console never blocks the guest, vmm_stop() or
 * vmm_wait().  Guest output that @out_fd does not take at once is queued in
 * a 64 KiB buffer that the VM's console thread writes out as the fd
 * accepts it; output that does not fit is dropped and counted
 * (vmm_get_console_stats()), and a warning is logged when dropping starts
 * (at most every 10 s).  The UART's transmitter always reads as empty:
 * the guest never waits for the host's reader (a stalled pipe, a terminal
 * after Ctrl-S), rather than busy-polling it as real flow control would.
 * A pipe, FIFO, terminal or character device is read and written through
 * the library's own non-blocking open file description of the same file
 * (vmm_start() reopens /proc/self/fd/N); a regular file or block device,
 * or a description that is already O_NONBLOCK, is used as it is; a socket,
 * or an fd that cannot be reopened (no /proc, permissions), is only
 * touched after poll() reports it ready (output in chunks of at most 256
 * bytes), which cannot block unless another writer or reader uses the
 * same pipe concurrently.  When the VM stops, what is still queued gets at
 * most one more second to be written; the rest is dropped and counted.
 *
 * Returns: 0; -EINVAL for NULL @vm or fds < -1; -EBUSY if not in CONFIG.
 */
int vmm_set_console(struct vmm *vm, int in_fd, int out_fd);

/* Counters of the COM1 console; extensible like struct vmm_disk_config. */
struct vmm_console_stats {
	uint32_t struct_size;	/* = sizeof(struct vmm_console_stats) */
	uint32_t pad;
	uint64_t bytes_out;	/* guest output written to out_fd */
	uint64_t bytes_dropped; /* guest output dropped: out_fd did not take
				   it in time (or failed, e.g. EPIPE) */
	uint64_t bytes_in;	/* read from in_fd and taken by the guest's UART */
};

/**
 * vmm_get_console_stats() - console counters.
 * @vm: VM (any state; all 0 before vmm_start(), kept after the VM stopped
 *      until vmm_destroy())
 * @st: out; set st->struct_size first.  Any size from the first published
 *      one (32 bytes) up is accepted; fields that do not fit are not
 *      written.
 *
 * Returns: 0; -EINVAL for NULL or a too small struct_size.
 */
int vmm_get_console_stats(struct vmm *vm, struct vmm_console_stats *st);

/* Disk flags for struct vmm_disk_config.flags. */
#define VMM_DISK_READONLY (1u << 0) /* VIRTIO_BLK_F_RO, image opened O_RDONLY */
#define VMM_DISK_DIRECT (1u << 1)   /* open with O_DIRECT (bypass page cache) */
#define VMM_DISK_NO_FLUSH (1u << 2) /* no VIRTIO_BLK_F_FLUSH: writes are not
				       made durable (unsafe, for scratch) */
#define VMM_DISK_NO_LOCK (1u << 4) /* do not lock the image.  By default
				      vmm_start() takes an OFD lock on it,
				      shared for READONLY, exclusive
				      otherwise: a second writable user (VMM
				      or disk of this VM) and any user of an
				      image opened writable fail with -EBUSY
				      (like QEMU's file.locking) */

/*
 * Configuration of one virtio-blk disk.  Zero-initialise, set struct_size to
 * sizeof(struct vmm_disk_config), then fill what you need.  New fields are
 * only ever appended; the library reads struct_size to know which fields the
 * caller has, so binaries built against an older header keep working.
 */
struct vmm_disk_config {
	uint32_t struct_size; /* = sizeof(struct vmm_disk_config) */
	uint32_t flags;	      /* VMM_DISK_* */
	const char *path;     /* image path, or NULL and use @fd */
	int fd;		      /* used when @path is NULL; dup'ed */
	uint16_t num_queues;  /* 0 = one per vCPU (see vmm_add_disk());
				 else 1..VMM_MAX_DISK_QUEUES */
	uint16_t queue_size;  /* 0 = 256; power of two, <= 1024 */
	const char *serial;   /* VIRTIO_BLK_T_GET_ID answer (<= 20 bytes), or NULL */
	uint32_t poll_us;     /* I/O-thread busy-poll window in microseconds
				 before sleeping (0 = off: sleep at once) */
};

/**
 * vmm_add_disk() - attach a virtio-blk-pci disk.
 * @vm:     VM in state CONFIG
 * @cfg:    configuration (see struct vmm_disk_config)
 * @out_id: receives the disk id (0, 1, ... in order of addition), or NULL
 *
 * The device has @cfg->num_queues request queues, each with its own MSI-X
 * vector and KVM MSI route, served by I/O thread (queue index mod number of
 * vCPUs).  All disks together have at most VMM_MAX_QUEUES queues, which is
 * checked here for the explicit counts (a default counts as 1).  The
 * default, 0, is one per vCPU, capped like QEMU's
 * virtio_pci_optimal_num_queues() at VMM_MAX_DISK_QUEUES, and lowered by
 * vmm_start() so that every disk fits: disks with the default share
 * equally what the explicit counts leave of VMM_MAX_QUEUES (logged).
 * The image is opened by vmm_start(), which fails if it cannot be (or is
 * neither a regular file nor a block device: a FIFO is refused, never
 * waited on).
 *
 * Guest requests are bounded: a read or write carries at most 4 MiB of
 * data (larger ones complete with VIRTIO_BLK_S_IOERR and do no I/O), and
 * the device advertises size_max so that seg_max * size_max <= 4 MiB (a
 * driver honouring both never exceeds it).  When the VM stops or the guest
 * resets the device, requests still in flight are cancelled rather than
 * waited for; a cancelled request was never acknowledged to the guest.
 *
 * Returns: 0; -EINVAL for a bad argument (NULL, struct_size too small,
 * neither path nor fd, num_queues above VMM_MAX_DISK_QUEUES, queue size not
 * a power of two in 4..1024, serial longer than 20 bytes, unknown flag);
 * -EBADF if @cfg->fd cannot be duplicated; -ENOSPC if the PCI bus is full
 * (VMM_MAX_DISKS devices) or the disks' queues would exceed VMM_MAX_QUEUES
 * (logged); -ENOMEM; -EBUSY if not in CONFIG.
 */
int vmm_add_disk(struct vmm *vm, const struct vmm_disk_config *cfg,
		 unsigned int *out_id);

/*
 * A named byte-stream port between the host and the guest: one port of the
 * VM's virtio-console device (virtio-pci, VIRTIO_CONSOLE_F_MULTIPORT; no
 * port is a console).  Linux sees /dev/vportNpM with its name in
 * /sys/class/virtio-ports/vportNpM/name (udev: /dev/virtio-ports/NAME).
 * Streams are binary-clean: no line discipline, no CRLF, nothing else mixed
 * in.  Zero-initialise, set struct_size, fill.
 */
#define VMM_MAX_PORTS 31
#define VMM_PORT_NAME_MAX 127 /* bytes, NUL excluded */
struct vmm_port_config {
	uint32_t struct_size; /* = sizeof(struct vmm_port_config) */
	uint32_t flags;	      /* none yet: 0 */
	const char *name;     /* required, unique per VM, 1..VMM_PORT_NAME_MAX */
	/* Host -> guest: what is read from in_fd reaches the guest's reads.
	 * EOF (or a read error) on in_fd, once the data before it is
	 * delivered, is EOF in the guest (Linux: read() returns 0).  -1: no
	 * input (the guest's reads block). */
	int in_fd;
	/* Guest -> host: what the guest writes is written to out_fd in order;
	 * a full pipe or socket holds the guest's writes back (the port's
	 * thread waits for it while the VM runs; its writes never block: a
	 * socket is written with MSG_DONTWAIT, a pipe or terminal through a
	 * private non-blocking reopen of it, your file description keeps its
	 * flags).  A failed write (EPIPE: nobody reads; SIGPIPE is blocked on
	 * the port threads) discards the port's output from then on.  -1:
	 * discarded. */
	int out_fd;
};

/**
 * vmm_add_port() - add a port to the VM's virtio-console device (the device
 * exists when the VM has at least one port; it comes after the disks on
 * the PCI bus).
 * @vm:     VM in state CONFIG
 * @cfg:    configuration; its fds are duplicated (close yours when you
 *          like; the copies live until vmm_destroy())
 * @out_id: receives the port number (0, 1, ... in order of addition: port
 *          N is /dev/vportXpN in a Linux guest), or NULL
 *
 * Each port is served by its own thread ("vmm-portN", plus "vmm-portctl"
 * for the device's control queue), started by vmm_start() after the start
 * hook and confined like the console thread under vmm_set_seccomp().
 * Guest output still queued when the VM stops is written out before
 * vmm_wait() returns, for at most half a second: what out_fd does not take
 * by then (a stalled reader, or your own thread that reads the port and
 * is now in vmm_wait()) is dropped and logged; vmm_wait() never waits for
 * a reader longer than that.
 *
 * Returns: 0; -EINVAL for a bad argument (NULL, struct_size too small, no
 * name, a name too long or already used, an unknown flag, an fd < -1);
 * -EBADF if an fd cannot be duplicated; -ENOSPC after VMM_MAX_PORTS ports;
 * -ENOMEM; -EBUSY if not in CONFIG.
 */
int vmm_add_port(struct vmm *vm, const struct vmm_port_config *cfg,
		 unsigned int *out_id);

/* Request types counted in struct vmm_queue_stats.requests[]. */
enum vmm_req_type {
	VMM_REQ_READ,
	VMM_REQ_WRITE,
	VMM_REQ_FLUSH,
	VMM_REQ_GET_ID,
	VMM_REQ_DISCARD,
	VMM_REQ_WRITE_ZEROES,
	VMM_REQ_OTHER,
	VMM_REQ_TYPES,
};

/*
 * Counters of one virtqueue (or their sum over a disk).  This struct has no
 * struct_size (vmm_get_queue_stats() fills all of it), so its layout is
 * frozen: counters added later go into struct vmm_disk_stats.
 */
struct vmm_queue_stats {
	uint64_t requests[VMM_REQ_TYPES]; /* completed, by type */
	uint64_t bytes_read, bytes_written;
	uint64_t io_errors;   /* completed with VIRTIO_BLK_S_IOERR */
	uint64_t unsupported; /* completed with VIRTIO_BLK_S_UNSUPP */
	uint64_t kicks;	      /* I/O-thread wake-ups on the queue's notify
				 eventfd; each may serve several doorbells
				 (struct vmm_disk_stats.doorbells) */
	uint64_t interrupts;  /* interrupts sent to the driver */
	uint64_t suppressed;  /* completion batches whose interrupt the
				 driver suppressed (EVENT_IDX used_event) */
	uint32_t iothread;    /* serving I/O thread index */
	uint32_t pad;
};

/*
 * Per-disk counters.  Extensible like struct vmm_disk_config: set
 * struct_size to sizeof(struct vmm_disk_stats) of the header you build
 * with; new fields are only ever appended.  The library fills the fields
 * that fit in both your struct and its own and sets struct_size to that
 * many bytes; the rest of a larger struct is left as it was (zero it).
 * VMM_DISK_STATS_SIZE_VER0 is the smallest size accepted (the first
 * published struct, through .total).
 */
struct vmm_disk_stats {
	uint32_t struct_size; /* = sizeof(struct vmm_disk_stats) */
	uint32_t num_queues;
	uint64_t wiring_commits; /* batched wiring transactions committed */
	uint64_t wiring_ioctls;	 /* KVM ioctls of those transactions */
	uint64_t wiring_ns;	 /* wall time inside them */
	uint64_t masked_interrupts; /* interrupts held pending by MSI-X masks */
	uint64_t resets;	 /* device resets by the driver */
	uint64_t needs_reset;	 /* protocol violations (NEEDS_RESET set) */
	struct vmm_queue_stats total; /* sum over the queues */
	/* ---- end of VMM_DISK_STATS_SIZE_VER0 ---- */
	uint64_t doorbells;	 /* guest notifications (queue notify writes)
				    that reached the device, summed over the
				    queues; total.kicks counts the I/O-thread
				    wake-ups that served them */
	uint64_t config_interrupts; /* configuration-change interrupts sent */
	uint64_t interrupts_direct; /* queue interrupts sent with
				       KVM_SIGNAL_MSI because their MSI-X
				       vector was rewritten while unmasked
				       and its KVM route not refreshed yet */
	uint64_t route_flushes;	 /* MSI-X route refreshes committed (one
				    KVM_SET_GSI_ROUTING each) */
	uint64_t route_flushes_lazy; /* of which started by an I/O thread
					after interrupts_direct piled up */
	uint64_t cancelled;	 /* requests a reset or stop cancelled
				    (VIRTIO_BLK_S_IOERR, never acknowledged;
				    counted in total.io_errors too, but not
				    logged as host I/O errors) */
	uint64_t driver_ok_ns_max; /* the longest the driver's DRIVER_OK
				      write stalled its vCPU: the queues'
				      interrupt wiring (one transaction),
				      the end of the MSI-X table's
				      coalescing, the device start */
};

#define VMM_DISK_STATS_SIZE_VER0 176u /* through .total */

/**
 * vmm_get_disk_stats() - counters of disk @id.
 * @vm: VM (any state after vmm_add_disk(); counters are 0 before start)
 * @id: disk id from vmm_add_disk()
 * @st: out; set st->struct_size first (see struct vmm_disk_stats); on
 *      success it holds the number of bytes filled
 *
 * Returns: 0; -EINVAL for NULL or a struct_size below
 * VMM_DISK_STATS_SIZE_VER0; -ENOENT for an unknown @id.
 */
int vmm_get_disk_stats(struct vmm *vm, unsigned int id, struct vmm_disk_stats *st);

/**
 * vmm_get_queue_stats() - counters of queue @q of disk @id.
 *
 * Returns: 0; -EINVAL for NULL; -ENOENT for an unknown disk or queue, or
 * when the VM was never started.
 */
int vmm_get_queue_stats(struct vmm *vm, unsigned int id, unsigned int q,
			struct vmm_queue_stats *st);

/* KVM's own counters (binary statistics, KVM_GET_STATS_FD), summed over
 * the vCPUs; -1 (all ones) where this kernel does not provide one.
 * Extensible like struct vmm_disk_stats; VMM_KVM_STATS_SIZE_VER0 is the
 * smallest size accepted (the first published struct). */
/* A counter this host's KVM does not keep (struct vmm_kvm_stats). */
#define VMM_STAT_UNKNOWN UINT64_MAX

/* Counters KVM does not keep on this host are VMM_STAT_UNKNOWN (arm64:
 * io_exits, irq_exits, irq_injections). */
struct vmm_kvm_stats {
	uint32_t struct_size; /* = sizeof(struct vmm_kvm_stats) */
	uint32_t nr_vcpus;
	uint64_t exits;		 /* all VM exits */
	uint64_t io_exits;	 /* port I/O exits */
	uint64_t mmio_exits;	 /* MMIO exits to userspace */
	uint64_t halt_exits;	 /* HLT (arm64: WFI) */
	uint64_t irq_exits;	 /* exits for host interrupts */
	uint64_t irq_injections; /* interrupts injected into the guest */
	uint64_t signal_exits;	 /* exits to handle a signal */
	/* ---- end of VMM_KVM_STATS_SIZE_VER0 ---- */
};

#define VMM_KVM_STATS_SIZE_VER0 64u /* through .signal_exits */

/**
 * vmm_get_kvm_stats() - KVM's exit and injection counters for the VM.
 * @vm: VM that was started
 * @st: out; set st->struct_size first (see struct vmm_kvm_stats); on
 *      success it holds the number of bytes filled
 *
 * Returns: 0; -EINVAL for NULL or a struct_size below
 * VMM_KVM_STATS_SIZE_VER0; -EBUSY if the VM was never started; -ENOTSUP
 * if KVM has no binary statistics (KVM_CAP_BINARY_STATS_FD, Linux 5.14+).
 */
int vmm_get_kvm_stats(struct vmm *vm, struct vmm_kvm_stats *st);

/**
 * vmm_start_hook_fn - run by vmm_start() between opening and running.
 * @opaque: the pointer given to vmm_set_start_hook()
 *
 * Returns: 0 to let vmm_start() go on, or a negative errno value to make it
 * fail with that value (a positive value counts as -ECANCELED).
 */
typedef int (*vmm_start_hook_fn)(void *opaque);

/**
 * vmm_set_start_hook() - have vmm_start() call @fn once every file of the
 * VM is open and before any of its threads is confined or runs the guest:
 * the place to drop privileges (setgroups(), setresgid(), setresuid()).
 * @vm:     VM in state CONFIG
 * @fn:     callback, or NULL for none (the default)
 * @opaque: passed to @fn
 *
 * @fn runs once per vmm_start(), on its caller's thread.  By then /dev/kvm
 * (vmm_create()), the kernel and initrd (already copied into guest RAM and
 * closed) and every disk image (locked) have been opened, guest RAM is
 * mapped and the vCPUs exist in KVM; nothing after @fn opens a file or
 * needs a privilege.  The VM's I/O threads ("vmm-ioN", when it has disks)
 * already run, idle, with no seccomp filter: glibc's setgroups()/
 * setresgid()/setresuid(), which make every thread of the process repeat
 * the call from a signal handler, reach them.  No vCPU or console thread
 * exists yet and no seccomp filter is installed.  Threads created after @fn
 * count against the new user's RLIMIT_NPROC.  @fn must not call libvmm on
 * @vm (its lock is held).  If @fn fails, vmm_start() tears down what it
 * built and fails; what @fn changed in the process stays changed.
 *
 * Returns: 0; -EINVAL for NULL @vm; -EBUSY if not in CONFIG.
 */
int vmm_set_start_hook(struct vmm *vm, vmm_start_hook_fn fn, void *opaque);

/**
 * vmm_start() - build the machine and start every vCPU; returns at once.
 * @vm: VM in state CONFIG
 *
 * Loads and validates the kernel and initrd, lays out guest memory, creates
 * the vCPUs and the devices, then spawns the vCPU threads.  On failure the VM
 * stays in CONFIG with nothing started, and the reason is logged.  Files are
 * read, never mapped (a kernel truncated meanwhile is an error, not a
 * SIGBUS), and opened so that a FIFO or a device cannot block the call.
 *
 * Returns: 0; -EINVAL if no kernel was set, or the kernel/initrd is not a
 * valid image (not a regular file, not a bzImage, truncated, protocol <
 * 2.06, no 64-bit entry, an ELF file that is no x86-64 vmlinux with a PVH
 * entry note, does not fit in RAM; arm64: no Image magic, a big-endian or
 * malformed header); -ENOSPC on arm64 if the Image or initrd does not fit
 * in RAM; -ENOENT/-EACCES if a file
 * cannot be opened; -EIO if one shrank while it was read; -ENOSPC if the
 * disks' queues need more KVM MSI routes than this host's KVM has
 * (KVM_CAP_IRQ_ROUTING, less the 40 of the PIC and IOAPIC on x86 and the
 * virtio-console's 2 x (ports + 1) queues); -EMFILE if RLIMIT_NOFILE
 * leaves no room for the eventfds of every queue (two each: 101 disks of
 * 32 queues need about 6,700 descriptors; raise the limit);
 * -ENOTSUP if KVM lacks a needed feature (more than 255 vCPUs need
 * KVM_CAP_X2APIC_API; arm64: a GICv3 with an ITS, PSCI 0.2); -EINVAL on
 * arm64 for more vCPUs than the machine has redistributor room for (768;
 * KVM itself stops at 512 with a GICv3); -ENOMEM; -EIO if a KVM call
 * fails; -EBUSY if not in CONFIG, or if a disk image is locked by another
 * user (see VMM_DISK_NO_LOCK; the log names the image); the start hook's
 * error (vmm_set_start_hook()).
 */
int vmm_start(struct vmm *vm);

/**
 * vmm_stop() - ask a running VM to stop; does not wait.
 * @vm: VM
 *
 * Every vCPU is kicked out of KVM_RUN; vmm_wait() then returns
 * VMM_EXIT_STOPPED (unless the guest had already exited for another reason).
 * Neither the caller's signal state (see Threading above) nor the console
 * fds (see vmm_set_console()) can keep the VM from stopping.
 *
 * Returns: 0 (also when the VM has already stopped); -EINVAL for NULL @vm;
 * -EBUSY if the VM was never started.
 */
int vmm_stop(struct vmm *vm);

/**
 * vmm_wait() - block until the VM has stopped, then join its threads.
 * @vm:          VM that was started
 * @exit_reason: receives an enum vmm_exit_reason, or NULL
 *
 * Disk requests in flight at the stop are cancelled (IORING_OP_ASYNC_CANCEL),
 * not waited for: only what the host kernel is already executing finishes,
 * at most 4 MiB per request, so a slow or hung disk image does not hold the
 * stop.  Every write the guest saw completed is in the image (or its page
 * cache; durable after the guest's flush); a cancelled one was never
 * acknowledged.
 *
 * May be called more than once; later calls return at once.  The console
 * adds at most one second to it (its final flush, vmm_set_console()).
 *
 * Returns: 0; -EINVAL for NULL @vm; -EBUSY if the VM was never started.
 */
int vmm_wait(struct vmm *vm, int *exit_reason);

/**
 * vmm_get_guest_status() - the exit status the guest wrote to the exit port
 * (VMM_EXIT_PORT), once vmm_wait() has returned VMM_EXIT_GUEST_STATUS.
 * @vm:     VM
 * @status: out: the 32-bit value the guest wrote (the first one, if it
 *          wrote several before the VM stopped)
 *
 * Returns: 0; -EINVAL for NULL arguments; -ENODATA if the guest reported no
 * status (the VM has not stopped, or stopped for another reason).
 */
int vmm_get_guest_status(struct vmm *vm, uint32_t *status);

/**
 * vmm_get_exit_eventfd() - an eventfd that becomes readable when the VM
 * has stopped (for poll/epoll integration); call vmm_wait() afterwards.
 * @vm: VM (any state)
 *
 * The fd is owned by the library and closed by vmm_destroy().
 *
 * Returns: the fd (>= 0), or -EINVAL for NULL @vm.
 */
int vmm_get_exit_eventfd(struct vmm *vm);

/* Scheduling policies of the I/O threads: vmm_set_iothread_sched(). */
enum vmm_iothread_sched {
	VMM_IOTHREAD_SCHED_BATCH = 0, /* SCHED_BATCH (default) */
	VMM_IOTHREAD_SCHED_NORMAL = 1, /* SCHED_OTHER, as the caller's */
};

/**
 * vmm_set_iothread_sched() - the Linux scheduling policy of the VM's I/O
 * threads (one per vCPU; they serve the virtio-blk queues).
 * @vm: VM in the configuration state
 * @sched: enum vmm_iothread_sched
 *
 * VMM_IOTHREAD_SCHED_BATCH (the default) runs them as SCHED_BATCH: a kick
 * wakes the I/O thread without preempting the thread that runs on its CPU
 * (typically the vCPU that kicked), so when vCPUs and I/O threads share
 * CPUs the guest keeps queueing and the thread then serves a whole batch
 * with one interrupt, and EVENT_IDX suppresses the kicks in between.  On
 * an idle CPU the thread runs at once either way.  Measured in the nested
 * rig (vCPUs and I/O threads on one CPU, guest fio 4 KiB random reads,
 * 2 jobs): one queue per vCPU, iodepth 32: 7x the IOPS of NORMAL and 0.07
 * instead of 2.0 kicks+interrupts per request; iodepth 1: about 0.7x.
 * VMM_IOTHREAD_SCHED_NORMAL keeps the default policy: lowest latency for
 * shallow queues when vCPUs and I/O threads compete for CPUs.
 *
 * Returns: 0; -EINVAL for NULL @vm or an unknown @sched; -EBUSY after
 * vmm_start().
 */
int vmm_set_iothread_sched(struct vmm *vm, int sched);

/* Modes of vmm_set_seccomp(). */
enum vmm_seccomp_mode {
	VMM_SECCOMP_OFF = 0,   /* no filters (the library's default) */
	VMM_SECCOMP_KILL = 1,  /* a system call off the list ends the process
				  (SIGSYS), after a line naming it */
	VMM_SECCOMP_ERRNO = 2, /* ... fails with EPERM (tests, debugging) */
};

/**
 * vmm_set_seccomp() - confine the VM's own threads with seccomp-bpf.
 * @vm:   VM in state CONFIG
 * @mode: enum vmm_seccomp_mode
 *
 * With a mode other than VMM_SECCOMP_OFF, vmm_start() builds one
 * allow-list per thread class (libseccomp) and every thread the library
 * creates installs its class's filter on itself once its setup is done:
 * vCPU threads right before their KVM_RUN loop (KVM_RUN and the few KVM
 * ioctls device emulation needs, checked by request number), I/O threads
 * once the devices exist (io_uring_enter, the block fallback's
 * preadv/pwritev/fdatasync/fallocate), the console thread and the
 * vmm_add_port() threads (console class: poll, read/write -- sendto for a
 * socket -- of their fds, MSI delivery) before their loops.
 * Opening files, sockets, execve, clone, ptrace and the like are refused
 * everywhere; mmap/mprotect with PROT_EXEC too.  The caller's threads are
 * never confined implicitly: see vmm_seccomp_confine_current_thread().
 * A vmm_log_fn callback runs under these filters (it may write() to an
 * already open fd -- vmm_log_write() for stderr --, lock, allocate;
 * nothing else).  Filters stay in force
 * until the threads end.  Needs Linux 4.14+ (SECCOMP_RET_KILL_PROCESS).
 *
 * A refused call in VMM_SECCOMP_KILL mode: the kernel skips it and traps
 * (SECCOMP_RET_TRAP); the library's SIGSYS handler writes one line to fd 2,
 * e.g. "libvmm: seccomp: thread vmm-io7 (tid 4242, io allow-list) made
 * system call openat (257), which its list refuses: ending the process
 * (SIGSYS)", and ends the process by SIGSYS with a core dump, as
 * SECCOMP_RET_KILL_PROCESS would (exit status 159 in a shell).  For that,
 * vmm_start() installs the handler process-wide if SIGSYS has the default
 * disposition (never removed; shared by all VMs); a SIGSYS that is not one
 * of its traps (si_code SYS_SECCOMP, si_errno 0x564d) gets the default
 * action.  If the embedder has its own SIGSYS disposition at vmm_start(),
 * it is kept and the filters kill the process silently
 * (SECCOMP_RET_KILL_PROCESS); an embedder that installs a SIGSYS handler
 * after vmm_start() receives the library's traps and must end the process
 * for them (if the handler returns, the refused call "returns" its own
 * number).  Each confined thread unblocks SIGSYS for itself.  In
 * VMM_SECCOMP_ERRNO mode the call fails with EPERM and nothing is logged.
 *
 * Process-wide effects of a mode other than VMM_SECCOMP_OFF, done by
 * vmm_start() on the calling thread so that no confined thread has to
 * (glibc initialises them lazily, with calls no allow-list has): glibc's
 * malloc arena limit is set (once per process, mallopt(M_ARENA_MAX)) to
 * glibc's own default, 8 per online CPU, unless MALLOC_ARENA_MAX or the
 * glibc.malloc.arena_max tunable sets it; the message catalog of the
 * current LC_MESSAGES locale is loaded (strerror()).  Each library thread
 * allocates and frees 256 KiB before confining itself (malloc arena, first
 * heap trim).  After vmm_start(), the embedder must not: change the
 * process's uid/gid/groups (glibc makes every thread repeat the call:
 * refused), let its asynchronous signal handlers run on library threads
 * unless they stay within the lists (block such signals before
 * vmm_start(): threads inherit the mask), or switch to a locale whose
 * catalog was never loaded.
 *
 * Returns: 0; -EINVAL for NULL @vm or an unknown @mode; -EBUSY if not in
 * CONFIG.  A filter that cannot be built or installed makes vmm_start()
 * fail with -ENOTSUP (or -ENOMEM).
 */
int vmm_set_seccomp(struct vmm *vm, int mode);

/**
 * vmm_seccomp_confine_current_thread() - install the "control" filter on
 * the calling thread (irreversible; inherited by threads it creates later).
 * @vm: VM that was started with a seccomp mode other than VMM_SECCOMP_OFF
 *
 * For a program whose thread, after vmm_start(), only waits for the VM and
 * then tears it down (what minivmm does): the control list allows what
 * vmm_stop(), vmm_wait(), vmm_get_exit_eventfd() polling (poll, ppoll,
 * epoll_wait), the stats getters, vmm_destroy() and a terminal restore
 * (TCSETS) need, plus read/write/close of open fds, memory management and
 * exit.  It does not allow open(): this thread can no longer create a VM,
 * open files or start programs.  The same mode (kill or EPERM) applies.
 *
 * Returns: 0; -EINVAL for NULL @vm or when @vm's seccomp mode is
 * VMM_SECCOMP_OFF; -EBUSY if @vm was never started; -ENOTSUP (or another
 * -errno) if the kernel refused the filter.
 */
int vmm_seccomp_confine_current_thread(struct vmm *vm);

/**
 * vmm_exit_reason_str() - a short English name for an enum vmm_exit_reason.
 * @reason: value
 *
 * Returns: a static string ("unknown" for values out of range).
 */
const char *vmm_exit_reason_str(int reason);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif /* VMM_VMM_H */
