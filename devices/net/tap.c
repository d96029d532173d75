/* SPDX-License-Identifier: MIT */
/* Tap back end of virtio-net (tap.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "net/net-backend.h"
#include "net/tap.h"
#include "net/vnet.h"

int tap_adopt(int fd)
{
	int hdr = VNET_HDR_LEN, fl;
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	if (ioctl(fd, TUNGETIFF, &ifr))
		return errno == EBADF ? -EBADF : -EINVAL;
	if ((ifr.ifr_flags & (IFF_TAP | IFF_NO_PI | IFF_VNET_HDR)) !=
	    (IFF_TAP | IFF_NO_PI | IFF_VNET_HDR))
		return -EINVAL;
	if (ioctl(fd, TUNSETVNETHDRSZ, &hdr))
		return -errno;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK))
		return -errno;
	return 0;
}

int tap_open(const char *name, unsigned int nr, int *fds)
{
	struct ifreq ifr;
	unsigned int i;
	int ret = 0;

	if (!name || strlen(name) >= IFNAMSIZ || !nr)
		return -EINVAL;
	for (i = 0; i < nr; i++) {
		fds[i] = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (fds[i] < 0) {
			ret = -errno;
			break;
		}
		memset(&ifr, 0, sizeof(ifr));
		strcpy(ifr.ifr_name, name);
		ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | IFF_MULTI_QUEUE;
		if (ioctl(fds[i], TUNSETIFF, &ifr)) {
			ret = -errno;
			close(fds[i]);
			break;
		}
		ret = tap_adopt(fds[i]);
		if (ret) {
			close(fds[i]);
			break;
		}
	}
	if (ret)
		while (i--)
			close(fds[i]);
	return ret;
}

int tap_ifname(int fd, char *name)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	if (ioctl(fd, TUNGETIFF, &ifr))
		return -errno;
	memcpy(name, ifr.ifr_name, IFNAMSIZ);
	name[IFNAMSIZ - 1] = 0;
	return 0;
}

int tap_set_offload(int fd, unsigned int offloads)
{
	return ioctl(fd, TUNSETOFFLOAD, (unsigned long)offloads) ? -errno : 0;
}

int tap_set_queue(int fd, bool on)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = on ? IFF_ATTACH_QUEUE : IFF_DETACH_QUEUE;
	return ioctl(fd, TUNSETQUEUE, &ifr) ? -errno : 0;
}

static int tap_be_tx(void *priv, int fd, struct virtq *vq, struct virtq_chain *ch,
		     unsigned int budget, struct vnet_pair_stats *st, bool *more)
{
	(void)priv;
	return vnet_tx(vq, ch, fd, budget, st, more);
}

static int tap_be_rx(void *priv, int fd, struct vnet_rxq *rq, struct virtq *vq,
		     bool mergeable, uint32_t max_frame, unsigned int budget,
		     struct vnet_pair_stats *st, unsigned int *pushed)
{
	(void)priv;
	return vnet_rx(rq, vq, fd, mergeable, max_frame, budget, st, pushed);
}

static int tap_be_features(int fd, uint64_t features)
{
	return tap_set_offload(fd, vnet_tun_offloads(features));
}

const struct net_backend net_tap_backend = {
	.kind = "tap",
	.offloads = true,
	.uring = true,
	.tx = tap_be_tx,
	.rx = tap_be_rx,
	.set_features = tap_be_features,
	.steer = tap_set_queue,
};
