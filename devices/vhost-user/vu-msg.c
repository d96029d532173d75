/* SPDX-License-Identifier: MIT */
/* vhost-user messages on the wire (see vu-msg.h). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "vhost-user/vu-msg.h"

static const char *const names[] = {
	[VHOST_USER_GET_FEATURES] = "GET_FEATURES",
	[VHOST_USER_SET_FEATURES] = "SET_FEATURES",
	[VHOST_USER_SET_OWNER] = "SET_OWNER",
	[VHOST_USER_RESET_OWNER] = "RESET_OWNER",
	[VHOST_USER_SET_MEM_TABLE] = "SET_MEM_TABLE",
	[VHOST_USER_SET_LOG_BASE] = "SET_LOG_BASE",
	[VHOST_USER_SET_LOG_FD] = "SET_LOG_FD",
	[VHOST_USER_SET_VRING_NUM] = "SET_VRING_NUM",
	[VHOST_USER_SET_VRING_ADDR] = "SET_VRING_ADDR",
	[VHOST_USER_SET_VRING_BASE] = "SET_VRING_BASE",
	[VHOST_USER_GET_VRING_BASE] = "GET_VRING_BASE",
	[VHOST_USER_SET_VRING_KICK] = "SET_VRING_KICK",
	[VHOST_USER_SET_VRING_CALL] = "SET_VRING_CALL",
	[VHOST_USER_SET_VRING_ERR] = "SET_VRING_ERR",
	[VHOST_USER_GET_PROTOCOL_FEATURES] = "GET_PROTOCOL_FEATURES",
	[VHOST_USER_SET_PROTOCOL_FEATURES] = "SET_PROTOCOL_FEATURES",
	[VHOST_USER_GET_QUEUE_NUM] = "GET_QUEUE_NUM",
	[VHOST_USER_SET_VRING_ENABLE] = "SET_VRING_ENABLE",
	[VHOST_USER_GET_CONFIG] = "GET_CONFIG",
	[VHOST_USER_SET_CONFIG] = "SET_CONFIG",
	[VHOST_USER_GET_INFLIGHT_FD] = "GET_INFLIGHT_FD",
	[VHOST_USER_SET_INFLIGHT_FD] = "SET_INFLIGHT_FD",
	[VHOST_USER_RESET_DEVICE] = "RESET_DEVICE",
	[VHOST_USER_GET_MAX_MEM_SLOTS] = "GET_MAX_MEM_SLOTS",
	[VHOST_USER_ADD_MEM_REG] = "ADD_MEM_REG",
};

const char *vu_request_name(uint32_t request, char *buf, unsigned int len)
{
	if (request < ARRAY_SIZE(names) && names[request])
		return names[request];
	snprintf(buf, len, "request %u", request);
	return buf;
}

void vu_msg_close_fds(struct vu_msg *m)
{
	for (unsigned int i = 0; i < m->nfds && i < VHOST_USER_MAX_REGIONS; i++)
		if (m->fds[i] >= 0)
			close(m->fds[i]);
	m->nfds = 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until @sock is readable, at most until @deadline_ms (CLOCK_MONOTONIC
 * milliseconds; -1: no limit); 0, -ESHUTDOWN (@stop_fd is), -ETIMEDOUT or
 * -errno. */
static int wait_readable(int sock, int stop_fd, int64_t deadline_ms)
{
	struct pollfd p[2] = { { .fd = sock, .events = POLLIN },
			       { .fd = stop_fd, .events = POLLIN } };

	for (;;) {
		int64_t left = deadline_ms < 0 ? -1 : deadline_ms - now_ms();
		int n;

		if (deadline_ms >= 0 && left <= 0)
			return -ETIMEDOUT;
		n = poll(p, stop_fd >= 0 ? 2 : 1, (int)MIN(left, (int64_t)INT32_MAX));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (stop_fd >= 0 && (p[1].revents & POLLIN))
			return -ESHUTDOWN;
		if (p[0].revents)
			return 0; /* data, or a hang-up the read will see */
	}
}

/* Read exactly @len bytes; -ECONNRESET at EOF (with @got set). */
static int read_full(int sock, int stop_fd, int64_t deadline_ms, void *buf,
		     size_t len, size_t *got)
{
	*got = 0;
	while (*got < len) {
		ssize_t n;
		int ret = wait_readable(sock, stop_fd, deadline_ms);

		if (ret)
			return ret;
		n = read(sock, (uint8_t *)buf + *got, len - *got);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		*got += (size_t)n;
	}
	return 0;
}

/* vu_msg_recv() and vu_msg_recv_timeout(): @deadline_ms -1 is none. */
static int recv_msg(int sock, int stop_fd, int64_t deadline_ms, struct vu_msg *m)
{
	char cbuf[CMSG_SPACE(VHOST_USER_MAX_REGIONS * sizeof(int))];
	struct iovec iov = { &m->hdr, sizeof(m->hdr) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	size_t got = 0;
	ssize_t n;
	int ret;

	memset(m, 0, sizeof(*m));
	ret = wait_readable(sock, stop_fd, deadline_ms);
	if (ret)
		return ret;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ECONNRESET;
	/* File descriptors come with the first byte of the message. */
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		unsigned int k;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (unsigned int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		/* The buffer holds at most VHOST_USER_MAX_REGIONS in all. */
		for (unsigned int i = 0; i < k && m->nfds < VHOST_USER_MAX_REGIONS; i++)
			memcpy(&m->fds[m->nfds++], CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(int));
	}
	if (mh.msg_flags & MSG_CTRUNC) {
		/* More fds than any message carries (the kernel closed the
		 * ones that did not fit). */
		ret = -EPROTO;
		goto err;
	}
	if ((size_t)n < sizeof(m->hdr)) {
		ret = read_full(sock, stop_fd, deadline_ms, (uint8_t *)&m->hdr + n,
				sizeof(m->hdr) - (size_t)n, &got);
		if (ret)
			goto err_mid;
	}
	/* Front-end controlled: bounded before anything is read. */
	if (m->hdr.size > sizeof(m->p)) {
		ret = -EPROTO;
		goto err;
	}
	ret = read_full(sock, stop_fd, deadline_ms, &m->p, m->hdr.size, &got);
	if (ret)
		goto err_mid;
	return 0;
err_mid:
	/* The connection ended inside a message: malformed, not a clean close. */
	if (ret == -ECONNRESET)
		ret = -EPROTO;
err:
	vu_msg_close_fds(m);
	return ret;
}

int vu_msg_recv(int sock, int stop_fd, struct vu_msg *m)
{
	return recv_msg(sock, stop_fd, -1, m);
}

int vu_msg_recv_timeout(int sock, int timeout_ms, struct vu_msg *m)
{
	return recv_msg(sock, -1, now_ms() + MAX(timeout_ms, 0), m);
}

/* Payload size of requests with a fixed one; -1: variable or unknown. */
static int fixed_size(uint32_t req)
{
	switch (req) {
	case VHOST_USER_SET_FEATURES:
	case VHOST_USER_SET_PROTOCOL_FEATURES:
	case VHOST_USER_SET_VRING_KICK:
	case VHOST_USER_SET_VRING_CALL:
	case VHOST_USER_SET_VRING_ERR:
		return sizeof(uint64_t);
	case VHOST_USER_SET_VRING_NUM:
	case VHOST_USER_SET_VRING_BASE:
	case VHOST_USER_GET_VRING_BASE:
	case VHOST_USER_SET_VRING_ENABLE:
		return sizeof(struct vhost_user_vring_state);
	case VHOST_USER_SET_VRING_ADDR:
		return sizeof(struct vhost_user_vring_addr);
	case VHOST_USER_GET_INFLIGHT_FD:
	case VHOST_USER_SET_INFLIGHT_FD:
		return sizeof(struct vhost_user_inflight);
	default:
		return -1;
	}
}

static int bad(const char **why, const char *reason)
{
	*why = reason;
	return -EPROTO;
}

int vu_msg_check(const struct vu_msg *m, const char **why)
{
	const uint32_t req = m->hdr.request, size = m->hdr.size;
	unsigned int want_fds = 0;
	int fixed;

	*why = NULL;
	if ((m->hdr.flags & VHOST_USER_VERSION_MASK) != VHOST_USER_VERSION)
		return bad(why, "unsupported protocol version");
	if (m->hdr.flags & VHOST_USER_REPLY)
		return bad(why, "a reply where a request was expected");
	if (size > sizeof(m->p) || m->nfds > VHOST_USER_MAX_REGIONS)
		return bad(why, "message too large");
	switch (req) {
	case VHOST_USER_GET_FEATURES:
	case VHOST_USER_GET_PROTOCOL_FEATURES:
	case VHOST_USER_GET_QUEUE_NUM:
	case VHOST_USER_SET_OWNER:
	case VHOST_USER_RESET_OWNER:
	case VHOST_USER_RESET_DEVICE:
		/* No payload; a u64 some front ends send is ignored. */
		if (size != 0 && size != sizeof(uint64_t))
			return bad(why, "payload size does not match the request");
		break;
	case VHOST_USER_SET_MEM_TABLE: {
		uint32_t n = m->p.memory.nregions;

		if (size < 8 || n == 0 || n > VHOST_USER_MAX_REGIONS ||
		    size != 8 + n * sizeof(struct vhost_user_mem_region))
			return bad(why, "memory table size does not match its region count");
		want_fds = n;
		break;
	}
	case VHOST_USER_GET_CONFIG:
	case VHOST_USER_SET_CONFIG:
		if (size < VHOST_USER_CONFIG_HDR_SIZE ||
		    m->p.config.size > VHOST_USER_MAX_CONFIG_SIZE ||
		    size != VHOST_USER_CONFIG_HDR_SIZE + m->p.config.size)
			return bad(why, "config size does not match its payload");
		break;
	default:
		fixed = fixed_size(req);
		if (fixed < 0)
			return bad(why, "unknown or unsupported request");
		if (size != (uint32_t)fixed)
			return bad(why, "payload size does not match the request");
		if ((req == VHOST_USER_SET_VRING_KICK ||
		     req == VHOST_USER_SET_VRING_CALL ||
		     req == VHOST_USER_SET_VRING_ERR) &&
		    !(m->p.u64 & VHOST_USER_VRING_NOFD_MASK))
			want_fds = 1;
		if (req == VHOST_USER_GET_INFLIGHT_FD ||
		    req == VHOST_USER_SET_INFLIGHT_FD) {
			const struct vhost_user_inflight *in = &m->p.inflight;

			/* Limits (queues, queue size) are the back end's;
			 * this is the shape: something to track, and for
			 * SET a buffer whose end is a file offset. */
			if (!in->num_queues || !in->queue_size)
				return bad(why, "in-flight buffer for no queue or queues of size 0");
			if (req == VHOST_USER_SET_INFLIGHT_FD &&
			    (!in->mmap_size || in->mmap_offset > UINT64_MAX - in->mmap_size ||
			     in->mmap_offset + in->mmap_size > (uint64_t)INT64_MAX))
				return bad(why, "in-flight buffer size 0 or offset + size overflows");
		}
		if (req == VHOST_USER_SET_INFLIGHT_FD)
			want_fds = 1;
		break;
	}
	if (m->nfds != want_fds)
		return bad(why, m->nfds < want_fds ? "file descriptor missing" :
						     "unexpected file descriptors");
	return 0;
}

int vu_msg_reply(int sock, const struct vu_msg *req, const void *payload,
		 uint32_t size, const int *fds, unsigned int nfds)
{
	return vu_msg_send(sock, req->hdr.request,
			   VHOST_USER_VERSION | VHOST_USER_REPLY, payload, size,
			   fds, nfds);
}

int vu_msg_send(int sock, uint32_t request, uint32_t flags, const void *payload,
		uint32_t size, const int *fds, unsigned int nfds)
{
	struct vhost_user_hdr h = { request, flags, size };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)payload, size } };
	char cbuf[CMSG_SPACE(VHOST_USER_MAX_REGIONS * sizeof(int))];
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = size ? 2 : 1 };
	ssize_t n;

	if (nfds > VHOST_USER_MAX_REGIONS)
		return -EINVAL;
	if (nfds) {
		struct cmsghdr *cm;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* A message is small: a short send means the peer stopped
	 * reading; it is going away. */
	return n == (ssize_t)(sizeof(h) + size) ? 0 : -EPIPE;
}
