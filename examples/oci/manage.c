/* SPDX-License-Identifier: MIT */
/*
 * The commands that manage containers without creating one: pause and
 * resume (the VM's vCPUs, through the VMM process's ctl.sock), list (every
 * container under the state root) and spec (a starting config.json).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "manage.h"
#include "oci.h"

/*
 * runc's rules: pause wants a running container, resume a paused one.
 * The marker ROOT/ID/paused is written once the VMM answered, so a
 * `state` racing with this command says running until the vCPUs stopped
 * (they stop before the answer: vmm_pause() returns once none runs).
 */
int oci_cmd_pause(const struct oci_cli *c, bool pause)
{
	enum oci_status want = pause ? OCI_RUNNING : OCI_PAUSED, s;
	char marker[4200];
	struct oci_state st;
	int ret = oci_state_read(c->root, c->id, &st);

	if (ret) {
		oci_err("container %s %s", c->id,
			ret == -ENOENT ? "does not exist" : "has an unreadable state");
		return 1;
	}
	oci_state_free(&st);
	s = oci_state_status(&st);
	if (s != want) {
		oci_err("cannot %s container %s: it is %s", pause ? "pause" : "resume",
			c->id, oci_status_name(s));
		return 1;
	}
	if (oci_ctl_command(st.dir, c->id, pause ? "pause\n" : "resume\n",
			    OCI_CTL_SIGNAL_TIMEOUT_MS))
		return 1;
	snprintf(marker, sizeof(marker), "%s/paused", st.dir);
	if (pause ? oci_file_write_atomic(marker, "") : unlink(marker) && errno != ENOENT) {
		oci_err("%s: %s", marker, strerror(errno));
		return 1;
	}
	return 0;
}

static json_t *list_entry(const struct oci_state *st, enum oci_status s)
{
	json_error_t je;
	json_t *ann = json_loads(st->annotations ? st->annotations : "{}", 0, &je);

	return json_pack("{s:s, s:s, s:i, s:s, s:s, s:s, s:s, s:s, s:o}", "ociVersion",
			 OCI_SPEC_VERSION, "id", st->id, "pid",
			 s == OCI_STOPPED ? 0 : (int)st->pid, "status",
			 oci_status_name(s), "bundle", st->bundle, "rootfs", "",
			 "created", st->created, "owner", "",
			 "annotations", ann ? ann : json_object());
}

static int id_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The container ids under @root, sorted; NULL-free array of *n. */
static char **list_ids(const char *root, size_t *n, int *err)
{
	DIR *d = opendir(root);
	struct dirent *e;
	char **ids = NULL, **grown;
	size_t cap = 0;

	*n = 0;
	*err = 0;
	if (!d) {
		*err = errno == ENOENT ? 0 : -errno;
		return NULL;
	}
	while ((e = readdir(d))) {
		if (!oci_valid_id(e->d_name))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			grown = realloc(ids, cap * sizeof(*ids));
			if (!grown)
				goto nomem;
			ids = grown;
		}
		if (!(ids[*n] = strdup(e->d_name)))
			goto nomem;
		++*n;
	}
	closedir(d);
	if (*n)
		qsort(ids, *n, sizeof(*ids), id_cmp);
	return ids;
nomem:
	closedir(d);
	*err = -ENOMEM;
	return ids;
}

/* The user owning the container's state directory (who created it). */
static const char *owner_name(const char *dir, char *num, size_t len)
{
	struct passwd *pw;
	struct stat sb;

	if (stat(dir, &sb))
		return "?";
	pw = getpwuid(sb.st_uid);
	if (pw)
		return pw->pw_name;
	snprintf(num, len, "#%u", (unsigned int)sb.st_uid);
	return num;
}

/* One container's line or JSON entry; a directory that is no container
 * (no readable state.json) is skipped, as runc skips it. */
static void list_one(const struct oci_cli *c, const char *id, json_t *arr)
{
	struct oci_state st;
	enum oci_status s;
	char num[16];

	if (oci_state_read(c->root, id, &st))
		return;
	s = oci_state_status(&st);
	if (arr)
		json_array_append_new(arr, list_entry(&st, s));
	else if (c->quiet)
		printf("%s\n", st.id);
	else
		printf("%-12s %-8d %-8s %-40s %-30s %s\n", st.id,
		       s == OCI_STOPPED ? 0 : (int)st.pid, oci_status_name(s),
		       st.bundle, st.created, owner_name(st.dir, num, sizeof(num)));
	oci_state_free(&st);
}

int oci_cmd_list(const struct oci_cli *c)
{
	bool json = c->format && !strcmp(c->format, "json");
	json_t *arr = json ? json_array() : NULL;
	size_t n;
	int err;
	char **ids = list_ids(c->root, &n, &err), *text;

	if (err || (json && !arr)) {
		oci_err("listing %s: %s", c->root, strerror(err ? -err : ENOMEM));
		for (size_t i = 0; i < n; i++)
			free(ids[i]);
		free(ids);
		json_decref(arr);
		return 1;
	}
	if (!json && !c->quiet)
		printf("%-12s %-8s %-8s %-40s %-30s %s\n", "ID", "PID", "STATUS",
		       "BUNDLE", "CREATED", "OWNER");
	for (size_t i = 0; i < n; i++) {
		list_one(c, ids[i], arr);
		free(ids[i]);
	}
	free(ids);
	if (!json)
		return 0;
	text = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
	if (!text) {
		oci_err("out of memory");
		return 1;
	}
	printf("%s\n", text);
	free(text);
	return 0;
}

/*
 * The starting point runc's `spec` writes, in the same shape: sh on a
 * terminal as root in ./rootfs (read-only), the usual mounts, its own
 * namespaces; no ambient capabilities (they would need the inheritable
 * set, which the default leaves empty, and the guest init refuses that); --rootless adds a user namespace mapping the caller's ids
 * to root and drops what an unprivileged user cannot have.
 */
static json_t *default_spec(bool rootless)
{
	const char *caps = "[\"CAP_AUDIT_WRITE\", \"CAP_KILL\", \"CAP_NET_BIND_SERVICE\"]";
	json_error_t je;
	json_t *spec, *ns, *m;
	char text[4096];

	snprintf(text, sizeof(text),
		 "{\"ociVersion\": \"" OCI_SPEC_VERSION "\","
		 " \"process\": {\"terminal\": true, \"user\": {\"uid\": 0, \"gid\": 0},"
		 "  \"args\": [\"sh\"], \"env\": [\"PATH=/usr/local/sbin:/usr/local/bin:"
		 "/usr/sbin:/usr/bin:/sbin:/bin\", \"TERM=xterm\"], \"cwd\": \"/\","
		 "  \"capabilities\": {\"bounding\": %s, \"effective\": %s,"
		 "   \"permitted\": %s},"
		 "  \"rlimits\": [{\"type\": \"RLIMIT_NOFILE\", \"hard\": 1024,"
		 "   \"soft\": 1024}], \"noNewPrivileges\": true},"
		 " \"root\": {\"path\": \"rootfs\", \"readonly\": true},"
		 " \"hostname\": \"minivmm\","
		 " \"mounts\": ["
		 "  {\"destination\": \"/proc\", \"type\": \"proc\", \"source\": \"proc\"},"
		 "  {\"destination\": \"/dev\", \"type\": \"tmpfs\", \"source\": \"tmpfs\","
		 "   \"options\": [\"nosuid\", \"strictatime\", \"mode=755\", \"size=65536k\"]},"
		 "  {\"destination\": \"/dev/pts\", \"type\": \"devpts\", \"source\": \"devpts\","
		 "   \"options\": [\"nosuid\", \"noexec\", \"newinstance\", \"ptmxmode=0666\","
		 "    \"mode=0620\"%s]},"
		 "  {\"destination\": \"/dev/shm\", \"type\": \"tmpfs\", \"source\": \"shm\","
		 "   \"options\": [\"nosuid\", \"noexec\", \"nodev\", \"mode=1777\", \"size=65536k\"]},"
		 "  {\"destination\": \"/dev/mqueue\", \"type\": \"mqueue\", \"source\": \"mqueue\","
		 "   \"options\": [\"nosuid\", \"noexec\", \"nodev\"]},"
		 "  {\"destination\": \"/sys\", \"type\": \"sysfs\", \"source\": \"sysfs\","
		 "   \"options\": [\"nosuid\", \"noexec\", \"nodev\", \"ro\"]}],"
		 " \"linux\": {\"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"network\"},"
		 "  {\"type\": \"ipc\"}, {\"type\": \"uts\"}, {\"type\": \"mount\"}],"
		 "  \"maskedPaths\": [\"/proc/acpi\", \"/proc/kcore\", \"/proc/keys\","
		 "   \"/proc/latency_stats\", \"/proc/timer_list\", \"/proc/timer_stats\","
		 "   \"/proc/sched_debug\", \"/sys/firmware\", \"/proc/scsi\"],"
		 "  \"readonlyPaths\": [\"/proc/asound\", \"/proc/bus\", \"/proc/fs\","
		 "   \"/proc/irq\", \"/proc/sys\", \"/proc/sysrq-trigger\"]}}",
		 caps, caps, caps, rootless ? "" : ", \"gid=5\"");
	spec = json_loads(text, 0, &je);
	if (!spec || !rootless)
		return spec;
	ns = json_object_get(json_object_get(spec, "linux"), "namespaces");
	m = json_pack("{s:[{s:i, s:i, s:i}], s:[{s:i, s:i, s:i}]}", "uidMappings",
		      "containerID", 0, "hostID", (int)getuid(), "size", 1,
		      "gidMappings", "containerID", 0, "hostID", (int)getgid(), "size", 1);
	if (!m || json_array_append_new(ns, json_pack("{s:s}", "type", "user")) ||
	    json_object_update(json_object_get(spec, "linux"), m)) {
		json_decref(m);
		json_decref(spec);
		return NULL;
	}
	json_decref(m);
	return spec;
}

int oci_cmd_spec(const struct oci_cli *c)
{
	const char *bundle = c->bundle ? c->bundle : ".";
	json_t *spec = default_spec(c->rootless);
	char path[4200];
	int fd, ret = 0;

	if (!spec) {
		oci_err("out of memory");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/config.json", bundle);
	/* O_EXCL: an existing config.json is the user's; never replaced. */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		oci_err("%s: %s", path, errno == EEXIST ? "file exists" : strerror(errno));
		json_decref(spec);
		return 1;
	}
	if (json_dumpfd(spec, fd, JSON_INDENT(2)) || write(fd, "\n", 1) != 1 ||
	    fsync(fd)) {
		oci_err("writing %s: %s", path, strerror(errno));
		unlink(path);
		ret = 1;
	}
	close(fd);
	json_decref(spec);
	return ret;
}
