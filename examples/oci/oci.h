/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci internals shared by its files: logging (log.c), settings
 * (settings.c), per-container state (state.c), the root disk image
 * (image.c) and the VMM process (shim.c).
 */
#ifndef MINIVMM_OCI_OCI_H
#define MINIVMM_OCI_OCI_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "spec.h"
#include "user.h"
#include "virtiofsd.h"

#define OCI_NAME "minivmm-oci"
#define OCI_VERSION "0.1.0"
#define OCI_SPEC_VERSION "1.0.2"
#define OCI_DEFAULT_ROOT "/run/minivmm-oci"
#define OCI_CONFIG_FILE "/etc/minivmm-oci.conf"

/* ---- log.c ---- */
/* Where errors go: stderr (unless quiet) and the --log file (json lines
 * {"level","msg","time"} with --log-format json, else text).  Neither
 * write waits: a line stderr does not take at once is dropped (counted:
 * oci_log_stderr_dropped()).  Any thread; the log file and stderr are
 * written with one write() per line, nothing else, so a libvmm thread
 * under its seccomp filter may log (through oci_log_file()). */
void oci_log_init(const char *path, bool json);
void oci_log_quiet_stderr(bool quiet);
void oci_log(const char *level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Only to the log file, never stderr. */
void oci_log_file(const char *level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define oci_err(...) oci_log("error", __VA_ARGS__)
#define oci_warn(...) oci_log("warning", __VA_ARGS__)
#define oci_info(...) oci_log("info", __VA_ARGS__)
/* The log file's fd (-1 if none), e.g. for libvmm's messages. */
int oci_log_fd(void);
uint64_t oci_log_stderr_dropped(void);

/*
 * A rate limit for lines a guest can cause as often as it likes (ERROR
 * frames, libvmm's messages): per limiter, at most @burst lines per
 * OCI_LIMIT_WINDOW_NS and OCI_LIMIT_LINES in all; the lines beyond are
 * counted and reported as one "N more NOUN were suppressed" line before
 * the next line that passes, and by oci_limit_flush().  So one limiter
 * costs the log at most OCI_LIMIT_LINES + 1 lines whatever the guest does.
 * Thread-safe (a mutex, held only to count).
 */
#define OCI_LIMIT_WINDOW_NS 10000000000ull /* 10 s */
#define OCI_LIMIT_LINES 200u
struct oci_limit {
	pthread_mutex_t lock;
	const char *noun;	  /* "guest error messages" */
	unsigned int burst;	  /* lines per window */
	unsigned int in_window, lines;
	uint64_t window_ns;	  /* when the current window began */
	uint64_t suppressed;	  /* since the last line that passed */
	uint64_t total;		  /* every line offered */
};
#define OCI_LIMIT_INIT(noun_, burst_) \
	{ .lock = PTHREAD_MUTEX_INITIALIZER, .noun = (noun_), .burst = (burst_) }
void oci_log_limited(struct oci_limit *l, const char *level, bool to_stderr,
		     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void oci_limit_flush(struct oci_limit *l, const char *level);
uint64_t oci_limit_total(struct oci_limit *l);
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
	uint64_t console_max;  /* bytes of it kept (0: no limit) */
	int rootfs;	       /* enum spec_rootfs: the root's kind unless the
				  SPEC_ANN_ROOTFS annotation says (`rootfs`) */
};
/* The `rootfs` default (README "Root file system": why). */
#define OCI_ROOTFS_DEFAULT SPEC_ROOTFS_EXT4
/*
 * Defaults, then the config file ($MINIVMM_OCI_CONFIG or OCI_CONFIG_FILE,
 * "key = value" lines: kernel, initrd, modules, append, memory, cpus,
 * root_free, seccomp, timings, console_dir, console_max, user, rootfs), then the
 * environment (MINIVMM_OCI_KERNEL, MINIVMM_OCI_INITRD).  0, or -1 with a
 * reason in @err.
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

/* ---- ctl.c ---- */
/*
 * Send @req ("start\n", "signal N\n") to the VMM process of the container
 * whose state directory is @dir and read its one-line answer (without the
 * newline) into @ans, all within @timeout_ms.  0; -ETIMEDOUT (no answer
 * in time); -EIO (closed without an answer); -errno of the connect
 * (-ECONNREFUSED, -ENOENT: no VMM process listens).
 */
#define OCI_CTL_SIGNAL_TIMEOUT_MS 10000
/* start waits for the guest to boot (about a minute in a nested rig) and
 * run the process. */
#define OCI_CTL_START_TIMEOUT_MS 300000
int oci_ctl_request(const char *dir, const char *req, char *ans, size_t len,
		    int timeout_ms);
/* oci_ctl_request() for a command answered "ok" or "error: REASON":
 * 0, or 1 with the reason (or the silence) reported through oci_err(). */
int oci_ctl_command(const char *dir, const char *id, const char *req, int timeout_ms);

/* ---- file.c ---- */
/*
 * Create @path afresh for writing (0600-style @mode), safely as root in a
 * directory others may write: whatever @path names is unlinked (a planted
 * symlink or hard link is removed, never followed or truncated), then
 * created with O_CREAT | O_EXCL | O_NOFOLLOW.  The fd, or -errno (-EEXIST:
 * an entry we may not remove, e.g. another user's in a sticky directory).
 */
int oci_file_create(const char *path, mode_t mode);
/* Write @text to PATH.tmp (oci_file_create(), 0644) and rename it to
 * @path (--pid-file, ROOT/ID/started).  0, or -1 with errno. */
int oci_file_write_atomic(const char *path, const char *text);

/* ---- conlog.c: the guest's serial console, capped ---- */
struct oci_conlog {
	char path[4200];  /* STATE/console.log or console_dir/ID.console.log */
	int file;	  /* that file */
	int pipe_r, pipe_w; /* libvmm writes the console to pipe_w */
	uint64_t max;	  /* console_max; 0: no limit */
	uint64_t written; /* bytes in the file */
	uint64_t dropped; /* bytes not written (over the cap, write errors) */
	bool capped;	  /* the "console_max reached" line was written */
};
/* Bytes one call of oci_conlog_pump() reads at most (one loop turn). */
#define OCI_CONLOG_TURN (256u << 10)
/* Create the file (oci_file_create()) and the pipe.  0, or -1 with a
 * reason in @err. */
int oci_conlog_open(struct oci_conlog *c, const struct oci_settings *set,
		    const char *state_dir, char *err, size_t errlen);
/* Copy what the pipe holds (at most @budget bytes) to the file, up to
 * the cap; returns the bytes read from the pipe. */
size_t oci_conlog_pump(struct oci_conlog *c, size_t budget);
/* Copy the rest, log what was dropped, close the file and pipe_r. */
void oci_conlog_finish(struct oci_conlog *c);

/* ---- state.c ---- */
enum oci_status { OCI_CREATED, OCI_RUNNING, OCI_PAUSED, OCI_STOPPED };
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

/* ---- volumes.c: the container's volumes (SPEC_MOUNT_VOLUME) ---- */
struct vmm;
/* Start a virtiofsd per volume into @v (SPEC_MAX_VOLUMES entries, zeroed),
 * its stderr @state_dir/virtiofsd-N.log, before the VM is built; as root
 * (a read-only volume is a read-only bind in virtiofsd's namespace).  0, or
 * -1 with a reason in @err (those started are stopped).  Context: the VMM
 * process, one thread. */
int oci_volumes_start(const struct oci_spec *s, const char *state_dir,
		      struct virtiofsd *v, char *err, size_t errlen);
/* The VM's memory backend (memfd: virtiofsd maps guest RAM) and a virtio-fs
 * device per volume, tag SPEC_VOLUME_TAG.  0 or -errno (logged). */
int oci_volumes_add(struct vmm *vm, const struct oci_spec *s, struct virtiofsd *v);
/* vmm_start() connected them: remove their sockets (while still root). */
void oci_volumes_connected(const struct oci_spec *s, struct virtiofsd *v);
/* Reap them (they end as the VM's connections close; SIGTERM after 2 s). */
void oci_volumes_stop(const struct oci_spec *s, struct virtiofsd *v);

/* The root over virtio-fs (@s->root_virtiofs): its virtiofsd on the
 * bundle's root directory into @root (read-only if root.readonly), its
 * stderr @state_dir/virtiofsd-root.log; as oci_volumes_start().  0, or -1
 * with a reason in @err. */
int oci_rootfs_start(const struct oci_spec *s, const char *state_dir,
		     struct virtiofsd *root, char *err, size_t errlen);
/* Its virtio-fs device, tag SPEC_ROOT_TAG (and the memfd backend).  0 or
 * -errno (logged). */
int oci_rootfs_add(struct vmm *vm, const struct oci_spec *s, struct virtiofsd *root);

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
	const char *cgroup_dir; /* join this cgroup first ("" or NULL: none) */
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
