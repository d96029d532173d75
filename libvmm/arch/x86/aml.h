/* SPDX-License-Identifier: MIT */
/*
 * ACPI Machine Language, written byte by byte: just enough of an encoder
 * for a small DSDT (names, integers, packages, scopes, devices), and the
 * resource descriptors that go in a _CRS buffer (ACPI 6.0).
 *
 * Output is what iasl emits for the same ASL, so a table survives an
 * `iasl -d` / recompile round trip byte for byte.
 */
#ifndef VMM_X86_AML_H
#define VMM_X86_AML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A byte buffer that remembers whether it ran out of room.  Set @buf and
 * @cap, zero the rest, e.g. `struct aml a = { .buf = b, .cap = sizeof(b) };`.
 * Writers never fail: once one does not fit, @overflow is set, the buffer
 * stops growing and every later writer does nothing, so a caller checks
 * @overflow once at the end.
 */
struct aml {
	uint8_t *buf;
	size_t len, cap;
	bool overflow;
};

/* Opcodes, for what aml_*() does not wrap (Name, Package, Scope). */
#define AML_ZERO_OP 0x00
#define AML_ONE_OP 0x01
#define AML_NAME_OP 0x08
#define AML_BYTE_PREFIX 0x0A
#define AML_WORD_PREFIX 0x0B
#define AML_DWORD_PREFIX 0x0C
#define AML_QWORD_PREFIX 0x0E
#define AML_SCOPE_OP 0x10
#define AML_BUFFER_OP 0x11
#define AML_PACKAGE_OP 0x12
#define AML_EXT_OP_PREFIX 0x5B
#define AML_DEVICE_OP 0x82		/* after AML_EXT_OP_PREFIX */

/* aml_put() - append @n raw bytes from @p */
void aml_put(struct aml *a, const void *p, size_t n);

/* aml_u8() - append the byte @v (no opcode prefix) */
void aml_u8(struct aml *a, uint8_t v);

/* aml_integer() - an Integer constant @v in its shortest encoding (Zero,
 * One, or a Byte/Word/DWord/QWord prefix), as iasl emits it */
void aml_integer(struct aml *a, uint64_t v);

/* aml_name() - a NameString: an optional root prefix '\' and one
 * 4-character segment, already padded with '_' ("\\_S5_", "PCI0") */
void aml_name(struct aml *a, const char *name);

/**
 * aml_pkg_open() - start a PkgLength-prefixed body
 * @a: buffer; write the opcode in front first
 *
 * Reserves the largest PkgLength encoding (4 bytes).  Pass the result to
 * aml_pkg_close() once the body is written; nested packages must close
 * innermost first.
 *
 * Returns: where the PkgLength goes in @a->buf.
 */
size_t aml_pkg_open(struct aml *a);

/**
 * aml_pkg_close() - end the body opened at @at
 * @a: buffer
 * @at: what aml_pkg_open() returned
 *
 * Writes the PkgLength in its shortest encoding and moves the body down
 * over the unused reserved bytes.  Does nothing once @a has overflowed.
 */
void aml_pkg_close(struct aml *a, size_t at);

/* aml_name_integer() - Name(@name, @v) */
void aml_name_integer(struct aml *a, const char *name, uint64_t v);

/* aml_name_eisaid() - Name(@name, EISAID(@id)), @id like "PNP0A08" (three
 * capital letters, four upper-case hex digits); always a DWord, so that
 * iasl and the guest's tools recognise it as an EISA id */
void aml_name_eisaid(struct aml *a, const char *name, const char *id);

/* aml_name_buffer() - Name(@name, Buffer() { @data's bytes }); an
 * overflow of @data carries over to @a */
void aml_name_buffer(struct aml *a, const char *name,
		     const struct aml *data);

/**
 * aml_device_open() - start Device(@name)
 * @a: buffer
 * @name: a NameString, as for aml_name()
 *
 * Returns: what to pass to aml_pkg_close() after the device's contents.
 */
size_t aml_device_open(struct aml *a, const char *name);

/*
 * Resource descriptors, the bytes of a ResourceTemplate: build them in a
 * struct aml of their own, end with aml_res_end() and wrap the result with
 * aml_name_buffer(a, "_CRS", &crs).
 */

/* Resource types of the address space descriptors */
#define AML_RES_TYPE_MEMORY 0
#define AML_RES_TYPE_IO 1
#define AML_RES_TYPE_BUS 2
/* I/O type-specific flags: EntireRange (ISA and non-ISA ports) */
#define AML_RES_IO_ENTIRE_RANGE 0x03

/* aml_res_io() - IO(Decode16, @port, @port, @align, @len): a fixed range */
void aml_res_io(struct aml *r, uint16_t port, uint8_t align, uint8_t len);

/* aml_res_irq_noflags() - IRQNoFlags() { @irq }, @irq below 16 */
void aml_res_irq_noflags(struct aml *r, uint8_t irq);

/**
 * aml_res_word() - a Word address space window the device produces
 * @r: buffer
 * @type: AML_RES_TYPE_*
 * @type_flags: type-specific flags (AML_RES_IO_ENTIRE_RANGE for I/O, 0 for
 *              a bus number range)
 * @min: first address
 * @len: window length, 1..0xFFFF; @min + @len - 1 must not pass 0xFFFF
 *
 * Like the DWord and QWord ones below, a fixed window: MinFixed, MaxFixed,
 * granularity 0 and max = @min + @len - 1, as the spec requires for a
 * fixed-size, fixed-location range.
 */
void aml_res_word(struct aml *r, uint8_t type, uint8_t type_flags,
		  uint16_t min, uint32_t len);

/* aml_res_dword_memory() - DWordMemory window [@min, @min + @len),
 * non-cacheable, read-write; must not wrap */
void aml_res_dword_memory(struct aml *r, uint32_t min, uint32_t len);

/* aml_res_qword_memory() - QWordMemory window [@min, @min + @len),
 * non-cacheable, read-write; must not wrap */
void aml_res_qword_memory(struct aml *r, uint64_t min, uint64_t len);

/* aml_res_end() - EndTag, checksum 0 ("the list is valid", as iasl writes) */
void aml_res_end(struct aml *r);

#endif
