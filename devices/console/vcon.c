/* SPDX-License-Identifier: MIT */
/* virtio-console, multiport (see vcon.h): device ops and life cycle;
 * the data path is vcon-io.c. */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
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
	vcon_thread_wake(&c->ctl);
	for (unsigned int i = 0; i < c->nr_ports; i++)
		vcon_thread_wake(&c->ports[i].th);
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
	c->stop_deadline_ns = 0;
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
 * is not, do its last vcon_thread_tx() here (what vcon_thread_sync() would have). */
static void stop_flush_idle(struct vcon *c, struct vcon_thread *t)
{
	bool idle;

	pthread_mutex_lock(&c->lock);
	idle = !t->active && c->queues;
	pthread_mutex_unlock(&c->lock);
	if (!idle)
		return;
	vcon_thread_take_queues(t);
	vcon_thread_tx(t);
	t->rxq = t->txq = NULL;
}

static uint64_t deadline_ns(unsigned int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec +
	       (uint64_t)ms * 1000000ull;
}

/* Context: vcon_stop, every thread inactive, lock not held.  One line per port that lost
 * output at this stop (rate-limited: a guest can reset in a loop). */
static void stop_report_dropped(struct vcon *c)
{
	for (unsigned int i = 0; i < c->nr_ports; i++) {
		struct vcon_port *p = &c->ports[i];
		uint64_t n = __atomic_exchange_n(&p->stop_dropped, 0, __ATOMIC_RELAXED);

		if (n)
			log_limited(&c->log, VMM_LOG_WARN, "virtio-console",
				    "port %u (%s): %llu bytes of guest output dropped: "
				    "its reader did not take them within %u ms of the "
				    "device stop", p->id, p->name, (unsigned long long)n,
				    VCON_STOP_FLUSH_MS);
	}
}

/* Context: vCPU thread (reset) or the API thread (vpci_quiesce/destroy);
 * transport lock held.  Returns once no thread touches the queues: within
 * about VCON_STOP_FLUSH_MS whatever the port fds' readers do. */
static void vcon_stop(void *dev)
{
	struct vcon *c = dev;

	pthread_mutex_lock(&c->lock);
	c->running = false;
	c->stop_deadline_ns = deadline_ns(VCON_STOP_FLUSH_MS);
	pthread_mutex_unlock(&c->lock);
	if (!c->threaded) {
		/* Polled (vcon_poll()): nobody else will let go of the
		 * queues; do what the threads do when they see the stop. */
		vcon_thread_sync(&c->ctl);
		for (unsigned int i = 0; i < c->nr_ports; i++)
			vcon_thread_sync(&c->ports[i].th);
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
	vcon_ctl_flush_pending_locked(c);
	c->pending_overflow_logged = false;
	for (unsigned int i = 0; i < c->nr_ports; i++) {
		c->ports[i].ready = false;
		c->ports[i].guest_open = false;
	}
	c->queues = NULL;
	pthread_mutex_unlock(&c->lock);
	stop_report_dropped(c);
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

void vcon_virtio(struct vcon *c, struct virtio_device *out)
{
	*out = (struct virtio_device){
		.ops = &vcon_ops,
		.dev = c,
		.num_queues = c->nr_queues,
		.queue_size = VCON_QUEUE_SIZE,
	};
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
		nbfd_open(port->out_fd, O_WRONLY, &port->out);
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
	int ret = thread_spawn(&t->tid, vcon_thread_main, t);

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
	if (!c->stop_deadline_ns) /* never stopped: nothing is waited for */
		c->stop_deadline_ns = deadline_ns(0);
	pthread_mutex_unlock(&c->lock);
	vcon_wake_all(c);
	thread_cleanup(&c->ctl);
	for (unsigned int i = 0; i < c->nr_ports; i++) {
		struct vcon_port *p = &c->ports[i];

		thread_cleanup(&p->th);
		nbfd_close(&p->out);
		if (p->in_fd >= 0)
			close(p->in_fd);
		if (p->out_fd >= 0)
			close(p->out_fd);
		free(p->name);
		free(p->buf);
	}
	vcon_ctl_flush_pending_locked(c);
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
