/* SPDX-License-Identifier: MIT */
/* Copies between a chain's segments and a flat buffer (vq-iov.h). */
#include "virtio/vq-iov.h"

#include <stdint.h>
#include <string.h>

/* One walk for the three copies: out of the segments into @out, into them
 * from @in, or (both NULL) zeros into them. */
static size_t walk(const struct iovec *iov, unsigned int n, size_t skip,
		   void *out, const void *in, size_t len)
{
	size_t done = 0;

	for (unsigned int i = 0; i < n && done < len; i++) {
		uint8_t *seg = iov[i].iov_base;
		size_t c = iov[i].iov_len;

		if (skip >= c) {
			skip -= c;
			continue;
		}
		c -= skip;
		if (c > len - done)
			c = len - done;
		if (out)
			memcpy((uint8_t *)out + done, seg + skip, c);
		else if (in)
			memcpy(seg + skip, (const uint8_t *)in + done, c);
		else
			memset(seg + skip, 0, c);
		done += c;
		skip = 0;
	}
	return done;
}

size_t vq_iov_to_buf(const struct iovec *iov, unsigned int n, size_t skip,
		     void *dst, size_t len)
{
	return walk(iov, n, skip, dst, NULL, len);
}

size_t vq_iov_from_buf(const struct iovec *iov, unsigned int n, size_t skip,
		       const void *src, size_t len)
{
	return walk(iov, n, skip, NULL, src, len);
}

unsigned int vq_iov_slice(const struct iovec *iov, unsigned int n, size_t skip,
			  size_t len, struct iovec *out, unsigned int max)
{
	unsigned int k = 0;

	for (unsigned int i = 0; i < n && len && k < max; i++) {
		size_t c = iov[i].iov_len;

		if (skip >= c) {
			skip -= c;
			continue;
		}
		c -= skip;
		if (c > len)
			c = len;
		out[k].iov_base = (uint8_t *)iov[i].iov_base + skip;
		out[k++].iov_len = c;
		len -= c;
		skip = 0;
	}
	return k;
}

size_t vq_iov_len(const struct iovec *iov, unsigned int n)
{
	size_t t = 0;

	for (unsigned int i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}
