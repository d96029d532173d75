/* SPDX-License-Identifier: MIT */
/* The container process's capabilities (see caps.h). */
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "caps.h"
#include "errf.h"

/* The capabilities this kernel has: PR_CAPBSET_READ fails past the last. */
static int last_cap(void)
{
	int c = 0;

	while (c < 64 && prctl(PR_CAPBSET_READ, c, 0, 0, 0) >= 0)
		c++;
	return c - 1;
}

static uint64_t known_mask(int last)
{
	return last >= 63 ? ~0ull : (1ull << (last + 1)) - 1;
}

int init_caps_before_user(const uint64_t caps[PROTO_CAP_SETS], char *err,
			  size_t errlen)
{
	int last = last_cap();

	for (int c = 0; c <= last; c++) {
		if (caps[PROTO_CAP_BOUNDING] & (1ull << c))
			continue;
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0))
			return errf_ret(err, errlen, -errno,
				    "dropping capability %d from the bounding set: %s",
				    c, strerror(errno));
	}
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0))
		return errf_ret(err, errlen, -errno, "PR_SET_KEEPCAPS: %s", strerror(errno));
	return 0;
}

int init_caps_after_user(const uint64_t caps[PROTO_CAP_SETS], char *err,
			 size_t errlen)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	int last = last_cap();
	uint64_t mask = known_mask(last);
	uint64_t eff = caps[PROTO_CAP_EFFECTIVE] & mask;
	uint64_t prm = caps[PROTO_CAP_PERMITTED] & mask;
	uint64_t inh = caps[PROTO_CAP_INHERITABLE] & mask;
	uint64_t amb = caps[PROTO_CAP_AMBIENT] & mask;

	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0))
		return errf_ret(err, errlen, -errno, "PR_SET_KEEPCAPS: %s", strerror(errno));
	memset(data, 0, sizeof(data));
	for (unsigned int i = 0; i < 2; i++) {
		data[i].effective = (uint32_t)(eff >> (32 * i));
		data[i].permitted = (uint32_t)(prm >> (32 * i));
		data[i].inheritable = (uint32_t)(inh >> (32 * i));
	}
	if (syscall(SYS_capset, &hdr, data))
		return errf_ret(err, errlen, -errno,
			    "capabilities (effective %#llx, permitted %#llx, "
			    "inheritable %#llx): %s", (unsigned long long)eff,
			    (unsigned long long)prm, (unsigned long long)inh,
			    strerror(errno));
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && amb)
		return errf_ret(err, errlen, -errno, "ambient capabilities: %s",
			    strerror(errno));
	for (int c = 0; c <= last; c++) {
		if (!(amb & (1ull << c)))
			continue;
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0))
			return errf_ret(err, errlen, -errno,
				    "ambient capability %d: %s (it must be permitted "
				    "and inheritable too)", c, strerror(errno));
	}
	return 0;
}
