/* SPDX-License-Identifier: MIT */
/*
 * The guest init's view of the CONFIG message (config.c): the records
 * spec_encode() writes (proto.h), decoded into fixed-size tables.  Split
 * from init.c so that the fuzz target (tests/fuzz/fuzz_oci_init_config.c)
 * and the unit tests link exactly the decoder the init runs.
 */
#ifndef MINIVMM_OCI_INIT_CONFIG_H
#define MINIVMM_OCI_INIT_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../proto.h"

#define INIT_MAX_ARGS 1024 /* args, env: more are dropped */
#define INIT_MAX_GROUPS 64
#define INIT_MAX_MOUNTS 128
#define INIT_MAX_RLIMITS 32
#define INIT_MAX_PATHS 128 /* masked, read-only */
#define INIT_MAX_SYSCTLS 64
#define INIT_MAX_DEVICES 64

struct init_mnt {
	char *dest, *type, *source, *options; /* one allocation, at dest */
	/* PROTO_REC_VOLUME: type "virtiofs", source the device's tag;
	 * PROTO_REC_VOLUME_FILE also @vfile: its PROTO_VOLUME_FILE bound
	 * over dest */
	bool volume, vfile;
	/* PROTO_REC_FILE: type "file", source the file's bytes (@size of
	 * them, NUL-terminated after) to bind-mount over dest */
	bool file;
	uint32_t size;
};

struct init_dev {
	char type;
	uint32_t major, minor, mode, uid, gid;
	char *path;
};

struct init_rl {
	uint32_t res;
	uint64_t soft, hard;
};

/* The NIC (PROTO_REC_NET_*): what the runtime read in the container's
 * network namespace; has_link false: no NIC. */
#define INIT_MAX_NET_ADDRS 16
#define INIT_MAX_NET_ROUTES 32
struct init_net_addr {
	uint8_t family, plen; /* 4|6, 0..32|128 */
	uint8_t a[16];
};
struct init_net_route {
	uint8_t family, plen;
	uint32_t metric;
	uint8_t dst[16], gw[16];
};
struct init_net {
	bool has_link;
	uint8_t mac[6];
	/* PROTO_REC_NET_FIND: the interface has find_mac now; it gets mac */
	bool has_find;
	uint8_t find_mac[6];
	uint32_t mtu;
	char name[16]; /* NUL-terminated, may be empty */
	struct init_net_addr addrs[INIT_MAX_NET_ADDRS];
	unsigned int naddrs;
	struct init_net_route routes[INIT_MAX_NET_ROUTES];
	unsigned int nroutes;
};

struct init_config {
	char *args[INIT_MAX_ARGS + 1]; /* NULL-terminated */
	unsigned int nargs;
	char *env[INIT_MAX_ARGS + 1];  /* NULL-terminated */
	unsigned int nenv;
	char *cwd, *hostname;	       /* cwd: "/" unless given */
	uint32_t uid, gid, umask_v;
	gid_t groups[INIT_MAX_GROUPS];
	unsigned int ngroups;
	bool terminal, root_ro, nnp;
	/* process.capabilities, bit N for capability N (enum proto_cap_set);
	 * has_caps false: none sent, keep every capability. */
	bool has_caps;
	uint64_t caps[PROTO_CAP_SETS];
	struct init_mnt mounts[INIT_MAX_MOUNTS];
	unsigned int nmounts;
	struct init_rl rlimits[INIT_MAX_RLIMITS];
	unsigned int nrlimits;
	char *masked[INIT_MAX_PATHS], *ropaths[INIT_MAX_PATHS];
	unsigned int nmasked, nropaths;
	char *sysctls[INIT_MAX_SYSCTLS][2]; /* key, value: one allocation */
	unsigned int nsysctls;
	struct init_dev devs[INIT_MAX_DEVICES];
	unsigned int ndevs;
	uint16_t rows, cols;
	struct init_net net;
	/* PROTO_REC_ROOT_FS: the root's virtio-fs tag; NULL: /dev/vda */
	char *root_tag;
};

/*
 * Decode the CONFIG payload @p (@n bytes, guest-side input from the host,
 * still checked: every record against the end of the buffer, every
 * integer record's length; a NET record of the wrong length or family, a
 * prefix too long for its family or a name with characters an interface
 * name cannot have is ignored) into @c, which must be zeroed first (the
 * defaults are set here: umask 022, cwd "/").  Unknown
 * record types are skipped (a newer host); an integer record of the wrong
 * length, and entries past a table's size, are ignored.  Strings are
 * NUL-terminated copies (a NUL inside a value ends it early).  Returns 0;
 * -EINVAL if a record runs past the end or there is no ARG; -ENOMEM.
 * Free @c with init_config_free() in every case.
 */
int init_config_parse(struct init_config *c, const uint8_t *p, uint32_t n);
void init_config_free(struct init_config *c);

#endif
