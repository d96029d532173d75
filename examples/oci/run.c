/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci run: create + start, and in the foreground wait for the
 * container as runc does.  The VMM process is orphaned on purpose by
 * create (a double fork: conmon and containerd's shim, subreapers, wait on
 * it); run makes itself a subreaper first, so the orphan becomes its
 * child and its exit status (the container's) can be read.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "manage.h"
#include "oci.h"

/* The signals run forwards to the container (through its VMM process,
 * which forwards them to the process in the VM). */
static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

/* Wait for @pid, our child, forwarding signals; its exit status as a
 * shell reports it, or -1. */
static int wait_forwarding(pid_t pid)
{
	sigset_t set, old;
	int sfd, pfd, status = 0, ret = -1;

	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(&set, forwarded[i]);
	sigprocmask(SIG_BLOCK, &set, &old);
	sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	pfd = pidfd_open(pid, 0);
	if (sfd < 0 || pfd < 0) {
		oci_err("waiting for the container: %s", strerror(errno));
		goto out;
	}
	for (;;) {
		struct pollfd p[2] = { { .fd = pfd, .events = POLLIN },
				       { .fd = sfd, .events = POLLIN } };
		struct signalfd_siginfo si;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			oci_err("waiting for the container: %s", strerror(errno));
			goto out;
		}
		while (read(sfd, &si, sizeof(si)) == sizeof(si))
			if (kill(pid, (int)si.ssi_signo) && errno != ESRCH)
				oci_warn("forwarding signal %u: %s", si.ssi_signo,
					 strerror(errno));
		if (p[0].revents)
			break;
	}
	if (waitpid(pid, &status, 0) != pid) {
		oci_err("the container's VMM process %d is not run's child: %s", (int)pid,
			strerror(errno));
		goto out;
	}
	ret = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
out:
	if (sfd >= 0)
		close(sfd);
	if (pfd >= 0)
		close(pfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return ret;
}

int oci_cmd_run(const struct oci_cli *c, const struct oci_run_steps *steps)
{
	struct oci_cli forced = *c;
	struct oci_state st;
	int code;

	forced.force = true;
	if (!c->detach && prctl(PR_SET_CHILD_SUBREAPER, 1)) {
		oci_err("run: PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
		return 1;
	}
	if (steps->create(c))
		return 1;
	if (steps->start(c)) {
		steps->remove(&forced);
		return 1;
	}
	if (c->detach)
		return 0;
	if (oci_state_read(c->root, c->id, &st)) {
		oci_err("run: container %s vanished", c->id);
		return 1;
	}
	oci_state_free(&st);
	code = wait_forwarding(st.pid);
	if (!c->keep)
		steps->remove(&forced);
	return code < 0 ? 1 : code;
}
