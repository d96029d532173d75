/* SPDX-License-Identifier: MIT */
/* The container's root file system: an ext4 image (image.c) or the
 * bundle's directory over virtio-fs (volumes.c, spec.h SPEC_ROOTFS_*). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errf.h"
#include "spec.h"

/* Make @path (absolute, as the guest sees it) inside the tree at @rootfd:
 * every missing directory, and for @file an empty file as its last
 * component.  Returns 0 or -errno. */
static int make_in_root(int rootfd, const char *path, bool file)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);

	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = '\0';
	for (char *end = buf; *end;) {
		char *base, saved;
		bool last;
		int fd, parent;

		while (*end == '/')
			end++;
		end = strchrnul(end, '/');
		last = !*end;
		saved = *end;
		*end = '\0';
		fd = spec_open_in_root(rootfd, buf);
		if (fd >= 0) {
			close(fd);
			*end = saved;
			continue;
		}
		if (errno != ENOENT)
			return -errno;
		/* The parent exists (made or found one step before). */
		base = strrchr(buf, '/');
		*base = '\0';
		parent = spec_open_in_root(rootfd, base == buf ? "/" : buf);
		*base = '/';
		if (parent < 0)
			return -errno;
		if (last && file) {
			fd = openat(parent, base + 1,
				    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
			if (fd >= 0)
				close(fd);
		} else {
			fd = mkdirat(parent, base + 1, 0755);
		}
		close(parent);
		if (fd < 0 && errno != EEXIST)
			return -errno;
		*end = saved;
	}
	return 0;
}

int spec_make_mount_points(const struct oci_spec *s, char *err, size_t len)
{
	int root, ret = 0;

	if (!s->root_virtiofs || !s->root_ro)
		return 0;
	root = open(s->root_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return errf_line(err, len, "root %s: %s", s->root_path, strerror(errno));
	for (unsigned int i = 0; i < s->nmounts && !ret; i++) {
		const struct spec_mount *m = &s->mounts[i];

		ret = make_in_root(root, m->dest, m->kind == SPEC_MOUNT_FILE_COPY || m->file);
		if (ret)
			errf_line(err, len, "mount point %s in the read-only root: %s",
				  m->dest, strerror(-ret));
	}
	close(root);
	return ret ? -1 : 0;
}

int spec_parse_rootfs(const char *v, const char *what, int *out, char *err, size_t len)
{
	if (!strcmp(v, "ext4"))
		*out = SPEC_ROOTFS_EXT4;
	else if (!strcmp(v, "virtiofs"))
		*out = SPEC_ROOTFS_VIRTIOFS;
	else
		return errf_line(err, len, "%s=\"%.32s\": expected ext4 or virtiofs",
				 what, v);
	return 0;
}

int spec_parse_rootfs_annotation(json_t *ann, struct oci_spec *s, char *err, size_t len)
{
	json_t *r = json_object_get(ann, SPEC_ANN_ROOTFS);

	if (!r)
		return 0;
	if (!json_is_string(r))
		return errf_line(err, len, "annotation " SPEC_ANN_ROOTFS " must be a string");
	return spec_parse_rootfs(json_string_value(r), "annotation " SPEC_ANN_ROOTFS,
				 &s->ann_rootfs, err, len);
}

int spec_parse_network_annotation(json_t *ann, int *mode, char *err, size_t len)
{
	json_t *r = json_object_get(ann, SPEC_ANN_NETWORK);
	const char *v = json_string_value(r);

	*mode = SPEC_NET_DEFAULT;
	if (!r)
		return 0;
	if (!v)
		return errf_line(err, len, "annotation " SPEC_ANN_NETWORK " must be a string");
	if (!strcmp(v, "start"))
		*mode = SPEC_NET_START;
	else if (!strcmp(v, "create"))
		*mode = SPEC_NET_CREATE;
	else
		return errf_line(err, len, "annotation " SPEC_ANN_NETWORK "=\"%.32s\": "
				 "expected create or start", v);
	return 0;
}

bool spec_net_at_start(const struct oci_spec *s, bool new_ns)
{
	if (s->net_mode != SPEC_NET_DEFAULT)
		return s->net_mode == SPEC_NET_START;
	return !s->netns_path && new_ns && !s->libpod;
}

bool spec_pod_sandbox(json_t *ann, const struct oci_spec *s)
{
	static const char *const keys[] = { SPEC_ANN_CRI_TYPE, SPEC_ANN_CRIO_TYPE };
	const char *base;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *v = json_string_value(json_object_get(ann, keys[i]));

		if (v && !strcmp(v, "sandbox"))
			return true;
	}
	if (s->nargs != 2 || !s->args[0])
		return false;
	base = strrchr(s->args[0], '/');
	base = base ? base + 1 : s->args[0];
	return !strcmp(base, "catatonit") && !strcmp(s->args[1], "-P");
}

/* @m's source into @m->data: a regular file of at most SPEC_FILE_MAX. */
static int read_one(struct spec_mount *m, char *err, size_t len)
{
	int fd = open(m->source, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	ssize_t n = 0;

	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size > (off_t)SPEC_FILE_MAX) {
		int e = fd < 0 ? errno : 0;

		if (fd >= 0)
			close(fd);
		return errf_line(err, len, "bind mount %s on %s: %s", m->source, m->dest,
				 e ? strerror(e) : "with rootfs=virtiofs, a bound file must "
				 "be a regular file of at most 256 KiB");
	}
	m->data = malloc((size_t)st.st_size + 1);
	if (m->data)
		n = read(fd, m->data, (size_t)st.st_size);
	close(fd);
	if (!m->data || n < 0)
		return errf_line(err, len, "bind mount %s: %s", m->source,
				 m->data ? strerror(errno) : "out of memory");
	m->data_len = (size_t)n; /* a file that shrank meanwhile: what was read */
	return 0;
}

int spec_read_files(struct oci_spec *s, char *err, size_t len)
{
	for (unsigned int i = 0; i < s->nmounts; i++)
		if (s->mounts[i].kind == SPEC_MOUNT_FILE_COPY && !s->mounts[i].data &&
		    read_one(&s->mounts[i], err, len))
			return -1;
	return 0;
}

void spec_encode_file(const struct spec_mount *m, struct proto_buf *b)
{
	/* Of the bind's options, the mount flags alone, as for a volume. */
	unsigned int ignored;
	char *opts = NULL;
	size_t dl, ol, n;
	uint8_t *v;
	bool ro;

	if (spec_volume_options(m->options, &opts, &ro, &ignored)) {
		b->err = -ENOMEM;
		return;
	}
	dl = strlen(m->dest);
	ol = strlen(opts);
	n = dl + ol + 2 + m->data_len;
	v = malloc(n);
	if (!v) {
		free(opts);
		b->err = -ENOMEM;
		return;
	}
	memcpy(v, m->dest, dl + 1);
	memcpy(v + dl + 1, opts, ol + 1);
	free(opts);
	if (m->data_len)
		memcpy(v + dl + ol + 2, m->data, m->data_len);
	proto_rec(b, PROTO_REC_FILE, v, n);
	free(v);
}
