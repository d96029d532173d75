/* SPDX-License-Identifier: MIT */
/* minivmm --net SPEC (net-spec.h). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "errf.h"
#include "net-spec.h"
#include "parse.h"
#include "rate-spec.h"

int cli_parse_mac(const char *s, uint8_t mac[6])
{
	for (int i = 0; i < 6; i++, s += 3) {
		char hex[3] = { s[0], s[0] ? s[1] : 0, 0 };

		if (!isxdigit((unsigned char)hex[0]) || !isxdigit((unsigned char)hex[1]) ||
		    s[2] != (i < 5 ? ':' : '\0'))
			return -1;
		mac[i] = (uint8_t)strtoul(hex, NULL, 16);
	}
	return mac[0] & 1 ? -1 : 0; /* a multicast address */
}

/* "N[:N...]": the tap queue files. */
static int parse_fds(char *v, struct cli_net *n, char *err, size_t errlen)
{
	char *save = NULL;
	unsigned long long fd;

	for (char *t = strtok_r(v, ":", &save); t; t = strtok_r(NULL, ":", &save)) {
		if (n->cfg.nr_fds == VMM_MAX_NET_PAIRS)
			return errf(err, errlen, "--net: at most %d fds", VMM_MAX_NET_PAIRS);
		if (parse_uint(t, 0, 65535, &fd))
			return errf(err, errlen, "--net: fd '%s' is not a number", t);
		n->fds[n->cfg.nr_fds++] = (int)fd;
	}
	if (!n->cfg.nr_fds)
		return errf(err, errlen, "--net: fd= needs a number");
	n->cfg.fds = n->fds;
	return 0;
}

static int parse_key(char *k, char *v, struct cli_net *n, char *err, size_t errlen)
{
	unsigned long long x;

	if (!strcmp(k, "tap")) {
		if (!*v || strlen(v) > 15)
			return errf(err, errlen, "--net: tap name must be 1..15 bytes");
		n->cfg.tap = v;
	} else if (!strcmp(k, "fd")) {
		return parse_fds(v, n, err, errlen);
	} else if (!strcmp(k, "stream")) {
		if (!*v || strlen(v) > 107)
			return errf(err, errlen, "--net: stream socket path must be "
				    "1..107 bytes");
		n->cfg.stream = v;
	} else if (!strcmp(k, "mac")) {
		if (cli_parse_mac(v, n->cfg.mac))
			return errf(err, errlen, "--net: mac must be a unicast "
				    "aa:bb:cc:dd:ee:ff, got '%s'", v);
	} else if (!strcmp(k, "queue-pairs")) {
		if (parse_uint(v, 1, VMM_MAX_NET_PAIRS, &x))
			return errf(err, errlen, "--net: queue-pairs must be 1..%d",
				    VMM_MAX_NET_PAIRS);
		n->cfg.queue_pairs = (uint16_t)x;
	} else if (!strcmp(k, "queue-size")) {
		if (parse_uint(v, 4, 1024, &x) || (x & (x - 1)))
			return errf(err, errlen, "--net: queue-size must be a power "
				    "of two from 4 to 1024");
		n->cfg.queue_size = (uint16_t)x;
	} else if (!strcmp(k, "mtu")) {
		if (parse_uint(v, 68, 65535, &x))
			return errf(err, errlen, "--net: mtu must be 68..65535");
		n->cfg.mtu = (uint16_t)x;
	} else if (!strcmp(k, "vhost")) {
		if (strcmp(v, "on") && strcmp(v, "off"))
			return errf(err, errlen, "--net: vhost must be on or off");
		n->cfg.flags = !strcmp(v, "on") ? VMM_NET_VHOST : 0;
	} else {
		int r = rate_spec_key(k, v, &n->rate, "--net", err, errlen);

		if (r)
			return r < 0 ? -1 : errf(err, errlen, "--net: unknown key '%s'", k);
	}
	return 0;
}

int cli_parse_net(const char *spec, struct cli_net *n, char *err, size_t errlen)
{
	char *save = NULL;

	memset(n, 0, sizeof(*n));
	n->cfg.struct_size = sizeof(n->cfg);
	if (!spec || !*spec)
		return errf(err, errlen, "--net needs a value");
	n->spec = strdup(spec);
	if (!n->spec)
		return errf(err, errlen, "out of memory");
	for (char *t = strtok_r(n->spec, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(t, '=');

		if (!eq)
			return errf(err, errlen, "--net: '%s' is not key=value", t);
		*eq = 0;
		if (parse_key(t, eq + 1, n, err, errlen))
			return -1;
	}
	if ((n->cfg.tap != NULL) + (n->cfg.fds != NULL) + (n->cfg.stream != NULL) != 1)
		return errf(err, errlen, "--net needs one of tap=NAME, fd=N[:N...] "
			    "or stream=PATH");
	if (n->cfg.stream && n->cfg.queue_pairs > 1)
		return errf(err, errlen, "--net: stream= is one socket, one queue pair");
	if (rate_spec_check(&n->rate, "--net", err, errlen))
		return -1;
	if (rate_spec_any(&n->rate) && (n->cfg.flags & VMM_NET_VHOST))
		return errf(err, errlen, "--net: rate limits need vhost=off (with "
			    "vhost=on the kernel moves the frames, past any limit "
			    "of the VMM's)");
	if (rate_spec_any(&n->rate))
		n->cfg.rate_limit = &n->rate;
	if (n->cfg.fds && n->cfg.queue_pairs && n->cfg.queue_pairs != n->cfg.nr_fds)
		return errf(err, errlen, "--net: fd= gives one queue pair per fd");
	return 0;
}
