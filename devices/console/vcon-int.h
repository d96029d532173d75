/* SPDX-License-Identifier: MIT */
/*
 * Inside the virtio-console device: the state vcon.c (virtio_device_ops,
 * life cycle, statistics) and vcon-io.c (control messages, data movement,
 * the device threads) share.
 */
#ifndef VMM_CONSOLE_VCON_INT_H
#define VMM_CONSOLE_VCON_INT_H

#include <errno.h>
#include <linux/virtio_console.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "console/vcon.h"
#include "log.h"
#include "nbfd.h"

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
	struct nbfd out;	 /* how out_fd is written without waiting */
	/* Under c->lock. */
	bool host_connected;
	bool ready;		 /* the guest added the port (PORT_READY 1) */
	bool guest_open;
	/* Relaxed atomics (read by vcon_port_stats()). */
	uint64_t bytes_in, bytes_out, dropped;
	/* Relaxed atomic: bytes dropped because out_fd did not take them
	 * before the stop's deadline; vcon_stop() reports and resets it. */
	uint64_t stop_dropped;
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
	/* CLOCK_MONOTONIC ns until which a stop (or destroy) lets the
	 * threads write out the guest's queued output; 0 while running.
	 * Written under lock, read with relaxed atomic loads by port_write()
	 * (a stale 0 only means one more poll, which the stop's wake-up
	 * ends). */
	uint64_t stop_deadline_ns;
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

static inline void vcon_stat_add(uint64_t *c, uint64_t n)
{
	/* Counters only; nothing is ordered against them. */
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

static inline void vcon_thread_wake(struct vcon_thread *t)
{
	uint64_t one = 1;

	if (t->wake_efd >= 0 && write(t->wake_efd, &one, sizeof(one)) < 0)
		vmm_warn("virtio-console: waking a device thread: %s",
			 strerror(errno));
}

static inline void vcon_drain_efd(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		vmm_dbg("virtio-console: eventfd read: %s", strerror(errno));
}

static inline bool vcon_queue_usable(const struct virtio_queue *q, bool broken)
{
	return q && q->enabled && q->vq.ready && !broken;
}

/* vcon-io.c: what the device ops and the life cycle call. */
void vcon_thread_take_queues(struct vcon_thread *t);
bool vcon_thread_sync(struct vcon_thread *t);
void vcon_thread_tx(struct vcon_thread *t);
void *vcon_thread_main(void *arg);
void vcon_ctl_flush_pending_locked(struct vcon *c);

#endif
