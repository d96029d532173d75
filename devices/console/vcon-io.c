/* SPDX-License-Identifier: MIT */
/*
 * virtio-console: control messages to and from the guest, data between the
 * queues and the port fds, the device threads (see vcon-int.h).
 */
#include <endian.h>
#include <errno.h>
#include <linux/virtio_config.h>
#include <linux/virtio_console.h>
#include <linux/virtio_ids.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "console/vcon-int.h"
#include "console/vcon.h"
#include "log.h"
#include "thread.h"

/* ---- control messages to the guest ------------------------------------ */

/* Queue a message for the control receiveq.  Lock held. */
static void ctl_queue_locked(struct vcon *c, uint32_t id, uint16_t event,
			     uint16_t value, const char *name)
{
	size_t nlen = name ? strlen(name) : 0;
	struct virtio_console_control hdr = {
		.id = htole32(id), .event = htole16(event), .value = htole16(value),
	};
	struct ctl_msg *m;

	if (c->nr_pending >= CTL_PENDING_MAX(c)) {
		if (!c->pending_overflow_logged)
			log_limited(&c->log, VMM_LOG_WARN, "virtio-console",
				    "the guest does not read its control queue; "
				    "dropping control messages");
		c->pending_overflow_logged = true;
		return;
	}
	m = malloc(sizeof(*m) + sizeof(hdr) + nlen);
	if (!m) {
		vmm_err("virtio-console: out of memory for a control message");
		return;
	}
	m->next = NULL;
	m->len = (uint32_t)(sizeof(hdr) + nlen);
	memcpy(m->data, &hdr, sizeof(hdr));
	if (nlen)
		memcpy(m->data + sizeof(hdr), name, nlen); /* no NUL: Linux adds it */
	*c->pending_tail = m;
	c->pending_tail = &m->next;
	c->nr_pending++;
}

void vcon_ctl_flush_pending_locked(struct vcon *c)
{
	struct ctl_msg *m, *n;

	for (m = c->pending; m; m = n) {
		n = m->next;
		free(m);
	}
	c->pending = NULL;
	c->pending_tail = &c->pending;
	c->nr_pending = 0;
}

/* Context: the control thread.  A message from the driver: id, event and
 * value are guest-controlled, validated here. */
static void ctl_handle(struct vcon *c, const struct virtio_console_control *m)
{
	uint32_t id = le32toh(m->id);
	uint16_t event = le16toh(m->event), value = le16toh(m->value);
	struct vcon_port *p = id < c->nr_ports ? &c->ports[id] : NULL;
	struct vcon_port *wake = NULL;

	pthread_mutex_lock(&c->lock);
	switch (event) {
	case VIRTIO_CONSOLE_DEVICE_READY:
		if (value != 1) {
			log_limited(&c->log, VMM_LOG_WARN, "virtio-console",
				    "the guest driver failed to initialise");
			break;
		}
		for (unsigned int i = 0; i < c->nr_ports; i++)
			ctl_queue_locked(c, i, VIRTIO_CONSOLE_PORT_ADD, 0, NULL);
		break;
	case VIRTIO_CONSOLE_PORT_READY:
		if (!p)
			break;
		if (value != 1) {
			log_limited(&c->log, VMM_LOG_WARN, "virtio-console",
				    "the guest could not add port %u (%s)", id, p->name);
			break;
		}
		if (p->ready)
			break; /* repeated: the name and state were sent */
		p->ready = true;
		ctl_queue_locked(c, id, VIRTIO_CONSOLE_PORT_NAME, 0, p->name);
		ctl_queue_locked(c, id, VIRTIO_CONSOLE_PORT_OPEN,
				 p->host_connected ? 1 : 0, NULL);
		break;
	case VIRTIO_CONSOLE_PORT_OPEN:
		if (!p)
			break;
		p->guest_open = value != 0;
		/* The port thread starts (or stops) reading its input. */
		if (p->guest_open)
			wake = p;
		break;
	default:
		vmm_dbg("virtio-console: ignoring control event %u for port %u",
			event, id);
		break;
	}
	pthread_mutex_unlock(&c->lock);
	if (wake)
		vcon_thread_wake(&wake->th);
}

/*
 * Whether the port's input may go to the guest: only while a guest
 * program has the port open.  Linux's driver drops what arrives on a
 * closed generic port (it has no one to give it to), so input read
 * before the open -- a container's piped stdin, written at once -- would
 * be lost; left in in_fd instead, it waits for the open.
 * Context: the port's thread.
 */
static bool port_input_wanted(struct vcon *c, struct vcon_port *p)
{
	bool open;

	pthread_mutex_lock(&c->lock);
	open = p->guest_open;
	pthread_mutex_unlock(&c->lock);
	return open;
}

/* ---- data movement ----------------------------------------------------- */

/* Copy up to @len bytes of @src into the chain's writable segments. */
static size_t chain_fill(struct virtq_chain *ch, const uint8_t *src, size_t len)
{
	size_t done = 0;

	for (unsigned int i = ch->nr_out; i < ch->nr_out + ch->nr_in && done < len;
	     i++) {
		size_t n = ch->iov[i].iov_len;

		if (n > len - done)
			n = len - done;
		memcpy(ch->iov[i].iov_base, src + done, n);
		done += n;
	}
	return done;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Context: port thread, or the thread stopping the device on its behalf.
 * Write all of @buf to the port's out_fd.  While the device runs, a full
 * fd is waited for as long as it takes (a reader that is slow holds the
 * guest's writes back); once the device stops, only until
 * c->stop_deadline_ns.  The wait also watches the thread's wake eventfd,
 * so that a stop ends a wait that began while the device ran.  *@done:
 * the bytes written.  Returns 0, -ETIMEDOUT (the stop's deadline passed:
 * the caller drops the rest) or -errno of the write.
 */
static int port_write(struct vcon_port *p, const uint8_t *buf, size_t len,
		      size_t *done)
{
	struct vcon *c = p->th.c;
	bool woken = false;
	int ret = 0;

	*done = 0;
	while (len) {
		ssize_t n = nbfd_write(&p->out, buf, len);
		struct pollfd pfd[2];
		uint64_t deadline, now;
		int timeout = -1;

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			*done += (size_t)n;
			continue;
		}
		if (n != -EAGAIN) { /* nbfd_write() retried EINTR */
			ret = n < 0 ? (int)n : -EIO;
			break;
		}
		deadline = __atomic_load_n(&c->stop_deadline_ns, __ATOMIC_RELAXED);
		if (deadline) {
			now = mono_ns();
			if (now >= deadline) {
				ret = -ETIMEDOUT;
				break;
			}
			/* Rounded up: never a busy loop of zero timeouts. */
			timeout = (int)((deadline - now + 999999) / 1000000);
		}
		pfd[0] = (struct pollfd){ .fd = p->out.fd, .events = POLLOUT };
		pfd[1] = (struct pollfd){ .fd = p->th.wake_efd, .events = POLLIN };
		if (poll(pfd, 2, timeout) < 0 && errno != EINTR) {
			ret = -errno;
			break;
		}
		/* A wake-up (stop, quit) ends a wait of the running device;
		 * consumed here, or the next poll would not wait at all. */
		if (pfd[1].revents) {
			vcon_drain_efd(p->th.wake_efd);
			woken = true;
		}
	}
	/* ... and given back for the thread's loop, which polls next. */
	if (woken)
		vcon_thread_wake(&p->th);
	return ret;
}

/* Context: port thread.  Send the readable segments of @ch to out_fd. */
static void port_output(struct vcon_port *p, struct virtq_chain *ch)
{
	for (unsigned int i = 0; i < ch->nr_out; i++) {
		size_t n = ch->iov[i].iov_len, done;
		int ret;

		if (p->out_fd < 0 || p->out_failed) {
			vcon_stat_add(&p->dropped, n);
			continue;
		}
		ret = port_write(p, ch->iov[i].iov_base, n, &done);
		vcon_stat_add(&p->bytes_out, done);
		if (!ret)
			continue;
		n -= done;
		vcon_stat_add(&p->dropped, n);
		if (ret == -ETIMEDOUT) {
			/* Not a failure of out_fd: after a reset the port may
			 * work again.  vcon_stop() reports the count. */
			vcon_stat_add(&p->stop_dropped, n);
			continue;
		}
		vmm_warn("virtio-console: port %u (%s): writing its output: %s; "
			 "discarding it from now on", p->id, p->name, strerror(-ret));
		p->out_failed = true;
	}
}

/* Context: a device thread.  Pop and handle every chain on the transmit
 * queue (guest -> host). */
void vcon_thread_tx(struct vcon_thread *t)
{
	bool pushed = false;
	int r;

	if (!vcon_queue_usable(t->txq, t->tx_broken))
		return;
	while ((r = virtq_pop(&t->txq->vq, t->chain)) > 0) {
		if (t->port) {
			port_output(t->port, t->chain);
		} else {
			struct virtio_console_control m;
			size_t have = 0;

			for (unsigned int i = 0; i < t->chain->nr_out && have < sizeof(m);
			     i++) {
				size_t n = t->chain->iov[i].iov_len;

				if (n > sizeof(m) - have)
					n = sizeof(m) - have;
				memcpy((uint8_t *)&m + have, t->chain->iov[i].iov_base, n);
				have += n;
			}
			if (have == sizeof(m))
				ctl_handle(t->c, &m);
			else
				vmm_dbg("virtio-console: short control message (%zu bytes)",
					have);
		}
		virtq_push(&t->txq->vq, t->chain->head, 0);
		pushed = true;
	}
	if (r < 0) {
		t->tx_broken = true;
		virtio_queue_needs_reset(t->txq,
					 "virtio-console: malformed transmit queue");
	}
	if (pushed && virtq_should_notify(&t->txq->vq))
		virtio_queue_notify(t->txq);
}

/* Context: a device thread.  Fill receive buffers (host -> guest) from the
 * port's pending input or the pending control messages. */
static void thread_rx(struct vcon_thread *t)
{
	struct vcon *c = t->c;
	struct vcon_port *p = t->port;
	bool pushed = false;
	int r = 0;

	if (!vcon_queue_usable(t->rxq, t->rx_broken) ||
	    (p && !port_input_wanted(c, p)))
		return;
	for (;;) {
		size_t n;

		if (p) {
			if (p->buf_off >= p->buf_len)
				break;
		} else {
			pthread_mutex_lock(&c->lock);
			bool empty = !c->pending;
			pthread_mutex_unlock(&c->lock);
			if (empty)
				break;
		}
		r = virtq_pop(&t->rxq->vq, t->chain);
		if (r <= 0)
			break;
		if (p) {
			n = chain_fill(t->chain, p->buf + p->buf_off,
				       p->buf_len - p->buf_off);
			p->buf_off += n;
			vcon_stat_add(&p->bytes_in, n);
		} else {
			struct ctl_msg *m;

			/* Only this thread removes from the list. */
			pthread_mutex_lock(&c->lock);
			m = c->pending;
			c->pending = m->next;
			if (!c->pending)
				c->pending_tail = &c->pending;
			c->nr_pending--;
			pthread_mutex_unlock(&c->lock);
			n = chain_fill(t->chain, m->data, m->len);
			if (n < m->len)
				log_limited(&c->log, VMM_LOG_WARN, "virtio-console",
					    "control buffer of %zu bytes is too small "
					    "for a %u-byte message", n, m->len);
			free(m);
		}
		virtq_push(&t->rxq->vq, t->chain->head, (uint32_t)n);
		pushed = true;
	}
	if (r < 0) {
		t->rx_broken = true;
		virtio_queue_needs_reset(t->rxq,
					 "virtio-console: malformed receive queue");
	}
	if (pushed && virtq_should_notify(&t->rxq->vq))
		virtio_queue_notify(t->rxq);
	/* Input delivered up to EOF: tell the guest the host side closed. */
	if (p && p->buf_off >= p->buf_len && p->in_eof && !p->eof_told) {
		p->eof_told = true;
		pthread_mutex_lock(&c->lock);
		p->host_connected = false;
		if (p->ready)
			ctl_queue_locked(c, p->id, VIRTIO_CONSOLE_PORT_OPEN, 0, NULL);
		pthread_mutex_unlock(&c->lock);
		vcon_thread_wake(&c->ctl);
	}
}

/* Context: port thread.  in_fd is readable (or hung up). */
static void port_read_input(struct vcon_port *p)
{
	ssize_t n;

	do
		n = read(p->in_fd, p->buf, BOUNCE_SIZE);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return;
	if (n <= 0) {
		/* EOF; an error (EIO from a pty whose master closed) ends
		 * the input the same way. */
		if (n < 0)
			vmm_dbg("virtio-console: port %u (%s): input: %s", p->id,
				p->name, strerror(errno));
		p->in_eof = true;
		return;
	}
	p->buf_off = 0;
	p->buf_len = (size_t)n;
}

/* Points @t at its two queues of the current start, as yet unbroken. */
void vcon_thread_take_queues(struct vcon_thread *t)
{
	t->rxq = &t->c->queues[t->rx_index];
	t->txq = &t->c->queues[t->tx_index];
	t->rx_broken = t->tx_broken = false;
}

/*
 * Context: a device thread, at the top of its loop.  Takes the queues when
 * the device started, gives them back (after writing out what the guest
 * queued) when it stopped.  Returns false when the thread must end.
 */
bool vcon_thread_sync(struct vcon_thread *t)
{
	struct vcon *c = t->c;
	bool running, quit;

	pthread_mutex_lock(&c->lock);
	running = c->running;
	quit = c->quit;
	if (running && !quit && !t->active) {
		vcon_thread_take_queues(t);
		t->active = true;
	}
	pthread_mutex_unlock(&c->lock);
	if ((!running || quit) && t->active) {
		vcon_thread_tx(t); /* the guest's last output reaches out_fd */
		pthread_mutex_lock(&c->lock);
		t->active = false;
		t->rxq = t->txq = NULL;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
	}
	return !quit;
}

/* The device thread's own setup, reported to thread_start() (which waits
 * for it).  0 or the embedder's thread_init() error.  Context: @t's
 * thread, first thing. */
static int thread_setup_self(struct vcon_thread *t)
{
	struct vcon *c = t->c;
	sigset_t pipe;
	char name[16];
	int ret = 0;

	/* A write to a closed pipe fails with EPIPE instead of killing the
	 * process: SIGPIPE stays pending on this thread. */
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, NULL);
	if (t->port)
		snprintf(name, sizeof(name), "vmm-port%u", t->port->id);
	else
		snprintf(name, sizeof(name), "vmm-portctl");
	pthread_setname_np(pthread_self(), name);
	if (c->thread_init)
		ret = c->thread_init(c->thread_opaque);
	pthread_mutex_lock(&c->lock);
	t->init_done = true;
	t->init_ret = ret;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

void *vcon_thread_main(void *arg)
{
	struct vcon_thread *t = arg;
	struct vcon *c = t->c;
	struct vcon_port *p = t->port;

	if (thread_setup_self(t))
		return NULL;
	while (vcon_thread_sync(t)) {
		struct pollfd pfd[4];
		int nfd = 0, kick_rx = -1, kick_tx = -1, in = -1;
		bool want_rx_bufs;

		if (t->active) {
			vcon_thread_tx(t);
			thread_rx(t);
		}
		pfd[nfd++] = (struct pollfd){ .fd = t->wake_efd, .events = POLLIN };
		if (t->active && vcon_queue_usable(t->txq, t->tx_broken)) {
			kick_tx = nfd;
			pfd[nfd++] = (struct pollfd){ .fd = t->txq->kick_fd,
						      .events = POLLIN };
		}
		if (p) {
			bool open = port_input_wanted(c, p);

			want_rx_bufs = open && p->buf_off < p->buf_len;
			if (t->active && open && p->buf_off >= p->buf_len && p->in_fd >= 0 &&
			    !p->in_eof && vcon_queue_usable(t->rxq, t->rx_broken)) {
				in = nfd;
				pfd[nfd++] = (struct pollfd){ .fd = p->in_fd,
							      .events = POLLIN };
			}
		} else {
			pthread_mutex_lock(&c->lock);
			want_rx_bufs = c->pending != NULL;
			pthread_mutex_unlock(&c->lock);
		}
		if (t->active && want_rx_bufs && vcon_queue_usable(t->rxq, t->rx_broken)) {
			kick_rx = nfd;
			pfd[nfd++] = (struct pollfd){ .fd = t->rxq->kick_fd,
						      .events = POLLIN };
		}
		if (poll(pfd, (nfds_t)nfd, -1) < 0) {
			if (errno == EINTR)
				continue;
			vmm_err("virtio-console: poll: %s", strerror(errno));
			break;
		}
		/* Read the eventfds before looking at the rings again: a kick
		 * after this read makes the next poll return. */
		if (pfd[0].revents)
			vcon_drain_efd(t->wake_efd);
		if (kick_tx >= 0 && pfd[kick_tx].revents)
			vcon_drain_efd(pfd[kick_tx].fd);
		if (kick_rx >= 0 && pfd[kick_rx].revents)
			vcon_drain_efd(pfd[kick_rx].fd);
		if (in >= 0 && pfd[in].revents)
			port_read_input(p);
	}
	return NULL;
}

/* One non-blocking turn of a device thread's loop, on the caller's thread. */
static void thread_turn(struct vcon_thread *t)
{
	struct vcon_port *p = t->port;

	if (!vcon_thread_sync(t) || !t->active)
		return;
	vcon_thread_tx(t);
	thread_rx(t);
	if (p && p->buf_off >= p->buf_len && p->in_fd >= 0 && !p->in_eof &&
	    vcon_queue_usable(t->rxq, t->rx_broken) && port_input_wanted(t->c, p)) {
		struct pollfd pfd = { .fd = p->in_fd, .events = POLLIN };

		if (poll(&pfd, 1, 0) == 1) {
			port_read_input(p);
			thread_rx(t);
		}
	}
}

int vcon_poll(struct vcon *c)
{
	if (c->threaded)
		return -EBUSY;
	/* Control first (the guest's PORT_READY queues the name), then the
	 * ports (EOF queues PORT_OPEN 0), then control again to deliver
	 * what they queued. */
	thread_turn(&c->ctl);
	for (unsigned int i = 0; i < c->nr_ports; i++)
		thread_turn(&c->ports[i].th);
	thread_turn(&c->ctl);
	return 0;
}

