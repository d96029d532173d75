/* SPDX-License-Identifier: MIT */
/* The container's root file system: an ext4 image (image.c) or the
 * bundle's directory over virtio-fs (volumes.c, spec.h SPEC_ROOTFS_*). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errf.h"
#include "spec.h"

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

int spec_parse_network_annotation(json_t *ann, bool *at_start, char *err, size_t len)
{
	json_t *r = json_object_get(ann, SPEC_ANN_NETWORK);
	const char *v = json_string_value(r);

	*at_start = false;
	if (!r)
		return 0;
	if (!v)
		return errf_line(err, len, "annotation " SPEC_ANN_NETWORK " must be a string");
	if (!strcmp(v, "start"))
		*at_start = true;
	else if (strcmp(v, "create"))
		return errf_line(err, len, "annotation " SPEC_ANN_NETWORK "=\"%.32s\": "
				 "expected create or start", v);
	return 0;
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
