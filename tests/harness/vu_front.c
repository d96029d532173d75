/* SPDX-License-Identifier: MIT */
/* A minimal vhost-user front end (see vu_front.h). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "vu_front.h"
#include "test_clock.h"

#define BIT(n) (1ull << (n))

int vuf_connect(struct vuf *f, const char *path, unsigned int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	double end = test_now_ms_f() + timeout_ms;

	memset(f, 0, sizeof(*f));
	f->sock = -1;
	f->queue_num = 1;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -EINVAL;
	strcpy(sa.sun_path, path);
	for (;;) {
		int e;

		f->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (f->sock < 0)
			return -errno;
		if (!connect(f->sock, (struct sockaddr *)&sa, sizeof(sa)))
			return 0;
		e = errno;
		close(f->sock);
		f->sock = -1;
		/* Not there yet, or busy with the previous front end. */
		if (test_now_ms_f() > end)
			return -e;
		usleep(20000);
	}
}

void vuf_close(struct vuf *f)
{
	if (f->sock >= 0)
		close(f->sock);
	f->sock = -1;
}

int vuf_send(struct vuf *f, uint32_t req, uint32_t flags, const void *payload,
	     uint32_t size, const int *fds, unsigned int nfds)
{
	struct vhost_user_hdr h = { req, flags, size };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)payload, size } };
	char cbuf[CMSG_SPACE(16 * sizeof(int))];
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = size ? 2 : 1 };
	ssize_t n;

	if (nfds > 16)
		return -EINVAL;
	if (nfds) {
		struct cmsghdr *cm;

		memset(cbuf, 0, sizeof(cbuf));
		m.msg_control = cbuf;
		m.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	do
		n = sendmsg(f->sock, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == (ssize_t)(sizeof(h) + size) ? 0 : -EIO;
}

static int read_full(struct vuf *f, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(f->sock, (char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -ECONNRESET;
		done += (size_t)n;
	}
	return 0;
}

/* The rest of a reply to @req whose header is @h: checked, the payload
 * read and up to @max bytes of it copied out.  Its size, or -errno. */
static int recv_payload(struct vuf *f, const struct vhost_user_hdr *h,
			uint32_t req, void *payload, uint32_t max)
{
	uint8_t buf[512];
	int ret;

	if (h->request != req || !(h->flags & VHOST_USER_REPLY) || h->size > sizeof(buf)) {
		fprintf(stderr, "vu_front: bad reply %u (flags %#x size %u) to %u\n",
			h->request, h->flags, h->size, req);
		return -EPROTO;
	}
	if ((ret = read_full(f, buf, h->size)))
		return ret;
	memcpy(payload, buf, h->size < max ? h->size : max);
	return (int)h->size;
}

int vuf_recv(struct vuf *f, uint32_t req, void *payload, uint32_t max)
{
	struct vhost_user_hdr h;
	int ret;

	if ((ret = read_full(f, &h, sizeof(h))))
		return ret;
	return recv_payload(f, &h, req, payload, max);
}

int vuf_recv_fd(struct vuf *f, uint32_t req, void *payload, uint32_t max, int *fd)
{
	struct vhost_user_hdr h;
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &h, sizeof(h) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	ssize_t n;
	int ret;

	*fd = -1;
	do
		n = recvmsg(f->sock, &m, MSG_CMSG_CLOEXEC | MSG_WAITALL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ECONNRESET;
	for (cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(fd, CMSG_DATA(cm), sizeof(int));
	if ((size_t)n < sizeof(h) &&
	    (ret = read_full(f, (uint8_t *)&h + n, sizeof(h) - (size_t)n)))
		return ret;
	return recv_payload(f, &h, req, payload, max);
}

int vuf_get_u64(struct vuf *f, uint32_t req, uint64_t *v)
{
	int ret = vuf_send(f, req, VHOST_USER_VERSION, NULL, 0, NULL, 0);

	if (ret)
		return ret;
	ret = vuf_recv(f, req, v, sizeof(*v));
	return ret < 0 ? ret : ret == 8 ? 0 : -EPROTO;
}

int vuf_set(struct vuf *f, uint32_t req, const void *payload, uint32_t size,
	    const int *fds, unsigned int nfds)
{
	uint64_t ack = 0;
	int ret = vuf_send(f, req,
			   VHOST_USER_VERSION | (f->reply_ack ? VHOST_USER_NEED_REPLY : 0),
			   payload, size, fds, nfds);

	if (ret || !f->reply_ack)
		return ret;
	ret = vuf_recv(f, req, &ack, sizeof(ack));
	if (ret < 0)
		return ret;
	if (ack) {
		fprintf(stderr, "vu_front: request %u refused (%llu)\n", req,
			(unsigned long long)ack);
		return -EIO;
	}
	return 0;
}

bool vuf_peer_closed(struct vuf *f, unsigned int timeout_ms)
{
	double end = test_now_ms_f() + timeout_ms;

	for (;;) {
		struct pollfd p = { .fd = f->sock, .events = POLLIN };
		char junk[256];
		double left = end - test_now_ms_f();
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left + 1) <= 0)
			return false;
		n = read(f->sock, junk, sizeof(junk));
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return true;
		if (n < 0 && errno != EINTR && errno != EAGAIN)
			return true;
	}
}

int vuf_init(struct vuf *f, uint64_t want_protocol)
{
	int ret;

	if ((ret = vuf_send(f, VHOST_USER_SET_OWNER, VHOST_USER_VERSION, NULL, 0,
			    NULL, 0)) ||
	    (ret = vuf_get_u64(f, VHOST_USER_GET_FEATURES, &f->features)))
		return ret;
	if (f->features & BIT(VHOST_USER_F_PROTOCOL_FEATURES)) {
		uint64_t pf;

		if ((ret = vuf_get_u64(f, VHOST_USER_GET_PROTOCOL_FEATURES, &pf)))
			return ret;
		pf &= want_protocol;
		if ((ret = vuf_send(f, VHOST_USER_SET_PROTOCOL_FEATURES,
				    VHOST_USER_VERSION, &pf, 8, NULL, 0)))
			return ret;
		f->protocol = pf;
		f->reply_ack = pf & BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK);
	}
	if (f->protocol & BIT(VHOST_USER_PROTOCOL_F_MQ))
		return vuf_get_u64(f, VHOST_USER_GET_QUEUE_NUM, &f->queue_num);
	return 0;
}

int vuf_get_config(struct vuf *f, uint32_t off, uint32_t size, void *buf)
{
	struct vhost_user_config c = { .offset = off, .size = size };
	int ret;

	if (size > VHOST_USER_MAX_CONFIG_SIZE)
		return -EINVAL;
	ret = vuf_send(f, VHOST_USER_GET_CONFIG, VHOST_USER_VERSION, &c,
		       VHOST_USER_CONFIG_HDR_SIZE + size, NULL, 0);
	if (ret)
		return ret;
	ret = vuf_recv(f, VHOST_USER_GET_CONFIG, &c, sizeof(c));
	if (ret < 0)
		return ret;
	if ((uint32_t)ret != VHOST_USER_CONFIG_HDR_SIZE + size || c.size != size)
		return -EPROTO;
	memcpy(buf, c.region, size);
	return 0;
}

int vuf_set_features(struct vuf *f, uint64_t features)
{
	features |= f->features & BIT(VHOST_USER_F_PROTOCOL_FEATURES);
	return vuf_set(f, VHOST_USER_SET_FEATURES, &features, 8, NULL, 0);
}

int vuf_set_mem_one(struct vuf *f, int fd, void *base, uint64_t size)
{
	struct vhost_user_memory m = {
		.nregions = 1,
		.regions[0] = { 0, size, (uint64_t)(uintptr_t)base, 0 },
	};

	return vuf_set(f, VHOST_USER_SET_MEM_TABLE, &m,
		       8 + sizeof(struct vhost_user_mem_region), &fd, 1);
}

int vuf_ring_setup(struct vuf *f, unsigned int idx, unsigned int num,
		   unsigned int base, uint64_t desc, uint64_t avail, uint64_t used,
		   int kick_fd, int call_fd)
{
	struct vhost_user_vring_state s_num = { idx, num }, s_base = { idx, base };
	struct vhost_user_vring_addr a = { idx, 0, desc, used, avail, 0 };
	uint64_t k = idx, c = idx | (call_fd < 0 ? VHOST_USER_VRING_NOFD_MASK : 0);
	int ret;

	if ((ret = vuf_set(f, VHOST_USER_SET_VRING_NUM, &s_num, 8, NULL, 0)) ||
	    (ret = vuf_set(f, VHOST_USER_SET_VRING_BASE, &s_base, 8, NULL, 0)) ||
	    (ret = vuf_set(f, VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL, 0)) ||
	    (ret = vuf_set(f, VHOST_USER_SET_VRING_KICK, &k, 8, &kick_fd, 1)))
		return ret;
	return vuf_set(f, VHOST_USER_SET_VRING_CALL, &c, 8, &call_fd,
		       call_fd < 0 ? 0 : 1);
}

int vuf_ring_enable(struct vuf *f, unsigned int idx, bool on)
{
	struct vhost_user_vring_state s = { idx, on };

	if (!(f->features & BIT(VHOST_USER_F_PROTOCOL_FEATURES)))
		return 0;
	return vuf_set(f, VHOST_USER_SET_VRING_ENABLE, &s, sizeof(s), NULL, 0);
}

int vuf_get_vring_base(struct vuf *f, unsigned int idx, uint32_t *base)
{
	struct vhost_user_vring_state s = { idx, 0 };
	int ret = vuf_send(f, VHOST_USER_GET_VRING_BASE, VHOST_USER_VERSION, &s,
			   sizeof(s), NULL, 0);

	if (ret)
		return ret;
	ret = vuf_recv(f, VHOST_USER_GET_VRING_BASE, &s, sizeof(s));
	if (ret < 0)
		return ret;
	if (ret != (int)sizeof(s) || s.index != idx)
		return -EPROTO;
	*base = s.num;
	return 0;
}
