/* SPDX-License-Identifier: MIT */
/*
 * The exec channel between `minivmm-oci exec`/`ps` (host) and the guest
 * init, over virtio-vsock (the VM's hybrid vsock socket STATE/vsock.sock,
 * guest port EXEC_PORT).  Shared by both sides (the init is built from
 * this file too, statically).
 *
 * One connection carries one request and its traffic.  Frames both ways:
 * a 4-byte little-endian length (of type + payload, 1..EXEC_MAX_FRAME), a
 * 1-byte type, the payload.  The first frame, host -> guest, is the
 * request: EXEC (u32 EXEC_VERSION, then the process as the CONFIG records
 * of proto.h that spec_encode_process() writes) or PS (u32 EXEC_VERSION).
 * Then, for EXEC:
 *   host -> guest: STDIN (data), STDIN_EOF, RESIZE (u16 rows, u16 cols),
 *                  SIGNAL (u32);
 *   guest -> host: STARTED (u32 guest pid) or ERROR (u8 status 1/126/127,
 *                  text; the connection ends), then STDOUT, STDERR (data)
 *                  and EXIT (u8 0 exited / 1 killed, u32 code or signal),
 *                  the last frame.
 * For PS the guest answers PS_LIST (text: one "PID PPID UID COMM" line per
 * process of the container's PID namespace, its own pids) and closes.
 *
 * Every length is checked against its type (exec_frame_check()): a frame
 * that breaks a rule ends the session with a clear error.  Data frames are
 * at most EXEC_MAX_DATA bytes; each side queues at most EXEC_OUTQ_CAP
 * bytes and stops reading its sources while the queue has no room for one
 * more data frame, so a peer that stops reading stops the producer (back
 * pressure), never grows a buffer.
 */
#ifndef MINIVMM_OCI_EXEC_PROTO_H
#define MINIVMM_OCI_EXEC_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EXEC_PORT 1024u	   /* AF_VSOCK port the guest init listens on */
#define EXEC_GUEST_CID 3u  /* the container VM's vsock address */
#define EXEC_VERSION 1u
#define EXEC_MAX_FRAME (64u << 10) /* type + payload */
#define EXEC_MAX_DATA (32u << 10)  /* bytes of one STDIN/STDOUT/STDERR */
#define EXEC_HDR 5u		   /* length + type */
/* Two full frames: a data frame always fits once one was written out. */
#define EXEC_OUTQ_CAP (2u * (EXEC_MAX_FRAME + EXEC_HDR))

enum exec_msg {
	/* host -> guest */
	EXEC_MSG_EXEC = 1,
	EXEC_MSG_PS = 2,
	EXEC_MSG_STDIN = 3,
	EXEC_MSG_STDIN_EOF = 4,
	EXEC_MSG_RESIZE = 5,
	EXEC_MSG_SIGNAL = 6,
	/* guest -> host */
	EXEC_MSG_STARTED = 16,
	EXEC_MSG_ERROR = 17,
	EXEC_MSG_STDOUT = 18,
	EXEC_MSG_STDERR = 19,
	EXEC_MSG_EXIT = 20,
	EXEC_MSG_PS_LIST = 21,
};

/* Which end reads: the frames each may receive differ. */
enum exec_side { EXEC_SIDE_GUEST, EXEC_SIDE_HOST };

/*
 * Is a frame of @type with @len payload bytes one @side may receive?
 * 0, or -1 with the reason in @why (static text).
 */
int exec_frame_check(enum exec_side side, uint8_t type, uint32_t len,
		     const char **why);

/* Frames from a byte stream, in a fixed buffer (no allocation). */
struct exec_reader {
	enum exec_side side;
	size_t have, off;   /* bytes in buf; start of the unread ones */
	const char *err;    /* set once malformed: the stream is done */
	uint8_t buf[EXEC_MAX_FRAME + EXEC_HDR];
};
void exec_reader_init(struct exec_reader *r, enum exec_side side);
/* Where the next read() goes: *@len bytes of room (0: take a frame
 * first). */
uint8_t *exec_reader_space(struct exec_reader *r, size_t *len);
void exec_reader_commit(struct exec_reader *r, size_t n);
/*
 * The next whole frame: 1 (*@type, *@p, *@len valid until the next call),
 * 0 (more bytes needed), -1 (malformed: r->err says why; stays so).
 */
int exec_reader_next(struct exec_reader *r, uint8_t *type, const uint8_t **p,
		     uint32_t *len);

/* A bounded output queue of frames. */
struct exec_outq {
	size_t off, len;
	uint8_t buf[EXEC_OUTQ_CAP];
};
/* Room for a frame of @n payload bytes? */
bool exec_outq_fits(const struct exec_outq *q, size_t n);
/* Queue a frame: 0, or -ENOSPC (no room: nothing queued), -EINVAL (@n
 * over EXEC_MAX_FRAME - 1). */
int exec_outq_put(struct exec_outq *q, uint8_t type, const void *p, size_t n);
/* Write what is queued to the non-blocking @fd (send(MSG_NOSIGNAL |
 * MSG_DONTWAIT) for a socket, else write()): 0 (all or some written, or
 * EAGAIN), -errno. */
int exec_outq_flush(struct exec_outq *q, int fd);
static inline bool exec_outq_empty(const struct exec_outq *q)
{
	return q->len == q->off;
}

/* EXIT's payload from a wait status, and back to the shell's convention
 * (code, or 128 + signal). */
void exec_exit_encode(int wstatus, uint8_t out[5]);
int exec_exit_code(const uint8_t p[5]);

#endif
