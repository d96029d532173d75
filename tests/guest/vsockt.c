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
 * "VSOCKT FAIL: ..." and exits 1.  The echo servers join the threads of
 * ended connections as they go.
 *
 * Many short connections (-vsock: the guest's side, to CID 2 or
 * VSOCKT_CID; -unix: the host's, through PATH):
 *   vsockt churn-vsock PORT N BATCH
 *   vsockt churn-unix PATH PORT N BATCH
 *      N connections, BATCH open at once: each sends CHURN_BYTES of its
 *      own, half-closes and must get exactly them back (an echo server at
 *      PORT), then closes.  "VSOCKT MODE: N connections, CHURN_BYTES
 *      bytes each way, ok, T s".
 *
 * A peer that stops reading (tests/e2e/vsock.sh, both directions):
 *   vsockt stall-write-vsock PORT GOPORT SECONDS
 *   vsockt stall-write-unix PATH PORT GOPORT SECONDS
 *      One connection to PORT, non-blocking: writes until nothing more
 *      goes in for SECONDS (failing if writes still go in after 60 s),
 *      then one connection to GOPORT (closed at once: "read now"),
 *      half-closes and waits for the reader's EOF.  Prints "VSOCKT MODE:
 *      B bytes in, writes stopped after T s, hash H, ..., ok".
 *   vsockt stall-read-vsock PORT GOPORT
 *   vsockt stall-read-unix PATH GOPATH
 *      Accepts one connection on PORT (PATH) and reads nothing until a
 *      connection arrives on GOPORT (GOPATH); then reads to EOF:
 *      "VSOCKT MODE: B bytes after the stall, hash H, ok".
 *   The -unix modes talk to the VMM itself (its socket, or its connection
 *   to us): they also print its pid (SO_PEERCRED), name and VmRSS when the
 *   stall begins and when it ends (/proc/PID/status): "vmm PID (COMM)
 *   VmRSS A -> B kB".  The -vsock modes on a host over vhost-vsock do the
 *   same with VSOCKT_VMM_PIDFILE=FILE in the environment: the VMM's pid,
 *   read from FILE when the stall begins.
 *
 * VSOCKT_CID=C (a host on vhost-vsock) also makes churn-vsock's and the
 * stall modes' connections to C retried until the guest listens (300 s).
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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
#define CHURN_BYTES 64

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
	/* Context: on the stack, not in TLS: a thread's TLS is zeroed at its
	 * start, 64 KiB each of three buffers, which 1000 short connections
	 * paid in full (page faults are nested exits in the rig); a stack
	 * page is touched only when a read or fill gets there. */
	uint8_t buf[CHUNK];

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
	uint8_t buf[CHUNK];
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
	uint8_t buf[CHUNK];
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
static int unix_connect_start(unsigned int port)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char line[64];
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int n;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path_arg);
	if (fd < 0)
		fail("socket for", path_arg, errno);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd); /* no VMM there yet */
		return -1;
	}
	n = snprintf(line, sizeof(line), "CONNECT %u\n", port);
	if (write_all(fd, (uint8_t *)line, (size_t)n))
		fail("writing CONNECT to", path_arg, errno);
	return fd;
}

/* The answer to unix_connect_start()'s line: @fd, or -1 (closed) if the
 * guest refused. */
static int unix_connect_finish(int fd)
{
	char line[64];
	size_t got = 0;

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

static int unix_connect(unsigned int port)
{
	int fd = unix_connect_start(port);

	return fd < 0 ? -1 : unix_connect_finish(fd);
}

/* A connection to @port: through the hybrid vsock's path_arg (@unix_mode)
 * or on AF_VSOCK. */
static int open_conn(bool unix_mode, unsigned int port)
{
	if (!unix_mode) {
		/* VSOCKT_CID: a host reaching a guest over vhost-vsock,
		 * retried until the guest listens (300 s at most). */
		const char *cid = getenv("VSOCKT_CID");
		struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
					  .svm_cid = cid ? (unsigned int)strtoul(cid, NULL, 0) :
							   VMADDR_CID_HOST,
					  .svm_port = port };

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
		int fd = unix_connect(port);

		if (fd >= 0)
			return fd;
		usleep(100000);
	}
	fail("the guest never accepted on", path_arg, ECONNREFUSED);
	return -1;
}

/* Listening on @path (@unix_mode) or on vsock @port. */
static int listener(bool unix_mode, const char *path, unsigned int port)
{
	int fd;

	if (!unix_mode) {
		struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
					  .svm_cid = VMADDR_CID_ANY,
					  .svm_port = port };

		fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
			fail("vsock bind", "port", errno);
	} else {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
		unlink(path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
			fail("bind", path, errno);
	}
	if (listen(fd, MAX_CONNS))
		fail("listen", unix_mode ? path : "vsock", errno);
	return fd;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Read @fd to EOF into @buf (@cap bytes; more is an error: -1 with
 * EMSGSIZE).  Returns the bytes read or -1. */
static ssize_t read_to_eof(int fd, uint8_t *buf, size_t cap)
{
	size_t got = 0;
	uint8_t extra;

	for (;;) {
		ssize_t r = read(fd, got < cap ? buf + got : &extra,
				 got < cap ? cap - got : 1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			return (ssize_t)got;
		if (got + (size_t)r > cap) {
			errno = EMSGSIZE;
			return -1;
		}
		got += (size_t)r;
	}
}

/* A connection to port_arg on its way: a Unix socket whose CONNECT line
 * is sent (-1: no VMM there yet), or a non-blocking vsock connect. */
static int churn_start(bool unix_mode)
{
	const char *cid = getenv("VSOCKT_CID");
	struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
				  .svm_cid = cid ? (unsigned int)strtoul(cid, NULL, 0) :
						   VMADDR_CID_HOST,
				  .svm_port = port_arg };
	int fd;

	if (unix_mode)
		return unix_connect_start(port_arg);
	fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		fail("vsock socket", "churn", errno);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) && errno != EINPROGRESS) {
		if (!cid)
			fail("vsock connect", "churn", errno);
		close(fd); /* no guest with that CID yet (ENODEV) */
		return -1;
	}
	return fd;
}

/* churn_start()'s connection @fd established and blocking, or a new one
 * (open_conn(): retried) where the guest refused or no VMM was there. */
static int churn_finish(bool unix_mode, int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	socklen_t len = sizeof(int);
	int err = 0;

	if (unix_mode) {
		if (fd >= 0)
			fd = unix_connect_finish(fd);
		return fd >= 0 ? fd : open_conn(true, port_arg);
	}
	if (fd >= 0 && poll(&p, 1, 60000) == 1 &&
	    !getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) && !err) {
		if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK))
			fail("blocking", "churn", errno);
		return fd;
	}
	if (!getenv("VSOCKT_CID"))
		fail("vsock connect", "churn", err ? err : ETIMEDOUT);
	/* Context: a host on vhost-vsock starts before the guest listens
	 * (the guest's RST: ECONNRESET), as the -unix side before the VMM. */
	if (fd >= 0)
		close(fd);
	return open_conn(false, port_arg);
}

/* churn-MODE: n short connections, @batch open at once. */
static int churn(const char *mode, bool unix_mode, unsigned int n,
		 unsigned int batch)
{
	static int fds[MAX_CONNS];
	uint8_t msg[CHURN_BYTES], back[CHURN_BYTES];
	double t0 = 0;

	for (unsigned int done = 0; done < n;) {
		unsigned int k = n - done < batch ? n - done : batch;

		/* Context: the batch's connections set up all at once (one
		 * round trip through the VM for them all, not one each: 1000
		 * serial set-ups took ~50 s in the nested rig). */
		for (unsigned int i = 0; i < k; i++)
			fds[i] = churn_start(unix_mode);
		for (unsigned int i = 0; i < k; i++) {
			uint64_t st = 0x9e3779b97f4a7c15ull * (done + i + 1);

			fds[i] = churn_finish(unix_mode, fds[i]);
			if (!done && !i) /* from the first connection */
				t0 = now();
			fill(&st, msg, sizeof(msg));
			if (write_all(fds[i], msg, sizeof(msg)) || shutdown(fds[i], SHUT_WR))
				fail("churn write", mode, errno);
		}
		for (unsigned int i = 0; i < k; i++) {
			uint64_t st = 0x9e3779b97f4a7c15ull * (done + i + 1);
			ssize_t r = read_to_eof(fds[i], back, sizeof(back));

			if (r < 0)
				fail("churn read", mode, errno);
			fill(&st, msg, sizeof(msg));
			if ((size_t)r != sizeof(msg) || memcmp(msg, back, sizeof(msg))) {
				printf("VSOCKT FAIL: %s: connection %u: %zd bytes back, "
				       "not the %zu sent\n", mode, done + i, r, sizeof(msg));
				return 1;
			}
			close(fds[i]);
		}
		done += k;
	}
	printf("VSOCKT %s: %u connections, %u bytes each way, ok, %.2f s\n", mode,
	       n, CHURN_BYTES, now() - t0);
	return 0;
}

/* The VMM, its name into @comm (16 bytes): with @unix_mode the process at
 * the other end of Unix socket @fd (its socket, or its connection to us),
 * else the pid in VSOCKT_VMM_PIDFILE; 0 if none is asked for. */
static pid_t vmm_pid(bool unix_mode, int fd, char *comm)
{
	const char *pidfile = getenv("VSOCKT_VMM_PIDFILE");
	struct ucred uc = { .pid = 0 };
	socklen_t len = sizeof(uc);
	char path[64];
	FILE *f;

	if (unix_mode) {
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) || uc.pid <= 0)
			fail("SO_PEERCRED", "the VMM's socket", errno ? errno : ESRCH);
	} else if (pidfile) {
		f = fopen(pidfile, "r");
		if (!f || fscanf(f, "%d", &uc.pid) != 1 || uc.pid <= 0)
			fail("no VMM pid in", pidfile, f ? EINVAL : errno);
		fclose(f);
	} else {
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)uc.pid);
	strcpy(comm, "?");
	f = fopen(path, "r");
	if (f) {
		if (fgets(comm, 16, f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	return uc.pid;
}

/* VmRSS of @pid in kB. */
static long rss_kb(pid_t pid)
{
	char path[64], line[128];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		fail("open", path, errno);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	fclose(f);
	if (kb < 0)
		fail("no VmRSS in", path, ENOENT);
	return kb;
}

/*
 * stall-write-MODE: write to a reader that reads nothing until told, until
 * nothing more goes in for @quiet seconds.  Context: what gets in is all
 * that the path between holds (the receiver's credit, socket buffers): a
 * VMM that buffered without bound would keep taking writes.
 */
static int stall_write(const char *mode, bool unix_mode, unsigned int goport,
		       double quiet)
{
	int fd = open_conn(unix_mode, port_arg), g;
	uint64_t st = 0x51a11ull, total = 0, hash = 0xcbf29ce484222325ull;
	static uint8_t buf[4096];
	size_t off = sizeof(buf);
	double t0 = now(), last = t0;
	long rss0 = 0, rss1 = 0;
	char comm[16] = "", vmm[96] = "";
	pid_t pid = 0;

	pid = vmm_pid(unix_mode, fd, comm);
	if (pid)
		rss0 = rss_kb(pid);
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK))
		fail("O_NONBLOCK", mode, errno);
	for (;;) {
		ssize_t w;

		if (off == sizeof(buf)) {
			fill(&st, buf, sizeof(buf));
			off = 0;
		}
		w = write(fd, buf + off, sizeof(buf) - off);
		if (w > 0) {
			hash = fnv(hash, buf + off, (size_t)w);
			off += (size_t)w;
			total += (uint64_t)w;
			last = now();
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w == 0 || errno != EAGAIN)
			fail("stall write", mode, w ? errno : EPIPE);
		if (now() - last >= quiet)
			break;
		if (now() - t0 > 60) {
			printf("VSOCKT FAIL: %s: writes still go in after 60 s: "
			       "%llu bytes\n", mode, (unsigned long long)total);
			return 1;
		}
		usleep(1000);
	}
	if (pid) {
		rss1 = rss_kb(pid);
		snprintf(vmm, sizeof(vmm), ", vmm %d (%s) VmRSS %ld -> %ld kB",
			 (int)pid, comm, rss0, rss1);
	}
	printf("VSOCKT %s: %llu bytes in, writes stopped after %.2f s, then EAGAIN "
	       "for %.1f s, hash %016llx%s, ok\n", mode, (unsigned long long)total,
	       last - t0, quiet, (unsigned long long)hash, vmm);
	fflush(stdout);
	/* "Read now"; then our EOF, and the reader's when it has it all. */
	g = open_conn(unix_mode, goport);
	close(g);
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) ||
	    shutdown(fd, SHUT_WR))
		fail("shutdown", mode, errno);
	if (read_to_eof(fd, buf, sizeof(buf)) != 0)
		fail("the reader's EOF", mode, errno ? errno : EPROTO);
	close(fd);
	return 0;
}

/* stall-read-MODE: one connection left unread until one on @gl. */
static int stall_read(const char *mode, bool unix_mode, int lfd, int gl)
{
	static uint8_t buf[CHUNK];
	uint64_t total = 0, hash = 0xcbf29ce484222325ull;
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), g;
	long rss0 = 0, rss1 = 0;
	char comm[16] = "", vmm[96] = "";
	pid_t pid = 0;
	ssize_t n;

	if (fd < 0)
		fail("accept", mode, errno);
	pid = vmm_pid(unix_mode, fd, comm);
	if (pid)
		rss0 = rss_kb(pid);
	g = accept4(gl, NULL, NULL, SOCK_CLOEXEC);
	if (g < 0)
		fail("accept (go)", mode, errno);
	if (pid) {
		rss1 = rss_kb(pid);
		snprintf(vmm, sizeof(vmm), ", vmm %d (%s) VmRSS %ld -> %ld kB",
			 (int)pid, comm, rss0, rss1);
	}
	close(g);
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail("stall read", mode, errno);
		hash = fnv(hash, buf, (size_t)n);
		total += (uint64_t)n;
	}
	close(fd);
	printf("VSOCKT %s: %llu bytes after the stall, hash %016llx%s, ok\n", mode,
	       (unsigned long long)total, (unsigned long long)hash, vmm);
	return 0;
}

/* The new modes' arguments: [PATH] PORT|GOPATH ... (see the top). */
static int other_modes(int argc, char **argv)
{
	const char *mode = argv[1];
	bool unix_mode = strstr(mode, "-unix") != NULL;
	int a = 2, want;

	if (!strncmp(mode, "churn-", 6))
		want = 5;
	else if (!strncmp(mode, "stall-write-", 12))
		want = 5;
	else if (!strncmp(mode, "stall-read-", 11))
		want = 4 - unix_mode;
	else
		want = -1;
	if (want < 0 || (!unix_mode && strstr(mode, "-vsock") == NULL) ||
	    argc != want + unix_mode) {
		fprintf(stderr, "usage: see tests/guest/vsockt.c\n");
		return 2;
	}
	if (unix_mode)
		path_arg = argv[a++];
	if (!strncmp(mode, "stall-read-", 11)) {
		int gl, lfd;

		if (unix_mode) {
			gl = listener(true, argv[a], 0);
			lfd = listener(true, path_arg, 0);
		} else {
			/* The go port first: the writer's connection taken
			 * means it listens too. */
			gl = listener(false, NULL, (unsigned int)strtoul(argv[a + 1], NULL, 0));
			lfd = listener(false, NULL, (unsigned int)strtoul(argv[a], NULL, 0));
		}
		printf("VSOCKT %s: ready\n", mode);
		fflush(stdout);
		return stall_read(mode, unix_mode, lfd, gl);
	}
	port_arg = (unsigned int)strtoul(argv[a++], NULL, 0);
	if (!strncmp(mode, "stall-write-", 12)) {
		unsigned int go = (unsigned int)strtoul(argv[a], NULL, 0);

		return stall_write(mode, unix_mode, go, strtod(argv[a + 1], NULL));
	}
	{
		unsigned int n = (unsigned int)strtoul(argv[a], NULL, 0);
		unsigned int batch = (unsigned int)strtoul(argv[a + 1], NULL, 0);

		if (!n || !batch || batch > MAX_CONNS)
			fail("bad connection counts", mode, EINVAL);
		return churn(mode, unix_mode, n, batch);
	}
}

/* Connection @i's thread is done: its result checked. */
static void finish(const char *mode, bool serve, const struct conn *c,
		   unsigned int i, uint64_t bytes)
{
	if (c->err)
		fail("a connection failed", mode, c->err);
	if (!serve && (c->received != bytes || c->recv_hash != c->sent_hash)) {
		printf("VSOCKT FAIL: %s: connection %u: %llu of %llu bytes back, "
		       "hash %016llx, sent %016llx\n", mode, i,
		       (unsigned long long)c->received, (unsigned long long)bytes,
		       (unsigned long long)c->recv_hash,
		       (unsigned long long)c->sent_hash);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	static struct conn c[MAX_CONNS];
	static pthread_t t[MAX_CONNS];
	const char *mode = argc > 1 ? argv[1] : "";
	bool serve = !strncmp(mode, "serve-", 6);
	bool unix_mode = strstr(mode, "-unix") != NULL;
	int a = 2, lfd = -1;
	unsigned int n, joined = 0;
	uint64_t bytes = 0, total = 0;
	double t0;

	if (!strncmp(mode, "churn-", 6) || !strncmp(mode, "stall-", 6))
		return other_modes(argc, argv);
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
		lfd = listener(unix_mode, path_arg, port_arg);
	printf("VSOCKT %s: ready\n", mode);
	fflush(stdout);
	t0 = now();
	for (unsigned int i = 0; i < n; i++) {
		c[i] = (struct conn){ .idx = i, .bytes = bytes };
		c[i].fd = serve ? accept4(lfd, NULL, NULL, SOCK_CLOEXEC) :
				  open_conn(unix_mode, port_arg);
		if (c[i].fd < 0)
			fail("accept", mode, errno);
		if (!i) /* from the first connection: not the boot before it */
			t0 = now();
		if (pthread_create(&t[i], NULL, serve ? echo : client, &c[i]))
			fail("pthread_create", mode, EAGAIN);
		/* Context: an unjoined thread keeps its stack (and the pages
		 * its buffer touched); joined, glibc reuses it for the next:
		 * 1000 connections in a row hold the threads of those still
		 * open only. */
		while (joined < i && !pthread_tryjoin_np(t[joined], NULL)) {
			finish(mode, serve, &c[joined], joined, bytes);
			total += serve ? c[joined].received : bytes;
			joined++;
		}
	}
	for (; joined < n; joined++) {
		pthread_join(t[joined], NULL);
		finish(mode, serve, &c[joined], joined, bytes);
		total += serve ? c[joined].received : bytes;
	}
	t0 = now() - t0;
	printf("VSOCKT %s: %u connections, %llu bytes each way, ok, %.2f s, %.2f MiB/s\n",
	       mode, n, (unsigned long long)(serve ? total / n : bytes), t0,
	       2.0 * (double)total / (1 << 20) / (t0 > 0 ? t0 : 1));
	return 0;
}
