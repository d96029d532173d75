/* SPDX-License-Identifier: MIT */
/*
 * vsockperf: both ends of the vsock benchmark (bench/vsock_bench.sh).
 * Static, libc only: built for the L2 guest by tests/rig/mkguest.sh (as
 * every C file of tests/guest) and for the host by CMake (bench/vsock.cmake).
 *
 *   vsockperf serve PORT
 *       guest: listens on vsock PORT and serves one connection at a time,
 *       until killed.  The first byte of a connection chooses:
 *         'S' sink: read until EOF, then send the byte count (8 bytes, host
 *             order) and close;
 *         'G' + 8-byte count: send that many bytes, then close;
 *         'P' ping-pong: echo every byte until EOF.
 *   vsockperf run TARGET PORT BYTES PINGS
 *       host: TARGET is unix:PATH (the hybrid vsock: "CONNECT PORT\n",
 *       "OK N\n" on PATH) or vsock:CID (AF_VSOCK: a guest on vhost-vsock).
 *       Three connections, one after the other:
 *         to_guest   BYTES sent, shutdown, until the guest's count comes
 *                    back (which must be BYTES);
 *         from_guest BYTES asked for, from the request until EOF (BYTES
 *                    must arrive);
 *         rtt        PINGS one-byte round trips after 16 unmeasured ones.
 *       The first connection is retried for 300 s (the guest may still be
 *       booting).  Prints one line
 *         VSOCKPERF to_guest_mibs=X to_guest_s=T from_guest_mibs=Y
 *           from_guest_s=U rtt_n=N rtt_p50_us=A rtt_p99_us=B rtt_min_us=C
 *           rtt_max_us=D
 *       (MiB/s: BYTES over the wall time of that connection's transfer,
 *       CLOCK_MONOTONIC), or "VSOCKPERF FAIL: ..." and exits 1.
 *
 * Data is a fixed pattern, not checked byte by byte (tests/e2e/vsock.sh
 * does the hashing): the counts are checked, and what is timed is the
 * transport, not a generator.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <linux/vm_sockets.h>

#define CHUNK 65536
#define WARMUP_PINGS 16

static uint8_t buf[CHUNK];
static const char *target;
static unsigned int port;

static void fail(const char *what, int err)
{
	printf("VSOCKPERF FAIL: %s: %s\n", what, strerror(err));
	fflush(stdout);
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t w = write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Exactly @n bytes; -1 on error or an early EOF. */
static int read_all(int fd, void *p, size_t n)
{
	uint8_t *b = p;

	while (n) {
		ssize_t r = read(fd, b, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Bytes read until EOF; -1 on error. */
static int64_t drain(int fd)
{
	int64_t total = 0;

	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			return total;
		total += r;
	}
}

static int send_bytes(int fd, uint64_t n)
{
	while (n) {
		size_t k = n < CHUNK ? (size_t)n : CHUNK;

		if (write_all(fd, buf, k))
			return -1;
		n -= k;
	}
	return 0;
}

/* ---------------------------------------------------------------- guest */

static void serve_one(int fd)
{
	uint8_t op;
	uint64_t n;
	int64_t got;

	if (read_all(fd, &op, 1))
		return;
	switch (op) {
	case 'S':
		got = drain(fd);
		if (got >= 0) {
			n = (uint64_t)got;
			(void)write_all(fd, &n, sizeof(n));
		}
		break;
	case 'G':
		if (!read_all(fd, &n, sizeof(n)))
			(void)send_bytes(fd, n);
		break;
	case 'P':
		for (;;) {
			ssize_t r = read(fd, buf, sizeof(buf));

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0 || write_all(fd, buf, (size_t)r))
				break;
		}
		break;
	}
}

static _Noreturn void serve(void)
{
	struct sockaddr_vm sa = { .svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY,
				  .svm_port = port };
	int lfd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 16))
		fail("vsock listen", errno);
	printf("VSOCKPERF serve: ready on port %u\n", port);
	fflush(stdout);
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			fail("accept", errno);
		}
		serve_one(fd);
		close(fd);
	}
}

/* ----------------------------------------------------------------- host */

/* One connection attempt; -1 if nobody is there yet (or the guest does
 * not listen yet: the hybrid device then closes the socket). */
static int try_connect(void)
{
	if (!strncmp(target, "vsock:", 6)) {
		struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
					  .svm_cid = (unsigned int)strtoul(target + 6, NULL, 0),
					  .svm_port = port };
		int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd >= 0 && !connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			return fd;
		if (fd >= 0)
			close(fd);
		return -1;
	}
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char line[64];
	size_t got = 0;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int n;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", target + 5);
	if (fd < 0)
		fail("socket", errno);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		goto no;
	n = snprintf(line, sizeof(line), "CONNECT %u\n", port);
	if (write_all(fd, line, (size_t)n))
		goto no;
	/* Byte by byte: nothing after the line may be taken. */
	while (got < sizeof(line) - 1) {
		if (read(fd, line + got, 1) != 1)
			goto no;
		if (line[got++] == '\n')
			break;
	}
	line[got] = 0;
	if (strncmp(line, "OK ", 3))
		fail("no OK line from the hybrid vsock", EPROTO);
	return fd;
no:
	close(fd);
	return -1;
}

static int open_conn(unsigned int tries)
{
	for (unsigned int i = 0; i < tries; i++) {
		int fd = try_connect();

		if (fd >= 0)
			return fd;
		usleep(100000);
	}
	fail("connect (the guest does not listen)", ECONNREFUSED);
	return -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int run(uint64_t bytes, unsigned int pings)
{
	double t0, to_s, from_s, *rtt;
	uint64_t n;
	int64_t got;
	uint8_t op;
	int fd;

	memset(buf, 0x5a, sizeof(buf));
	/* Host to guest: until the guest has counted every byte. */
	fd = open_conn(3000);
	t0 = now();
	op = 'S';
	if (write_all(fd, &op, 1) || send_bytes(fd, bytes))
		fail("to_guest: write", errno);
	shutdown(fd, SHUT_WR);
	if (read_all(fd, &n, sizeof(n)))
		fail("to_guest: no count back", errno ? errno : EPIPE);
	to_s = now() - t0;
	close(fd);
	if (n != bytes) {
		printf("VSOCKPERF FAIL: to_guest: the guest counted %llu of %llu bytes\n",
		       (unsigned long long)n, (unsigned long long)bytes);
		return 1;
	}
	/* Guest to host. */
	fd = open_conn(50);
	uint8_t req[1 + sizeof(uint64_t)] = { 'G' };

	memcpy(req + 1, &bytes, sizeof(bytes));
	t0 = now();
	if (write_all(fd, req, sizeof(req)))
		fail("from_guest: request", errno);
	got = drain(fd);
	from_s = now() - t0;
	close(fd);
	if (got != (int64_t)bytes) {
		printf("VSOCKPERF FAIL: from_guest: %lld of %llu bytes\n", (long long)got,
		       (unsigned long long)bytes);
		return 1;
	}
	/* Round trips of one byte. */
	rtt = calloc(pings ? pings : 1, sizeof(*rtt));
	if (!rtt)
		fail("calloc", ENOMEM);
	fd = open_conn(50);
	op = 'P';
	if (write_all(fd, &op, 1))
		fail("rtt: write", errno);
	for (unsigned int i = 0; i < WARMUP_PINGS + pings; i++) {
		uint8_t b = (uint8_t)i;

		t0 = now();
		if (write_all(fd, &b, 1) || read_all(fd, &b, 1))
			fail("rtt: ping", errno ? errno : EPIPE);
		if (b != (uint8_t)i)
			fail("rtt: another byte came back", EPROTO);
		if (i >= WARMUP_PINGS)
			rtt[i - WARMUP_PINGS] = (now() - t0) * 1e6;
	}
	close(fd);
	qsort(rtt, pings, sizeof(*rtt), cmp_double);
	printf("VSOCKPERF to_guest_mibs=%.2f to_guest_s=%.4f from_guest_mibs=%.2f "
	       "from_guest_s=%.4f rtt_n=%u rtt_p50_us=%.1f rtt_p99_us=%.1f "
	       "rtt_min_us=%.1f rtt_max_us=%.1f\n",
	       (double)bytes / 1048576.0 / to_s, to_s, (double)bytes / 1048576.0 / from_s,
	       from_s, pings, pings ? rtt[pings / 2] : 0.0,
	       pings ? rtt[(pings * 99) / 100 < pings ? (pings * 99) / 100 : pings - 1] : 0.0,
	       pings ? rtt[0] : 0.0, pings ? rtt[pings - 1] : 0.0);
	free(rtt);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "serve")) {
		port = (unsigned int)strtoul(argv[2], NULL, 0);
		serve();
	}
	if (argc == 6 && !strcmp(argv[1], "run") &&
	    (!strncmp(argv[2], "unix:", 5) || !strncmp(argv[2], "vsock:", 6))) {
		target = argv[2];
		port = (unsigned int)strtoul(argv[3], NULL, 0);
		return run(strtoull(argv[4], NULL, 0), (unsigned int)strtoul(argv[5], NULL, 0));
	}
	fprintf(stderr, "usage: vsockperf serve PORT | vsockperf run unix:PATH|vsock:CID "
			"PORT BYTES PINGS\n");
	return 2;
}
