/* SPDX-License-Identifier: MIT */
/* The guest init's network setup (net.h). */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "errf.h"
#include "net.h"

#ifndef IFA_F_NODAD
#define IFA_F_NODAD 0x02
#endif

static int if_up(int sk, const char *name)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(sk, SIOCGIFFLAGS, &ifr))
		return -1;
	ifr.ifr_flags |= IFF_UP;
	return ioctl(sk, SIOCSIFFLAGS, &ifr);
}

/* The interface with MAC @mac into @name (IFNAMSIZ): polled for up to
 * 5 s (virtio_net may still be probing).  0 or -1. */
static int find_by_mac(int sk, const uint8_t *mac, char *name)
{
	for (int tries = 0; tries < 100; tries++) {
		struct if_nameindex *all = if_nameindex(), *i;
		struct timespec ts = { 0, 50000000 };
		int found = -1;

		for (i = all; i && i->if_index; i++) {
			struct ifreq ifr;

			memset(&ifr, 0, sizeof(ifr));
			snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", i->if_name);
			if (!ioctl(sk, SIOCGIFHWADDR, &ifr) &&
			    !memcmp(ifr.ifr_hwaddr.sa_data, mac, 6)) {
				snprintf(name, IFNAMSIZ, "%s", i->if_name);
				found = 0;
				break;
			}
		}
		if (all)
			if_freenameindex(all);
		if (!found)
			return 0;
		nanosleep(&ts, NULL);
	}
	return -1;
}

/* The NIC made before the namespace was read (PROTO_REC_NET_FIND) gets
 * the namespace interface's MAC, while still down: frames the tc
 * redirect brings are addressed to it. */
static int set_mac(int sk, const char *name, const uint8_t *mac)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_hwaddr.sa_family = ARPHRD_ETHER;
	memcpy(ifr.ifr_hwaddr.sa_data, mac, 6);
	return ioctl(sk, SIOCSIFHWADDR, &ifr);
}

/* Rename @cur to @want (while down) and set the MTU; then up. */
static int link_setup(int sk, const struct init_net *n, char *cur, char *err,
		      size_t errlen)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", cur);
	if (n->name[0] && strcmp(cur, n->name)) {
		snprintf(ifr.ifr_newname, sizeof(ifr.ifr_newname), "%s", n->name);
		if (ioctl(sk, SIOCSIFNAME, &ifr))
			return errf(err, errlen, "renaming %s to %s: %s", cur, n->name,
				    strerror(errno));
		snprintf(cur, IFNAMSIZ, "%s", n->name);
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", cur);
	}
	ifr.ifr_mtu = (int)n->mtu;
	if (n->mtu && ioctl(sk, SIOCSIFMTU, &ifr))
		return errf(err, errlen, "%s: MTU %u: %s", cur, n->mtu, strerror(errno));
	if (if_up(sk, cur))
		return errf(err, errlen, "%s: up: %s", cur, strerror(errno));
	return 0;
}

struct nlreq {
	struct nlmsghdr h;
	union {
		struct ifaddrmsg a;
		struct rtmsg r;
	} u;
	char attrs[128];
};

static void attr(struct nlreq *q, uint16_t type, const void *v, size_t n)
{
	struct rtattr *ra = (struct rtattr *)((char *)q + NLMSG_ALIGN(q->h.nlmsg_len));

	ra->rta_type = type;
	ra->rta_len = (unsigned short)RTA_LENGTH(n);
	memcpy(RTA_DATA(ra), v, n);
	q->h.nlmsg_len = NLMSG_ALIGN(q->h.nlmsg_len) + RTA_ALIGN(ra->rta_len);
}

/* Send @q and read its ack: 0 or -errno. */
static int nl_talk(int nl, struct nlreq *q)
{
	char buf[1024];
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	ssize_t r;

	q->h.nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	if (send(nl, q, q->h.nlmsg_len, 0) < 0)
		return -errno;
	r = recv(nl, buf, sizeof(buf), 0);
	if (r < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)) ||
	    h->nlmsg_type != NLMSG_ERROR)
		return -EIO;
	return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
}

/* A new-object request of @type with a @body-byte header, no attribute. */
static void nl_new(struct nlreq *q, uint16_t type, size_t body)
{
	memset(q, 0, sizeof(*q));
	q->h.nlmsg_len = (uint32_t)NLMSG_LENGTH(body);
	q->h.nlmsg_type = type;
	q->h.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
}

static int add_addr(int nl, int idx, const struct init_net_addr *a)
{
	struct nlreq q;

	nl_new(&q, RTM_NEWADDR, sizeof(q.u.a));
	q.u.a.ifa_family = a->family == 4 ? AF_INET : AF_INET6;
	q.u.a.ifa_prefixlen = a->plen;
	/* The veth's stack already did duplicate address detection. */
	q.u.a.ifa_flags = a->family == 6 ? IFA_F_NODAD : 0;
	q.u.a.ifa_index = (unsigned int)idx;
	attr(&q, IFA_LOCAL, a->a, a->family == 4 ? 4 : 16);
	attr(&q, IFA_ADDRESS, a->a, a->family == 4 ? 4 : 16);
	return nl_talk(nl, &q);
}

static int add_route(int nl, int idx, const struct init_net_route *r, bool onlink)
{
	static const uint8_t zero[16];
	size_t al = r->family == 4 ? 4 : 16;
	bool gw = memcmp(r->gw, zero, al);
	struct nlreq q;

	nl_new(&q, RTM_NEWROUTE, sizeof(q.u.r));
	q.u.r.rtm_family = r->family == 4 ? AF_INET : AF_INET6;
	q.u.r.rtm_dst_len = r->plen;
	q.u.r.rtm_table = RT_TABLE_MAIN;
	q.u.r.rtm_protocol = RTPROT_BOOT;
	q.u.r.rtm_scope = gw ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK;
	q.u.r.rtm_type = RTN_UNICAST;
	q.u.r.rtm_flags = onlink ? RTNH_F_ONLINK : 0;
	if (r->plen)
		attr(&q, RTA_DST, r->dst, al);
	if (gw)
		attr(&q, RTA_GATEWAY, r->gw, al);
	attr(&q, RTA_OIF, &idx, sizeof(idx));
	if (r->metric)
		attr(&q, RTA_PRIORITY, &r->metric, sizeof(r->metric));
	return nl_talk(nl, &q);
}

/* Addresses, then routes (on-link ones come first: netns.c); what the
 * kernel made already (a prefix route of an address) is not an error. */
static int addrs_routes(int idx, const struct init_net *n, const char *name,
			char *err, size_t errlen)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), ret = 0;
	struct timeval tv = { 5, 0 };

	if (nl < 0 || bind(nl, (struct sockaddr *)&sa, sizeof(sa)))
		return errf(err, errlen, "netlink: %s", strerror(errno));
	setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (unsigned int i = 0; i < n->naddrs && !ret; i++) {
		int r = add_addr(nl, idx, &n->addrs[i]);

		if (r && r != -EEXIST)
			ret = errf(err, errlen, "%s: address %u: %s", name, i, strerror(-r));
	}
	for (unsigned int i = 0; i < n->nroutes && !ret; i++) {
		int r = add_route(nl, idx, &n->routes[i], false);

		if (r == -ENETUNREACH)
			r = add_route(nl, idx, &n->routes[i], true);
		if (r && r != -EEXIST)
			ret = errf(err, errlen, "%s: route %u: %s", name, i, strerror(-r));
	}
	close(nl);
	return ret;
}

int init_net_setup(const struct init_net *n, char *err, size_t errlen)
{
	int sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret = -1, idx;
	char name[IFNAMSIZ];
	const uint8_t *find;

	if (sk < 0)
		return errf(err, errlen, "socket: %s", strerror(errno));
	if_up(sk, "lo"); /* as OCI runtimes do in a new namespace */
	if (!n->has_link) {
		close(sk);
		return 0;
	}
	find = n->has_find ? n->find_mac : n->mac;
	if (find_by_mac(sk, find, name))
		errf(err, errlen, "no network interface with MAC "
		     "%02x:%02x:%02x:%02x:%02x:%02x (virtio_net)", find[0], find[1],
		     find[2], find[3], find[4], find[5]);
	else if (n->has_find && set_mac(sk, name, n->mac))
		errf(err, errlen, "%s: setting MAC %02x:%02x:%02x:%02x:%02x:%02x: %s",
		     name, n->mac[0], n->mac[1], n->mac[2], n->mac[3], n->mac[4],
		     n->mac[5], strerror(errno));
	else if (!link_setup(sk, n, name, err, errlen)) {
		idx = (int)if_nametoindex(name);
		ret = idx > 0 ? addrs_routes(idx, n, name, err, errlen)
			      : errf(err, errlen, "%s: %s", name, strerror(errno));
	}
	close(sk);
	return ret;
}
