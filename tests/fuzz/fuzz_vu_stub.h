/* SPDX-License-Identifier: MIT */
/*
 * What the vhost-user fuzz targets share (fuzz_vhost_user.c: messages
 * handed to the back end directly; fuzz_vu_socket.c: the same through a
 * real socket): a stub device behind the back end that checks its
 * contract, the guest RAM memfd the front end "shares", and the rewriting
 * of a message's payload into a useful one (memory regions in that memfd,
 * ring addresses inside them, in-flight sizes near the limits).
 */
#ifndef VMM_TESTS_FUZZ_FUZZ_VU_STUB_H
#define VMM_TESTS_FUZZ_FUZZ_VU_STUB_H

#include <stdbool.h>
#include <stdint.h>

#include "vhost-user/vu-backend.h"

#define FVU_RAM_SIZE (1u << 20)
#define FVU_NQ 2
#define FVU_UADDR_BASE 0x10000000ull

/* The requests the back end knows, for inputs that pick one by index. */
extern const uint32_t fvu_known[];
extern const unsigned int fvu_nknown;

/* The stub device: 60 bytes of config space, rings started and stopped
 * one at a time (it aborts on a start of a started ring, a stop of a
 * stopped one, a ring not in mapped RAM, whole-device start/stop). */
struct fvu_stub {
	uint8_t cfg[60];
	bool started[FVU_NQ];
};
extern const struct virtio_device_ops fvu_stub_ops;

/* The guest-RAM memfd (FVU_RAM_SIZE bytes, created once per process). */
int fvu_ram_fd(void);
/* A memfd of @size bytes in *@fd, created at the first call (-1 there). */
int fvu_memfd(int *fd, const char *name, uint32_t size);
/* The back end the targets fuzz, in front of @dev (FVU_NQ rings of up to
 * 256 entries); aborts if it cannot be made. */
struct vu_backend *fvu_backend(struct fvu_stub *dev);
/* Make @m's payload useful (see fuzz_vhost_user.c, mode bit 4). */
void fvu_fixup(struct vu_msg *m);
/* Open file descriptors of the process (-1 if /proc is missing). */
int fvu_open_fds(void);

#endif
