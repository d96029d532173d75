/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci's cgroup placement (examples/oci/cgroup.c, issue 32 item 4)
 * on a directory standing in for /sys/fs/cgroup:
 *  - linux.cgroupsPath in both drivers' forms -> the directory below the
 *    root (cgroupfs "/a/b" and "a/b"; systemd "slice:prefix:name", nested
 *    slices, the default slice), and the refusals (.., empty components,
 *    bad slices, a name that is a slice, too long);
 *  - create's setup: nothing without a cgroupsPath, a warning and nothing
 *    without a cgroup v2 hierarchy, otherwise the directory made with
 *    memory.max = guest RAM + the VMM's overhead, cpu.max from the quota,
 *    the cpuset, and no pids.max; a directory that cannot be made keeps
 *    mkdir's errno for the caller;
 *  - join writes the pid to cgroup.procs; remove is quiet for a directory
 *    that is gone; the path create recorded is read back only when it is
 *    below the hierarchy.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "oci.h"

static char R[64];

static void setup(void)
{
	strcpy(R, "/tmp/check_oci_cgroup.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(R));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", R);
	ck_assert_int_eq(system(cmd), 0);
}

static const char *path(const char *cg, bool systemd)
{
	static char out[PATH_MAX];
	char err[256];

	if (oci_cgroup_path("/cg", cg, systemd, out, sizeof(out), err, sizeof(err)))
		return NULL;
	return out;
}

START_TEST(test_paths)
{
	char long_path[PATH_MAX + 16];

	ck_assert_str_eq(path("/libpod_parent/libpod-abc", false), "/cg/libpod_parent/libpod-abc");
	ck_assert_str_eq(path("a/b", false), "/cg/a/b");
	ck_assert_str_eq(path("", false), "");
	ck_assert_ptr_null(path("/a/../etc", false));
	ck_assert_ptr_null(path("/a//b", false));
	ck_assert_ptr_null(path("/a/./b", false));
	ck_assert_ptr_null(path("..", false));
	ck_assert_str_eq(path("machine.slice:libpod:abc", true), "/cg/machine.slice/libpod-abc.scope");
	ck_assert_str_eq(path("user-1000.slice:podman:x1", true),
			 "/cg/user.slice/user-1000.slice/podman-x1.scope");
	ck_assert_str_eq(path(":crio:y", true), "/cg/system.slice/crio-y.scope");
	ck_assert_str_eq(path("-.slice::z", true), "/cg/z.scope");
	ck_assert_ptr_null(path("machine.slice:libpod", true));
	ck_assert_ptr_null(path("machine:libpod:abc", true));
	ck_assert_ptr_null(path("machine.slice:libpod:../x", true));
	ck_assert_ptr_null(path("machine.slice:lib/pod:x", true));
	ck_assert_ptr_null(path("-a.slice:p:x", true));
	ck_assert_ptr_null(path("a.slice:p:child.slice", true));
	ck_assert_ptr_null(path("a.slice:p:x:y", true));
	memset(long_path, 'a', sizeof(long_path) - 1);
	long_path[0] = '/';
	long_path[sizeof(long_path) - 1] = 0;
	ck_assert_ptr_null(path(long_path, false));
}
END_TEST

static void slurp(const char *dir, const char *file, char *out, size_t len)
{
	char p[PATH_MAX + 64];
	int fd;
	ssize_t n;

	snprintf(p, sizeof(p), "%s/%s", dir, file);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	n = read(fd, out, len - 1);
	ck_assert_int_ge(n, 0);
	out[n] = 0;
	close(fd);
}

static void touch(const char *dir, const char *file)
{
	char p[PATH_MAX + 64];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, file);
	fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
}

START_TEST(test_setup)
{
	struct oci_spec spec = { 0 };
	char dir[PATH_MAX], err[256], v[64], cg[PATH_MAX], rec[PATH_MAX];

	/* No cgroupsPath: nothing. */
	ck_assert_int_eq(oci_cgroup_setup(R, &spec, false, 256 << 20, dir, sizeof(dir), err,
					  sizeof(err)), 0);
	ck_assert_str_eq(dir, "");
	/* No cgroup v2 hierarchy: nothing (a warning). */
	spec.cgroups_path = (char *)"/pod/c1";
	ck_assert_int_eq(oci_cgroup_setup(R, &spec, false, 256 << 20, dir, sizeof(dir), err,
					  sizeof(err)), 0);
	ck_assert_str_eq(dir, "");
	/* A bad path is an error either way. */
	spec.cgroups_path = (char *)"/pod/../c1";
	ck_assert_int_eq(oci_cgroup_setup(R, &spec, false, 256 << 20, dir, sizeof(dir), err,
					  sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, ".."));

	/* A hierarchy: the directories made; writing a limit to a file the
	 * stand-in lacks fails clearly (the real one has them all). */
	touch(R, "cgroup.controllers");
	spec.cgroups_path = (char *)"/pod/c1";
	ck_assert_int_eq(oci_cgroup_setup(R, &spec, false, 256 << 20, dir, sizeof(dir), err,
					  sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "memory.max"));
	ck_assert_str_eq(dir, "");
	/* A directory that cannot be made leaves mkdir's errno for the
	 * caller (rootless create passes over EACCES): here a file is in
	 * the way (ENOTDIR; root, which these tests may run as, passes any
	 * mode bits). */
	touch(R, "file");
	spec.cgroups_path = (char *)"/file/c1";
	errno = 0;
	ck_assert_int_eq(oci_cgroup_setup(R, &spec, false, 256 << 20, dir, sizeof(dir), err,
					  sizeof(err)), -1);
	ck_assert_int_eq(errno, ENOTDIR);
	ck_assert_ptr_nonnull(strstr(err, "file/c1"));
	ck_assert_str_eq(dir, "");

	/* The limits, into a directory that has the files. */
	snprintf(cg, sizeof(cg), "%s/pod/c2", R);
	ck_assert_int_eq(mkdir(cg, 0755), 0);
	touch(cg, "memory.max");
	touch(cg, "cpu.max");
	touch(cg, "cpuset.cpus");
	touch(cg, "cpuset.mems");
	touch(cg, "pids.max");
	touch(cg, "cgroup.procs");
	spec.cgroups_path = (char *)"pod/c2";
	spec.cpu_quota = 150000;
	spec.cpu_period = 100000;
	spec.cpuset_list = (char *)"0-1";
	spec.cpuset_mems = (char *)"0";
	spec.pids_limit = 10;
	ck_assert_int_eq(oci_cgroup_setup(R, &spec, false, 256 << 20, dir, sizeof(dir), err,
					  sizeof(err)), 0);
	ck_assert_str_eq(dir, cg);
	slurp(cg, "memory.max", v, sizeof(v));
	ck_assert_uint_eq(strtoull(v, NULL, 10), (256ull << 20) + OCI_VMM_MEM_OVERHEAD);
	slurp(cg, "cpu.max", v, sizeof(v));
	ck_assert_str_eq(v, "150000 100000");
	slurp(cg, "cpuset.cpus", v, sizeof(v));
	ck_assert_str_eq(v, "0-1");
	slurp(cg, "cpuset.mems", v, sizeof(v));
	ck_assert_str_eq(v, "0");
	slurp(cg, "pids.max", v, sizeof(v));
	ck_assert_str_eq(v, ""); /* the guest's processes are not the host's */

	ck_assert_int_eq(oci_cgroup_join(cg, 0), 0);
	slurp(cg, "cgroup.procs", v, sizeof(v));
	ck_assert_int_eq(atoi(v), getpid());
	ck_assert_int_eq(oci_cgroup_join(R, 4242), -ENOENT);

	/* Outside the root: refused. */
	ck_assert_int_eq(oci_cgroup_create(R, "/tmp", &(struct oci_cgroup_limits){ 0 }, err,
					   sizeof(err)), -1);
	ck_assert_int_eq(oci_cgroup_remove("/nonexistent/cgroup"), 0);

	/* What create recorded for delete and update: only a path below
	 * the hierarchy counts. */
	ck_assert_int_eq(oci_cgroup_recorded(R, cg, sizeof(cg)), -ENOENT);
	snprintf(rec, sizeof(rec), "%s/cgroup", R);
	ck_assert_int_eq(oci_file_write_atomic(rec, "/sys/fs/cgroup/pod/c3"), 0);
	ck_assert_int_eq(oci_cgroup_recorded(R, cg, sizeof(cg)), 0);
	ck_assert_str_eq(cg, "/sys/fs/cgroup/pod/c3");
	ck_assert_int_eq(oci_file_write_atomic(rec, "/etc"), 0);
	ck_assert_int_eq(oci_cgroup_recorded(R, cg, sizeof(cg)), -ENOENT);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oci_cgroup");
	TCase *tc = tcase_create("cgroup");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_paths);
	tcase_add_test(tc, test_setup);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
