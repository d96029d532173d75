/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci pause / resume without a VM (issue 32, item 3):
 *  - the VMM process's side (examples/oci/shim-ctl.c): `pause` and
 *    `resume` on ctl.sock call its pause hook only once the container's
 *    process was started, and answer the hook's error as one line;
 *  - the command's side (examples/oci/manage.c): running -> paused ->
 *    running through a fake VMM process's ctl.sock, the state's status
 *    following (the paused marker), and the refusals runc makes (pause a
 *    created or paused container, resume a running one), with the fake
 *    VMM never asked.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"
#include "manage.h"
#include "oci.h"
#include "oci_ctl_fixture.h"
#include "shimctl.h"

/* ---- the VMM process's side ---- */

static struct {
	int calls, last, ret;
} H;

static int pause_hook(void *opaque, bool pause)
{
	(void)opaque;
	H.calls++;
	H.last = pause;
	return H.ret;
}

START_TEST(test_shim_pause)
{
	char dir[] = "/tmp/check_oci_pause.XXXXXX", ans[256];
	struct oci_settings set = { 0 };
	struct oci_spec spec = { 0 };
	struct oci_shim_params p = { .spec = &spec, .set = &set, .tty_slave = -1,
				     .ready_fd = -1 };
	struct shim_ctl s;
	int sp[2];

	memset(&H, 0, sizeof(H));
	ck_assert_ptr_nonnull(mkdtemp(dir));
	p.state_dir = dir;
	p.listen_fd = bind_ctl(dir);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	shim_ctl_init(&s, &p, sp[0], no_stop, NULL);

	/* No hook: a clear "not supported", whatever the state. */
	s.started = true;
	request(&s, dir, "pause\n", ans, sizeof(ans));
	ck_assert_str_eq(ans, "error: pausing the VM: Operation not supported\n");

	/* Created (no process yet): refused, the hook not called. */
	s.pause_vm = pause_hook;
	s.started = false;
	request(&s, dir, "pause\n", ans, sizeof(ans));
	ck_assert_str_eq(ans, "error: the container is not running\n");
	ck_assert_int_eq(H.calls, 0);

	/* Started: pause, then resume, each one call of the hook. */
	s.started = true;
	request(&s, dir, "pause\n", ans, sizeof(ans));
	ck_assert_str_eq(ans, "ok\n");
	ck_assert_int_eq(H.calls, 1);
	ck_assert_int_eq(H.last, 1);
	request(&s, dir, "resume\n", ans, sizeof(ans));
	ck_assert_str_eq(ans, "ok\n");
	ck_assert_int_eq(H.calls, 2);
	ck_assert_int_eq(H.last, 0);

	/* The library's error reaches the client as one line. */
	H.ret = -ETIMEDOUT;
	request(&s, dir, "pause\n", ans, sizeof(ans));
	ck_assert_str_eq(ans, "error: pausing the VM: Connection timed out\n");

	/* Near misses are not commands: no answer, no call. */
	H.calls = 0;
	request(&s, dir, "signal 0\n", ans, sizeof(ans));
	ck_assert_str_eq(ans, "ok\n");
	ck_assert_int_eq(H.calls, 0);

	shim_ctl_finish(&s);
	close(sp[0]);
	close(sp[1]);
	close(p.listen_fd);
	rm_rf(dir);
}
END_TEST

/* ---- the command's side ---- */

START_TEST(test_cmd_pause)
{
	char root[] = "/tmp/check_oci_pausecmd.XXXXXX", path[4200];
	struct oci_state st = { 0 }, rd;
	struct fake_vmm f = { .answer = "ok\n" };
	struct oci_cli c = { .id = "c1" };
	pthread_t t;

	ck_assert_ptr_nonnull(mkdtemp(root));
	c.root = root;
	snprintf(st.id, sizeof(st.id), "c1");
	oci_state_dir(root, "c1", st.dir, sizeof(st.dir));
	ck_assert_int_eq(mkdir(st.dir, 0700), 0);
	snprintf(st.bundle, sizeof(st.bundle), "/bundle");
	/* This process plays the VMM process: alive, same start time. */
	st.pid = getpid();
	st.starttime = oci_proc_starttime(st.pid);
	st.annotations = (char *)"{}";
	ck_assert_int_eq(oci_state_write(&st), 0);
	f.listen = bind_ctl(st.dir);
	ck_assert_int_eq(pthread_create(&t, NULL, fake_vmm, &f), 0);

	/* Created: neither pause nor resume reaches the VMM. */
	ck_assert_int_eq(oci_cmd_pause(&c, true), 1);
	ck_assert_int_eq(oci_cmd_pause(&c, false), 1);
	ck_assert_int_eq(f.requests, 0);

	snprintf(path, sizeof(path), "%s/started", st.dir);
	ck_assert_int_eq(oci_file_write_atomic(path, ""), 0);
	ck_assert_int_eq(oci_cmd_pause(&c, false), 1); /* running: no resume */
	ck_assert_int_eq(f.requests, 0);

	ck_assert_int_eq(oci_cmd_pause(&c, true), 0);
	ck_assert_int_eq(f.requests, 1);
	ck_assert_str_eq(f.got, "pause\n");
	ck_assert_int_eq(oci_state_read(root, "c1", &rd), 0);
	ck_assert_int_eq(oci_state_status(&rd), OCI_PAUSED);
	ck_assert_str_eq(oci_status_name(OCI_PAUSED), "paused");
	oci_state_free(&rd);
	ck_assert_int_eq(oci_cmd_pause(&c, true), 1); /* paused already */
	ck_assert_int_eq(f.requests, 1);

	ck_assert_int_eq(oci_cmd_pause(&c, false), 0);
	ck_assert_int_eq(f.requests, 2);
	ck_assert_str_eq(f.got, "resume\n");
	ck_assert_int_eq(oci_state_read(root, "c1", &rd), 0);
	ck_assert_int_eq(oci_state_status(&rd), OCI_RUNNING);
	oci_state_free(&rd);

	/* The VMM refuses: an error, and the status does not change. */
	f.answer = "error: pausing the VM: Connection timed out\n";
	ck_assert_int_eq(oci_cmd_pause(&c, true), 1);
	ck_assert_int_eq(oci_state_read(root, "c1", &rd), 0);
	ck_assert_int_eq(oci_state_status(&rd), OCI_RUNNING);
	oci_state_free(&rd);

	__atomic_store_n(&f.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	close(f.listen);
	rm_rf(root);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oci_pause");
	TCase *tc = tcase_create("pause");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_shim_pause);
	tcase_add_test(tc, test_cmd_pause);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
