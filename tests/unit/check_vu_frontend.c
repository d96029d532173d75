/* SPDX-License-Identifier: MIT */
/*
 * The vhost-user front end (devices/vhost-user/vu-frontend.c) against a
 * scripted back end on a Unix socket, KVM-free: the message sequence of a
 * set-up and a DRIVER_OK (features, protocol features, the memory table
 * with its fd, each ring with its kick and call fds), REPLY_ACK, the
 * CONFIGURE_MEM_SLOTS path, a ring base carried across a stop and a
 * restart, a back end that never answers (a bounded wait, then "broken"),
 * one that refuses a request, and one that closes its end (the watch
 * thread reports it; nothing more is sent).  CONFIG: negotiated only for
 * a device with a config space and a back end that offers it, read once
 * with GET_CONFIG, a wrong reply refused; and virtio-fs's use of it (the
 * back end's tag must be the user's, its fewer request queues win).
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fs/virtio-fs.h"
#include "memory.h"
#include "vhost-user/vhost-user.h"
#include "vhost-user/vu-frontend.h"
#include "vhost-user/vu-msg.h"

#define BIT(n) (1ull << (n))
#define VERSION_1 BIT(32)
#define EVENT_IDX BIT(29)
#define RAM (4ull << 20)
#define MAX_LOG 64

enum { MODE_OK, MODE_SILENT, MODE_CLOSE, MODE_REFUSE };

/* The scripted back end. */
struct fake {
	char path[108];
	int lsock;
	pthread_t thread;
	uint64_t proto;		/* protocol features it offers */
	uint64_t queue_num;
	int mode;
	uint32_t trigger;	/* the request MODE_* acts on */
	uint8_t config[40];	/* GET_CONFIG's answer (a virtio-fs config) */
	int config_skew;	/* added to the size it answers with */
	/* What it received, in order. */
	uint32_t req[MAX_LOG];
	unsigned int nfds[MAX_LOG];
	bool need_reply[MAX_LOG];
	struct vu_msg last[MAX_LOG];
	unsigned int n;
	int closed; /* the front end hung up */
};

static void reply_u64(int s, const struct vu_msg *m, uint64_t v)
{
	ck_assert_int_eq(vu_msg_reply(s, m, &v, sizeof(v), NULL, 0), 0);
}

/* One request: record it, act as the mode says.  False: stop serving. */
static bool fake_serve_one(struct fake *f, int s, struct vu_msg *m)
{
	unsigned int i = f->n < MAX_LOG ? f->n++ : MAX_LOG - 1;

	f->req[i] = m->hdr.request;
	f->nfds[i] = m->nfds;
	f->need_reply[i] = m->hdr.flags & VHOST_USER_NEED_REPLY;
	f->last[i] = *m;
	vu_msg_close_fds(m);
	if (m->hdr.request == f->trigger && f->mode == MODE_SILENT) {
		sleep(2); /* longer than the front end waits */
		return false;
	}
	if (m->hdr.request == f->trigger && f->mode == MODE_CLOSE)
		return false;
	switch (m->hdr.request) {
	case VHOST_USER_GET_FEATURES:
		reply_u64(s, m, VERSION_1 | EVENT_IDX | BIT(24) |
				      BIT(VHOST_USER_F_PROTOCOL_FEATURES));
		return true;
	case VHOST_USER_GET_PROTOCOL_FEATURES:
		reply_u64(s, m, f->proto);
		return true;
	case VHOST_USER_GET_QUEUE_NUM:
		reply_u64(s, m, f->queue_num);
		return true;
	case VHOST_USER_GET_MAX_MEM_SLOTS:
		reply_u64(s, m, 8);
		return true;
	case VHOST_USER_GET_CONFIG: {
		struct vhost_user_config c = m->p.config;
		uint32_t n = MIN(c.size, (uint32_t)sizeof(f->config));

		memset(c.region, 0, sizeof(c.region));
		memcpy(c.region, f->config, n);
		c.size += (uint32_t)f->config_skew;
		ck_assert_int_eq(vu_msg_reply(s, m, &c, VHOST_USER_CONFIG_HDR_SIZE + c.size,
					      NULL, 0), 0);
		return true;
	}
	case VHOST_USER_GET_VRING_BASE: {
		struct vhost_user_vring_state st = { m->p.state.index, 42 };

		ck_assert_int_eq(vu_msg_reply(s, m, &st, sizeof(st), NULL, 0), 0);
		return true;
	}
	default:
		if (m->hdr.flags & VHOST_USER_NEED_REPLY)
			reply_u64(s, m, m->hdr.request == f->trigger &&
						f->mode == MODE_REFUSE);
		return true;
	}
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	int s = accept4(f->lsock, NULL, NULL, SOCK_CLOEXEC);
	struct vu_msg m;

	ck_assert_int_ge(s, 0);
	while (!vu_msg_recv(s, -1, &m))
		if (!fake_serve_one(f, s, &m))
			break;
	f->closed = 1;
	close(s);
	return NULL;
}

static void fake_start(struct fake *f, uint64_t proto, int mode, uint32_t trigger)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	static int seq;

	memset(f, 0, sizeof(*f));
	f->proto = proto;
	f->queue_num = 2;
	f->mode = mode;
	f->trigger = trigger;
	snprintf(f->path, sizeof(f->path), "/tmp/check_vu_fe.%d.%d", getpid(), seq++);
	unlink(f->path);
	strcpy(a.sun_path, f->path);
	f->lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(f->lsock, 0);
	ck_assert_int_eq(bind(f->lsock, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(f->lsock, 1), 0);
	ck_assert_int_eq(pthread_create(&f->thread, NULL, fake_main, f), 0);
}

static void fake_join(struct fake *f)
{
	pthread_join(f->thread, NULL);
	close(f->lsock);
	unlink(f->path);
}

/* Requests received of type @req. */
static unsigned int fake_count(const struct fake *f, uint32_t req)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < f->n; i++)
		n += f->req[i] == req;
	return n;
}

static int fake_find(const struct fake *f, uint32_t req)
{
	for (unsigned int i = 0; i < f->n; i++)
		if (f->req[i] == req)
			return (int)i;
	return -1;
}

static struct guest_mem mem;

static void mem_setup(void)
{
	struct guest_layout l = { 0, 0, 0 };

	ck_assert_int_eq(guest_mem_init(&mem, RAM, GUEST_MEM_MEMFD, &l), 0);
	ck_assert_int_ge(mem.fd, 0);
}

static void mem_teardown(void)
{
	guest_mem_destroy(&mem);
}

static struct vu_fe_params params(const struct fake *f)
{
	return (struct vu_fe_params){
		.path = f->path, .mem = &mem, .features = VERSION_1 | EVENT_IDX,
		.num_queues = 4, .timeout_ms = 300, .name = "test",
	};
}

/* Two rings in guest RAM, started as the transport would. */
static void queues_setup(struct virtio_queue *q)
{
	memset(q, 0, 2 * sizeof(*q));
	for (unsigned int i = 0; i < 2; i++) {
		uint64_t base = 0x10000 * (i + 1);

		q[i].index = i;
		q[i].enabled = true;
		q[i].kick_fd = eventfd(0, EFD_CLOEXEC);
		q[i].call_fd = i ? eventfd(0, EFD_CLOEXEC) : -1; /* 0: polled */
		ck_assert_int_eq(virtq_start(&q[i].vq, &mem, 64, base, base + 0x1000,
					     base + 0x2000, false, false), 0);
	}
}

static void queues_teardown(struct virtio_queue *q)
{
	for (unsigned int i = 0; i < 2; i++) {
		close(q[i].kick_fd);
		if (q[i].call_fd >= 0)
			close(q[i].call_fd);
	}
}

#define PROTO_ALL                                                            \
	(BIT(VHOST_USER_PROTOCOL_F_MQ) | BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK) | \
	 BIT(VHOST_USER_PROTOCOL_F_CONFIG) | BIT(1))

START_TEST(sequence_with_reply_ack)
{
	struct vu_fe_params p;
	struct virtio_queue q[2];
	struct vu_fe *fe;
	struct fake f;
	int i;

	fake_start(&f, PROTO_ALL, MODE_OK, 0);
	p = params(&f);
	ck_assert_int_eq(vu_fe_open(&p, &fe), 0);
	/* Features: what both have (bit 24 is the back end's alone). */
	ck_assert_uint_eq(vu_fe_features(fe), VERSION_1 | EVENT_IDX);
	/* Only what the front end uses is acknowledged (not CONFIG, bit 1). */
	ck_assert_uint_eq(vu_fe_protocol_features(fe),
			  BIT(VHOST_USER_PROTOCOL_F_MQ) |
				  BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK));
	ck_assert_uint_eq(vu_fe_queue_num(fe), 2);
	queues_setup(q);
	ck_assert_int_eq(vu_fe_start(fe, VERSION_1 | EVENT_IDX | BIT(24), q, 2), 0);
	vu_fe_stop(fe);
	/* The base the back end reported is where a restart resumes. */
	ck_assert_uint_eq(q[0].vq.last_avail_idx, 42);
	ck_assert_uint_eq(q[1].vq.last_avail_idx, 42);
	vu_fe_close(fe);
	fake_join(&f);

	ck_assert_uint_eq(f.req[0], VHOST_USER_GET_FEATURES);
	ck_assert_uint_eq(f.req[1], VHOST_USER_GET_PROTOCOL_FEATURES);
	ck_assert_uint_eq(f.req[2], VHOST_USER_SET_PROTOCOL_FEATURES);
	ck_assert_uint_eq(f.last[2].p.u64, BIT(VHOST_USER_PROTOCOL_F_MQ) |
						   BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK));
	ck_assert_uint_eq(f.req[3], VHOST_USER_GET_QUEUE_NUM);
	ck_assert_uint_eq(f.req[4], VHOST_USER_SET_OWNER);
	ck_assert(f.need_reply[4]); /* REPLY_ACK from here on */
	ck_assert_uint_eq(f.req[5], VHOST_USER_SET_MEM_TABLE);
	ck_assert_uint_eq(f.nfds[5], 1); /* one region, the memfd */
	ck_assert_uint_eq(f.last[5].p.memory.nregions, 1);
	ck_assert_uint_eq(f.last[5].p.memory.regions[0].memory_size, RAM);
	ck_assert_uint_eq(f.last[5].p.memory.regions[0].userspace_addr,
			  (uintptr_t)mem.base);
	/* SET_FEATURES: the driver's, minus what the device did not offer,
	 * plus the protocol-features bit. */
	i = fake_find(&f, VHOST_USER_SET_FEATURES);
	ck_assert_int_eq(i, 6);
	ck_assert_uint_eq(f.last[i].p.u64, VERSION_1 | EVENT_IDX |
						   BIT(VHOST_USER_F_PROTOCOL_FEATURES));
	/* Ring 0: NUM, BASE, ADDR, CALL (no fd: polled), KICK (fd), ENABLE. */
	ck_assert_uint_eq(f.req[7], VHOST_USER_SET_VRING_NUM);
	ck_assert_uint_eq(f.last[7].p.state.num, 64);
	ck_assert_uint_eq(f.req[8], VHOST_USER_SET_VRING_BASE);
	ck_assert_uint_eq(f.req[9], VHOST_USER_SET_VRING_ADDR);
	ck_assert_uint_eq(f.last[9].p.addr.desc_user_addr,
			  (uintptr_t)mem.base + 0x10000);
	ck_assert_uint_eq(f.last[9].p.addr.used_user_addr,
			  (uintptr_t)mem.base + 0x12000);
	ck_assert_uint_eq(f.req[10], VHOST_USER_SET_VRING_CALL);
	ck_assert_uint_eq(f.nfds[10], 0);
	ck_assert(f.last[10].p.u64 & VHOST_USER_VRING_NOFD_MASK);
	ck_assert_uint_eq(f.req[11], VHOST_USER_SET_VRING_KICK);
	ck_assert_uint_eq(f.nfds[11], 1);
	ck_assert_uint_eq(f.req[12], VHOST_USER_SET_VRING_ENABLE);
	ck_assert_uint_eq(f.last[12].p.state.num, 1);
	/* Ring 1 has a call fd. */
	ck_assert_uint_eq(f.req[16], VHOST_USER_SET_VRING_CALL);
	ck_assert_uint_eq(f.nfds[16], 1);
	ck_assert_uint_eq(f.last[16].p.u64, 1);
	ck_assert_uint_eq(fake_count(&f, VHOST_USER_GET_VRING_BASE), 2);
	/* Every request without a reply of its own asked for an ack. */
	for (unsigned int k = 0; k < f.n; k++)
		if (f.req[k] != VHOST_USER_GET_VRING_BASE &&
		    f.req[k] != VHOST_USER_GET_FEATURES &&
		    f.req[k] != VHOST_USER_GET_PROTOCOL_FEATURES &&
		    f.req[k] != VHOST_USER_SET_PROTOCOL_FEATURES &&
		    f.req[k] != VHOST_USER_GET_QUEUE_NUM)
			ck_assert_msg(f.need_reply[k], "request %u without ack", k);
	queues_teardown(q);
}
END_TEST

/* No protocol features at all: no acks, no MQ (the device's count),
 * SET_MEM_TABLE, rings enabled without SET_VRING_ENABLE. */
START_TEST(no_protocol_features)
{
	struct vu_fe_params p;
	struct vu_fe *fe;
	struct fake f;

	fake_start(&f, 0, MODE_OK, 0);
	p = params(&f);
	ck_assert_int_eq(vu_fe_open(&p, &fe), 0);
	ck_assert_uint_eq(vu_fe_queue_num(fe), 4);
	ck_assert_uint_eq(vu_fe_protocol_features(fe), 0);
	vu_fe_close(fe);
	fake_join(&f);
	ck_assert_int_eq(fake_find(&f, VHOST_USER_GET_QUEUE_NUM), -1);
	ck_assert_int_ge(fake_find(&f, VHOST_USER_SET_MEM_TABLE), 0);
	for (unsigned int k = 0; k < f.n; k++)
		ck_assert(!f.need_reply[k]);
}
END_TEST

START_TEST(configure_mem_slots)
{
	struct vu_fe_params p;
	struct vu_fe *fe;
	struct fake f;
	int i;

	fake_start(&f, PROTO_ALL | BIT(VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS),
		   MODE_OK, 0);
	p = params(&f);
	ck_assert_int_eq(vu_fe_open(&p, &fe), 0);
	vu_fe_close(fe);
	fake_join(&f);
	ck_assert_int_eq(fake_find(&f, VHOST_USER_SET_MEM_TABLE), -1);
	ck_assert_int_ge(fake_find(&f, VHOST_USER_GET_MAX_MEM_SLOTS), 0);
	i = fake_find(&f, VHOST_USER_ADD_MEM_REG);
	ck_assert_int_ge(i, 0);
	ck_assert_uint_eq(f.nfds[i], 1);
	ck_assert_uint_eq(f.last[i].p.mem_reg.region.memory_size, RAM);
}
END_TEST

static uint64_t ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)(t.tv_sec - t0->tv_sec) * 1000 +
	       (uint64_t)((t.tv_nsec - t0->tv_nsec) / 1000000);
}

/* A back end that never answers: a bounded wait, a clear error, and the
 * front end sends nothing more. */
START_TEST(silent_back_end_times_out)
{
	struct vu_fe_params p;
	struct virtio_queue q[2];
	struct vu_fe_stats st;
	struct timespec t0;
	struct vu_fe *fe;
	struct fake f;

	fake_start(&f, PROTO_ALL, MODE_SILENT, VHOST_USER_SET_VRING_ADDR);
	p = params(&f);
	ck_assert_int_eq(vu_fe_open(&p, &fe), 0);
	queues_setup(q);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(vu_fe_start(fe, VERSION_1, q, 2), -ETIMEDOUT);
	ck_assert_uint_lt(ms_since(&t0), 1500);
	ck_assert(vu_fe_broken(fe));
	vu_fe_get_stats(fe, &st);
	ck_assert_uint_eq(st.timeouts, 1);
	ck_assert_uint_eq(st.disconnects, 1);
	/* Broken: a stop and a second start send nothing, fail at once. */
	vu_fe_stop(fe);
	ck_assert_int_eq(vu_fe_start(fe, VERSION_1, q, 2), -EPIPE);
	vu_fe_close(fe);
	fake_join(&f);
	ck_assert_uint_eq(f.req[f.n - 1], VHOST_USER_SET_VRING_ADDR);
	queues_teardown(q);
}
END_TEST

START_TEST(silent_at_open)
{
	struct vu_fe_params p;
	struct timespec t0;
	struct vu_fe *fe;
	struct fake f;

	fake_start(&f, PROTO_ALL, MODE_SILENT, VHOST_USER_GET_FEATURES);
	p = params(&f);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(vu_fe_open(&p, &fe), -ETIMEDOUT);
	ck_assert_uint_lt(ms_since(&t0), 1500);
	ck_assert_ptr_null(fe);
	fake_join(&f);
}
END_TEST

/* A refused request (REPLY_ACK non-zero): the start fails, the rings
 * already handed over are stopped again. */
START_TEST(refused_request)
{
	struct vu_fe_params p;
	struct virtio_queue q[2];
	struct vu_fe *fe;
	struct fake f;

	fake_start(&f, PROTO_ALL, MODE_REFUSE, VHOST_USER_SET_VRING_ENABLE);
	p = params(&f);
	ck_assert_int_eq(vu_fe_open(&p, &fe), 0);
	queues_setup(q);
	ck_assert_int_eq(vu_fe_start(fe, VERSION_1, q, 2), -EPROTO);
	ck_assert(!vu_fe_broken(fe));
	vu_fe_close(fe);
	fake_join(&f);
	ck_assert_uint_eq(fake_count(&f, VHOST_USER_GET_VRING_BASE), 1);
	queues_teardown(q);
}
END_TEST

static int dead_calls;

static void on_dead(void *opaque)
{
	__atomic_fetch_add((int *)opaque, 1, __ATOMIC_SEQ_CST);
}

/* The back end closes while the device runs: the watch thread notices
 * (the device would set NEEDS_RESET), nothing blocks, the stop is quick. */
START_TEST(back_end_closes)
{
	struct vu_fe_params p;
	struct virtio_queue q[2];
	struct timespec t0;
	struct vu_fe *fe;
	struct fake f;

	dead_calls = 0;
	fake_start(&f, PROTO_ALL, MODE_CLOSE, VHOST_USER_GET_VRING_BASE);
	p = params(&f);
	ck_assert_int_eq(vu_fe_open(&p, &fe), 0);
	ck_assert_int_eq(vu_fe_watch(fe, on_dead, &dead_calls, NULL, NULL, NULL), 0);
	queues_setup(q);
	ck_assert_int_eq(vu_fe_start(fe, VERSION_1, q, 2), 0);
	ck_assert_int_eq(__atomic_load_n(&dead_calls, __ATOMIC_SEQ_CST), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	vu_fe_stop(fe); /* the back end closes at the first GET_VRING_BASE */
	ck_assert_uint_lt(ms_since(&t0), 250);
	ck_assert(vu_fe_broken(fe));
	for (int i = 0; i < 200 && !__atomic_load_n(&dead_calls, __ATOMIC_SEQ_CST); i++)
		usleep(5000);
	ck_assert_int_eq(__atomic_load_n(&dead_calls, __ATOMIC_SEQ_CST), 1);
	ck_assert_int_eq(vu_fe_start(fe, VERSION_1, q, 2), -EPIPE);
	vu_fe_close(fe);
	fake_join(&f);
	queues_teardown(q);
}
END_TEST

START_TEST(refusals)
{
	struct vu_fe_params p = { .path = "/nonexistent/vu.sock", .mem = &mem,
				  .features = VERSION_1, .num_queues = 2,
				  .timeout_ms = 100 };
	struct guest_mem anon = mem;
	struct vu_fe *fe;

	ck_assert_int_eq(vu_fe_open(&p, &fe), -ENOENT);
	anon.fd = -1; /* private RAM cannot be shared */
	p.mem = &anon;
	ck_assert_int_eq(vu_fe_open(&p, &fe), -EINVAL);
	p.mem = &mem;
	p.num_queues = 0;
	ck_assert_int_eq(vu_fe_open(&p, &fe), -EINVAL);
	vu_fe_close(NULL);
}
END_TEST

#define PROTO_NO_CONFIG (PROTO_ALL & ~BIT(VHOST_USER_PROTOCOL_F_CONFIG))

/* A virtio-fs config space (virtio 1.2, 5.11.4): a NUL-padded tag, then
 * num_request_queues (little-endian, as this host). */
static void fs_config(uint8_t *cfg, const char *tag, uint32_t nrq)
{
	memset(cfg, 0, 40);
	memcpy(cfg, tag, strlen(tag));
	memcpy(cfg + 36, &nrq, sizeof(nrq));
}

/* A device with a config space, a back end that offers CONFIG: acked,
 * read once with GET_CONFIG (offset 0, the device's size, no ack asked:
 * it has a reply of its own) right after SET_OWNER. */
START_TEST(config_read_when_offered)
{
	struct vu_fe_params p;
	const uint8_t *c;
	struct vu_fe *fe;
	struct fake f;
	uint32_t len;

	fake_start(&f, PROTO_ALL, MODE_OK, 0);
	fs_config(f.config, "hostshare", 7);
	p = params(&f);
	p.config_size = 40;
	ck_assert_int_eq(vu_fe_open(&p, &fe), 0);
	ck_assert_uint_eq(vu_fe_protocol_features(fe),
			  BIT(VHOST_USER_PROTOCOL_F_MQ) |
				  BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK) |
				  BIT(VHOST_USER_PROTOCOL_F_CONFIG));
	c = vu_fe_config(fe, &len);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(len, 40);
	ck_assert_mem_eq(c, f.config, 40);
	vu_fe_close(fe);
	fake_join(&f);
	ck_assert_uint_eq(f.last[2].p.u64, BIT(VHOST_USER_PROTOCOL_F_MQ) |
						   BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK) |
						   BIT(VHOST_USER_PROTOCOL_F_CONFIG));
	ck_assert_uint_eq(f.req[4], VHOST_USER_SET_OWNER);
	ck_assert_uint_eq(f.req[5], VHOST_USER_GET_CONFIG);
	ck_assert_uint_eq(f.last[5].hdr.size, VHOST_USER_CONFIG_HDR_SIZE + 40);
	ck_assert_uint_eq(f.last[5].p.config.offset, 0);
	ck_assert_uint_eq(f.last[5].p.config.size, 40);
	ck_assert(!f.need_reply[5]);
	ck_assert_uint_eq(f.req[6], VHOST_USER_SET_MEM_TABLE);
	ck_assert_uint_eq(fake_count(&f, VHOST_USER_GET_CONFIG), 1);
}
END_TEST

/* A back end without CONFIG: nothing to read, nothing asked. */
START_TEST(config_not_offered)
{
	struct vu_fe_params p;
	struct vu_fe *fe;
	struct fake f;
	uint32_t len = 99;

	fake_start(&f, PROTO_NO_CONFIG, MODE_OK, 0);
	p = params(&f);
	p.config_size = 40;
	ck_assert_int_eq(vu_fe_open(&p, &fe), 0);
	ck_assert_uint_eq(vu_fe_protocol_features(fe),
			  BIT(VHOST_USER_PROTOCOL_F_MQ) |
				  BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK));
	ck_assert_ptr_null(vu_fe_config(fe, &len));
	ck_assert_uint_eq(len, 0);
	vu_fe_close(fe);
	fake_join(&f);
	ck_assert_int_eq(fake_find(&f, VHOST_USER_GET_CONFIG), -1);
}
END_TEST

/* A GET_CONFIG reply of another size than asked: the set-up fails. */
START_TEST(config_wrong_reply)
{
	struct vu_fe_params p;
	struct vu_fe *fe;
	struct fake f;

	fake_start(&f, PROTO_ALL, MODE_OK, 0);
	f.config_skew = -4;
	p = params(&f);
	p.config_size = 40;
	ck_assert_int_eq(vu_fe_open(&p, &fe), -EPROTO);
	ck_assert_ptr_null(fe);
	fake_join(&f);
	ck_assert_uint_eq(f.req[f.n - 1], VHOST_USER_GET_CONFIG);
	/* Too large for the protocol: refused before anything is sent. */
	p.config_size = VHOST_USER_MAX_CONFIG_SIZE + 1;
	ck_assert_int_eq(vu_fe_open(&p, &fe), -EINVAL);
}
END_TEST

/*
 * virtio-fs with a back end that offers CONFIG (@proto) and answers
 * @be_tag / @be_nrq, serving 4 queues; the device's tag "share", 3
 * request queues of its own.  Returns virtio_fs_create()'s result; on
 * success the guest's config is in @cfg.
 */
static int fs_with_backend(uint64_t proto, const char *be_tag, uint32_t be_nrq,
			   uint8_t *cfg, unsigned int *nrq)
{
	struct virtio_fs_params fp = {
		.tag = "share", .mem = &mem, .num_queues = 4, .queue_size = 64,
		.timeout_ms = 300, .name = "fs test",
	};
	struct virtio_device vd;
	struct virtio_fs *fs;
	struct fake f;
	int ret;

	fake_start(&f, proto, MODE_OK, 0);
	f.queue_num = 4;
	fs_config(f.config, be_tag, be_nrq);
	fp.socket = f.path;
	ret = virtio_fs_create(&fp, &fs);
	if (!ret) {
		virtio_fs_virtio(fs, &vd);
		ck_assert_uint_eq(vd.ops->config_size, 40);
		vd.ops->config_read(vd.dev, 0, cfg, 40);
		*nrq = virtio_fs_request_queues(fs);
		virtio_fs_destroy(fs);
	} else {
		ck_assert_ptr_null(fs);
	}
	fake_join(&f);
	ck_assert_int_eq(fake_count(&f, VHOST_USER_GET_CONFIG),
			 !!(proto & BIT(VHOST_USER_PROTOCOL_F_CONFIG)));
	return ret;
}

START_TEST(fs_backend_tag)
{
	uint8_t cfg[40], want[40];
	unsigned int nrq;

	/* The same tag, one request queue: the guest is told one. */
	ck_assert_int_eq(fs_with_backend(PROTO_ALL, "share", 1, cfg, &nrq), 0);
	fs_config(want, "share", 1);
	ck_assert_mem_eq(cfg, want, 40);
	ck_assert_uint_eq(nrq, 1);
	/* Another tag, or one that only starts like it: refused. */
	ck_assert_int_eq(fs_with_backend(PROTO_ALL, "other", 1, cfg, &nrq), -EINVAL);
	ck_assert_int_eq(fs_with_backend(PROTO_ALL, "shared", 1, cfg, &nrq), -EINVAL);
	ck_assert_int_eq(fs_with_backend(PROTO_ALL, "shar", 1, cfg, &nrq), -EINVAL);
	/* No tag, more request queues than served (or 0): the device's. */
	fs_config(want, "share", 3);
	ck_assert_int_eq(fs_with_backend(PROTO_ALL, "", 9, cfg, &nrq), 0);
	ck_assert_mem_eq(cfg, want, 40);
	ck_assert_uint_eq(nrq, 3);
	ck_assert_int_eq(fs_with_backend(PROTO_ALL, "", 0, cfg, &nrq), 0);
	ck_assert_mem_eq(cfg, want, 40);
	/* No CONFIG offered (QEMU 7.2's virtiofsd): its would-be tag is
	 * never asked for. */
	ck_assert_int_eq(fs_with_backend(PROTO_NO_CONFIG, "other", 1, cfg, &nrq), 0);
	ck_assert_mem_eq(cfg, want, 40);
	ck_assert_uint_eq(nrq, 3);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vu_frontend");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, mem_setup, mem_teardown);
	tcase_add_test(tc, sequence_with_reply_ack);
	tcase_add_test(tc, no_protocol_features);
	tcase_add_test(tc, configure_mem_slots);
	tcase_add_test(tc, silent_back_end_times_out);
	tcase_add_test(tc, silent_at_open);
	tcase_add_test(tc, refused_request);
	tcase_add_test(tc, back_end_closes);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, config_read_when_offered);
	tcase_add_test(tc, config_not_offered);
	tcase_add_test(tc, config_wrong_reply);
	tcase_add_test(tc, fs_backend_tag);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
