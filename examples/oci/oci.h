/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci internals shared by its files: logging (log.c), settings
 * (settings.c), per-container state (state.c), the root disk image
 * (image.c) and the VMM process (shim.c).
 */
#ifndef MINIVMM_OCI_OCI_H
#define MINIVMM_OCI_OCI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "spec.h"
#include "user.h"

#define OCI_NAME "minivmm-oci"
#define OCI_VERSION "0.1.0"
#define OCI_SPEC_VERSION "1.0.2"
#define OCI_DEFAULT_ROOT "/run/minivmm-oci"
#define OCI_CONFIG_FILE "/etc/minivmm-oci.conf"

/* ---- log.c ---- */
/* Where errors go: stderr (unless quiet) and the --log file (json lines
 * {"level","msg","time"} with --log-format json, else text). */
void oci_log_init(const char *path, bool json);
void oci_log_quiet_stderr(bool quiet);
void oci_log(const char *level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define oci_err(...) oci_log("error", __VA_ARGS__)
#define oci_warn(...) oci_log("warning", __VA_ARGS__)
#define oci_info(...) oci_log("info", __VA_ARGS__)
/* The log file's fd (-1 if none), e.g. for libvmm's messages. */
int oci_log_fd(void);
/* Nanoseconds of CLOCK_MONOTONIC. */
uint64_t oci_now_ns(void);

/* ---- settings.c ---- */
struct oci_settings {
	char *kernel, *initrd; /* NULL: default / built at first use */
	char *modroot;	       /* where lib/modules/KVER is (default "/") */
	char *append;	       /* extra kernel command line */
	uint64_t mem_default;  /* guest RAM without a memory limit */
	unsigned int cpus_default;
	uint64_t root_free;    /* free space in a writable root image */
	bool seccomp;
	char *timings;	       /* append JSON timing records here, or NULL */
	char *console_dir;     /* guest kernel logs go to DIR/ID.console.log
				  (kept after delete), or NULL: the state dir */
	struct user_spec user; /* who the VMM process becomes; unset: the
				  default (oci_vmm_user()) */
};
/*
 * Defaults, then the config file ($MINIVMM_OCI_CONFIG or OCI_CONFIG_FILE,
 * "key = value" lines: kernel, initrd, modules, append, memory, cpus,
 * root_free, seccomp, timings, console_dir, user), then the environment
 * (MINIVMM_OCI_KERNEL, MINIVMM_OCI_INITRD).  0, or -1 with a reason in @err.
 */
int oci_settings_load(struct oci_settings *s, char *err, size_t errlen);
void oci_settings_free(struct oci_settings *s);
/* The system user the VMM process drops to without a `user` setting, if
 * it exists; else "nobody", else 65534:65534. */
#define OCI_VMM_USER "minivmm-oci"
/*
 * The uid and gid the VMM process drops to: the `user` setting
 * (user_resolve()), else OCI_VMM_USER's, else nobody's (their primary
 * groups), else 65534:65534; never 0.  Call while the process has one
 * thread (the user database).  0, or -1 with a reason in @err.
 */
int oci_vmm_user(const struct oci_settings *s, uid_t *uid, gid_t *gid, char *err,
		 size_t errlen);
/*
 * Resolve the kernel and initramfs to boot: the configured kernel (default
 * /vmlinuz, Debian's link to the newest installed kernel), and the
 * configured initramfs or, by default, CACHE/initrd-KVER.cpio.gz under
 * /var/cache/minivmm-oci, built at first use by minivmm-oci-mkinitrd from
 * MODROOT/lib/modules/KVER (KVER read from the bzImage header).
 * 0, or -1 with a reason in @err.
 */
int oci_boot_files(struct oci_settings *s, char *err, size_t errlen);
/* The kernel release in a bzImage's header ("6.1.0-57-amd64"). */
int oci_kernel_release(const char *kernel, char *out, size_t len);

/* ---- state.c ---- */
enum oci_status { OCI_CREATED, OCI_RUNNING, OCI_STOPPED };
struct oci_state {
	char id[256];
	char dir[4096]; /* ROOT/ID */
	char bundle[4096];
	char created[64];
	pid_t pid;
	uint64_t starttime; /* /proc/PID/stat field 22, against pid reuse */
	char *annotations;  /* JSON object text */
};
/* A container id: [A-Za-z0-9][A-Za-z0-9_.+-]*, at most 250 bytes. */
bool oci_valid_id(const char *id);
/* ROOT/ID into @out. */
void oci_state_dir(const char *root, const char *id, char *out, size_t len);
int oci_state_write(const struct oci_state *st);
/* 0; -ENOENT (no such container); -EIO (unreadable state). */
int oci_state_read(const char *root, const char *id, struct oci_state *st);
void oci_state_free(struct oci_state *st);
enum oci_status oci_state_status(const struct oci_state *st);
const char *oci_status_name(enum oci_status s);
uint64_t oci_proc_starttime(pid_t pid);
/* Remove ROOT/ID and everything in it. */
int oci_state_remove(const char *dir);

/* ---- image.c ---- */
struct oci_image_stats {
	uint64_t bytes, inodes; /* of the root file system */
	uint64_t image_bytes;	/* size of the image file */
	uint64_t scan_ns, mkfs_ns, inject_ns;
};
/*
 * Build the ext4 image @img from @s's root file system (mkfs.ext4 -d, no
 * journal: the disk lives as long as the container), with @free_bytes of
 * room when the root is writable, then copy in the files @s bind-mounts
 * (SPEC_MOUNT_FILE_COPY: /etc/hosts, /etc/resolv.conf, ...) with debugfs.
 * 0, or -1 with a reason in @err.
 */
int oci_image_build(const struct oci_spec *s, const char *img,
		    uint64_t free_bytes, struct oci_image_stats *stats,
		    char *err, size_t errlen);

/* ---- shim.c: the VMM process ---- */
struct oci_shim_params {
	const struct oci_spec *spec;
	const struct oci_settings *set;
	const char *state_dir;
	const char *image;
	int listen_fd;	   /* ctl.sock, listening */
	int tty_slave;	   /* -1 without a terminal */
	int ready_fd;	   /* write "ok\n" or "error: ...\n", then close */
	uint64_t t0_ns;	   /* when create started (timings) */
	bool drop;	   /* become uid:gid once the VM's files are open */
	uid_t uid;
	gid_t gid;
};
/* Runs the VM until the container's process exits; returns the exit
 * status for the process (the container's: 0..255).  With @p->drop, the
 * process empties its capability sets before it starts the VM and becomes
 * @p->uid:@p->gid from libvmm's start hook (examples/common/user.h).  Call
 * while the process has one thread. */
int oci_shim_run(const struct oci_shim_params *p);

#endif
