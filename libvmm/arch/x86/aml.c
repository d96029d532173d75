/* SPDX-License-Identifier: MIT */
/*
 * AML encoder and resource descriptors (see aml.h).  Everything is written
 * a byte at a time, little-endian, so the host's byte order and struct
 * layout do not matter here.
 */
#include <string.h>

#include "x86/aml.h"

/* A PkgLength is encoded in at most 4 bytes (28 bits). */
#define AML_PKG_MAX_BYTES 4

void aml_put(struct aml *a, const void *p, size_t n)
{
	if (a->overflow || n > a->cap - a->len) {
		a->overflow = true;
		return;
	}
	memcpy(a->buf + a->len, p, n);
	a->len += n;
}

void aml_u8(struct aml *a, uint8_t v)
{
	aml_put(a, &v, 1);
}

static void aml_u16(struct aml *a, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)v, (uint8_t)(v >> 8) };

	aml_put(a, b, sizeof(b));
}

static void aml_u32(struct aml *a, uint32_t v)
{
	aml_u16(a, (uint16_t)v);
	aml_u16(a, (uint16_t)(v >> 16));
}

static void aml_u64(struct aml *a, uint64_t v)
{
	aml_u32(a, (uint32_t)v);
	aml_u32(a, (uint32_t)(v >> 32));
}

void aml_integer(struct aml *a, uint64_t v)
{
	if (v == 0) {
		aml_u8(a, AML_ZERO_OP);
	} else if (v == 1) {
		aml_u8(a, AML_ONE_OP);
	} else if (v <= UINT8_MAX) {
		aml_u8(a, AML_BYTE_PREFIX);
		aml_u8(a, (uint8_t)v);
	} else if (v <= UINT16_MAX) {
		aml_u8(a, AML_WORD_PREFIX);
		aml_u16(a, (uint16_t)v);
	} else if (v <= UINT32_MAX) {
		aml_u8(a, AML_DWORD_PREFIX);
		aml_u32(a, (uint32_t)v);
	} else {
		aml_u8(a, AML_QWORD_PREFIX);
		aml_u64(a, v);
	}
}

void aml_name(struct aml *a, const char *name)
{
	aml_put(a, name, strlen(name));
}

/*
 * PkgLength: the length of what follows it, itself included.  Its size
 * depends on that length, which is only known once the body is built, so
 * the opener reserves the largest encoding and the closer writes the real
 * one and moves the body down over the unused bytes.  Nested packages
 * close innermost first, so an outer body shrinks along with its inner
 * ones before its own length is taken.
 */
size_t aml_pkg_open(struct aml *a)
{
	static const uint8_t reserve[AML_PKG_MAX_BYTES];
	size_t at = a->len;

	aml_put(a, reserve, sizeof(reserve));
	return at;
}

void aml_pkg_close(struct aml *a, size_t at)
{
	uint8_t enc[AML_PKG_MAX_BYTES];
	size_t body, total, n;

	if (a->overflow)
		return;
	body = a->len - at - AML_PKG_MAX_BYTES;
	/* 1 byte holds 6 bits; each further byte adds 8 to a 4-bit nibble. */
	if (body + 1 < (1u << 6))
		n = 1;
	else if (body + 2 < (1u << 12))
		n = 2;
	else if (body + 3 < (1u << 20))
		n = 3;
	else
		n = 4;			/* < 2^28: the buffer is far smaller */
	total = body + n;
	if (n == 1) {
		enc[0] = (uint8_t)total;
	} else {
		enc[0] = (uint8_t)((n - 1) << 6 | (total & 0x0F));
		for (size_t i = 1; i < n; i++)
			enc[i] = (uint8_t)(total >> (4 + 8 * (i - 1)));
	}
	memmove(a->buf + at + n, a->buf + at + AML_PKG_MAX_BYTES, body);
	memcpy(a->buf + at, enc, n);
	a->len -= AML_PKG_MAX_BYTES - n;
}

static unsigned int hex_digit(char c)
{
	return c <= '9' ? (unsigned int)(c - '0') : (unsigned int)(c - 'A' + 10);
}

/*
 * EISAID("PNP0A08") as iasl compresses it: three letters of 5 bits each
 * ('A' = 1) in a big-endian 16-bit vendor word, then the four hex digits
 * as a big-endian 16-bit product word; the four bytes in that order are
 * the AML DWord, so the integer holds them little-endian.
 */
static uint32_t eisaid(const char *id)
{
	uint16_t vendor = (uint16_t)((id[0] - '@') << 10 | (id[1] - '@') << 5 |
				     (id[2] - '@'));
	uint16_t product = (uint16_t)(hex_digit(id[3]) << 12 |
				      hex_digit(id[4]) << 8 |
				      hex_digit(id[5]) << 4 | hex_digit(id[6]));

	return (uint32_t)(vendor >> 8) | (uint32_t)(vendor & 0xFF) << 8 |
	       (uint32_t)(product >> 8) << 16 | (uint32_t)(product & 0xFF) << 24;
}

void aml_name_integer(struct aml *a, const char *name, uint64_t v)
{
	aml_u8(a, AML_NAME_OP);
	aml_name(a, name);
	aml_integer(a, v);
}

void aml_name_eisaid(struct aml *a, const char *name, const char *id)
{
	aml_u8(a, AML_NAME_OP);
	aml_name(a, name);
	aml_u8(a, AML_DWORD_PREFIX);
	aml_u32(a, eisaid(id));
}

void aml_name_buffer(struct aml *a, const char *name,
		     const struct aml *data)
{
	size_t pkg;

	aml_u8(a, AML_NAME_OP);
	aml_name(a, name);
	aml_u8(a, AML_BUFFER_OP);
	pkg = aml_pkg_open(a);
	aml_integer(a, data->len);
	aml_put(a, data->buf, data->len);
	aml_pkg_close(a, pkg);
	a->overflow |= data->overflow;
}

size_t aml_device_open(struct aml *a, const char *name)
{
	size_t pkg;

	aml_u8(a, AML_EXT_OP_PREFIX);
	aml_u8(a, AML_DEVICE_OP);
	pkg = aml_pkg_open(a);
	aml_name(a, name);
	return pkg;
}

/* ---- Resource descriptors (the bytes of a ResourceTemplate) ---- */

#define RES_IO 0x47			/* small: I/O port, 7 bytes */
#define RES_IRQ_NOFLAGS 0x22		/* small: IRQ, 2 bytes (no flags) */
#define RES_END_TAG 0x79		/* small: end, 1 byte (checksum) */
#define RES_DWORD_SPACE 0x87		/* large: DWord address space */
#define RES_WORD_SPACE 0x88		/* large: Word address space */
#define RES_QWORD_SPACE 0x8A		/* large: QWord address space */

#define RES_IO_DECODE16 1
/* General flags: ResourceProducer (bit 0 clear), PosDecode (bit 1
 * clear), MinFixed (bit 2), MaxFixed (bit 3). */
#define RES_PRODUCER_FIXED 0x0C
#define RES_MEM_NONCACHEABLE_RW 0x01

/* Bytes after the 3-byte large header: the 3 flag bytes + 5 values. */
#define RES_WORD_LEN (3 + 5 * 2)
#define RES_DWORD_LEN (3 + 5 * 4)
#define RES_QWORD_LEN (3 + 5 * 8)

void aml_res_io(struct aml *r, uint16_t port, uint8_t align, uint8_t len)
{
	aml_u8(r, RES_IO);
	aml_u8(r, RES_IO_DECODE16);
	aml_u16(r, port);		/* min */
	aml_u16(r, port);		/* max: fixed */
	aml_u8(r, align);
	aml_u8(r, len);
}

void aml_res_irq_noflags(struct aml *r, uint8_t irq)
{
	aml_u8(r, RES_IRQ_NOFLAGS);
	aml_u16(r, (uint16_t)(1u << irq));
}

void aml_res_word(struct aml *r, uint8_t type, uint8_t type_flags,
		  uint16_t min, uint32_t len)
{
	aml_u8(r, RES_WORD_SPACE);
	aml_u16(r, RES_WORD_LEN);
	aml_u8(r, type);
	aml_u8(r, RES_PRODUCER_FIXED);
	aml_u8(r, type_flags);
	aml_u16(r, 0);			/* granularity */
	aml_u16(r, min);
	aml_u16(r, (uint16_t)(min + len - 1));
	aml_u16(r, 0);			/* translation */
	aml_u16(r, (uint16_t)len);
}

void aml_res_dword_memory(struct aml *r, uint32_t min, uint32_t len)
{
	aml_u8(r, RES_DWORD_SPACE);
	aml_u16(r, RES_DWORD_LEN);
	aml_u8(r, AML_RES_TYPE_MEMORY);
	aml_u8(r, RES_PRODUCER_FIXED);
	aml_u8(r, RES_MEM_NONCACHEABLE_RW);
	aml_u32(r, 0);
	aml_u32(r, min);
	aml_u32(r, min + len - 1);
	aml_u32(r, 0);
	aml_u32(r, len);
}

void aml_res_qword_memory(struct aml *r, uint64_t min, uint64_t len)
{
	aml_u8(r, RES_QWORD_SPACE);
	aml_u16(r, RES_QWORD_LEN);
	aml_u8(r, AML_RES_TYPE_MEMORY);
	aml_u8(r, RES_PRODUCER_FIXED);
	aml_u8(r, RES_MEM_NONCACHEABLE_RW);
	aml_u64(r, 0);
	aml_u64(r, min);
	aml_u64(r, min + len - 1);
	aml_u64(r, 0);
	aml_u64(r, len);
}

void aml_res_end(struct aml *r)
{
	aml_u8(r, RES_END_TAG);
	aml_u8(r, 0);
}
