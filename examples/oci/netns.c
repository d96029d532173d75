/* SPDX-License-Identifier: MIT */
/* The container's network namespace and the VM's tap in it (netns.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <linux/ethtool.h>
#include <linux/if_packet.h>
#include <linux/sockios.h>
#include <linux/if_tun.h>
#include <net/route.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "errf.h"
#include "netns.h"

/* Append "@a@b; " to @p->notes (cut to fit). */
static void note(struct netns_plan *p, const char *a, const char *b)
{
	size_t n = strlen(p->notes);

	if (n < sizeof(p->notes) - 1)
		snprintf(p->notes + n, sizeof(p->notes) - n, "%s%s; ", a, b);
}

static bool v6_link_local(const uint8_t *a)
{
	return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
}

static bool usable(const struct netns_if *f)
{
	for (unsigned int i = 0; i < f->naddrs; i++)
		if (f->addrs[i].family == 4 || !v6_link_local(f->addrs[i].a))
			return true;
	return false;
}

int netns_choose(const struct netns_if *ifs, unsigned int n,
		 struct netns_plan *p, char *err, size_t errlen)
{
	const struct netns_if *pick = NULL;
	unsigned int others = 0, i, j;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < n; i++) {
		/* NETNS_TAP: the VM's own, made at create when the namespace
		 * is connected at start (netns_tap_open()); never a candidate. */
		if (ifs[i].loopback || !strcmp(ifs[i].name, NETNS_TAP))
			continue;
		if (!pick && usable(&ifs[i])) {
			pick = &ifs[i];
			continue;
		}
		others++;
		note(p, "interface left out: ", ifs[i].name);
	}
	if (!pick && !others)
		return 0; /* only lo: --network none */
	if (!pick)
		return errf_line(err, errlen, "the container's network namespace has "
				 "interfaces but none with an IPv4 or IPv6 address");
	if (!pick->has_mac)
		return errf_line(err, errlen, "interface %s in the container's network "
				 "namespace has no Ethernet address: only an Ethernet "
				 "interface (a veth, a tap) can be given to the VM",
				 pick->name);
	if (pick->mtu < 68 || pick->mtu > 65535)
		return errf_line(err, errlen, "interface %s: MTU %u outside 68..65535",
				 pick->name, pick->mtu);
	p->nic = true;
	p->ifc = *pick;
	/* Link-local IPv6 addresses are the guest kernel's own (from the
	 * same MAC: the same address). */
	for (i = j = 0; i < pick->naddrs && i < NETNS_MAX_ADDRS; i++)
		if (pick->addrs[i].family == 4 || !v6_link_local(pick->addrs[i].a))
			p->ifc.addrs[j++] = pick->addrs[i];
	p->ifc.naddrs = j;
	return 0;
}

/* Insert @r: on-link routes before the first gateway route. */
static void add_route(struct netns_plan *p, const struct netns_route *r)
{
	static const uint8_t zero[16];
	unsigned int at = p->nroutes;
	bool onlink = !memcmp(r->gw, zero, sizeof(zero));

	if (p->nroutes >= NETNS_MAX_ROUTES) {
		note(p, "routes past the limit left out", "");
		return;
	}
	if (onlink)
		for (at = 0; at < p->nroutes; at++)
			if (memcmp(p->routes[at].gw, zero, sizeof(zero)))
				break;
	memmove(&p->routes[at + 1], &p->routes[at],
		(p->nroutes - at) * sizeof(p->routes[0]));
	p->routes[at] = *r;
	p->nroutes++;
}

/* The next line of @text into @line (NUL-terminated, cut to fit);
 * advances *@text; false at the end. */
static bool next_line(const char **text, char *line, size_t len)
{
	const char *s = *text, *e;
	size_t n;

	if (!s || !*s)
		return false;
	e = strchr(s, '\n');
	n = e ? (size_t)(e - s) : strlen(s);
	*text = e ? e + 1 : s + n;
	if (n >= len)
		n = len - 1;
	memcpy(line, s, n);
	line[n] = 0;
	return true;
}

static int prefix_len4(uint32_t mask_be)
{
	uint32_t m = ntohl(mask_be);
	int n = 0;

	while (m & 0x80000000u) {
		m <<= 1;
		n++;
	}
	return m ? -1 : n; /* a non-contiguous mask: skipped */
}

void netns_parse_route4(struct netns_plan *p, const char *text)
{
	char line[512], ifn[64];
	unsigned int dst, gw, flags, metric, mask;

	if (!p->nic)
		return;
	while (next_line(&text, line, sizeof(line))) {
		struct netns_route r = { .family = 4 };
		int plen;

		/* Iface Destination Gateway Flags RefCnt Use Metric Mask ...;
		 * the addresses are the in-memory u32 (network order) in hex. */
		if (sscanf(line, "%63s %x %x %x %*d %*d %u %x", ifn, &dst, &gw, &flags,
			   &metric, &mask) != 6 || strcmp(ifn, p->ifc.name) ||
		    !(flags & RTF_UP) || (plen = prefix_len4(mask)) < 0)
			continue;
		r.plen = (uint8_t)plen;
		r.metric = metric;
		memcpy(r.dst, &dst, 4);
		memcpy(r.gw, &gw, 4);
		add_route(p, &r);
	}
}

static bool hex16(const char *s, uint8_t *out)
{
	for (int i = 0; i < 16; i++) {
		unsigned int b;

		if (sscanf(s + 2 * i, "%2x", &b) != 1)
			return false;
		out[i] = (uint8_t)b;
	}
	return true;
}

#define RTF_LOCAL_V6 0x80000000u /* linux/ipv6_route.h RTF_LOCAL */
#define RTF_CACHE_V6 0x01000000u

void netns_parse_route6(struct netns_plan *p, const char *text)
{
	char line[512], dst[33], src[33], gw[33], ifn[64];
	unsigned int plen, splen, metric, flags;

	if (!p->nic)
		return;
	while (next_line(&text, line, sizeof(line))) {
		struct netns_route r = { .family = 6 };

		/* dst plen src plen next-hop metric refcnt use flags iface */
		if (sscanf(line, "%32s %x %32s %x %32s %x %*x %*x %x %63s", dst, &plen,
			   src, &splen, gw, &metric, &flags, ifn) != 8 ||
		    strlen(dst) != 32 || strlen(gw) != 32 || plen > 128 ||
		    strcmp(ifn, p->ifc.name) || !(flags & RTF_UP) ||
		    (flags & (RTF_LOCAL_V6 | RTF_CACHE_V6)) || !hex16(dst, r.dst) ||
		    !hex16(gw, r.gw) || r.dst[0] == 0xff ||
		    (plen >= 10 && v6_link_local(r.dst)))
			continue;
		r.plen = (uint8_t)plen;
		r.metric = metric;
		add_route(p, &r);
	}
}

void netns_encode(const struct netns_plan *p, struct proto_buf *b)
{
	uint8_t v[6 + 4 + NETNS_IFNAMSIZ];
	size_t n = strnlen(p->ifc.name, NETNS_IFNAMSIZ - 1);

	if (!p->nic)
		return;
	if (p->find)
		proto_rec(b, PROTO_REC_NET_FIND, p->find_mac, 6);
	memcpy(v, p->ifc.mac, 6);
	for (int i = 0; i < 4; i++)
		v[6 + i] = (uint8_t)(p->ifc.mtu >> (8 * i));
	memcpy(v + 10, p->ifc.name, n);
	proto_rec(b, PROTO_REC_NET_LINK, v, 10 + n);
	for (unsigned int i = 0; i < p->ifc.naddrs; i++) {
		const struct netns_addr *a = &p->ifc.addrs[i];
		uint8_t r[2 + 16] = { a->family, a->plen };
		size_t al = a->family == 4 ? 4 : 16;

		memcpy(r + 2, a->a, al);
		proto_rec(b, PROTO_REC_NET_ADDR, r, 2 + al);
	}
	for (unsigned int i = 0; i < p->nroutes; i++) {
		const struct netns_route *rt = &p->routes[i];
		uint8_t r[6 + 32] = { rt->family, rt->plen };
		size_t al = rt->family == 4 ? 4 : 16;

		for (int k = 0; k < 4; k++)
			r[2 + k] = (uint8_t)(rt->metric >> (8 * k));
		memcpy(r + 6, rt->dst, al);
		memcpy(r + 6 + al, rt->gw, al);
		proto_rec(b, PROTO_REC_NET_ROUTE, r, 6 + 2 * al);
	}
}

int netns_enter(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return errf_line(err, errlen, "network namespace %s: %s", path,
				 strerror(errno));
	if (setns(fd, CLONE_NEWNET)) {
		int e = errno;

		close(fd);
		return errf_line(err, errlen, "joining the network namespace %s: %s", path,
				 e == EINVAL ? "not a network namespace" : strerror(e));
	}
	close(fd);
	return 0;
}

/* @name's entry in @ifs (added if new and there is room), or NULL. */
static struct netns_if *if_slot(struct netns_if *ifs, unsigned int *n,
				const char *name)
{
	for (unsigned int i = 0; i < *n; i++)
		if (!strcmp(ifs[i].name, name))
			return &ifs[i];
	if (*n >= NETNS_MAX_IFS || strlen(name) >= NETNS_IFNAMSIZ)
		return NULL;
	memset(&ifs[*n], 0, sizeof(ifs[0]));
	strcpy(ifs[*n].name, name);
	return &ifs[(*n)++];
}

static int plen_of(const uint8_t *m, size_t len)
{
	int n = 0;

	for (size_t i = 0; i < len; i++)
		for (int b = 7; b >= 0 && (m[i] >> b & 1); b--)
			n++;
	return n;
}

static void if_add(struct netns_if *f, const struct ifaddrs *a, int sk)
{
	int fam = a->ifa_addr->sa_family;
	struct netns_addr *na;
	struct ifreq ifr;

	f->loopback = a->ifa_flags & IFF_LOOPBACK;
	if (fam == AF_PACKET) {
		const struct sockaddr_ll *ll = (const void *)a->ifa_addr;

		f->has_mac = ll->sll_halen == 6 && !f->loopback;
		if (f->has_mac)
			memcpy(f->mac, ll->sll_addr, 6);
		memset(&ifr, 0, sizeof(ifr));
		strcpy(ifr.ifr_name, f->name);
		f->mtu = ioctl(sk, SIOCGIFMTU, &ifr) ? 0 : (uint32_t)ifr.ifr_mtu;
		return;
	}
	if ((fam != AF_INET && fam != AF_INET6) || f->naddrs >= NETNS_MAX_ADDRS ||
	    !a->ifa_netmask)
		return;
	na = &f->addrs[f->naddrs++];
	na->family = fam == AF_INET ? 4 : 6;
	if (fam == AF_INET) {
		memcpy(na->a, &((const struct sockaddr_in *)(const void *)a->ifa_addr)->sin_addr, 4);
		na->plen = (uint8_t)plen_of((const uint8_t *)&((const struct sockaddr_in *)
				(const void *)a->ifa_netmask)->sin_addr, 4);
	} else {
		memcpy(na->a, &((const struct sockaddr_in6 *)(const void *)a->ifa_addr)->sin6_addr, 16);
		na->plen = (uint8_t)plen_of(((const struct sockaddr_in6 *)
				(const void *)a->ifa_netmask)->sin6_addr.s6_addr, 16);
	}
}

/* /proc/net/FILE (the calling thread's namespace) into a buffer. */
static char *read_proc(const char *path)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (!buf || fd < 0) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while (len < cap - 1 && (r = read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)r;
	buf[len] = 0;
	close(fd);
	return buf;
}

int netns_read(struct netns_plan *p, char *err, size_t errlen)
{
	static struct netns_if ifs[NETNS_MAX_IFS];
	struct ifaddrs *all, *a;
	unsigned int n = 0;
	int sk, ret;
	char *t;

	if (getifaddrs(&all))
		return errf_line(err, errlen, "reading the container's network "
				 "interfaces: %s", strerror(errno));
	sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	for (a = all; a; a = a->ifa_next) {
		struct netns_if *f;

		if (!a->ifa_addr || !a->ifa_name || !(f = if_slot(ifs, &n, a->ifa_name)))
			continue;
		if_add(f, a, sk);
	}
	freeifaddrs(all);
	if (sk >= 0)
		close(sk);
	if ((ret = netns_choose(ifs, n, p, err, errlen)))
		return ret;
	if ((t = read_proc("/proc/net/route"))) {
		netns_parse_route4(p, t);
		free(t);
	}
	if ((t = read_proc("/proc/net/ipv6_route"))) {
		netns_parse_route6(p, t);
		free(t);
	}
	return 0;
}

/* Run iproute2's @args[0] ("tc" or "ip"; @args NULL-terminated, at most
 * 23 of at most 31 bytes each); 0 or -1 with @err. */
static int run_iproute(const char *const *args, char *err, size_t errlen)
{
	char buf[24][32], *argv[24], why[256], path[32];
	size_t na = 0, got = 0;
	int pfd[2];
	static const char *const dirs[] = { "/usr/sbin", "/sbin", "/usr/bin", "/bin" };
	const char *bin = NULL;
	int st;
	pid_t pid;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && !bin; i++) {
		snprintf(path, sizeof(path), "%s/%s", dirs[i], args[0]);
		if (!access(path, X_OK))
			bin = path;
	}
	for (; args[na] && na < 23; na++) {
		snprintf(buf[na], sizeof(buf[na]), "%s", args[na]);
		argv[na] = buf[na];
	}
	argv[na] = NULL;
	if (!bin)
		return errf_line(err, errlen, "%s (iproute2) not found in /usr/sbin, /sbin, "
				 "/usr/bin or /bin: it connects the VM to the container's "
				 "network", args[0]);
	/* tc's stderr (its reason) comes back through a pipe: the VMM
	 * process's own stderr is still the container's. */
	if (pipe2(pfd, O_CLOEXEC))
		return errf_line(err, errlen, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return errf_line(err, errlen, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
		}
		dup2(pfd[1], 2);
		execv(bin, argv);
		_exit(127);
	}
	close(pfd[1]);
	/* tc writes a line or two: the first 255 bytes are kept, the rest
	 * read and dropped until EOF (tc never blocks on a full pipe). */
	for (;;) {
		ssize_t r = read(pfd[0], why + got, sizeof(why) - 1 - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		if (got == sizeof(why) - 1) {
			char sink[256];

			while (read(pfd[0], sink, sizeof(sink)) > 0)
				;
			break;
		}
	}
	why[got] = 0;
	close(pfd[0]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return errf_line(err, errlen, "waitpid: %s", strerror(errno));
	if ((!WIFEXITED(st) || WEXITSTATUS(st)) && !strcmp(argv[0], "tc"))
		return errf_line(err, errlen, "tc %s %s dev %s failed (%s): the kernel "
				 "needs sch_ingress, cls_u32 and act_mirred", argv[1],
				 argv[2], argv[4], got ? why : "no message");
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return errf_line(err, errlen, "ip %s %s %s failed (%s)", argv[1], argv[2],
				 argv[3], got ? why : "no message");
	return 0;
}

/* Frames arriving on @from leave through @to, all of them. */
static int redirect(const char *from, const char *to, char *err, size_t errlen)
{
	const char *q[] = { "tc", "qdisc", "add", "dev", from, "handle", "ffff:",
			    "ingress", NULL };
	const char *f[] = { "tc", "filter", "add", "dev", from, "parent", "ffff:",
			    "protocol", "all", "u32", "match", "u8", "0", "0", "action",
			    "mirred", "egress", "redirect", "dev", to, NULL };

	return run_iproute(q, err, errlen) || run_iproute(f, err, errlen) ? -1 : 0;
}

/* The refusal of a second VM in one namespace (a pod's second container). */
static int tap_taken(char *err, size_t errlen)
{
	return errf_line(err, errlen, "the container's network namespace is already "
			 "served by another container's VM (tap %s exists): containers "
			 "sharing a network namespace (pods) are not supported by "
			 "minivmm-oci", NETNS_TAP);
}

/*
 * NETNS_TAP with @pairs queues, made under a name of its own and renamed:
 * TUNSETIFF on an existing multi-queue tap adds queues to it (two VMs
 * splitting one interface's frames), and nothing else orders two creates
 * in one namespace, so the rename -- which fails with EEXIST while
 * another NETNS_TAP exists -- is what decides which VM serves it.  The
 * loser's tap goes away with its fds (not persistent).
 */
static int tap_create(unsigned int pairs, int *fds, char *err, size_t errlen)
{
	char tmp[NETNS_IFNAMSIZ];
	uint32_t r = 0;
	struct ifreq ifr;
	unsigned int i;
	int sk, e;

	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r = (uint32_t)getpid();
	snprintf(tmp, sizeof(tmp), "mvm-new%08x", r);
	for (i = 0; i < pairs; i++) {
		fds[i] = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
		memset(&ifr, 0, sizeof(ifr));
		strcpy(ifr.ifr_name, tmp);
		ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | IFF_MULTI_QUEUE;
		if (fds[i] < 0 || ioctl(fds[i], TUNSETIFF, &ifr)) {
			e = errno;
			if (fds[i] >= 0)
				close(fds[i]);
			errf_line(err, errlen, "creating tap %s (queue %u) in the container's "
				  "network namespace: %s", NETNS_TAP, i, strerror(e));
			goto fail;
		}
	}
	sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, tmp);
	strcpy(ifr.ifr_newname, NETNS_TAP);
	e = sk < 0 || ioctl(sk, SIOCSIFNAME, &ifr) ? errno : 0;
	if (sk >= 0)
		close(sk);
	if (!e)
		return 0;
	if (e == EEXIST)
		tap_taken(err, errlen);
	else
		errf_line(err, errlen, "naming tap %s %s: %s", tmp, NETNS_TAP, strerror(e));
fail:
	while (i--)
		close(fds[i]);
	return -1;
}

/* @name's MTU @mtu (0: unchanged), then up. */
static int if_mtu_up(const char *name, uint32_t mtu, char *err, size_t errlen)
{
	int sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret = -1;
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, name);
	ifr.ifr_mtu = (int)mtu;
	if (sk < 0 || (mtu && ioctl(sk, SIOCSIFMTU, &ifr))) {
		errf_line(err, errlen, "tap %s: MTU %u: %s", name, mtu, strerror(errno));
		goto out;
	}
	ifr.ifr_flags = IFF_UP;
	if (ioctl(sk, SIOCSIFFLAGS, &ifr)) {
		errf_line(err, errlen, "tap %s: up: %s", name, strerror(errno));
		goto out;
	}
	ret = 0;
out:
	if (sk >= 0)
		close(sk);
	return ret;
}

int netns_tap_open(unsigned int pairs, int *fds, char *err, size_t errlen)
{
	if (tap_create(pairs, fds, err, errlen))
		return -1;
	if (!if_mtu_up(NETNS_TAP, 0, err, errlen))
		return 0;
	for (unsigned int i = 0; i < pairs; i++)
		close(fds[i]);
	return -1;
}

int netns_tap_down(char *err, size_t errlen)
{
	int sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret = -1;
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, NETNS_TAP);
	if (sk < 0 || ioctl(sk, SIOCGIFFLAGS, &ifr)) {
		errf_line(err, errlen, "tap %s: %s", NETNS_TAP, strerror(errno));
		goto out;
	}
	ifr.ifr_flags = (short)(ifr.ifr_flags & ~IFF_UP);
	if (ioctl(sk, SIOCSIFFLAGS, &ifr)) {
		errf_line(err, errlen, "tap %s: down: %s", NETNS_TAP, strerror(errno));
		goto out;
	}
	ret = 0;
out:
	if (sk >= 0)
		close(sk);
	return ret;
}

int netns_redirect(const struct netns_plan *p, char *err, size_t errlen)
{
	if (if_mtu_up(NETNS_TAP, p->ifc.mtu, err, errlen) ||
	    redirect(p->ifc.name, NETNS_TAP, err, errlen) ||
	    redirect(NETNS_TAP, p->ifc.name, err, errlen))
		return -1;
	return 0;
}

static uint32_t ip4_of(const uint8_t *a)
{
	return (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 | a[3];
}

/* @a is one of @p's interface's IPv4 addresses (the VM's, @vm, among
 * them) or one of its IPv4 gateways. */
static bool ip4_taken(const struct netns_plan *p, uint32_t vm, uint32_t a)
{
	if (a == vm)
		return true;
	for (unsigned int i = 0; i < p->ifc.naddrs; i++)
		if (p->ifc.addrs[i].family == 4 && ip4_of(p->ifc.addrs[i].a) == a)
			return true;
	for (unsigned int r = 0; r < p->nroutes; r++)
		if (p->routes[r].family == 4 && ip4_of(p->routes[r].gw) == a)
			return true;
	return false;
}

int netns_local_addrs(const struct netns_plan *p, uint32_t *vm, unsigned int *plen,
		      uint32_t *local)
{
	for (unsigned int i = 0; p->nic && i < p->ifc.naddrs; i++) {
		const struct netns_addr *a = &p->ifc.addrs[i];
		uint32_t mask, net;

		if (a->family != 4 || a->plen < 1 || a->plen > 30)
			continue;
		*vm = ip4_of(a->a);
		*plen = a->plen;
		mask = ~0u << (32 - a->plen);
		net = *vm & mask;
		/* From the last host address down (slirp4netns's own are
		 * .2 and .3), a few tries. */
		*local = (net | ~mask) - 1;
		for (int t = 0; t < 8 && *local > net && ip4_taken(p, *vm, *local); t++)
			(*local)--;
		return *local > net && !ip4_taken(p, *vm, *local) ? 0 : -1;
	}
	return -1;
}

static void ip4_str(uint32_t a, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
}

/* @name's driver is tun (a tap: slirp4netns's tap0).  Asked through
 * ethtool: /sys/class/net shows the namespace sysfs was mounted in. */
static bool is_tun(const char *name)
{
	struct ethtool_drvinfo info = { .cmd = ETHTOOL_GDRVINFO };
	int sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr;
	bool tun;

	if (sk < 0)
		return false;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_data = (void *)&info;
	tun = !ioctl(sk, SIOCETHTOOL, &ifr) && !strcmp(info.driver, "tun");
	close(sk);
	return tun;
}

int netns_local_path(const struct netns_plan *p, char *err, size_t errlen)
{
	char vm_s[24], vm_p[40], loc_s[24], loc_p[40], hex[16], mac_s[20];
	unsigned int plen;
	uint32_t vm, loc;
	int sk;
	struct ifreq ifr;
	unsigned char *m;

	/* slirp4netns's tap only (podman names it tap0, 10.0.2.0/24 of
	 * the namespace's own); pasta's tap, named after the host's
	 * interface, carries the host's own prefix, where the address
	 * taken could be a real host's: left alone (pasta forwards ports
	 * itself, as frames). */
	if (strcmp(p->ifc.name, NETNS_SLIRP_TAP) || !is_tun(p->ifc.name) ||
	    netns_local_addrs(p, &vm, &plen, &loc))
		return 0;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, NETNS_TAP);
	sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sk < 0 || ioctl(sk, SIOCGIFHWADDR, &ifr)) {
		errf_line(err, errlen, "tap %s: its MAC: %s", NETNS_TAP, strerror(errno));
		if (sk >= 0)
			close(sk);
		return -1;
	}
	close(sk);
	m = (unsigned char *)ifr.ifr_hwaddr.sa_data;
	snprintf(mac_s, sizeof(mac_s), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2],
		 m[3], m[4], m[5]);
	ip4_str(vm, vm_s, sizeof(vm_s));
	ip4_str(loc, loc_s, sizeof(loc_s));
	snprintf(vm_p, sizeof(vm_p), "%s/%u", vm_s, plen);
	snprintf(loc_p, sizeof(loc_p), "%s/32", loc_s);
	snprintf(hex, sizeof(hex), "0x%08x", loc);
	{
		/* The namespace's stack gives the VM its address and reaches
		 * it through the tap, from @loc. */
		const char *del[] = { "ip", "addr", "del", vm_p, "dev", p->ifc.name, NULL };
		const char *add[] = { "ip", "addr", "add", loc_p, "dev", NETNS_TAP, NULL };
		const char *rt[] = { "ip", "route", "add", vm_s, "dev", NETNS_TAP, "src",
				     loc_s, NULL };
		/* Ahead of the redirect (its automatic priority is 49152):
		 * frames for the tap's own MAC, and ARP asking for @loc, stay
		 * in the namespace (no action: the stack takes them). */
		const char *mac[] = { "tc", "filter", "add", "dev", NETNS_TAP, "parent",
				      "ffff:", "prio", "1", "protocol", "all", "u32", "match",
				      "ether", "dst", mac_s, "flowid", "ffff:1", NULL };
		const char *arp[] = { "tc", "filter", "add", "dev", NETNS_TAP, "parent",
				      "ffff:", "prio", "2", "protocol", "arp", "u32", "match",
				      "u32", hex, "0xffffffff", "at", "24", "flowid", "ffff:1",
				      NULL };

		if (run_iproute(mac, err, errlen) || run_iproute(arp, err, errlen) ||
		    run_iproute(del, err, errlen) || run_iproute(add, err, errlen) ||
		    run_iproute(rt, err, errlen))
			return -1;
	}
	return 0;
}

int netns_connect(const struct netns_plan *p, unsigned int pairs, int *fds,
		  char *err, size_t errlen)
{
	if (tap_create(pairs, fds, err, errlen))
		return -1;
	if (!netns_redirect(p, err, errlen))
		return 0;
	for (unsigned int i = 0; i < pairs; i++)
		close(fds[i]);
	return -1;
}
