/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci's guest init: PID 1 of the container's microVM (static, in
 * the initramfs that examples/oci/mkinitrd.sh builds).
 *
 *  1. mounts /dev, /proc, /sys of the initramfs, loads the modules listed
 *     in /etc/modules.load (virtio_pci, virtio_blk, virtio_console, ext4,
 *     virtio_net, virtiofs and their dependencies);
 *  2. opens the virtio-console ports minivmm.ctl/.stdin/.stdout/.stderr,
 *     sends READY on minivmm.ctl and waits for the CONFIG message (the host
 *     sends it when `minivmm-oci start` runs);
 *  3. mounts the root disk (/dev/vda, ext4; read-only when asked), or the
 *     virtio-fs device PROTO_REC_ROOT_FS names, at /newroot and starts the container process with clone(CLONE_NEWPID |
 *     CLONE_NEWNS): it is PID 1 of its own PID namespace, as OCI runtimes do, so
 *     signals it has no handler for are ignored unless they are
 *     SIGKILL/SIGSTOP, and has its own mount namespace (rslave).  The child
 *     mounts what the spec lists (proc, sysfs, tmpfs, devpts, mqueue,
 *     cgroup2; /dev gets its device nodes; volumes: virtio-fs by tag; with
 *     the root over virtio-fs, bound files from PROTO_REC_FILE), masks and protects paths, sets
 *     hostname and sysctls, detaches the init's /dev, /proc and /sys,
 *     moves /newroot onto / and chroots into it (the usual way when the
 *     root is an initramfs, where pivot_root(2) is refused), sets rlimits,
 *     umask, the bounding set, groups, gid, uid, the other capability sets
 *     (process.capabilities), no_new_privs, changes to cwd and execs the
 *     process with the spec's environment;
 *  4. forwards SIGNAL messages to the process, relays the terminal (-t)
 *     between the ports and a pty, applies RESIZE, reaps every child;
 *  4a. once the process runs, serves `exec` and `ps` on vsock port
 *     EXEC_PORT, each connection in a forked child (exec.h);
 *  5. when the process has exited, writes its status (exit code, or
 *     128 + signal) to the VMM's exit port (0xf4): the VM ends there.
 * Any failure before the process runs is reported as ERROR on minivmm.ctl
 * and ends the VM with status 127 (not found), 126 (not executable) or 1.
 * Its own messages go to the kernel console (ttyS0: the runtime's log).
 *
 * Run anywhere but as PID 1 of a VM's initial PID namespace (e.g. by
 * mistake on a host, where it would mount over /dev, load modules and
 * reboot), it prints one line and exits 1 before doing anything else.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <grp.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "../proto.h"
#include "caps.h"
#include "config.h"
#include "modparams.h"
#include "net.h"
#include "process.h"
#include "readahead.h"
#include "exec.h"

#define EXIT_PORT 0xf4 /* VMM_EXIT_PORT */
#define NEWROOT "/newroot"

/* End the VM with @status (the exit port); never returns. */
static void __attribute__((noreturn)) vm_exit(uint32_t status)
{
	if (ioperm(EXIT_PORT, 4, 1) == 0)
		outl(status, EXIT_PORT);
	init_msg("cannot use the exit port (%s); rebooting", strerror(errno));
	sync();
	syscall(SYS_reboot, 0xfee1dead, 672274793, 0x01234567, NULL);
	for (;;)
		pause();
}

/* ---- the configuration ------------------------------------------------ */

static struct init_config C; /* decoded once, then read-only */

/* ---- the control port ------------------------------------------------- */

static int ctl_fd = -1, in_fd = -1, out_fd = -1, err_fd = -1;

static void ctl_send(uint8_t type, const void *p, size_t n)
{
	struct proto_buf b = { 0 };

	proto_frame(&b, type, p, n);
	if (!b.err)
		init_write_full(ctl_fd, b.data, b.len);
	proto_buf_free(&b);
}

/* Report a failure before the process ran and end the VM. */
static void __attribute__((noreturn, format(printf, 2, 3)))
fail(uint32_t status, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	init_msg("%s", text);
	if (ctl_fd >= 0)
		ctl_send(PROTO_MSG_ERROR, text, strlen(text));
	vm_exit(status);
}

/* ---- boot ------------------------------------------------------------- */

/* Each module of /etc/modules.load, with its parameters from the kernel
 * command line (modparams.h: what modprobe would pass). */
static void load_modules(void)
{
	FILE *f = fopen("/etc/modules.load", "r");
	char line[512], path[600], cmdline[4096] = "", params[4096];
	int cfd;

	if (!f)
		return;
	cfd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	if (cfd >= 0) {
		ssize_t n = read(cfd, cmdline, sizeof(cmdline) - 1);

		cmdline[n > 0 ? n : 0] = 0;
		close(cfd);
	}
	while (fgets(line, sizeof(line), f)) {
		int fd;

		line[strcspn(line, "\n")] = 0;
		if (!*line)
			continue;
		snprintf(path, sizeof(path), "/lib/modules/%s", line);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			init_msg("module %s: %s", line, strerror(errno));
			continue;
		}
		if (modparams_for(cmdline, line, params, sizeof(params)))
			init_msg("module %s: its command-line parameters are too long; "
				 "loaded without", line);
		/* A module the CPU cannot use (crc32c-intel) fails with
		 * ENODEV: its generic fallback follows in the list. */
		if (syscall(SYS_finit_module, fd, params, 0) && errno != EEXIST &&
		    errno != ENODEV)
			init_msg("module %s: %s", line, strerror(errno));
		close(fd);
	}
	fclose(f);
}

/* The /dev node of the port called @name, or "" if it is not there yet. */
static void find_port(const char *name, char *dev, size_t len)
{
	DIR *d = opendir("/sys/class/virtio-ports");
	struct dirent *e;

	*dev = 0;
	if (!d)
		return;
	while ((e = readdir(d))) {
		char p[512], n[256] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/sys/class/virtio-ports/%s/name", e->d_name);
		f = fopen(p, "r");
		if (!f)
			continue;
		if (fgets(n, sizeof(n), f))
			n[strcspn(n, "\n")] = 0;
		fclose(f);
		if (!strcmp(n, name)) {
			snprintf(dev, len, "/dev/%s", e->d_name);
			break;
		}
	}
	closedir(d);
}

static int open_port(const char *name, int flags)
{
	char dev[300];

	for (int i = 0; i < 3000; i++) { /* 30 s */
		find_port(name, dev, sizeof(dev));
		if (*dev) {
			int fd = open(dev, flags | O_CLOEXEC | O_NOCTTY);

			if (fd >= 0)
				return fd;
			if (errno != ENOENT)
				return -1;
		}
		usleep(10000);
	}
	errno = ETIMEDOUT;
	return -1;
}

static void wait_for(const char *path)
{
	struct stat st;

	for (int i = 0; i < 3000 && stat(path, &st); i++)
		usleep(10000);
}

/* Read frames from the control port until one of @type arrives. */
static struct proto_reader ctl_reader;

static int ctl_read_frame(uint8_t *type, const uint8_t **p, uint32_t *len,
			  int timeout_ms)
{
	static uint8_t buf[65536];
	static size_t have, off;
	int got;

	for (;;) {
		if (off < have) {
			off += proto_reader_feed(&ctl_reader, buf + off, have - off,
						 &got, type, p, len);
			if (ctl_reader.err)
				return -1;
			if (got)
				return 1;
			continue;
		}
		if (timeout_ms >= 0) {
			struct pollfd pfd = { .fd = ctl_fd, .events = POLLIN };

			if (poll(&pfd, 1, timeout_ms) <= 0)
				return 0;
		}
		ssize_t n = read(ctl_fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		have = (size_t)n;
		off = 0;
		if (timeout_ms >= 0)
			timeout_ms = 0; /* more may already be there */
	}
}

/* ---- the container process ---------------------------------------------- */

struct opt {
	const char *name;
	unsigned long set, clear;
};

static const struct opt mount_opts[] = {
	{ "ro", MS_RDONLY, 0 },	       { "rw", 0, MS_RDONLY },
	{ "nosuid", MS_NOSUID, 0 },    { "suid", 0, MS_NOSUID },
	{ "nodev", MS_NODEV, 0 },      { "dev", 0, MS_NODEV },
	{ "noexec", MS_NOEXEC, 0 },    { "exec", 0, MS_NOEXEC },
	{ "relatime", MS_RELATIME, 0 }, { "noatime", MS_NOATIME, 0 },
	{ "strictatime", MS_STRICTATIME, 0 }, { "sync", MS_SYNCHRONOUS, 0 },
	{ "nodiratime", MS_NODIRATIME, 0 },
	{ "rbind", 0, 0 }, { "bind", 0, 0 }, { "private", 0, 0 },
	{ "rprivate", 0, 0 }, { "slave", 0, 0 }, { "rslave", 0, 0 },
	{ "shared", 0, 0 }, { "rshared", 0, 0 },
	/* OCI runtime extensions and SELinux relabelling: nothing to pass to
	 * the kernel (tmpcopyup's copy of the directory's old contents is
	 * not done: the tmpfs starts empty). */
	{ "tmpcopyup", 0, 0 }, { "notmpcopyup", 0, 0 }, { "z", 0, 0 },
	{ "Z", 0, 0 }, { "U", 0, 0 }, { "copy-symlink", 0, 0 },
	{ "idmap", 0, 0 }, { "nosymfollow", 0, 0 },
};

/* Split comma-separated @options into flags and the filesystem's data. */
static unsigned long parse_opts(const char *options, char *data, size_t len)
{
	char *copy = strdup(options ? options : ""), *save, *o;
	unsigned long flags = 0;

	*data = 0;
	for (o = strtok_r(copy, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		bool known = false;

		for (size_t i = 0; i < sizeof(mount_opts) / sizeof(mount_opts[0]); i++)
			if (!strcmp(o, mount_opts[i].name)) {
				flags = (flags | mount_opts[i].set) & ~mount_opts[i].clear;
				known = true;
			}
		if (!known && strlen(data) + strlen(o) + 2 < len) {
			if (*data)
				strcat(data, ",");
			strcat(data, o);
		}
	}
	free(copy);
	return flags;
}

static void mkdir_p(const char *path, mode_t mode)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			mkdir(p, mode);
			*s = '/';
		}
	mkdir(p, mode);
}

/* @dev is NEWROOT "/dev": short, so the names below always fit. */
static void make_dev_nodes(const char *dev)
{
	static const struct { const char *n; unsigned int maj, min; mode_t m; } d[] = {
		{ "null", 1, 3, 0666 }, { "zero", 1, 5, 0666 }, { "full", 1, 7, 0666 },
		{ "random", 1, 8, 0666 }, { "urandom", 1, 9, 0666 }, { "tty", 5, 0, 0666 },
	};
	char p[4200];

	for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dev, d[i].n);
		mknod(p, S_IFCHR | d[i].m, makedev(d[i].maj, d[i].min));
		chmod(p, d[i].m);
	}
	snprintf(p, sizeof(p), "%s/ptmx", dev);
	symlink("pts/ptmx", p);
	snprintf(p, sizeof(p), "%s/fd", dev);
	symlink("/proc/self/fd", p);
	snprintf(p, sizeof(p), "%s/stdin", dev);
	symlink("/proc/self/fd/0", p);
	snprintf(p, sizeof(p), "%s/stdout", dev);
	symlink("/proc/self/fd/1", p);
	snprintf(p, sizeof(p), "%s/stderr", dev);
	symlink("/proc/self/fd/2", p);
	snprintf(p, sizeof(p), "%s/core", dev);
	symlink("/proc/kcore", p);
}

/*
 * @src bound over @target, the mount point of @m (created empty, with its
 * parents, if missing), then made nosuid/nodev/noexec/read-only as @flags
 * say, this mount alone.  Context: the child, as do_mounts().
 */
static void bind_over(const struct init_mnt *m, const char *src, const char *target,
		      unsigned long flags)
{
	char dir[4096], *slash;
	int fd;

	snprintf(dir, sizeof(dir), "%s", target);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		mkdir_p(dir, 0755);
	}
	fd = open(target, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0644);
	if (fd >= 0)
		close(fd);
	if (mount(src, target, NULL, MS_BIND, NULL))
		fail(1, "bind of a file on %s: %s", m->dest, strerror(errno));
	flags &= MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
	if (flags && mount(NULL, target, NULL, MS_REMOUNT | MS_BIND | flags, NULL))
		init_msg("remount %s: %s", m->dest, strerror(errno));
}

/*
 * A bind of a host file with the root over virtio-fs (PROTO_REC_FILE): its
 * bytes into a file of the initramfs, bound over @target, so that nothing
 * is written into the shared root.  Context: the child, as do_mounts().
 */
static void bind_file(const struct init_mnt *m, const char *target, unsigned long flags,
		      unsigned int n)
{
	char src[64];
	int fd;

	snprintf(src, sizeof(src), "/.minivmm-file-%u", n);
	fd = open(src, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		fail(1, "file for %s: %s", m->dest, strerror(errno));
	init_write_full(fd, m->source, m->size); /* a tmpfs: short only if full */
	close(fd);
	bind_over(m, src, target, flags);
}

/* A virtio-fs mount's read-ahead raised (readahead.h); a failure is
 * logged, the mount is usable without it.  Context: the guest init. */
static void fs_readahead(const char *target, const char *name)
{
	int ret = init_fs_readahead("/sys", target, INIT_FS_READAHEAD_KB);

	if (ret)
		init_msg("read-ahead of %s: %s", name, strerror(-ret));
}

/*
 * A volume of one host file (PROTO_REC_VOLUME_FILE): its virtio-fs device
 * mounted in the initramfs (/.minivmm-vol-N, outside the container's
 * root), its PROTO_VOLUME_FILE bound over @target with the mount's
 * flags.  The host file itself: writes reach
 * it.  Context: the child, as do_mounts().
 */
static void bind_volume_file(const struct init_mnt *m, const char *target,
			     unsigned long flags, unsigned int n)
{
	char dir[64], src[96];

	snprintf(dir, sizeof(dir), "/.minivmm-vol-%u", n);
	snprintf(src, sizeof(src), "%s/" PROTO_VOLUME_FILE, dir);
	mkdir(dir, 0700);
	if (mount(m->source, dir, "virtiofs", MS_NOSUID | MS_NODEV, NULL))
		fail(1, "mount of volume %s (%s): %s", m->dest, m->source, strerror(errno));
	fs_readahead(dir, m->dest);
	bind_over(m, src, target, flags);
}

/* Context: the child, in its PID and mount namespaces, before chroot. */
static void do_mounts(void)
{
	char target[4096], data[1024];

	for (unsigned int i = 0; i < C.nmounts; i++) {
		const struct init_mnt *m = &C.mounts[i];
		unsigned long flags = parse_opts(m->options, data, sizeof(data));
		const char *type = m->type;
		/* A volume's source is its virtio-fs tag. */
		const char *source = m->volume ? m->source : type;

		snprintf(target, sizeof(target), NEWROOT "%s", m->dest);
		if (m->file) {
			bind_file(m, target, flags, i);
			continue;
		}
		if (m->vfile) {
			bind_volume_file(m, target, flags, i);
			continue;
		}
		if (!strcmp(type, "cgroup"))
			type = "cgroup2"; /* one unified hierarchy in the guest */
		mkdir_p(target, 0755);
		if (mount(source, target, type, flags & ~MS_RDONLY, *data ? data : NULL)) {
			/* cgroup2 and mqueue are optional in a VM. */
			if (!strcmp(type, "cgroup2") || !strcmp(type, "mqueue")) {
				init_msg("mount %s on %s: %s (skipped)", type, m->dest,
				    strerror(errno));
				continue;
			}
			fail(1, "mount %s on %s: %s", type, m->dest, strerror(errno));
		}
		if (!strcmp(m->dest, "/dev") && !strcmp(type, "tmpfs"))
			make_dev_nodes(target);
		/* Read-only for this mount alone (MS_BIND): a remount of the
		 * superblock would also make read-only every other mount of it
		 * -- sysfs is one per network namespace, so a read-only /sys
		 * in the container made the init's own /sys read-only and the
		 * volumes after it kept the kernel's read-ahead. */
		if ((flags & MS_RDONLY) &&
		    mount(NULL, target, NULL, MS_REMOUNT | MS_BIND |
			  (flags & (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME |
				    MS_NODIRATIME | MS_RELATIME | MS_STRICTATIME)), NULL))
			init_msg("remount %s read-only: %s", m->dest, strerror(errno));
		if (m->volume)
			fs_readahead(target, m->dest);
	}
	for (unsigned int i = 0; i < C.ndevs; i++) {
		const struct init_dev *d = &C.devs[i];
		mode_t t = d->type == 'b' ? S_IFBLK : S_IFCHR;

		snprintf(target, sizeof(target), NEWROOT "%s", d->path);
		unlink(target);
		if (mknod(target, t | (d->mode & 07777), makedev(d->major, d->minor)) == 0) {
			chmod(target, d->mode & 07777);
			if (chown(target, d->uid, d->gid))
				init_msg("chown %s: %s", d->path, strerror(errno));
		}
	}
}

static void do_paths(void)
{
	char target[4096];
	struct stat st;

	for (unsigned int i = 0; i < C.nmasked; i++) {
		snprintf(target, sizeof(target), NEWROOT "%s", C.masked[i]);
		if (stat(target, &st))
			continue;
		if (S_ISDIR(st.st_mode))
			mount("tmpfs", target, "tmpfs", MS_RDONLY, NULL);
		else
			mount(NEWROOT "/dev/null", target, NULL, MS_BIND, NULL);
	}
	for (unsigned int i = 0; i < C.nropaths; i++) {
		snprintf(target, sizeof(target), NEWROOT "%s", C.ropaths[i]);
		if (stat(target, &st))
			continue;
		if (!mount(target, target, NULL, MS_BIND | MS_REC, NULL))
			mount(NULL, target, NULL,
			      MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV |
				      MS_NOEXEC, NULL);
	}
}

static void do_sysctls(void)
{
	for (unsigned int i = 0; i < C.nsysctls; i++) {
		char p[512];
		int fd;

		snprintf(p, sizeof(p), NEWROOT "/proc/sys/%s", C.sysctls[i][0]);
		for (char *s = p + strlen(NEWROOT "/proc/sys/"); *s; s++)
			if (*s == '.')
				*s = '/';
		fd = open(p, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, C.sysctls[i][1], strlen(C.sysctls[i][1])) < 0)
			init_msg("sysctl %s: %s", C.sysctls[i][0], strerror(errno));
		if (fd >= 0)
			close(fd);
	}
}

struct child_args {
	int err_pipe; /* CLOEXEC: EOF = exec succeeded */
	int tty_sock; /* terminal: the pty master goes to the parent here */
};

/* Send @fd over the unix socket @sock (SCM_RIGHTS). */
static int send_fd(int sock, int fd)
{
	char byte = 'T';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;

	memset(u.buf, 0, sizeof(u.buf));
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	int fd = -1;

	if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&m);
	if (c && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/*
 * Make NEWROOT the root of the child's mount namespace: detach the init's
 * own mounts first (its devtmpfs holds every device of the VM, the ports
 * included), then move NEWROOT onto "/" and chroot there, as OCI runtimes
 * do without pivot_root.  pivot_root(2) is refused on an initramfs (its root,
 * rootfs, cannot be unmounted), and would leave the same namespace: the
 * container's tree mounted on rootfs, whose files (this program, modules)
 * are all an escape from the chroot could reach.
 * Context: the child, in its own mount namespace.
 */
static int enter_root(void)
{
	static const char *const init_mounts[] = { "/dev", "/proc", "/sys" };

	for (size_t i = 0; i < sizeof(init_mounts) / sizeof(init_mounts[0]); i++)
		if (umount2(init_mounts[i], MNT_DETACH))
			init_msg("detaching %s: %s", init_mounts[i], strerror(errno));
	if (chdir(NEWROOT) || mount(NEWROOT, "/", NULL, MS_MOVE, NULL) ||
	    chroot(".") || chdir("/"))
		return -errno;
	return 0;
}

static int child_main(void *arg)
{
	struct child_args *a = arg;
	int fd = a->err_pipe;

	/* Its own mount namespace (clone(CLONE_NEWNS)): nothing it mounts
	 * reaches the init's, and nothing the init mounts later reaches it. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL))
		init_child_fail(fd, 1, "making / rslave: %s", strerror(errno));
	/* The new PID namespace's proc is mounted by do_mounts(). */
	do_mounts();
	do_paths();
	if (C.hostname && sethostname(C.hostname, strlen(C.hostname)))
		init_msg("sethostname: %s", strerror(errno));
	do_sysctls();
	if (C.terminal) {
		/* The pty comes from the container's own devpts (so ttyname()
		 * finds /dev/pts/N there); its master goes to the parent, which
		 * relays it to the stdio ports. */
		int master = open(NEWROOT "/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
		int slave;

		if (master < 0)
			master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (master < 0 || unlockpt(master))
			init_child_fail(fd, 1, "pty: %s", strerror(errno));
		slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY);
		if (slave < 0)
			init_child_fail(fd, 1, "pty peer: %s", strerror(errno));
		init_set_winsize(master, C.rows, C.cols);
		if (send_fd(a->tty_sock, master))
			init_child_fail(fd, 1, "passing the pty: %s", strerror(errno));
		close(master);
		close(a->tty_sock);
		setsid();
		if (ioctl(slave, TIOCSCTTY, 0))
			init_msg("TIOCSCTTY: %s", strerror(errno));
		dup2(slave, 0);
		dup2(slave, 1);
		dup2(slave, 2);
		if (slave > 2)
			close(slave);
	}
	if (enter_root())
		init_child_fail(fd, 1, "entering the root file system: %s", strerror(errno));
	if (!C.terminal) {
		if (in_fd >= 0)
			dup2(in_fd, 0);
		else
			close(0);
		dup2(out_fd, 1);
		dup2(err_fd, 2);
	}
	init_process_exec(&C, fd);
}

/* ---- main ----------------------------------------------------------------- */

/*
 * The VM's init is PID 1 of the initial PID namespace, started by the
 * kernel with nothing mounted.  Anything else -- run on a host by mistake,
 * or as PID 1 of a PID namespace there (unshare -pf, a container), where
 * /proc is the host's -- gets one line and exit 1, before this program
 * mounts, loads a module or reboots anything.  0xEFFFFFFC: the initial PID
 * namespace's inode (PROC_PID_INIT_INO); in the VM /proc is not mounted yet.
 */
static void refuse_unless_vm_init(void)
{
	static const char not_pid1[] =
		"minivmm-oci-init: refusing to run: not PID 1 (this is the init of "
		"minivmm-oci's container VMs, not a program for a host)\n";
	static const char child_ns[] =
		"minivmm-oci-init: refusing to run: PID 1 of a child PID namespace "
		"(this is the init of minivmm-oci's container VMs, not a program "
		"for a host)\n";
	struct stat st;

	if (getpid() != 1) {
		if (write(2, not_pid1, sizeof(not_pid1) - 1) < 0)
			_exit(1);
		_exit(1);
	}
	if (stat("/proc/self/ns/pid", &st) == 0 && st.st_ino != 0xEFFFFFFCu) {
		if (write(2, child_ns, sizeof(child_ns) - 1) < 0)
			_exit(1);
		_exit(1);
	}
}

/* The mounts in the init's own namespace below NEWROOT (the container's
 * are in its namespace: none is expected; logged for the tests). */
static unsigned int mounts_under_newroot(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[1024], mp[512];
	unsigned int n = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %*s %*s %*s %511s", mp) == 1 &&
		    !strncmp(mp, NEWROOT "/", sizeof(NEWROOT)))
			n++;
	fclose(f);
	return n;
}

int main(void)
{
	static char stack[256 * 1024] __attribute__((aligned(16)));
	struct child_args ca = { .tty_sock = -1 };
	int pipefd[2], sfd, master = -1, status = 0, tty_sock = -1, xfd;
	unsigned int nexec = 0;
	bool exited = false, in_open = true, ctl_dead = false, tty_hup = false;
	int idle = 0, ret;
	const uint8_t *payload;
	sigset_t mask;
	uint32_t len;
	uint8_t type;
	pid_t pid;

	refuse_unless_vm_init();
	mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");
	mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	if (!freopen("/dev/console", "w", stderr))
		init_msg("no /dev/console");
	setvbuf(stderr, NULL, _IOLBF, 0);
	init_msg("up");
	load_modules();
	init_msg("modules loaded");

	ctl_fd = open_port(PROTO_PORT_CTL, O_RDWR);
	if (ctl_fd < 0)
		fail(1, "no port %s: %s", PROTO_PORT_CTL, strerror(errno));
	in_fd = open_port(PROTO_PORT_STDIN, O_RDONLY);
	out_fd = open_port(PROTO_PORT_STDOUT, O_WRONLY);
	err_fd = open_port(PROTO_PORT_STDERR, O_WRONLY);
	if (out_fd < 0 || err_fd < 0 || in_fd < 0)
		fail(1, "stdio ports missing: %s", strerror(errno));

	init_msg("ports open");
	ctl_send(PROTO_MSG_READY, NULL, 0);
	for (;;) {
		int r = ctl_read_frame(&type, &payload, &len, -1);

		if (r <= 0)
			fail(1, "control port closed before the configuration came");
		if (type == PROTO_MSG_CONFIG)
			break;
	}
	if ((ret = init_config_parse(&C, payload, len)))
		fail(1, ret == -ENOMEM ? "out of memory" : "malformed configuration");
	init_msg("configuration received");
	{
		char e[300];

		if (init_net_setup(&C.net, e, sizeof(e)))
			fail(1, "the container's network: %s", e);
		if (C.net.has_link)
			init_msg("network: %s up, %u addresses, %u routes", C.net.name,
			    C.net.naddrs, C.net.nroutes);
	}

	mkdir(NEWROOT, 0755);
	if (C.root_tag) {
		/* The bundle's root directory, shared by the host's virtiofsd
		 * (read-only there too when asked). */
		if (mount(C.root_tag, NEWROOT, "virtiofs", C.root_ro ? MS_RDONLY : 0, NULL))
			fail(1, "mounting the root file system (virtio-fs %s): %s",
			     C.root_tag, strerror(errno));
		fs_readahead(NEWROOT, "/");
	} else {
		wait_for("/dev/vda");
		if (mount("/dev/vda", NEWROOT, "ext4", C.root_ro ? MS_RDONLY : 0, NULL))
			fail(1, "mounting the root disk: %s", strerror(errno));
	}

	if (C.terminal) {
		int sp[2];

		/* A fallback devpts for a spec that mounts none. */
		mkdir("/dev/pts", 0755);
		mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		      "newinstance,ptmxmode=0666,mode=0620");
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp))
			fail(1, "socketpair: %s", strerror(errno));
		tty_sock = sp[0];
		ca.tty_sock = sp[1];
	}

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

	if (pipe2(pipefd, O_CLOEXEC))
		fail(1, "pipe: %s", strerror(errno));
	ca.err_pipe = pipefd[1];
	pid = clone(child_main, stack + sizeof(stack),
		    CLONE_NEWPID | CLONE_NEWNS | SIGCHLD, &ca);
	if (pid < 0)
		fail(1, "clone: %s", strerror(errno));
	close(pipefd[1]);
	if (tty_sock >= 0) {
		close(ca.tty_sock);
		master = recv_fd(tty_sock); /* -1 if the child failed first */
		close(tty_sock);
		if (master >= 0)
			fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
	}
	{
		char e[512];
		ssize_t n = read(pipefd[0], e, sizeof(e) - 1);

		if (n > 0) {
			e[n] = 0;
			waitpid(pid, NULL, 0);
			fail((uint8_t)e[0], "%s", e + 1);
		}
		close(pipefd[0]);
	}
	ctl_send(PROTO_MSG_STARTED, NULL, 0);
	init_msg("process started");
	/* exec and ps (exec.h): each connection served by a forked child. */
	xfd = init_exec_listen();

	while (!exited || master >= 0) {
		struct pollfd p[5] = {
			{ .fd = sfd, .events = POLLIN },
			{ .fd = exited || ctl_dead ? -1 : ctl_fd, .events = POLLIN },
			{ .fd = tty_hup ? -1 : master, .events = POLLIN },
			{ .fd = master >= 0 && in_open && !exited ? in_fd : -1,
			  .events = POLLIN },
			{ .fd = exited ? -1 : xfd, .events = POLLIN },
		};
		uint8_t buf[16384];

		if (poll(p, 5, exited ? 100 : -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) > 0)
				;
			for (;;) {
				int st;
				pid_t w = waitpid(-1, &st, WNOHANG);

				if (w <= 0)
					break;
				if (w == pid) {
					exited = true;
					status = st;
				} else if (nexec) {
					nexec--; /* an exec server */
				}
			}
		}
		if (p[4].revents)
			init_exec_accept(xfd, pid, &nexec);
		if (p[1].revents) {
			int r;

			while ((r = ctl_read_frame(&type, &payload, &len, 0)) > 0) {
				if (type == PROTO_MSG_SIGNAL && len == 4)
					kill(pid, (int)proto_get_u32(payload));
				else if (type == PROTO_MSG_RESIZE && len == 4 && master >= 0)
					init_set_winsize(master, (uint16_t)(payload[0] | payload[1] << 8),
						    (uint16_t)(payload[2] | payload[3] << 8));
			}
			if (r < 0) {
				init_msg("control port closed");
				ctl_dead = true;
			}
		}
		if (master >= 0 && p[3].revents) {
			ssize_t n = read(in_fd, buf, sizeof(buf));

			if (n > 0)
				init_write_full(master, buf, (size_t)n);
			else
				in_open = false; /* EOF: nothing to send; the tty stays */
		}
		if (master >= 0 && (p[2].revents || exited)) {
			ssize_t n = read(master, buf, sizeof(buf));

			if (n > 0) {
				init_write_full(out_fd, buf, (size_t)n);
				idle = 0;
			} else if (n == 0 || errno == EIO) {
				/* Every slave closed: done once the process
				 * exited (its namespace dies with it). */
				if (exited)
					master = -1;
				else
					tty_hup = true;
			} else if (exited && ++idle > 20) {
				master = -1; /* nothing more for 2 s */
			}
		}
	}
	init_msg("process exited; mounts under " NEWROOT " in the init's namespace: %u",
	    mounts_under_newroot());
	if (WIFEXITED(status))
		vm_exit((uint32_t)WEXITSTATUS(status));
	vm_exit(128u + (uint32_t)WTERMSIG(status));
}
