/* SPDX-License-Identifier: MIT */
/*
 * Shared pieces of the libFuzzer targets (tests/fuzz/fuzz_*.c).
 *
 * Each target defines one entry point, fuzz_<name>(data, size), that never
 * keeps state from one input to the next except caches that do not change
 * behaviour (a memfd, a RAM buffer).  FUZZ_TARGET() turns it into
 * LLVMFuzzerTestOneInput() only when the file is built for libFuzzer
 * (VMM_FUZZ=ON defines VMM_FUZZ_LIBFUZZER); the regression unit test
 * (tests/unit/check_fuzz_regressions.c) links all the targets into one
 * program and calls the entry points directly, with any compiler.
 *
 * Inputs are decoded as action records, the shape of QEMU's
 * tests/qtest/fuzz/virtio_blk_fuzz.c: [action byte][fields...], every field
 * normalised into a useful range, and reading past the end yields zeroes
 * (so every byte string is a valid program).
 */
#ifndef VMM_TESTS_FUZZ_FUZZ_H
#define VMM_TESTS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int fuzz_virtqueue_blk(const uint8_t *data, size_t size);
int fuzz_virtio_pci(const uint8_t *data, size_t size);
int fuzz_bzimage(const uint8_t *data, size_t size);
int fuzz_pvh(const uint8_t *data, size_t size);
int fuzz_cli(const uint8_t *data, size_t size);
int fuzz_vhost_user(const uint8_t *data, size_t size);
int fuzz_vcon(const uint8_t *data, size_t size);
int fuzz_oci_proto(const uint8_t *data, size_t size);
int fuzz_oci_init_config(const uint8_t *data, size_t size);
int fuzz_oci_shim(const uint8_t *data, size_t size);
int fuzz_arm64_boot(const uint8_t *data, size_t size);
int fuzz_pc_ports(const uint8_t *data, size_t size);
int fuzz_pci_bus(const uint8_t *data, size_t size);
int fuzz_blk_uring(const uint8_t *data, size_t size);
int fuzz_vu_socket(const uint8_t *data, size_t size);
int fuzz_oci_config(const uint8_t *data, size_t size);
int fuzz_oci_state(const uint8_t *data, size_t size);
int fuzz_oci_cli(const uint8_t *data, size_t size);
int fuzz_blkd_cli(const uint8_t *data, size_t size);
int fuzz_net(const uint8_t *data, size_t size);
int fuzz_net_stream(const uint8_t *data, size_t size);
int fuzz_api_request(const uint8_t *data, size_t size);
int fuzz_vsock(const uint8_t *data, size_t size);
int fuzz_oci_exec(const uint8_t *data, size_t size);

#ifdef VMM_FUZZ_LIBFUZZER
#define FUZZ_TARGET(fn)                                                    \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);      \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)       \
	{                                                                  \
		return fn(data, size);                                     \
	}
#else
#define FUZZ_TARGET(fn)
#endif

/* Cursor over the input. */
struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

static inline size_t fi_left(const struct fuzz_in *in)
{
	return in->n;
}

/* Copy up to @len bytes out (zero-filled past the end); returns bytes read. */
static inline size_t fi_bytes(struct fuzz_in *in, void *dst, size_t len)
{
	size_t k = len < in->n ? len : in->n;

	if (k)
		memcpy(dst, in->p, k);
	if (k < len)
		memset((uint8_t *)dst + k, 0, len - k);
	in->p += k;
	in->n -= k;
	return k;
}

static inline uint8_t fi_u8(struct fuzz_in *in)
{
	uint8_t v;

	fi_bytes(in, &v, 1);
	return v;
}

static inline uint16_t fi_u16(struct fuzz_in *in)
{
	uint8_t b[2];

	fi_bytes(in, b, 2);
	return (uint16_t)(b[0] | b[1] << 8);
}

static inline uint32_t fi_u32(struct fuzz_in *in)
{
	uint8_t b[4];

	fi_bytes(in, b, 4);
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

static inline uint64_t fi_u64(struct fuzz_in *in)
{
	uint64_t lo = fi_u32(in);

	return lo | (uint64_t)fi_u32(in) << 32;
}

/* Silence library logging (a log line per input would dominate the run);
 * FUZZ_VERBOSE=1 in the environment keeps it.  Idempotent. */
void fuzz_quiet_logs(void);

/*
 * A memfd of @size bytes, created once per process and per size class,
 * zeroed (truncated and re-extended) on every call so each input starts
 * from the same image.  Returns the fd (owned by the cache) or -errno.
 */
int fuzz_image(uint64_t size);

/*
 * The lowest free file descriptor (opened and closed again): the same
 * before and after an input unless the input leaked one.  Take it after
 * the caches above have opened theirs.
 */
int fuzz_probe_fd(void);

/*
 * Split @data at NUL bytes into an argv in @strs (at most @max arguments
 * after @argv0, NULL-terminated; @strs holds @max + 2), the strings in
 * *@buf (free() it).  Returns argc.
 */
int fuzz_argv(const uint8_t *data, size_t size, const char *argv0, char **strs,
	      int max, char **buf);

/*
 * A directory of the process's own, $TMPDIR/fuzz-@name-XXXXXX (or under
 * /tmp), made at the first call (whose @name names it: later calls share
 * it) and removed with what is in it at exit.  Returns its path.
 */
const char *fuzz_tmpdir(const char *name);

#endif
