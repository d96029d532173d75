/* SPDX-License-Identifier: MIT */
/* What the minivmm-oci ctl.sock tests share: oci_ctl_fixture.h. */
#include <check.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "oci_ctl_fixture.h"

int bind_ctl(const char *dir)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s/ctl.sock", dir);
	ck_assert_int_ge(l, 0);
	ck_assert_int_eq(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(l, 8), 0);
	return l;
}

void rm_rf(const char *dir)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

void no_stop(void *opaque)
{
	(void)opaque;
}

/* One request through the real control plane; its answer line. */
void request(struct shim_ctl *s, const char *dir, const char *req, char *ans,
		    size_t len)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ssize_t n = 0;

	snprintf(a.sun_path, sizeof(a.sun_path), "%s/ctl.sock", dir);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	for (int turn = 0; turn < 100 && n <= 0; turn++) {
		struct pollfd pfd[SHIM_CTL_NFDS];
		int k = shim_ctl_pollfds(s, pfd);

		ck_assert_int_ge(poll(pfd, (nfds_t)k, 10), 0);
		shim_ctl_handle(s, pfd);
		n = recv(fd, ans, len - 1, MSG_DONTWAIT);
	}
	ck_assert_int_gt(n, 0);
	ans[n] = 0;
	close(fd);
}

void *fake_vmm(void *arg)
{
	struct fake_vmm *f = arg;

	for (;;) {
		struct pollfd p = { .fd = f->listen, .events = POLLIN };
		int c;
		ssize_t n;

		if (__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE))
			return NULL;
		if (poll(&p, 1, 50) <= 0)
			continue;
		c = accept4(f->listen, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		n = recv(c, f->got, sizeof(f->got) - 1, 0);
		f->got[n > 0 ? n : 0] = 0;
		f->requests++;
		send(c, f->answer, strlen(f->answer), MSG_NOSIGNAL);
		close(c);
	}
}
