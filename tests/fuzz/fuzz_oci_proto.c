/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: what minivmm-oci parses from the guest (examples/oci/
 * proto.c) -- the byte stream the guest init writes on the minivmm.ctl
 * port, cut into frames by proto_reader_feed() as shim.c's read_guest()
 * does, the ERROR text made printable by proto_text(), and the CONFIG
 * record decoder proto_next() (shared with the guest init) run over every
 * frame's payload.  A guest-controlled length must never make either side
 * read or write past a buffer (ASan), allocate without bound, or loop.
 *
 * Input: [chunking u8] then the stream.  The stream is fed in chunks of
 * pseudo-random sizes from 1 up to 2^(chunking & 15 % 13) bytes (one
 * read() of the port returns any amount), the way read_guest() does:
 * feed, handle a complete frame, feed the rest.
 *
 * Checked beyond the sanitizers (abort()):
 *  - the frames and the error point are the same as a one-shot parse of
 *    the whole stream gives (a frame header split anywhere changes
 *    nothing), and each frame re-encodes (proto_frame) to its bytes;
 *  - once broken (a length of 0 or over PROTO_MAX_FRAME) the reader stays
 *    broken and consumes everything;
 *  - proto_text() writes a NUL-terminated prefix of the payload of at most
 *    PROTO_MAX_TEXT bytes into any buffer size, without control bytes;
 *  - proto_next() yields records inside the payload and ends.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "proto.h"

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_oci_proto: %s\n", what);
	abort();
}

static void check_text(const uint8_t *p, uint32_t len, size_t cap)
{
	char buf[PROTO_MAX_TEXT + 16];
	size_t n;

	memset(buf, 0x7e, sizeof(buf));
	proto_text(buf, cap, p, len);
	n = strnlen(buf, cap);
	if (n >= cap || n > PROTO_MAX_TEXT || n > len)
		fail("proto_text: unterminated or too long");
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (c < 0x20 || c == 0x7f)
			fail("proto_text: a control byte got through");
		if (c != p[i] && c != ' ')
			fail("proto_text: not the payload's text");
	}
	if (cap < sizeof(buf) && buf[cap] != 0x7e)
		fail("proto_text: wrote past its buffer");
}

static void check_records(const uint8_t *p, uint32_t len)
{
	struct proto_iter it = { p, p + len };
	const uint8_t *v;
	uint32_t vlen, n = 0;
	uint16_t type;
	int r;

	while ((r = proto_next(&it, &type, &v, &vlen)) > 0) {
		if (v < p + 6 || vlen > len || v + vlen > p + len)
			fail("proto_next: record outside the payload");
		if (++n > len / 6)
			fail("proto_next: more records than fit");
	}
	if (r < 0 && it.p == it.end)
		fail("proto_next: malformed at the end");
}

/* The reference: parse the whole stream at once. */
struct ref {
	const uint8_t *d;
	size_t n, pos;
	bool broken;
};

/* Next whole frame: 1 (start of its bytes, its length), 0 at the end. */
static int ref_next(struct ref *r, size_t *start, uint32_t *need)
{
	if (r->broken || r->n - r->pos < 4)
		return 0;
	*need = proto_get_u32(r->d + r->pos);
	if (!*need || *need > PROTO_MAX_FRAME) {
		r->broken = true;
		return 0;
	}
	if (r->n - r->pos - 4 < *need)
		return 0;
	*start = r->pos;
	r->pos += 4 + *need;
	return 1;
}

int fuzz_oci_proto(const uint8_t *data, size_t size)
{
	struct proto_reader rd = { 0 };
	struct ref ref;
	uint32_t rnd, maxc;
	size_t off;
	uint8_t chunking = 0;

	if (size) {
		chunking = data[0];
		data++;
		size--;
	}
	ref = (struct ref){ .d = data, .n = size };
	maxc = 1u << ((chunking & 15) % 13);
	rnd = 0x9e3779b9u ^ chunking;
	off = 0;
	while (off < size) {
		size_t chunk, coff = 0;

		rnd = rnd * 1103515245u + 12345u;
		chunk = 1 + (rnd >> 8) % maxc;
		if (chunk > size - off)
			chunk = size - off;
		/* One read(): feed until the chunk is used up. */
		while (coff < chunk) {
			const uint8_t *payload = NULL;
			uint32_t len = 0, need = 0;
			uint8_t type = 0;
			size_t used, start = 0;
			int got;

			used = proto_reader_feed(&rd, data + off + coff, chunk - coff,
						 &got, &type, &payload, &len);
			if (used == 0 || used > chunk - coff)
				fail("proto_reader_feed: no progress or overrun");
			coff += used;
			if (rd.err) {
				if (coff != chunk)
					fail("a broken reader left bytes");
				(void)ref_next(&ref, &start, &need);
				if (!ref.broken)
					fail("broken where the stream is not");
				break;
			}
			if (!got)
				continue;
			if (ref_next(&ref, &start, &need) != 1 || need != len + 1 ||
			    data[start + 4] != type ||
			    (len && memcmp(payload, data + start + 5, len)))
				fail("a frame the one-shot parse does not see");
			{
				struct proto_buf b = { 0 };

				proto_frame(&b, type, payload, len);
				if (b.err || b.len != 4 + need ||
				    memcmp(b.data, data + start, b.len))
					fail("a frame that does not re-encode to its bytes");
				proto_buf_free(&b);
			}
			if (type == PROTO_MSG_ERROR) {
				check_text(payload, len, PROTO_MAX_TEXT + 16);
				check_text(payload, len, 1 + rnd % 16);
			}
			check_records(payload, len);
		}
		off += chunk;
		if (rd.err) {
			/* Broken stays broken, whatever follows. */
			int got;
			uint8_t type;
			const uint8_t *payload;
			uint32_t len;

			if (off < size &&
			    (proto_reader_feed(&rd, data + off, size - off, &got, &type,
					       &payload, &len) != size - off || got))
				fail("a broken reader came back");
			break;
		}
	}
	if (!rd.err) {
		size_t start;
		uint32_t need;

		if (ref_next(&ref, &start, &need) || ref.broken)
			fail("the one-shot parse sees more than the reader");
	}
	proto_reader_free(&rd);
	return 0;
}

FUZZ_TARGET(fuzz_oci_proto)
