/* SPDX-License-Identifier: MIT */
/* config.json parsing and its mapping onto a microVM (see spec.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/openat2.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "spec.h"
#include "errf.h"
#include "parse.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* Optional string member: 0 (absent or a string), -1 (wrong type). */
static int get_str(json_t *o, const char *key, char **out)
{
	json_t *v = json_object_get(o, key);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return -1;
	*out = strdup(json_string_value(v));
	return *out ? 0 : -1;
}

static int get_bool(json_t *o, const char *key, bool *out)
{
	json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return -1;
	*out = json_is_true(v);
	return 0;
}

/* Optional unsigned integer member, at most @max. */
static int get_uint(json_t *o, const char *key, uint64_t max, uint64_t *out,
		    bool *present)
{
	json_t *v = json_object_get(o, key);

	if (present)
		*present = false;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > max)
		return -1;
	*out = (uint64_t)json_integer_value(v);
	if (present)
		*present = true;
	return 0;
}

/* An array of strings into a NULL-terminated vector. */
static int get_strv(json_t *o, const char *key, char ***out, unsigned int *n)
{
	json_t *a = json_object_get(o, key), *v;
	size_t i;

	*out = NULL;
	*n = 0;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return -1;
	*out = calloc(json_array_size(a) + 1, sizeof(char *));
	if (!*out)
		return -1;
	json_array_foreach(a, i, v) {
		if (!json_is_string(v))
			return -1;
		(*out)[i] = strdup(json_string_value(v));
		if (!(*out)[i])
			return -1;
		*n = (unsigned int)i + 1;
	}
	return 0;
}

static void free_strv(char **v, unsigned int n)
{
	for (unsigned int i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

static void add_warning(struct oci_spec *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void add_warning(struct oci_spec *s, const char *fmt, ...)
{
	char line[512], *n;
	size_t old = s->warnings ? strlen(s->warnings) : 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	n = realloc(s->warnings, old + strlen(line) + 2);
	if (!n)
		return;
	s->warnings = n;
	memcpy(n + old, line, strlen(line));
	n[old + strlen(line)] = '\n';
	n[old + strlen(line) + 1] = 0;
}

static const struct {
	const char *name;
	int res;
} rlimit_names[] = {
	{ "RLIMIT_AS", RLIMIT_AS },	    { "RLIMIT_CORE", RLIMIT_CORE },
	{ "RLIMIT_CPU", RLIMIT_CPU },	    { "RLIMIT_DATA", RLIMIT_DATA },
	{ "RLIMIT_FSIZE", RLIMIT_FSIZE },   { "RLIMIT_LOCKS", RLIMIT_LOCKS },
	{ "RLIMIT_MEMLOCK", RLIMIT_MEMLOCK }, { "RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE },
	{ "RLIMIT_NICE", RLIMIT_NICE },	    { "RLIMIT_NOFILE", RLIMIT_NOFILE },
	{ "RLIMIT_NPROC", RLIMIT_NPROC },   { "RLIMIT_RSS", RLIMIT_RSS },
	{ "RLIMIT_RTPRIO", RLIMIT_RTPRIO }, { "RLIMIT_RTTIME", RLIMIT_RTTIME },
	{ "RLIMIT_SIGPENDING", RLIMIT_SIGPENDING }, { "RLIMIT_STACK", RLIMIT_STACK },
};

const char *const spec_cap_names[SPEC_CAP_LAST + 1] = {
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER",
	"CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP",
	"CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST",
	"CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER",
	"CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
	"CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD",
	"CAP_LEASE", "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP",
	"CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
};

int spec_cap_number(const char *name)
{
	for (int i = 0; i <= SPEC_CAP_LAST; i++)
		if (!strcmp(name, spec_cap_names[i]))
			return i;
	return -1;
}

/* process.capabilities: each set an array of names (the OCI spelling,
 * "CAP_NET_ADMIN"); a set left out is empty.  A name we do not know is an
 * error: ignoring it would run the process with less (or, in a bounding
 * set, more) than asked. */
static int parse_caps(json_t *c, struct oci_spec *s, char *err, size_t len)
{
	static const char *const sets[PROTO_CAP_SETS] = {
		[PROTO_CAP_BOUNDING] = "bounding",
		[PROTO_CAP_EFFECTIVE] = "effective",
		[PROTO_CAP_PERMITTED] = "permitted",
		[PROTO_CAP_INHERITABLE] = "inheritable",
		[PROTO_CAP_AMBIENT] = "ambient",
	};
	json_t *a, *v;
	size_t i;

	if (!c || json_is_null(c))
		return 0;
	if (!json_is_object(c))
		return errf_line(err, len, "config.json: process.capabilities must be an object");
	s->has_caps = true;
	for (int k = 0; k < PROTO_CAP_SETS; k++) {
		a = json_object_get(c, sets[k]);
		if (!a || json_is_null(a))
			continue;
		if (!json_is_array(a))
			return errf_line(err, len, "config.json: process.capabilities.%s must "
				    "be an array of strings", sets[k]);
		json_array_foreach(a, i, v) {
			const char *name = json_string_value(v);
			int n;

			if (!name)
				return errf_line(err, len, "config.json: process.capabilities.%s"
					    "[%zu] is not a string", sets[k], i);
			n = spec_cap_number(name);
			if (n < 0)
				/* Echoed only if it looks like a name: the
				 * reason stays one printable line. */
				return errf_line(err, len, "config.json: unknown capability "
					    "\"%.64s\" in process.capabilities.%s (known: "
					    "CAP_CHOWN ... CAP_CHECKPOINT_RESTORE)",
					    strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
						   "abcdefghijklmnopqrstuvwxyz0123456789_") ==
						    strlen(name) ? name : "?", sets[k]);
			s->caps[k] |= 1ull << n;
		}
	}
	return 0;
}

static int parse_process(json_t *p, struct oci_spec *s, char *err, size_t len)
{
	json_t *user, *rl, *v, *cs;
	uint64_t u;
	bool has;
	size_t i;

	if (!json_is_object(p))
		return errf_line(err, len, "config.json: process is missing or not an object");
	if (get_strv(p, "args", &s->args, &s->nargs))
		return errf_line(err, len, "config.json: process.args must be an array of strings");
	if (!s->nargs || !*s->args[0])
		return errf_line(err, len, "config.json: process.args is empty");
	if (get_strv(p, "env", &s->env, &s->nenv))
		return errf_line(err, len, "config.json: process.env must be an array of strings");
	if (get_str(p, "cwd", &s->cwd))
		return errf_line(err, len, "config.json: process.cwd must be a string");
	if (!s->cwd)
		s->cwd = strdup("/");
	else if (s->cwd[0] != '/')
		return errf_line(err, len, "config.json: process.cwd \"%s\" is not absolute", s->cwd);
	if (get_bool(p, "terminal", &s->terminal) ||
	    get_bool(p, "noNewPrivileges", &s->nnp))
		return errf_line(err, len, "config.json: process.terminal/noNewPrivileges must be booleans");
	if (parse_caps(json_object_get(p, "capabilities"), s, err, len))
		return -1;
	cs = json_object_get(p, "consoleSize");
	if (json_is_object(cs)) {
		if (get_uint(cs, "height", 65535, &u, &has))
			return errf_line(err, len, "config.json: bad consoleSize.height");
		if (has)
			s->rows = (uint16_t)u;
		if (get_uint(cs, "width", 65535, &u, &has))
			return errf_line(err, len, "config.json: bad consoleSize.width");
		if (has)
			s->cols = (uint16_t)u;
	}
	user = json_object_get(p, "user");
	if (user) {
		json_t *g;

		if (!json_is_object(user))
			return errf_line(err, len, "config.json: process.user must be an object");
		if (get_uint(user, "uid", UINT32_MAX, &u, &has))
			return errf_line(err, len, "config.json: bad process.user.uid");
		if (has)
			s->uid = (uint32_t)u;
		if (get_uint(user, "gid", UINT32_MAX, &u, &has))
			return errf_line(err, len, "config.json: bad process.user.gid");
		if (has)
			s->gid = (uint32_t)u;
		if (get_uint(user, "umask", 0777, &u, &s->has_umask))
			return errf_line(err, len, "config.json: bad process.user.umask");
		if (s->has_umask)
			s->umask_v = (uint32_t)u;
		g = json_object_get(user, "additionalGids");
		if (g && !json_is_null(g)) {
			if (!json_is_array(g))
				return errf_line(err, len, "config.json: additionalGids must be an array");
			s->gids = calloc(json_array_size(g) + 1, sizeof(*s->gids));
			if (!s->gids)
				return errf_line(err, len, "out of memory");
			json_array_foreach(g, i, v) {
				if (!json_is_integer(v) || json_integer_value(v) < 0 ||
				    json_integer_value(v) > UINT32_MAX)
					return errf_line(err, len, "config.json: bad additionalGids entry");
				s->gids[s->ngids++] = (uint32_t)json_integer_value(v);
			}
		}
	}
	rl = json_object_get(p, "rlimits");
	if (rl && json_is_array(rl)) {
		s->rlimits = calloc(json_array_size(rl) + 1, sizeof(*s->rlimits));
		if (!s->rlimits)
			return errf_line(err, len, "out of memory");
		json_array_foreach(rl, i, v) {
			const char *type = json_string_value(json_object_get(v, "type"));
			uint64_t soft = 0, hard = 0;
			size_t k;

			if (!type || get_uint(v, "soft", UINT64_MAX >> 1, &soft, NULL) ||
			    get_uint(v, "hard", UINT64_MAX >> 1, &hard, NULL))
				return errf_line(err, len, "config.json: bad process.rlimits entry");
			for (k = 0; k < sizeof(rlimit_names) / sizeof(rlimit_names[0]); k++)
				if (!strcmp(type, rlimit_names[k].name))
					break;
			if (k == sizeof(rlimit_names) / sizeof(rlimit_names[0]))
				return errf_line(err, len, "config.json: unknown rlimit type %s", type);
			s->rlimits[s->nrlimits++] = (struct spec_rlimit){
				(uint32_t)rlimit_names[k].res, soft, hard };
		}
	}
	return 0;
}

static char *join_options(json_t *opts)
{
	size_t n = 1, i;
	json_t *v;
	char *s;

	json_array_foreach(opts, i, v)
		n += strlen(json_string_value(v) ? json_string_value(v) : "") + 1;
	s = calloc(1, n);
	if (!s)
		return NULL;
	json_array_foreach(opts, i, v) {
		if (!json_string_value(v))
			continue;
		if (*s)
			strcat(s, ",");
		strcat(s, json_string_value(v));
	}
	return s;
}

static bool has_option(const char *opts, const char *o)
{
	size_t l = strlen(o);

	for (const char *p = opts; p && *p;) {
		const char *c = strchr(p, ',');
		size_t n = c ? (size_t)(c - p) : strlen(p);

		if (n == l && !strncmp(p, o, l))
			return true;
		p = c ? c + 1 : p + n;
	}
	return false;
}

static const char *const guest_fs_types[] = {
	"proc", "sysfs", "tmpfs", "devpts", "mqueue", "cgroup", "cgroup2",
};

/* A bind of a host directory: a volume, shared with virtio-fs (one
 * virtiofsd each, started by the shim); the guest mounts it with the
 * bind's flags.  Propagation cannot cross into a VM: noted, ignored. */
bool spec_file_copied(const char *dest)
{
	static const char *const engine[] = { "/etc/hosts", "/etc/hostname",
					      "/etc/resolv.conf", "/run/.containerenv",
					      "/dev/termination-log" };

	for (size_t i = 0; i < sizeof(engine) / sizeof(engine[0]); i++)
		if (!strcmp(dest, engine[i]))
			return true;
	return false;
}

static int add_volume(struct oci_spec *s, struct spec_mount *sm, bool file, char *err,
		      size_t len)
{
	unsigned int ignored;
	char *opts;

	if (s->nvolumes == SPEC_MAX_VOLUMES)
		return errf_line(err, len, "bind mount of %s on %s: more than %u bind "
			    "mounts of directories and files (volumes) in one container "
			    "are not supported by minivmm-oci (one virtio-fs device each)",
			    sm->source, sm->dest, SPEC_MAX_VOLUMES);
	if (spec_volume_options(sm->options, &opts, &sm->ro, &ignored))
		return errf_line(err, len, "out of memory");
	if (ignored)
		add_warning(s, "bind mount %s on %s: options \"%s\" kept only as "
			    "\"%s\" (mount propagation and other bind options do not "
			    "apply inside the VM)", sm->source, sm->dest, sm->options, opts);
	free(sm->options);
	sm->options = opts;
	sm->kind = SPEC_MOUNT_VOLUME;
	sm->file = file;
	sm->vol = s->nvolumes++;
	return 0;
}

static int parse_mounts(json_t *a, struct oci_spec *s, char *err, size_t len)
{
	json_t *m;
	size_t i;

	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return errf_line(err, len, "config.json: mounts must be an array");
	s->mounts = calloc(json_array_size(a) + 1, sizeof(*s->mounts));
	if (!s->mounts)
		return errf_line(err, len, "out of memory");
	json_array_foreach(a, i, m) {
		struct spec_mount *sm = &s->mounts[s->nmounts];
		json_t *opts = json_object_get(m, "options");
		bool bind, known = false;
		struct stat st;

		/* Counted first: spec_free() frees what a refusal leaves. */
		s->nmounts++;
		if (!json_is_object(m) || get_str(m, "destination", &sm->dest) ||
		    !sm->dest || get_str(m, "type", &sm->type) ||
		    get_str(m, "source", &sm->source) ||
		    (opts && !json_is_array(opts)))
			return errf_line(err, len, "config.json: malformed mounts[%zu]", i);
		if (sm->dest[0] != '/')
			return errf_line(err, len, "config.json: mount destination %s is not absolute",
				    sm->dest);
		sm->options = opts ? join_options(opts) : strdup("");
		if (!sm->type)
			sm->type = strdup("none");
		if (!sm->options || !sm->type)
			return errf_line(err, len, "out of memory");
		bind = !strcmp(sm->type, "bind") || has_option(sm->options, "bind") ||
		       has_option(sm->options, "rbind");
		if (!bind) {
			for (size_t k = 0; k < sizeof(guest_fs_types) / sizeof(*guest_fs_types); k++)
				known |= !strcmp(sm->type, guest_fs_types[k]);
			if (!known)
				return errf_line(err, len, "mount of type %s on %s is not supported "
					    "by minivmm-oci", sm->type, sm->dest);
			sm->kind = SPEC_MOUNT_GUEST;
			continue;
		}
		if (!sm->source || stat(sm->source, &st))
			return errf_line(err, len, "bind mount source %s for %s: %s",
				    sm->source ? sm->source : "(none)", sm->dest,
				    strerror(errno));
		if (S_ISREG(st.st_mode) && spec_file_copied(sm->dest)) {
			sm->kind = SPEC_MOUNT_FILE_COPY;
		} else if (S_ISREG(st.st_mode)) {
			if (add_volume(s, sm, true, err, len))
				return -1;
		} else if (S_ISDIR(st.st_mode) && !strcmp(sm->dest, "/dev/shm")) {
			/* podman's per-container shm directory: a private
			 * tmpfs in the VM serves the same purpose. */
			sm->kind = SPEC_MOUNT_GUEST;
			free(sm->type);
			free(sm->options);
			sm->type = strdup("tmpfs");
			sm->options = strdup("nosuid,noexec,nodev,mode=1777,size=65536k");
			if (!sm->type || !sm->options)
				return errf_line(err, len, "out of memory");
			add_warning(s, "bind mount %s on /dev/shm replaced by a tmpfs in the VM",
				    sm->source);
		} else if (S_ISDIR(st.st_mode)) {
			if (add_volume(s, sm, false, err, len))
				return -1;
		} else {
			return errf_line(err, len, "bind mount of %s on %s is not supported by "
				    "minivmm-oci: only directories and regular files (shared "
				    "with virtio-fs) can be bound into the container's VM",
				    sm->source, sm->dest);
		}
	}
	return 0;
}

int spec_parse_resources(struct json_t *res, struct oci_spec *s, char *err, size_t len)
{
	json_t *mem = json_object_get(res, "memory"), *cpu = json_object_get(res, "cpu");
	uint64_t u;
	bool has;

	if (json_is_object(mem)) {
		json_t *lim = json_object_get(mem, "limit");

		/* -1 means "no limit" in the spec. */
		if (json_is_integer(lim) && json_integer_value(lim) > 0)
			s->mem_limit = (uint64_t)json_integer_value(lim);
	}
	if (json_is_object(cpu)) {
		json_t *q = json_object_get(cpu, "quota");
		const char *cpus = json_string_value(json_object_get(cpu, "cpus"));

		if (json_is_integer(q))
			s->cpu_quota = json_integer_value(q);
		if (get_uint(cpu, "period", UINT64_MAX, &u, &has))
			return errf_line(err, len, "config.json: bad cpu.period");
		s->cpu_period = has ? u : 100000;
		if (cpus && *cpus) {
			s->cpuset_cpus = spec_cpuset_count(cpus);
			if (!s->cpuset_cpus)
				return errf_line(err, len, "config.json: bad cpu.cpus \"%s\"", cpus);
			if (!(s->cpuset_list = strdup(cpus)))
				return errf_line(err, len, "out of memory");
		}
		if (json_string_value(json_object_get(cpu, "mems")) &&
		    !(s->cpuset_mems = strdup(json_string_value(json_object_get(cpu, "mems")))))
			return errf_line(err, len, "out of memory");
	}
	if (json_is_integer(json_object_get(json_object_get(res, "pids"), "limit")))
		s->pids_limit = json_integer_value(
			json_object_get(json_object_get(res, "pids"), "limit"));
	return 0;
}

/*
 * The network: a new namespace (no path: the shim makes one, and by
 * default connects the VM to it at start, SPEC_ANN_NETWORK), or
 * one joined by path (podman's default network: the shim connects the VM
 * to it, netns.c).  No network namespace in the
 * list is the host's network, which a VM cannot share: refused.
 */
static int parse_netns(json_t *ns, struct oci_spec *s, char *err, size_t len)
{
	bool found = false;
	json_t *v;
	size_t i;

	if (ns && !json_is_null(ns) && !json_is_array(ns))
		return errf_line(err, len, "config.json: linux.namespaces must be an array");
	json_array_foreach(ns, i, v) {
		json_t *t = json_object_get(v, "type"), *p = json_object_get(v, "path");
		const char *type = json_string_value(t);

		if (!json_is_object(v) || !type || (p && !json_is_null(p) && !json_is_string(p)))
			return errf_line(err, len, "config.json: linux.namespaces[%zu] must be "
				    "an object with a string type and path", i);
		if (strcmp(type, "network"))
			continue;
		if (found)
			return errf_line(err, len, "config.json: two network namespaces");
		found = true;
		if (json_string_value(p) && *json_string_value(p)) {
			if (json_string_value(p)[0] != '/')
				return errf_line(err, len, "network namespace path %s is not "
					    "absolute", json_string_value(p));
			if (!(s->netns_path = strdup(json_string_value(p))))
				return errf_line(err, len, "out of memory");
		}
	}
	if (!found)
		return errf_line(err, len, "the host's network (no network namespace in "
			    "config.json; podman: --network host) is not supported by "
			    "minivmm-oci: a VM cannot share the host's network stack; use "
			    "the default network or --network none");
	return 0;
}

static int parse_linux(json_t *l, struct oci_spec *s, char *err, size_t len)
{
	json_t *ns, *res, *v, *dev;
	size_t i;

	if (!l || json_is_null(l))
		return parse_netns(NULL, s, err, len);
	if (!json_is_object(l))
		return errf_line(err, len, "config.json: linux must be an object");
	ns = json_object_get(l, "namespaces");
	if (parse_netns(ns, s, err, len))
		return -1;
	if (get_strv(l, "maskedPaths", &s->masked, &s->nmasked) ||
	    get_strv(l, "readonlyPaths", &s->ropaths, &s->nropaths))
		return errf_line(err, len, "config.json: bad maskedPaths/readonlyPaths");
	v = json_object_get(l, "sysctl");
	if (json_is_object(v)) {
		const char *k;
		json_t *val;
		size_t n = json_object_size(v);

		s->sysctl_keys = calloc(n + 1, sizeof(char *));
		s->sysctl_values = calloc(n + 1, sizeof(char *));
		if (!s->sysctl_keys || !s->sysctl_values)
			return errf_line(err, len, "out of memory");
		json_object_foreach(v, k, val) {
			if (!json_is_string(val))
				return errf_line(err, len, "config.json: sysctl %s is not a string", k);
			s->sysctl_keys[s->nsysctls] = strdup(k);
			s->sysctl_values[s->nsysctls++] = strdup(json_string_value(val));
		}
	}
	dev = json_object_get(l, "devices");
	if (json_is_array(dev)) {
		s->devices = calloc(json_array_size(dev) + 1, sizeof(*s->devices));
		if (!s->devices)
			return errf_line(err, len, "out of memory");
		json_array_foreach(dev, i, v) {
			struct spec_device *d = &s->devices[s->ndevices];
			const char *t = json_string_value(json_object_get(v, "type"));
			uint64_t maj = 0, min = 0, mode = 0666, uid = 0, gid = 0;

			s->ndevices++; /* as mounts: spec_free() frees d->path */
			if (!t || get_str(v, "path", &d->path) || !d->path ||
			    get_uint(v, "major", UINT32_MAX, &maj, NULL) ||
			    get_uint(v, "minor", UINT32_MAX, &min, NULL) ||
			    get_uint(v, "fileMode", 07777, &mode, NULL) ||
			    get_uint(v, "uid", UINT32_MAX, &uid, NULL) ||
			    get_uint(v, "gid", UINT32_MAX, &gid, NULL))
				return errf_line(err, len, "config.json: bad linux.devices[%zu]", i);
			d->type = *t == 'b' ? 'b' : 'c';
			d->major = (uint32_t)maj;
			d->minor = (uint32_t)min;
			d->mode = (uint32_t)mode;
			d->uid = (uint32_t)uid;
			d->gid = (uint32_t)gid;
		}
	}
	res = json_object_get(l, "resources");
	if (json_is_object(res) && spec_parse_resources(res, s, err, len))
		return -1;
	if (json_string_value(json_object_get(l, "cgroupsPath")) &&
	    !(s->cgroups_path = strdup(json_string_value(json_object_get(l, "cgroupsPath")))))
		return errf_line(err, len, "out of memory");
	return 0;
}

int spec_load(const char *bundle, const char *path, struct oci_spec *s,
	      char *err, size_t errlen)
{
	char file[PATH_MAX], *rp = NULL;
	json_error_t je;
	json_t *root, *r, *ann;
	const char *manager;
	int ret = -1;

	memset(s, 0, sizeof(*s));
	s->umask_v = 022;
	if (!path) {
		snprintf(file, sizeof(file), "%s/config.json", bundle);
		path = file;
	}
	root = json_load_file(path, 0, &je);
	if (!root)
		return errf_line(err, errlen, "%s: %s (line %d)", path, je.text, je.line);
	if (!json_is_object(root)) {
		errf_line(err, errlen, "%s: not a JSON object", path);
		goto out;
	}
	if (get_str(root, "ociVersion", &s->oci_version)) {
		errf_line(err, errlen, "config.json: ociVersion must be a string");
		goto out;
	}
	if (!s->oci_version)
		s->oci_version = strdup("1.0.2");
	r = json_object_get(root, "root");
	if (!json_is_object(r) || get_str(r, "path", &rp) || !rp || !*rp ||
	    get_bool(r, "readonly", &s->root_ro)) {
		errf_line(err, errlen, "config.json: root.path is missing");
		goto out;
	}
	if (rp[0] == '/') {
		s->root_path = rp;
		rp = NULL;
	} else if (asprintf(&s->root_path, "%s/%s", bundle, rp) < 0) {
		s->root_path = NULL;
		errf_line(err, errlen, "out of memory");
		goto out;
	}
	{
		struct stat st;

		if (stat(s->root_path, &st) || !S_ISDIR(st.st_mode)) {
			errf_line(err, errlen, "root file system %s is not a directory",
			     s->root_path);
			goto out;
		}
	}
	if (get_str(root, "hostname", &s->hostname)) {
		errf_line(err, errlen, "config.json: hostname must be a string");
		goto out;
	}
	if (parse_process(json_object_get(root, "process"), s, err, errlen) ||
	    parse_mounts(json_object_get(root, "mounts"), s, err, errlen) ||
	    parse_linux(json_object_get(root, "linux"), s, err, errlen))
		goto out;
	ann = json_object_get(root, "annotations");
	if (json_is_object(ann) && (spec_parse_size_annotations(ann, s, err, errlen) ||
				    spec_parse_rootfs_annotation(ann, s, err, errlen) ||
				    spec_parse_network_annotation(ann, &s->net_mode, err,
								  errlen)))
		goto out;
	/* json_object_get(): NULL unless an object; json_string_value():
	 * NULL unless a string. */
	manager = json_string_value(json_object_get(ann, SPEC_ANN_MANAGER));
	s->libpod = manager && !strcmp(manager, "libpod");
	s->pod_sandbox = spec_pod_sandbox(json_is_object(ann) ? ann : NULL, s);
	s->annotations_json = json_is_object(ann) ? json_dumps(ann, JSON_COMPACT)
						  : strdup("{}");
	if (!s->annotations_json) {
		errf_line(err, errlen, "out of memory");
		goto out;
	}
	ret = 0;
out:
	free(rp);
	json_decref(root);
	return ret;
}

int spec_load_process(const char *path, struct oci_spec *s, char *err,
		      size_t errlen)
{
	json_error_t je;
	json_t *root;
	int ret;

	memset(s, 0, sizeof(*s));
	s->umask_v = 022;
	root = json_load_file(path, 0, &je);
	if (!root)
		return errf_line(err, errlen, "%s: %s (line %d)", path, je.text, je.line);
	ret = parse_process(root, s, err, errlen);
	json_decref(root);
	return ret;
}

void spec_free(struct oci_spec *s)
{
	free(s->oci_version);
	free(s->root_path);
	free_strv(s->args, s->nargs);
	free_strv(s->env, s->nenv);
	free(s->cwd);
	free(s->gids);
	free(s->hostname);
	for (unsigned int i = 0; s->mounts && i < s->nmounts; i++) {
		free(s->mounts[i].dest);
		free(s->mounts[i].type);
		free(s->mounts[i].source);
		free(s->mounts[i].options);
		free(s->mounts[i].data);
	}
	free(s->mounts);
	free(s->rlimits);
	free_strv(s->masked, s->nmasked);
	free_strv(s->ropaths, s->nropaths);
	free_strv(s->sysctl_keys, s->nsysctls);
	free_strv(s->sysctl_values, s->nsysctls);
	for (unsigned int i = 0; s->devices && i < s->ndevices; i++)
		free(s->devices[i].path);
	free(s->devices);
	free(s->annotations_json);
	free(s->cpuset_list);
	free(s->cpuset_mems);
	free(s->cgroups_path);
	free(s->warnings);
	free(s->netns_path);
	memset(s, 0, sizeof(*s));
}

uint64_t spec_guest_memory(const struct oci_spec *s, uint64_t dflt)
{
	uint64_t m;

	if (s->ann_memory)
		return s->ann_memory;
	if (!s->mem_limit)
		return dflt;
	if (s->mem_limit > (1ull << 40))
		return 1ull << 40;
	m = s->mem_limit + SPEC_MEM_OVERHEAD;
	if (m < SPEC_MEM_MIN)
		m = SPEC_MEM_MIN;
	return (m + (2ull << 20) - 1) & ~((2ull << 20) - 1);
}

unsigned int spec_guest_vcpus(const struct oci_spec *s, unsigned int dflt)
{
	uint64_t n = dflt;

	if (s->ann_vcpus)
		n = s->ann_vcpus;
	else if (s->cpu_quota > 0 && s->cpu_period > 0)
		n = ((uint64_t)s->cpu_quota + s->cpu_period - 1) / s->cpu_period;
	else if (s->cpuset_cpus)
		n = s->cpuset_cpus;
	if (n < 1)
		n = 1;
	return n > SPEC_MAX_VCPUS ? SPEC_MAX_VCPUS : (unsigned int)n;
}

unsigned int spec_cpuset_count(const char *list)
{
	unsigned int n;

	return parse_cpulist(list, NULL, 0, &n) ? 0 : n;
}

/* The process's records; the container's hostname among them for the
 * main process (where the decoders have always seen it). */
static void encode_process(const struct oci_spec *s, uint16_t rows, uint16_t cols,
			   struct proto_buf *b, bool container)
{
	for (unsigned int i = 0; i < s->nargs; i++)
		proto_rec_str(b, PROTO_REC_ARG, s->args[i]);
	for (unsigned int i = 0; i < s->nenv; i++)
		proto_rec_str(b, PROTO_REC_ENV, s->env[i]);
	proto_rec_str(b, PROTO_REC_CWD, s->cwd);
	if (container && s->hostname)
		proto_rec_str(b, PROTO_REC_HOSTNAME, s->hostname);
	proto_rec_u32(b, PROTO_REC_UID, s->uid);
	proto_rec_u32(b, PROTO_REC_GID, s->gid);
	for (unsigned int i = 0; i < s->ngids; i++)
		proto_rec_u32(b, PROTO_REC_GROUP, s->gids[i]);
	proto_rec_u32(b, PROTO_REC_UMASK, s->has_umask ? s->umask_v : 022);
	proto_rec_u8(b, PROTO_REC_TERMINAL, s->terminal);
	proto_rec_u8(b, PROTO_REC_NNP, s->nnp);
	for (int k = 0; s->has_caps && k < PROTO_CAP_SETS; k++)
		proto_rec_u64(b, (uint16_t)(PROTO_REC_CAP_BOUNDING + k), s->caps[k]);
	if (rows && cols) {
		uint8_t r[2] = { (uint8_t)rows, (uint8_t)(rows >> 8) };
		uint8_t c[2] = { (uint8_t)cols, (uint8_t)(cols >> 8) };

		proto_rec(b, PROTO_REC_ROWS, r, 2);
		proto_rec(b, PROTO_REC_COLS, c, 2);
	}
	for (unsigned int i = 0; i < s->nrlimits; i++)
		proto_rec_rlimit(b, s->rlimits[i].resource, s->rlimits[i].soft,
				 s->rlimits[i].hard);
}

void spec_encode_process(const struct oci_spec *s, uint16_t rows, uint16_t cols,
			 struct proto_buf *b)
{
	encode_process(s, rows, cols, b, false);
}

void spec_encode(const struct oci_spec *s, uint16_t rows, uint16_t cols,
		 struct proto_buf *b)
{
	encode_process(s, rows, cols, b, true);
	proto_rec_u8(b, PROTO_REC_ROOT_RO, s->root_ro);
	if (s->root_virtiofs)
		proto_rec_str(b, PROTO_REC_ROOT_FS, SPEC_ROOT_TAG);
	for (unsigned int i = 0; i < s->nmounts; i++) {
		const struct spec_mount *m = &s->mounts[i];
		const char *f[4] = { m->dest, m->type, m->source ? m->source : "",
				     m->options };

		if (m->kind == SPEC_MOUNT_GUEST) {
			proto_rec_strs(b, PROTO_REC_MOUNT, f, 4);
		} else if (m->kind == SPEC_MOUNT_VOLUME) {
			char tag[32];
			const char *v[3] = { m->dest, tag, m->options };

			snprintf(tag, sizeof(tag), SPEC_VOLUME_TAG, m->vol);
			proto_rec_strs(b, m->file ? PROTO_REC_VOLUME_FILE : PROTO_REC_VOLUME,
				       v, 3);
		} else if (m->kind == SPEC_MOUNT_FILE_COPY && s->root_virtiofs) {
			spec_encode_file(m, b);
		}
	}
	for (unsigned int i = 0; i < s->nmasked; i++)
		proto_rec_str(b, PROTO_REC_MASK, s->masked[i]);
	for (unsigned int i = 0; i < s->nropaths; i++)
		proto_rec_str(b, PROTO_REC_RO_PATH, s->ropaths[i]);
	for (unsigned int i = 0; i < s->nsysctls; i++) {
		const char *f[2] = { s->sysctl_keys[i], s->sysctl_values[i] };

		proto_rec_strs(b, PROTO_REC_SYSCTL, f, 2);
	}
	for (unsigned int i = 0; i < s->ndevices; i++) {
		const struct spec_device *d = &s->devices[i];
		uint32_t n[5] = { d->major, d->minor, d->mode, d->uid, d->gid };

		proto_rec_device(b, d->type, n, d->path, strlen(d->path));
	}
}

/*
 * The lookup of openat2(RESOLVE_IN_ROOT) done by hand, for kernels before
 * 5.6 and user-mode emulators without openat2: one component at a time with O_NOFOLLOW, a
 * symlink's target walked from @rootfd if absolute and from the directory
 * holding the link otherwise, ".." never above @rootfd, at most 40 links
 * (as the kernel).  Returns an O_PATH fd of what @path names, or -1.
 */
static int resolve_in_root(int rootfd, const char *path)
{
	char pend[2 * PATH_MAX + 2], target[PATH_MAX];
	struct stat root_st, st;
	int cur, links = 0;

	if (fstat(rootfd, &root_st) < 0 || strlen(path) >= PATH_MAX)
		return -1;
	snprintf(pend, sizeof(pend), "%s", path);
	cur = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
	while (cur >= 0) {
		char *c = pend, *end;
		size_t rest;
		ssize_t n;
		int next;

		while (*c == '/')
			c++;
		if (!*c)
			return cur;
		end = strchrnul(c, '/');
		if (*end)
			*end++ = '\0';
		rest = strlen(end);
		if (!strcmp(c, ".") ||
		    (!strcmp(c, "..") && !fstat(cur, &st) &&
		     st.st_dev == root_st.st_dev && st.st_ino == root_st.st_ino)) {
			memmove(pend, end, rest + 1);
			continue;
		}
		next = openat(cur, c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 || fstat(next, &st) < 0) {
			if (next >= 0)
				close(next);
			break;
		}
		if (!S_ISLNK(st.st_mode)) {
			close(cur);
			cur = next;
			memmove(pend, end, rest + 1);
			continue;
		}
		n = readlinkat(next, "", target, sizeof(target) - 1);
		close(next);
		if (n <= 0 || ++links > 40 || (size_t)n + 1 + rest + 1 > sizeof(pend))
			break;
		/* The link's target, then what was left after it. */
		memmove(pend + n + 1, end, rest + 1);
		memcpy(pend, target, (size_t)n);
		pend[n] = '/';
		if (target[0] == '/') {
			close(cur);
			cur = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
		}
	}
	if (cur >= 0)
		close(cur);
	return -1;
}

int spec_open_in_root(int rootfd, const char *path)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd = -1;

	/* EAGAIN: a rename raced the lookup; the kernel asks us to retry. */
	for (int i = 0; i < 8; i++) {
		fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	if (fd < 0 && (errno == ENOSYS || errno == EPERM))
		fd = resolve_in_root(rootfd, path);
	return fd;
}

/*
 * @path names something other than a directory inside the image at @root,
 * as the guest will see it: symlinks are resolved inside the image (an
 * absolute link target and ".." stop at @root, as under chroot), never on
 * the host: openat2(RESOLVE_IN_ROOT), Linux 5.6+, or where the kernel
 * lacks it (or a seccomp profile refuses it) the same walk by hand.
 */
static bool exists_in_root(const char *root, const char *path)
{
	int dir = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC), fd;
	struct stat st;
	bool ok;

	if (dir < 0)
		return false;
	fd = spec_open_in_root(dir, path);
	close(dir);
	if (fd < 0)
		return false;
	ok = fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode);
	close(fd);
	return ok;
}

int spec_check_executable(const struct oci_spec *s, char *err, size_t errlen)
{
	const char *cmd = s->args[0], *path = DEFAULT_PATH;
	char *copy, *save, *dir;
	bool found = false;

	if (strchr(cmd, '/')) {
		char full[PATH_MAX];

		if (cmd[0] == '/')
			snprintf(full, sizeof(full), "%s", cmd);
		else
			snprintf(full, sizeof(full), "%s/%s", s->cwd, cmd);
		if (exists_in_root(s->root_path, full))
			return 0;
		return errf_line(err, errlen, "exec: \"%s\": stat %s: no such file or directory",
			    cmd, cmd);
	}
	for (unsigned int i = 0; i < s->nenv; i++)
		if (!strncmp(s->env[i], "PATH=", 5))
			path = s->env[i] + 5;
	copy = strdup(path);
	if (!copy)
		return errf_line(err, errlen, "out of memory");
	for (dir = strtok_r(copy, ":", &save); dir && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		char full[PATH_MAX];

		snprintf(full, sizeof(full), "%s/%s", *dir ? dir : ".", cmd);
		found = exists_in_root(s->root_path, full);
	}
	free(copy);
	if (found)
		return 0;
	return errf_line(err, errlen, "exec: \"%s\": executable file `%s` not found in $PATH: "
		    "No such file or directory", cmd, cmd);
}

int spec_parse_signal(const char *s)
{
	char *e;
	long n;

	if (!s || !*s)
		return -1;
	n = strtol(s, &e, 10);
	if (!*e)
		return n >= 1 && n < NSIG ? (int)n : -1;
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (int i = 1; i < NSIG; i++) {
		const char *name = sigabbrev_np(i);

		if (name && !strcasecmp(s, name))
			return i;
	}
	if (!strncasecmp(s, "RTMIN+", 6) || !strncasecmp(s, "RTMAX-", 6)) {
		n = strtol(s + 6, &e, 10);
		/* Bounded before the sum: SIGRTMIN + LONG_MAX overflows. */
		if (*e || n < 0 || n > SIGRTMAX - SIGRTMIN)
			return -1;
		n = s[3] == 'I' || s[3] == 'i' ? SIGRTMIN + n : SIGRTMAX - n;
		return n >= SIGRTMIN && n <= SIGRTMAX ? (int)n : -1;
	}
	return -1;
}
