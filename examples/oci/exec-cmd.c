/* SPDX-License-Identifier: MIT */
/* `minivmm-oci exec` and `ps` (see exec-cmd.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "errf.h"
#include "exec-cmd.h"
#include "oci.h"

static int64_t left_ms(uint64_t end_ns)
{
	uint64_t t = oci_now_ns();

	return t >= end_ns ? 0 : (int64_t)((end_ns - t) / 1000000) + 1;
}

/* Read into @rd until a frame is whole, by @end_ns: 1, 0 (time out or
 * closed: @why), -1 (malformed: @why). */
static int next_frame(int fd, struct exec_reader *rd, uint64_t end_ns, uint8_t *type,
		      const uint8_t **p, uint32_t *len, char *why, size_t whylen)
{
	for (;;) {
		int got = exec_reader_next(rd, type, p, len);
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		size_t room;
		uint8_t *d;
		ssize_t n;

		if (got < 0)
			return errf(why, whylen, "malformed frame from the guest: %s", rd->err);
		if (got)
			return 1;
		if (poll(&pfd, 1, (int)left_ms(end_ns)) <= 0)
			return errf(why, whylen, "the guest did not answer in time") + 1;
		d = exec_reader_space(rd, &room);
		n = read(fd, d, room);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return errf(why, whylen, "the container's VM closed the exec "
				    "connection (it stopped?)") + 1;
		exec_reader_commit(rd, (size_t)n);
	}
}

/* The state directory's vsock socket, port EXEC_PORT: a non-blocking fd
 * past the "OK" line, or -1 with @err. */
static int exec_connect(const char *dir, char *err, size_t len)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	uint64_t end = oci_now_ns() + OCI_EXEC_CONNECT_MS * 1000000ull;
	char line[64], req[32];
	size_t have = 0;
	int fd, n;

	n = snprintf(a.sun_path, sizeof(a.sun_path), "%s/" OCI_VSOCK_SOCKET, dir);
	if (n < 0 || (size_t)n >= sizeof(a.sun_path))
		return errf(err, len, "%s/" OCI_VSOCK_SOCKET ": path too long for a socket", dir);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		errf(err, len, "the container has no exec channel (%s: %s): its VMM "
		     "process is gone, or predates exec", a.sun_path, strerror(errno));
		goto fail;
	}
	n = snprintf(req, sizeof(req), "CONNECT %u\n", EXEC_PORT);
	if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
		errf(err, len, "%s: %s", a.sun_path, strerror(errno));
		goto fail;
	}
	/* Byte by byte: what follows the line is the guest's. */
	while (have < sizeof(line) - 1 && (!have || line[have - 1] != '\n')) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&p, 1, (int)left_ms(end)) <= 0)
			break;
		r = read(fd, line + have, 1);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r <= 0)
			break;
		have++;
	}
	line[have] = 0;
	if (strncmp(line, "OK ", 3)) {
		errf(err, len, "the container's guest does not take exec requests (its "
		     "init has no vsock listener: an initramfs built before exec "
		     "existed? see minivmm-oci(1))");
		goto fail;
	}
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

/* Queue and write one frame (the request), by @end_ns. */
static int send_frame(int fd, uint8_t type, const void *p, size_t n, uint64_t end_ns)
{
	static struct exec_outq q;

	q.off = q.len = 0;
	if (exec_outq_put(&q, type, p, n))
		return -E2BIG;
	while (!exec_outq_empty(&q)) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		int ret = exec_outq_flush(&q, fd);

		if (ret)
			return ret;
		if (!exec_outq_empty(&q) && poll(&pfd, 1, (int)left_ms(end_ns)) <= 0)
			return -ETIMEDOUT;
	}
	return 0;
}

static void write_full(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* a reader gone: the output is dropped */
		p += w;
		n -= (size_t)w;
	}
}

static void put_resize(struct exec_outq *q, int tty, struct winsize *last)
{
	struct winsize ws;
	uint8_t b[4];

	if (tty < 0 || ioctl(tty, TIOCGWINSZ, &ws) || !ws.ws_row || !ws.ws_col ||
	    (ws.ws_row == last->ws_row && ws.ws_col == last->ws_col))
		return;
	b[0] = (uint8_t)ws.ws_row, b[1] = (uint8_t)(ws.ws_row >> 8);
	b[2] = (uint8_t)ws.ws_col, b[3] = (uint8_t)(ws.ws_col >> 8);
	if (!exec_outq_put(q, EXEC_MSG_RESIZE, b, 4))
		*last = ws;
}

/* Frames from the guest: the exit code once EXIT came, -1 meanwhile,
 * -2 broken (@why). */
static int guest_frames(const struct oci_exec_io *io, char *why, size_t whylen)
{
	const uint8_t *p;
	uint32_t len;
	uint8_t type;
	int got;

	while ((got = exec_reader_next(io->rd, &type, &p, &len)) > 0) {
		if (type == EXEC_MSG_STDOUT)
			write_full(io->out, p, len);
		else if (type == EXEC_MSG_STDERR)
			write_full(io->err, p, len);
		else if (type == EXEC_MSG_EXIT)
			return exec_exit_code(p);
		else
			return errf(why, whylen, "unexpected frame %u from the guest",
				    type) - 1;
	}
	if (got < 0)
		return errf(why, whylen, "malformed frame from the guest: %s",
			    io->rd->err) - 1;
	return -1;
}

/* Our stdin into STDIN frames while the queue has room. */
static void read_in(const struct oci_exec_io *io, struct exec_outq *q, bool *open_)
{
	uint8_t buf[EXEC_MAX_DATA];
	ssize_t n = read(io->in, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n > 0) {
		exec_outq_put(q, EXEC_MSG_STDIN, buf, (size_t)n);
		return;
	}
	*open_ = false; /* EOF; EIO: the pty's master side closed */
	exec_outq_put(q, EXEC_MSG_STDIN_EOF, NULL, 0);
}

static void read_signals(const struct oci_exec_io *io, struct exec_outq *q,
			 struct winsize *last)
{
	struct signalfd_siginfo si;

	while (read(io->sigfd, &si, sizeof(si)) == sizeof(si)) {
		uint8_t b[4] = { (uint8_t)si.ssi_signo, 0, 0, 0 };

		if (si.ssi_signo == SIGWINCH)
			put_resize(q, io->tty, last);
		else if (exec_outq_put(q, EXEC_MSG_SIGNAL, b, 4))
			oci_warn("exec: signal %u not forwarded (queue full)", si.ssi_signo);
	}
}

int oci_exec_relay(const struct oci_exec_io *io, char *why, size_t whylen)
{
	struct exec_outq *q = calloc(1, sizeof(*q));
	struct winsize last = { 0 };
	bool in_open = io->in >= 0, out_open = true;
	int code = -1;

	if (!q)
		return errf(why, whylen, "out of memory"), 255;
	last.ws_row = io->rows;
	last.ws_col = io->cols;
	put_resize(q, io->tty, &last);
	if ((code = guest_frames(io, why, whylen)) >= 0 || code == -2)
		goto out; /* frames that came with STARTED */
	while (code == -1) {
		struct pollfd p[3] = {
			{ .fd = io->conn, .events = (short)(POLLIN |
				(!out_open || exec_outq_empty(q) ? 0 : POLLOUT)) },
			{ .fd = in_open && exec_outq_fits(q, EXEC_MAX_DATA) ? io->in : -1,
			  .events = POLLIN },
			{ .fd = io->sigfd, .events = POLLIN },
		};
		int timeout = io->tty >= 0 && io->tty_polled ? OCI_EXEC_WINCH_POLL_MS : -1;

		if (poll(p, 3, timeout) < 0 && errno != EINTR) {
			code = errf(why, whylen, "poll: %s", strerror(errno)) - 1;
			break;
		}
		if (p[1].revents)
			read_in(io, q, &in_open);
		if (p[2].revents)
			read_signals(io, q, &last);
		if (io->tty_polled)
			put_resize(q, io->tty, &last);
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			size_t room;
			uint8_t *d = exec_reader_space(io->rd, &room);
			ssize_t n = read(io->conn, d, room);

			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
				code = errf(why, whylen, "the container's VM closed the exec "
					    "connection (it stopped?)") - 1;
				break;
			}
			if (n > 0)
				exec_reader_commit(io->rd, (size_t)n);
			code = guest_frames(io, why, whylen);
		}
		if (code == -1 && out_open) {
			int r = exec_outq_flush(q, io->conn);

			if (r == -EPIPE || r == -ECONNRESET) {
				/* The VM closed the connection: a command that
				 * ends at once races our stdin's EOF (or a
				 * resize), and its last frames, EXIT among
				 * them, may still wait to be read.  Send
				 * nothing more; read on to EXIT or EOF. */
				out_open = false;
				in_open = false;
			} else if (r) {
				code = errf(why, whylen, "the exec connection broke: %s",
					    strerror(-r)) - 1;
			}
		}
	}
out:
	free(q);
	return code < 0 ? 255 : code;
}

/* The process to run: --process FILE as it is (runc's rule), else the
 * container's own process with exec's command, --env, --cwd, --user and
 * --tty.  0, or -1 with @err. */
static int exec_spec(const struct oci_cli *c, const char *bundle, struct oci_spec *s,
		     char *err, size_t len)
{
	unsigned int uid, gid;
	char extra;
	int n;

	if (c->process)
		return spec_load_process(c->process, s, err, len);
	if (spec_load(bundle, NULL, s, err, len))
		return -1;
	for (unsigned int i = 0; i < s->nargs; i++)
		free(s->args[i]);
	free(s->args);
	s->nargs = 0;
	s->args = calloc(c->nexec_args + 1, sizeof(*s->args));
	s->env = realloc(s->env, (s->nenv + c->nenv + 1) * sizeof(*s->env));
	if (!s->args || !s->env)
		return errf(err, len, "out of memory");
	for (unsigned int i = 0; i < c->nexec_args; i++)
		if (!(s->args[s->nargs++] = strdup(c->exec_args[i])))
			return errf(err, len, "out of memory");
	for (unsigned int i = 0; i < c->nenv; i++)
		if (!(s->env[s->nenv++] = strdup(c->env[i])))
			return errf(err, len, "out of memory");
	if (c->cwd) {
		if (c->cwd[0] != '/')
			return errf(err, len, "exec: --cwd %s is not absolute", c->cwd);
		free(s->cwd);
		if (!(s->cwd = strdup(c->cwd)))
			return errf(err, len, "out of memory");
	}
	if (c->user) {
		n = sscanf(c->user, "%u:%u%c", &uid, &gid, &extra);
		if (n < 1 || n > 2 || (n == 1 && strchr(c->user, ':')))
			return errf(err, len, "exec: --user %s: only a numeric UID[:GID]",
				    c->user);
		s->uid = uid;
		if (n == 2)
			s->gid = gid;
	}
	s->terminal = c->tty;
	return 0;
}

/* Send EXEC and wait for STARTED: 0, or the failure's status (1, 126,
 * 127) reported through oci_err(). */
static int exec_start(int fd, const struct oci_spec *s, struct exec_reader *rd)
{
	uint64_t end = oci_now_ns() + OCI_EXEC_START_MS * 1000000ull;
	struct proto_buf b = { 0 };
	uint8_t ver[4] = { EXEC_VERSION, 0, 0, 0 }, type;
	char why[600];
	const uint8_t *p;
	uint32_t len;
	int ret;

	proto_put(&b, ver, 4);
	spec_encode_process(s, s->rows, s->cols, &b);
	if (b.err || b.len >= EXEC_MAX_FRAME) {
		proto_buf_free(&b);
		oci_err("exec: the process (arguments, environment) is over %u KiB",
			EXEC_MAX_FRAME >> 10);
		return 1;
	}
	ret = send_frame(fd, EXEC_MSG_EXEC, b.data, b.len, end);
	proto_buf_free(&b);
	if (ret) {
		oci_err("exec: sending the request: %s", strerror(-ret));
		return 1;
	}
	if (next_frame(fd, rd, end, &type, &p, &len, why, sizeof(why)) <= 0) {
		oci_err("exec: %s", why);
		return 1;
	}
	if (type == EXEC_MSG_STARTED)
		return 0;
	if (type == EXEC_MSG_ERROR) {
		proto_text(why, sizeof(why), p + 1, len - 1);
		oci_err("%s", why);
		return p[0] ? p[0] : 1;
	}
	oci_err("exec: unexpected frame %u from the guest", type);
	return 1;
}

/* The signals exec forwards (and SIGWINCH), blocked, as a signalfd. */
static int forward_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
				    SIGUSR2, SIGWINCH, SIGALRM, SIGCONT };
	sigset_t m;

	sigemptyset(&m);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&m, sigs[i]);
	sigprocmask(SIG_BLOCK, &m, NULL);
	return signalfd(-1, &m, SFD_CLOEXEC | SFD_NONBLOCK);
}

static int write_pid(const char *path, pid_t pid)
{
	char p[32];

	snprintf(p, sizeof(p), "%d", (int)pid);
	if (path && oci_file_write_atomic(path, p)) {
		oci_err("pid file %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* The relay, in this process or (-d) a child: its status. */
static int run_relay(const struct oci_cli *c, struct oci_exec_io *io, int slave,
		     struct termios *saved)
{
	char why[300];
	int code;

	if (slave >= 0) {
		/* The host pty's slave as our controlling terminal: the
		 * console socket's holder resizing the master sends us
		 * SIGWINCH.  Not possible for a process group leader (exec
		 * run from a shell without -d): then its size is polled. */
		io->tty_polled = setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) < 0;
	}
	code = oci_exec_relay(io, why, sizeof(why));
	if (saved)
		tcsetattr(0, TCSANOW, saved);
	if (code == 255 && *why)
		oci_err("exec: %s", why);
	(void)c;
	return code;
}

int oci_cmd_exec(const struct oci_cli *c, const struct oci_exec_hooks *h)
{
	static struct exec_reader rd;
	struct oci_spec s;
	struct oci_state st;
	struct oci_exec_io io = { .in = 0, .out = 1, .err = 2, .tty = -1, .rd = &rd };
	struct termios saved, raw;
	bool restore = false;
	int slave = -1, ret = 1;
	enum oci_status status;
	char err[1024];
	pid_t child;

	/* A closed stdio fd would be taken by the connection's socket. */
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0)
			return 1;
	if (oci_state_read(c->root, c->id, &st)) {
		oci_err("container %s does not exist", c->id);
		return 1;
	}
	oci_state_free(&st);
	if ((status = oci_state_status(&st)) != OCI_RUNNING) {
		oci_err("cannot exec in a container that is %s", oci_status_name(status));
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	if (exec_spec(c, st.bundle, &s, err, sizeof(err))) {
		oci_err("%s", err);
		goto out;
	}
	if (s.terminal && c->console_socket) {
		if (h->make_tty(c->console_socket, &slave, err, sizeof(err))) {
			oci_err("%s", err);
			goto out;
		}
		io.in = io.out = io.err = io.tty = slave;
	} else if (s.terminal && isatty(0) && !tcgetattr(0, &saved)) {
		io.tty = 0; /* our own terminal: raw while the process runs */
		raw = saved;
		cfmakeraw(&raw);
		restore = !tcsetattr(0, TCSANOW, &raw);
	}
	if (s.terminal && !s.rows && io.tty >= 0) {
		struct winsize ws;

		if (!ioctl(io.tty, TIOCGWINSZ, &ws))
			s.rows = ws.ws_row, s.cols = ws.ws_col;
	}
	io.rows = s.rows;
	io.cols = s.cols;
	exec_reader_init(&rd, EXEC_SIDE_HOST);
	io.sigfd = forward_signals();
	if ((io.conn = exec_connect(st.dir, err, sizeof(err))) < 0) {
		oci_err("exec: %s", err);
		goto out;
	}
	if ((ret = exec_start(io.conn, &s, &rd)))
		goto out;
	if (!c->detach) {
		ret = write_pid(c->pid_file, getpid()) ? 1
			: run_relay(c, &io, slave, restore ? &saved : NULL);
		restore = false;
		goto out;
	}
	/* -d: the relay goes on alone (conmon, a subreaper, reaps it and
	 * takes its status as the process's); we return once it started. */
	child = fork();
	if (child == 0)
		_exit(run_relay(c, &io, slave, NULL));
	if (child < 0) {
		oci_err("fork: %s", strerror(errno));
		ret = 1;
	} else {
		ret = write_pid(c->pid_file, child) ? (kill(child, SIGKILL), 1) : 0;
	}
out:
	if (restore)
		tcsetattr(0, TCSANOW, &saved);
	spec_free(&s);
	return ret;
}

int oci_cmd_ps(const struct oci_cli *c)
{
	static struct exec_reader rd;
	uint64_t end = oci_now_ns() + OCI_EXEC_START_MS * 1000000ull;
	uint8_t ver[4] = { EXEC_VERSION, 0, 0, 0 }, type;
	struct oci_state st;
	char err[600], *text, *line, *save;
	const uint8_t *p;
	uint32_t len;
	int fd, n = 0;

	if (oci_state_read(c->root, c->id, &st)) {
		oci_err("container %s does not exist", c->id);
		return 1;
	}
	oci_state_free(&st);
	if (oci_state_status(&st) != OCI_RUNNING) {
		oci_err("container %s is not running", c->id);
		return 1;
	}
	exec_reader_init(&rd, EXEC_SIDE_HOST);
	if ((fd = exec_connect(st.dir, err, sizeof(err))) < 0 ||
	    send_frame(fd, EXEC_MSG_PS, ver, 4, end) ||
	    next_frame(fd, &rd, end, &type, &p, &len, err, sizeof(err)) <= 0) {
		oci_err("ps: %s", fd < 0 ? err : *err ? err : "the request failed");
		return 1;
	}
	if (type == EXEC_MSG_ERROR) {
		proto_text(err, sizeof(err), p + 1, len - 1);
		oci_err("ps: %s", err);
		return 1;
	}
	if (type != EXEC_MSG_PS_LIST || !(text = strndup((const char *)p, len))) {
		oci_err("ps: unexpected answer from the guest");
		return 1;
	}
	if (strcmp(c->format, "json"))
		printf("%-8s %-8s %-8s %-4s %s\n", "PID", "PPID", "UID", "STAT", "CMD");
	else
		printf("[");
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char pid[16], ppid[16], uid[16], stat[4];
		int off = 0;

		if (sscanf(line, "%15s %15s %15s %3s %n", pid, ppid, uid, stat, &off) < 4)
			continue;
		if (!strcmp(c->format, "json"))
			printf("%s%s", n++ ? "," : "", pid);
		else
			printf("%-8s %-8s %-8s %-4s %s\n", pid, ppid, uid, stat, line + off);
	}
	if (!strcmp(c->format, "json"))
		printf("]\n");
	free(text);
	close(fd);
	return 0;
}
