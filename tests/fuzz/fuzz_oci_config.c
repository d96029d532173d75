/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: minivmm-oci's config.json loader (examples/oci/spec.c):
 * the input is the file, loaded by spec_load() from a bundle directory
 * with a rootfs/ (made once per process under $TMPDIR or /tmp, removed at
 * exit), as `minivmm-oci create` does, then mapped onto a VM
 * (spec_guest_memory(), spec_guest_vcpus()) and encoded into the guest
 * init's CONFIG records (spec_encode()).  Leak detection (fuzz.sh) covers
 * spec_free() after a refusal at any point.
 *
 * Checked beyond the sanitizers (abort()):
 *  - a refusal has a one-line reason;
 *  - an accepted spec has process.args with a non-empty args[0], an
 *    absolute cwd and root path, absolute mount destinations, annotations
 *    that are a JSON object, guest RAM of at least SPEC_MEM_MIN in 2 MiB
 *    steps (or the default) and 1..SPEC_MAX_VCPUS vCPUs;
 *  - its CONFIG records decode (proto_next()) to exactly the spec: the
 *    arguments and environment in order, cwd, uid/gid, one record per
 *    group, guest mount, rlimit, masked and read-only path, sysctl and
 *    device.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "spec.h"

#define DEFAULT_MEM (512ull << 20)

/* BUNDLE/rootfs/bin/sh, as podman's and containerd's bundles have. */
static const char *bundle(void)
{
	static const char *dir;
	char p[300];
	FILE *f;

	if (dir)
		return dir;
	dir = fuzz_tmpdir("oci-config");
	snprintf(p, sizeof(p), "%s/rootfs", dir);
	if (mkdir(p, 0755))
		abort();
	snprintf(p, sizeof(p), "%s/rootfs/bin", dir);
	if (mkdir(p, 0755))
		abort();
	snprintf(p, sizeof(p), "%s/rootfs/bin/sh", dir);
	f = fopen(p, "w");
	if (!f)
		abort();
	fclose(f);
	return dir;
}

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_oci_config: %s\n", what);
	abort();
}

/* The next record of @it, which must be @type with value @s (a string). */
static void expect_str(struct proto_iter *it, uint16_t type, const char *s)
{
	const uint8_t *v;
	uint16_t t;
	uint32_t n;

	if (proto_next(it, &t, &v, &n) != 1 || t != type || n != strlen(s) ||
	    memcmp(v, s, n))
		fail("CONFIG records differ from the spec (strings)");
}

/* Decode @b and compare with @s, in spec_encode()'s order per type. */
static void check_encoding(const struct oci_spec *s, const struct proto_buf *b)
{
	struct proto_iter it = { b->data, b->data + b->len };
	unsigned int count[PROTO_REC_VOLUME + 1] = { 0 }, guest_mounts = 0, volumes = 0;
	const uint8_t *v;
	uint16_t t;
	uint32_t n;
	int r;

	for (unsigned int i = 0; i < s->nargs; i++)
		expect_str(&it, PROTO_REC_ARG, s->args[i]);
	for (unsigned int i = 0; i < s->nenv; i++)
		expect_str(&it, PROTO_REC_ENV, s->env[i]);
	expect_str(&it, PROTO_REC_CWD, s->cwd);
	if (s->hostname)
		expect_str(&it, PROTO_REC_HOSTNAME, s->hostname);
	if (proto_next(&it, &t, &v, &n) != 1 || t != PROTO_REC_UID || n != 4 ||
	    proto_get_u32(v) != s->uid ||
	    proto_next(&it, &t, &v, &n) != 1 || t != PROTO_REC_GID || n != 4 ||
	    proto_get_u32(v) != s->gid)
		fail("CONFIG records differ from the spec (uid/gid)");
	while ((r = proto_next(&it, &t, &v, &n)) == 1) {
		count[t <= PROTO_REC_VOLUME ? t : 0]++;
		/* process.capabilities: one u64 per set, as parsed. */
		if (t >= PROTO_REC_CAP_BOUNDING && t <= PROTO_REC_CAP_AMBIENT &&
		    (n != 8 || !s->has_caps ||
		     proto_get_u64(v) != s->caps[t - PROTO_REC_CAP_BOUNDING]))
			fail("CONFIG records differ from the spec (capabilities)");
	}
	if (r < 0)
		fail("CONFIG records do not decode");
	for (unsigned int i = 0; i < s->nmounts; i++) {
		guest_mounts += s->mounts[i].kind == SPEC_MOUNT_GUEST;
		volumes += s->mounts[i].kind == SPEC_MOUNT_VOLUME;
	}
	if (count[0] || count[PROTO_REC_GROUP] != s->ngids ||
	    count[PROTO_REC_MOUNT] != guest_mounts || count[PROTO_REC_VOLUME] != volumes ||
	    count[PROTO_REC_NET_LINK] || count[PROTO_REC_NET_ADDR] || count[PROTO_REC_NET_ROUTE] ||
	    count[PROTO_REC_RLIMIT] != s->nrlimits ||
	    count[PROTO_REC_MASK] != s->nmasked ||
	    count[PROTO_REC_RO_PATH] != s->nropaths ||
	    count[PROTO_REC_SYSCTL] != s->nsysctls ||
	    count[PROTO_REC_DEVICE] != s->ndevices || count[PROTO_REC_UMASK] != 1 ||
	    count[PROTO_REC_ARG] || count[PROTO_REC_ENV])
		fail("CONFIG records differ from the spec (counts)");
	for (unsigned int k = PROTO_REC_CAP_BOUNDING; k <= PROTO_REC_CAP_AMBIENT; k++)
		if (count[k] != (s->has_caps ? 1u : 0u))
			fail("CONFIG records differ from the spec (capability sets)");
}

static void check_spec(const struct oci_spec *s)
{
	uint64_t mem = spec_guest_memory(s, DEFAULT_MEM);
	unsigned int cpus = spec_guest_vcpus(s, 1);
	struct proto_buf b = { 0 };
	json_error_t je;
	json_t *ann;

	if (!s->nargs || !s->args[0][0] || !s->cwd || s->cwd[0] != '/' ||
	    !s->root_path || s->root_path[0] != '/' || !s->oci_version)
		fail("an accepted spec without args, cwd or root");
	for (unsigned int i = 0; i < s->nmounts; i++)
		if (!s->mounts[i].dest || s->mounts[i].dest[0] != '/' ||
		    !s->mounts[i].type || !s->mounts[i].options)
			fail("an accepted mount without an absolute destination");
	ann = json_loads(s->annotations_json ? s->annotations_json : "", 0, &je);
	if (!json_is_object(ann))
		fail("annotations are not a JSON object");
	json_decref(ann);
	if (s->mem_limit ? mem < SPEC_MEM_MIN || mem % (2u << 20) : mem != DEFAULT_MEM)
		fail("guest memory");
	if (cpus < 1 || cpus > SPEC_MAX_VCPUS)
		fail("guest vCPUs");
	spec_encode(s, 24, 80, &b);
	if (b.err)
		abort(); /* out of memory */
	check_encoding(s, &b);
	proto_buf_free(&b);
}

int fuzz_oci_config(const uint8_t *data, size_t size)
{
	char path[300], err[512];
	struct oci_spec s;
	FILE *f;

	snprintf(path, sizeof(path), "%s/config.json", bundle());
	f = fopen(path, "w");
	if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f))
		abort();
	memset(err, 0xff, sizeof(err));
	if (spec_load(bundle(), NULL, &s, err, sizeof(err)) == 0)
		check_spec(&s);
	else if (!memchr(err, '\0', sizeof(err)) || !err[0] || strchr(err, '\n'))
		fail("a refusal without a one-line reason");
	spec_free(&s);
	return 0;
}

FUZZ_TARGET(fuzz_oci_config)
