/* SPDX-License-Identifier: MIT */
/*
 * The container's cgroup (cgroup v2 only): where linux.cgroupsPath puts
 * it, the limits written into it, the VMM process moved into it, and its
 * removal.  The whole VMM process -- every vCPU and I/O thread, and the
 * guest's RAM, which it maps -- is what the host accounts and limits.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "errf.h"
#include "oci.h"

/* A cgroupsPath component: not empty, not "." or "..". */
static bool bad_component(const char *s, size_t n)
{
	return !n || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.');
}

static int check_relative(const char *p, char *err, size_t errlen)
{
	for (const char *s = p; *s;) {
		size_t n = strcspn(s, "/");

		if (bad_component(s, n))
			return errf(err, errlen, "linux.cgroupsPath \"%s\": empty, . or .. "
				    "component", p);
		s += n;
		s += *s == '/';
	}
	return 0;
}

/* systemd's slice name "a-b-c.slice" lives at a.slice/a-b.slice/a-b-c.slice. */
static int slice_dir(const char *slice, char *out, size_t len)
{
	size_t n = strlen(slice), off = 0;

	if (n < 7 || strcmp(slice + n - 6, ".slice") || strchr(slice, '/'))
		return -1;
	out[0] = 0;
	if (!strcmp(slice, "-.slice"))
		return 0;
	for (size_t i = 0; i + 6 <= n; i++) {
		if (i + 6 != n && slice[i] != '-')
			continue;
		if (i == 0)
			return -1;
		off += (size_t)snprintf(out + off, off < len ? len - off : 0, "%s%.*s.slice",
					off ? "/" : "", (int)i, slice);
	}
	return off < len ? 0 : -1;
}

int oci_cgroup_path(const char *root, const char *cgpath, bool systemd, char *out,
		    size_t len, char *err, size_t errlen)
{
	char slice[PATH_MAX];
	int n;

	out[0] = 0;
	if (!cgpath || !*cgpath)
		return 0;
	if (systemd) {
		/* "slice:prefix:name" -> SLICE-DIRS/prefix-name.scope */
		const char *c1 = strchr(cgpath, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		const char *name = c2 ? c2 + 1 : "";
		char s[256], pre[256];
		size_t nl = strlen(name);

		if (!c2 || strchr(name, ':') || c1 - cgpath >= (ptrdiff_t)sizeof(s) ||
		    c2 - c1 - 1 >= (ptrdiff_t)sizeof(pre))
			return errf(err, errlen, "linux.cgroupsPath \"%s\": not "
				    "slice:prefix:name (--systemd-cgroup)", cgpath);
		snprintf(s, sizeof(s), "%.*s", (int)(c1 - cgpath), cgpath);
		snprintf(pre, sizeof(pre), "%.*s", (int)(c2 - c1 - 1), c1 + 1);
		if (!*s)
			snprintf(s, sizeof(s), "system.slice");
		if (slice_dir(s, slice, sizeof(slice)) || strchr(pre, '/') ||
		    strchr(name, '/') || bad_component(name, nl) ||
		    (nl > 6 && !strcmp(name + nl - 6, ".slice")))
			return errf(err, errlen, "linux.cgroupsPath \"%s\": a bad slice or "
				    "name (--systemd-cgroup)", cgpath);
		n = snprintf(out, len, "%s%s%s/%s%s%s.scope", root, *slice ? "/" : "", slice,
			     pre, *pre ? "-" : "", name);
	} else {
		const char *p = cgpath + (cgpath[0] == '/');

		if (check_relative(p, err, errlen))
			return -1;
		n = snprintf(out, len, "%s/%s", root, p);
	}
	if (n < 0 || (size_t)n >= len)
		return errf(err, errlen, "linux.cgroupsPath \"%s\": too long", cgpath);
	return 0;
}

/* Write @val to @dir/@file; 0 or -errno. */
static int put(const char *dir, const char *file, const char *val)
{
	char path[PATH_MAX + 64];
	int fd, ret = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	/* O_TRUNC as a shell's ">" (the kernel's files ignore it). */
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n != (ssize_t)strlen(val))
		ret = n < 0 ? -errno : -EIO;
	close(fd);
	return ret;
}

/* mkdir -p @dir below @root, each new level's parent delegating the
 * controllers the limits need (best effort: one that is not available
 * shows up when its limit is written). */
static int make_dirs(const char *root, const char *dir, char *err, size_t errlen)
{
	char p[PATH_MAX];
	size_t rl = strlen(root);

	snprintf(p, sizeof(p), "%s", dir);
	for (char *s = p + rl + 1;; s++) {
		bool end = !*s;

		if (*s != '/' && !end)
			continue;
		*s = 0;
		/* The parent (p up to the previous '/') delegates. */
		{
			char *slash = strrchr(p, '/');

			*slash = 0;
			put(p, "cgroup.subtree_control", "+memory +cpu +cpuset +pids");
			*slash = '/';
		}
		if (mkdir(p, 0755) && errno != EEXIST) {
			int e = errno;

			errf(err, errlen, "cgroup %s: %s", p, strerror(e));
			/* Kept for the caller: rootless passes over EACCES. */
			errno = e;
			return -1;
		}
		if (end)
			return 0;
		*s = '/';
	}
}

int oci_cgroup_limit(const char *dir, const struct oci_cgroup_limits *l, char *err,
		     size_t errlen)
{
	char v[64];
	int ret;

	if (l->memory_max) {
		snprintf(v, sizeof(v), "%" PRIu64, l->memory_max);
		if ((ret = put(dir, "memory.max", v)))
			return errf(err, errlen, "cgroup %s: memory.max %s: %s", dir, v,
				    strerror(-ret));
	}
	if (l->cpu_period) {
		if (l->cpu_quota > 0)
			snprintf(v, sizeof(v), "%" PRId64 " %" PRIu64, l->cpu_quota,
				 l->cpu_period);
		else
			snprintf(v, sizeof(v), "max %" PRIu64, l->cpu_period);
		if ((ret = put(dir, "cpu.max", v)))
			return errf(err, errlen, "cgroup %s: cpu.max %s: %s", dir, v,
				    strerror(-ret));
	}
	if (l->cpuset_cpus && *l->cpuset_cpus &&
	    (ret = put(dir, "cpuset.cpus", l->cpuset_cpus)))
		return errf(err, errlen, "cgroup %s: cpuset.cpus %s: %s", dir,
			    l->cpuset_cpus, strerror(-ret));
	if (l->cpuset_mems && *l->cpuset_mems &&
	    (ret = put(dir, "cpuset.mems", l->cpuset_mems)))
		return errf(err, errlen, "cgroup %s: cpuset.mems %s: %s", dir,
			    l->cpuset_mems, strerror(-ret));
	if (l->pids_max > 0) {
		snprintf(v, sizeof(v), "%" PRId64, l->pids_max);
		if ((ret = put(dir, "pids.max", v)))
			return errf(err, errlen, "cgroup %s: pids.max %s: %s", dir, v,
				    strerror(-ret));
	}
	return 0;
}

int oci_cgroup_create(const char *root, const char *dir,
		      const struct oci_cgroup_limits *l, char *err, size_t errlen)
{
	size_t rl = strlen(root);

	if (strncmp(dir, root, rl) || dir[rl] != '/' || !dir[rl + 1])
		return errf(err, errlen, "cgroup %s is not below %s", dir, root);
	if (make_dirs(root, dir, err, errlen))
		return -1;
	return oci_cgroup_limit(dir, l, err, errlen);
}

int oci_cgroup_join(const char *dir, pid_t pid)
{
	char v[32];

	snprintf(v, sizeof(v), "%d", (int)(pid ? pid : getpid()));
	return put(dir, "cgroup.procs", v);
}

int oci_cgroup_remove(const char *dir)
{
	/* Empty once the VMM process has exited (a zombie is no member). */
	for (int i = 0; i < 100; i++) {
		if (!rmdir(dir) || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -errno;
		usleep(10000);
	}
	return -EBUSY;
}

bool oci_cgroup_available(const char *root)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/cgroup.controllers", root);
	return access(p, F_OK) == 0;
}

int oci_cgroup_setup(const char *root, const struct oci_spec *spec, bool systemd,
		     uint64_t guest_mem, char *dir, size_t len, char *err, size_t errlen)
{
	struct oci_cgroup_limits l = {
		.memory_max = guest_mem + OCI_VMM_MEM_OVERHEAD,
		.cpuset_cpus = spec->cpuset_list, .cpuset_mems = spec->cpuset_mems,
	};

	dir[0] = 0;
	if (!spec->cgroups_path || !*spec->cgroups_path)
		return 0;
	if (oci_cgroup_path(root, spec->cgroups_path, systemd, dir, len, err, errlen))
		return -1;
	if (!oci_cgroup_available(root)) {
		/* As runc does without the hierarchy: the limits are the VM's
		 * size alone; said once in the log. */
		oci_warn("linux.cgroupsPath %s ignored: no cgroup v2 hierarchy at %s",
			 spec->cgroups_path, root);
		dir[0] = 0;
		return 0;
	}
	if (spec->cpu_quota > 0) {
		l.cpu_quota = spec->cpu_quota;
		l.cpu_period = spec->cpu_period ? spec->cpu_period : 100000;
	}
	if (oci_cgroup_create(root, dir, &l, err, errlen)) {
		int e = errno;

		oci_cgroup_remove(dir);
		dir[0] = 0;
		errno = e;
		return -1;
	}
	return 0;
}

int oci_cgroup_recorded(const char *state_dir, char *out, size_t len)
{
	char path[PATH_MAX + 16];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/cgroup", state_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	n = read(fd, out, len - 1);
	close(fd);
	if (n <= 0)
		return -ENOENT;
	out[n] = 0;
	/* Only a directory create made (below the hierarchy) is used. */
	if (strncmp(out, OCI_CGROUP_ROOT "/", sizeof(OCI_CGROUP_ROOT)))
		return -ENOENT;
	return 0;
}
