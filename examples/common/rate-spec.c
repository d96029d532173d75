/* SPDX-License-Identifier: MIT */
#include <stddef.h>
#include <string.h>

#include "errf.h"
#include "parse.h"
#include "rate-spec.h"

#define RATE_MAX (1ull << 60)

int rate_parse_bytes(const char *s, uint64_t *out)
{
	static const char units[] = "KMGT";
	unsigned long long n;
	char num[32];
	size_t len = strspn(s, "0123456789");
	const char *u = s + len, *p;
	unsigned int shift = 0;

	if (!len || len >= sizeof(num))
		return -1;
	memcpy(num, s, len);
	num[len] = '\0';
	if (parse_uint(num, 0, RATE_MAX, &n))
		return -1;
	if (*u) {
		p = strchr(units, *u);
		if (!p || (strcmp(u + 1, "") && strcmp(u + 1, "iB") &&
			   strcmp(u + 1, "B")))
			return -1;
		shift = 10 * (unsigned int)(p - units + 1);
	}
	if (n > (RATE_MAX >> shift))
		return -1;
	*out = (uint64_t)n << shift;
	return 0;
}

static int ops_val(const char *val, uint64_t *out)
{
	unsigned long long n;

	if (parse_uint(val, 0, RATE_MAX, &n))
		return -1;
	*out = n;
	return 0;
}

int rate_spec_key(const char *key, const char *val, struct vmm_rate_limit *r,
		  const char *opt, char *err, size_t errlen)
{
	static const struct {
		const char *key;
		size_t off;
		bool bytes;
	} keys[] = {
		{ "rate-bw", offsetof(struct vmm_rate_limit, bw), true },
		{ "rate-bw-burst", offsetof(struct vmm_rate_limit, bw_burst), true },
		{ "rate-bw-one-time", offsetof(struct vmm_rate_limit, bw_one_time), true },
		{ "rate-ops", offsetof(struct vmm_rate_limit, ops), false },
		{ "rate-ops-burst", offsetof(struct vmm_rate_limit, ops_burst), false },
		{ "rate-ops-one-time", offsetof(struct vmm_rate_limit, ops_one_time), false },
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		uint64_t v;

		if (strcmp(key, keys[i].key))
			continue;
		if (keys[i].bytes ? rate_parse_bytes(val, &v) : ops_val(val, &v))
			return errf(err, errlen, "%s: %s must be %s, got '%s'", opt, key,
				    keys[i].bytes ? "bytes with an optional K/M/G/T suffix"
						  : "a whole number", val);
		r->struct_size = sizeof(*r);
		memcpy((char *)r + keys[i].off, &v, sizeof(v));
		return 0;
	}
	return 1;
}

int rate_spec_check(const struct vmm_rate_limit *r, const char *opt, char *err,
		    size_t errlen)
{
	if (!r->bw && (r->bw_burst || r->bw_one_time))
		return errf(err, errlen, "%s: rate-bw-burst and rate-bw-one-time "
			    "need rate-bw", opt);
	if (!r->ops && (r->ops_burst || r->ops_one_time))
		return errf(err, errlen, "%s: rate-ops-burst and rate-ops-one-time "
			    "need rate-ops", opt);
	return 0;
}

bool rate_spec_any(const struct vmm_rate_limit *r)
{
	return r->bw || r->ops;
}
