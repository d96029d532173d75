/* SPDX-License-Identifier: MIT */
/*
 * minivmm --user (see user.h): resolve the target user, and drop to it once
 * libvmm has opened every file the VM needs (main.c runs user_drop() from
 * vmm_set_start_hook()).
 */
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "user.h"

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return ret;
}

int user_resolve(const struct cli_user *u, uid_t *uid, gid_t *gid, char *err,
		 size_t errlen)
{
	const struct passwd *pw = NULL;
	const struct group *gr;
	bool have_gid = false;

	if (!u->set)
		return fail(err, errlen, -1, "--user was not given");
	if (u->user_name) {
		errno = 0;
		pw = getpwnam(u->user_name);
		if (!pw)
			return fail(err, errlen, -1, "--user: no user named '%s'%s%s",
				    u->user_name, errno ? ": " : "",
				    errno ? strerror(errno) : "");
		*uid = pw->pw_uid;
	} else {
		*uid = (uid_t)u->uid;
	}
	if (u->group_name) {
		errno = 0;
		gr = getgrnam(u->group_name);
		if (!gr)
			return fail(err, errlen, -1, "--user: no group named '%s'%s%s",
				    u->group_name, errno ? ": " : "",
				    errno ? strerror(errno) : "");
		*gid = gr->gr_gid;
		have_gid = true;
	} else if (u->has_gid) {
		*gid = (gid_t)u->gid;
		have_gid = true;
	}
	if (!have_gid) {
		/* No ":GID": the user's primary group, from its passwd entry. */
		if (!pw) {
			errno = 0;
			pw = getpwuid(*uid);
		}
		if (!pw)
			return fail(err, errlen, -1,
				    "--user: uid %u has no passwd entry to take its "
				    "group from: give the group too, as %u:GID",
				    (unsigned int)*uid, (unsigned int)*uid);
		*gid = pw->pw_gid;
	}
	if (*uid == 0)
		return fail(err, errlen, -1,
			    "--user: '%s' is root (uid 0): dropping to it confines "
			    "nothing, give an unprivileged user",
			    u->user_name ? u->user_name : "0");
	if (*gid == 0)
		return fail(err, errlen, -1,
			    "--user: the group is root's (gid 0): give an "
			    "unprivileged group as UID:GID");
	if (*uid == (uid_t)-1 || *gid == (gid_t)-1)
		return fail(err, errlen, -1, "--user: id 4294967295 is reserved");
	return 0;
}

/* No capability left in the calling thread's permitted or effective set. */
static bool caps_empty(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return false;
	for (unsigned int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
		if (data[i].permitted || data[i].effective)
			return false;
	return true;
}

int user_drop(uid_t uid, gid_t gid, char *err, size_t errlen)
{
	const char *hint = geteuid() ? " (minivmm must start as root)" : "";
	uid_t ru, eu, su;
	gid_t rg, eg, sg;
	int e;

	/* glibc's wrappers apply each call to every thread of the process. */
	if (setgroups(0, NULL)) {
		e = errno;
		return fail(err, errlen, -e, "--user: setgroups(0): %s%s",
			    strerror(e), hint);
	}
	if (setresgid(gid, gid, gid)) {
		e = errno;
		return fail(err, errlen, -e, "--user: setresgid(%u): %s%s",
			    (unsigned int)gid, strerror(e), hint);
	}
	if (setresuid(uid, uid, uid)) {
		e = errno;
		return fail(err, errlen, -e, "--user: setresuid(%u): %s%s",
			    (unsigned int)uid, strerror(e), hint);
	}

	/* It must hold, and be irreversible. */
	if (getresuid(&ru, &eu, &su) || ru != uid || eu != uid || su != uid ||
	    getresgid(&rg, &eg, &sg) || rg != gid || eg != gid || sg != gid)
		return fail(err, errlen, -EPERM,
			    "--user: the ids are not %u:%u after the drop",
			    (unsigned int)uid, (unsigned int)gid);
	if (getgroups(0, NULL) != 0)
		return fail(err, errlen, -EPERM,
			    "--user: supplementary groups remain after setgroups(0)");
	if (!caps_empty())
		return fail(err, errlen, -EPERM,
			    "--user: capabilities remain after the drop "
			    "(file capabilities or SECBIT_NO_SETUID_FIXUP?)");
	/* Raw system calls: only this thread tries.  (Through glibc every
	 * thread would, and a success would undo the drop everywhere.) */
	if (syscall(SYS_setresuid, 0, 0, 0) == 0 || errno != EPERM)
		return fail(err, errlen, -EPERM,
			    "--user: setresuid(0) did not fail with EPERM: the "
			    "drop could be undone");
	if (syscall(SYS_setresgid, 0, 0, 0) == 0 || errno != EPERM)
		return fail(err, errlen, -EPERM,
			    "--user: setresgid(0) did not fail with EPERM: the "
			    "drop could be undone");
	return 0;
}
