/* SPDX-License-Identifier: MIT */
/*
 * vhost-user messages on the wire: receiving one (header, file descriptors,
 * payload), checking that it is well formed for its request, and sending a
 * reply (back end) or a request (front end, vu-frontend.c).  Everything in a message is controlled by the front end; nothing
 * here trusts it: the payload size is bounded before it is read, each
 * request's payload size and fd count are checked (vu_msg_check()), and
 * any file descriptor of a message that is refused is closed.
 */
#ifndef VMM_DEVICES_VHOST_USER_VU_MSG_H
#define VMM_DEVICES_VHOST_USER_VU_MSG_H

#include <stdint.h>

#include "util/compiler.h"
#include "vhost-user/vhost-user.h"

struct vu_msg {
	struct vhost_user_hdr hdr;
	union vhost_user_payload p;
	int fds[VHOST_USER_MAX_REGIONS];
	unsigned int nfds;
};

/*
 * vu_msg_recv - read one message from @sock.  Waits for it with poll(),
 * also on @stop_fd (-1: none): readable @stop_fd ends the wait.
 * Returns 0 (@m filled, not yet checked: see vu_msg_check()), -ECONNRESET
 * (the front end closed the connection cleanly, between messages),
 * -ESHUTDOWN (@stop_fd became readable), -EPROTO (malformed: more fds than
 * a message may carry, a payload larger than any request's, a connection
 * closed in mid-message; the fds received are closed), or another -errno.
 */
int vu_msg_recv(int sock, int stop_fd, struct vu_msg *m) __must_check;

/*
 * vu_msg_recv_timeout - vu_msg_recv() for a front end waiting for a reply:
 * no stop fd, but the whole message must arrive within @timeout_ms
 * (-ETIMEDOUT otherwise: a back end that never answers, or trickles).
 */
int vu_msg_recv_timeout(int sock, int timeout_ms, struct vu_msg *m)
	__must_check;

/*
 * vu_msg_check - is @m a well-formed request: version 1, not a reply, a
 * request this back end knows, the payload size that request has (for
 * SET_MEM_TABLE and GET/SET_CONFIG, the size its own fields announce), as
 * many fds as it carries and no more; GET/SET_INFLIGHT_FD for at least one
 * queue of at least one entry, SET's buffer not empty and its offset +
 * size a file offset.  Pure (no I/O): the fuzz target
 * tests/fuzz/fuzz_vhost_user.c drives it.  Returns 0 or -EPROTO with a
 * reason in @why.
 */
int vu_msg_check(const struct vu_msg *m, const char **why);

/* Close every fd @m still holds (nfds becomes 0). */
void vu_msg_close_fds(struct vu_msg *m);

/*
 * vu_msg_reply - send the reply to @req: flags VERSION | REPLY, the same
 * request, @size bytes of @payload and @nfds fds (SCM_RIGHTS).  Never
 * raises SIGPIPE.  Returns 0 or -errno.
 */
int vu_msg_reply(int sock, const struct vu_msg *req, const void *payload,
		 uint32_t size, const int *fds, unsigned int nfds);

/*
 * vu_msg_send - send one message: header (@request, @flags, @size), @size
 * bytes of @payload and @nfds fds (SCM_RIGHTS).  Never raises SIGPIPE.
 * Returns 0, -EPIPE (a short send: the peer stopped reading), -EINVAL
 * (too many fds) or -errno (-EAGAIN on a non-blocking socket that is full).
 */
int vu_msg_send(int sock, uint32_t request, uint32_t flags, const void *payload,
		uint32_t size, const int *fds, unsigned int nfds);

/* Name of a request, for log messages ("SET_MEM_TABLE", or "request 99"
 * written into @buf). */
const char *vu_request_name(uint32_t request, char *buf, unsigned int len);

#endif
