/* SPDX-License-Identifier: MIT */
/* Host <-> guest-init protocol (see proto.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

void proto_buf_free(struct proto_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

void proto_put(struct proto_buf *b, const void *p, size_t n)
{
	if (b->err)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		uint8_t *d;

		while (cap < b->len + n)
			cap *= 2;
		d = realloc(b->data, cap);
		if (!d) {
			b->err = -ENOMEM;
			return;
		}
		b->data = d;
		b->cap = cap;
	}
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void put_le(struct proto_buf *b, uint64_t v, unsigned int bytes)
{
	uint8_t o[8];

	for (unsigned int i = 0; i < bytes; i++)
		o[i] = (uint8_t)(v >> (8 * i));
	proto_put(b, o, bytes);
}

void proto_rec(struct proto_buf *b, uint16_t type, const void *v, size_t n)
{
	put_le(b, type, 2);
	put_le(b, n, 4);
	proto_put(b, v, n);
}

void proto_rec_str(struct proto_buf *b, uint16_t type, const char *s)
{
	proto_rec(b, type, s, strlen(s));
}

void proto_rec_u32(struct proto_buf *b, uint16_t type, uint32_t v)
{
	uint8_t o[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
			 (uint8_t)(v >> 24) };

	proto_rec(b, type, o, 4);
}

void proto_rec_u8(struct proto_buf *b, uint16_t type, uint8_t v)
{
	proto_rec(b, type, &v, 1);
}

void proto_rec_u64(struct proto_buf *b, uint16_t type, uint64_t v)
{
	put_le(b, type, 2);
	put_le(b, 8, 4);
	put_le(b, v, 8);
}

void proto_rec_rlimit(struct proto_buf *b, uint32_t resource, uint64_t soft,
		      uint64_t hard)
{
	put_le(b, PROTO_REC_RLIMIT, 2);
	put_le(b, 20, 4);
	put_le(b, resource, 4);
	put_le(b, soft, 8);
	put_le(b, hard, 8);
}

void proto_rec_device(struct proto_buf *b, char type, const uint32_t n[5],
		      const char *path, size_t len)
{
	put_le(b, PROTO_REC_DEVICE, 2);
	put_le(b, 21 + len, 4);
	proto_put(b, &type, 1);
	for (int k = 0; k < 5; k++)
		put_le(b, n[k], 4);
	proto_put(b, path, len);
}

void proto_rec_strs(struct proto_buf *b, uint16_t type, const char *const *s,
		    unsigned int n)
{
	size_t len = 0;

	for (unsigned int i = 0; i < n; i++)
		len += strlen(s[i]) + (i + 1 < n);
	put_le(b, type, 2);
	put_le(b, len, 4);
	for (unsigned int i = 0; i < n; i++)
		proto_put(b, s[i], strlen(s[i]) + (i + 1 < n));
}

void proto_frame(struct proto_buf *b, uint8_t type, const void *payload,
		 size_t n)
{
	put_le(b, n + 1, 4);
	proto_put(b, &type, 1);
	proto_put(b, payload, n);
}

int proto_next(struct proto_iter *it, uint16_t *type, const uint8_t **v,
	       uint32_t *len)
{
	if (it->p == it->end)
		return 0;
	if (it->end - it->p < 6)
		return -1;
	*type = (uint16_t)(it->p[0] | it->p[1] << 8);
	*len = proto_get_u32(it->p + 2);
	if ((size_t)(it->end - it->p - 6) < *len)
		return -1;
	*v = it->p + 6;
	it->p += 6 + *len;
	return 1;
}

size_t proto_reader_feed(struct proto_reader *r, const uint8_t *p, size_t n,
			 int *got, uint8_t *type, const uint8_t **payload,
			 uint32_t *len)
{
	size_t used = 0;

	*got = 0;
	if (r->err)
		return n;
	while (used < n) {
		if (r->hdr_have < 4) {
			r->hdr[r->hdr_have++] = p[used++];
			if (r->hdr_have < 4)
				continue;
			r->need = proto_get_u32(r->hdr);
			if (!r->need || r->need > PROTO_MAX_FRAME) {
				r->err = -EPROTO;
				return n;
			}
			free(r->frame);
			r->frame = malloc(r->need);
			if (!r->frame) {
				r->err = -ENOMEM;
				return n;
			}
			r->have = 0;
			continue;
		}
		size_t take = r->need - r->have;

		if (take > n - used)
			take = n - used;
		memcpy(r->frame + r->have, p + used, take);
		r->have += take;
		used += take;
		if (r->have == r->need) {
			r->hdr_have = 0;
			*got = 1;
			*type = r->frame[0];
			*payload = r->frame + 1;
			*len = r->need - 1;
			return used;
		}
	}
	return used;
}

void proto_reader_free(struct proto_reader *r)
{
	free(r->frame);
	r->frame = NULL;
}

void proto_text(char *dst, size_t cap, const uint8_t *p, uint32_t len)
{
	size_t n = 0;

	if (len > PROTO_MAX_TEXT)
		len = PROTO_MAX_TEXT;
	/* Every byte read is inside the payload: @len is the frame's. */
	for (; n + 1 < cap && n < len && p[n]; n++)
		dst[n] = p[n] < 0x20 || p[n] == 0x7f ? ' ' : (char)p[n];
	dst[n] = '\0';
}
