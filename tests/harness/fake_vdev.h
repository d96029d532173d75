/* SPDX-License-Identifier: MIT */
/*
 * A virtio device model for transport tests: it accepts what it offers,
 * keeps a small configuration space in memory and records what the
 * transport asked of it (the features set, each start and stop, the queues
 * of the last start), so that a test checks the transport, not a device.
 * Shared by the unit tests over tests/harness/fake_vpci (check_virtio_pci,
 * check_abuse, check_bus_master, check_log_flood, check_msix_rewrite,
 * check_msix_zone).
 *
 * Like fake_vpci it does not depend on Check: a transport that breaks the
 * device contract (virtio.h) -- a configuration access out of range; a
 * start whose queues are not in index order, or with an enabled queue not
 * ready, without a kick eventfd or with EVENT_IDX other than negotiated --
 * makes it print what happened and abort(): a failed test in Check's usual
 * forked mode, the end of the whole runner with CK_FORK=no.
 */
#ifndef VMM_TESTS_HARNESS_FAKE_VDEV_H
#define VMM_TESTS_HARNESS_FAKE_VDEV_H

#include <stdbool.h>
#include <stdint.h>

#include "virtio/virtio.h"

#define FVD_CFG_SIZE 16

struct fvd {
	/* Set by the test (after fvd_init()). */
	uint64_t features;		/* offered */
	bool refuse;			/* set_features() fails: -EINVAL */
	int start_ret;			/* what start() returns */
	/* Optional: runs inside ops->stop(), the transport's lock held. */
	void (*on_stop)(struct fvd *d);
	void *opaque;			/* for on_stop */
	uint8_t cfg[FVD_CFG_SIZE];	/* the configuration space */

	/* Recorded. */
	unsigned int set_features_calls;
	uint64_t accepted;		/* the last features set */
	unsigned int start_calls, stop_calls;
	unsigned int started_enabled;	/* enabled queues at the last start */
	struct virtio_queue *queues;	/* the transport's, from the last start */
	unsigned int nr;
};

/* VIRTIO_ID_BLOCK, FVD_CFG_SIZE bytes of configuration; the device is the
 * struct fvd (vpci_params.dev). */
extern const struct virtio_device_ops fvd_ops;

/* Clear @d and offer @features (VIRTIO_F_VERSION_1 should be among them). */
void fvd_init(struct fvd *d, uint64_t features);

#endif
