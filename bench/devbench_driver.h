/* SPDX-License-Identifier: MIT */
/*
 * devbench: a simulated virtio-blk driver that stands in for a guest.
 *
 * One thread per virtqueue plays the vCPU: it keeps QD 4 KiB random reads in
 * flight on its split ring (each request one indirect descriptor holding
 * header / data / status, as Linux virtio_blk does when INDIRECT_DESC is
 * negotiated), publishes them, writes the queue's kick eventfd only when the
 * device asks for it (avail_event with EVENT_IDX, VRING_USED_F_NO_NOTIFY
 * without), harvests used entries, re-arms used_event like Linux before it
 * sleeps, and sleeps on the queue's interrupt eventfd.  The rings live in
 * "guest RAM": a memfd shared with the device (the same process for libvmm,
 * another process for vhost-user).
 *
 * The driver is transport-agnostic: whoever sets up the device (virtio-pci
 * transport of libvmm, or a vhost-user back end) fills in the ring
 * addresses, the kick and call eventfds and the negotiated features.
 */
#ifndef DEVBENCH_DRIVER_H
#define DEVBENCH_DRIVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <linux/virtio_ring.h>

#define DB_BLOCK 4096u

/* Guest RAM: a memfd mapped at gpa 0. */
struct db_ram {
	int fd;
	uint8_t *base;
	uint64_t size;
	uint64_t bump; /* bump allocator, next free gpa */
};

/* Counters of one queue, written by its driver thread (relaxed atomics). */
struct db_counters {
	uint64_t reqs;	  /* requests completed */
	uint64_t kicks;	  /* kick eventfd writes */
	uint64_t irqs;	  /* interrupts received (sum of call eventfd counts) */
	uint64_t wakeups; /* sleeps on the call eventfd that returned */
	uint64_t errors;  /* bad status / bad used entry */
};

struct db_slot {
	uint64_t ind_gpa;  /* indirect table: 3 descriptors */
	uint64_t hdr_gpa;  /* struct virtio_blk_outhdr */
	uint64_t data_gpa; /* DB_BLOCK bytes */
	uint64_t st_gpa;   /* status byte */
};

struct db_queue {
	struct db_ram *ram;
	unsigned int index;
	uint16_t size;
	bool event_idx;
	unsigned int qd;
	uint64_t nr_blocks;	/* capacity in DB_BLOCK units */
	uint64_t desc_gpa, avail_gpa, used_gpa;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	struct db_slot *slots; /* qd slots; head id == slot id */
	uint16_t *free_ids;
	unsigned int nr_free;
	uint16_t avail_idx, kicked_idx, last_used;
	unsigned int inflight;
	uint64_t rng;
	int kick_fd, call_fd;	/* filled by the transport set-up */
	pthread_t thread;
	struct db_counters c;
	volatile int *stop;
};

int db_ram_init(struct db_ram *r, uint64_t size);
void db_ram_destroy(struct db_ram *r);
uint64_t db_alloc(struct db_ram *r, uint64_t len, uint64_t align);

/* Lay out ring + request buffers of queue @index in @r (zeroed).  Returns 0
 * or -ENOMEM.  @qd <= @size. */
int db_queue_init(struct db_queue *q, struct db_ram *r, unsigned int index,
		  uint16_t size, unsigned int qd, uint64_t capacity_bytes,
		  bool event_idx, volatile int *stop);
void db_queue_destroy(struct db_queue *q);

/* Start / join the vCPU thread.  The thread runs until *stop, then stops
 * submitting and drains every in-flight request (bounded wait). */
int db_queue_start(struct db_queue *q);
void db_queue_join(struct db_queue *q);

/* Relaxed snapshot of the counters (any thread). */
void db_queue_counters(struct db_queue *q, struct db_counters *out);

/* CPU time of the thread in ns (pthread_getcpuclockid). */
uint64_t db_queue_cpu_ns(struct db_queue *q);

#endif
