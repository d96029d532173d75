/* SPDX-License-Identifier: MIT */
/*
 * virtio-net on the stream back end, the real device with its queue
 * service and I/O thread: when the socket is full (the peer reads
 * nothing), TX waits for the socket's POLLOUT, and its I/O thread sleeps
 * meanwhile -- it used to try again every round, a wake-up each 1 ms for
 * as long as the peer did not read.  Once the peer reads, the wake-up
 * serves the queue again and every frame arrives intact and in order.
 * Counts (the thread's wake-ups), no timings.
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net_dev_rig.h"

#define NF 100 /* frames */
#define FLEN 1500

static struct net_dev_rig R;

static void setup(void)
{
	/* Small socket buffers: full after a few frames. */
	ndr_setup(&R, &(struct ndr_params){ .queue_size = 128, .sndbuf = 4096 });
}

static void teardown(void)
{
	ndr_teardown(&R);
}

static uint64_t wakeups(void)
{
	struct iothread_stats st;

	iothread_get_stats(R.io, &st);
	return st.loops;
}

/* The state letter (R, S, ...) of this process's thread named @comm. */
static char thread_state(const char *comm)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	char path[300], buf[256], st = '?';

	ck_assert_ptr_nonnull(d);
	while (st == '?' && (e = readdir(d))) {
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		/* "tid (comm) S ...": comm has no ')' here. */
		if (fgets(buf, sizeof(buf), f)) {
			char *l = strchr(buf, '('), *r = strrchr(buf, ')');

			if (l && r && r[1] == ' ' && (size_t)(r - l - 1) == strlen(comm) &&
			    !strncmp(l + 1, comm, strlen(comm)))
				st = r[2];
		}
		fclose(f);
	}
	closedir(d);
	return st;
}

/*
 * Until the device is blocked on the full socket: its I/O thread asleep,
 * with neither its wake-ups nor the used chains moving across a sample.
 * Asleep, not just unchanged: a thread that a loaded machine keeps off
 * its CPU changes nothing for a while but is not waiting (a 50 ms pause
 * alone failed once in ten runs at load 7-12).  At most ~20 s.
 */
static unsigned int wait_blocked(void)
{
	for (int i = 0; i < 1000; i++) {
		unsigned int used = ndr_tx_used(&R);
		uint64_t loops = wakeups();

		if (thread_state("vmm-io0") == 'S') {
			usleep(20000);
			if (thread_state("vmm-io0") == 'S' && wakeups() == loops &&
			    ndr_tx_used(&R) == used)
				return used;
		} else {
			usleep(20000);
		}
	}
	ck_abort_msg("the device never blocked on the full socket");
	return 0;
}

START_TEST(full_socket_sleeps_until_writable)
{
	static uint8_t got[NF * (4 + FLEN)];
	unsigned int before_used;
	uint64_t w0, w1;

	for (unsigned int i = 0; i < NF; i++)
		ndr_post_tx(&R, FLEN, (uint8_t)(i * 7));
	fg_vq_publish(&R.drv[NDR_TX]);
	ndr_kick(&R, NDR_TX);
	/* The device fills the socket and stops taking chains. */
	before_used = wait_blocked();
	ck_assert_uint_lt(before_used, NF);
	/* Blocked for a while: the thread is not woken (it was, every 1 ms
	 * of this, before TX waited for POLLOUT). */
	w0 = wakeups();
	usleep(300000);
	w1 = wakeups();
	ck_assert_msg(w1 - w0 <= 3, "the I/O thread woke %llu times while TX was blocked",
		      (unsigned long long)(w1 - w0));
	ck_assert_uint_eq(ndr_tx_used(&R), before_used);
	/* The peer reads: every frame, in order, through the POLLOUT wake-ups. */
	ndr_peer_read(&R, got, sizeof(got));
	for (unsigned int i = 0; i < NF; i++) {
		const uint8_t *f = got + i * (4 + FLEN);

		ck_assert_uint_eq((uint32_t)f[2] << 8 | f[3], FLEN);
		for (unsigned int j = 0; j < FLEN; j++)
			ck_assert_uint_eq(f[4 + j], (uint8_t)(i * 7 + j));
	}
	for (int i = 0; ndr_tx_used(&R) < NF && i < 2000; i++)
		usleep(1000);
	ck_assert_uint_eq(ndr_tx_used(&R), NF);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("net_stream_pollout");
	TCase *tc = tcase_create("pollout");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, full_socket_sleeps_until_writable);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
