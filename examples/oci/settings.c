/* SPDX-License-Identifier: MIT */
/* minivmm-oci settings: config file, environment, kernel and initramfs. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oci.h"
#include "errf.h"
#include "parse.h"

#ifndef OCI_LIBEXECDIR
#define OCI_LIBEXECDIR "/usr/local/libexec/minivmm-oci"
#endif
#ifndef OCI_BINDIR
#define OCI_BINDIR "/usr/local/bin"
#endif
#define OCI_CACHE_DIR "/var/cache/minivmm-oci"
#define DEFAULT_KERNEL "/vmlinuz"

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = 0;
	return s;
}

static int set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = strdup(v);
	return *dst ? 0 : -1;
}

int oci_settings_load(struct oci_settings *s, char *err, size_t errlen)
{
	const char *path = getenv("MINIVMM_OCI_CONFIG"), *e;
	char line[4096];
	unsigned int lineno = 0;
	FILE *f;

	memset(s, 0, sizeof(*s));
	s->user.what = "user";
	s->mem_default = 512ull << 20;
	s->cpus_default = 1;
	s->root_free = 256ull << 20;
	s->seccomp = true;
	s->console_max = 16ull << 20;
	s->rootfs = OCI_ROOTFS_DEFAULT;
	if (!path)
		path = OCI_CONFIG_FILE;
	f = fopen(path, "re");
	if (!f && errno != ENOENT)
		return errf(err, errlen, "%s: %s", path, strerror(errno));
	while (f && fgets(line, sizeof(line), f)) {
		char *k = line, *v = strchr(line, '='), *end;
		int bad = 0;

		lineno++;
		k = trim(k);
		if (!*k || *k == '#')
			continue;
		if (!v) {
			fclose(f);
			return errf(err, errlen, "%s:%u: expected key = value", path, lineno);
		}
		*v++ = 0;
		k = trim(k);
		v = trim(v);
		if (!strcmp(k, "kernel"))
			bad = set_str(&s->kernel, v);
		else if (!strcmp(k, "initrd"))
			bad = set_str(&s->initrd, v);
		else if (!strcmp(k, "modules"))
			bad = set_str(&s->modroot, v);
		else if (!strcmp(k, "append"))
			bad = set_str(&s->append, v);
		else if (!strcmp(k, "timings"))
			bad = set_str(&s->timings, v);
		else if (!strcmp(k, "console_dir"))
			bad = set_str(&s->console_dir, v);
		else if (!strcmp(k, "memory"))
			bad = parse_size(v, &s->mem_default);
		else if (!strcmp(k, "root_free"))
			bad = parse_size(v, &s->root_free);
		else if (!strcmp(k, "console_max"))
			bad = parse_size(v, &s->console_max);
		else if (!strcmp(k, "cpus")) {
			unsigned long n = strtoul(v, &end, 10);

			bad = *end || !n || n > SPEC_MAX_VCPUS;
			s->cpus_default = (unsigned int)n;
		} else if (!strcmp(k, "seccomp")) {
			s->seccomp = strcmp(v, "off") && strcmp(v, "0") && strcmp(v, "no");
		} else if (!strcmp(k, "rootfs")) {
			char why[128];

			if (spec_parse_rootfs(v, "rootfs", &s->rootfs, why, sizeof(why))) {
				fclose(f);
				return errf(err, errlen, "%s:%u: %s", path, lineno, why);
			}
		} else if (!strcmp(k, "user")) {
			char why[256];

			user_spec_free(&s->user);
			if (user_parse(v, "user", &s->user, why, sizeof(why))) {
				fclose(f);
				return errf(err, errlen, "%s:%u: %s", path, lineno, why);
			}
		} else {
			bad = 1;
		}
		if (bad) {
			fclose(f);
			return errf(err, errlen, "%s:%u: bad setting %s", path, lineno, k);
		}
	}
	if (f)
		fclose(f);
	if ((e = getenv("MINIVMM_OCI_KERNEL")) && *e && set_str(&s->kernel, e))
		return errf(err, errlen, "out of memory");
	if ((e = getenv("MINIVMM_OCI_INITRD")) && *e && set_str(&s->initrd, e))
		return errf(err, errlen, "out of memory");
	if (!s->modroot && set_str(&s->modroot, "/"))
		return errf(err, errlen, "out of memory");
	return 0;
}

void oci_settings_free(struct oci_settings *s)
{
	free(s->kernel);
	free(s->initrd);
	free(s->modroot);
	free(s->append);
	free(s->timings);
	free(s->console_dir);
	user_spec_free(&s->user);
	memset(s, 0, sizeof(*s));
}

int oci_vmm_user(const struct oci_settings *s, uid_t *uid, gid_t *gid, char *err,
		 size_t errlen)
{
	static const char *const dflt[] = { OCI_VMM_USER, "nobody" };
	const struct passwd *pw;

	if (s->user.set)
		return user_resolve(&s->user, uid, gid, err, errlen);
	for (size_t i = 0; i < sizeof(dflt) / sizeof(dflt[0]); i++) {
		pw = getpwnam(dflt[i]);
		if (pw && pw->pw_uid && pw->pw_gid && pw->pw_uid != (uid_t)-1 &&
		    pw->pw_gid != (gid_t)-1) {
			*uid = pw->pw_uid;
			*gid = pw->pw_gid;
			return 0;
		}
	}
	*uid = 65534;
	*gid = 65534;
	return 0;
}

int oci_kernel_release(const char *kernel, char *out, size_t len)
{
	uint8_t hdr[0x210];
	char ver[256];
	int fd = open(kernel, O_RDONLY | O_CLOEXEC);
	uint16_t off;
	ssize_t n;
	size_t i;

	if (fd < 0)
		return -errno;
	n = pread(fd, hdr, sizeof(hdr), 0);
	/* "HdrS" at 0x202; kernel_version at 0x20e: offset - 0x200 of a
	 * NUL-terminated "RELEASE (builder) #N ..." string. */
	if (n != (ssize_t)sizeof(hdr) || memcmp(hdr + 0x202, "HdrS", 4)) {
		close(fd);
		return -EINVAL;
	}
	off = (uint16_t)(hdr[0x20e] | hdr[0x20f] << 8);
	n = off ? pread(fd, ver, sizeof(ver) - 1, (off_t)off + 0x200) : -1;
	close(fd);
	if (n <= 0)
		return -EINVAL;
	ver[n] = 0;
	for (i = 0; ver[i] && ver[i] != ' ' && i + 1 < len; i++)
		out[i] = ver[i];
	out[i] = 0;
	return i ? 0 : -EINVAL;
}

/* The directory of this executable, into @out; -1 if unknown. */
static int self_dir(char *out, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", out, len - 1);
	char *slash;

	if (n <= 0)
		return -1;
	out[n] = 0;
	slash = strrchr(out, '/');
	if (!slash)
		return -1;
	*slash = 0;
	return 0;
}

/*
 * A helper program: @rel (a path relative to this executable's directory:
 * "minivmm-oci-mkinitrd" in the build tree, "libexec/minivmm-oci/init";
 * then "../libexec/minivmm-oci/init", an install under any prefix), else
 * @installed (where `cmake --install` put it).
 */
static int find_helper(const char *const *rel, const char *installed, char *out,
		       size_t len)
{
	char self[PATH_MAX];

	if (self_dir(self, sizeof(self)) == 0)
		for (; *rel; rel++)
			if (snprintf(out, len, "%s/%s", self, *rel) < (int)len &&
			    access(out, X_OK) == 0)
				return 0;
	snprintf(out, len, "%s", installed);
	return access(out, X_OK) == 0 ? 0 : -1;
}

static int build_initrd(const struct oci_settings *s, const char *kver,
			const char *out, char *err, size_t errlen)
{
	static const char *const mk_rel[] = { "minivmm-oci-mkinitrd", NULL };
	/* The guest init is no host program: in libexec, never beside us. */
	static const char *const init_rel[] = { "libexec/minivmm-oci/init",
						"../libexec/minivmm-oci/init", NULL };
	char mk[PATH_MAX], init[PATH_MAX], lock[PATH_MAX + 8];
	int lfd, status;
	pid_t pid;
	struct stat st;

	if (find_helper(mk_rel, OCI_BINDIR "/minivmm-oci-mkinitrd", mk, sizeof(mk)) ||
	    find_helper(init_rel, OCI_LIBEXECDIR "/init", init, sizeof(init)))
		return errf(err, errlen, "no initramfs at %s and minivmm-oci-mkinitrd or "
			    "the guest init (%s/init) is not installed", out,
			    OCI_LIBEXECDIR);
	mkdir(OCI_CACHE_DIR, 0755);
	snprintf(lock, sizeof(lock), "%s.lock", out);
	lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lfd < 0 || flock(lfd, LOCK_EX))
		return errf(err, errlen, "%s: %s", lock, strerror(errno));
	if (stat(out, &st) == 0) { /* built meanwhile */
		close(lfd);
		return 0;
	}
	pid = fork();
	if (pid == 0) {
		dup2(open("/dev/null", O_WRONLY), 1);
		execl(mk, mk, "--init", init, "--kver", kver, "--modroot", s->modroot,
		      "--out", out, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		close(lfd);
		return errf(err, errlen, "building the initramfs %s for kernel %s with "
			    "%s failed (modules from %s/lib/modules/%s)", out, kver, mk,
			    s->modroot, kver);
	}
	close(lfd);
	return 0;
}

int oci_boot_files(struct oci_settings *s, char *err, size_t errlen)
{
	char kver[128], path[PATH_MAX];
	int ret;

	if (!s->kernel && set_str(&s->kernel, DEFAULT_KERNEL))
		return errf(err, errlen, "out of memory");
	if (access(s->kernel, R_OK))
		return errf(err, errlen, "kernel %s: %s (set kernel= in %s or "
			    "MINIVMM_OCI_KERNEL)", s->kernel, strerror(errno),
			    OCI_CONFIG_FILE);
	if (s->initrd) {
		if (access(s->initrd, R_OK))
			return errf(err, errlen, "initramfs %s: %s", s->initrd,
				    strerror(errno));
		return 0;
	}
	ret = oci_kernel_release(s->kernel, kver, sizeof(kver));
	if (ret)
		return errf(err, errlen, "kernel %s: not a bzImage with a version "
			    "string", s->kernel);
	snprintf(path, sizeof(path), OCI_CACHE_DIR "/initrd-%s.cpio.gz", kver);
	if (access(path, R_OK) && build_initrd(s, kver, path, err, errlen))
		return -1;
	return set_str(&s->initrd, path) ? errf(err, errlen, "out of memory") : 0;
}
