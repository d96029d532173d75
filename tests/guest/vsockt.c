/* SPDX-License-Identifier: MIT */
/*
 * vsockt: both ends of the vsock end-to-end test (tests/e2e/vsock.sh).
 * Static, libc and pthreads only: built for the L2 guest by
 * tests/rig/mkguest.sh (as every C file of tests/guest) and for the host by
 * CMake.
 *
 *   vsockt serve-vsock PORT N          guest: echo N connections on vsock
 *                                      PORT (all at once), then exit
 *   vsockt connect-vsock PORT N BYTES  guest: N connections at once to the
 *                                      host (CID 2) PORT, each sends BYTES
 *                                      and checks what comes back
 *   vsockt serve-unix PATH N           host: the same echo on a Unix
 *                                      socket (the device's PATH_P)
 *                                      (VSOCKT_CID=C in the environment:
 *                                      to CID C, retried 300 s: a host
 *                                      on vhost-vsock)
 *   vsockt connect-unix PATH PORT N BYTES
 *                                      host: N connections through the
 *                                      hybrid vsock's PATH ("CONNECT
 *                                      PORT\", retried until the guest
 *                                      listens, 300 s at most)
 *
 * Each connection's bytes come from its own generator; the sender and the
 * receiver hash the stream (FNV-1a 64) and the byte counts and hashes must
 * match.  Prints "VSOCKT MODE: N connections, BYTES bytes each way, ok,
 * T s, R MiB/s" (R: the bytes of all connections, both ways, over T), or
 * "VSOCKT FAIL: ..." and exits 1.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <linux/vm_sockets.h>

#define MAX_CONNS 1024
#define CHUNK 65536

struct conn {
	int fd;
	unsigned int idx;
	uint64_t bytes;
	uint64_t sent_hash, recv_hash, received;
	int err;
};

static const char *path_arg;
static unsigned int port_arg;

/* "VSOCKT FAIL: @what (@arg): strerror(@err)" and exit 1. */
static void fail(const char *what, const char *arg, int err)
{
	printf("VSOCKT FAIL: %s (%s): %s\n", what, arg, strerror(err));
	fflush(stdout);
	exit(1);
}

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static void fill(uint64_t *state, uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		*state = *state * 6364136223846793005ull + 1442695040888963407ull;
		p[i] = (uint8_t)(*state >> 56);
	}
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void *writer(void *arg)
{
	struct conn *c = arg;
	uint64_t st = 0x9e3779b97f4a7c15ull * (c->idx + 1), left = c->bytes;
	static __thread uint8_t buf[CHUNK];

	c->sent_hash = 0xcbf29ce484222325ull;
	while (left) {
		size_t n = left < CHUNK ? (size_t)left : CHUNK;

		fill(&st, buf, n);
		c->sent_hash = fnv(c->sent_hash, buf, n);
		if (write_all(c->fd, buf, n)) {
			c->err = errno ? errno : EPIPE;
			return NULL;
		}
		left -= n;
	}
	shutdown(c->fd, SHUT_WR);
	return NULL;
}

/* Send c->bytes, and hash what comes back until EOF. */
static void *client(void *arg)
{
	struct conn *c = arg;
	static __thread uint8_t buf[CHUNK];
	pthread_t w;
	ssize_t n;

	c->recv_hash = 0xcbf29ce484222325ull;
	if (pthread_create(&w, NULL, writer, c)) {
		c->err = EAGAIN;
		return NULL;
	}
	while ((n = read(c->fd, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			c->err = errno;
			break;
		}
		c->recv_hash = fnv(c->recv_hash, buf, (size_t)n);
		c->received += (uint64_t)n;
	}
	pthread_join(w, NULL);
	close(c->fd);
	return NULL;
}

static void *echo(void *arg)
{
	struct conn *c = arg;
	static __thread uint8_t buf[CHUNK];
	ssize_t n;

	while ((n = read(c->fd, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write_all(c->fd, buf, (size_t)n)) {
			c->err = errno;
			break;
		}
		c->received += (uint64_t)n;
	}
	shutdown(c->fd, SHUT_WR);
	close(c->fd);
	return NULL;
}

/* The hybrid vsock's handshake: "CONNECT PORT\n", "OK N\n" back.  Returns
 * the socket, or -1 if the guest refused (the device closed it). */
static int unix_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char line[64];
	size_t got = 0;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int n;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path_arg);
	if (fd < 0)
		fail("socket for", path_arg, errno);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd); /* no VMM there yet */
		return -1;
	}
	n = snprintf(line, sizeof(line), "CONNECT %u\n", port_arg);
	if (write_all(fd, (uint8_t *)line, (size_t)n))
		fail("writing CONNECT to", path_arg, errno);
	/* Byte by byte: nothing after the line may be taken. */
	while (got < sizeof(line) - 1) {
		ssize_t r = read(fd, line + got, 1);

		if (r <= 0) {
			close(fd);
			return -1;
		}
		if (line[got++] == '\n')
			break;
	}
	line[got] = 0;
	if (strncmp(line, "OK ", 3))
		fail("no OK line from", path_arg, EPROTO);
	return fd;
}

static int open_conn(const char *mode)
{
	if (!strcmp(mode, "connect-vsock")) {
		/* VSOCKT_CID: a host reaching a guest over vhost-vsock,
		 * retried until the guest listens (300 s at most). */
		const char *cid = getenv("VSOCKT_CID");
		struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
					  .svm_cid = cid ? (unsigned int)strtoul(cid, NULL, 0) :
							   VMADDR_CID_HOST,
					  .svm_port = port_arg };

		for (int i = 0; i < (cid ? 3000 : 1); i++) {
			int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);

			if (fd >= 0 && !connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
				return fd;
			if (fd >= 0)
				close(fd);
			if (cid)
				usleep(100000);
		}
		fail("vsock connect to port", cid ? cid : "host", errno);
	}
	for (int i = 0; i < 3000; i++) { /* the VMM or the guest may not be up */
		int fd = unix_connect();

		if (fd >= 0)
			return fd;
		usleep(100000);
	}
	fail("the guest never accepted on", path_arg, ECONNREFUSED);
	return -1;
}

static int listener(const char *mode)
{
	int fd;

	if (!strcmp(mode, "serve-vsock")) {
		struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
					  .svm_cid = VMADDR_CID_ANY,
					  .svm_port = port_arg };

		fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
			fail("vsock bind", "port", errno);
	} else {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path_arg);
		unlink(path_arg);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
			fail("bind", path_arg, errno);
	}
	if (listen(fd, MAX_CONNS))
		fail("listen", mode, errno);
	return fd;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static struct conn c[MAX_CONNS];
	static pthread_t t[MAX_CONNS];
	const char *mode = argc > 1 ? argv[1] : "";
	bool serve = !strncmp(mode, "serve-", 6);
	bool unix_mode = strstr(mode, "-unix") != NULL;
	int a = 2, lfd = -1;
	unsigned int n;
	uint64_t bytes = 0, total = 0;
	double t0;

	if (argc != (serve ? 4 : 5) + (unix_mode && !serve) ||
	    (strcmp(mode, "serve-vsock") && strcmp(mode, "serve-unix") &&
	     strcmp(mode, "connect-vsock") && strcmp(mode, "connect-unix"))) {
		fprintf(stderr, "usage: see tests/guest/vsockt.c\n");
		return 2;
	}
	if (unix_mode)
		path_arg = argv[a++];
	if (!(unix_mode && serve))
		port_arg = (unsigned int)strtoul(argv[a++], NULL, 0);
	n = (unsigned int)strtoul(argv[a++], NULL, 0);
	if (!serve)
		bytes = strtoull(argv[a++], NULL, 0);
	if (!n || n > MAX_CONNS)
		fail("bad connection count", mode, EINVAL);
	if (serve)
		lfd = listener(mode);
	printf("VSOCKT %s: ready\n", mode);
	fflush(stdout);
	t0 = now();
	for (unsigned int i = 0; i < n; i++) {
		c[i] = (struct conn){ .idx = i, .bytes = bytes };
		c[i].fd = serve ? accept4(lfd, NULL, NULL, SOCK_CLOEXEC) : open_conn(mode);
		if (c[i].fd < 0)
			fail("accept", mode, errno);
		if (!i) /* from the first connection: not the boot before it */
			t0 = now();
		if (pthread_create(&t[i], NULL, serve ? echo : client, &c[i]))
			fail("pthread_create", mode, EAGAIN);
	}
	for (unsigned int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		if (c[i].err)
			fail("a connection failed", mode, c[i].err);
		if (!serve && (c[i].received != bytes || c[i].recv_hash != c[i].sent_hash)) {
			printf("VSOCKT FAIL: %s: connection %u: %llu of %llu bytes back, "
			       "hash %016llx, sent %016llx\n", mode, i,
			       (unsigned long long)c[i].received, (unsigned long long)bytes,
			       (unsigned long long)c[i].recv_hash,
			       (unsigned long long)c[i].sent_hash);
			return 1;
		}
		total += serve ? c[i].received : bytes;
	}
	t0 = now() - t0;
	printf("VSOCKT %s: %u connections, %llu bytes each way, ok, %.2f s, %.2f MiB/s\n",
	       mode, n, (unsigned long long)(serve ? total / n : bytes), t0,
	       2.0 * (double)total / (1 << 20) / (t0 > 0 ? t0 : 1));
	return 0;
}
