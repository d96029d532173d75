/* SPDX-License-Identifier: MIT */
/* minivmm --fs (see fs-spec.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errf.h"
#include "fs-spec.h"
#include "parse.h"
#include "virtiofsd.h"

/* One key=value of the spec. */
static int fs_field(struct cli_fs *f, char *kv, char *err, size_t errlen)
{
	char *v = strchr(kv, '=');
	unsigned long long n;

	if (!v)
		return errf(err, errlen, "--fs: '%s' is not key=value", kv);
	*v++ = '\0';
	if (!strcmp(kv, "tag"))
		f->tag = v;
	else if (!strcmp(kv, "socket"))
		f->socket = v;
	else if (!strcmp(kv, "path"))
		f->path = v;
	else if (!strcmp(kv, "ro") && (!strcmp(v, "on") || !strcmp(v, "off")))
		f->ro = !strcmp(v, "on");
	else if (!strcmp(kv, "num-queues") && !parse_uint(v, 1, VMM_MAX_FS_QUEUES, &n))
		f->num_queues = (unsigned int)n;
	else if (!strcmp(kv, "queue-size") && !parse_uint(v, 4, 1024, &n) &&
		 !(n & (n - 1)))
		f->queue_size = (unsigned int)n;
	else
		return errf(err, errlen, "--fs: bad %s=%s (tag, socket, path, "
			    "ro=on|off, num-queues=1..%d, queue-size=4..1024 "
			    "power of two)", kv, v, VMM_MAX_FS_QUEUES);
	return 0;
}

int cli_parse_fs(const char *arg, struct cli_fs *f, char *err, size_t errlen)
{
	char *save = NULL, *kv;

	memset(f, 0, sizeof(*f));
	f->spec = strdup(arg);
	if (!f->spec)
		return errf(err, errlen, "out of memory");
	for (kv = strtok_r(f->spec, ",", &save); kv; kv = strtok_r(NULL, ",", &save))
		if (fs_field(f, kv, err, errlen))
			return -1;
	if (!f->tag || !*f->tag || strlen(f->tag) > VMM_FS_TAG_MAX)
		return errf(err, errlen, "--fs: tag=T of 1..%d bytes is required",
			    VMM_FS_TAG_MAX);
	if (!f->socket == !f->path)
		return errf(err, errlen, "--fs %s: one of socket=PATH or path=DIR",
			    f->tag);
	if (f->ro && !f->path)
		return errf(err, errlen, "--fs %s: ro=on needs path=DIR (a "
			    "back end of your own decides itself)", f->tag);
	return 0;
}

int fs_spawn(struct cli_fs *f, char *err, size_t errlen)
{
	char what[64];

	if (!f->path)
		return 0;
	snprintf(what, sizeof(what), "--fs %s", f->tag);
	if (virtiofsd_spawn(&f->d, f->path, f->ro, what, -1, err, errlen))
		return -1;
	f->socket = f->d.sock;
	return 0;
}

void fs_reap(struct cli_fs *f)
{
	virtiofsd_reap(&f->d);
}

void fs_started(struct cli_fs *f)
{
	virtiofsd_unlink(&f->d);
}

void cli_fs_free(struct cli_fs *f)
{
	free(f->spec);
	f->spec = NULL;
}
