/*
 * api_rtt SOCKET COUNT REQUEST...: the round trip of minivmm's JSON control
 * socket (--api-socket).  COUNT rounds, each sending every REQUEST (a JSON
 * object) in order, one connection each as the protocol has it (connect,
 * write, shut down the writing side, read the answer until the server
 * closes); then one JSON line per REQUEST: count, failures, and the round
 * trip's min/p50/p99/max in microseconds.  An answer that is not
 * {"ok":true...} counts as a failure.  Exit 0, 1 when any request failed,
 * 2 on bad usage.
 *
 * Context: a benchmark client, run in the rig's L1 beside minivmm.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* One request: 0 when the answer says ok, -1 otherwise. */
static int one(const struct sockaddr_un *sa, const char *req, size_t len)
{
	char buf[65536];
	size_t got = 0;
	ssize_t n;
	int fd, ret = -1;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) ||
	    send(fd, req, len, MSG_NOSIGNAL) != (ssize_t)len || shutdown(fd, SHUT_WR))
		goto out;
	while (got < sizeof(buf) - 1 && (n = read(fd, buf + got, sizeof(buf) - 1 - got)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			goto out;
		}
		got += (size_t)n;
	}
	buf[got] = 0;
	ret = strstr(buf, "\"ok\":true") || strstr(buf, "\"ok\": true") ? 0 : -1;
out:
	close(fd);
	return ret;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Print one request's round trips (sorted in place) as a JSON line. */
static void report(const char *req, double *rtt, unsigned long count, unsigned long fails)
{
	unsigned long p99 = (count * 99) / 100;

	qsort(rtt, count, sizeof(*rtt), cmp);
	if (p99 >= count)
		p99 = count - 1;
	printf("{\"request\":\"");
	for (const char *c = req; *c; c++)
		printf(*c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
	printf("\",\"count\":%lu,\"failures\":%lu,\"min_us\":%.1f,\"p50_us\":%.1f,"
	       "\"p99_us\":%.1f,\"max_us\":%.1f}\n",
	       count, fails, rtt[0], rtt[count / 2], rtt[p99], rtt[count - 1]);
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	unsigned long count, nreq, *fails, bad = 0;
	char req[4096];
	double *rtt;
	int len;

	if (argc < 4 || strlen(argv[1]) >= sizeof(sa.sun_path) ||
	    (count = strtoul(argv[2], NULL, 10)) == 0 || count > 1000000) {
		fprintf(stderr, "usage: api_rtt SOCKET COUNT REQUEST... (COUNT 1..1000000)\n");
		return 2;
	}
	strcpy(sa.sun_path, argv[1]);
	nreq = (unsigned long)argc - 3;
	rtt = calloc(count * nreq, sizeof(*rtt));
	fails = calloc(nreq, sizeof(*fails));
	if (!rtt || !fails)
		return 2;
	/* Each round sends the requests in order (e.g. pause then resume). */
	for (unsigned long i = 0; i < count; i++)
		for (unsigned long r = 0; r < nreq; r++) {
			double t0;

			len = snprintf(req, sizeof(req), "%s\n", argv[3 + r]);
			if (len < 0 || (size_t)len >= sizeof(req)) {
				fprintf(stderr, "api_rtt: a request is over %zu bytes\n",
					sizeof(req) - 2);
				return 2;
			}
			t0 = now_us();
			if (one(&sa, req, (size_t)len))
				fails[r]++;
			rtt[r * count + i] = now_us() - t0;
		}
	for (unsigned long r = 0; r < nreq; r++) {
		report(argv[3 + r], rtt + r * count, count, fails[r]);
		bad += fails[r];
	}
	free(rtt);
	free(fails);
	return bad ? 1 : 0;
}
