/* SPDX-License-Identifier: MIT */
/* The kernel's vhost-net as a queue pair's data path (vhost-net.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/vhost.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "net/vhost-net.h"

/* vhost-net's ring numbers within one file. */
#define VHOST_RX 0u
#define VHOST_TX 1u

static int vh_ioctl(int fd, unsigned long req, void *arg, const char *name,
		    const char **what)
{
	if (!ioctl(fd, req, arg))
		return 0;
	*what = name;
	return -errno;
}

/* Guest RAM as the kernel's memory table: each region's guest-physical
 * range at our address of it. */
static int vh_mem_table(int fd, const struct guest_mem *mem, const char **what)
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
	ret = vh_ioctl(fd, VHOST_SET_MEM_TABLE, t, "VHOST_SET_MEM_TABLE", what);
	free(t);
	return ret;
}

int vhost_net_open(const char *path, const struct guest_mem *mem, int *fd,
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
	ret = vh_ioctl(f, VHOST_SET_OWNER, NULL, "VHOST_SET_OWNER", what);
	if (!ret)
		ret = vh_ioctl(f, VHOST_GET_FEATURES, features,
			       "VHOST_GET_FEATURES", what);
	if (!ret && !(*features & (1ull << 32))) { /* VIRTIO_F_VERSION_1 */
		*what = "VHOST_GET_FEATURES (no VIRTIO_F_VERSION_1)";
		ret = -EOPNOTSUPP;
	}
	if (!ret)
		ret = vh_mem_table(f, mem, what);
	if (ret) {
		close(f);
		return ret;
	}
	*fd = f;
	return 0;
}

/* Hand ring @q over as vhost ring @idx (without its backend). */
static int vh_ring(int fd, unsigned int idx, struct virtio_queue *q,
		   const char **what)
{
	struct vhost_vring_state num = { idx, q->vq.size };
	struct vhost_vring_state base = { idx, q->vq.last_avail_idx };
	/* The rings' host addresses: inside guest RAM as the memory table
	 * describes it (the transport validated them at its start). */
	struct vhost_vring_addr addr = {
		.index = idx,
		.desc_user_addr = (uint64_t)(uintptr_t)q->vq.desc,
		.avail_user_addr = (uint64_t)(uintptr_t)q->vq.avail,
		.used_user_addr = (uint64_t)(uintptr_t)q->vq.used,
	};
	struct vhost_vring_file kick = { idx, q->kick_fd };
	struct vhost_vring_file call = { idx, q->call_fd }; /* -1: none */
	int ret;

	if ((ret = vh_ioctl(fd, VHOST_SET_VRING_NUM, &num, "VHOST_SET_VRING_NUM", what)) ||
	    (ret = vh_ioctl(fd, VHOST_SET_VRING_BASE, &base, "VHOST_SET_VRING_BASE", what)) ||
	    (ret = vh_ioctl(fd, VHOST_SET_VRING_ADDR, &addr, "VHOST_SET_VRING_ADDR", what)) ||
	    (ret = vh_ioctl(fd, VHOST_SET_VRING_CALL, &call, "VHOST_SET_VRING_CALL", what)))
		return ret;
	return vh_ioctl(fd, VHOST_SET_VRING_KICK, &kick, "VHOST_SET_VRING_KICK", what);
}

static int vh_backend(int fd, unsigned int idx, int tap, const char **what)
{
	struct vhost_vring_file b = { idx, tap };

	return vh_ioctl(fd, VHOST_NET_SET_BACKEND, &b, "VHOST_NET_SET_BACKEND", what);
}

int vhost_net_start(int fd, uint64_t features, struct virtio_queue *rx,
		    struct virtio_queue *tx, int tap, const char **what)
{
	uint64_t acked = vhost_net_acked(features);
	int ret;

	if ((ret = vh_ioctl(fd, VHOST_SET_FEATURES, &acked, "VHOST_SET_FEATURES", what)) ||
	    (ret = vh_ring(fd, VHOST_RX, rx, what)) ||
	    (ret = vh_ring(fd, VHOST_TX, tx, what)))
		return ret; /* no backend yet: the kernel serves nothing */
	if ((ret = vh_backend(fd, VHOST_RX, tap, what)) ||
	    (ret = vh_backend(fd, VHOST_TX, tap, what)))
		(void)vhost_net_stop(fd, rx, tx);
	return ret;
}

/* Stop vhost ring @idx and keep where it stopped in @q. */
static int vh_stop_ring(int fd, unsigned int idx, struct virtio_queue *q)
{
	struct vhost_vring_state s = { idx, 0 };
	const char *what;
	int ret = vh_backend(fd, idx, -1, &what);

	if (ioctl(fd, VHOST_GET_VRING_BASE, &s))
		return ret ? ret : -errno;
	q->vq.last_avail_idx = (uint16_t)s.num;
	return ret;
}

int vhost_net_stop(int fd, struct virtio_queue *rx, struct virtio_queue *tx)
{
	int r1 = vh_stop_ring(fd, VHOST_RX, rx);
	int r2 = vh_stop_ring(fd, VHOST_TX, tx);

	return r1 ? r1 : r2;
}
