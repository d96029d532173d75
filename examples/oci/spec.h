/* SPDX-License-Identifier: MIT */
/*
 * The OCI runtime spec (config.json) as minivmm-oci uses it: parsing with
 * jansson, what maps onto a VM and what is refused (see README "Running
 * containers"), and the guest init's CONFIG message built from it.
 */
#ifndef MINIVMM_OCI_SPEC_H
#define MINIVMM_OCI_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/* Guest RAM = memory limit + this (the guest kernel and init's share:
 * with 256 MiB asked, MemTotal in the guest is then about 255 MiB),
 * rounded up to 2 MiB; without a limit, the configured default. */
#define SPEC_MEM_OVERHEAD (48ull << 20)
#define SPEC_MEM_MIN (64ull << 20)
#define SPEC_MAX_VCPUS 254u

enum spec_mount_kind {
	SPEC_MOUNT_GUEST,     /* a file system mounted by the guest init */
	SPEC_MOUNT_FILE_COPY, /* bind of a host file the container engine
				 made (spec_file_copied()): copied */
	SPEC_MOUNT_VOLUME,    /* bind of a host directory, or of any other
				 host file (@file): shared with virtio-fs,
				 one virtiofsd each (shim.c) */
};

/* The binds of host files copied at create rather than shared: those on
 * the files a container engine writes for the container itself
 * (/etc/hosts, /etc/hostname, /etc/resolv.conf, /run/.containerenv,
 * /dev/termination-log): fixed for the container's life, and each would
 * otherwise cost a virtiofsd. */
bool spec_file_copied(const char *dest);

/* Bind mounts of directories and shared files per container: one
 * virtio-fs device each, at most VMM_MAX_FS (vmm.h; checked in shim.c). */
#define SPEC_MAX_VOLUMES 8
/* The virtio-fs tag of volume N: "minivmm-volN". */
#define SPEC_VOLUME_TAG "minivmm-vol%u"

struct spec_mount {
	enum spec_mount_kind kind;
	char *dest, *type, *source, *options; /* options: comma-joined */
	/* SPEC_MOUNT_VOLUME: its number (tag), read-only on the host side;
	 * options then only the mount flags the guest applies (ro, nosuid,
	 * nodev, noexec, atime ones; bind and propagation dropped) */
	unsigned int vol;
	bool ro;
	/* SPEC_MOUNT_VOLUME of a regular file (virtiofsd_spawn_file(); the
	 * guest init binds it over dest: PROTO_REC_VOLUME_FILE) */
	bool file;
	/* SPEC_MOUNT_FILE_COPY with the root over virtio-fs: the file's
	 * bytes, read at create (spec_read_files()), sent to the guest init
	 * (PROTO_REC_FILE); NULL otherwise */
	char *data;
	size_t data_len;
};

struct spec_rlimit {
	uint32_t resource;
	uint64_t soft, hard;
};

struct spec_device {
	char type; /* 'c' or 'b' ('u' is taken as 'c') */
	uint32_t major, minor, mode, uid, gid;
	char *path;
};

struct oci_spec {
	char *oci_version;
	char *root_path; /* absolute */
	bool root_ro;
	char **args, **env;
	unsigned int nargs, nenv;
	char *cwd;
	uint32_t uid, gid, umask_v;
	bool has_umask;
	uint32_t *gids;
	unsigned int ngids;
	bool terminal, nnp;
	/* process.capabilities: @caps[enum proto_cap_set], bit N for
	 * capability N; @has_caps false without the object (every capability
	 * kept, as OCI runtimes do) */
	bool has_caps;
	uint64_t caps[PROTO_CAP_SETS];
	uint16_t rows, cols;
	char *hostname;
	struct spec_mount *mounts;
	unsigned int nmounts;
	unsigned int nvolumes; /* of them SPEC_MOUNT_VOLUME */
	struct spec_rlimit *rlimits;
	unsigned int nrlimits;
	char **masked, **ropaths;
	unsigned int nmasked, nropaths;
	char **sysctl_keys, **sysctl_values;
	unsigned int nsysctls;
	struct spec_device *devices;
	unsigned int ndevices;
	char *annotations_json; /* the "annotations" object, compact, or "{}" */
	/* The VM's size from the annotations SPEC_ANN_VCPUS / SPEC_ANN_MEMORY
	 * (0: not given); over the resources and the configured defaults. */
	unsigned int ann_vcpus;
	uint64_t ann_memory; /* bytes, 2 MiB-aligned */
	/* linux.resources */
	uint64_t mem_limit;	/* bytes; 0: none */
	int64_t cpu_quota;	/* <= 0: none */
	uint64_t cpu_period;
	unsigned int cpuset_cpus; /* CPUs in cpuset.cpus; 0: none */
	char *cpuset_list, *cpuset_mems; /* cpu.cpus, cpu.mems as given, or NULL */
	int64_t pids_limit;	/* <= 0: none */
	char *cgroups_path;	/* linux.cgroupsPath, or NULL */
	char *warnings; /* newline-separated notes for the log, or NULL */
	/* linux.namespaces' network entry: its path (absolute) when one is
	 * joined, NULL for a new, empty one */
	char *netns_path;
	/* The root file system's kind: the SPEC_ANN_ROOTFS annotation
	 * (SPEC_ROOTFS_DEFAULT: not given), and what create chose (the
	 * annotation, else the `rootfs` setting): true, the bundle's root
	 * directory is shared with virtio-fs (tag SPEC_ROOT_TAG) instead of
	 * copied into an ext4 image */
	int ann_rootfs; /* enum spec_rootfs */
	bool root_virtiofs;
	/* SPEC_ANN_NETWORK as given (enum spec_net; SPEC_NET_DEFAULT: not
	 * given), and what create chose (spec_net_at_start()): true, the
	 * VM's NIC is connected to the network namespace at start, from
	 * what it holds then (ctr run --cni fills a new namespace between
	 * create and start) */
	int net_mode;
	bool net_at_start;
	/* The bundle is podman's (SPEC_ANN_MANAGER "libpod") */
	bool libpod;
	/* A pod's sandbox (infrastructure) container: spec_pod_sandbox() */
	bool pod_sandbox;
};

/* ---- spec-rootfs.c: the root file system's kind ---- */
struct json_t;
enum spec_rootfs { SPEC_ROOTFS_DEFAULT, SPEC_ROOTFS_EXT4, SPEC_ROOTFS_VIRTIOFS };
#define SPEC_ANN_ROOTFS "org.minivmm.rootfs"
/* The virtio-fs tag of the root with SPEC_ROOTFS_VIRTIOFS. */
#define SPEC_ROOT_TAG "minivmm-root"
/* A bind-mounted file sent to the guest (PROTO_REC_FILE) is at most this
 * big (podman's hosts, resolv.conf, hostname, .containerenv: bytes). */
#define SPEC_FILE_MAX (256u << 10)
/* "ext4" or "virtiofs" (@what names the setting or annotation in the
 * reason).  0, or -1 with a reason in @err. */
int spec_parse_rootfs(const char *v, const char *what, int *out, char *err, size_t len);
/* SPEC_ANN_ROOTFS of the annotations object @ann into @s->ann_rootfs.
 * 0, or -1 with a reason in @err. */
int spec_parse_rootfs_annotation(struct json_t *ann, struct oci_spec *s, char *err,
				 size_t len);
/* The root over virtio-fs: read each SPEC_MOUNT_FILE_COPY source (a
 * regular file, at most SPEC_FILE_MAX bytes) into its mount's data.
 * Call as the runtime (root: the sources may be private).  0, or -1
 * with a reason in @err. */
int spec_read_files(struct oci_spec *s, char *err, size_t len);
/*
 * An O_PATH fd of what @path names inside the tree at @rootfd, symlinks
 * resolved inside it (absolute targets and ".." stop at @rootfd, as under
 * chroot), never on the host: openat2(RESOLVE_IN_ROOT), or the same walk
 * by hand where the kernel lacks it.  -1 with errno otherwise.
 */
int spec_open_in_root(int rootfd, const char *path);
/*
 * A read-only root over virtio-fs: the guest init cannot make the mount
 * points its mounts need, so make the missing ones here, at create, in the
 * bundle's root (as runc does before it remounts a root read-only): a
 * directory for each guest mount and volume, an empty file for each bound
 * file.  Looked up inside the root (spec_open_in_root()); what exists is
 * kept.  Nothing for an ext4 image (image.c makes them there) or a
 * writable root (the guest init does).  0, or -1 with a line in @err.
 */
int spec_make_mount_points(const struct oci_spec *s, char *err, size_t len);
/* @m's PROTO_REC_FILE record (dest, its mount flags as spec_volume_options()
 * keeps them, the bytes read) into @b. */
void spec_encode_file(const struct spec_mount *m, struct proto_buf *b);

/* When the VM is connected to the container's network namespace:
 * "create" (podman configures the namespace it names by path before
 * create) or "start" (`ctr run --cni`: containerd runs CNI on the VMM
 * process's new namespace after create; the VM then gets a NIC at create
 * whose tap is redirected to the namespace's interface at start,
 * shim.c).  Not given: "start" for a new namespace the runtime makes (no
 * path), "create" for one joined by path and for any namespace of a
 * podman bundle (spec_net_at_start()). */
#define SPEC_ANN_NETWORK "org.minivmm.network"
/* Set by podman on every bundle.  podman makes, fills and names by path
 * every namespace it networks; a new one it leaves to the runtime
 * (--network none) stays empty, so a NIC waiting for start there would
 * only be a dead eth0 in the guest, which runc's container lacks. */
#define SPEC_ANN_MANAGER "io.container.manager"
enum spec_net { SPEC_NET_DEFAULT, SPEC_NET_CREATE, SPEC_NET_START };
/* SPEC_ANN_NETWORK of the annotations object @ann (NULL: none) into
 * *@mode (enum spec_net).  0, or -1 with a reason in @err. */
int spec_parse_network_annotation(struct json_t *ann, int *mode, char *err, size_t len);
/* Whether the VM's NIC is connected at start: SPEC_NET_START, or the
 * default with no namespace path when the runtime makes a new namespace
 * (@new_ns: it runs as root; without, the VMM process stays in the
 * caller's namespace and gets no NIC) for a bundle not podman's. */
bool spec_net_at_start(const struct oci_spec *s, bool new_ns);
/*
 * Whether the bundle is a pod's sandbox container, the one that only
 * holds the pod's namespaces (Kubernetes' pause, podman's infra): the
 * CRI's container-type annotation (containerd's SPEC_ANN_CRI_TYPE, CRI-O's
 * SPEC_ANN_CRIO_TYPE) says "sandbox", or the process is podman's pause
 * (`/catatonit -P`; podman 4 marks its infra container no other way).
 * Its VM gets no NIC and leaves the namespace to the pod's first
 * application container's VM: a namespace is served by one VM only.
 * @ann: the annotations object (NULL: none).
 */
#define SPEC_ANN_CRI_TYPE "io.kubernetes.cri.container-type"
#define SPEC_ANN_CRIO_TYPE "io.kubernetes.cri-o.ContainerType"
bool spec_pod_sandbox(struct json_t *ann, const struct oci_spec *s);

/* Per-container VM size: vCPUs (1..SPEC_MAX_VCPUS) and guest RAM (MiB, or
 * with a suffix K, M, G, T; SPEC_MEM_MIN..1 TiB, rounded up to 2 MiB). */
#define SPEC_ANN_VCPUS "org.minivmm.vcpus"
#define SPEC_ANN_MEMORY "org.minivmm.memory"
/* Parse one of them: 0, or -1 with a reason in @err. */
int spec_parse_vcpus(const char *v, unsigned int *out, char *err, size_t len);
int spec_parse_memory(const char *v, uint64_t *out, char *err, size_t len);

/*
 * Parse @bundle/config.json (or @path if not NULL).  Returns 0, or -1 with
 * a one-line reason in @err: unreadable or malformed JSON, a field of the
 * wrong type, no process.args, no root.path, a capability name not in
 * spec_cap_names, a bad SPEC_ANN_VCPUS / SPEC_ANN_MEMORY annotation, and
 * what a VM cannot do: bind mounts of devices, sockets or fifos, more than
 * SPEC_MAX_VOLUMES directory binds (volumes; /dev/shm's becomes a tmpfs),
 * a bind source that is missing, no network namespace (the host's
 * network), a relative network namespace path, an unknown mount type.  Call spec_free() in both cases.
 */
int spec_load(const char *bundle, const char *path, struct oci_spec *s,
	      char *err, size_t errlen);
void spec_free(struct oci_spec *s);
struct json_t;
/* linux.resources (memory.limit, cpu.quota/period/cpus/mems, pids.limit)
 * into @s's resource fields.  0, or -1 with a reason in @err. */
int spec_parse_resources(struct json_t *res, struct oci_spec *s, char *err, size_t len);
/* SPEC_ANN_VCPUS / SPEC_ANN_MEMORY of the annotations object @ann (NULL:
 * none) into @s (spec-size.c).  0, or -1 with a reason in @err. */
int spec_parse_size_annotations(struct json_t *ann, struct oci_spec *s, char *err,
				size_t len);
/*
 * A volume's options as the guest applies them (spec-volume.c): of the
 * bind mount's comma-joined @opts, only the mount flags (ro, rw, nosuid,
 * suid, nodev, dev, noexec, exec, the atime ones) into *@out (malloc'd);
 * *@ro set by the last of ro/rw; *@ignored counts what was dropped other
 * than bind/rbind and SELinux's z/Z: propagation (private, rslave,
 * shared, ...: a VM's mounts never propagate back to the host) and
 * anything else.  0, or -ENOMEM.
 */
int spec_volume_options(const char *opts, char **out, bool *ro, unsigned int *ignored);

/* Guest RAM for @s: the SPEC_ANN_MEMORY annotation, else limit +
 * SPEC_MEM_OVERHEAD (at least SPEC_MEM_MIN, 2 MiB-aligned), else @dflt. */
uint64_t spec_guest_memory(const struct oci_spec *s, uint64_t dflt);
/* vCPUs: the SPEC_ANN_VCPUS annotation, else ceil(quota / period), else
 * the cpuset's CPU count, else @dflt; capped at SPEC_MAX_VCPUS. */
unsigned int spec_guest_vcpus(const struct oci_spec *s, unsigned int dflt);
/* Number of CPUs in a cpuset list ("0-3,8,10-11"); 0 if malformed. */
unsigned int spec_cpuset_count(const char *list);

/* The capabilities by number, "CAP_CHOWN" (0) to SPEC_CAP_LAST. */
#define SPEC_CAP_LAST 40
extern const char *const spec_cap_names[SPEC_CAP_LAST + 1];
/* A capability's number by its name ("CAP_NET_ADMIN"), or -1. */
int spec_cap_number(const char *name);

/* exec --process FILE: the process object alone (runc's process.json),
 * parsed as config.json's process is, into @s's process fields.  0, or -1
 * with a reason in @err; spec_free() in both cases. */
int spec_load_process(const char *path, struct oci_spec *s, char *err,
		      size_t errlen);
/* The process's CONFIG records only (args, env, cwd, user, umask,
 * terminal, noNewPrivileges, capabilities, size, rlimits): exec's request.
 * spec_encode() writes them and the container's own. */
void spec_encode_process(const struct oci_spec *s, uint16_t rows, uint16_t cols,
			 struct proto_buf *b);
/* The guest init's CONFIG records (proto.h) for @s into @b. */
void spec_encode(const struct oci_spec *s, uint16_t rows, uint16_t cols,
		 struct proto_buf *b);

/*
 * Is process.args[0] there in the root file system (PATH from the spec's
 * environment, or the default one)?  Returns 0, or -1 with the reference runtime's message
 * ("executable file `X` not found in $PATH"), which podman maps to 127.
 */
int spec_check_executable(const struct oci_spec *s, char *err, size_t errlen);

/* Parse a signal: "15", "TERM", "SIGTERM" (case-insensitive).  The number
 * or -1. */
int spec_parse_signal(const char *s);

#endif
