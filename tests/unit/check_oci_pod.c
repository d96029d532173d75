/* SPDX-License-Identifier: MIT */
/*
 * Pods in minivmm-oci: one VM per network namespace.  A pod's sandbox
 * container (Kubernetes' pause through containerd or CRI-O, podman's
 * infra container) is told apart at spec_load() (spec_pod_sandbox():
 * its VM gets no NIC), and a second VM's tap in a namespace already
 * served is refused -- by the tap's rename, so that two creates racing
 * in one namespace cannot both attach queues to one tap (netns_tap_open()
 * in a network namespace of its own; needs root and /dev/net/tun).
 */
#include <check.h>
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "netns.h"
#include "spec.h"

static char dir[64];
static char err[512];

static void setup(void)
{
	char p[128];

	strcpy(dir, "/tmp/check_oci_pod.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/rootfs", dir);
	ck_assert_int_eq(mkdir(p, 0755), 0);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* spec_load() of a config.json with process.args @args (a JSON array)
 * and annotations @ann (a JSON object); returns its pod_sandbox. */
static bool sandbox(const char *args, const char *ann)
{
	struct oci_spec s;
	char p[128];
	FILE *f;
	bool r;

	snprintf(p, sizeof(p), "%s/config.json", dir);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"root\":{\"path\":\"rootfs\"},\"process\":{\"args\":%s},"
		"\"linux\":{\"namespaces\":[{\"type\":\"network\","
		"\"path\":\"/run/netns/x\"}]},\"annotations\":%s}", args, ann);
	fclose(f);
	ck_assert_msg(spec_load(dir, NULL, &s, err, sizeof(err)) == 0, "%s", err);
	r = s.pod_sandbox;
	spec_free(&s);
	return r;
}

START_TEST(test_sandbox_cri)
{
	/* containerd's CRI: the pause container, then the pod's containers. */
	ck_assert(sandbox("[\"/pause\"]",
			  "{\"io.kubernetes.cri.container-type\":\"sandbox\"}"));
	ck_assert(!sandbox("[\"sh\"]",
			   "{\"io.kubernetes.cri.container-type\":\"container\"}"));
	/* CRI-O's. */
	ck_assert(sandbox("[\"/pause\"]",
			  "{\"io.kubernetes.cri-o.ContainerType\":\"sandbox\"}"));
	ck_assert(!sandbox("[\"sh\"]",
			   "{\"io.kubernetes.cri-o.ContainerType\":\"container\"}"));
	/* Not a string, or no such annotation: an ordinary container. */
	ck_assert(!sandbox("[\"/pause\"]", "{\"io.kubernetes.cri.container-type\":1}"));
	ck_assert(!sandbox("[\"/pause\"]", "{}"));
}
END_TEST

START_TEST(test_sandbox_podman_infra)
{
	/* podman 4.3's infra container: process ["/catatonit", "-P"], no
	 * annotation that says so (as read from podman pod create). */
	ck_assert(sandbox("[\"/catatonit\",\"-P\"]",
			  "{\"io.container.manager\":\"libpod\"}"));
	ck_assert(sandbox("[\"catatonit\",\"-P\"]", "{}"));
	/* catatonit as an ordinary container's init, or other arguments. */
	ck_assert(!sandbox("[\"/catatonit\",\"--\",\"sh\"]", "{}"));
	ck_assert(!sandbox("[\"/catatonit\"]", "{}"));
	ck_assert(!sandbox("[\"/catatonit\",\"-P\",\"x\"]", "{}"));
	ck_assert(!sandbox("[\"/bin/notcatatonit\",\"-P\"]", "{}"));
}
END_TEST

/* Interfaces of the current namespace other than lo and NETNS_TAP. */
static int others(void)
{
	struct if_nameindex *l = if_nameindex(), *i;
	int n = 0;

	if (!l)
		return -1;
	for (i = l; i->if_index; i++)
		if (strcmp(i->if_name, "lo") && strcmp(i->if_name, NETNS_TAP))
			n++;
	if_freenameindex(l);
	return n;
}

/* In a network namespace of its own: exit 0 (checked), 20 (cannot be set
 * up here), or the number of the check that failed. */
static int second_vm(void)
{
	int a[4], b[4];
	char frame[60] = { 0 };

	if (unshare(CLONE_NEWNET))
		return errno == EPERM ? 20 : 1;
	if (access("/dev/net/tun", R_OK | W_OK))
		return 20;
	if (netns_tap_open(4, a, err, sizeof(err))) {
		fprintf(stderr, "first tap: %s\n", err);
		return 2;
	}
	if (!if_nametoindex(NETNS_TAP))
		return 3;
	err[0] = 0;
	if (netns_tap_open(4, b, err, sizeof(err)) != -1)
		return 4;
	if (!strstr(err, "already served by another container's VM"))
		return 5;
	/* The loser's tap went with its fds, under its temporary name. */
	if (others() != 0)
		return 6;
	/* The first VM's tap is still whole: a frame goes out of queue 3
	 * (a tap that lost its device answers EIO/EBADFD). */
	frame[0] = 0x02; /* destination MAC, locally administered */
	if (write(a[3], frame, sizeof(frame)) < 0 && errno != EAGAIN) {
		fprintf(stderr, "write to the first tap: %s\n", strerror(errno));
		return 7;
	}
	for (int i = 0; i < 4; i++)
		close(a[i]);
	/* Once the first VM is gone, another gets the namespace. */
	if (netns_tap_open(2, b, err, sizeof(err))) {
		fprintf(stderr, "after the first: %s\n", err);
		return 8;
	}
	return 0;
}

/* RACERS creates at once in one fresh namespace (each in its own process,
 * released together, holding its fds until all have tried): exactly one
 * may get the tap.  Exit as second_vm(); 30 + the winners when not 1. */
#define RACERS 8
static int race(void)
{
	int go[2], res[2], done[2], fds[2], wins = 0;
	char c;

	if (unshare(CLONE_NEWNET))
		return errno == EPERM ? 20 : 1;
	if (access("/dev/net/tun", R_OK | W_OK))
		return 20;
	if (pipe(go) || pipe(res) || pipe(done))
		return 2;
	for (int k = 0; k < RACERS; k++) {
		pid_t pid = fork();

		if (pid < 0)
			return 3;
		if (pid)
			continue;
		close(go[1]);
		close(done[1]);
		while (read(go[0], &c, 1) < 0 && errno == EINTR)
			;
		c = netns_tap_open(2, fds, err, sizeof(err)) ? '0' : '1';
		if (write(res[1], &c, 1) != 1)
			_exit(1);
		while (read(done[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(go[1]); /* all at once */
	for (int k = 0; k < RACERS; k++) {
		if (read(res[0], &c, 1) != 1)
			return 4;
		wins += c == '1';
	}
	close(done[1]);
	while (wait(NULL) > 0)
		;
	return wins == 1 ? 0 : 30 + wins;
}

/* Run @body in a child process, which must exit 0; 20: not run here. */
static void in_child(int (*body)(void))
{
	pid_t pid = fork();
	int st;

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(body());
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 20) {
		printf("check_oci_pod: no network namespace or /dev/net/tun here "
		       "(not root?): the tap case was not run\n");
		return;
	}
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "check %d failed",
		      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

START_TEST(test_second_vm_refused)
{
	in_child(second_vm);
}
END_TEST

START_TEST(test_racing_creates)
{
	/* Several rounds: a race lost by chance once proves little. */
	for (int i = 0; i < 20; i++)
		in_child(race);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oci_pod");
	TCase *tc = tcase_create("pod");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_sandbox_cri);
	tcase_add_test(tc, test_sandbox_podman_infra);
	tcase_add_test(tc, test_second_vm_refused);
	tcase_add_test(tc, test_racing_creates);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
