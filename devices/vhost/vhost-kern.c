/* SPDX-License-Identifier: MIT */
/* The device-neutral part of a kernel vhost device (vhost-kern.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/vhost.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "vhost/vhost-kern.h"

int vhost_kern_ioctl(int fd, unsigned long req, void *arg, const char *name,
		     const char **what)
{
	if (!ioctl(fd, req, arg))
		return 0;
	*what = name;
	return -errno;
}

/* Guest RAM as the kernel's memory table: each region's guest-physical
 * range at our address of it. */
static int vk_mem_table(int fd, const struct guest_mem *mem, const char **what)
{
	struct vhost_memory *t;
	int ret;

	t = calloc(1, sizeof(*t) + mem->nr_regions * sizeof(t->regions[0]));
	if (!t)
		return -ENOMEM;
	t->nregions = mem->nr_regions;
	for (unsigned int i = 0; i < mem->nr_regions; i++)
		t->regions[i] = (struct vhost_memory_region){
			.guest_phys_addr = mem->regions[i].gpa,
			.memory_size = mem->regions[i].size,
			.userspace_addr = (uint64_t)(uintptr_t)mem->regions[i].hva,
		};
	ret = vhost_kern_ioctl(fd, VHOST_SET_MEM_TABLE, t, "VHOST_SET_MEM_TABLE",
			       what);
	free(t);
	return ret;
}

int vhost_kern_open(const char *path, const struct guest_mem *mem, int *fd,
		    uint64_t *features, const char **what)
{
	int f, ret;

	*what = "open";
	if (!mem->nr_regions)
		return -EINVAL;
	f = open(path, O_RDWR | O_CLOEXEC);
	if (f < 0)
		return -errno;
	/* The kernel binds the device to this process's memory (and starts
	 * its worker) at SET_OWNER: before any confinement. */
	ret = vhost_kern_ioctl(f, VHOST_SET_OWNER, NULL, "VHOST_SET_OWNER", what);
	if (!ret)
		ret = vhost_kern_ioctl(f, VHOST_GET_FEATURES, features,
				       "VHOST_GET_FEATURES", what);
	if (!ret && !(*features & (1ull << 32))) { /* VIRTIO_F_VERSION_1 */
		*what = "VHOST_GET_FEATURES (no VIRTIO_F_VERSION_1)";
		ret = -EOPNOTSUPP;
	}
	if (!ret)
		ret = vk_mem_table(f, mem, what);
	if (ret) {
		close(f);
		return ret;
	}
	*fd = f;
	return 0;
}

int vhost_kern_set_features(int fd, uint64_t acked, const char **what)
{
	return vhost_kern_ioctl(fd, VHOST_SET_FEATURES, &acked,
				"VHOST_SET_FEATURES", what);
}

int vhost_kern_ring(int fd, unsigned int idx, struct virtio_queue *q,
		    const char **what)
{
	struct vhost_vring_state num = { idx, q->vq.size };
	struct vhost_vring_state base = { idx, q->vq.last_avail_idx };
	struct vhost_vring_addr addr = {
		.index = idx,
		.desc_user_addr = (uint64_t)(uintptr_t)q->vq.desc,
		.avail_user_addr = (uint64_t)(uintptr_t)q->vq.avail,
		.used_user_addr = (uint64_t)(uintptr_t)q->vq.used,
	};
	struct vhost_vring_file kick = { idx, q->kick_fd };
	struct vhost_vring_file call = { idx, q->call_fd }; /* -1: none */
	int ret;

	if ((ret = vhost_kern_ioctl(fd, VHOST_SET_VRING_NUM, &num,
				    "VHOST_SET_VRING_NUM", what)) ||
	    (ret = vhost_kern_ioctl(fd, VHOST_SET_VRING_BASE, &base,
				    "VHOST_SET_VRING_BASE", what)) ||
	    (ret = vhost_kern_ioctl(fd, VHOST_SET_VRING_ADDR, &addr,
				    "VHOST_SET_VRING_ADDR", what)) ||
	    (ret = vhost_kern_ioctl(fd, VHOST_SET_VRING_CALL, &call,
				    "VHOST_SET_VRING_CALL", what)))
		return ret;
	return vhost_kern_ioctl(fd, VHOST_SET_VRING_KICK, &kick,
				"VHOST_SET_VRING_KICK", what);
}

int vhost_kern_ring_base(int fd, unsigned int idx, struct virtio_queue *q)
{
	struct vhost_vring_state s = { idx, 0 };

	if (ioctl(fd, VHOST_GET_VRING_BASE, &s))
		return -errno;
	q->vq.last_avail_idx = (uint16_t)s.num;
	return 0;
}
