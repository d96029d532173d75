/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: minivmm-blkd's vhost-user message parser and back-end
 * state machine (devices/vhost-user/vu-msg.c, vu-backend.c, vu-mem.c), fed
 * message after message as a front end would send them, without a socket:
 * vu_msg_check() and, for what it accepts, vu_backend_handle() (replies
 * built, not sent); a refused message ends the "connection"
 * (vu_backend_disconnect()), as vu_backend_serve() does.  The device behind
 * it is a stub that checks, at every ring start, that the ring it is handed
 * lies in mapped guest RAM (it touches every ring byte) and that starts and
 * stops pair up.  After each input every file descriptor a message carried
 * must be closed again (the back end owns what it keeps until the
 * disconnect): the open-fd count is checked.
 *
 * Input: records until the input ends (at most 64):
 *   [op u8] request: op < 0x80 picks one of the requests the back end
 *           knows (op % their number), otherwise the next byte is the raw
 *           request number
 *   [flags u8] header flags XOR 1 (so 0 is a plain version-1 request;
 *           0x08 asks for REPLY_ACK)
 *   [size u16] payload size, modulo 300 (past the largest payload)
 *   [mode u8] bits 0-3: fds to attach (0..9; more than 8 is malformed),
 *           bit 4: make the payload useful -- memory tables get regions in
 *           the guest-RAM memfd at front-end addresses 0x10000000 + i MiB,
 *           ring addresses land in the first MiB of that range,
 *           GET/SET_INFLIGHT_FD get queue counts and sizes near the
 *           limits and a buffer size near what they need;
 *           bit 5 (SET_INFLIGHT_FD): fill the in-flight buffer with the
 *           next 256 input bytes, repeated (a previous back end's record,
 *           or garbage, for the recovery at the next ring start)
 *   [payload: size bytes]
 * Attached fds are dups of a 1 MiB guest-RAM memfd (SET_MEM_TABLE), of a
 * 64 KiB in-flight buffer memfd made for the input (SET_INFLIGHT_FD) or new
 * eventfds (anything else).  The stub device pops and pushes what the ring
 * offers at each start, so tracked rings resubmit and record.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "fuzz_vu_stub.h"
#include "vhost-user/vu-backend.h"

#define INFLIGHT_SIZE (64u << 10)

/* ---- harness --------------------------------------------------------------- */

/* The in-flight buffer a front end would keep: one per input. */
static int inflight_fd = -1;

static int inflight_buf(void)
{
	return fvu_memfd(&inflight_fd, "fuzz-vhost-inflight", INFLIGHT_SIZE);
}

static void inflight_fill(struct fuzz_in *in)
{
	uint8_t pat[256];
	uint8_t *p;

	fi_bytes(in, pat, sizeof(pat));
	p = mmap(NULL, INFLIGHT_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		 inflight_buf(), 0);
	if (p == MAP_FAILED)
		abort();
	for (unsigned int i = 0; i < INFLIGHT_SIZE; i += sizeof(pat))
		memcpy(p + i, pat, sizeof(pat));
	munmap(p, INFLIGHT_SIZE);
}

int fuzz_vhost_user(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct fvu_stub dev = { .cfg = { 1, 2, 3 } };
	struct vu_backend *b;
	int fds_before;

	fuzz_quiet_logs();
	fvu_ram_fd(); /* cached across inputs: before the count */
	fds_before = fvu_open_fds();
	b = fvu_backend(&dev);
	for (unsigned int rec = 0; rec < 64 && fi_left(&in); rec++) {
		struct vu_msg m;
		uint8_t op = fi_u8(&in), mode;
		const char *why;
		unsigned int nfds;

		memset(&m, 0, sizeof(m));
		m.hdr.request = op < 0x80 ? fvu_known[op % fvu_nknown] : fi_u8(&in);
		m.hdr.flags = fi_u8(&in) ^ VHOST_USER_VERSION;
		m.hdr.size = fi_u16(&in) % 300;
		mode = fi_u8(&in);
		nfds = MIN(mode & 0xfu, 9u);
		fi_bytes(&in, &m.p, MIN(m.hdr.size, (uint32_t)sizeof(m.p)));
		if (mode & 0x10)
			fvu_fixup(&m);
		/* What vu_msg_recv() would have received: at most 8 fds
		 * (more is a truncated control message, refused there). */
		if (nfds > VHOST_USER_MAX_REGIONS || m.hdr.size > sizeof(m.p)) {
			vu_backend_disconnect(b);
			continue;
		}
		if (m.hdr.request == VHOST_USER_SET_INFLIGHT_FD && (mode & 0x20))
			inflight_fill(&in);
		for (unsigned int i = 0; i < nfds; i++) {
			m.fds[i] = m.hdr.request == VHOST_USER_SET_MEM_TABLE ?
					   dup(fvu_ram_fd()) :
				   m.hdr.request == VHOST_USER_SET_INFLIGHT_FD ?
					   dup(inflight_buf()) :
					   eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			if (m.fds[i] < 0)
				abort();
			m.nfds++;
		}
		if (vu_msg_check(&m, &why)) {
			vu_msg_close_fds(&m);
			vu_backend_disconnect(b);
			continue;
		}
		if (vu_backend_handle(b, -1, &m))
			vu_backend_disconnect(b);
	}
	vu_backend_destroy(b);
	if (inflight_fd >= 0)
		close(inflight_fd);
	inflight_fd = -1;
	for (unsigned int i = 0; i < FVU_NQ; i++)
		if (dev.started[i])
			abort(); /* a ring left running after the disconnect */
	/* Everything the messages carried is closed again. */
	if (fds_before >= 0 && fvu_open_fds() != fds_before)
		abort();
	return 0;
}

FUZZ_TARGET(fuzz_vhost_user)
