/* SPDX-License-Identifier: MIT */
/*
 * Per-container state: ROOT/ID/state.json (written by create), ROOT/ID/
 * started (written by start), paused (written by pause, removed by resume),
 * the image, ctl.sock, console.log.  The status is derived, never stored:
 * the VMM process alive (same pid and start time) means created, running
 * (started exists) or paused (paused exists too), otherwise stopped.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oci.h"

bool oci_valid_id(const char *id)
{
	size_t n = strlen(id);

	if (!n || n > 250 || id[0] == '.' || id[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '+' ||
		      c == '-'))
			return false;
	}
	return true;
}

void oci_state_dir(const char *root, const char *id, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", root, id);
}

uint64_t oci_proc_starttime(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* comm may hold spaces and parentheses: fields start after the last
	 * ')'; starttime is field 22, the 20th after it. */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	p++;
	/* Fields after comm: " S ppid ...": field 3 is the first token. */
	{
		char *save, *tok = strtok_r(p, " ", &save);

		for (int field = 3; tok && field < 22; field++)
			tok = strtok_r(NULL, " ", &save);
		if (tok)
			v = strtoull(tok, NULL, 10);
	}
	return v;
}

int oci_state_write(const struct oci_state *st)
{
	char path[4200], tmp[4300];
	json_error_t je;
	json_t *o, *ann;
	int ret;

	ann = json_loads(st->annotations ? st->annotations : "{}", 0, &je);
	o = json_pack("{s:s, s:s, s:i, s:s, s:s, s:I, s:o}", "ociVersion",
		      OCI_SPEC_VERSION, "id", st->id, "pid", (int)st->pid, "bundle",
		      st->bundle, "created", st->created, "starttime",
		      (json_int_t)st->starttime, "annotations",
		      ann ? ann : json_object());
	if (!o)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/state.json", st->dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	ret = json_dump_file(o, tmp, JSON_COMPACT);
	json_decref(o);
	if (ret || rename(tmp, path))
		return -EIO;
	return 0;
}

int oci_state_read(const char *root, const char *id, struct oci_state *st)
{
	char path[4200];
	const char *bundle = "", *created = "";
	json_int_t pid = 0, start = 0;
	json_error_t je;
	json_t *o, *ann = NULL;
	struct stat sb;

	memset(st, 0, sizeof(*st));
	if (!oci_valid_id(id))
		return -ENOENT;
	snprintf(st->id, sizeof(st->id), "%s", id);
	oci_state_dir(root, id, st->dir, sizeof(st->dir));
	if (stat(st->dir, &sb))
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/state.json", st->dir);
	o = json_load_file(path, 0, &je);
	if (!o)
		return errno == ENOENT ? -ENOENT : -EIO;
	if (json_unpack(o, "{s?s, s?I, s?s, s?I, s?o}", "bundle", &bundle, "pid", &pid,
			"created", &created, "starttime", &start, "annotations",
			&ann)) {
		json_decref(o);
		return -EIO;
	}
	snprintf(st->bundle, sizeof(st->bundle), "%s", bundle);
	snprintf(st->created, sizeof(st->created), "%s", created);
	st->pid = (pid_t)pid;
	st->starttime = (uint64_t)start;
	st->annotations = ann ? json_dumps(ann, JSON_COMPACT) : strdup("{}");
	json_decref(o);
	return 0;
}

void oci_state_free(struct oci_state *st)
{
	free(st->annotations);
	st->annotations = NULL;
}

enum oci_status oci_state_status(const struct oci_state *st)
{
	char path[4200];
	char stat_path[64], buf[512], *p;
	ssize_t n;
	int fd;

	/* A recorded starttime of 0 proves nothing (create never writes one
	 * now; an old state may have it): read as stopped, like a process
	 * /proc does not show (0 now). */
	if (st->pid <= 0 || !st->starttime ||
	    oci_proc_starttime(st->pid) != st->starttime)
		return OCI_STOPPED;
	/* A zombie VMM (exited, not yet reaped by conmon) is stopped. */
	snprintf(stat_path, sizeof(stat_path), "/proc/%d/stat", (int)st->pid);
	fd = open(stat_path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0) {
			buf[n] = 0;
			p = strrchr(buf, ')');
			if (p && (p[2] == 'Z' || p[2] == 'X'))
				return OCI_STOPPED;
		}
	}
	snprintf(path, sizeof(path), "%s/started", st->dir);
	if (access(path, F_OK))
		return OCI_CREATED;
	snprintf(path, sizeof(path), "%s/paused", st->dir);
	return access(path, F_OK) == 0 ? OCI_PAUSED : OCI_RUNNING;
}

const char *oci_status_name(enum oci_status s)
{
	switch (s) {
	case OCI_CREATED: return "created";
	case OCI_RUNNING: return "running";
	case OCI_PAUSED: return "paused";
	default: return "stopped";
	}
}

static int rm_one(const char *path, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path) ? -1 : 0;
	return unlink(path) && errno != ENOENT ? -1 : 0;
}

/* The device of the directory being removed (nftw has no context
 * argument; the callers are single-threaded commands). */
static dev_t rm_dev;

/* A directory on another device below it is a mount point: refuse. */
static int mount_below(const char *path, const struct stat *sb, int flag,
		       struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	return flag == FTW_D && sb->st_dev != rm_dev ? 1 : 0;
}

/*
 * Directories only are compared: on overlayfs (a container host's /run
 * or /tmp may be one) a file's st_dev is its layer's, not the overlay's,
 * so nftw's FTW_MOUNT would skip every file and the rmdir would fail.
 * Nothing is removed when a mount point is found below @dir.
 */
int oci_state_remove(const char *dir)
{
	struct stat sb;
	int r;

	if (lstat(dir, &sb))
		return errno == ENOENT ? 0 : -errno;
	rm_dev = sb.st_dev;
	r = nftw(dir, mount_below, 16, FTW_PHYS);
	if (r)
		return r > 0 ? -EBUSY : -errno;
	if (nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) && errno != ENOENT)
		return -errno;
	return 0;
}
