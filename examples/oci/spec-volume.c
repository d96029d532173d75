/* SPDX-License-Identifier: MIT */
/* A bind mount's options as a volume's guest mount flags (spec.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"

/* What the guest init applies (its mount_opts table knows each). */
static const char *const flag_opts[] = {
	"ro", "rw", "nosuid", "suid", "nodev", "dev", "noexec", "exec",
	"relatime", "noatime", "strictatime", "nodiratime",
};

/* Dropped without a note: the bind itself, and SELinux relabelling that
 * podman did on the host already. */
static const char *const silent_opts[] = { "bind", "rbind", "z", "Z" };

static bool in(const char *o, size_t n, const char *const *tab, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (strlen(tab[i]) == n && !strncmp(o, tab[i], n))
			return true;
	return false;
}

int spec_volume_options(const char *opts, char **out, bool *ro, unsigned int *ignored)
{
	size_t len = opts ? strlen(opts) : 0;
	char *o = calloc(1, len + 1);

	*ro = false;
	*ignored = 0;
	if (!o)
		return -ENOMEM;
	for (const char *p = opts; p && *p;) {
		const char *c = strchr(p, ',');
		size_t n = c ? (size_t)(c - p) : strlen(p);

		if (in(p, n, flag_opts, sizeof(flag_opts) / sizeof(*flag_opts))) {
			if (*o)
				strcat(o, ",");
			strncat(o, p, n);
			if (n == 2 && (!strncmp(p, "ro", 2) || !strncmp(p, "rw", 2)))
				*ro = p[1] == 'o';
		} else if (n && !in(p, n, silent_opts,
				    sizeof(silent_opts) / sizeof(*silent_opts))) {
			(*ignored)++;
		}
		p = c ? c + 1 : p + n;
	}
	*out = o;
	return 0;
}
