/* SPDX-License-Identifier: MIT */
/* The guest init's CONFIG decoder (see config.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

/* A NUL-terminated copy of a record's value, or NULL (out of memory). */
static char *dupn(const uint8_t *v, uint32_t len)
{
	char *s = malloc((size_t)len + 1);

	if (!s)
		return NULL;
	memcpy(s, v, len);
	s[len] = 0;
	return s;
}

/* Split a NUL-separated record into @n strings (missing ones are ""), all
 * pointing into one allocation, at @out[0]. */
static int split(const uint8_t *v, uint32_t len, char **out, unsigned int n)
{
	char *s = dupn(v, len), *end;

	if (!s)
		return -ENOMEM;
	end = s + len;
	for (unsigned int i = 0; i < n; i++) {
		out[i] = s < end ? s : end;
		s += strlen(out[i]) + 1;
		if (s > end)
			s = end;
	}
	return 0;
}

/* A MOUNT (dest, type, source, options) or a VOLUME (dest, tag, options:
 * a virtio-fs mount by tag; @vfile: a VOLUME_FILE, the file it holds
 * bound over dest) into the one table, in order, unless full. */
static int add_mount(struct init_config *c, const uint8_t *v, uint32_t len,
		     bool volume, bool vfile)
{
	char *f[4];
	int ret;

	if (c->nmounts >= INIT_MAX_MOUNTS)
		return 0;
	ret = split(v, len, f, volume ? 3 : 4);
	if (ret)
		return ret;
	c->mounts[c->nmounts++] = volume ?
		(struct init_mnt){ .dest = f[0], .type = (char *)"virtiofs", .source = f[1],
				   .options = f[2], .volume = true, .vfile = vfile } :
		(struct init_mnt){ .dest = f[0], .type = f[1], .source = f[2],
				   .options = f[3] };
	return 0;
}

/* A FILE (dest, options, bytes: the bytes may hold NULs) into the mount
 * table, in order, unless full. */
static int add_file(struct init_config *c, const uint8_t *v, uint32_t len)
{
	char *f[2], *end, *bytes;
	int ret;

	if (c->nmounts >= INIT_MAX_MOUNTS)
		return 0;
	ret = split(v, len, f, 2);
	if (ret)
		return ret;
	/* The bytes: after the options' NUL, to the record's end (where
	 * dupn() NUL-terminated the copy); none if a NUL is missing. */
	end = f[0] + len;
	bytes = f[1] + strlen(f[1]) + 1;
	if (bytes > end)
		bytes = end;
	c->mounts[c->nmounts++] = (struct init_mnt){
		.dest = f[0], .type = (char *)"file", .source = bytes, .options = f[1],
		.file = true, .size = (uint32_t)(end - bytes) };
	return 0;
}

/* Replace *@dst (a string given once, e.g. cwd) with @v. */
static int set_str(char **dst, const uint8_t *v, uint32_t len)
{
	char *s = dupn(v, len);

	if (!s)
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

/* Append a copy of @v to @tab (@max entries) unless it is full. */
static int add_str(char **tab, unsigned int *n, unsigned int max,
		   const uint8_t *v, uint32_t len)
{
	if (*n >= max)
		return 0;
	tab[*n] = dupn(v, len);
	if (!tab[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

static uint16_t get_u16(const uint8_t *v)
{
	return (uint16_t)(v[0] | v[1] << 8);
}

/* NET_LINK: mac[6], u32 mtu, name (0..15 bytes of [A-Za-z0-9_.-]). */
static void parse_net_link(struct init_net *n, const uint8_t *v, uint32_t len)
{
	uint32_t nl = len - 10;

	if (len < 10 || nl > sizeof(n->name) - 1)
		return;
	for (uint32_t i = 0; i < nl; i++)
		if (!((v[10 + i] >= 'a' && v[10 + i] <= 'z') ||
		      (v[10 + i] >= 'A' && v[10 + i] <= 'Z') ||
		      (v[10 + i] >= '0' && v[10 + i] <= '9') ||
		      v[10 + i] == '_' || v[10 + i] == '.' || v[10 + i] == '-'))
			return;
	memcpy(n->mac, v, 6);
	n->mtu = proto_get_u32(v + 6);
	memset(n->name, 0, sizeof(n->name)); /* a second LINK replaces the first */
	memcpy(n->name, v + 10, nl);
	n->name[nl] = 0;
	n->has_link = true;
}

/* The address length of family @f (4|6), or 0 for another. */
static uint32_t fam_len(uint8_t f)
{
	return f == 4 ? 4 : f == 6 ? 16 : 0;
}

static void parse_net_addr(struct init_net *n, const uint8_t *v, uint32_t len)
{
	uint32_t al = len ? fam_len(v[0]) : 0;

	if (!al || len != 2 + al || v[1] > al * 8 || n->naddrs >= INIT_MAX_NET_ADDRS)
		return;
	n->addrs[n->naddrs].family = v[0];
	n->addrs[n->naddrs].plen = v[1];
	memcpy(n->addrs[n->naddrs++].a, v + 2, al);
}

static void parse_net_route(struct init_net *n, const uint8_t *v, uint32_t len)
{
	uint32_t al = len ? fam_len(v[0]) : 0;
	struct init_net_route *r = &n->routes[n->nroutes];

	if (!al || len != 6 + 2 * al || v[1] > al * 8 || n->nroutes >= INIT_MAX_NET_ROUTES)
		return;
	r->family = v[0];
	r->plen = v[1];
	r->metric = proto_get_u32(v + 2);
	memcpy(r->dst, v + 6, al);
	memcpy(r->gw, v + 6 + al, al);
	n->nroutes++;
}

/* One record into @c (its value is inside the payload: proto_next()). */
static int parse_record(struct init_config *c, uint16_t t, const uint8_t *v,
			uint32_t len)
{
	switch (t) {
	case PROTO_REC_ARG:
		return add_str(c->args, &c->nargs, INIT_MAX_ARGS, v, len);
	case PROTO_REC_ENV:
		return add_str(c->env, &c->nenv, INIT_MAX_ARGS, v, len);
	case PROTO_REC_CWD:
		return set_str(&c->cwd, v, len);
	case PROTO_REC_HOSTNAME:
		return set_str(&c->hostname, v, len);
	case PROTO_REC_UID:
		if (len == 4)
			c->uid = proto_get_u32(v);
		return 0;
	case PROTO_REC_GID:
		if (len == 4)
			c->gid = proto_get_u32(v);
		return 0;
	case PROTO_REC_UMASK:
		if (len == 4)
			c->umask_v = proto_get_u32(v);
		return 0;
	case PROTO_REC_GROUP:
		if (len == 4 && c->ngroups < INIT_MAX_GROUPS)
			c->groups[c->ngroups++] = proto_get_u32(v);
		return 0;
	case PROTO_REC_TERMINAL:
		c->terminal = len && v[0];
		return 0;
	case PROTO_REC_ROOT_RO:
		c->root_ro = len && v[0];
		return 0;
	case PROTO_REC_NNP:
		c->nnp = len && v[0];
		return 0;
	case PROTO_REC_ROWS:
		if (len == 2)
			c->rows = get_u16(v);
		return 0;
	case PROTO_REC_COLS:
		if (len == 2)
			c->cols = get_u16(v);
		return 0;
	case PROTO_REC_CAP_BOUNDING:
	case PROTO_REC_CAP_EFFECTIVE:
	case PROTO_REC_CAP_PERMITTED:
	case PROTO_REC_CAP_INHERITABLE:
	case PROTO_REC_CAP_AMBIENT:
		/* Any one of them means "apply the sets": one missing is
		 * empty, the safe side. */
		if (len == 8) {
			c->has_caps = true;
			c->caps[t - PROTO_REC_CAP_BOUNDING] = proto_get_u64(v);
		}
		return 0;
	case PROTO_REC_MOUNT:
	case PROTO_REC_VOLUME:
	case PROTO_REC_VOLUME_FILE:
		return add_mount(c, v, len, t != PROTO_REC_MOUNT, t == PROTO_REC_VOLUME_FILE);
	case PROTO_REC_FILE:
		return add_file(c, v, len);
	case PROTO_REC_ROOT_FS:
		return set_str(&c->root_tag, v, len);
	case PROTO_REC_RLIMIT:
		if (len == 20 && c->nrlimits < INIT_MAX_RLIMITS)
			c->rlimits[c->nrlimits++] = (struct init_rl){
				proto_get_u32(v), proto_get_u64(v + 4),
				proto_get_u64(v + 12) };
		return 0;
	case PROTO_REC_MASK:
		return add_str(c->masked, &c->nmasked, INIT_MAX_PATHS, v, len);
	case PROTO_REC_RO_PATH:
		return add_str(c->ropaths, &c->nropaths, INIT_MAX_PATHS, v, len);
	case PROTO_REC_SYSCTL:
		if (c->nsysctls < INIT_MAX_SYSCTLS) {
			int ret = split(v, len, c->sysctls[c->nsysctls], 2);

			if (ret)
				return ret;
			c->nsysctls++;
		}
		return 0;
	case PROTO_REC_DEVICE:
		/* u8 type, 5 x u32, then the path (at least one byte). */
		if (len > 21 && c->ndevs < INIT_MAX_DEVICES) {
			struct init_dev *d = &c->devs[c->ndevs];

			d->path = dupn(v + 21, len - 21);
			if (!d->path)
				return -ENOMEM;
			d->type = (char)v[0];
			d->major = proto_get_u32(v + 1);
			d->minor = proto_get_u32(v + 5);
			d->mode = proto_get_u32(v + 9);
			d->uid = proto_get_u32(v + 13);
			d->gid = proto_get_u32(v + 17);
			c->ndevs++;
		}
		return 0;
	case PROTO_REC_NET_FIND:
		if (len == 6) {
			memcpy(c->net.find_mac, v, 6);
			c->net.has_find = true;
		}
		return 0;
	case PROTO_REC_NET_LINK:
		parse_net_link(&c->net, v, len);
		return 0;
	case PROTO_REC_NET_ADDR:
		parse_net_addr(&c->net, v, len);
		return 0;
	case PROTO_REC_NET_ROUTE:
		parse_net_route(&c->net, v, len);
		return 0;
	default:
		return 0; /* a newer host: skip */
	}
}

int init_config_parse(struct init_config *c, const uint8_t *p, uint32_t n)
{
	/* No payload at all may come as NULL (no offset on a null pointer). */
	struct proto_iter it = { p, p ? p + n : p };
	const uint8_t *v;
	uint32_t len;
	uint16_t t;
	int r, ret;

	c->umask_v = 022;
	while ((r = proto_next(&it, &t, &v, &len)) > 0)
		if ((ret = parse_record(c, t, v, len)))
			return ret;
	c->args[c->nargs] = NULL;
	c->env[c->nenv] = NULL;
	if (!c->cwd && set_str(&c->cwd, (const uint8_t *)"/", 1))
		return -ENOMEM;
	return r < 0 || !c->nargs ? -EINVAL : 0;
}

void init_config_free(struct init_config *c)
{
	for (unsigned int i = 0; i < c->nargs; i++)
		free(c->args[i]);
	for (unsigned int i = 0; i < c->nenv; i++)
		free(c->env[i]);
	free(c->cwd);
	free(c->hostname);
	free(c->root_tag);
	for (unsigned int i = 0; i < c->nmounts; i++)
		free(c->mounts[i].dest);
	for (unsigned int i = 0; i < c->nmasked; i++)
		free(c->masked[i]);
	for (unsigned int i = 0; i < c->nropaths; i++)
		free(c->ropaths[i]);
	for (unsigned int i = 0; i < c->nsysctls; i++)
		free(c->sysctls[i][0]);
	for (unsigned int i = 0; i < c->ndevs; i++)
		free(c->devs[i].path);
	memset(c, 0, sizeof(*c));
}
