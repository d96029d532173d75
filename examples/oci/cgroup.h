/* SPDX-License-Identifier: MIT */
/*
 * The container's cgroup v2 directory (cgroup.c): the VMM process and all
 * its threads go there, with the container's limits applied to the whole
 * VM.  Functions with @err return 0, or -1 with a one-line reason.
 */
#ifndef MINIVMM_OCI_CGROUP_H
#define MINIVMM_OCI_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Where cgroup v2 is mounted. */
#define OCI_CGROUP_ROOT "/sys/fs/cgroup"
/* What the VMM process uses beyond the guest's RAM (threads, rings,
 * buffers, its own binary and libraries, page cache of the root image it
 * writes): memory.max = guest RAM + this. */
#define OCI_VMM_MEM_OVERHEAD (160ull << 20)

struct oci_cgroup_limits {
	uint64_t memory_max;	  /* bytes; 0: not written */
	int64_t cpu_quota;	  /* <= 0 with cpu_period: "max" */
	uint64_t cpu_period;	  /* 0: cpu.max not written */
	const char *cpuset_cpus; /* NULL/"": not written */
	const char *cpuset_mems;
	int64_t pids_max;	  /* <= 0: not written */
};

/* Is a cgroup v2 hierarchy mounted at @root? */
bool oci_cgroup_available(const char *root);
/*
 * linux.cgroupsPath -> the directory under @root: the cgroupfs form
 * ("/a/b" or "a/b", below @root either way), or with @systemd the
 * "slice:prefix:name" form (SLICE's directories, then prefix-name.scope;
 * no scope is registered with systemd).  @out is "" for an empty path.
 * Refused: ".." or empty components, a bad slice, a too long path.
 */
int oci_cgroup_path(const char *root, const char *cgpath, bool systemd, char *out,
		    size_t len, char *err, size_t errlen);
/* mkdir -p @dir (below @root), delegating memory, cpu, cpuset and pids
 * from each parent, then oci_cgroup_limit(). */
int oci_cgroup_create(const char *root, const char *dir,
		      const struct oci_cgroup_limits *l, char *err, size_t errlen);
/* Write the limits @l sets into @dir. */
int oci_cgroup_limit(const char *dir, const struct oci_cgroup_limits *l, char *err,
		     size_t errlen);
/* Move process @pid (0: the caller), every thread of it, into @dir.
 * 0 or -errno. */
int oci_cgroup_join(const char *dir, pid_t pid);
/* rmdir @dir once its processes have gone (waits up to a second);
 * 0 (also when it does not exist) or -errno. */
int oci_cgroup_remove(const char *dir);

/* The cgroup create recorded in @state_dir (its "cgroup" file) into
 * @out: 0, or -ENOENT (none, or not below OCI_CGROUP_ROOT). */
int oci_cgroup_recorded(const char *state_dir, char *out, size_t len);

struct oci_spec;
/*
 * create's part: the cgroup for @spec's linux.cgroupsPath below @root
 * (into @dir; "" when the spec names none, or no cgroup v2 hierarchy is
 * mounted: a warning in the log), made with memory.max = @guest_mem +
 * OCI_VMM_MEM_OVERHEAD, cpu.max from the CPU quota and the cpuset.
 * pids.limit is not applied on the host: it counts the guest's processes,
 * which the host never sees (and would cap the VMM's own threads).
 * Returns 0, or -1 with @err; a directory that could not be made leaves
 * mkdir's errno in errno (rootless create passes over EACCES/EPERM/EROFS:
 * rootless.h).
 */
int oci_cgroup_setup(const char *root, const struct oci_spec *spec, bool systemd,
		     uint64_t guest_mem, char *dir, size_t len, char *err, size_t errlen);

#endif
