/* SPDX-License-Identifier: MIT */
/*
 * libvmm -- an embeddable virtual machine monitor on Linux KVM (x86_64 and
 * arm64).  This is the only public header.  One struct vmm is one VM; a
 * process may hold any number of them (no global VM state).  Background
 * and the reasons behind these contracts: docs/api-notes.md.
 *
 * Conventions
 *  - Functions return 0 (or a documented non-negative value) on success and
 *    a negative errno value on failure; errno is neither set nor read.
 *    Fixed meanings:
 *        -EINVAL   bad argument
 *        -EBUSY    wrong lifecycle state
 *        -ENOENT   unknown id / missing file
 *        -ENOTSUP  missing KVM capability or host feature
 *        -ENOMEM   allocation failed
 *        -EIO      KVM refused or killed the VM
 *  - The library never calls exit() or abort(), whatever the input (API
 *    arguments, kernel and disk images, the guest).
 *  - Lifecycle: CONFIG --vmm_start()--> RUNNING --(guest exit | vmm_stop())-->
 *    STOPPED.  Configuration calls (vmm_set_*() but vmm_set_log(),
 *    vmm_add_*()) need CONFIG.
 *  - Not repeated below: every function taking @vm returns -EINVAL for a
 *    NULL @vm, every configuration call -EBUSY outside CONFIG.
 *
 * Threads
 *  - A VM runs one thread per vCPU ("vmm-vcpuN"), with disks one I/O thread
 *    per vCPU ("vmm-ioN", own io_uring; serves queue i of every disk for
 *    i mod nr_vcpus == N), a console thread, and with ports one thread per
 *    port.
 *  - "Context:" says who may call a function ("configuration": any
 *    thread, before vmm_start()).  Calls on one VM are serialised by its
 *    lock; none may come from a thread the library owns (a vmm_log_fn)
 *    unless its Context says so.  vmm_destroy() must not race with any
 *    other call on the same VM.  Different VMs never interfere.
 *  - Signals: the library installs no handler (one exception: the SIGSYS
 *    reporter of vmm_set_seccomp()) and never changes the mask of a thread
 *    it did not create.  Its own threads block every signal except those a
 *    fault raises on the thread itself and glibc's internal ones, so
 *    process-directed signals reach the embedder's threads.
 *  - Kicks: to get a vCPU out of KVM_RUN the library sends VMM_KICK_SIGNAL
 *    to that vCPU's thread, which unblocks it only inside KVM_RUN and
 *    consumes it with sigtimedwait(): no handler runs, whatever the
 *    process's disposition.  An embedder using the signal itself sends it
 *    to its own threads (pthread_kill), not the process (see the notes).
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

/* Signal used to kick vCPU threads out of KVM_RUN (see Threads above). */
#define VMM_KICK_SIGNAL SIGUSR1

/* Limits of this release. */
/* vCPU i has APIC ID i; above 255 vCPUs they start in x2APIC mode.  The MP
 * table (guests booted with acpi=off) describes at most 254.  Also capped
 * by the host's KVM_CAP_MAX_VCPUS (arm64 with a GICv3: 512). */
#define VMM_MAX_VCPUS 1024
#define VMM_MAX_MPTABLE_VCPUS 254
#define VMM_MIN_MEMORY (16ull << 20)
#define VMM_MAX_CMDLINE 2047 /* incl. what the library adds; NUL excluded */
/* PCI bus 0: 31 slots of 8 functions, one function kept for the
 * virtio-console device; the disks, NICs, fs devices and the vsock share
 * the other 247 (past 31 devices, slots fill 8 functions at a time). */
#define VMM_MAX_DISKS 247
#define VMM_MAX_DISK_QUEUES 1024 /* request queues of one disk */
/* Request queues of all disks together: one KVM MSI route each, out of
 * KVM's 4096 less the PIC/IOAPIC pins' 40 (fewer on a smaller host table,
 * and 2 x (ports + 1) fewer with vmm_add_port() ports: see vmm_start()). */
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
 * vmm_log_fn - receives one formatted message, without trailing newline.
 * @level:  enum vmm_log_level
 * @msg:    NUL-terminated, valid only during the call
 * @opaque: the pointer given to vmm_set_log()
 *
 * Must not block (its thread's vCPU or queue waits meanwhile) nor call
 * libvmm other than vmm_log_write() and vmm_set_log(); under
 * vmm_set_seccomp() it may only write() to open fds, lock and allocate.
 *
 * Context: any thread of any VM, concurrently.
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
 * Exit port, in every x86 VM (arm64 guests end through PSCI): a write
 * (outl; outb/outw zero-extended) to I/O port VMM_EXIT_PORT stops the VM
 * with VMM_EXIT_GUEST_STATUS and the value unchanged as the guest's exit
 * status (vmm_get_guest_status()).  Reads return VMM_EXIT_PORT_MAGIC
 * (little-endian), for probing.  From a Linux guest, as root:
 * ioperm(VMM_EXIT_PORT, 4, 1); outl(status, VMM_EXIT_PORT).
 */
#define VMM_EXIT_PORT 0xf4
#define VMM_EXIT_PORT_MAGIC 0x54495856u /* "VXIT" */

/**
 * vmm_get_version() - runtime library version.
 * @major: out, may be NULL
 * @minor: out, may be NULL
 *
 * Context: any thread.
 * Returns: 0.
 */
int vmm_get_version(int *major, int *minor);

/**
 * vmm_set_log() - route library messages to @fn (process-wide: all VMs).
 * @fn:     callback, or NULL for the default: "libvmm: MSG" lines to stderr
 *          through vmm_log_write()
 * @opaque: passed to @fn
 * @level:  messages with a greater level are dropped
 *
 * Context: any thread, also a vmm_log_fn.
 * Returns: 0 or
 *   -EINVAL  @level not an enum vmm_log_level
 */
int vmm_set_log(vmm_log_fn fn, void *opaque, int level);

/**
 * vmm_log_write() - write text to stderr without blocking; the default
 * sink's way, for an embedder's messages and vmm_log_fn callbacks.
 * @buf:        the text, normally whole lines ending in '\n'
 * @len:        its length in bytes
 * @timeout_ms: how long to wait whenever stderr takes nothing before the
 *              rest is dropped; 0 never waits
 *
 * Drops are counted (vmm_log_dropped()) and announced before the next text
 * that goes through.  Up to PIPE_BUF bytes reach a pipe whole or not at
 * all.  fd 2's file description is not changed (the library writes a
 * private non-blocking reopen, at an fd >= 100).  vmm_create() and
 * vmm_set_log() look again at which file fd 2 is: call vmm_set_log() after
 * a dup2() onto fd 2 or a closefrom().
 *
 * Context: any thread, also confined ones; async-signal-safe.
 * Returns: 0 when all of @buf was written, or
 *   -EAGAIN  stderr would block: @buf, or its rest, dropped
 *   -EINVAL  @buf NULL with a length, @timeout_ms < 0
 *   -errno   of the write (-EPIPE; -EBADF: fd 2 closed; -EIO)
 */
int vmm_log_write(const char *buf, size_t len, int timeout_ms);

/**
 * vmm_log_dropped() - texts vmm_log_write() and the default log sink
 * dropped (wholly or in part) since the process started.
 *
 * Context: any thread; async-signal-safe.
 * Returns: the count (process-wide, like the sink).
 */
uint64_t vmm_log_dropped(void);

/**
 * vmm_create() - open /dev/kvm and create an empty VM in state CONFIG:
 * 1 vCPU, 256 MiB RAM, no kernel, console on fds 0/1.
 * @out: receives the new VM; untouched on failure
 *
 * Logs why KVM is unusable ("KVM is not available: /dev/kvm: ...").
 *
 * Context: any thread.
 * Returns: 0 or
 *   -EINVAL   @out NULL
 *   -ENOENT   no /dev/kvm
 *   -EACCES, -EPERM  /dev/kvm cannot be opened
 *   -ENOTSUP  KVM's API version differs or a capability is missing
 *   -ENOMEM
 *   -EIO      KVM_CREATE_VM failed otherwise
 */
int vmm_create(struct vmm **out);

/**
 * vmm_destroy() - stop the VM if running, join every thread, free all.
 * @vm: VM or NULL (then a no-op)
 *
 * Context: any thread not owned by @vm; must not race with any other call
 * on @vm.
 */
void vmm_destroy(struct vmm *vm);

/**
 * vmm_set_vcpus() - number of vCPUs.
 * @vm:       VM in state CONFIG
 * @nr_vcpus: 1..VMM_MAX_VCPUS (vmm_start() checks KVM_CAP_MAX_VCPUS)
 *
 * Context: configuration.
 * Returns: 0 or
 *   -EINVAL  count out of range
 */
int vmm_set_vcpus(struct vmm *vm, unsigned int nr_vcpus);

/**
 * vmm_set_memory() - guest RAM size.
 * @vm:        VM in state CONFIG
 * @ram_bytes: at least VMM_MIN_MEMORY, a multiple of 4 KiB; what does not
 *             fit below the PCI hole (3..4 GiB) is placed at 4 GiB
 *
 * Context: configuration.
 * Returns: 0 or
 *   -EINVAL  bad size
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
 * MEMFD can be mapped by another process (a vhost-user back end) and gets
 * huge pages only where shmem THP is enabled.  HUGETLB rounds RAM up to
 * 2 MiB and vmm_start() reserves every page from the pool.  vmm_start()
 * then fails with -ENOMEM (no memory, pool too short) or -ENOTSUP (no such
 * memfd).
 *
 * Context: configuration.
 * Returns: 0 or
 *   -EINVAL  unknown @backend, VMM_MEMORY_ANON once a virtio-fs device is
 *            added (its back end maps guest RAM)
 */
int vmm_set_memory_backend(struct vmm *vm, int backend);

/**
 * vmm_set_kernel() - the Linux kernel to boot directly.
 * @vm:      VM in state CONFIG
 * @kernel:  x86: a bzImage (boot protocol >= 2.06, 64-bit entry) or an
 *           x86-64 vmlinux with a PVH entry note; arm64: an Image
 * @initrd:  initrd/initramfs, or NULL
 * @cmdline: command line, or NULL for ""; the library adds only what the
 *           platform needs
 *
 * Only records the paths: vmm_start() opens and validates the files.
 *
 * Context: configuration.
 * Returns: 0 or
 *   -EINVAL  NULL @kernel, @cmdline longer than VMM_MAX_CMDLINE
 *   -ENOMEM
 */
int vmm_set_kernel(struct vmm *vm, const char *kernel, const char *initrd,
		   const char *cmdline);

/**
 * vmm_set_console() - wire the serial console (x86: COM1's 8250; arm64:
 * an ns16550a).
 * @vm:     VM in state CONFIG
 * @in_fd:  the guest's serial input, or -1 for none
 * @out_fd: takes the guest's serial output, or -1 to discard it
 *
 * The fds are borrowed until vmm_destroy(); their file status flags and
 * terminal mode are not changed.  The console never blocks the guest,
 * vmm_stop() or vmm_wait(): output @out_fd does not take at once waits in
 * a 64 KiB buffer, the excess is dropped and counted (warning at most
 * every 10 s), and at the stop what is queued gets one more second.
 *
 * Context: configuration.
 * Returns: 0 or
 *   -EINVAL  fd < -1
 */
int vmm_set_console(struct vmm *vm, int in_fd, int out_fd);

/* Counters of the COM1 console; extensible like struct vmm_disk_stats. */
struct vmm_console_stats {
	uint32_t struct_size;	/* = sizeof(struct vmm_console_stats) */
	uint32_t pad;
	uint64_t bytes_out;	/* guest output written to out_fd */
	uint64_t bytes_dropped; /* guest output dropped: out_fd did not take
				   it in time (or failed, e.g. EPIPE) */
	uint64_t bytes_in;	/* read from in_fd and taken by the guest's UART */
};

/**
 * vmm_get_console_stats() - console counters (0 before vmm_start(), kept
 * after the stop until vmm_destroy()).
 * @vm: VM, any state
 * @st: out; set st->struct_size first: 32 (the first published struct) or
 *      more; fields that do not fit are not written
 *
 * Context: any thread the library does not own.
 * Returns: 0 or
 *   -EINVAL  NULL @st, struct_size too small
 */
int vmm_get_console_stats(struct vmm *vm, struct vmm_console_stats *st);

/*
 * Rate limits of a disk or NIC (vmm_disk_config.rate_limit,
 * vmm_net_config.rate_limit, vmm_set_disk_rate_limit(),
 * vmm_set_net_rate_limit()): two token buckets, one for bytes (a disk's
 * read and write data, a NIC's frames) and one for operations (a disk's
 * requests of every type but GET_ID, a NIC's frames).  Each refills at
 * its rate per second (0 = unlimited) up to its burst (the bucket's size;
 * 0 = one second's worth), and may have a one-time allowance spent before
 * the bucket, never refilled.  A request larger than the bucket is served
 * once the bucket is full; the average rate still holds.  Applied by the
 * I/O threads to all of a device's queues together (shared lock-free,
 * served in the order the queues asked); a throttled queue takes no
 * further requests (a NIC leaves frames in the tap, where the kernel's
 * queue limit drops them) until its tokens are back.  Zero-initialise,
 * set struct_size, fill.
 */
struct vmm_rate_limit {
	uint32_t struct_size;  /* = sizeof(struct vmm_rate_limit) */
	uint32_t flags;	       /* none yet: 0 */
	uint64_t bw;	       /* bytes per second; 0 = unlimited */
	uint64_t bw_burst;     /* bytes; 0 = bw; needs bw */
	uint64_t bw_one_time;  /* bytes; needs bw */
	uint64_t ops;	       /* operations per second; 0 = unlimited */
	uint64_t ops_burst;    /* operations; 0 = ops; needs ops */
	uint64_t ops_one_time; /* operations; needs ops */
};

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
				      image opened writable fail with -EBUSY */

/*
 * Configuration of one virtio-blk disk.  Zero-initialise, set struct_size to
 * sizeof(struct vmm_disk_config), then fill what you need.  Fields are only
 * ever appended; the library reads struct_size to know which the caller has.
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
	/* Initial rate limits (copied), or NULL: unlimited.  Changeable at
	 * run time: vmm_set_disk_rate_limit(). */
	const struct vmm_rate_limit *rate_limit;
};

/**
 * vmm_add_disk() - attach a virtio-blk-pci disk.
 * @vm:     VM in state CONFIG
 * @cfg:    configuration (see struct vmm_disk_config)
 * @out_id: receives the disk id (0, 1, ... in order of addition), or NULL
 *
 * Queue q is served by I/O thread q mod nr_vcpus.  Explicit queue counts
 * must fit VMM_MAX_QUEUES (a default counts as 1); vmm_start() lowers the
 * defaults so that every disk fits (logged).  vmm_start() opens the image,
 * a regular file or block device (a FIFO is refused, never waited on).  A
 * guest request carries at most 4 MiB; requests in flight at a stop or
 * device reset are cancelled, never acknowledged.
 *
 * Context: configuration.
 * Returns: 0 or
 *   -EINVAL  NULL @cfg, struct_size too small, neither path nor fd,
 *            num_queues over VMM_MAX_DISK_QUEUES, queue_size not a power
 *            of two in 4..1024, serial over 20 bytes, unknown flag,
 *            an invalid rate_limit (as vmm_set_disk_rate_limit())
 *   -EBADF   @cfg->fd cannot be duplicated
 *   -ENOSPC  PCI bus full (VMM_MAX_DISKS disks, NICs, fs and vsock
 *            devices together), over VMM_MAX_QUEUES queues
 *   -ENOMEM
 */
int vmm_add_disk(struct vmm *vm, const struct vmm_disk_config *cfg,
		 unsigned int *out_id);

/*
 * A named byte-stream port between host and guest: one port of the VM's
 * virtio-console device (VIRTIO_CONSOLE_F_MULTIPORT; no port is a
 * console).  A Linux guest sees /dev/vportNpM, named in
 * /sys/class/virtio-ports/vportNpM/name (udev: /dev/virtio-ports/NAME).
 * Binary-clean: no line discipline, nothing mixed in.  Zero-initialise,
 * set struct_size, fill.
 */
#define VMM_MAX_PORTS 31
#define VMM_PORT_NAME_MAX 127 /* bytes, NUL excluded */
struct vmm_port_config {
	uint32_t struct_size; /* = sizeof(struct vmm_port_config) */
	uint32_t flags;	      /* none yet: 0 */
	const char *name;     /* required, unique per VM, 1..VMM_PORT_NAME_MAX */
	/* Host -> guest: what is read from in_fd reaches the guest's reads;
	 * EOF (or a read error) is EOF in the guest once the data before it
	 * is delivered.  -1: no input (the guest's reads block). */
	int in_fd;
	/* Guest -> host, in order; a full pipe or socket holds the guest's
	 * writes back (the library's writes never block, and your file
	 * description keeps its flags).  After a failed write (EPIPE) the
	 * port's output is discarded.  -1: discarded. */
	int out_fd;
};

/**
 * vmm_add_port() - add a port to the VM's virtio-console device (present
 * when the VM has a port; it follows the disks on the PCI bus).
 * @vm:     VM in state CONFIG
 * @cfg:    configuration; its fds are duplicated (until vmm_destroy())
 * @out_id: receives the port number N (in order of addition: a Linux
 *          guest's /dev/vportXpN), or NULL
 *
 * Each port has a thread ("vmm-portN"; "vmm-portctl" for the control
 * queue), started after the start hook and confined as the console's.
 * Output queued at the stop gets at most half a second before vmm_wait()
 * returns; the rest is dropped and logged.
 *
 * Context: configuration.
 * Returns: 0 or
 *   -EINVAL  NULL @cfg, struct_size too small, no name, name too long or
 *            used, unknown flag, fd < -1
 *   -EBADF   an fd cannot be duplicated
 *   -ENOSPC  VMM_MAX_PORTS ports already
 *   -ENOMEM
 */
int vmm_add_port(struct vmm *vm, const struct vmm_port_config *cfg,
		 unsigned int *out_id);

/*
 * A virtio-net NIC on a tap: by name (opened, or created when the process
 * may, with IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | IFF_MULTI_QUEUE, one
 * queue file per pair) or as inherited tap files (the same flags, one
 * per pair), or on a Unix stream socket in passt's framing (@stream
 * below).  Offloads (checksum, TSO4/6, ECN; a tap only) follow what the
 * guest accepts; MTU, link up (down for good once a stream's peer goes;
 * held down or let up at will: vmm_set_net_link()),
 * MQ with a control queue, MRG_RXBUF,
 * EVENT_IDX.  Pair i is served by I/O thread i mod nr_vcpus, the control
 * queue by thread 0.  Zero-initialise, set struct_size, fill.
 */
#define VMM_MAX_NETS 8	       /* NICs per VM; they share the disks' PCI
				  functions (VMM_MAX_DISKS in all) */
#define VMM_MAX_NET_PAIRS 64   /* queue pairs of one NIC */
/*
 * VMM_NET_VHOST: the kernel's vhost-net moves the frames (one
 * /dev/vhost-net file per pair, opened at vmm_start(): -ENOENT without
 * the vhost_net module, -EACCES without the right to open it; no
 * fallback).  Its kick and call eventfds are the KVM ioeventfds and
 * irqfds; the control queue (pairs, link) is still served by I/O thread
 * 0.  The features offered are those of the userspace device less what
 * the host's vhost-net lacks.  vmm_get_net_stats() then counts nothing
 * per pair but .pairs and .iothread (packets, bytes, drops, kicks and
 * interrupts are the kernel's: the tap's own counters).  Default off.
 */
#define VMM_NET_VHOST (1u << 0)
#define VMM_NET_STREAM (1u << 1) /* @fds are connected Unix stream sockets
				    (one per pair), not taps: see @stream */
struct vmm_net_config {
	uint32_t struct_size; /* = sizeof(struct vmm_net_config) */
	uint32_t flags;	      /* 0, VMM_NET_VHOST (taps only) or VMM_NET_STREAM */
	const char *tap;      /* interface name (< 16 bytes), or NULL: @fds */
	const int *fds;	      /* @nr_fds tap queue files, duplicated */
	uint32_t nr_fds;      /* 1..VMM_MAX_NET_PAIRS with @fds */
	uint8_t mac[6];	      /* all zero: a locally administered one
				 derived from the interface's name and the
				 NIC id (stable across runs) */
	uint16_t queue_pairs; /* @tap: 0 = one per vCPU, at most
				 VMM_MAX_NET_PAIRS; @fds: nr_fds (0 or equal) */
	uint16_t queue_size;  /* 0 = 256; power of two, 4..1024 */
	uint16_t mtu;	      /* 0 = 1500; 68..65535 (the guest's maximum) */
	/*
	 * Stream back end (passt, QEMU's "-netdev stream"): the path of a
	 * Unix stream socket to connect to at vmm_start(), or NULL.  Each
	 * frame on the wire is a 4-byte big-endian length and the Ethernet
	 * frame (at most 65553 bytes), nothing else, so no checksum or TSO
	 * offload is offered.  One socket is one queue pair (passt serves
	 * one): queue_pairs 0 or 1.  Set instead of @tap and @fds, or give
	 * connected sockets as @fds with VMM_NET_STREAM.  When the peer goes
	 * away (end of file, an error, a frame length over the maximum) the
	 * socket is shut down and the link goes down (VIRTIO_NET_S_LINK_UP
	 * cleared, a configuration interrupt); the VM runs on.  The MAC is
	 * derived from the path (or "stream") when zero.
	 */
	const char *stream;
	/* Initial rate limits (copied), or NULL: unlimited; not with
	 * VMM_NET_VHOST (the kernel moves the frames).  TX and RX are
	 * limited separately, each by these buckets.  Changeable at run
	 * time: vmm_set_net_rate_limit(). */
	const struct vmm_rate_limit *rate_limit;
};

/**
 * vmm_add_net() - attach a virtio-net-pci NIC (after the disks on the PCI
 * bus).
 * @vm:     VM in state CONFIG
 * @cfg:    configuration (see struct vmm_net_config)
 * @out_id: receives the NIC id (0, 1, ... in order of addition), or NULL
 *
 * vmm_start() opens the tap or connects the stream socket, with
 * VMM_NET_VHOST the vhost-net files (-EPERM, -EBUSY, -ENOENT,
 * -ECONNREFUSED from the kernel: logged) and fails with -ENOSPC when the queues (2 x pairs + 1 per NIC)
 * do not fit in KVM's routes beside the disks' (VMM_MAX_QUEUES).  The tap
 * is read only while the guest has posted receive buffers: frames beyond
 * the tap's own queue are dropped by the kernel, never buffered here.
 *
 * Context: configuration.
 * Returns: 0 or
 *   -EINVAL  NULL @cfg, struct_size too small, unknown flag, not exactly
 *            one of tap, fds and stream, VMM_NET_STREAM without fds,
 *            VMM_NET_VHOST with a stream, stream with queue_pairs over 1
 *            or a path empty or over 107 bytes, tap name empty or too
 *            long, nr_fds or queue_pairs over VMM_MAX_NET_PAIRS or not
 *            matching, a multicast @mac, queue_size not a power of two in
 *            4..1024, mtu below 68, an invalid rate_limit (as
 *            vmm_set_net_rate_limit()), a rate_limit with VMM_NET_VHOST
 *   -EBADF   an fd cannot be duplicated
 *   -ENOSPC  VMM_MAX_NETS NICs, or the PCI bus full (VMM_MAX_DISKS)
 *   -ENOMEM
 */
int vmm_add_net(struct vmm *vm, const struct vmm_net_config *cfg,
		unsigned int *out_id);

/*
 * A shared host directory (virtio-fs, device id 26) served by a vhost-user
 * back end such as virtiofsd: the guest mounts it by tag
 * (mount -t virtiofs TAG DIR).  The back end serves the queues itself
 * (it maps guest RAM, reads the kick eventfds, writes the interrupt
 * eventfds): guest RAM must be shareable, vmm_set_memory_backend()
 * MEMFD or HUGETLB, before vmm_add_fs().  Zero-initialise, set
 * struct_size, fill.
 */
#define VMM_MAX_FS 8
#define VMM_FS_TAG_MAX 36 /* bytes, NUL excluded */
#define VMM_MAX_FS_QUEUES 64 /* request queues of one device */
struct vmm_fs_config {
	uint32_t struct_size; /* = sizeof(struct vmm_fs_config) */
	uint32_t flags;	      /* none yet: 0 */
	const char *tag;      /* 1..VMM_FS_TAG_MAX bytes, unique per VM */
	const char *socket;   /* the back end's listening vhost-user socket */
	uint16_t num_queues;  /* request queues; 0 = one per vCPU; the back
				 end may serve fewer (virtiofsd 7.2: 1) */
	uint16_t queue_size;  /* 0 = 1024; power of two, 4..1024 */
	uint32_t timeout_ms;  /* per back-end reply; 0 = 5000 */
};

/**
 * vmm_add_fs() - attach a virtio-fs device (after the disks and the
 * console device on the PCI bus; counts against VMM_MAX_DISKS).
 * @vm:     VM in state CONFIG, its RAM shareable (memfd or hugetlb)
 * @cfg:    configuration; strings copied
 * @out_id: receives the fs id (0, 1, ... in order of addition), or NULL
 *
 * vmm_start() connects to the socket and negotiates (it fails with the
 * back end's -ECONNREFUSED/-ENOENT, -ETIMEDOUT or -EPROTO, logged); the
 * rings go to the back end at the guest's DRIVER_OK and come back at its
 * reset, each reply awaited at most timeout_ms (then the device needs a
 * reset).  A back end that goes away sets DEVICE_NEEDS_RESET; the VM runs
 * on.  One back-end process per device and VM start (virtiofsd serves
 * one connection).
 *
 * A back end that offers the vhost-user CONFIG protocol feature (rust
 * virtiofsd >= 1.11 started with --tag; not QEMU 7.2's virtiofsd) has
 * its config space read at vmm_start(): its tag, if not empty, must equal
 * @cfg->tag (else vmm_start() fails with -EINVAL, logged with both tags),
 * and the guest is told its number of request queues if that is fewer.
 *
 * Context: configuration.
 * Returns: 0 or
 *   -EINVAL  NULL @cfg, struct_size too small, no tag or socket, tag too
 *            long or used, num_queues over VMM_MAX_FS_QUEUES, bad
 *            queue_size, unknown flag, guest RAM not shareable (anonymous:
 *            call vmm_set_memory_backend() first)
 *   -ENOSPC  VMM_MAX_FS devices, or the PCI bus full (VMM_MAX_DISKS)
 *   -ENOMEM
 */
int vmm_add_fs(struct vmm *vm, const struct vmm_fs_config *cfg,
	       unsigned int *out_id);

/* Counters of a virtio-fs device's vhost-user front end.  No bytes or
 * requests: the back end serves the rings itself (guest kicks reach it
 * through the ioeventfds, its completions the guest through the irqfds),
 * so this process sees no request; the back end's own statistics have
 * them (as with QEMU's vhost-user-fs-pci). */
struct vmm_fs_stats {
	uint32_t struct_size;	   /* = sizeof(struct vmm_fs_stats) */
	uint32_t request_queues;   /* what the guest was offered */
	uint64_t messages;	   /* vhost-user requests sent */
	uint64_t timeouts;	   /* replies that did not come in time */
	uint64_t disconnects;	   /* the back end went away (0 or 1) */
	uint64_t starts;	   /* DRIVER_OKs handed to the back end */
	uint64_t stops;		   /* resets / stops (GET_VRING_BASE) */
	uint64_t needs_reset;	   /* DEVICE_NEEDS_RESET set */
	uint64_t orphaned;	   /* requests the device answered with EIO
				      itself after the back end went away */
};

/**
 * vmm_get_fs_stats() - counters of fs device @id (0 before vmm_start()).
 * @vm: VM, any state
 * @id: fs id from vmm_add_fs()
 * @st: out; set st->struct_size first (>= 16); what fits is written
 *
 * Context: any thread the library does not own.
 * Returns: 0 or
 *   -EINVAL  NULL @st, struct_size too small
 *   -ENOENT  no such fs device
 */
int vmm_get_fs_stats(struct vmm *vm, unsigned int id, struct vmm_fs_stats *st);

/*
 * A vsock device (virtio-vsock) with the hybrid Unix-socket host side:
 * host programs reach the guest's AF_VSOCK stream sockets through Unix
 * sockets, with no host module or privilege.  A host program connects to
 * socket_path and writes "CONNECT <port>\n"; once the guest accepts on
 * that port it reads "OK <hostport>\n" and the stream is the
 * connection's (the guest refusing: the socket is closed).  A guest
 * connecting to host CID 2 port P reaches the Unix socket
 * "<socket_path>_<P>", where a host program must listen.  Zero-initialise,
 * set struct_size, fill.
 */
#define VMM_VSOCK_PATH_MAX 96 /* bytes of socket_path, NUL excluded: with
				 "_<port>" it must fit sockaddr_un */
#define VMM_VSOCK_MAX_CONNECTIONS 1024 /* at once, both ways; more are
					  refused (RST, closed socket) */
/* vhost=on: the kernel's vhost-vsock (/dev/vhost-vsock, module
 * vhost_vsock) moves the packets; host programs use AF_VSOCK to the
 * guest's CID directly.  No socket_path; the file is opened and the CID
 * claimed at vmm_start(), which fails with -ENOENT (no module or device
 * node), -EACCES, or -EADDRINUSE (another VM holds the CID).  The
 * counters of struct vmm_vsock_stats stay 0 (the kernel's work). */
#define VMM_VSOCK_VHOST (1u << 0)
struct vmm_vsock_config {
	uint32_t struct_size; /* = sizeof(struct vmm_vsock_config) */
	uint32_t flags;	      /* 0 or VMM_VSOCK_VHOST */
	uint64_t guest_cid;   /* the guest's address, 3..0xfffffffe */
	const char *socket_path; /* required (NULL with VMM_VSOCK_VHOST);
				    created by vmm_start(), which
				    fails with -EADDRINUSE if it is another
				    file or a socket in use (one nobody
				    listens on is replaced); it appears
				    only once it listens (bound as
				    "<socket_path>.<pid>~", renamed); removed by
				    vmm_destroy() without seccomp (with it,
				    left for the next start to replace) */
};

/**
 * vmm_add_vsock() - give the VM its vsock device (one per VM; it follows
 * the disks, the ports' device and the virtio-fs devices on the PCI bus).
 * @vm:  VM in state CONFIG
 * @cfg: configuration (see struct vmm_vsock_config); the path is copied
 *
 * The device's three queues are served by one of the VM's I/O threads,
 * which also reads and writes the host sockets (non-blocking).  Flow
 * control both ways: a guest that stops reading stops the host program's
 * writes (its socket fills), a host program that stops reading stops the
 * guest's; the library buffers at most 256 KiB per connection.
 *
 * Context: configuration.
 * Returns: 0 or
 *   -EINVAL   NULL @cfg, struct_size too small, unknown flag, guest_cid
 *             out of range, no socket_path or one over VMM_VSOCK_PATH_MAX,
 *             a socket_path with VMM_VSOCK_VHOST
 *   -EEXIST   the VM has a vsock device already
 *   -ENOSPC   the PCI bus full (VMM_MAX_DISKS disks, NICs, fs and vsock
 *             devices together)
 *   -EBUSY    @vm is not in state CONFIG
 *   -ENOMEM
 */
int vmm_add_vsock(struct vmm *vm, const struct vmm_vsock_config *cfg);

/* Counters of the vsock device; extensible like struct vmm_disk_stats. */
struct vmm_vsock_stats {
	uint32_t struct_size;	   /* = sizeof(struct vmm_vsock_stats) */
	uint32_t connections_open; /* now, both ways */
	uint64_t connections;	   /* established since vmm_start() */
	uint64_t refused;	   /* host clients and guest requests refused
				      (nobody listening, bad CONNECT line,
				      limit reached), set-ups reclaimed
				      after 5 s unfinished */
	uint64_t bytes_to_guest, bytes_from_guest; /* stream payload */
	uint64_t packets_to_guest, packets_from_guest;
	uint64_t resets;	   /* RSTs sent to the guest */
	uint64_t bad_packets;	   /* malformed or unexpected guest packets */
	uint64_t kicks;		   /* I/O-thread wake-ups on its queues */
	uint64_t interrupts;	   /* interrupts sent to the driver */
	/* ---- end of VMM_VSOCK_STATS_SIZE_VER0 ---- */
};

#define VMM_VSOCK_STATS_SIZE_VER0 88u /* through .interrupts */

/**
 * vmm_get_vsock_stats() - counters of the vsock device (0 before
 * vmm_start()).
 * @vm: VM, any state
 * @st: out; set st->struct_size first; on success it holds the number of
 *      bytes filled
 *
 * Context: any thread the library does not own.
 * Returns: 0 or
 *   -EINVAL  NULL @st, struct_size below VMM_VSOCK_STATS_SIZE_VER0
 *   -ENOENT  the VM has no vsock device
 */
int vmm_get_vsock_stats(struct vmm *vm, struct vmm_vsock_stats *st);

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
 * Counters of one virtqueue (or their sum over a disk).  No struct_size
 * (vmm_get_queue_stats() fills all of it): the layout is frozen, new
 * counters go into struct vmm_disk_stats.
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
 * Per-disk counters, extensible: set struct_size to sizeof(struct
 * vmm_disk_stats) of the header you build with.  The library fills the
 * fields that fit in both your struct and its own and sets struct_size to
 * that many bytes; the rest of a larger struct is left as it was (zero
 * it).  Fields are only ever appended.
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
 * vmm_get_disk_stats() - counters of disk @id (0 before vmm_start()).
 * @vm: VM, any state
 * @id: disk id from vmm_add_disk()
 * @st: out; set st->struct_size first; on success it holds the number of
 *      bytes filled
 *
 * Context: any thread the library does not own.
 * Returns: 0 or
 *   -EINVAL  NULL @st, struct_size below VMM_DISK_STATS_SIZE_VER0
 *   -ENOENT  unknown @id
 */
int vmm_get_disk_stats(struct vmm *vm, unsigned int id, struct vmm_disk_stats *st);

/**
 * vmm_get_queue_stats() - counters of queue @q of disk @id.
 *
 * Context: any thread the library does not own.
 * Returns: 0 or
 *   -EINVAL  NULL @st
 *   -ENOENT  unknown disk or queue, or the VM was never started
 */
int vmm_get_queue_stats(struct vmm *vm, unsigned int id, unsigned int q,
			struct vmm_queue_stats *st);

/*
 * Counters of one queue pair of a NIC.  No struct_size (filled whole):
 * the layout is frozen.  With VMM_NET_VHOST the kernel moves and
 * signals: all but iothread and pairs stay 0.
 */
struct vmm_net_pair_stats {
	uint64_t rx_packets, rx_bytes; /* tap -> guest (bytes: frames) */
	uint64_t tx_packets, tx_bytes; /* guest -> tap */
	uint64_t rx_drops;	       /* frames read but not delivered */
	uint64_t tx_drops;	       /* frames the tap refused */
	uint64_t rx_kicks, tx_kicks;   /* I/O-thread wake-ups on the queues'
					  notify eventfds */
	uint64_t rx_interrupts, tx_interrupts; /* interrupts sent */
	uint32_t iothread;	       /* serving I/O thread index */
	uint32_t pairs;		       /* the NIC's queue pairs */
};

/**
 * vmm_get_net_stats() - counters of queue pair @pair of NIC @id.
 *
 * Context: any thread the library does not own.
 * Returns: 0 or
 *   -EINVAL  NULL @st
 *   -ENOENT  unknown NIC or pair, or the VM was never started
 */
int vmm_get_net_stats(struct vmm *vm, unsigned int id, unsigned int pair,
		      struct vmm_net_pair_stats *st);

/* Rate limits in force and their effect on one disk or NIC; extensible
 * like struct vmm_disk_stats. */
struct vmm_rate_stats {
	uint32_t struct_size;  /* = sizeof(struct vmm_rate_stats) */
	uint32_t pad;
	uint64_t bw, bw_burst; /* the limits in force (0: unlimited / default) */
	uint64_t ops, ops_burst;
	uint64_t throttled;    /* requests (NIC: rounds of TX or RX) that
				  waited for tokens */
	uint64_t throttled_ns; /* the time they waited, in all */
};

/**
 * vmm_set_disk_rate_limit() - change disk @id's rate limits.
 * @vm: VM, any state: before vmm_start() as vmm_disk_config.rate_limit;
 *      while it runs the I/O threads pick the new limits up atomically
 *      (both buckets start full; a queue waiting for tokens booked under
 *      the old limits looks again within 100 ms)
 * @id: disk id from vmm_add_disk()
 * @rl: the new limits; all zero: unlimited
 *
 * Context: any thread the library does not own.
 * Returns: 0 or
 *   -EINVAL  NULL @rl, struct_size too small, unknown flag, a burst or
 *            one-time allowance without its rate
 *   -ENOENT  unknown @id
 */
int vmm_set_disk_rate_limit(struct vmm *vm, unsigned int id,
			    const struct vmm_rate_limit *rl);

/**
 * vmm_set_net_rate_limit() - change NIC @id's rate limits (as
 * vmm_set_disk_rate_limit(); TX and RX each).
 *
 * Context: any thread the library does not own.
 * Returns: 0 or
 *   -EINVAL      as vmm_set_disk_rate_limit()
 *   -ENOENT      unknown @id
 *   -EOPNOTSUPP  a VMM_NET_VHOST NIC (the kernel moves its frames)
 */
int vmm_set_net_rate_limit(struct vmm *vm, unsigned int id,
			   const struct vmm_rate_limit *rl);

/**
 * vmm_set_net_link() - hold NIC @id's link down (@up 0) or let it up
 * again (@up not 0), as pulling and plugging its cable (QEMU's set_link).
 *
 * Down: the guest sees VIRTIO_NET_S_LINK_UP cleared (a configuration
 * interrupt: Linux's carrier goes off); no frame reaches it (a tap's
 * queues are detached, so the kernel drops what is sent to the tap
 * meanwhile and nothing stale comes back; a stream's peer keeps what it
 * sends in the socket) and what it sends is dropped (counted in
 * tx_drops).  VMM_NET_VHOST: the kernel's vhost-net is given no back end
 * while down, so it takes nothing from the rings: what the guest queued
 * to send waits there and goes at the link's return.  Up: the reverse.
 * Before vmm_start() the state is recorded and the VM starts with it; it
 * stays across guest resets.  Once the VM has ended (its I/O threads
 * stopping) it is only recorded.  Setting the state the link is in does
 * nothing.  The change is made on the NIC's first I/O thread, which this
 * call waits for (VMM_NET_VHOST: on the calling thread).
 *
 * Context: any thread the library does not own.
 * Returns: 0 or
 *   -EINVAL    NULL @vm
 *   -ENOENT    unknown @id
 *   -ENOTCONN  @up, but the stream's peer went away (down for good)
 */
int vmm_set_net_link(struct vmm *vm, unsigned int id, int up);

/**
 * vmm_get_net_link() - whether NIC @id's link is up: 1, or 0 (held down by
 * vmm_set_net_link(), or a stream whose peer went away).
 *
 * Context: any thread the library does not own.
 * Returns: 1, 0 or
 *   -EINVAL  NULL @vm
 *   -ENOENT  unknown @id
 */
int vmm_get_net_link(struct vmm *vm, unsigned int id);

/**
 * vmm_get_disk_rate_stats(), vmm_get_net_rate_stats() - limits in force
 * and throttling of disk or NIC @id (counters 0 before vmm_start()).
 * @st: out; set st->struct_size first; on success it holds the number of
 *      bytes filled
 *
 * Context: any thread the library does not own.
 * Returns: 0 or
 *   -EINVAL  NULL @st, struct_size below 56
 *   -ENOENT  unknown @id
 */
int vmm_get_disk_rate_stats(struct vmm *vm, unsigned int id,
			    struct vmm_rate_stats *st);
int vmm_get_net_rate_stats(struct vmm *vm, unsigned int id,
			   struct vmm_rate_stats *st);

/* A counter this host's KVM does not keep (struct vmm_kvm_stats). */
#define VMM_STAT_UNKNOWN UINT64_MAX

/* KVM's own counters (binary statistics, KVM_GET_STATS_FD), summed over the
 * vCPUs; VMM_STAT_UNKNOWN where this host's KVM keeps none (arm64:
 * io_exits, irq_exits, irq_injections).  Extensible like struct
 * vmm_disk_stats. */
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
 * @st: out; set st->struct_size first; on success it holds the number of
 *      bytes filled
 *
 * Context: any thread the library does not own.
 * Returns: 0 or
 *   -EINVAL   NULL @st, struct_size below VMM_KVM_STATS_SIZE_VER0
 *   -EBUSY    never started
 *   -ENOTSUP  no KVM_CAP_BINARY_STATS_FD (Linux < 5.14)
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
 * VM is open, before any thread is confined or runs the guest: the place
 * to drop privileges (setgroups(), setresgid(), setresuid()).
 * @vm:     VM in state CONFIG
 * @fn:     callback, or NULL for none (the default)
 * @opaque: passed to @fn
 *
 * When @fn runs, RAM is mapped, kernel and initrd are loaded and closed,
 * disk images are open and locked, and only the I/O threads exist (idle,
 * unconfined: glibc's set*id() reach them); nothing after @fn opens a file.
 * @fn must not call libvmm on @vm.  If @fn fails, vmm_start() undoes its
 * work and fails; what @fn changed in the process stays changed.
 *
 * Context: configuration; @fn runs once per vmm_start(), on its caller's
 * thread, with @vm's lock held.
 * Returns: 0
 */
int vmm_set_start_hook(struct vmm *vm, vmm_start_hook_fn fn, void *opaque);

/**
 * vmm_start() - build the machine and start every vCPU; returns at once.
 * @vm: VM in state CONFIG
 *
 * Loads the kernel and initrd (read, never mapped; opened so that a FIFO
 * or device cannot block), lays out memory, creates vCPUs and devices,
 * runs the start hook, starts the threads.  On failure the VM stays in
 * CONFIG with nothing started, and the reason is logged.
 *
 * Context: any thread the library does not own.
 * Returns: 0 or
 *   -EINVAL   no kernel; kernel or initrd not a valid image, or too large
 *             for RAM (x86); arm64: more vCPUs than redistributor room (768)
 *   -ENOSPC   arm64: Image or initrd does not fit in RAM; the queues need
 *             more KVM MSI routes than the host has (see VMM_MAX_QUEUES)
 *   -ENOENT, -EACCES  a file cannot be opened
 *   -EIO      a file shrank while read; a KVM call failed
 *   -EMFILE   RLIMIT_NOFILE too low for two eventfds per queue
 *   -ENOTSUP  KVM lacks a feature (over 255 vCPUs: KVM_CAP_X2APIC_API;
 *             arm64: a GICv3 with an ITS, PSCI 0.2)
 *   -ENOMEM
 *   -EBUSY    not in CONFIG; a disk image locked by another user (logged)
 *   the start hook's error
 */
int vmm_start(struct vmm *vm);

/**
 * vmm_stop() - ask a running VM to stop; does not wait.
 * @vm: VM
 *
 * Kicks every vCPU out of KVM_RUN; vmm_wait() then reports
 * VMM_EXIT_STOPPED unless the guest had exited otherwise.  Neither the
 * caller's signal state nor the console fds can hold the stop.
 *
 * Context: any thread the library does not own.
 * Returns: 0, also when already stopped, or
 *   -EBUSY   never started
 */
int vmm_stop(struct vmm *vm);

/**
 * vmm_shutdown() - press the machine's power button; does not wait.
 * @vm: VM that was started
 *
 * x86: the ACPI fixed-feature power button (PM1 PWRBTN_STS, an SCI if the
 * guest enabled it): a guest with an ACPI button handler (acpid,
 * systemd-logind) powers off cleanly and vmm_wait() then reports
 * VMM_EXIT_POWEROFF; one without ignores it.  arm64: the device tree's
 * gpio-keys power key (KEY_POWER) on line 3 of a PL061 GPIO controller,
 * pressed, and released once the guest's driver has read it pressed; a
 * guest that acts on KEY_POWER (systemd-logind) powers off (PSCI
 * SYSTEM_OFF, VMM_EXIT_POWEROFF).  Use vmm_stop() to end the VM
 * regardless.
 *
 * Context: any thread the library does not own.
 * Returns: 0 or
 *   -EINVAL   NULL @vm
 *   -EBUSY    not started, or stopping/stopped
 */
int vmm_shutdown(struct vmm *vm);

/**
 * vmm_pause() - stop every vCPU until vmm_resume(); returns once none runs.
 * @vm: VM that was started
 *
 * Each vCPU finishes the exit it is in and parks.  Devices stay live: disk
 * requests in flight complete (their interrupts reach the guest when it
 * runs again), and nothing new arrives, since only the guest submits.  x86:
 * the guest's kvmclock stops for the pause (its monotonic clock does not
 * jump; its wall clock lags by the pause until it syncs) and each vCPU is
 * told the host stopped it (no soft-lockup report); arm64: the guest's
 * counter keeps running.  vmm_stop() ends a paused VM.  Pausing a paused
 * VM does nothing.
 *
 * Context: any thread the library does not own.
 * Returns: 0 or
 *   -EINVAL     NULL @vm
 *   -EBUSY      not started, or stopping/stopped
 *   -ETIMEDOUT  a vCPU did not park within 5 s (the VM runs on)
 */
int vmm_pause(struct vmm *vm);

/**
 * vmm_resume() - let a paused VM's vCPUs run again (no-op if not paused).
 * @vm: VM that was started
 *
 * Context: any thread the library does not own.
 * Returns: 0 or -EINVAL (NULL @vm), -EBUSY (not started, or stopping)
 */
int vmm_resume(struct vmm *vm);

/**
 * vmm_is_paused() - whether vmm_pause() is in effect.
 * @vm: VM that was started
 *
 * Context: any thread the library does not own.
 * Returns: 1 paused, 0 not, or -EINVAL (NULL @vm), -EBUSY (never started)
 */
int vmm_is_paused(struct vmm *vm);

/**
 * vmm_wait() - block until the VM has stopped, then join its threads.
 * @vm:          VM that was started
 * @exit_reason: receives an enum vmm_exit_reason, or NULL
 *
 * Disk requests in flight are cancelled, not waited for: every write the
 * guest saw completed is in the image (or its page cache).  The console's
 * last flush adds at most a second.  Later calls return at once.
 *
 * Context: any thread the library does not own.
 * Returns: 0 or
 *   -EBUSY   never started
 */
int vmm_wait(struct vmm *vm, int *exit_reason);

/**
 * vmm_get_guest_status() - the status the guest wrote to VMM_EXIT_PORT,
 * once vmm_wait() has returned VMM_EXIT_GUEST_STATUS.
 * @vm:     VM
 * @status: out: the 32-bit value (the first, if the guest wrote several)
 *
 * Context: any thread the library does not own.
 * Returns: 0 or
 *   -EINVAL   NULL @status
 *   -ENODATA  no status: not stopped, or stopped for another reason
 */
int vmm_get_guest_status(struct vmm *vm, uint32_t *status);

/**
 * vmm_get_exit_eventfd() - an eventfd that becomes readable when the VM
 * has stopped (for poll/epoll); call vmm_wait() then.
 * @vm: VM, any state
 *
 * The fd belongs to the library; vmm_destroy() closes it.
 *
 * Context: any thread the library does not own.
 * Returns: the fd (>= 0)
 */
int vmm_get_exit_eventfd(struct vmm *vm);

/* Scheduling policies of the I/O threads: vmm_set_iothread_sched(). */
enum vmm_iothread_sched {
	VMM_IOTHREAD_SCHED_BATCH = 0, /* SCHED_BATCH (default) */
	VMM_IOTHREAD_SCHED_NORMAL = 1, /* SCHED_OTHER, as the caller's */
	VMM_IOTHREAD_SCHED_ADAPTIVE = 2, /* per thread: BATCH while kicks
					    find batches, else NORMAL */
};

/**
 * vmm_set_iothread_sched() - the scheduling policy of the VM's I/O threads.
 * @vm:    VM in state CONFIG
 * @sched: enum vmm_iothread_sched
 *
 * BATCH (default): a kick does not preempt the thread on the I/O thread's
 * CPU (often the vCPU that kicked), so where they share CPUs requests are
 * served in batches, with fewer kicks and interrupts.  NORMAL: lower
 * latency for shallow queues on shared CPUs.  ADAPTIVE: each I/O thread
 * starts as BATCH, turns NORMAL after 16 kicks in a row found its queue at
 * most one request deep (waiting or in service), and BATCH again as soon
 * as one finds it deeper, or as a queue the device fills (a NIC's RX)
 * gets two or more entries filled at once (or for a short probe every
 * 32..256 kicks); the first kick after 100 ms without one starts it
 * afresh, as BATCH: one sched_setscheduler() per change, none per
 * request.
 *
 * Context: configuration.
 * Returns: 0 or
 *   -EINVAL  unknown @sched
 */
int vmm_set_iothread_sched(struct vmm *vm, int sched);

/* Counters of one I/O thread; extensible like struct vmm_disk_stats. */
struct vmm_iothread_stats {
	uint32_t struct_size;	  /* = sizeof(struct vmm_iothread_stats) */
	uint32_t sched;		  /* VMM_IOTHREAD_SCHED_BATCH or _NORMAL now
				     (an ADAPTIVE thread's current choice) */
	uint64_t loops;		  /* rounds of its event loop */
	uint64_t waits;		  /* rounds that could sleep */
	uint64_t completions;	  /* io_uring completions handled */
	uint64_t submits;	  /* io_uring submissions (system calls) */
	uint64_t sched_switches;  /* ADAPTIVE: policy changes (probes too) */
	uint64_t sched_normal_ns; /* ADAPTIVE: time spent NORMAL */
};

/**
 * vmm_get_iothread_stats() - counters of I/O thread @index (the one that
 * serves vCPU @index's queues: struct vmm_queue_stats.iothread,
 * struct vmm_net_pair_stats.iothread).
 * @vm:    VM, started (kept after it stops)
 * @index: 0 .. vCPUs - 1
 * @st:    out; set st->struct_size first (>= 48); what fits is written
 *
 * Context: any thread the library does not own.
 * Returns: 0 or
 *   -EINVAL  NULL @vm or @st, or st->struct_size < 48
 *   -ENOENT  no such I/O thread (none before vmm_start())
 */
int vmm_get_iothread_stats(struct vmm *vm, unsigned int index,
			   struct vmm_iothread_stats *st);

/**
 * vmm_set_cpu_affinity() - pin each vCPU and its I/O thread to a host CPU.
 * @vm:   VM in state CONFIG
 * @cpus: host CPU numbers (each below 1024), or NULL with @n 0: no
 *        pinning (the default: the threads may run on any CPU the process
 *        may use)
 * @n:    how many (at most VMM_MAX_VCPUS)
 *
 * vCPU i and I/O thread i -- the one serving vCPU i's queues -- run on
 * @cpus[i % @n]: a request is submitted, served and completed on one host
 * CPU.  The console's and the devices' own threads are not pinned.  A
 * later change of the process's cpuset (cgroup v2) that leaves a thread
 * none of its CPU puts that thread back on the whole cpuset.
 *
 * Context: configuration.
 * Returns: 0 or
 *   -EINVAL  NULL @cpus with @n > 0, @n over VMM_MAX_VCPUS, a CPU of 1024
 *            or more, a CPU listed twice
 *   -ENOMEM
 * vmm_start() fails with -EINVAL if a CPU is not one the process may run
 * on (sched_getaffinity(), e.g. outside its cgroup's cpuset).
 */
int vmm_set_cpu_affinity(struct vmm *vm, const unsigned int *cpus, unsigned int n);

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
 * Each library thread installs its class's allow-list (vCPU, I/O, console;
 * ports count as console) once set up; files, sockets, exec, clone, ptrace
 * and PROT_EXEC are refused everywhere.  The caller's threads are not
 * confined (see vmm_seccomp_confine_current_thread()).  In KILL mode
 * vmm_start() installs a SIGSYS reporter if SIGSYS has the default
 * disposition (otherwise the kill is silent).  After vmm_start() the
 * embedder must not change the process's uid/gid/groups, let asynchronous
 * signal handlers run on library threads, or switch to a locale not yet
 * loaded.  Needs Linux 4.14.
 *
 * Context: configuration.
 * Returns: 0 or
 *   -EINVAL  unknown @mode
 * vmm_start() fails with -ENOTSUP or -ENOMEM if a filter cannot be built
 * or installed.
 */
int vmm_set_seccomp(struct vmm *vm, int mode);

/**
 * vmm_seccomp_confine_current_thread() - install the "control" filter on
 * the calling thread (irreversible; inherited by threads it creates).
 * @vm: VM started with a seccomp mode other than VMM_SECCOMP_OFF
 *
 * For a thread that only waits for the VM and tears it down: it allows
 * vmm_stop(), vmm_wait(), polling the exit eventfd, the stats getters,
 * vmm_destroy(), a terminal restore, read/write/close of open fds, memory
 * management and exit; no open().  Same mode as @vm's.
 *
 * Context: the thread to confine, after vmm_start().
 * Returns: 0 or
 *   -EINVAL   @vm's mode is VMM_SECCOMP_OFF
 *   -EBUSY    @vm never started
 *   -ENOTSUP  (or another -errno) the kernel refused the filter
 */
int vmm_seccomp_confine_current_thread(struct vmm *vm);

/**
 * vmm_exit_reason_str() - a short English name for an enum vmm_exit_reason.
 * @reason: value
 *
 * Context: any thread.
 * Returns: a static string ("unknown" for values out of range).
 */
const char *vmm_exit_reason_str(int reason);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif /* VMM_VMM_H */
