/* SPDX-License-Identifier: MIT */
/* The guest init's exec/ps server (see exec.h and ../exec-proto.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/vm_sockets.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "../exec-proto.h"
#include "config.h"
#include "exec.h"
#include "process.h"

#define EXEC_FINAL_MS 10000 /* the last frames' flush to a slow host */
#define EXEC_DRAIN_MS 2000  /* output after the exit, from grandchildren */

int init_exec_listen(void)
{
	struct sockaddr_vm a = { .svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY,
				 .svm_port = EXEC_PORT };
	int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 16)) {
		init_msg("exec: no vsock listener on port %u: %s", EXEC_PORT,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Write the whole queue out, waiting at most EXEC_FINAL_MS. */
static void flush_final(struct exec_outq *q, int conn)
{
	uint64_t end = now_ms() + EXEC_FINAL_MS;

	while (!exec_outq_empty(q) && !exec_outq_flush(q, conn) &&
	       !exec_outq_empty(q)) {
		struct pollfd p = { .fd = conn, .events = POLLOUT };
		uint64_t t = now_ms();

		if (t >= end || poll(&p, 1, (int)(end - t)) <= 0)
			return;
	}
}

static void __attribute__((noreturn)) send_error(struct exec_outq *q, int conn,
						 uint8_t status, const char *text)
{
	uint8_t b[1 + 500];
	size_t n = strnlen(text, 500);

	b[0] = status;
	memcpy(b + 1, text, n);
	exec_outq_put(q, EXEC_MSG_ERROR, b, n + 1);
	flush_final(q, conn);
	_exit(1);
}

/* The request frame, within EXEC_REQ_MS: 1, or 0 (nothing usable). */
static int read_request(int conn, struct exec_reader *r, uint8_t *type,
			const uint8_t **p, uint32_t *len)
{
	uint64_t end = now_ms() + EXEC_REQ_MS;

	for (;;) {
		int got = exec_reader_next(r, type, p, len);
		struct pollfd pfd = { .fd = conn, .events = POLLIN };
		uint64_t t = now_ms();
		size_t room;
		uint8_t *d;
		ssize_t n;

		if (got)
			return got > 0;
		if (t >= end || poll(&pfd, 1, (int)(end - t)) <= 0)
			return 0;
		d = exec_reader_space(r, &room);
		n = read(conn, d, room);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return 0;
		exec_reader_commit(r, (size_t)n);
	}
}

/* Into the main process's mount and PID namespaces and root. */
static int enter_container(pid_t main_pid)
{
	static const char *const what[] = { "ns/mnt", "ns/pid", "root" };
	int fd[3];
	char p[64];
	int ret = 0;

	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "/proc/%d/%s", (int)main_pid, what[i]);
		fd[i] = open(p, O_RDONLY | O_CLOEXEC);
		if (fd[i] < 0)
			ret = -errno;
	}
	if (!ret && (setns(fd[0], CLONE_NEWNS) || setns(fd[1], CLONE_NEWPID) ||
		     fchdir(fd[2]) || chroot(".") || chdir("/")))
		ret = -errno;
	for (int i = 0; i < 3; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	return ret;
}

/* /proc/@name/@file into @buf (NUL-terminated): its length, or 0. */
static size_t proc_read(const char *name, const char *file, char *buf, size_t cap)
{
	char path[300];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/%s", name, file);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, cap - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return n > 0 ? (size_t)n : 0;
}

/* One "PID PPID UID STAT CMD" line for /proc/@name into @out: CMD is the
 * command line (NULs as spaces, control bytes as '?'), else [comm]. */
static size_t ps_line(const char *name, char *out, size_t cap)
{
	char buf[1024], cmd[256];
	unsigned int uid = 0;
	char state = '?', *rp, *lp;
	size_t n;
	int ppid = 0;

	if (!proc_read(name, "stat", buf, sizeof(buf)) || !(lp = strchr(buf, '(')) ||
	    !(rp = strrchr(buf, ')')) || sscanf(rp + 1, " %c %d", &state, &ppid) != 2)
		return 0;
	snprintf(cmd, sizeof(cmd), "[%.*s]", (int)(rp - lp - 1), lp + 1);
	if ((n = proc_read(name, "cmdline", buf, sizeof(cmd)))) {
		for (size_t i = 0; i < n; i++)
			cmd[i] = buf[i] ? buf[i] : ' ';
		cmd[n] = 0;
	}
	for (char *c = cmd; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	if (proc_read(name, "status", buf, sizeof(buf)) && (rp = strstr(buf, "\nUid:")))
		sscanf(rp + 5, "%u", &uid);
	n = (size_t)snprintf(out, cap, "%s %d %u %c %s\n", name, ppid, uid, state, cmd);
	return n < cap ? n : 0;
}

static void __attribute__((noreturn)) answer_ps(struct exec_outq *q, int conn)
{
	static char list[EXEC_MAX_FRAME - 1];
	size_t len = 0;
	struct dirent *e;
	DIR *d = opendir("/proc");

	if (!d)
		send_error(q, conn, 1, "the container has no /proc to list");
	while ((e = readdir(d)))
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9')
			len += ps_line(e->d_name, list + len, sizeof(list) - len);
	closedir(d);
	exec_outq_put(q, EXEC_MSG_PS_LIST, list, len);
	flush_final(q, conn);
	_exit(0);
}

/* The process and our ends of its stdio. */
struct proc {
	pid_t pid;
	int in, out, err; /* pipes; with a terminal in = out = the pty master */
	bool tty;
};

static void set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* The stdio of the process: a pty of the container's devpts, or pipes.
 * @kid[3]: the child's ends. */
static int make_stdio(const struct init_config *c, struct proc *pr, int kid[3])
{
	int a[2], b[2], e[2];

	if (c->terminal) {
		int m = open("/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);

		if (m < 0)
			m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (m < 0 || unlockpt(m))
			return -1;
		kid[0] = kid[1] = kid[2] = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY);
		if (kid[0] < 0)
			return -1;
		init_set_winsize(m, c->rows, c->cols);
		pr->in = pr->out = m;
		pr->err = -1;
		pr->tty = true;
		return 0;
	}
	if (pipe2(a, O_CLOEXEC) || pipe2(b, O_CLOEXEC) || pipe2(e, O_CLOEXEC))
		return -1;
	kid[0] = a[0], kid[1] = b[1], kid[2] = e[1];
	pr->in = a[1], pr->out = b[0], pr->err = e[0];
	return 0;
}

static void start_process(const struct init_config *c, struct exec_outq *q, int conn,
			  struct proc *pr)
{
	int kid[3], ep[2];
	char e[512];
	ssize_t n;

	if (make_stdio(c, pr, kid) || pipe2(ep, O_CLOEXEC))
		send_error(q, conn, 1, "exec: no pty or pipes for the process");
	pr->pid = fork();
	if (pr->pid < 0)
		send_error(q, conn, 1, "exec: fork failed");
	if (pr->pid == 0) {
		setsid();
		if (c->terminal && ioctl(kid[0], TIOCSCTTY, 0))
			init_msg("exec: TIOCSCTTY: %s", strerror(errno));
		for (int i = 0; i < 3; i++)
			if (dup2(kid[i], i) < 0)
				init_child_fail(ep[1], 1, "exec: stdio: %s", strerror(errno));
		init_process_exec(c, ep[1]);
	}
	close(ep[1]);
	for (int i = 0; i < 3; i++)
		if (i == 0 || kid[i] != kid[0])
			close(kid[i]);
	n = read(ep[0], e, sizeof(e) - 1);
	close(ep[0]);
	if (n > 0) {
		e[n] = 0;
		waitpid(pr->pid, NULL, 0);
		send_error(q, conn, (uint8_t)e[0], e + 1);
	}
}

/* The relay's state: the host's stdin waiting for the process. */
struct relay {
	struct proc pr;
	int conn, sfd;
	struct exec_reader rd;
	struct exec_outq q;
	uint8_t pend[EXEC_MAX_DATA];
	size_t plen, poff;
	bool eof_wanted, out_open, err_open, exited, host_gone;
	int status;
};

/* Frames from the host, while no stdin is pending: 0, -1 (broken). */
static int host_frames(struct relay *r)
{
	const uint8_t *p;
	uint32_t len;
	uint8_t type;
	int got;

	while (!r->plen && (got = exec_reader_next(&r->rd, &type, &p, &len)) > 0) {
		uint32_t v = len == 4 ? p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24 : 0;

		switch (type) {
		case EXEC_MSG_STDIN:
			if (r->pr.in >= 0) {
				memcpy(r->pend, p, len);
				r->plen = len;
				r->poff = 0;
			}
			break;
		case EXEC_MSG_STDIN_EOF:
			r->eof_wanted = true;
			break;
		case EXEC_MSG_RESIZE:
			if (r->pr.tty)
				init_set_winsize(r->pr.in, (uint16_t)v, (uint16_t)(v >> 16));
			break;
		case EXEC_MSG_SIGNAL:
			if (v >= 1 && v <= 64 && !r->exited)
				kill(r->pr.pid, (int)v);
			break;
		default:
			r->rd.err = "a second request on one connection";
			return -1;
		}
	}
	return r->rd.err ? -1 : 0;
}

static void read_host(struct relay *r)
{
	size_t room;
	uint8_t *d = exec_reader_space(&r->rd, &room);
	ssize_t n = room ? read(r->conn, d, room) : 0;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0 && room) {
		r->host_gone = true;
		return;
	}
	exec_reader_commit(&r->rd, (size_t)n);
	if (host_frames(r)) {
		init_msg("exec: bad frame from the host: %s", r->rd.err);
		r->host_gone = true;
	}
}

/* Pending stdin into the process; EOF closes its stdin (not a pty's). */
static void write_stdin(struct relay *r)
{
	if (r->plen) {
		ssize_t w = write(r->pr.in, r->pend + r->poff, r->plen - r->poff);

		if (w < 0 && errno != EAGAIN && errno != EINTR)
			r->plen = 0; /* the process closed its stdin: dropped */
		else if (w > 0 && (r->poff += (size_t)w) == r->plen)
			r->plen = 0;
	}
	if (!r->plen && r->eof_wanted && !r->pr.tty && r->pr.in >= 0) {
		close(r->pr.in);
		r->pr.in = -1;
	}
}

static void read_output(struct relay *r, int fd, uint8_t type, bool *open_)
{
	uint8_t buf[EXEC_MAX_DATA];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n > 0)
		exec_outq_put(&r->q, type, buf, (size_t)n);
	else if (n == 0 || (errno != EAGAIN && errno != EINTR))
		*open_ = false; /* EOF, or EIO: every pty slave closed */
}

static void reap(struct relay *r)
{
	struct signalfd_siginfo si;
	int st;

	while (read(r->sfd, &si, sizeof(si)) > 0)
		;
	if (!r->exited && waitpid(r->pr.pid, &st, WNOHANG) == r->pr.pid) {
		r->exited = true;
		r->status = st;
	}
}

/* Relay until the process exited and its output is read (or, after the
 * exit, EXEC_DRAIN_MS passed: a grandchild may hold it open). */
static void relay_loop(struct relay *r)
{
	uint64_t drain_end = 0;

	while (!r->host_gone) {
		bool room = exec_outq_fits(&r->q, EXEC_MAX_DATA);
		struct pollfd p[5] = {
			{ .fd = r->conn, .events = (short)((r->plen ? 0 : POLLIN) |
				(exec_outq_empty(&r->q) ? 0 : POLLOUT)) },
			{ .fd = r->plen || (r->eof_wanted && !r->pr.tty) ? r->pr.in : -1,
			  .events = POLLOUT },
			{ .fd = room && r->out_open ? r->pr.out : -1, .events = POLLIN },
			{ .fd = room && r->err_open ? r->pr.err : -1, .events = POLLIN },
			{ .fd = r->sfd, .events = POLLIN },
		};
		int timeout = -1;

		if (r->exited) {
			uint64_t t = now_ms();

			if ((!r->out_open && !r->err_open) || t >= drain_end)
				return;
			timeout = (int)(drain_end - t);
		}
		if (poll(p, 5, timeout) < 0 && errno != EINTR)
			return;
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR))
			read_host(r);
		if (p[1].revents || (r->eof_wanted && !r->plen)) {
			write_stdin(r);
			/* Frames that waited behind that stdin, already read. */
			if (!r->plen && host_frames(r)) {
				init_msg("exec: bad frame from the host: %s", r->rd.err);
				r->host_gone = true;
			}
		}
		if (p[2].revents)
			read_output(r, r->pr.out, EXEC_MSG_STDOUT, &r->out_open);
		if (p[3].revents)
			read_output(r, r->pr.err, EXEC_MSG_STDERR, &r->err_open);
		if (p[4].revents) {
			reap(r);
			if (r->exited)
				drain_end = now_ms() + EXEC_DRAIN_MS;
		}
		if (exec_outq_flush(&r->q, r->conn))
			r->host_gone = true;
	}
}

static void __attribute__((noreturn)) serve_exec(struct relay *r,
						 const uint8_t *p, uint32_t len)
{
	struct init_config *c = calloc(1, sizeof(*c));
	uint8_t started[4], ex[5];
	sigset_t m;

	if (!c)
		send_error(&r->q, r->conn, 1, "exec: out of memory");
	if (proto_get_u32(p) != EXEC_VERSION)
		send_error(&r->q, r->conn, 1, "exec: unsupported protocol version");
	if (init_config_parse(c, p + 4, len - 4))
		send_error(&r->q, r->conn, 1, "exec: malformed process");
	sigemptyset(&m);
	sigaddset(&m, SIGCHLD);
	sigprocmask(SIG_BLOCK, &m, NULL);
	r->sfd = signalfd(-1, &m, SFD_CLOEXEC | SFD_NONBLOCK);
	start_process(c, &r->q, r->conn, &r->pr);
	signal(SIGPIPE, SIG_IGN); /* after the fork: the process keeps SIG_DFL */
	for (int i = 0; i < 4; i++)
		started[i] = (uint8_t)((uint32_t)r->pr.pid >> (8 * i));
	exec_outq_put(&r->q, EXEC_MSG_STARTED, started, 4);
	set_nonblock(r->pr.out);
	if (r->pr.err >= 0)
		set_nonblock(r->pr.err);
	if (!r->pr.tty)
		set_nonblock(r->pr.in);
	r->out_open = true;
	r->err_open = r->pr.err >= 0;
	relay_loop(r);
	if (r->host_gone) {
		/* Nobody reads its output or its status any more. */
		kill(r->pr.pid, SIGKILL);
		waitpid(r->pr.pid, NULL, 0);
		_exit(1);
	}
	exec_exit_encode(r->status, ex);
	exec_outq_put(&r->q, EXEC_MSG_EXIT, ex, 5);
	flush_final(&r->q, r->conn);
	_exit(0);
}

/* Context: the forked server, in the init's namespaces. */
static void __attribute__((noreturn)) serve(int conn, pid_t main_pid)
{
	struct relay *r = calloc(1, sizeof(*r));
	const uint8_t *p;
	uint32_t len;
	uint8_t type;
	int ret;

	if (!r)
		_exit(1);
	r->conn = conn;
	r->pr.in = r->pr.out = r->pr.err = -1;
	exec_reader_init(&r->rd, EXEC_SIDE_GUEST);
	if (!read_request(conn, &r->rd, &type, &p, &len) ||
	    (type != EXEC_MSG_EXEC && type != EXEC_MSG_PS)) {
		init_msg("exec: no valid request: %s",
			 r->rd.err ? r->rd.err : "none in time or not a request");
		send_error(&r->q, conn, 1, r->rd.err ? r->rd.err : "no valid request");
	}
	if ((ret = enter_container(main_pid))) {
		char e[200];

		snprintf(e, sizeof(e), "entering the container: %s", strerror(-ret));
		send_error(&r->q, conn, 1, e);
	}
	if (type == EXEC_MSG_PS)
		answer_ps(&r->q, conn);
	serve_exec(r, p, len);
}

void init_exec_accept(int lfd, pid_t main_pid, unsigned int *nservers)
{
	for (;;) {
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		pid_t pid;

		if (c < 0)
			return;
		if (*nservers >= EXEC_MAX_SERVERS) {
			init_msg("exec: %u requests running: one refused", *nservers);
			close(c);
			continue;
		}
		pid = fork();
		if (pid == 0) {
			/* Only the connection and the console: the init's
			 * ports and signalfd are not the server's. */
			if (dup2(c, 3) < 0 || fcntl(3, F_SETFD, FD_CLOEXEC))
				_exit(1);
			close_range(4, ~0u, 0);
			serve(3, main_pid);
		}
		close(c);
		if (pid > 0)
			(*nservers)++;
		else
			init_msg("exec: fork: %s", strerror(errno));
	}
}
