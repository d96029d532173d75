/* SPDX-License-Identifier: MIT */
/*
 * Copies between a descriptor chain's segments (struct iovec, as
 * virtq_pop() maps them) and a flat buffer, at a byte offset into the
 * chain.  A device reads a request header spread over any number of
 * segments and writes a status or a reply the same way: the driver may
 * split a buffer anywhere (the virtio spec lets it), so no device may
 * assume a header is in one segment.
 *
 * Context: any thread; the segments point into guest RAM the caller has
 * validated (virtq_pop() did).
 */
#ifndef VMM_DEVICES_VIRTIO_VQ_IOV_H
#define VMM_DEVICES_VIRTIO_VQ_IOV_H

#include <stddef.h>
#include <sys/uio.h>

/* Copy up to @len bytes from byte @skip of @iov (@n segments) into @dst;
 * returns the bytes copied (fewer when the segments end first). */
size_t vq_iov_to_buf(const struct iovec *iov, unsigned int n, size_t skip,
		     void *dst, size_t len);

/* Copy up to @len bytes of @src, or zeros when @src is NULL, to byte @skip
 * of @iov; returns the bytes written (fewer when the segments end first). */
size_t vq_iov_from_buf(const struct iovec *iov, unsigned int n, size_t skip,
		       const void *src, size_t len);

/* The bytes [@skip, @skip + @len) of @iov as at most @max segments in
 * @out (pointing into the same memory); returns their number, fewer than
 * needed when @max or @iov run out. */
unsigned int vq_iov_slice(const struct iovec *iov, unsigned int n, size_t skip,
			  size_t len, struct iovec *out, unsigned int max);

/* The total length of @iov's @n segments. */
size_t vq_iov_len(const struct iovec *iov, unsigned int n);

#endif
