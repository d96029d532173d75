/* SPDX-License-Identifier: MIT */
/*
 * Rootless minivmm-oci: see rootless.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "oci.h"
#include "rootless.h"

bool oci_rootless_map(const char *m)
{
	unsigned long inside, outside, count;
	int used = 0;

	if (!m)
		return false;
	/* One line "0 0 4294967295" (blanks as the kernel pads them) is the
	 * initial namespace; anything else, an empty map included, is not. */
	if (sscanf(m, " %lu %lu %lu %n", &inside, &outside, &count, &used) != 3)
		return true;
	return !(inside == 0 && outside == 0 && count == 4294967295UL && !m[used]);
}

bool oci_rootless(void)
{
	char buf[4096];
	ssize_t n;
	int fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return false;
	buf[n] = 0;
	return oci_rootless_map(buf);
}

const char *oci_rootless_state_root(bool rootless, const char *xdg, char *buf,
				    size_t len)
{
	int n;

	if (!rootless || !xdg || xdg[0] != '/')
		return OCI_DEFAULT_ROOT;
	n = snprintf(buf, len, "%s/%s", xdg, OCI_NAME);
	if (n < 0 || (size_t)n >= len)
		return OCI_DEFAULT_ROOT;
	return buf;
}

bool oci_rootless_cgroup_skip(bool rootless, int err)
{
	return rootless && (err == EACCES || err == EPERM || err == EROFS);
}
