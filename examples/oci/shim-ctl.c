/* SPDX-License-Identifier: MIT */
/* The VMM process's control plane: guest frames, clients, signals (see
 * shimctl.h).  Context: the shim's one thread. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "shimctl.h"

/* ---- frames to the guest ------------------------------------------------ */

/* Write what is queued, as far as the socket takes it now. */
static void out_flush(struct shim_ctl *s)
{
	while (s->ctl >= 0 && s->out_off < s->out_len) {
		ssize_t w = send(s->ctl, s->out + s->out_off, s->out_len - s->out_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return;
		if (w <= 0) {
			oci_log_limited(&s->guest_log, "error", false,
					"writing to the guest init: %s; dropping what "
					"was queued for it", strerror(errno));
			s->out_off = s->out_len;
			break;
		}
		s->out_off += (size_t)w;
	}
	if (s->out_off == s->out_len)
		s->out_off = s->out_len = 0;
}

static void send_frame(struct shim_ctl *s, uint8_t type, const void *p, size_t n)
{
	struct proto_buf b = { 0 };
	size_t pending = s->out_len - s->out_off;
	uint8_t *grown;

	proto_frame(&b, type, p, n);
	if (b.err || pending + b.len > SHIM_OUT_MAX) {
		s->frames_dropped++;
		oci_log_limited(&s->guest_log, "warning", false,
				"%s: dropping a message of type %u for the guest init "
				"(%zu bytes wait unread)",
				b.err ? "out of memory" : "the guest does not read its "
				"control port", type, pending);
		proto_buf_free(&b);
		return;
	}
	/* Compact, then append. */
	if (s->out_off) {
		memmove(s->out, s->out + s->out_off, pending);
		s->out_off = 0;
		s->out_len = pending;
	}
	if (s->out_len + b.len > s->out_cap) {
		/* Doubling: a guest that does not read costs no copy per frame. */
		size_t cap = s->out_cap ? 2 * s->out_cap : 4096;

		while (cap < s->out_len + b.len)
			cap *= 2;
		grown = realloc(s->out, cap);
		if (!grown) {
			s->frames_dropped++;
			oci_err("out of memory for a message to the guest init");
			proto_buf_free(&b);
			return;
		}
		s->out = grown;
		s->out_cap = cap;
	}
	memcpy(s->out + s->out_len, b.data, b.len);
	s->out_len += b.len;
	proto_buf_free(&b);
	out_flush(s);
}

static void term_size(struct shim_ctl *s, uint16_t *rows, uint16_t *cols)
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

static void send_config(struct shim_ctl *s)
{
	struct proto_buf b = { 0 };
	uint16_t rows, cols;

	term_size(s, &rows, &cols);
	spec_encode(s->p->spec, rows, cols, &b);
	if (s->read_net)
		s->read_net(s->opaque);
	if (s->net)
		netns_encode(s->net, &b);
	if (b.err) {
		oci_err("out of memory");
		proto_buf_free(&b);
		return;
	}
	send_frame(s, PROTO_MSG_CONFIG, b.data, b.len);
	proto_buf_free(&b);
	s->config_sent = true;
}

static void send_resize(struct shim_ctl *s)
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

void shim_ctl_timing(struct shim_ctl *s, const char *what)
{
	char rec[512];
	int n;

	if (s->timings_fd < 0)
		return;
	/* One record, one write() (O_APPEND: records of several VMM
	 * processes do not interleave). */
	n = snprintf(rec, sizeof(rec), "{\"id\":\"%s\",\"event\":\"%s\",\"ms\":%.3f}\n",
		     strrchr(s->p->state_dir, '/') + 1, what,
		     (double)(oci_now_ns() - s->p->t0_ns) / 1e6);
	if (n > 0 && (size_t)n < sizeof(rec) && write(s->timings_fd, rec, (size_t)n) < 0)
		return;
}

/* ---- clients ------------------------------------------------------------- */

static void client_close(struct shim_ctl *s, unsigned int i)
{
	close(s->clients[i].fd);
	s->clients[i] = s->clients[--s->nclients];
}

/* A one-line answer; a client that does not take a few bytes at once
 * (it closed, or never reads) loses it. */
static void client_answer(int fd, const char *line)
{
	if (send(fd, line, strlen(line), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		oci_warn("answering a control client: %s", strerror(errno));
}

static void reply_start_clients(struct shim_ctl *s, const char *line)
{
	for (unsigned int i = 0; i < s->nclients;) {
		if (s->clients[i].want_start) {
			client_answer(s->clients[i].fd, line);
			client_close(s, i);
		} else {
			i++;
		}
	}
}

static void forward_signal(struct shim_ctl *s, int sig)
{
	uint8_t v[4] = { (uint8_t)sig, (uint8_t)(sig >> 8), 0, 0 };

	if (s->started) {
		send_frame(s, PROTO_MSG_SIGNAL, v, 4);
		return;
	}
	/* No process yet (created): as under other OCI runtimes, the
	 * container's init dies of a signal that would kill it. */
	if (sig != SIGWINCH && sig != SIGCHLD && sig != SIGURG && sig != SIGCONT) {
		oci_info("signal %d before start: stopping the VM", sig);
		if (!s->exit_code)
			s->exit_code = 128 + sig;
		s->stop_vm(s->opaque);
	}
}

/* `pause` / `resume`: only a started container's VM (a created one has
 * no process to freeze yet, as under runc). */
static void client_pause(struct shim_ctl *s, int fd, bool pause)
{
	char line[128];
	int ret;

	if (!s->started) {
		client_answer(fd, "error: the container is not running\n");
		return;
	}
	ret = s->pause_vm ? s->pause_vm(s->opaque, pause) : -ENOTSUP;
	if (ret) {
		snprintf(line, sizeof(line), "error: %s the VM: %s\n",
			 pause ? "pausing" : "resuming", strerror(-ret));
		client_answer(fd, line);
		return;
	}
	oci_info("VM %s", pause ? "paused" : "resumed");
	client_answer(fd, "ok\n");
}

/* `stats`: "ok " and the VM's statistics on one line (SHIM_STATS_MAX
 * bytes at most, sent without waiting: a client that does not read gets
 * a cut line, which it reports as an error). */
static void client_stats(struct shim_ctl *s, int fd)
{
	char *json = NULL, line[128];
	int ret = s->stats_vm ? s->stats_vm(s->opaque, &json) : -ENOTSUP;

	if (!ret && strlen(json) + 3 > SHIM_STATS_MAX)
		ret = -EMSGSIZE;
	if (ret) {
		snprintf(line, sizeof(line), "error: the VM's statistics: %s\n",
			 strerror(-ret));
		client_answer(fd, line);
	} else {
		client_answer(fd, "ok ");
		client_answer(fd, json);
	}
	free(json);
}

/* Client @i sent its line (or closed, or it is too long). */
static void client_request(struct shim_ctl *s, unsigned int i)
{
	struct shim_client *c = &s->clients[i];

	c->line[c->have < sizeof(c->line) ? c->have : sizeof(c->line) - 1] = 0;
	c->deadline_ns = 0;
	if (!strncmp(c->line, "start", 5)) {
		if (s->started) {
			client_answer(c->fd, "ok\n");
			client_close(s, i);
			return;
		}
		c->want_start = true;
		s->start_wanted = true;
		shim_ctl_timing(s, "start_requested");
		if (s->ready && !s->config_sent)
			send_config(s);
		return;
	}
	if (!strncmp(c->line, "pause\n", 6) || !strncmp(c->line, "resume\n", 7)) {
		client_pause(s, c->fd, c->line[0] == 'p');
		client_close(s, i);
		return;
	}
	if (!strncmp(c->line, "stats\n", 6)) {
		client_stats(s, c->fd);
		client_close(s, i);
		return;
	}
	if (!strncmp(c->line, "signal ", 7)) {
		int sig = atoi(c->line + 7);

		if (sig > 0 && sig < NSIG)
			forward_signal(s, sig);
		client_answer(c->fd, "ok\n");
	}
	client_close(s, i);
}

static void client_read(struct shim_ctl *s, unsigned int i)
{
	struct shim_client *c = &s->clients[i];
	ssize_t n;

	if (c->want_start) {
		/* Waiting for its answer: anything more it sends is ignored;
		 * EOF means it gave up. */
		char junk[64];

		n = recv(c->fd, junk, sizeof(junk), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			client_close(s, i);
		return;
	}
	n = recv(c->fd, c->line + c->have, sizeof(c->line) - 1 - c->have,
		 MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		client_close(s, i);
		return;
	}
	c->have += (size_t)n;
	if (memchr(c->line, '\n', c->have) || c->have == sizeof(c->line) - 1)
		client_request(s, i);
}

static void client_accept(struct shim_ctl *s)
{
	int c = accept4(s->p->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (c < 0)
		return;
	if (s->nclients >= SHIM_MAX_CLIENTS) {
		client_answer(c, "error: busy\n");
		close(c);
		return;
	}
	s->clients[s->nclients++] = (struct shim_client){
		.fd = c,
		.deadline_ns = oci_now_ns() + SHIM_CLIENT_READ_MS * 1000000ull,
	};
}

static void clients_expire(struct shim_ctl *s)
{
	uint64_t now = oci_now_ns();

	for (unsigned int i = 0; i < s->nclients;) {
		if (s->clients[i].deadline_ns && now >= s->clients[i].deadline_ns)
			client_close(s, i);
		else
			i++;
	}
}

int shim_ctl_timeout_ms(const struct shim_ctl *s)
{
	uint64_t now = oci_now_ns(), next = 0;

	for (unsigned int i = 0; i < s->nclients; i++) {
		uint64_t d = s->clients[i].deadline_ns;

		if (d && (!next || d < next))
			next = d;
	}
	if (!next)
		return -1;
	return next <= now ? 0 : (int)((next - now + 999999) / 1000000);
}

/* ---- frames from the guest ----------------------------------------------- */

/* A frame from the guest init (guest-controlled: only types we know). */
static void guest_frame(struct shim_ctl *s, uint8_t type, const uint8_t *p,
			uint32_t len)
{
	switch (type) {
	case PROTO_MSG_READY:
		s->ready = true;
		shim_ctl_timing(s, "guest_ready");
		if (s->start_wanted && !s->config_sent)
			send_config(s);
		break;
	case PROTO_MSG_STARTED:
		s->started = true;
		shim_ctl_timing(s, "process_started");
		reply_start_clients(s, "ok\n");
		break;
	case PROTO_MSG_ERROR:
		proto_text(s->guest_error, sizeof(s->guest_error), p, len);
		oci_log_limited(&s->guest_log, "error", true, "guest: %s",
				s->guest_error);
		break;
	default:
		break;
	}
}

/* Read and handle at most @budget bytes of frames.  Returns the bytes
 * read (0: nothing there, or EOF/error). */
static size_t read_guest(struct shim_ctl *s, size_t budget)
{
	uint8_t buf[4096];
	size_t total = 0;

	while (s->ctl >= 0 && !s->broken && total < budget) {
		ssize_t n = recv(s->ctl, buf, sizeof(buf), MSG_DONTWAIT);
		size_t off = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		total += (size_t)n;
		while (off < (size_t)n) {
			const uint8_t *payload;
			uint32_t len;
			uint8_t type;
			int got;

			off += proto_reader_feed(&s->rd, buf + off, (size_t)n - off,
						 &got, &type, &payload, &len);
			if (s->rd.err) {
				oci_err("malformed message from the guest init");
				s->broken = true;
				s->stop_vm(s->opaque);
				return total;
			}
			if (got)
				guest_frame(s, type, payload, len);
		}
	}
	return total;
}

/* ---- the loop's interface ------------------------------------------------ */

void shim_ctl_init(struct shim_ctl *s, const struct oci_shim_params *p, int ctl,
		   void (*stop_vm)(void *opaque), void *opaque)
{
	*s = (struct shim_ctl){
		.p = p, .ctl = ctl, .stop_vm = stop_vm, .opaque = opaque,
		.guest_log = OCI_LIMIT_INIT("messages caused by the guest", 10),
		.timings_fd = -1,
	};
	if (ctl >= 0)
		fcntl(ctl, F_SETFL, fcntl(ctl, F_GETFL) | O_NONBLOCK);
}

int shim_ctl_pollfds(struct shim_ctl *s, struct pollfd *pfd)
{
	int n = 0;

	pfd[n++] = (struct pollfd){
		.fd = s->broken ? -1 : s->ctl,
		.events = (short)(POLLIN | (s->out_len > s->out_off ? POLLOUT : 0)),
	};
	pfd[n++] = (struct pollfd){ .fd = s->p->listen_fd, .events = POLLIN };
	for (unsigned int i = 0; i < s->nclients; i++)
		pfd[n++] = (struct pollfd){ .fd = s->clients[i].fd, .events = POLLIN };
	s->npoll = n;
	return n;
}

void shim_ctl_handle(struct shim_ctl *s, const struct pollfd *pfd)
{
	int fds[SHIM_MAX_CLIENTS];
	unsigned int n = 0;

	if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR))
		read_guest(s, SHIM_READ_MAX);
	if (pfd[0].revents & POLLOUT)
		out_flush(s);
	/* Clients by fd: handling one reorders the table. */
	for (int k = 2; k < s->npoll; k++)
		if (pfd[k].revents)
			fds[n++] = pfd[k].fd;
	for (unsigned int j = 0; j < n; j++)
		for (unsigned int i = 0; i < s->nclients; i++)
			if (s->clients[i].fd == fds[j]) {
				client_read(s, i);
				break;
			}
	if (pfd[1].revents)
		client_accept(s);
	clients_expire(s);
}

void shim_ctl_signal(struct shim_ctl *s, int sig)
{
	if (sig == SIGWINCH)
		send_resize(s);
	else
		forward_signal(s, sig);
}

void shim_ctl_finish(struct shim_ctl *s)
{
	/* Frames the guest sent just before it stopped (ERROR). */
	read_guest(s, SHIM_READ_MAX);
	if (s->nclients) {
		char line[700];

		snprintf(line, sizeof(line), "error: %s\n",
			 s->guest_error[0] ? s->guest_error
					   : "the container's VM stopped before its "
					     "process started");
		reply_start_clients(s, line);
		while (s->nclients)
			client_close(s, 0);
	}
	if (s->frames_dropped)
		oci_warn("%llu messages for the guest init were dropped (it did not "
			 "read its control port)", (unsigned long long)s->frames_dropped);
	oci_limit_flush(&s->guest_log, "error");
	proto_reader_free(&s->rd);
	free(s->out);
	s->out = NULL;
	s->out_len = s->out_off = s->out_cap = 0;
}
