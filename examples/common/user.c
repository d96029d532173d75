/* SPDX-License-Identifier: MIT */
/*
 * The privilege drop of a VMM process (see user.h): minivmm --user and
 * minivmm-oci's VMM process run user_restrict() while they have one
 * thread and user_drop() from vmm_set_start_hook().
 */
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "errf.h"
#include "user.h"

#define USER_NAME_MAX 64

/*
 * One side of UID[:GID] (@len bytes at @s): digits are an id, anything
 * else must look like a user or group name (resolved later).  @side:
 * "user" or "group".
 */
static int parse_part(const char *what, const char *s, size_t len,
		      const char *side, uint32_t *id, char **name, char *err,
		      size_t errlen)
{
	unsigned long long n;
	char buf[24], *end;
	bool digits = true;

	if (!len) /* only around a ':' (an empty value is caught before) */
		return errf(err, errlen, "%s: the %s %s ':' is missing", what,
			    side, strcmp(side, "user") ? "after" : "before");
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (c >= '0' && c <= '9')
			continue;
		digits = false;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      c == '_' || c == '.' || (c == '-' && i > 0) ||
		      (c == '$' && i == len - 1)))
			return errf(err, errlen,
				    "%s: the %s is neither a number nor a name "
				    "(letters, digits, '.', '_', '-')",
				    what, side);
	}
	if (digits) {
		if (len >= sizeof(buf))
			return errf(err, errlen,
				    "%s: %s id out of range (1..4294967294)", what,
				    side);
		memcpy(buf, s, len);
		buf[len] = '\0';
		errno = 0;
		n = strtoull(buf, &end, 10);
		/* 4294967295 is (uid_t)-1: "leave unchanged" for setresuid(). */
		if (errno || *end || n > UINT32_MAX - 1)
			return errf(err, errlen,
				    "%s: %s id %s out of range (1..4294967294)",
				    what, side, buf);
		if (!n)
			return errf(err, errlen,
				    "%s: %s id 0 is root%s: dropping to it "
				    "confines nothing, give an unprivileged %s",
				    what, side, strcmp(side, "user") ? "'s group" : "",
				    side);
		*id = (uint32_t)n;
		return 0;
	}
	if (len > USER_NAME_MAX)
		return errf(err, errlen, "%s: %s name longer than %d bytes",
			    what, side, USER_NAME_MAX);
	*name = strndup(s, len);
	if (!*name)
		return errf(err, errlen, "out of memory");
	return 0;
}

int user_parse(const char *s, const char *what, struct user_spec *u, char *err,
	       size_t errlen)
{
	const char *colon;

	memset(u, 0, sizeof(*u));
	u->what = what;
	if (!s || !*s)
		return errf(err, errlen, "%s needs a value: UID[:GID]", what);
	colon = strchr(s, ':');
	if (parse_part(what, s, colon ? (size_t)(colon - s) : strlen(s), "user",
		       &u->uid, &u->user_name, err, errlen))
		return -1;
	if (colon) {
		if (strchr(colon + 1, ':'))
			return errf(err, errlen,
				    "%s: expected UID[:GID], got more than one ':'",
				    what);
		u->has_gid = true;
		if (parse_part(what, colon + 1, strlen(colon + 1), "group", &u->gid,
			       &u->group_name, err, errlen))
			return -1;
	}
	u->set = true;
	return 0;
}

void user_spec_free(struct user_spec *u)
{
	const char *what = u->what;

	free(u->user_name);
	free(u->group_name);
	memset(u, 0, sizeof(*u));
	u->what = what;
}

int user_resolve(const struct user_spec *u, uid_t *uid, gid_t *gid, char *err,
		 size_t errlen)
{
	const char *what = u->what ? u->what : "user";
	const struct passwd *pw = NULL;
	const struct group *gr;
	bool have_gid = false;

	if (!u->set)
		return errf(err, errlen, "%s was not given", what);
	if (u->user_name) {
		errno = 0;
		pw = getpwnam(u->user_name);
		if (!pw)
			return errf(err, errlen, "%s: no user named '%s'%s%s", what,
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
			return errf(err, errlen, "%s: no group named '%s'%s%s", what,
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
			return errf(err, errlen,
				    "%s: uid %u has no passwd entry to take its "
				    "group from: give the group too, as %u:GID",
				    what, (unsigned int)*uid, (unsigned int)*uid);
		*gid = pw->pw_gid;
	}
	if (*uid == 0)
		return errf(err, errlen,
			    "%s: '%s' is root (uid 0): dropping to it confines "
			    "nothing, give an unprivileged user",
			    what, u->user_name ? u->user_name : "0");
	if (*gid == 0)
		return errf(err, errlen,
			    "%s: the group is root's (gid 0): give an "
			    "unprivileged group as UID:GID", what);
	if (*uid == (uid_t)-1 || *gid == (gid_t)-1)
		return errf(err, errlen, "%s: id 4294967295 is reserved", what);
	return 0;
}

/* The highest capability number this kernel knows (PR_CAPBSET_READ fails
 * with EINVAL past it), or -1. */
static int last_cap(void)
{
	int c = 0;

	while (c < 64 && prctl(PR_CAPBSET_READ, c, 0, 0, 0) >= 0)
		c++;
	return c - 1;
}

/* Every set of the calling thread, as capget() reports them. */
static int caps_get(struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3])
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};

	memset(data, 0, sizeof(data[0]) * _LINUX_CAPABILITY_U32S_3);
	return syscall(SYS_capget, &hdr, data) ? -errno : 0;
}

int user_restrict(char *err, size_t errlen)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	int last = last_cap(), e;

	/* Dropping from the bounding set needs CAP_SETPCAP, so the bounding
	 * set goes first; the effective set is untouched here. */
	for (int c = 0; c <= last; c++) {
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1 &&
		    prctl(PR_CAPBSET_DROP, c, 0, 0, 0)) {
			e = errno;
			return errf_ret(err, errlen, -e,
				    "dropping capability %d from the bounding set: "
				    "%s%s", c, strerror(e),
				    geteuid() ? " (the process must start as root)" : "");
		}
	}
	/* Kernels before 4.3 have no ambient set (EINVAL): nothing to clear. */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) &&
	    errno != EINVAL) {
		e = errno;
		return errf_ret(err, errlen, -e, "clearing the ambient capabilities: %s",
			    strerror(e));
	}
	if ((e = caps_get(data)))
		return errf_ret(err, errlen, e, "capget: %s", strerror(-e));
	for (unsigned int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
		data[i].inheritable = 0;
	if (syscall(SYS_capset, &hdr, data)) {
		e = errno;
		return errf_ret(err, errlen, -e, "clearing the inheritable capabilities: %s",
			    strerror(e));
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		e = errno;
		return errf_ret(err, errlen, -e, "PR_SET_NO_NEW_PRIVS: %s", strerror(e));
	}
	return 0;
}

/* Which capability set of the calling thread is not empty, or NULL. */
static const char *caps_left(void)
{
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	int last = last_cap();

	if (caps_get(data))
		return "capget failed";
	for (unsigned int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++) {
		if (data[i].permitted)
			return "permitted";
		if (data[i].effective)
			return "effective";
		if (data[i].inheritable)
			return "inheritable";
	}
	for (int c = 0; c <= last; c++) {
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) != 0)
			return "bounding";
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0) > 0)
			return "ambient";
	}
	return NULL;
}

int user_drop(uid_t uid, gid_t gid, char *err, size_t errlen)
{
	const char *hint = geteuid() ? " (the process must start as root)" : "";
	const char *left;
	uid_t ru, eu, su;
	gid_t rg, eg, sg;
	int e;

	/* glibc's wrappers apply each call to every thread of the process. */
	if (setgroups(0, NULL)) {
		e = errno;
		return errf_ret(err, errlen, -e, "setgroups(0): %s%s", strerror(e), hint);
	}
	if (setresgid(gid, gid, gid)) {
		e = errno;
		return errf_ret(err, errlen, -e, "setresgid(%u): %s%s", (unsigned int)gid,
			    strerror(e), hint);
	}
	if (setresuid(uid, uid, uid)) {
		e = errno;
		return errf_ret(err, errlen, -e, "setresuid(%u): %s%s", (unsigned int)uid,
			    strerror(e), hint);
	}

	/* It must hold, and be irreversible. */
	if (getresuid(&ru, &eu, &su) || ru != uid || eu != uid || su != uid ||
	    getresgid(&rg, &eg, &sg) || rg != gid || eg != gid || sg != gid)
		return errf_ret(err, errlen, -EPERM,
			    "the ids are not %u:%u after the drop",
			    (unsigned int)uid, (unsigned int)gid);
	if (getgroups(0, NULL) != 0)
		return errf_ret(err, errlen, -EPERM,
			    "supplementary groups remain after setgroups(0)");
	if ((left = caps_left()))
		return errf_ret(err, errlen, -EPERM,
			    "the %s capability set is not empty after the drop "
			    "(user_restrict() not run first, file capabilities or "
			    "SECBIT_NO_SETUID_FIXUP?)", left);
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		return errf_ret(err, errlen, -EPERM,
			    "no_new_privs is not set (user_restrict() not run first)");
	/* Raw system calls: only this thread tries.  (Through glibc every
	 * thread would, and a success would undo the drop everywhere.) */
	if (syscall(SYS_setresuid, 0, 0, 0) == 0 || errno != EPERM)
		return errf_ret(err, errlen, -EPERM,
			    "setresuid(0) did not fail with EPERM: the drop could "
			    "be undone");
	if (syscall(SYS_setresgid, 0, 0, 0) == 0 || errno != EPERM)
		return errf_ret(err, errlen, -EPERM,
			    "setresgid(0) did not fail with EPERM: the drop could "
			    "be undone");
	return 0;
}
