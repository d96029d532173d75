/* SPDX-License-Identifier: MIT */
/* minivmm command-line parsing (kept apart from main() so it is unit-tested). */
#ifndef MINIVMM_CLI_H
#define MINIVMM_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "disk-spec.h" /* struct cli_disk, cli_parse_disk() */
#include "net-spec.h"  /* struct cli_net, cli_parse_net() */
#include "fs-spec.h"   /* struct cli_fs, cli_parse_fs() */
#include "user.h"
#include "vmm/vmm.h"

#define CLI_MAX_DISKS VMM_MAX_DISKS
#define CLI_MAX_AFFINITY 1024 /* vmm_set_cpu_affinity()'s CPU limit */
/* The platform's serial console is ttyS0 on both (COM1; arm64's ns16550a);
 * the rest is x86's: reset through the i8042, configuration mechanism #1,
 * a keyboard controller with nothing behind it. */
#if defined(__aarch64__)
#define CLI_DEFAULT_CMDLINE "console=ttyS0 panic=-1"
/* --help's platform-specific lines. */
#define CLI_KERNEL_ARG "IMAGE"
#define CLI_KERNEL_HELP                                                       \
	"  -k, --kernel FILE    Linux arm64 Image (uncompressed, as Debian's\n" \
	"                       vmlinuz-*-arm64: Documentation/arm64/booting);\n" \
	"                       a regular file\n"
#define CLI_END_HELP                                                          \
	"The guest's serial console (an ns16550a UART) is this terminal.  The\n" \
	"VM ends when the guest powers off (`poweroff`, through PSCI\n"         \
	"SYSTEM_OFF) or reboots (`reboot`, PSCI SYSTEM_RESET), or on\n"          \
	"SIGINT/SIGTERM.\n"                                                       \
	"Exit status: 0 guest shut down, 1 VMM or guest failure, 2 usage\n"      \
	"error, 128+N stopped by signal N.\n"
#else
#define CLI_KERNEL_ARG "BZIMAGE"
#define CLI_KERNEL_HELP                                                       \
	"  -k, --kernel FILE    Linux bzImage (boot protocol >= 2.06, 64-bit),\n" \
	"                       or an uncompressed vmlinux with a PVH entry\n"   \
	"                       (CONFIG_PVH; booted without the decompressor);\n" \
	"                       a regular file\n"
#define CLI_END_HELP                                                          \
	"The guest's serial console (COM1) is this terminal.  The VM ends\n"     \
	"when the guest powers off (`poweroff`, through ACPI) or reboots\n"      \
	"(`reboot`), or on SIGINT/SIGTERM.\n"                                     \
	"Exit status: 0 guest shut down, 1 VMM or guest failure, 2 usage\n"      \
	"error, 128+N stopped by signal N; N & 255 when the guest wrote N\n"     \
	"to the exit port (I/O port 0xf4, see vmm.h VMM_EXIT_PORT).\n"
/* pci=noearly: no PCI config reads before the PCI subsystem runs (chipset
 * quirks and the AMD GART aperture search, for hardware this machine does
 * not have).  Where the CPU reports an AMD family with a GART (0Fh-11h,
 * early 15h: nested TCG's default CPU does), that search reads every
 * function of all 256 buses, twice, two port exits a read (README). */
#define CLI_DEFAULT_CMDLINE                                                   \
	"console=ttyS0 reboot=k panic=-1 pci=conf1,noearly i8042.noaux "       \
	"i8042.nopnp i8042.dumbkbd"
#endif

struct cli_opts {
	unsigned int smp;
	uint64_t mem;
	const char *kernel, *initrd;
	char *cmdline; /* owned: default or --cmdline, plus --append */
	struct cli_disk disks[CLI_MAX_DISKS];
	unsigned int nr_disks;
	bool stats, stats_json;
	bool no_seccomp; /* --no-seccomp: seccomp is on by default */
	struct user_spec user; /* --user: who minivmm becomes once the VM's
				  files are open (user.h) */
	int io_sched;	 /* --io-sched: enum vmm_iothread_sched */
	int mem_backend; /* --mem-backend: enum vmm_memory_backend */
	int log_level;
	const char *api_socket; /* --api-socket PATH, or NULL */
	bool help, version;
	struct cli_net nets[CLI_MAX_NETS]; /* --net */
	unsigned int nr_nets;
	struct cli_fs fs[CLI_MAX_FS]; /* --fs */
	unsigned int nr_fs;
	bool mem_backend_set;	      /* --mem-backend given (else --fs: memfd) */
	/* --vsock cid=N,socket=PATH or cid=N,vhost=on (vsock_path owned;
	 * struct_size 0: no --vsock) */
	struct vmm_vsock_config vsock;
	char *vsock_path;
	/* --cpu-affinity LIST (vmm_set_cpu_affinity()) */
	unsigned int cpu_affinity[CLI_MAX_AFFINITY];
	unsigned int nr_cpu_affinity;
};

/*
 * Parse argv.  Returns 0 (check help/version), or -1 with a one-line reason
 * in @err (usage error: exit status 2).  Call cli_free() in both cases.
 */
int cli_parse(int argc, char **argv, struct cli_opts *o, char *err, size_t errlen);
void cli_free(struct cli_opts *o);

/* --vsock's SPEC into o->vsock (o->vsock_path holds the path).  0 or -1
 * with a reason in @err. */
int cli_parse_vsock(const char *spec, struct cli_opts *o, char *err, size_t errlen);

/* --mem: parse_size() (parse.h), 0 refused.  0 or -1. */
int cli_parse_size(const char *s, uint64_t *out);

void cli_usage(const char *prog, void *file);

#endif
