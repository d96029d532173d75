/* SPDX-License-Identifier: MIT */
/* The VM's size from the annotations SPEC_ANN_VCPUS / SPEC_ANN_MEMORY
 * (spec.h), the runtime's counterpart of crun+libkrun's krun.cpus and
 * krun.ram_mib. */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "errf.h"
#include "spec.h"

#define MEM_MAX (1ull << 40)

/* Echoed only if short and printable: the reason stays one line. */
static const char *shown(const char *v)
{
	for (const char *p = v; *p; p++)
		if (!isprint((unsigned char)*p))
			return "?";
	return strlen(v) <= 32 ? v : "?";
}

int spec_parse_vcpus(const char *v, unsigned int *out, char *err, size_t len)
{
	unsigned long n;
	char *e;

	errno = 0;
	n = isdigit((unsigned char)*v) ? strtoul(v, &e, 10) : 0;
	if (!isdigit((unsigned char)*v) || *e || errno || n < 1 || n > SPEC_MAX_VCPUS)
		return errf_line(err, len, "annotation " SPEC_ANN_VCPUS "=\"%s\": "
				 "expected a number of vCPUs, 1..%u", shown(v),
				 SPEC_MAX_VCPUS);
	*out = (unsigned int)n;
	return 0;
}

int spec_parse_memory(const char *v, uint64_t *out, char *err, size_t len)
{
	unsigned long long n;
	unsigned int shift = 20; /* MiB without a suffix */
	char *e;

	errno = 0;
	n = isdigit((unsigned char)*v) ? strtoull(v, &e, 10) : 0;
	if (isdigit((unsigned char)*v) && !errno && *e) {
		switch (toupper((unsigned char)*e)) {
		case 'K': shift = 10; break;
		case 'M': shift = 20; break;
		case 'G': shift = 30; break;
		case 'T': shift = 40; break;
		default: shift = 64;
		}
		e++;
		/* "512M", "512Mi", "512MiB", "512MB": all binary. */
		if (*e == 'i')
			e++;
		if (*e == 'B' || *e == 'b')
			e++;
	}
	if (!isdigit((unsigned char)*v) || errno || *e || shift == 64 ||
	    n > (MEM_MAX >> shift) || (n << shift) < SPEC_MEM_MIN)
		return errf_line(err, len, "annotation " SPEC_ANN_MEMORY "=\"%s\": "
				 "expected the guest's RAM in MiB, or with a suffix K, "
				 "M, G, T (64M..1T)", shown(v));
	*out = ((n << shift) + (2ull << 20) - 1) & ~((2ull << 20) - 1);
	return 0;
}

int spec_parse_size_annotations(json_t *ann, struct oci_spec *s, char *err, size_t len)
{
	json_t *c = json_object_get(ann, SPEC_ANN_VCPUS),
	       *m = json_object_get(ann, SPEC_ANN_MEMORY);

	if (c && (!json_is_string(c) ||
		  spec_parse_vcpus(json_string_value(c), &s->ann_vcpus, err, len)))
		return json_is_string(c) ? -1 : errf_line(err, len, "annotation "
						SPEC_ANN_VCPUS " must be a string");
	if (m && (!json_is_string(m) ||
		  spec_parse_memory(json_string_value(m), &s->ann_memory, err, len)))
		return json_is_string(m) ? -1 : errf_line(err, len, "annotation "
						SPEC_ANN_MEMORY " must be a string");
	return 0;
}
