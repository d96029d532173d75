/* SPDX-License-Identifier: MIT */
/*
 * A vhost-user front end, device-neutral: the VMM side of a device whose
 * queues another process (the back end, e.g. virtiofsd) serves.  The
 * front end connects to the back end's socket, negotiates virtio and
 * protocol features (MQ, REPLY_ACK, CONFIGURE_MEM_SLOTS where offered;
 * CONFIG where offered and the device has a config space), hands it the
 * guest's shareable RAM (the memfd, SET_MEM_TABLE or one ADD_MEM_REG per
 * region) and, when the driver sets DRIVER_OK, each enabled ring: its
 * size, addresses (as the back end sees them: user addresses inside the
 * mapping the memory table describes, i.e. ours), base, the transport's
 * kick eventfd (the KVM ioeventfd) and call eventfd (the KVM irqfd).  No
 * VMM thread is in the data path.
 *
 * CONFIG: a device with a config space says how large it is
 * (config_size); if the back end offers VHOST_USER_PROTOCOL_F_CONFIG the
 * front end acknowledges it and reads the back end's config space once,
 * with GET_CONFIG right after SET_OWNER (vu_fe_config()).  What the guest
 * then sees is the device's decision (virtio-fs.h: the back end's tag
 * must match the user's).  Nothing is written back (no SET_CONFIG), and
 * a config change the back end would announce is not listened for (no
 * back-end request channel).  A back end without CONFIG (QEMU 7.2's C
 * virtiofsd) leaves the config to the device alone, as before.
 *
 * Every request waits for its reply (REPLY_ACK when the back end has it)
 * at most timeout_ms: a back end that never answers costs the waiting
 * thread (a vCPU at DRIVER_OK) that long once, then the front end is
 * "broken" and sends nothing more.  A back end that closes its end is
 * noticed at the next message or, while the device runs, by the watch
 * thread (vu_fe_watch()), which calls the device's callback so it can
 * set NEEDS_RESET; the VM keeps running.
 *
 * Context: vu_fe_open()/vu_fe_close() on the API thread; vu_fe_start()/
 * vu_fe_stop() on the transport's thread (a vCPU with the transport's lock
 * held, or the API thread at the VM's end).  One at a time: the front end's
 * own mutex serialises the messages.
 */
#ifndef VMM_DEVICES_VHOST_USER_VU_FRONTEND_H
#define VMM_DEVICES_VHOST_USER_VU_FRONTEND_H

#include <stdbool.h>
#include <stdint.h>

#include "memory.h"
#include "util/compiler.h"
#include "virtio/virtio.h"

#define VU_FE_TIMEOUT_MS 5000 /* per reply, by default */
#define VU_FE_MAX_QUEUES 64u

struct vu_fe;

struct vu_fe_params {
	const char *path;	     /* the back end's Unix socket */
	const struct guest_mem *mem; /* guest RAM; must be shareable (fd >= 0) */
	/* Virtio features the device model can offer (VIRTIO_F_VERSION_1
	 * and the ring features it allows): what the driver is offered is
	 * these and the back end's in common. */
	uint64_t features;
	unsigned int num_queues; /* the most the device would use */
	int timeout_ms;		 /* per reply; 0: VU_FE_TIMEOUT_MS */
	const char *name;	 /* for the log ("fs 0") */
	/* The device's config space in bytes (at most
	 * VHOST_USER_MAX_CONFIG_SIZE); 0: none, CONFIG is not negotiated. */
	uint32_t config_size;
};

struct vu_fe_stats {
	uint64_t messages;    /* requests sent */
	uint64_t timeouts;    /* replies that did not come in time */
	uint64_t disconnects; /* the back end went away (0 or 1) */
	uint64_t starts;      /* DRIVER_OKs handed over */
	uint64_t stops;	      /* of which stopped (GET_VRING_BASE) */
	uint64_t orphaned;    /* requests answered by the device after the
				 back end went away */
};

/*
 * vu_fe_open - connect to @p->path (at most timeout_ms), negotiate the
 * features, SET_OWNER, read the config space (CONFIG negotiated) and
 * hand the memory table over.  Returns 0, -EINVAL (RAM not shareable,
 * path too long, num_queues 0 or over VU_FE_MAX_QUEUES, config_size over
 * VHOST_USER_MAX_CONFIG_SIZE), -ENOENT/-ECONNREFUSED (no back end
 * listening), -ETIMEDOUT (it does not answer), -EPROTO (a malformed or
 * unexpected reply, a refused request, no VIRTIO_F_VERSION_1), -ENOMEM;
 * each logged with what it was doing.
 */
int vu_fe_open(const struct vu_fe_params *p, struct vu_fe **out) __must_check;
/* Stop the watch thread, close the connection, free.  NULL-safe. */
void vu_fe_close(struct vu_fe *fe);

/* Virtio features to offer the driver. */
uint64_t vu_fe_features(const struct vu_fe *fe);
/* Queues the back end serves (GET_QUEUE_NUM with MQ; else num_queues). */
unsigned int vu_fe_queue_num(const struct vu_fe *fe);
/* Protocol features negotiated (VHOST_USER_PROTOCOL_F_* bits). */
uint64_t vu_fe_protocol_features(const struct vu_fe *fe);
/* The back end's config space as GET_CONFIG read it at vu_fe_open()
 * (config_size bytes in *@len), or NULL (*@len 0) without CONFIG. */
const uint8_t *vu_fe_config(const struct vu_fe *fe, uint32_t *len);

/*
 * vu_fe_start - DRIVER_OK: SET_FEATURES with what the driver accepted,
 * then for each enabled queue of @qs (rings validated and started by the
 * transport) SET_VRING_NUM, BASE (its last_avail_idx), ADDR, KICK, CALL
 * (no fd for a queue without a vector), ENABLE.  On failure the rings
 * already handed over are stopped again.  Returns 0, -EPIPE (broken:
 * the back end is gone or did not answer before), -ETIMEDOUT, -EPROTO,
 * -EINVAL (a queue beyond what the back end serves).
 */
int vu_fe_start(struct vu_fe *fe, uint64_t features, struct virtio_queue *qs,
		unsigned int nr) __must_check;
/*
 * vu_fe_stop - device reset or bus mastering off: GET_VRING_BASE on every
 * ring handed over (the back end stops it and says where it was; that
 * base goes into the queue's vq.last_avail_idx for a restart).  A broken
 * front end sends nothing.  Returns once the back end has answered for
 * every ring or is known broken.
 */
void vu_fe_stop(struct vu_fe *fe);

/* The back end is gone or broke the protocol: nothing more is sent. */
bool vu_fe_broken(struct vu_fe *fe);

/*
 * What a device answers by itself, once its back end is gone, for a
 * request on ring @queue (virtio-fs: a FUSE error): writes into @c's
 * device-writable segments and returns the bytes written.  Context: the
 * watch thread.
 */
typedef uint32_t (*vu_fe_orphan_fn)(void *opaque, unsigned int queue,
				    const struct virtq_chain *c);

/*
 * vu_fe_watch - start a thread ("vmm-vuwatch") that waits for the back end
 * to close its end of the socket and then calls @dead(@opaque) once
 * (Context: that thread; the callback must not block).  With @orphan the
 * thread then serves the rings the back end had, until vu_fe_unwatch()
 * or the device's stop: each request, the ones the back end left
 * unanswered first (virtq_adopt(): exact for a back end that completes
 * in order, as virtiofsd with one thread per queue does), gets
 * @orphan's answer and the ring's interrupt, so the guest sees errors
 * instead of waiting forever.  At most a ring's size of requests per
 * ring per turn.  @thread_init runs first on the thread (seccomp
 * confinement), if not NULL.  Returns 0 or -errno.
 */
int vu_fe_watch(struct vu_fe *fe, void (*dead)(void *opaque), void *opaque,
		vu_fe_orphan_fn orphan, int (*thread_init)(void *arg),
		void *init_arg) __must_check;

/* Stop and join the watch thread, if any.  Idempotent. */
void vu_fe_unwatch(struct vu_fe *fe);

void vu_fe_get_stats(struct vu_fe *fe, struct vu_fe_stats *st);

#endif
