/* SPDX-License-Identifier: MIT */
/*
 * Host-side I/O faults under a virtio-blk disk, KVM-free: the simulated
 * driver (fake_guest), the request layer and the synchronous engine, with
 * a fault-injecting engine wrapped around it.
 *
 *  - EIO / ENOSPC on chosen requests: each such request completes with
 *    VIRTIO_BLK_S_IOERR and a used entry (the guest sees an error, never a
 *    hang), is counted in io_errors, the queue keeps working, and the log
 *    carries one line per burst plus one "N more I/O errors" summary;
 *  - a real ENOSPC from a tiny tmpfs (skipped when mounting is not
 *    permitted);
 *  - an image truncated after open: reads past the new end are zeros,
 *    writes there extend the file again.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/virtio_blk.h>
#include <linux/virtio_ring.h>

#include "blk/blk-engine.h"
#include "blk/vblk.h"
#include "fake_guest.h"
#include "log_capture.h"
#include "vmm/vmm.h"

#define RAM_SIZE (16u << 20)
#define IMG_SIZE (1u << 20)
#define QSIZE 128
#define FEATS (1ull << VIRTIO_RING_F_EVENT_IDX)
#define BAD_LO 256u /* sectors [BAD_LO, BAD_HI) fail */
#define BAD_HI 512u

/* ---- log capture ---------------------------------------------------- */

/* ---- fault-injecting engine ------------------------------------------- */

struct fault_engine {
	struct blk_engine base;
	struct blk_engine *inner;
	int err;	     /* errno to inject; 0 = none */
	uint32_t type;	     /* request type to fail (UINT32_MAX: any) */
	unsigned int failed; /* injected so far */
};

static bool hits_bad_range(const struct vblk_req *req)
{
	uint64_t end = req->sector + (req->len >> 9);

	if (req->type == VIRTIO_BLK_T_FLUSH)
		return true;
	return req->sector < BAD_HI && end > BAD_LO;
}

static int fault_submit(struct blk_engine *e, struct vblk_req *req)
{
	struct fault_engine *f = (struct fault_engine *)e;

	if (f->err && (f->type == UINT32_MAX || f->type == req->type) &&
	    hits_bad_range(req)) {
		f->failed++;
		vblk_req_complete(req, -f->err);
		return BLK_SUBMIT_DONE;
	}
	return blk_engine_submit(f->inner, req);
}

static const struct blk_engine_ops fault_ops = { .name = "fault", .submit = fault_submit };

/* ---- fixture -------------------------------------------------------- */

static struct fake_guest g;
static struct fg_vq fvq;
static struct virtq vq;
static struct vblk *blk;
static struct fault_engine feng = { .base = { &fault_ops }, .type = UINT32_MAX };
static int img = -1;

static void start_disk(int fd, const char *path)
{
	struct vblk_options o = {
		.fd = fd, .path = path, .num_queues = 1, .queue_size = QSIZE,
	};

	ck_assert_int_eq(vblk_open(&o, &blk), 0);
	ck_assert_int_eq(vblk_set_driver_features(blk, vblk_device_features(blk)), 0);
	ck_assert_int_eq(blk_sync_engine_create(&feng.inner), 0);
	ck_assert_int_eq(fg_init(&g, RAM_SIZE), 0);
	ck_assert_int_eq(fg_vq_init(&g, &fvq, QSIZE, FEATS), 0);
	ck_assert_int_eq(fg_vq_attach(&fvq, &vq), 0);
}

static void setup(void)
{
	feng.err = 0;
	feng.type = UINT32_MAX;
	feng.failed = 0;
	ck_assert_int_eq(log_capture_start(), 0);
	img = fg_tmp_image(IMG_SIZE);
	ck_assert_int_ge(img, 0);
	start_disk(img, NULL);
}

static void teardown(void)
{
	if (!feng.inner)
		return; /* already torn down by the test */
	fg_vq_destroy(&fvq);
	fg_destroy(&g);
	blk_engine_destroy(feng.inner);
	feng.inner = NULL;
	vblk_close(blk);
	blk = NULL;
	if (img >= 0)
		close(img);
	img = -1;
	vmm_set_log(NULL, NULL, VMM_LOG_WARN);
}

static struct fg_buf gbuf(uint32_t len, bool writable, uint8_t fill)
{
	struct fg_buf b = { fg_alloc(&g, len, 512), len, writable };

	ck_assert_uint_ne(b.gpa, 0);
	memset(fg_ptr(&g, b.gpa, len), fill, len);
	return b;
}

/*
 * Add @n requests of @type (4 KiB each for IN/OUT, consecutive from
 * @sector), publish them in one batch, let the device serve them and check
 * that every one came back with @status.  Returns how many used entries
 * came back (always @n: a missing one would be a guest hang).
 */
static unsigned int batch(uint32_t type, uint64_t sector, unsigned int n,
			  uint8_t status, uint8_t fill)
{
	struct fg_blk_req r[32];
	bool notify = false;
	unsigned int got = 0;
	uint32_t id, len;

	ck_assert_uint_le(n, 32);
	for (unsigned int i = 0; i < n; i++) {
		struct fg_buf d = gbuf(4096, type == VIRTIO_BLK_T_IN, fill);

		ck_assert_int_eq(fg_blk_add(&fvq, type, sector + i * 8ull, &d,
					    type == VIRTIO_BLK_T_FLUSH ? 0 : 1,
					    false, &r[i]), 0);
	}
	fg_vq_publish(&fvq);
	ck_assert_int_eq(vblk_process_queue(blk, 0, &vq, &feng.base, &notify), (int)n);
	ck_assert(!vblk_queue_broken(blk, 0));
	while (fg_vq_get_used(&fvq, &id, &len) == 1) {
		ck_assert_uint_eq(len, status == VIRTIO_BLK_S_OK && type == VIRTIO_BLK_T_IN
					       ? 4097 : 1);
		got++;
	}
	for (unsigned int i = 0; i < n; i++)
		ck_assert_uint_eq(fg_blk_status(&g, &r[i]), status);
	ck_assert_uint_eq(got, n);
	return got;
}

static uint64_t io_errors(void)
{
	struct vblk_queue_stats st;

	ck_assert_int_eq(vblk_queue_get_stats(blk, 0, &st), 0);
	return st.io_errors;
}

/* ---- tests ---------------------------------------------------------- */

/* A burst of EIO: every request fails cleanly, one log line for the
 * burst, a summary once the errors have stopped for a second. */
START_TEST(eio_burst_logged_once)
{
	feng.err = EIO;
	batch(VIRTIO_BLK_T_OUT, BAD_LO, 20, VIRTIO_BLK_S_IOERR, 0x11);
	ck_assert_uint_eq(feng.failed, 20);
	ck_assert_uint_eq(io_errors(), 20);
	ck_assert_uint_eq(log_capture_count("I/O error on write at sector 256"), 1);
	ck_assert_uint_eq(log_capture_count("I/O error"), 1);

	/* More errors, then successes, inside the same second: still one
	 * line, and no summary yet (the burst is not over). */
	batch(VIRTIO_BLK_T_IN, BAD_LO + 64, 5, VIRTIO_BLK_S_IOERR, 0);
	batch(VIRTIO_BLK_T_OUT, 0, 4, VIRTIO_BLK_S_OK, 0x22);
	batch(VIRTIO_BLK_T_IN, 0, 4, VIRTIO_BLK_S_OK, 0);
	ck_assert_uint_eq(io_errors(), 25);
	ck_assert_uint_eq(log_capture_count("I/O error"), 1);

	/* Quiet for a second: the next success closes the burst. */
	usleep(1100 * 1000);
	batch(VIRTIO_BLK_T_IN, 0, 1, VIRTIO_BLK_S_OK, 0);
	ck_assert_uint_eq(log_capture_count("24 more I/O errors"), 1);
	ck_assert_uint_eq(log_capture_count("(last: I/O error on read at sector"), 1);
	batch(VIRTIO_BLK_T_IN, 0, 1, VIRTIO_BLK_S_OK, 0);
	ck_assert_uint_eq(log_capture_count("more I/O errors"), 1);

	/* A new burst is logged again. */
	batch(VIRTIO_BLK_T_OUT, BAD_LO, 1, VIRTIO_BLK_S_IOERR, 0x33);
	ck_assert_uint_eq(log_capture_count("I/O error on write at sector 256"), 2);
	ck_assert_uint_eq(io_errors(), 26);
}
END_TEST

/* Errors still pending a summary are summarised when the disk closes. */
START_TEST(burst_summarised_at_close)
{
	feng.err = ENOSPC;
	batch(VIRTIO_BLK_T_OUT, BAD_LO, 3, VIRTIO_BLK_S_IOERR, 0x44);
	ck_assert_uint_eq(log_capture_count("No space left on device"), 1);
	vblk_close(blk);
	blk = NULL;
	ck_assert_uint_eq(log_capture_count("2 more I/O errors until the disk was closed"), 1);
}
END_TEST

/* A failing FLUSH is an IOERR too (the guest's fsync fails). */
START_TEST(flush_error)
{
	feng.err = EIO;
	feng.type = VIRTIO_BLK_T_FLUSH;
	batch(VIRTIO_BLK_T_FLUSH, 0, 1, VIRTIO_BLK_S_IOERR, 0);
	ck_assert_uint_eq(log_capture_count("I/O error on flush"), 1);
	batch(VIRTIO_BLK_T_OUT, BAD_LO, 2, VIRTIO_BLK_S_OK, 0x55); /* writes fine */
	ck_assert_uint_eq(io_errors(), 1);
}
END_TEST

/* The file shrinks under the device (capacity stays): reads past the new
 * end are zeros; a write there succeeds and extends the file again. */
START_TEST(truncated_image)
{
	struct fg_blk_req r;
	struct fg_buf d;
	struct stat sb;
	bool notify = false;
	uint32_t id, len;
	uint8_t back[4096];

	batch(VIRTIO_BLK_T_OUT, 1024, 1, VIRTIO_BLK_S_OK, 0x66);
	ck_assert_int_eq(ftruncate(img, 64 * 1024), 0);
	ck_assert_uint_eq(disk_capacity(vblk_disk(blk)), IMG_SIZE / 512);

	d = gbuf(4096, true, 0xee);
	ck_assert_int_eq(fg_blk_add(&fvq, VIRTIO_BLK_T_IN, 1024, &d, 1, false, &r), 0);
	fg_vq_publish(&fvq);
	ck_assert_int_eq(vblk_process_queue(blk, 0, &vq, &feng.base, &notify), 1);
	ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &len), 1);
	ck_assert_uint_eq(fg_blk_status(&g, &r), VIRTIO_BLK_S_OK);
	ck_assert_uint_eq(len, 4097);
	for (unsigned int i = 0; i < 4096; i++)
		ck_assert_uint_eq(((uint8_t *)fg_ptr(&g, d.gpa, 4096))[i], 0);

	/* The last 4 KiB of capacity: extends the file to full size. */
	batch(VIRTIO_BLK_T_OUT, IMG_SIZE / 512 - 8, 1, VIRTIO_BLK_S_OK, 0x77);
	ck_assert_int_eq(fstat(img, &sb), 0);
	ck_assert_int_eq(sb.st_size, IMG_SIZE);
	ck_assert_int_eq(pread(img, back, sizeof(back), IMG_SIZE - 4096), 4096);
	for (unsigned int i = 0; i < sizeof(back); i++)
		ck_assert_uint_eq(back[i], 0x77);
	ck_assert_uint_eq(io_errors(), 0);
}
END_TEST

/*
 * A real ENOSPC: a sparse 1 MiB image on a 64 KiB tmpfs (in a private
 * mount namespace of this forked test).  Writes fail once the filesystem
 * is full, the disk keeps serving reads, the errors are counted.
 */
START_TEST(real_enospc)
{
	char dir[] = "/tmp/libvmm-enospc-XXXXXX";
	char path[64];
	unsigned int ok = 0, bad = 0;
	int fd;

	/* Replace the fixture's disk with one on the tiny filesystem. */
	teardown();
	ck_assert_int_eq(log_capture_attach(), 0);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	if (unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", dir, "tmpfs", 0, "size=64k") < 0) {
		printf("real_enospc: SKIP (cannot mount a tmpfs: %s)\n", strerror(errno));
		rmdir(dir);
		return;
	}
	snprintf(path, sizeof(path), "%s/img", dir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, IMG_SIZE), 0);
	close(fd);
	start_disk(-1, path);

	/* 64 x 4 KiB = 256 KiB of writes into 64 KiB of space. */
	for (unsigned int i = 0; i < 64; i++) {
		struct fg_blk_req r;
		struct fg_buf d = gbuf(4096, false, 0x88);
		bool notify = false;
		uint32_t id, len;

		ck_assert_int_eq(fg_blk_add(&fvq, VIRTIO_BLK_T_OUT, i * 8ull, &d, 1,
					    false, &r), 0);
		fg_vq_publish(&fvq);
		ck_assert_int_eq(vblk_process_queue(blk, 0, &vq, &feng.base, &notify), 1);
		ck_assert_int_eq(fg_vq_get_used(&fvq, &id, &len), 1);
		if (fg_blk_status(&g, &r) == VIRTIO_BLK_S_OK)
			ok++;
		else if (fg_blk_status(&g, &r) == VIRTIO_BLK_S_IOERR)
			bad++;
	}
	ck_assert_uint_eq(ok + bad, 64);
	ck_assert_uint_gt(ok, 0);
	ck_assert_uint_gt(bad, 0);
	ck_assert_uint_eq(io_errors(), bad);
	ck_assert_uint_eq(log_capture_count("No space left on device"), 1);
	/* Reads still work (written blocks and holes alike). */
	batch(VIRTIO_BLK_T_IN, 0, 4, VIRTIO_BLK_S_OK, 0);
	batch(VIRTIO_BLK_T_IN, 63 * 8, 1, VIRTIO_BLK_S_OK, 0);
	teardown();
	umount(dir);
	rmdir(dir);
}
END_TEST

static Suite *faults_suite(void)
{
	Suite *s = suite_create("blk-faults");
	TCase *tc = tcase_create("host faults");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, eio_burst_logged_once);
	tcase_add_test(tc, burst_summarised_at_close);
	tcase_add_test(tc, flush_error);
	tcase_add_test(tc, truncated_image);
	tcase_add_test(tc, real_enospc);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(faults_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
