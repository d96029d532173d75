/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the exec channel's decoders (examples/oci/exec-proto.c) as
 * the guest init's exec server runs them (guest-init/exec.c) on what the
 * host sends over vsock: the byte stream cut into frames by an
 * EXEC_SIDE_GUEST exec_reader fed in chunks of pseudo-random sizes, each
 * EXEC request's process records decoded by init_config_parse() (the
 * init's decoder), and the same stream read by the host's reader too
 * (EXEC_SIDE_HOST: what a guest could send the host).
 *
 * Input: [chunking u8] then the stream.  Checked beyond the sanitizers
 * (abort()):
 *  - every frame returned passes exec_frame_check() for its side and lies
 *    inside the reader's buffer;
 *  - the frames are the same however the stream is chunked (compared with
 *    a one-shot feed), and once malformed a reader stays so and takes no
 *    more bytes;
 *  - a decoded request has args and cwd, and its tables stay in bounds.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "exec-proto.h"
#include "fuzz.h"

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_oci_exec: %s\n", what);
	abort();
}

#define MAX_FRAMES 4096

struct run {
	unsigned int n;
	uint32_t sum[MAX_FRAMES]; /* type + len + a byte hash, per frame */
	int broken;
};

static uint32_t frame_sum(uint8_t type, const uint8_t *p, uint32_t len)
{
	uint32_t h = 2166136261u ^ type ^ (len << 8);

	for (uint32_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static void check_request(const uint8_t *p, uint32_t len)
{
	static struct init_config c;
	int ret;

	if (len < 4)
		fail("an EXEC frame under 4 bytes");
	memset(&c, 0, sizeof(c));
	ret = init_config_parse(&c, p + 4, len - 4);
	if (ret && ret != -EINVAL)
		fail("request neither decoded nor malformed");
	if (!ret && (!c.nargs || !c.cwd || c.args[c.nargs] || c.nargs > INIT_MAX_ARGS ||
		     c.nenv > INIT_MAX_ARGS || c.ngroups > INIT_MAX_GROUPS))
		fail("a decoded request out of shape");
	init_config_free(&c);
}

/* Feed @data in chunks (@chunk_bits 0: all at once) into @r. */
static void run(struct exec_reader *r, enum exec_side side, const uint8_t *data,
		size_t size, unsigned int chunk_bits, struct run *out)
{
	uint32_t rng = 0x9e3779b9u ^ chunk_bits;
	size_t off = 0;

	exec_reader_init(r, side);
	out->n = 0;
	out->broken = 0;
	while (off < size) {
		size_t room, take;
		uint8_t *d = exec_reader_space(r, &room);
		const uint8_t *p;
		uint32_t len;
		uint8_t type;
		int got;

		if (!room) {
			if (!r->err)
				fail("a reader without room that is not broken");
			return;
		}
		rng = rng * 1103515245u + 12345u;
		take = chunk_bits ? 1 + (rng >> 8) % (1u << chunk_bits) : size - off;
		if (take > size - off)
			take = size - off;
		if (take > room)
			take = room;
		memcpy(d, data + off, take);
		exec_reader_commit(r, take);
		off += take;
		while ((got = exec_reader_next(r, &type, &p, &len)) > 0) {
			const char *why;

			if (exec_frame_check(side, type, len, &why))
				fail("a frame its own check refuses");
			if (p < r->buf || p + len > r->buf + sizeof(r->buf))
				fail("a frame outside the buffer");
			if (side == EXEC_SIDE_GUEST && type == EXEC_MSG_EXEC)
				check_request(p, len);
			if (out->n < MAX_FRAMES)
				out->sum[out->n++] = frame_sum(type, p, len);
		}
		if (got < 0) {
			out->broken = 1;
			if (!r->err || exec_reader_next(r, &type, &p, &len) != -1)
				fail("a broken reader that recovered");
			return;
		}
	}
}

int fuzz_oci_exec(const uint8_t *data, size_t size)
{
	static struct exec_reader r;
	static struct run a, b;
	unsigned int bits;

	if (size < 1)
		return 0;
	bits = (data[0] & 15) % 13;
	for (int side = EXEC_SIDE_GUEST; side <= EXEC_SIDE_HOST; side++) {
		run(&r, (enum exec_side)side, data + 1, size - 1, 0, &a);
		run(&r, (enum exec_side)side, data + 1, size - 1, bits ? bits : 1, &b);
		if (a.n != b.n || a.broken != b.broken ||
		    memcmp(a.sum, b.sum, a.n * sizeof(a.sum[0])))
			fail("chunking changed the frames");
	}
	return 0;
}

FUZZ_TARGET(fuzz_oci_exec)
