/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the guest init's CONFIG decoder (examples/oci/guest-init/
 * config.c, init_config_parse()), the one thing the init parses from the
 * host before it sets up the container.  The whole input is one CONFIG
 * payload (the frame layer is fuzz_oci_proto's).  Seeds: spec_encode()'s
 * output for podman-shaped configs (tests/unit/check_oci_init_config.c
 * writes them; check_oci_volume_records.c `volumes`, check_oci_rootfs.c
 * `rootfs`: the root over virtio-fs with a bound file's bytes).
 *
 * Checked beyond the sanitizers (abort()), for every input:
 *  - the result is 0 or -EINVAL (no allocation fails here); every table
 *    within its size; on success args and env NULL-terminated, cwd set,
 *    at least one arg;
 *  - decoding is a fixed point: the decoded configuration, encoded again
 *    record by record (as spec_encode() would), decodes to the same thing;
 *  - init_config_free() releases everything (LeakSanitizer).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fuzz.h"
#include "proto.h"

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_oci_init_config: %s\n", what);
	abort();
}

static void check_bounds(const struct init_config *c)
{
	if (c->nargs > INIT_MAX_ARGS || c->nenv > INIT_MAX_ARGS ||
	    c->ngroups > INIT_MAX_GROUPS || c->nmounts > INIT_MAX_MOUNTS ||
	    c->nrlimits > INIT_MAX_RLIMITS || c->nmasked > INIT_MAX_PATHS ||
	    c->nropaths > INIT_MAX_PATHS || c->nsysctls > INIT_MAX_SYSCTLS ||
	    c->ndevs > INIT_MAX_DEVICES || c->net.naddrs > INIT_MAX_NET_ADDRS ||
	    c->net.nroutes > INIT_MAX_NET_ROUTES || c->net.name[15])
		fail("a table past its size");
}

static void put_u16(struct proto_buf *b, uint16_t type, uint16_t v)
{
	uint8_t le[2] = { (uint8_t)v, (uint8_t)(v >> 8) };

	proto_rec(b, type, le, 2);
}

/* The NET records again, in netns_encode()'s shapes. */
static void encode_net(const struct init_net *n, struct proto_buf *b)
{
	uint8_t v[6 + 32];
	size_t nl = strlen(n->name);

	if (n->has_find)
		proto_rec(b, PROTO_REC_NET_FIND, n->find_mac, 6);
	if (n->has_link) {
		memcpy(v, n->mac, 6);
		for (int i = 0; i < 4; i++)
			v[6 + i] = (uint8_t)(n->mtu >> (8 * i));
		memcpy(v + 10, n->name, nl);
		proto_rec(b, PROTO_REC_NET_LINK, v, 10 + nl);
	}
	for (unsigned int i = 0; i < n->naddrs; i++) {
		size_t al = n->addrs[i].family == 4 ? 4 : 16;

		v[0] = n->addrs[i].family;
		v[1] = n->addrs[i].plen;
		memcpy(v + 2, n->addrs[i].a, al);
		proto_rec(b, PROTO_REC_NET_ADDR, v, 2 + al);
	}
	for (unsigned int i = 0; i < n->nroutes; i++) {
		const struct init_net_route *r = &n->routes[i];
		size_t al = r->family == 4 ? 4 : 16;

		v[0] = r->family;
		v[1] = r->plen;
		for (int k = 0; k < 4; k++)
			v[2 + k] = (uint8_t)(r->metric >> (8 * k));
		memcpy(v + 6, r->dst, al);
		memcpy(v + 6 + al, r->gw, al);
		proto_rec(b, PROTO_REC_NET_ROUTE, v, 6 + 2 * al);
	}
}

/* A FILE record again: dest, options, the bytes (NULs and all). */
static void encode_file(const struct init_mnt *m, struct proto_buf *b)
{
	size_t dl = strlen(m->dest), ol = strlen(m->options);
	uint8_t *v = malloc(dl + ol + 2 + m->size);

	if (!v)
		fail("out of memory");
	memcpy(v, m->dest, dl + 1);
	memcpy(v + dl + 1, m->options, ol + 1);
	memcpy(v + dl + ol + 2, m->source, m->size);
	proto_rec(b, PROTO_REC_FILE, v, dl + ol + 2 + m->size);
	free(v);
}

/* @c as records again, in spec_encode()'s shapes. */
static void encode(const struct init_config *c, struct proto_buf *b)
{
	encode_net(&c->net, b);
	for (unsigned int i = 0; i < c->nargs; i++)
		proto_rec_str(b, PROTO_REC_ARG, c->args[i]);
	for (unsigned int i = 0; i < c->nenv; i++)
		proto_rec_str(b, PROTO_REC_ENV, c->env[i]);
	proto_rec_str(b, PROTO_REC_CWD, c->cwd);
	if (c->hostname)
		proto_rec_str(b, PROTO_REC_HOSTNAME, c->hostname);
	proto_rec_u32(b, PROTO_REC_UID, c->uid);
	proto_rec_u32(b, PROTO_REC_GID, c->gid);
	for (unsigned int i = 0; i < c->ngroups; i++)
		proto_rec_u32(b, PROTO_REC_GROUP, c->groups[i]);
	proto_rec_u32(b, PROTO_REC_UMASK, c->umask_v);
	proto_rec_u8(b, PROTO_REC_TERMINAL, c->terminal);
	proto_rec_u8(b, PROTO_REC_ROOT_RO, c->root_ro);
	proto_rec_u8(b, PROTO_REC_NNP, c->nnp);
	put_u16(b, PROTO_REC_ROWS, c->rows);
	put_u16(b, PROTO_REC_COLS, c->cols);
	for (int k = 0; c->has_caps && k < PROTO_CAP_SETS; k++)
		proto_rec_u64(b, (uint16_t)(PROTO_REC_CAP_BOUNDING + k), c->caps[k]);
	for (unsigned int i = 0; i < c->nmounts; i++) {
		const struct init_mnt *m = &c->mounts[i];
		const char *f[4] = { m->dest, m->type, m->source, m->options };
		const char *vol[3] = { m->dest, m->source, m->options };

		if (m->volume)
			proto_rec_strs(b, PROTO_REC_VOLUME, vol, 3);
		else if (m->file)
			encode_file(m, b);
		else
			proto_rec_strs(b, PROTO_REC_MOUNT, f, 4);
	}
	if (c->root_tag)
		proto_rec_str(b, PROTO_REC_ROOT_FS, c->root_tag);
	for (unsigned int i = 0; i < c->nrlimits; i++)
		proto_rec_rlimit(b, c->rlimits[i].res, c->rlimits[i].soft,
				 c->rlimits[i].hard);
	for (unsigned int i = 0; i < c->nmasked; i++)
		proto_rec_str(b, PROTO_REC_MASK, c->masked[i]);
	for (unsigned int i = 0; i < c->nropaths; i++)
		proto_rec_str(b, PROTO_REC_RO_PATH, c->ropaths[i]);
	for (unsigned int i = 0; i < c->nsysctls; i++) {
		const char *f[2] = { c->sysctls[i][0], c->sysctls[i][1] };

		proto_rec_strs(b, PROTO_REC_SYSCTL, f, 2);
	}
	for (unsigned int i = 0; i < c->ndevs; i++) {
		const struct init_dev *d = &c->devs[i];
		uint32_t n[5] = { d->major, d->minor, d->mode, d->uid, d->gid };

		/* With its NUL: a path decoded as "" still makes a record
		 * longer than the 21 bytes of numbers. */
		proto_rec_device(b, d->type, n, d->path, strlen(d->path) + 1);
	}
}

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static bool strv_eq(char *const *a, char *const *b, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (!str_eq(a[i], b[i]))
			return false;
	return true;
}

static void check_same(const struct init_config *a, const struct init_config *b)
{
	if (a->nargs != b->nargs || !strv_eq(a->args, b->args, a->nargs) ||
	    a->nenv != b->nenv || !strv_eq(a->env, b->env, a->nenv) ||
	    !str_eq(a->cwd, b->cwd) || !str_eq(a->hostname, b->hostname) ||
	    !str_eq(a->root_tag, b->root_tag))
		fail("strings changed on a second decode");
	if (a->uid != b->uid || a->gid != b->gid || a->umask_v != b->umask_v ||
	    a->ngroups != b->ngroups ||
	    memcmp(a->groups, b->groups, a->ngroups * sizeof(a->groups[0])) ||
	    a->terminal != b->terminal || a->root_ro != b->root_ro ||
	    a->nnp != b->nnp || a->rows != b->rows || a->cols != b->cols)
		fail("scalars changed on a second decode");
	if (a->has_caps != b->has_caps ||
	    (a->has_caps && memcmp(a->caps, b->caps, sizeof(a->caps))))
		fail("capabilities changed on a second decode");
	if (a->nmounts != b->nmounts || a->nrlimits != b->nrlimits ||
	    a->nmasked != b->nmasked || a->nropaths != b->nropaths ||
	    a->nsysctls != b->nsysctls || a->ndevs != b->ndevs)
		fail("table sizes changed on a second decode");
	for (unsigned int i = 0; i < a->nmounts; i++)
		if (!str_eq(a->mounts[i].dest, b->mounts[i].dest) ||
		    !str_eq(a->mounts[i].type, b->mounts[i].type) ||
		    !str_eq(a->mounts[i].options, b->mounts[i].options) ||
		    a->mounts[i].volume != b->mounts[i].volume ||
		    a->mounts[i].file != b->mounts[i].file ||
		    a->mounts[i].size != b->mounts[i].size ||
		    (a->mounts[i].file ?
		     memcmp(a->mounts[i].source, b->mounts[i].source, a->mounts[i].size) :
		     !str_eq(a->mounts[i].source, b->mounts[i].source)))
			fail("a mount changed on a second decode");
	for (unsigned int i = 0; i < a->nrlimits; i++)
		if (a->rlimits[i].res != b->rlimits[i].res ||
		    a->rlimits[i].soft != b->rlimits[i].soft ||
		    a->rlimits[i].hard != b->rlimits[i].hard)
			fail("an rlimit changed on a second decode");
	if (!strv_eq(a->masked, b->masked, a->nmasked) ||
	    !strv_eq(a->ropaths, b->ropaths, a->nropaths))
		fail("a path changed on a second decode");
	for (unsigned int i = 0; i < a->nsysctls; i++)
		if (!str_eq(a->sysctls[i][0], b->sysctls[i][0]) ||
		    !str_eq(a->sysctls[i][1], b->sysctls[i][1]))
			fail("a sysctl changed on a second decode");
	for (unsigned int i = 0; i < a->ndevs; i++)
		if (a->devs[i].type != b->devs[i].type ||
		    a->devs[i].major != b->devs[i].major ||
		    a->devs[i].minor != b->devs[i].minor ||
		    a->devs[i].mode != b->devs[i].mode ||
		    a->devs[i].uid != b->devs[i].uid ||
		    a->devs[i].gid != b->devs[i].gid ||
		    !str_eq(a->devs[i].path, b->devs[i].path))
			fail("a device changed on a second decode");
	/* Unused bytes of the tables stay zero (memset, fixed lengths). */
	if (memcmp(&a->net, &b->net, sizeof(a->net)))
		fail("the network changed on a second decode");
}

int fuzz_oci_init_config(const uint8_t *data, size_t size)
{
	/* Static: about 25 KiB of tables each, zeroed per input. */
	static struct init_config c, again;
	struct proto_buf b = { 0 };
	uint32_t n = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
	int ret;

	memset(&c, 0, sizeof(c));
	ret = init_config_parse(&c, data, n);
	if (ret && ret != -EINVAL)
		fail("neither decoded nor malformed");
	check_bounds(&c);
	if (!ret) {
		if (!c.nargs || c.args[c.nargs] || c.env[c.nenv] || !c.cwd)
			fail("a decoded configuration without args, terminators or cwd");
		encode(&c, &b);
		if (b.err)
			fail("out of memory re-encoding");
		memset(&again, 0, sizeof(again));
		if (init_config_parse(&again, b.data, (uint32_t)b.len))
			fail("the re-encoded configuration does not decode");
		check_same(&c, &again);
		init_config_free(&again);
		proto_buf_free(&b);
	}
	init_config_free(&c);
	return 0;
}

FUZZ_TARGET(fuzz_oci_init_config)
