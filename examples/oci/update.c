/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci update: a running container's resources, as far as a VM
 * can take them at run time.  What lives in the container's cgroup
 * changes (cpu.max, cpuset); the VM's size does not (no vCPU or memory
 * hotplug): a memory limit that would give the VM another size is refused,
 * a CPU quota throttles the VM's existing vCPUs.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "errf.h"
#include "manage.h"
#include "oci.h"

/* "256m" style sizes (b, k, m, g; binary units), as runc's flags take. */
static int parse_size(const char *v, uint64_t *out)
{
	char *e;
	unsigned long long n;
	unsigned int shift = 0;

	errno = 0;
	n = strtoull(v, &e, 10);
	if (errno || e == v)
		return -1;
	switch (*e | 0x20) {
	case 'b': shift = 0; e++; break;
	case 'k': shift = 10; e++; break;
	case 'm': shift = 20; e++; break;
	case 'g': shift = 30; e++; break;
	default: if (*e) return -1;
	}
	if (*e || (shift && n > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)n << shift;
	return 0;
}

static int parse_i64(const char *v, int64_t *out)
{
	char *e;

	errno = 0;
	*out = strtoll(v, &e, 10);
	return errno || e == v || *e ? -1 : 0;
}

/* --resources FILE|- into @r (a JSON linux.resources object). */
static int load_resources(const char *file, struct oci_spec *r, char *err, size_t len)
{
	json_error_t je;
	json_t *o = !strcmp(file, "-") ? json_loadf(stdin, 0, &je)
				       : json_load_file(file, 0, &je);
	int ret;

	if (!json_is_object(o)) {
		json_decref(o);
		return errf(err, len, "--resources %s: not a JSON object (%s)", file, je.text);
	}
	ret = spec_parse_resources(o, r, err, len);
	json_decref(o);
	return ret;
}

int oci_update_resources(const struct oci_cli *c, struct oci_spec *r, char *err,
			 size_t len)
{
	uint64_t u;

	memset(r, 0, sizeof(*r));
	if (c->resources && load_resources(c->resources, r, err, len))
		return -1;
	if (c->memory) {
		if (parse_size(c->memory, &u) || !u)
			return errf(err, len, "update: bad --memory %s", c->memory);
		r->mem_limit = u;
	}
	if (c->cpu_quota && parse_i64(c->cpu_quota, &r->cpu_quota))
		return errf(err, len, "update: bad --cpu-quota %s", c->cpu_quota);
	if (c->cpu_period) {
		if (parse_size(c->cpu_period, &u) || !u || u > 1000000)
			return errf(err, len, "update: bad --cpu-period %s", c->cpu_period);
		r->cpu_period = u;
	} else if (c->cpu_quota && !r->cpu_period) {
		r->cpu_period = 100000;
	}
	if (c->cpuset_cpus) {
		free(r->cpuset_list);
		if (!(r->cpuset_list = strdup(c->cpuset_cpus)))
			return errf(err, len, "out of memory");
	}
	if (c->cpuset_mems) {
		free(r->cpuset_mems);
		if (!(r->cpuset_mems = strdup(c->cpuset_mems)))
			return errf(err, len, "out of memory");
	}
	if (c->pids_limit && parse_i64(c->pids_limit, &r->pids_limit))
		return errf(err, len, "update: bad --pids-limit %s", c->pids_limit);
	return 0;
}

int oci_update_cgroup(const char *cgdir, const struct oci_spec *r, char *err, size_t len)
{
	struct oci_cgroup_limits l = {
		.cpuset_cpus = r->cpuset_list, .cpuset_mems = r->cpuset_mems,
	};
	char path[PATH_MAX + 16], v[32];
	uint64_t now = 0;
	ssize_t n;
	int fd;

	if (r->mem_limit) {
		/* The VM's RAM is fixed: memory.max says what it is. */
		snprintf(path, sizeof(path), "%s/memory.max", cgdir);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? read(fd, v, sizeof(v) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n > 0) {
			v[n] = 0;
			now = strtoull(v, NULL, 10);
		}
		if (now != spec_guest_memory(r, 0) + OCI_VMM_MEM_OVERHEAD)
			return errf(err, len, "memory cannot change at run time: the VM has "
				    "%" PRIu64 " MiB of RAM (no memory hotplug); %" PRIu64
				    " MiB asked", (uint64_t)(now > OCI_VMM_MEM_OVERHEAD ?
				    (now - OCI_VMM_MEM_OVERHEAD) >> 20 : 0),
				    spec_guest_memory(r, 0) >> 20);
	}
	if (r->cpu_period) {
		l.cpu_period = r->cpu_period;
		l.cpu_quota = r->cpu_quota;
	}
	if (r->pids_limit > 0)
		oci_warn("update: pids limit %" PRId64 " not applied on the host (it "
			 "counts the guest's processes)", r->pids_limit);
	return oci_cgroup_limit(cgdir, &l, err, len);
}

int oci_cmd_update(const struct oci_cli *c)
{
	char cg[PATH_MAX], err[1024];
	struct oci_state st;
	struct oci_spec r;
	enum oci_status s;
	int ret = oci_state_read(c->root, c->id, &st);

	if (ret) {
		oci_err("container %s %s", c->id,
			ret == -ENOENT ? "does not exist" : "has an unreadable state");
		return 1;
	}
	oci_state_free(&st);
	s = oci_state_status(&st);
	if (s == OCI_STOPPED) {
		oci_err("cannot update container %s: it is stopped", c->id);
		return 1;
	}
	if (oci_cgroup_recorded(st.dir, cg, sizeof(cg))) {
		oci_err("cannot update container %s: it has no cgroup (no "
			"linux.cgroupsPath at create, or no cgroup v2 hierarchy)", c->id);
		return 1;
	}
	ret = oci_update_resources(c, &r, err, sizeof(err)) ||
	      oci_update_cgroup(cg, &r, err, sizeof(err));
	spec_free(&r);
	if (ret) {
		oci_err("%s", err);
		return 1;
	}
	return 0;
}
