/* SPDX-License-Identifier: MIT */
/*
 * The protocol between minivmm-oci (host) and its guest init, on the
 * virtio-console port "minivmm.ctl".  Shared by both sides (the init is
 * built from this file too, statically).
 *
 * The port is a byte stream; it carries frames: a 4-byte little-endian
 * length (of type + payload, at most PROTO_MAX_FRAME), a 1-byte type, the
 * payload.  Host -> guest: CONFIG (once, when `start` runs), SIGNAL, RESIZE.
 * Guest -> host: READY (booted, waiting for CONFIG), STARTED (the process
 * was executed), ERROR (text; the process could not be started).
 *
 * CONFIG's payload is a list of records: a 2-byte type, a 4-byte length,
 * the value (strings without NUL; integers little-endian).  A decoder
 * skips record types it does not know, and never trusts a length: every
 * record is checked against the end of the buffer.
 */
#ifndef MINIVMM_OCI_PROTO_H
#define MINIVMM_OCI_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define PROTO_PORT_CTL "minivmm.ctl"
#define PROTO_PORT_STDIN "minivmm.stdin"
#define PROTO_PORT_STDOUT "minivmm.stdout"
#define PROTO_PORT_STDERR "minivmm.stderr"
#define PROTO_MAX_FRAME (4u << 20)

enum proto_msg {
	PROTO_MSG_READY = 1,
	PROTO_MSG_CONFIG = 2,
	PROTO_MSG_STARTED = 3,
	PROTO_MSG_ERROR = 4,
	PROTO_MSG_SIGNAL = 5, /* u32 signal number */
	PROTO_MSG_RESIZE = 6, /* u16 rows, u16 cols */
};

enum proto_rec {
	PROTO_REC_ARG = 1,	 /* string, in order */
	PROTO_REC_ENV = 2,	 /* "KEY=VALUE" */
	PROTO_REC_CWD = 3,	 /* string */
	PROTO_REC_HOSTNAME = 4,	 /* string */
	PROTO_REC_UID = 5,	 /* u32 */
	PROTO_REC_GID = 6,	 /* u32 */
	PROTO_REC_GROUP = 7,	 /* u32, additional gid */
	PROTO_REC_UMASK = 8,	 /* u32 */
	PROTO_REC_TERMINAL = 9,	 /* u8 */
	PROTO_REC_ROOT_RO = 10,	 /* u8 */
	PROTO_REC_MOUNT = 11,	 /* dest \0 type \0 source \0 options */
	PROTO_REC_RLIMIT = 12,	 /* u32 resource, u64 soft, u64 hard */
	PROTO_REC_MASK = 13,	 /* masked path */
	PROTO_REC_RO_PATH = 14,	 /* read-only path */
	PROTO_REC_NNP = 15,	 /* u8: no_new_privileges */
	PROTO_REC_SYSCTL = 16,	 /* key \0 value */
	PROTO_REC_DEVICE = 17,	 /* u8 type ('c'/'b'), u32 major, u32 minor,
				    u32 mode, u32 uid, u32 gid, path */
	PROTO_REC_ROWS = 18,	 /* u16: initial terminal rows */
	PROTO_REC_COLS = 19,	 /* u16 */
	/* process.capabilities, one u64 mask each (bit N: capability N).
	 * Sent, all five, only when config.json has the object; without
	 * them the process keeps every capability (as OCI runtimes do). */
	PROTO_REC_CAP_BOUNDING = 20,
	PROTO_REC_CAP_EFFECTIVE = 21,
	PROTO_REC_CAP_PERMITTED = 22,
	PROTO_REC_CAP_INHERITABLE = 23,
	PROTO_REC_CAP_AMBIENT = 24,
	/* The VM's NIC, joined to the container's network namespace (sent
	 * only then; netns.h): the interface as read there, which the
	 * guest init gives the virtio-net interface with that MAC. */
	PROTO_REC_NET_LINK = 25,  /* mac[6], u32 mtu, name (<16 bytes) */
	PROTO_REC_NET_ADDR = 26,  /* u8 family (4|6), u8 prefix, addr[4|16] */
	PROTO_REC_NET_ROUTE = 27, /* u8 family (4|6), u8 prefix, u32 metric,
				     dst[4|16], gateway[4|16] (0: on-link) */
	/* A volume (a bind of a host directory, spec.h): the virtio-fs
	 * device with that tag mounted at dest with the mount flags in
	 * options (ro, nosuid, nodev, noexec, ...), in order among the
	 * MOUNT records.  At most INIT_MAX_MOUNTS of both together. */
	PROTO_REC_VOLUME = 28,	  /* dest \0 tag \0 options */
	/* The root over virtio-fs (sent only then): the device with this
	 * tag is the container's root instead of /dev/vda (ext4). */
	PROTO_REC_ROOT_FS = 29,	  /* tag */
	/* With it, a bind of a host file (/etc/hosts, ...): its bytes, which
	 * the guest init bind-mounts over dest with the flags in options
	 * (not written into the shared root), in order among the MOUNT
	 * records.  The bytes may hold NULs; they end with the record. */
	PROTO_REC_FILE = 30,	  /* dest \0 options \0 bytes */
	/* Before NET_LINK when the VM's NIC was made before the namespace
	 * was read (SPEC_ANN_NETWORK "start"): the guest finds the
	 * interface by this MAC and gives it NET_LINK's. */
	PROTO_REC_NET_FIND = 31,  /* mac[6] */
	/* A volume of one host file: the virtio-fs device with that tag
	 * serves a directory holding it as PROTO_VOLUME_FILE, which the
	 * guest init binds over dest (created empty if missing) with the
	 * mount flags in options; in order among the MOUNT records. */
	PROTO_REC_VOLUME_FILE = 32, /* dest \0 tag \0 options */
};
#define PROTO_VOLUME_FILE "file" /* = VIRTIOFSD_FILE (virtiofsd.h) */

/* The capability sets, in the order of their records. */
enum proto_cap_set {
	PROTO_CAP_BOUNDING,
	PROTO_CAP_EFFECTIVE,
	PROTO_CAP_PERMITTED,
	PROTO_CAP_INHERITABLE,
	PROTO_CAP_AMBIENT,
	PROTO_CAP_SETS,
};

/* A growable byte buffer for encoding. */
struct proto_buf {
	uint8_t *data;
	size_t len, cap;
	int err; /* -ENOMEM once an append failed; later appends do nothing */
};

void proto_buf_free(struct proto_buf *b);
void proto_put(struct proto_buf *b, const void *p, size_t n);
void proto_rec(struct proto_buf *b, uint16_t type, const void *v, size_t n);
void proto_rec_str(struct proto_buf *b, uint16_t type, const char *s);
void proto_rec_u32(struct proto_buf *b, uint16_t type, uint32_t v);
void proto_rec_u8(struct proto_buf *b, uint16_t type, uint8_t v);
void proto_rec_u64(struct proto_buf *b, uint16_t type, uint64_t v);
/* RLIMIT: u32 resource, u64 soft, u64 hard. */
void proto_rec_rlimit(struct proto_buf *b, uint32_t resource, uint64_t soft,
		      uint64_t hard);
/* DEVICE: u8 type, u32 major, minor, mode, uid, gid (@n), then @len bytes
 * of @path. */
void proto_rec_device(struct proto_buf *b, char type, const uint32_t n[5],
		      const char *path, size_t len);
/* Several NUL-separated strings as one record (the last without NUL). */
void proto_rec_strs(struct proto_buf *b, uint16_t type, const char *const *s,
		    unsigned int n);

/* Frame @payload as message @type into @b. */
void proto_frame(struct proto_buf *b, uint8_t type, const void *payload,
		 size_t n);

/* Record iterator over a CONFIG payload. */
struct proto_iter {
	const uint8_t *p, *end;
};
/* Next record: 1 (type, value, len set), 0 at the end, -1 if malformed
 * (a header or value runs past the end). */
int proto_next(struct proto_iter *it, uint16_t *type, const uint8_t **v,
	       uint32_t *len);

/*
 * Frame parser for a byte stream: feed bytes, get whole frames.
 * proto_reader_feed() returns the number of bytes of @p consumed; when a
 * frame is complete *@type/@payload/@len describe it (valid until the next
 * call) and it returns after consuming the frame's last byte.  A length of
 * 0 or over PROTO_MAX_FRAME makes the stream broken (err set).
 */
struct proto_reader {
	uint8_t hdr[4];
	size_t hdr_have;
	uint32_t need;
	uint8_t *frame;
	size_t have;
	int err;
};
size_t proto_reader_feed(struct proto_reader *r, const uint8_t *p, size_t n,
			 int *got, uint8_t *type, const uint8_t **payload,
			 uint32_t *len);
void proto_reader_free(struct proto_reader *r);

/*
 * The text of a guest ERROR frame made fit to log and to hand to the
 * `start` caller (a terminal): the payload (guest-controlled, any bytes,
 * not NUL-terminated) up to its first NUL and at most PROTO_MAX_TEXT
 * bytes, control characters (below 0x20, and DEL) replaced by spaces,
 * NUL-terminated in @dst of @cap bytes (@cap > 0; truncated to fit).
 */
#define PROTO_MAX_TEXT 500u
void proto_text(char *dst, size_t cap, const uint8_t *p, uint32_t len);

static inline uint32_t proto_get_u32(const uint8_t *v)
{
	return (uint32_t)v[0] | (uint32_t)v[1] << 8 | (uint32_t)v[2] << 16 |
	       (uint32_t)v[3] << 24;
}

static inline uint64_t proto_get_u64(const uint8_t *v)
{
	return proto_get_u32(v) | (uint64_t)proto_get_u32(v + 4) << 32;
}

#endif
