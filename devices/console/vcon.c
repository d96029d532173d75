/* SPDX-License-Identifier: MIT */
/* virtio-console, multiport (see vcon.h). */
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
#include <unistd.h>

#include "console/vcon.h"
#include "log.h"
#include "thread.h"

#define BOUNCE_SIZE 65536u
/* Control messages waiting for guest buffers, at most: the handshake
 * needs three per port; more means the guest repeats DEVICE_READY without
 * reading its control queue (guest-controlled: bounded). */
#define CTL_PENDING_MAX(c) (4u * (c)->nr_ports + 64u)

struct ctl_msg {
	struct ctl_msg *next;
	uint32_t len;
	uint8_t data[]; /* struct virtio_console_control [+ name] */
};

/* What a device thread serves: a port's two queues, or the control pair. */
struct vcon_thread {
	struct vcon *c;
	struct vcon_port *port; /* NULL: the control thread */
	unsigned int rx_index, tx_index;
	pthread_t tid;
	bool started;
	int wake_efd;
	/* Under c->lock. */
	bool active;	 /* holds the queues (between start and stop) */
	bool init_done;
	int init_ret;
	/* Owned by the thread while active. */
	struct virtio_queue *rxq, *txq;
	bool rx_broken, tx_broken; /* protocol error: ignored until reset */
	struct virtq_chain *chain;
};

struct vcon_port {
	unsigned int id;
	char *name;
	int in_fd, out_fd;
	struct vcon_thread th;
	/* Owned by the port thread. */
	uint8_t *buf;		 /* input read from in_fd, not yet delivered */
	size_t buf_len, buf_off;
	bool in_eof;		 /* in_fd reached EOF (or failed) */
	bool eof_told;		 /* PORT_OPEN 0 queued for the guest */
	bool out_failed;	 /* out_fd broke: output discarded */
	/* Under c->lock. */
	bool host_connected;
	bool ready;		 /* the guest added the port (PORT_READY 1) */
	bool guest_open;
	/* Relaxed atomics (read by vcon_port_stats()). */
	uint64_t bytes_in, bytes_out, dropped;
};

struct vcon {
	/*
	 * lock protects running, quit, queues, the threads' active/init
	 * flags, the ports' host_connected/ready/guest_open and the pending
	 * control messages.  Never held across a read, write or poll of a
	 * port fd.  cond is broadcast when a thread goes inactive or finishes
	 * its init.
	 */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool running, quit;
	struct virtio_queue *queues;
	unsigned int nr_queues;
	struct vcon_port *ports;
	unsigned int nr_ports;
	struct vcon_thread ctl;
	struct ctl_msg *pending, **pending_tail;
	unsigned int nr_pending;
	bool threaded; /* vcon_start_threads() ran; else vcon_poll() serves */
	bool pending_overflow_logged;
	/* Messages the guest can cause over and over (a reset re-arms
	 * pending_overflow_logged): rate-limited, own lock (log.h). */
	struct log_limit log;
	uint64_t driver_features;
	int (*thread_init)(void *opaque);
	void *thread_opaque;
};

static void stat_add(uint64_t *c, uint64_t n)
{
	/* Counters only; nothing is ordered against them. */
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

static void thread_wake(struct vcon_thread *t)
{
	uint64_t one = 1;

	if (t->wake_efd >= 0 && write(t->wake_efd, &one, sizeof(one)) < 0)
		vmm_warn("virtio-console: waking a device thread: %s",
			 strerror(errno));
}

static void drain_efd(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		vmm_dbg("virtio-console: eventfd read: %s", strerror(errno));
}

static bool queue_usable(const struct virtio_queue *q, bool broken)
{
	return q && q->enabled && q->vq.ready && !broken;
}

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

static void ctl_flush_pending_locked(struct vcon *c)
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
		if (p)
			p->guest_open = value != 0;
		break;
	default:
		vmm_dbg("virtio-console: ignoring control event %u for port %u",
			event, id);
		break;
	}
	pthread_mutex_unlock(&c->lock);
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

/* Write all of @buf to @fd, blocking (waiting with poll on an O_NONBLOCK
 * fd).  Returns 0 or -errno. */
static int write_all(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct pollfd pfd = { .fd = fd, .events = POLLOUT };

				if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
					return -errno;
				continue;
			}
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Context: port thread.  Send the readable segments of @ch to out_fd. */
static void port_output(struct vcon_port *p, struct virtq_chain *ch)
{
	for (unsigned int i = 0; i < ch->nr_out; i++) {
		size_t n = ch->iov[i].iov_len;
		int ret;

		if (p->out_fd < 0 || p->out_failed) {
			stat_add(&p->dropped, n);
			continue;
		}
		ret = write_all(p->out_fd, ch->iov[i].iov_base, n);
		if (ret) {
			vmm_warn("virtio-console: port %u (%s): writing its output: %s; "
				 "discarding it from now on", p->id, p->name,
				 strerror(-ret));
			p->out_failed = true;
			stat_add(&p->dropped, n);
			continue;
		}
		stat_add(&p->bytes_out, n);
	}
}

/* Context: a device thread.  Pop and handle every chain on the transmit
 * queue (guest -> host). */
static void thread_tx(struct vcon_thread *t)
{
	bool pushed = false;
	int r;

	if (!queue_usable(t->txq, t->tx_broken))
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

	if (!queue_usable(t->rxq, t->rx_broken))
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
			stat_add(&p->bytes_in, n);
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
		thread_wake(&c->ctl);
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
static void thread_take_queues(struct vcon_thread *t)
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
static bool thread_sync(struct vcon_thread *t)
{
	struct vcon *c = t->c;
	bool running, quit;

	pthread_mutex_lock(&c->lock);
	running = c->running;
	quit = c->quit;
	if (running && !quit && !t->active) {
		thread_take_queues(t);
		t->active = true;
	}
	pthread_mutex_unlock(&c->lock);
	if ((!running || quit) && t->active) {
		thread_tx(t); /* the guest's last output reaches out_fd */
		pthread_mutex_lock(&c->lock);
		t->active = false;
		t->rxq = t->txq = NULL;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
	}
	return !quit;
}

static void *thread_main(void *arg)
{
	struct vcon_thread *t = arg;
	struct vcon *c = t->c;
	struct vcon_port *p = t->port;
	sigset_t pipe;
	char name[16];
	int ret = 0;

	/* A write to a closed pipe fails with EPIPE instead of killing the
	 * process: SIGPIPE stays pending on this thread. */
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, NULL);
	if (p)
		snprintf(name, sizeof(name), "vmm-port%u", p->id);
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
	if (ret)
		return NULL;

	while (thread_sync(t)) {
		struct pollfd pfd[4];
		int nfd = 0, kick_rx = -1, kick_tx = -1, in = -1;
		bool want_rx_bufs;

		if (t->active) {
			thread_tx(t);
			thread_rx(t);
		}
		pfd[nfd++] = (struct pollfd){ .fd = t->wake_efd, .events = POLLIN };
		if (t->active && queue_usable(t->txq, t->tx_broken)) {
			kick_tx = nfd;
			pfd[nfd++] = (struct pollfd){ .fd = t->txq->kick_fd,
						      .events = POLLIN };
		}
		if (p) {
			want_rx_bufs = p->buf_off < p->buf_len;
			if (t->active && !want_rx_bufs && p->in_fd >= 0 && !p->in_eof &&
			    queue_usable(t->rxq, t->rx_broken)) {
				in = nfd;
				pfd[nfd++] = (struct pollfd){ .fd = p->in_fd,
							      .events = POLLIN };
			}
		} else {
			pthread_mutex_lock(&c->lock);
			want_rx_bufs = c->pending != NULL;
			pthread_mutex_unlock(&c->lock);
		}
		if (t->active && want_rx_bufs && queue_usable(t->rxq, t->rx_broken)) {
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
			drain_efd(t->wake_efd);
		if (kick_tx >= 0 && pfd[kick_tx].revents)
			drain_efd(pfd[kick_tx].fd);
		if (kick_rx >= 0 && pfd[kick_rx].revents)
			drain_efd(pfd[kick_rx].fd);
		if (in >= 0 && pfd[in].revents)
			port_read_input(p);
	}
	return NULL;
}

/* One non-blocking turn of a device thread's loop, on the caller's thread. */
static void thread_turn(struct vcon_thread *t)
{
	struct vcon_port *p = t->port;

	if (!thread_sync(t) || !t->active)
		return;
	thread_tx(t);
	thread_rx(t);
	if (p && p->buf_off >= p->buf_len && p->in_fd >= 0 && !p->in_eof &&
	    queue_usable(t->rxq, t->rx_broken)) {
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

/* ---- virtio_device_ops --------------------------------------------------- */

static uint64_t vcon_features(void *dev)
{
	return (1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_CONSOLE_F_MULTIPORT);
}

static int vcon_set_features(void *dev, uint64_t f)
{
	struct vcon *c = dev;

	/* Ports other than 0 exist only with MULTIPORT: refuse without. */
	if (!(f & (1ull << VIRTIO_F_VERSION_1)) ||
	    !(f & (1ull << VIRTIO_CONSOLE_F_MULTIPORT)) ||
	    (f & ~vcon_features(dev)))
		return -EINVAL;
	c->driver_features = f;
	return 0;
}

static void vcon_config_read(void *dev, uint32_t off, void *buf, uint32_t len)
{
	struct vcon *c = dev;
	struct virtio_console_config cfg = {
		.max_nr_ports = htole32(c->nr_ports),
	};

	/* off/len were checked against config_size by the transport. */
	memset(buf, 0, len);
	if (off < sizeof(cfg))
		memcpy(buf, (uint8_t *)&cfg + off,
		       len < sizeof(cfg) - off ? len : sizeof(cfg) - off);
}

static void vcon_config_write(void *dev, uint32_t off, const void *buf,
			      uint32_t len)
{
	/* emerg_wr is not offered (no VIRTIO_CONSOLE_F_EMERG_WRITE); the
	 * rest is read-only: ignored. */
}

static void vcon_wake_all(struct vcon *c)
{
	thread_wake(&c->ctl);
	for (unsigned int i = 0; i < c->nr_ports; i++)
		thread_wake(&c->ports[i].th);
}

/* Context: vCPU thread (DRIVER_OK), transport lock held. */
static int vcon_start(void *dev, struct virtio_queue *queues, unsigned int nr)
{
	struct vcon *c = dev;

	if (nr < c->nr_queues)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	c->queues = queues;
	c->running = true;
	pthread_mutex_unlock(&c->lock);
	vcon_wake_all(c);
	return 0;
}

static bool any_active(struct vcon *c)
{
	if (c->ctl.active)
		return true;
	for (unsigned int i = 0; i < c->nr_ports; i++)
		if (c->ports[i].th.active)
			return true;
	return false;
}

/* Context: vcon_stop, after running went false.  @t's own thread touches
 * the queues only while active, and cannot become active any more; when it
 * is not, do its last thread_tx() here (what thread_sync() would have). */
static void stop_flush_idle(struct vcon *c, struct vcon_thread *t)
{
	bool idle;

	pthread_mutex_lock(&c->lock);
	idle = !t->active && c->queues;
	pthread_mutex_unlock(&c->lock);
	if (!idle)
		return;
	thread_take_queues(t);
	thread_tx(t);
	t->rxq = t->txq = NULL;
}

/* Context: vCPU thread (reset) or the API thread (vpci_quiesce/destroy);
 * transport lock held.  Returns once no thread touches the queues. */
static void vcon_stop(void *dev)
{
	struct vcon *c = dev;

	pthread_mutex_lock(&c->lock);
	c->running = false;
	pthread_mutex_unlock(&c->lock);
	if (!c->threaded) {
		/* Polled (vcon_poll()): nobody else will let go of the
		 * queues; do what the threads do when they see the stop. */
		thread_sync(&c->ctl);
		for (unsigned int i = 0; i < c->nr_ports; i++)
			thread_sync(&c->ports[i].th);
	} else {
		/* A thread that had not yet taken the queues since the start
		 * (woken, not yet run) can no longer take them: running is
		 * false.  Write out what the guest queued on its behalf, or a
		 * start quickly followed by a stop would lose that output. */
		stop_flush_idle(c, &c->ctl);
		for (unsigned int i = 0; i < c->nr_ports; i++)
			stop_flush_idle(c, &c->ports[i].th);
	}
	vcon_wake_all(c);
	pthread_mutex_lock(&c->lock);
	while (any_active(c))
		pthread_cond_wait(&c->cond, &c->lock);
	/* The driver starts over with DEVICE_READY after a reset. */
	ctl_flush_pending_locked(c);
	c->pending_overflow_logged = false;
	for (unsigned int i = 0; i < c->nr_ports; i++) {
		c->ports[i].ready = false;
		c->ports[i].guest_open = false;
	}
	c->queues = NULL;
	pthread_mutex_unlock(&c->lock);
}

static const struct virtio_device_ops vcon_ops = {
	.device_id = VIRTIO_ID_CONSOLE,
	.config_size = sizeof(struct virtio_console_config),
	.features = vcon_features,
	.set_features = vcon_set_features,
	.config_read = vcon_config_read,
	.config_write = vcon_config_write,
	.start = vcon_start,
	.stop = vcon_stop,
};

const struct virtio_device_ops *vcon_dev_ops(void)
{
	return &vcon_ops;
}

unsigned int vcon_num_queues(const struct vcon *c)
{
	return c->nr_queues;
}

/* ---- life cycle ---------------------------------------------------------- */

static void close_param_fds(const struct vcon_params *p)
{
	for (unsigned int i = 0; p->ports && i < p->nr_ports; i++) {
		if (p->ports[i].in_fd >= 0)
			close(p->ports[i].in_fd);
		if (p->ports[i].out_fd >= 0)
			close(p->ports[i].out_fd);
	}
}

static int thread_setup(struct vcon *c, struct vcon_thread *t,
			struct vcon_port *p, unsigned int rx, unsigned int tx)
{
	t->c = c;
	t->port = p;
	t->rx_index = rx;
	t->tx_index = tx;
	t->wake_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	t->chain = malloc(sizeof(*t->chain));
	if (t->wake_efd < 0)
		return -errno;
	return t->chain ? 0 : -ENOMEM;
}

int vcon_create(const struct vcon_params *p, struct vcon **out)
{
	struct vcon *c;
	int ret;

	if (!p || !out || !p->ports || !p->nr_ports || p->nr_ports > VCON_MAX_PORTS) {
		if (p)
			close_param_fds(p);
		return -EINVAL;
	}
	for (unsigned int i = 0; i < p->nr_ports; i++) {
		const char *n = p->ports[i].name;

		if (!n || !*n || strlen(n) > VCON_MAX_NAME)
			goto inval;
		for (unsigned int j = 0; j < i; j++)
			if (!strcmp(n, p->ports[j].name))
				goto inval;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close_param_fds(p);
		return -ENOMEM;
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	log_limit_init(&c->log, "guest-caused messages");
	c->pending_tail = &c->pending;
	c->nr_queues = VCON_NUM_QUEUES(p->nr_ports);
	c->thread_init = p->thread_init;
	c->thread_opaque = p->thread_opaque;
	c->ctl.wake_efd = -1;
	c->ports = calloc(p->nr_ports, sizeof(*c->ports));
	if (!c->ports) {
		close_param_fds(p);
		log_limit_destroy(&c->log, "");
		free(c);
		return -ENOMEM;
	}
	c->nr_ports = p->nr_ports;
	for (unsigned int i = 0; i < p->nr_ports; i++) {
		struct vcon_port *port = &c->ports[i];

		port->id = i;
		port->in_fd = p->ports[i].in_fd;
		port->out_fd = p->ports[i].out_fd;
		port->th.wake_efd = -1;
		port->host_connected = true;
	}
	ret = thread_setup(c, &c->ctl, NULL, 2, 3);
	for (unsigned int i = 0; i < c->nr_ports && !ret; i++) {
		struct vcon_port *port = &c->ports[i];
		unsigned int rx = i ? 2 * i + 2 : 0;

		port->name = strdup(p->ports[i].name);
		port->buf = malloc(BOUNCE_SIZE);
		if (!port->name || !port->buf)
			ret = -ENOMEM;
		else
			ret = thread_setup(c, &port->th, port, rx, rx + 1);
	}
	if (ret) {
		vcon_destroy(c);
		return ret;
	}
	*out = c;
	return 0;
inval:
	close_param_fds(p);
	return -EINVAL;
}

static int thread_start(struct vcon *c, struct vcon_thread *t)
{
	/* Asynchronous signals blocked, like every library thread. */
	int ret = thread_spawn(&t->tid, thread_main, t);

	if (ret)
		return ret;
	t->started = true;
	pthread_mutex_lock(&c->lock);
	while (!t->init_done)
		pthread_cond_wait(&c->cond, &c->lock);
	ret = t->init_ret;
	pthread_mutex_unlock(&c->lock);
	if (ret)
		vmm_err("virtio-console: device thread setup: %s", strerror(-ret));
	return ret;
}

int vcon_start_threads(struct vcon *c)
{
	int ret;

	c->threaded = true;
	ret = thread_start(c, &c->ctl);

	for (unsigned int i = 0; i < c->nr_ports && !ret; i++)
		ret = thread_start(c, &c->ports[i].th);
	return ret;
}

static void thread_cleanup(struct vcon_thread *t)
{
	if (t->started)
		pthread_join(t->tid, NULL);
	t->started = false;
	if (t->wake_efd >= 0)
		close(t->wake_efd);
	t->wake_efd = -1;
	free(t->chain);
	t->chain = NULL;
}

void vcon_destroy(struct vcon *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->quit = true;
	c->running = false;
	pthread_mutex_unlock(&c->lock);
	vcon_wake_all(c);
	thread_cleanup(&c->ctl);
	for (unsigned int i = 0; i < c->nr_ports; i++) {
		struct vcon_port *p = &c->ports[i];

		thread_cleanup(&p->th);
		if (p->in_fd >= 0)
			close(p->in_fd);
		if (p->out_fd >= 0)
			close(p->out_fd);
		free(p->name);
		free(p->buf);
	}
	ctl_flush_pending_locked(c);
	free(c->ports);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	log_limit_destroy(&c->log, "until the device was removed");
	free(c);
}

int vcon_port_stats(struct vcon *c, unsigned int port, struct vcon_port_stats *st)
{
	struct vcon_port *p;

	if (!c || !st || port >= c->nr_ports)
		return -ENOENT;
	p = &c->ports[port];
	st->bytes_in = __atomic_load_n(&p->bytes_in, __ATOMIC_RELAXED);
	st->bytes_out = __atomic_load_n(&p->bytes_out, __ATOMIC_RELAXED);
	st->dropped = __atomic_load_n(&p->dropped, __ATOMIC_RELAXED);
	pthread_mutex_lock(&c->lock);
	st->guest_open = p->guest_open;
	st->host_connected = p->host_connected;
	pthread_mutex_unlock(&c->lock);
	return 0;
}
