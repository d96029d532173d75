/* SPDX-License-Identifier: MIT */
/*
 * events ID: the container's statistics as JSON lines, in the shape of the
 * reference runtime's ({"type":"stats","id":ID,"data":{...}}), from two
 * places:
 *  - the host's view of the VMM process: its cgroup's cpu.stat,
 *    memory.current/max and pids.current/max when create made one, else
 *    the process's own /proc counters (CPU time, resident memory);
 *  - the VM's view: the VMM process's counters (disks, queues, NIC,
 *    console, KVM) over ctl.sock's `stats`, as minivmm --stats-json
 *    prints them ("vm").
 * The guest's own processes are not in the host's numbers: the host sees
 * one VM (its RAM, its vCPU threads), which is what it charges.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "manage.h"
#include "oci.h"

/* The VM's counters: "ok " and one JSON line (shimctl.h's
 * SHIM_STATS_MAX), plus room for the prefix. */
#define EVENTS_VM_MAX ((128u << 10) + 64u)

/* A cgroup file's first number, or its "KEY N" line's number; -1 when
 * absent or "max". */
static long long cg_value(const char *cg, const char *file, const char *key)
{
	char path[4352], line[256];
	long long v = -1;
	size_t klen = key ? strlen(key) : 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	if (!(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		const char *p = line;

		if (key) {
			if (strncmp(line, key, klen) || line[klen] != ' ')
				continue;
			p = line + klen + 1;
		}
		if (strncmp(p, "max", 3))
			v = strtoll(p, NULL, 10);
		break;
	}
	fclose(f);
	return v;
}

static void set_num(json_t *o, const char *key, long long v)
{
	if (v >= 0)
		json_object_set_new(o, key, json_integer(v));
}

/* cpu, memory and pids from the cgroup @cg; *@oom its oom_kill count. */
static void cgroup_data(json_t *data, const char *cg, long long *oom)
{
	json_t *cpu = json_object(), *usage = json_object(), *mem = json_object(),
	       *musage = json_object(), *pids = json_object();
	long long u;

	if ((u = cg_value(cg, "cpu.stat", "usage_usec")) >= 0)
		set_num(usage, "total", u * 1000);
	if ((u = cg_value(cg, "cpu.stat", "user_usec")) >= 0)
		set_num(usage, "user", u * 1000);
	if ((u = cg_value(cg, "cpu.stat", "system_usec")) >= 0)
		set_num(usage, "kernel", u * 1000);
	json_object_set_new(cpu, "usage", usage);
	set_num(musage, "usage", cg_value(cg, "memory.current", NULL));
	set_num(musage, "limit", cg_value(cg, "memory.max", NULL));
	set_num(musage, "max", cg_value(cg, "memory.peak", NULL));
	json_object_set_new(mem, "usage", musage);
	set_num(pids, "current", cg_value(cg, "pids.current", NULL));
	set_num(pids, "limit", cg_value(cg, "pids.max", NULL));
	json_object_set_new(data, "cpu", cpu);
	json_object_set_new(data, "memory", mem);
	json_object_set_new(data, "pids", pids);
	*oom = cg_value(cg, "memory.events", "oom_kill");
}

/* No cgroup: the VMM process's CPU time (/proc/PID/stat's utime and
 * stime, fields 14 and 15) and resident memory (VmRSS). */
static void process_data(json_t *data, int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut = 0, st = 0, rss_kb = 0;
	long tick = sysconf(_SC_CLK_TCK);
	json_t *usage = json_object(), *musage = json_object();
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if ((f = fopen(path, "re"))) {
		/* After the command name's closing parenthesis: field 3 on. */
		if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) &&
		    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			   &ut, &st) == 2 && tick > 0) {
			set_num(usage, "user", (long long)(ut * 1000000000ull / (unsigned long)tick));
			set_num(usage, "kernel", (long long)(st * 1000000000ull / (unsigned long)tick));
			set_num(usage, "total",
				(long long)((ut + st) * 1000000000ull / (unsigned long)tick));
		}
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if ((f = fopen(path, "re"))) {
		while (fgets(buf, sizeof(buf), f))
			if (sscanf(buf, "VmRSS: %llu kB", &rss_kb) == 1)
				set_num(musage, "usage", (long long)rss_kb * 1024);
		fclose(f);
	}
	json_object_set_new(data, "cpu", json_pack("{s:o}", "usage", usage));
	json_object_set_new(data, "memory", json_pack("{s:o}", "usage", musage));
}

/* The VM's counters from its VMM process, or NULL (+ a warning once). */
static json_t *vm_data(const char *dir, bool *warned)
{
	char *ans = malloc(EVENTS_VM_MAX);
	json_t *o = NULL;
	int ret = ans ? oci_ctl_request(dir, "stats\n", ans, EVENTS_VM_MAX,
					OCI_CTL_SIGNAL_TIMEOUT_MS) : -ENOMEM;

	if (!ret && !strncmp(ans, "ok ", 3))
		o = json_loads(ans + 3, 0, NULL);
	if (!o && !*warned) {
		oci_warn("the VM's counters: %s", ret ? strerror(-ret) :
			 !strncmp(ans, "error: ", 7) ? ans + 7 : "a cut or bad answer");
		*warned = true;
	}
	free(ans);
	return o;
}

/* One sample of a running or paused container: printed; *@oom updated. */
static int sample(const struct oci_cli *c, const struct oci_state *st, long long *oom,
		  bool *warned)
{
	char cg[4200];
	json_t *data = json_object(), *vm, *ev;
	long long kills = -1;
	int ret;

	if (!oci_cgroup_recorded(st->dir, cg, sizeof(cg)))
		cgroup_data(data, cg, &kills);
	else
		process_data(data, (int)st->pid);
	if ((vm = vm_data(st->dir, warned)))
		json_object_set_new(data, "vm", vm);
	if (kills > *oom && *oom >= 0) {
		ev = json_pack("{s:s, s:s}", "type", "oom", "id", c->id);
		json_dumpf(ev, stdout, JSON_COMPACT);
		putchar('\n');
		json_decref(ev);
	}
	*oom = kills;
	ev = json_pack("{s:s, s:s, s:o}", "type", "stats", "id", c->id, "data", data);
	ret = json_dumpf(ev, stdout, JSON_COMPACT);
	json_decref(ev);
	putchar('\n');
	if (ret || fflush(stdout)) {
		oci_err("events: writing to stdout: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int oci_cmd_events(const struct oci_cli *c)
{
	long long oom = -1;
	bool warned = false;

	for (unsigned int n = 0;; n++) {
		struct oci_state st;
		enum oci_status s;
		int ret = oci_state_read(c->root, c->id, &st);
		struct timespec ts = { c->interval_ms / 1000,
				       (long)(c->interval_ms % 1000) * 1000000L };

		if (ret) {
			if (n && ret == -ENOENT)
				return 0; /* deleted while we watched */
			oci_err("container %s %s", c->id,
				ret == -ENOENT ? "does not exist" : "has an unreadable state");
			return 1;
		}
		oci_state_free(&st);
		s = oci_state_status(&st);
		if (s != OCI_RUNNING && s != OCI_PAUSED) {
			if (n)
				return 0; /* it ended while we watched */
			oci_err("container %s is not running (it is %s)", c->id,
				oci_status_name(s));
			return 1;
		}
		if (sample(c, &st, &oom, &warned))
			return 1;
		if (c->stats)
			return 0;
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
}
