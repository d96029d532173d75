/* SPDX-License-Identifier: MIT */
/*
 * The VMM process of one container (what conmon / containerd's shim wait
 * on): builds the microVM with libvmm, boots it, and then serves
 *  - ctl.sock: "start" (send the process configuration to the guest init,
 *    answer once it ran the process or failed), "signal N" (forward);
 *  - the guest init on the minivmm.ctl port (READY, STARTED, ERROR);
 *  - its own signals: SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR2 are
 *    forwarded to the container's process, SIGWINCH (the terminal's size
 *    changed) becomes a RESIZE;
 * until the VM ends, then exits with the status the guest init wrote to
 * the exit port (the process's exit code, or 128 + its signal).
 * Its stdin/stdout/stderr are the container's (ports minivmm.stdin/
 * stdout/stderr) and then /dev/null: nothing it says reaches them.
 * Started as root, it runs as an unprivileged user with no capabilities
 * from libvmm's start hook on (drop_hook()): whatever it uses afterwards
 * must have been opened before.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "oci.h"
#include "proto.h"
#include "vmm/vmm.h"

/* pci=noearly: no early PCI scan; on the AMD family 0Fh CPU that nested
 * TCG presents, arch/x86/kernel/aperture_64.c otherwise scans all 256
 * buses twice for an AGP bridge (about 20 s of a nested boot). */
#define CMDLINE                                                                \
	"console=ttyS0 reboot=k panic=-1 pci=conf1,noearly acpi=off i8042.noaux " \
	"i8042.nopnp i8042.dumbkbd quiet"
#define MAX_CLIENTS 16

struct shim {
	const struct oci_shim_params *p;
	struct vmm *vm;
	int ctl;	/* our end of the minivmm.ctl socketpair */
	int sfd;	/* signalfd */
	struct proto_reader rd;
	bool ready, config_sent, started, start_wanted;
	char guest_error[512];
	int clients[MAX_CLIENTS]; /* start requests waiting for an answer */
	unsigned int nclients;
	int exit_code; /* when the VM is stopped by us before start: 128+N */
	int timings_fd; /* opened before the uid drop, or -1 */
	char drop_err[256];
};

static void libvmm_log(int level, const char *msg, void *opaque)
{
	(void)opaque;
	oci_log(level == VMM_LOG_ERROR ? "error" :
		level == VMM_LOG_WARN ? "warning" : "info", "libvmm: %s", msg);
}

static void send_frame(struct shim *s, uint8_t type, const void *p, size_t n)
{
	struct proto_buf b = { 0 };

	proto_frame(&b, type, p, n);
	for (size_t off = 0; !b.err && off < b.len;) {
		ssize_t w = write(s->ctl, b.data + off, b.len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			oci_err("writing to the guest init: %s", strerror(errno));
			break;
		}
		off += (size_t)w;
	}
	proto_buf_free(&b);
}

static void reply_clients(struct shim *s, const char *line)
{
	for (unsigned int i = 0; i < s->nclients; i++) {
		if (write(s->clients[i], line, strlen(line)) < 0)
			oci_warn("answering start: %s", strerror(errno));
		close(s->clients[i]);
	}
	s->nclients = 0;
}

static void term_size(struct shim *s, uint16_t *rows, uint16_t *cols)
{
	struct winsize ws = { 0 };

	*rows = s->p->spec->rows;
	*cols = s->p->spec->cols;
	if (s->p->tty_slave >= 0 && !ioctl(s->p->tty_slave, TIOCGWINSZ, &ws) &&
	    ws.ws_row && ws.ws_col) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

static void send_config(struct shim *s)
{
	struct proto_buf b = { 0 };
	uint16_t rows, cols;

	term_size(s, &rows, &cols);
	spec_encode(s->p->spec, rows, cols, &b);
	if (b.err) {
		oci_err("out of memory");
		proto_buf_free(&b);
		return;
	}
	send_frame(s, PROTO_MSG_CONFIG, b.data, b.len);
	proto_buf_free(&b);
	s->config_sent = true;
}

/* One record, one write() (O_APPEND: records from several VMM processes
 * do not interleave); the fd was opened before the uid drop. */
static void timing(struct shim *s, const char *what)
{
	char rec[512];
	int n;

	if (s->timings_fd < 0)
		return;
	n = snprintf(rec, sizeof(rec), "{\"id\":\"%s\",\"event\":\"%s\",\"ms\":%.3f}\n",
		     strrchr(s->p->state_dir, '/') + 1, what,
		     (double)(oci_now_ns() - s->p->t0_ns) / 1e6);
	if (n > 0 && (size_t)n < sizeof(rec) && write(s->timings_fd, rec, (size_t)n) < 0)
		return;
}

/* A frame from the guest init (guest-controlled: only types we know). */
static void guest_frame(struct shim *s, uint8_t type, const uint8_t *p,
			uint32_t len)
{
	switch (type) {
	case PROTO_MSG_READY:
		s->ready = true;
		timing(s, "guest_ready");
		if (s->start_wanted && !s->config_sent)
			send_config(s);
		break;
	case PROTO_MSG_STARTED:
		s->started = true;
		timing(s, "process_started");
		reply_clients(s, "ok\n");
		break;
	case PROTO_MSG_ERROR:
		proto_text(s->guest_error, sizeof(s->guest_error), p, len);
		oci_err("guest: %s", s->guest_error);
		break;
	default:
		break;
	}
}

static void read_guest(struct shim *s)
{
	uint8_t buf[4096];
	ssize_t n = read(s->ctl, buf, sizeof(buf));
	size_t off = 0;

	if (n <= 0)
		return;
	while (off < (size_t)n) {
		const uint8_t *payload;
		uint32_t len;
		uint8_t type;
		int got;

		off += proto_reader_feed(&s->rd, buf + off, (size_t)n - off, &got,
					 &type, &payload, &len);
		if (s->rd.err) {
			oci_err("malformed message from the guest init");
			vmm_stop(s->vm);
			return;
		}
		if (got)
			guest_frame(s, type, payload, len);
	}
}

static void forward_signal(struct shim *s, int sig)
{
	uint8_t v[4] = { (uint8_t)sig, (uint8_t)(sig >> 8), 0, 0 };

	if (s->started) {
		send_frame(s, PROTO_MSG_SIGNAL, v, 4);
		return;
	}
	/* No process yet (created): like runc's, the container's init dies
	 * of a signal that would kill it. */
	if (sig != SIGWINCH && sig != SIGCHLD && sig != SIGURG && sig != SIGCONT) {
		oci_info("signal %d before start: stopping the VM", sig);
		if (!s->exit_code)
			s->exit_code = 128 + sig;
		vmm_stop(s->vm);
	}
}

static void send_resize(struct shim *s)
{
	uint16_t rows, cols;
	uint8_t v[4];

	if (s->p->tty_slave < 0 || !s->started)
		return;
	term_size(s, &rows, &cols);
	v[0] = (uint8_t)rows;
	v[1] = (uint8_t)(rows >> 8);
	v[2] = (uint8_t)cols;
	v[3] = (uint8_t)(cols >> 8);
	send_frame(s, PROTO_MSG_RESIZE, v, 4);
}

static void serve_client(struct shim *s)
{
	int c = accept4(s->p->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	char line[128] = "";
	ssize_t n;

	if (c < 0)
		return;
	{
		struct timeval tv = { .tv_sec = 5 };

		setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	n = read(c, line, sizeof(line) - 1);
	if (n <= 0) {
		close(c);
		return;
	}
	line[n] = 0;
	if (!strncmp(line, "start", 5)) {
		if (s->started) {
			if (write(c, "ok\n", 3) < 0)
				oci_warn("start: %s", strerror(errno));
			close(c);
			return;
		}
		if (s->nclients >= MAX_CLIENTS) {
			close(c);
			return;
		}
		s->clients[s->nclients++] = c;
		s->start_wanted = true;
		timing(s, "start_requested");
		if (s->ready && !s->config_sent)
			send_config(s);
		return;
	}
	if (!strncmp(line, "signal ", 7)) {
		int sig = atoi(line + 7);

		if (sig > 0 && sig < NSIG)
			forward_signal(s, sig);
		if (write(c, "ok\n", 3) < 0)
			oci_warn("signal: %s", strerror(errno));
	}
	close(c);
}

static int add_port(struct vmm *vm, const char *name, int in, int out)
{
	struct vmm_port_config pc = {
		.struct_size = sizeof(pc), .name = name, .in_fd = in, .out_fd = out,
	};
	int ret = vmm_add_port(vm, &pc, NULL);

	if (ret)
		oci_err("port %s: %s", name, strerror(-ret));
	return ret;
}

/* libvmm's start hook: every file of the VM is open (the image, /dev/kvm,
 * the console log, the ports' fds), no thread is confined, no vCPU runs.
 * Context: vmm_start(), on this process's main thread. */
static int drop_hook(void *opaque)
{
	struct shim *s = opaque;
	int ret = user_drop(s->p->uid, s->p->gid, s->drop_err, sizeof(s->drop_err));

	if (ret)
		oci_err("dropping to uid %u gid %u: %s", (unsigned int)s->p->uid,
			(unsigned int)s->p->gid, s->drop_err);
	return ret;
}

static int build_vm(struct shim *s, int guest_ctl)
{
	const struct oci_shim_params *p = s->p;
	const struct oci_spec *spec = p->spec;
	struct vmm_disk_config dc = { .struct_size = sizeof(dc) };
	char cmdline[VMM_MAX_CMDLINE + 1], console[4200];
	int con, ret, tty = p->tty_slave;

	if (p->set->console_dir)
		snprintf(console, sizeof(console), "%s/%s.console.log",
			 p->set->console_dir, strrchr(p->state_dir, '/') + 1);
	else
		snprintf(console, sizeof(console), "%s/console.log", p->state_dir);
	con = open(console, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	snprintf(cmdline, sizeof(cmdline), "%s%s%s", CMDLINE,
		 p->set->append ? " " : "", p->set->append ? p->set->append : "");
	if ((ret = vmm_create(&s->vm))) {
		oci_err("cannot create the VM: %s", strerror(-ret));
		return ret;
	}
	if ((ret = vmm_set_vcpus(s->vm, spec_guest_vcpus(spec, p->set->cpus_default))) ||
	    (ret = vmm_set_memory(s->vm, spec_guest_memory(spec, p->set->mem_default))) ||
	    (ret = vmm_set_kernel(s->vm, p->set->kernel, p->set->initrd, cmdline)) ||
	    (ret = vmm_set_console(s->vm, -1, con))) {
		oci_err("configuring the VM: %s", strerror(-ret));
		return ret;
	}
	dc.path = p->image;
	dc.flags = spec->root_ro ? VMM_DISK_READONLY : 0;
	dc.num_queues = 1;
	if ((ret = vmm_add_disk(s->vm, &dc, NULL)))
		return ret;
	if ((ret = add_port(s->vm, PROTO_PORT_CTL, guest_ctl, guest_ctl)) ||
	    (ret = add_port(s->vm, PROTO_PORT_STDIN, tty >= 0 ? tty : 0, -1)) ||
	    (ret = add_port(s->vm, PROTO_PORT_STDOUT, -1, tty >= 0 ? tty : 1)) ||
	    (ret = add_port(s->vm, PROTO_PORT_STDERR, -1, tty >= 0 ? -1 : 2)))
		return ret;
	if (p->set->seccomp && (ret = vmm_set_seccomp(s->vm, VMM_SECCOMP_KILL)))
		return ret;
	if (p->drop && (ret = vmm_set_start_hook(s->vm, drop_hook, s)))
		return ret;
	if ((ret = vmm_start(s->vm))) {
		oci_err("starting the VM: %s (see %s)", strerror(-ret), console);
		return ret;
	}
	/* con stays open: libvmm borrows the console fd until vmm_destroy()
	 * (the process exit closes it). */
	return 0;
}

static void ready_report(int fd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void ready_report(int fd, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (write(fd, line, strlen(line)) < 0)
		oci_warn("reporting to create: %s", strerror(errno));
	close(fd);
}

int oci_shim_run(const struct oci_shim_params *p)
{
	struct shim s = { .p = p, .ctl = -1, .sfd = -1, .timings_fd = -1 };
	int sp[2], reason = VMM_EXIT_ERROR, null, code;
	sigset_t mask;
	uint32_t status;

	signal(SIGPIPE, SIG_IGN);
	vmm_set_log(libvmm_log, NULL, VMM_LOG_WARN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigaddset(&mask, SIGUSR2);
	sigaddset(&mask, SIGWINCH);
	/* Blocked before any thread exists: every VMM thread inherits it. */
	sigprocmask(SIG_BLOCK, &mask, NULL);
	/* So is what user_restrict() empties (user.h): every capability set
	 * but the permitted and effective ones, which the uid change in
	 * drop_hook() clears; no execve() can give one back. */
	if (p->drop && user_restrict(s.drop_err, sizeof(s.drop_err))) {
		oci_err("%s", s.drop_err);
		ready_report(p->ready_fd, "error: %s\n", s.drop_err);
		return 1;
	}
	if (p->set->timings)
		s.timings_fd = open(p->set->timings,
				    O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	s.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) || s.sfd < 0) {
		ready_report(p->ready_fd, "error: %s\n", strerror(errno));
		return 1;
	}
	s.ctl = sp[0];
	if (build_vm(&s, sp[1])) {
		ready_report(p->ready_fd, "error: cannot start the container's VM "
			     "(see the runtime log)\n");
		vmm_destroy(s.vm);
		return 1;
	}
	close(sp[1]);
	timing(&s, "vm_started");
	/* libvmm has its own copies of the stdio fds: from now on nothing we
	 * print can reach the container's streams. */
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		close(null);
	}
	oci_log_quiet_stderr(true);
	ready_report(p->ready_fd, "ok\n");

	for (;;) {
		struct pollfd pfd[4] = {
			{ .fd = vmm_get_exit_eventfd(s.vm), .events = POLLIN },
			{ .fd = s.ctl, .events = POLLIN },
			{ .fd = p->listen_fd, .events = POLLIN },
			{ .fd = s.sfd, .events = POLLIN },
		};

		if (poll(pfd, 4, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[0].revents)
			break;
		if (pfd[1].revents)
			read_guest(&s);
		if (pfd[2].revents)
			serve_client(&s);
		if (pfd[3].revents) {
			struct signalfd_siginfo si;

			while (read(s.sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGWINCH)
					send_resize(&s);
				else
					forward_signal(&s, (int)si.ssi_signo);
			}
		}
	}
	vmm_wait(s.vm, &reason);
	/* Frames the guest sent just before it stopped (ERROR). */
	{
		struct pollfd pf = { .fd = s.ctl, .events = POLLIN };

		while (poll(&pf, 1, 0) == 1 && (pf.revents & POLLIN)) {
			uint8_t peek;

			if (recv(s.ctl, &peek, 1, MSG_PEEK | MSG_DONTWAIT) != 1)
				break;
			read_guest(&s);
		}
	}
	if (reason == VMM_EXIT_GUEST_STATUS && !vmm_get_guest_status(s.vm, &status)) {
		code = (int)(status & 0xff);
	} else if (s.exit_code) {
		code = s.exit_code;
	} else {
		oci_err("the container's VM stopped: %s (see its kernel log)",
			vmm_exit_reason_str(reason));
		code = 255;
	}
	if (s.nclients) {
		char line[700];

		snprintf(line, sizeof(line), "error: %s\n",
			 s.guest_error[0] ? s.guest_error
					  : "the container's VM stopped before its "
					    "process started");
		reply_clients(&s, line);
	}
	timing(&s, "vm_exited");
	vmm_destroy(s.vm);
	proto_reader_free(&s.rd);
	return code;
}
