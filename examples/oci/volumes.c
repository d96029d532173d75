/* SPDX-License-Identifier: MIT */
/*
 * A container's volumes (SPEC_MOUNT_VOLUME: binds of host directories,
 * and of host files other than the engine's own, spec_file_copied()):
 * one virtiofsd each (examples/common/virtiofsd.h; a file's serves a
 * directory of the state's holding only it, virtiofsd_spawn_file()), one
 * virtio-fs device each, tagged SPEC_VOLUME_TAG; the guest init mounts
 * them (PROTO_REC_VOLUME, PROTO_REC_VOLUME_FILE).  One back end per
 * volume rather than one per container serving a directory of binds: a
 * read-only bind is then read-only on the host
 * (virtiofsd's own read-only mount), each back end's sandbox holds one
 * source tree, and no staging mount tree has to be built and torn down;
 * the cost (README "Volumes") is a process of a few MiB per volume.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "errf.h"
#include "oci.h"
#include "vmm/vmm.h"

_Static_assert(SPEC_MAX_VOLUMES <= VMM_MAX_FS, "a virtio-fs device per volume");

int oci_volumes_start(const struct oci_spec *s, const char *state_dir,
		      struct virtiofsd *v, char *err, size_t errlen)
{
	for (unsigned int i = 0; i < s->nmounts; i++) {
		const struct spec_mount *m = &s->mounts[i];
		char what[300], log[4200];
		int fd, ret;

		if (m->kind != SPEC_MOUNT_VOLUME)
			continue;
		snprintf(what, sizeof(what), "volume %.200s on %.64s", m->source, m->dest);
		/* Its messages go to STATE/virtiofsd-N.log: never to the
		 * container's stderr (still ours until the VM starts), nor
		 * into the runtime's log, which podman parses. */
		snprintf(log, sizeof(log), "%s/virtiofsd-%u.log", state_dir, m->vol);
		fd = oci_file_create(log, 0600);
		if (fd < 0) {
			oci_volumes_stop(s, v);
			return errf_line(err, errlen, "%s: %s: %s", what, log, strerror(-fd));
		}
		if (m->file) {
			/* Its share: a directory of the state's, removed with it. */
			char dir[4200];

			snprintf(dir, sizeof(dir), "%s/volume-file-%u", state_dir, m->vol);
			if (mkdir(dir, 0700) && errno != EEXIST) {
				ret = errf_line(err, errlen, "%s: %s: %s", what, dir,
						strerror(errno));
			} else {
				ret = virtiofsd_spawn_file(&v[m->vol], dir, m->source, m->ro,
							   what, fd, err, errlen);
			}
		} else {
			ret = virtiofsd_spawn(&v[m->vol], m->source, m->ro, what, fd, err,
					      errlen);
		}
		close(fd);
		if (ret) {
			oci_volumes_stop(s, v);
			return -1;
		}
	}
	return 0;
}

int oci_volumes_add(struct vmm *vm, const struct oci_spec *s, struct virtiofsd *v)
{
	int ret;

	if (!s->nvolumes)
		return 0;
	/* virtiofsd maps the guest's RAM. */
	if ((ret = vmm_set_memory_backend(vm, VMM_MEMORY_MEMFD))) {
		oci_err("guest RAM for the volumes (memfd): %s", strerror(-ret));
		return ret;
	}
	for (unsigned int i = 0; i < s->nvolumes; i++) {
		char tag[32];
		struct vmm_fs_config c = {
			.struct_size = sizeof(c), .tag = tag, .socket = v[i].sock,
			.num_queues = 1, /* virtiofsd 7.2 serves one */
		};

		snprintf(tag, sizeof(tag), SPEC_VOLUME_TAG, i);
		if ((ret = vmm_add_fs(vm, &c, NULL))) {
			oci_err("volume %s: %s", tag, strerror(-ret));
			return ret;
		}
	}
	return 0;
}

void oci_volumes_connected(const struct oci_spec *s, struct virtiofsd *v)
{
	for (unsigned int i = 0; i < s->nvolumes; i++)
		virtiofsd_unlink(&v[i]);
}

void oci_volumes_stop(const struct oci_spec *s, struct virtiofsd *v)
{
	for (unsigned int i = 0; i < s->nvolumes; i++)
		virtiofsd_reap(&v[i]);
}

/*
 * The root over virtio-fs: the same back end as a volume, with the options
 * of a tree this one guest owns: cache=always (the guest keeps dentries,
 * attributes and pages instead of asking again after a second: lookups are
 * most of a metadata-heavy job, and nothing but this container writes its
 * root while it runs; writes still go through to the host at once, no
 * writeback) and xattr (file capabilities, security.* and user.* xattrs of
 * the image stay visible and settable).  virtiofsd, started as root, raises
 * its own RLIMIT_NOFILE (an O_PATH fd per inode the guest holds).
 */
int oci_rootfs_start(const struct oci_spec *s, const char *state_dir,
		     struct virtiofsd *root, char *err, size_t errlen)
{
	char log[4200];
	int fd, ret;

	memset(root, 0, sizeof(*root));
	if (!s->root_virtiofs)
		return 0;
	if (spec_make_mount_points(s, err, errlen))
		return -1;
	snprintf(log, sizeof(log), "%s/virtiofsd-root.log", state_dir);
	fd = oci_file_create(log, 0600);
	if (fd < 0)
		return errf_line(err, errlen, "root file system: %s: %s", log, strerror(-fd));
	/* No thread pool: Debian 12's virtiofsd (QEMU 7.2, glib 2.74) has its
	 * own seccomp filter kill a pool thread that calls sched_getaffinity
	 * (seen in the rig under a metadata-heavy job: the guest then waits on
	 * the dead back end forever); without a pool each request is served
	 * on the queue's thread, which never spawns one. */
	ret = virtiofsd_spawn_opts(root, s->root_path, s->root_ro, "cache=always,xattr", 0,
				   "root file system", fd, err, errlen);
	close(fd);
	return ret ? -1 : 0;
}

int oci_rootfs_add(struct vmm *vm, const struct oci_spec *s, struct virtiofsd *root)
{
	struct vmm_fs_config c = {
		.struct_size = sizeof(c), .tag = SPEC_ROOT_TAG, .socket = root->sock,
		.num_queues = 1,
	};
	int ret;

	if (!s->root_virtiofs)
		return 0;
	if ((ret = vmm_set_memory_backend(vm, VMM_MEMORY_MEMFD)) ||
	    (ret = vmm_add_fs(vm, &c, NULL)))
		oci_err("the root file system over virtio-fs: %s", strerror(-ret));
	return ret;
}
