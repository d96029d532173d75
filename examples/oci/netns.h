/* SPDX-License-Identifier: MIT */
/*
 * The container's network (netns.c): the shim joins the network namespace
 * config.json names (podman's default network: a veth that CNI made, with
 * its addresses and routes), reads that interface's configuration, puts a
 * multi-queue tap beside it and redirects every frame both ways between
 * the two with tc (an ingress qdisc and a `mirred egress redirect` filter
 * on each).  The VM's virtio-net NIC is that tap, with the veth's MAC;
 * the guest init gives it the veth's name, MTU, addresses and routes (the
 * PROTO_REC_NET_* records).  The veth keeps its addresses (the
 * namespace's own stack no longer sees a frame: each is redirected
 * before it); the tap has none -- except where the namespace's interface
 * is itself a tap (slirp4netns's): there netns_local_path() moves the
 * stack onto NETNS_TAP, so that connections made in the namespace (a
 * port forwarder's) reach the VM.
 *
 * The parsing and planning (netns_parse_route4/6, netns_choose,
 * netns_encode) are pure and unit-tested; netns_enter/read/connect act
 * on the process's network namespace.
 */
#ifndef MINIVMM_OCI_NETNS_H
#define MINIVMM_OCI_NETNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define NETNS_IFNAMSIZ 16
#define NETNS_MAX_ADDRS 16  /* of the chosen interface; more: ignored */
#define NETNS_MAX_ROUTES 32 /* through it; more: ignored */
#define NETNS_MAX_IFS 64    /* interfaces looked at; more: ignored */
#define NETNS_TAP "mvm-tap0" /* the VM's tap, in the container's netns */
#define NETNS_SLIRP_TAP "tap0" /* slirp4netns's, as podman runs it */
/* In the container's state directory: the shim made the VM's NIC on a
 * bare NETNS_TAP at create, for `start` to connect (netns_redirect()). */
#define NETNS_AT_START_FILE "net-at-start"

struct netns_addr {
	uint8_t family; /* 4 or 6 */
	uint8_t plen;
	uint8_t a[16];
};

struct netns_route {
	uint8_t family; /* 4 or 6 */
	uint8_t plen;
	uint32_t metric;
	uint8_t dst[16], gw[16]; /* gw all zero: on-link */
};

/* One interface of the namespace, as netns_read() found it. */
struct netns_if {
	char name[NETNS_IFNAMSIZ];
	bool loopback, has_mac;
	uint8_t mac[6];
	uint32_t mtu;
	struct netns_addr addrs[NETNS_MAX_ADDRS];
	unsigned int naddrs;
};

/* What the VM gets: no NIC (@nic false), or one like @ifc. */
struct netns_plan {
	bool nic;
	struct netns_if ifc;
	struct netns_route routes[NETNS_MAX_ROUTES];
	unsigned int nroutes;
	char notes[512]; /* interfaces or entries left out, for the log */
	/* The VM's NIC was made with find_mac before the namespace was read
	 * (SPEC_ANN_NETWORK "start"): netns_encode() tells the guest to
	 * find it by that MAC and give it @ifc's (PROTO_REC_NET_FIND). */
	bool find;
	uint8_t find_mac[6];
};

/*
 * Choose the interface the VM takes over among @n (in the namespace's
 * order): the first that is not a loopback and has an IPv4 or (non
 * link-local) IPv6 address.  NETNS_TAP (the VM's own tap, made before
 * the namespace was read) is passed over, like a loopback.  None but loopbacks: no NIC (0, @p->nic
 * false: podman's --network none namespace).  Returns 0, or -1 with a
 * reason in @err: interfaces but none with an address, the chosen one
 * without an Ethernet (MAC) address or with an MTU outside 68..65535.
 * Interfaces passed over are named in @p->notes.
 */
int netns_choose(const struct netns_if *ifs, unsigned int n,
		 struct netns_plan *p, char *err, size_t errlen);

/*
 * Add the routes through @p->ifc.name from /proc/net/route's text (IPv4)
 * or /proc/net/ipv6_route's (IPv6) to @p: on-link routes first, then
 * those through a gateway (the order the guest can add them in); link-
 * local, multicast, local and cached entries are skipped, a malformed
 * line is skipped, entries past NETNS_MAX_ROUTES are counted in notes.
 */
void netns_parse_route4(struct netns_plan *p, const char *text);
void netns_parse_route6(struct netns_plan *p, const char *text);

/* The PROTO_REC_NET_* records for @p (none without a NIC; NET_FIND
 * first with @p->find). */
void netns_encode(const struct netns_plan *p, struct proto_buf *b);

/*
 * Join the network namespace at @path (setns(CLONE_NEWNET)): the calling
 * thread, which must be the process's only one, stays in it.  0, or -1
 * with a reason in @err (cannot open, not a network namespace).
 */
int netns_enter(const char *path, char *err, size_t errlen);

/* Read the current namespace's interfaces and routes into @p
 * (netns_choose(), netns_parse_route4/6()).  0, or -1 with a reason. */
int netns_read(struct netns_plan *p, char *err, size_t errlen);

/*
 * Create NETNS_TAP in the current namespace with @pairs queues (one fd
 * each into @fds: IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | IFF_MULTI_QUEUE,
 * not persistent: it goes away with the fds), set its MTU, bring it up
 * and redirect both ways between it and @p->ifc with tc (iproute2's tc,
 * /usr/sbin/tc or /sbin/tc).  0, or -1 with a reason in @err (and no fd
 * left open).
 */
int netns_connect(const struct netns_plan *p, unsigned int pairs, int *fds,
		  char *err, size_t errlen);

/*
 * netns_connect() in two steps, for a namespace that is filled after
 * the VM is built (SPEC_ANN_NETWORK "start", `ctr run --cni`):
 * netns_tap_open() creates NETNS_TAP with @pairs queues (MTU 1500, up)
 * in the current namespace, as the shim, at create; netns_redirect()
 * sets the tap's MTU to @p->ifc's and redirects both ways, as
 * `minivmm-oci start` (root) in the VMM process's namespace.  0, or -1
 * with a reason in @err (netns_tap_open(): no fd left open).
 */
int netns_tap_open(unsigned int pairs, int *fds, char *err, size_t errlen);
int netns_redirect(const struct netns_plan *p, char *err, size_t errlen);
/*
 * The namespace's own stack reaching the VM: after netns_connect() or
 * netns_redirect() the address the VM took is still the interface's, so
 * a connection made inside the namespace to it stays local and never
 * reaches the VM -- how rootless podman's default port forwarder
 * (rootlessport: a child in the namespace dials the container's address)
 * published ports.  Where @p->ifc is slirp4netns's tap (a tap named
 * NETNS_SLIRP_TAP; a veth's namespace is left as it is, its prefix a
 * bridge others share, and so is any other tap: pasta's carries the
 * host's own prefix), its first IPv4 address (prefix 1..30) is taken off
 * it for good (the namespace is the container's alone), NETNS_TAP gets
 * netns_local_addrs()' @local/32 and a route to the VM's address, and
 * two tc filters ahead of the redirect keep in the namespace the frames
 * for NETNS_TAP's own MAC and the ARP requests for @local.  Not a tap or
 * no such address: nothing done, 0.  0, or -1 with a reason in @err
 * (what was done stays).  As the shim or `minivmm-oci start`, in the
 * namespace.
 */
int netns_local_path(const struct netns_plan *p, char *err, size_t errlen);
/* The addresses netns_local_path() uses: @vm (host order) and @plen, the
 * first IPv4 address of @p->ifc with a prefix of 1..30, and @local, the
 * highest host address of that prefix that is neither an IPv4 address
 * of @p->ifc nor an IPv4 gateway of @p's routes (8 tries).  0, or -1:
 * none. */
int netns_local_addrs(const struct netns_plan *p, uint32_t *vm, unsigned int *plen,
		      uint32_t *local);

/* The namespace holds nothing to redirect to at start (only a loopback:
 * `ctr run` without --cni): NETNS_TAP is set down (the guest's frames go
 * nowhere; its init leaves the NIC down, without a NET record).  As
 * `minivmm-oci start` (root).  0, or -1 with a reason in @err. */
int netns_tap_down(char *err, size_t errlen);

#endif
