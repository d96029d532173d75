/* SPDX-License-Identifier: MIT */
/* Null I/O engine (see blk-null.h). */
#include <errno.h>
#include <stdlib.h>

#include "blk/blk-null.h"
#include "blk/vblk.h"

/* Context: any I/O thread (no state). */
static int null_submit(struct blk_engine *eng, struct vblk_req *req)
{
	(void)eng;
	switch (req->type) {
	case VIRTIO_BLK_T_IN:
	case VIRTIO_BLK_T_OUT:
		vblk_req_complete(req, (int64_t)req->len);
		break;
	default: /* FLUSH, DISCARD, WRITE_ZEROES: nothing to do */
		vblk_req_complete(req, 0);
		break;
	}
	return BLK_SUBMIT_DONE;
}

static void null_destroy(struct blk_engine *eng)
{
	free(eng);
}

static const struct blk_engine_ops null_ops = {
	.name = "null",
	.submit = null_submit,
	.destroy = null_destroy,
};

int blk_null_engine_create(struct blk_engine **out)
{
	struct blk_engine *eng = malloc(sizeof(*eng));

	if (!eng)
		return -ENOMEM;
	eng->ops = &null_ops;
	*out = eng;
	return 0;
}
