/* SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "disk-spec.h"
#include "vmm/vmm-bench.h"
#include "errf.h"
#include "parse.h"
#include "rate-spec.h"

int cli_parse_disk(const char *spec, struct cli_disk *d, char *err, size_t errlen)
{
	struct vmm_disk_config *c = &d->cfg;
	char *save = NULL, *tok;
	unsigned long long n;
	bool b;

	memset(d, 0, sizeof(*d));
	c->struct_size = sizeof(*c);
	c->fd = -1;
	if (!spec || !*spec)
		return errf(err, errlen, "--disk needs a value");
	d->spec = strdup(spec);
	if (!d->spec)
		return errf(err, errlen, "out of memory");
	if (!strchr(d->spec, '=')) { /* plain "--disk IMG" */
		c->path = d->spec;
		return 0;
	}
	for (tok = strtok_r(d->spec, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *val = strchr(tok, '=');

		if (!val)
			return errf(err, errlen, "--disk: '%s' is not key=value", tok);
		*val++ = '\0';
		if (!strcmp(tok, "path") || !strcmp(tok, "file")) {
			if (!*val)
				return errf(err, errlen, "--disk: empty path");
			c->path = val;
		} else if (!strcmp(tok, "num-queues")) {
			if (parse_uint(val, 1, VMM_MAX_DISK_QUEUES, &n))
				return errf(err, errlen,
					    "--disk: num-queues must be 1..%d, got '%s'",
					    VMM_MAX_DISK_QUEUES, val);
			c->num_queues = (uint16_t)n;
		} else if (!strcmp(tok, "queue-size")) {
			if (parse_uint(val, 2, 1024, &n) || (n & (n - 1)))
				return errf(err, errlen,
					    "--disk: queue-size must be a power of two 2..1024, got '%s'",
					    val);
			c->queue_size = (uint16_t)n;
		} else if (!strcmp(tok, "ro") || !strcmp(tok, "readonly")) {
			if (parse_bool(val, &b))
				return errf(err, errlen, "--disk: ro must be on or off");
			c->flags = b ? c->flags | VMM_DISK_READONLY
				     : c->flags & ~VMM_DISK_READONLY;
		} else if (!strcmp(tok, "direct")) {
			if (parse_bool(val, &b))
				return errf(err, errlen, "--disk: direct must be on or off");
			c->flags = b ? c->flags | VMM_DISK_DIRECT
				     : c->flags & ~VMM_DISK_DIRECT;
		} else if (!strcmp(tok, "event-idx")) {
			if (parse_bool(val, &b))
				return errf(err, errlen, "--disk: event-idx must be on or off");
			c->flags = b ? c->flags & ~VMM_DISK_NO_EVENT_IDX
				     : c->flags | VMM_DISK_NO_EVENT_IDX;
		} else if (!strcmp(tok, "lock")) {
			if (parse_bool(val, &b))
				return errf(err, errlen, "--disk: lock must be on or off");
			c->flags = b ? c->flags & ~VMM_DISK_NO_LOCK
				     : c->flags | VMM_DISK_NO_LOCK;
		} else if (!strcmp(tok, "wiring")) {
			if (!strcmp(val, "batched"))
				c->flags &= ~VMM_DISK_PER_VECTOR_WIRING;
			else if (!strcmp(val, "per-vector"))
				c->flags |= VMM_DISK_PER_VECTOR_WIRING;
			else
				return errf(err, errlen,
					    "--disk: wiring must be batched or per-vector");
		} else if (!strcmp(tok, "cache")) {
			if (!strcmp(val, "writeback"))
				c->flags &= ~VMM_DISK_NO_FLUSH;
			else if (!strcmp(val, "unsafe"))
				c->flags |= VMM_DISK_NO_FLUSH;
			else
				return errf(err, errlen,
					    "--disk: cache must be writeback or unsafe");
		} else if (!strcmp(tok, "serial")) {
			if (strlen(val) > 20)
				return errf(err, errlen,
					    "--disk: serial is at most 20 bytes");
			c->serial = val;
		} else if (!strcmp(tok, "poll-us")) {
			if (parse_uint(val, 0, 1000000, &n))
				return errf(err, errlen,
					    "--disk: poll-us must be 0..1000000, got '%s'", val);
			c->poll_us = (uint32_t)n;
		} else {
			int r = rate_spec_key(tok, val, &d->rate, "--disk", err, errlen);

			if (r)
				return r < 0 ? -1 : errf(err, errlen,
							 "--disk: unknown key '%s'", tok);
		}
	}
	if (!c->path)
		return errf(err, errlen, "--disk: path= is missing");
	if (rate_spec_check(&d->rate, "--disk", err, errlen))
		return -1;
	if (rate_spec_any(&d->rate))
		c->rate_limit = &d->rate;
	return 0;
}
