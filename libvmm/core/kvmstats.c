/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "kvmstats.h"

/* @name (KVM's, NUL-padded to @size) is one of the '|'-separated @alts. */
static bool name_matches(const char *name, size_t size, const char *alts)
{
	size_t len = strnlen(name, size);

	for (const char *a = alts;;) {
		const char *bar = strchr(a, '|');
		size_t n = bar ? (size_t)(bar - a) : strlen(a);

		if (n == len && !memcmp(name, a, n))
			return true;
		if (!bar)
			return false;
		a = bar + 1;
	}
}

int kvmstats_open(struct kvmstats *ks, int obj_fd, const char *const *names,
		  unsigned int nr)
{
	struct kvm_stats_header h;
	size_t desc_sz;
	uint8_t *descs = NULL;
	int fd, ret = 0;

	ks->fd = -1;
	if (nr > KVMSTATS_MAX)
		return -EINVAL;
	ks->nr = nr;
	for (unsigned int i = 0; i < nr; i++)
		ks->offset[i] = UINT64_MAX;
	fd = ioctl(obj_fd, KVM_GET_STATS_FD, NULL);
	if (fd < 0)
		return errno == ENOTTY || errno == EINVAL ? -ENOTSUP : -errno;
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		ret = -EIO;
		goto err;
	}
	desc_sz = sizeof(struct kvm_stats_desc) + h.name_size;
	descs = malloc(desc_sz * h.num_desc);
	if (!descs) {
		ret = -ENOMEM;
		goto err;
	}
	if (pread(fd, descs, desc_sz * h.num_desc, h.desc_offset) !=
	    (ssize_t)(desc_sz * h.num_desc)) {
		ret = -EIO;
		goto err;
	}
	for (uint32_t d = 0; d < h.num_desc; d++) {
		const struct kvm_stats_desc *desc =
			(const void *)(descs + d * desc_sz);

		for (unsigned int i = 0; i < nr; i++)
			if (desc->size >= 1 &&
			    name_matches(desc->name, h.name_size, names[i]))
				ks->offset[i] = h.data_offset + desc->offset;
	}
	free(descs);
	ks->fd = fd;
	return 0;
err:
	free(descs);
	close(fd);
	return ret;
}

int kvmstats_read(const struct kvmstats *ks, uint64_t *vals)
{
	for (unsigned int i = 0; i < ks->nr; i++) {
		vals[i] = UINT64_MAX;
		if (ks->fd < 0 || ks->offset[i] == UINT64_MAX)
			continue;
		if (pread(ks->fd, &vals[i], sizeof(vals[i]), (off_t)ks->offset[i]) !=
		    (ssize_t)sizeof(vals[i]))
			return -EIO;
	}
	return 0;
}

void kvmstats_close(struct kvmstats *ks)
{
	if (ks->fd >= 0)
		close(ks->fd);
	ks->fd = -1;
}
