/* SPDX-License-Identifier: MIT */
/*
 * oci_image_bench BUNDLE IMG [ROUNDS]: minivmm-oci's root image build
 * (examples/oci/image.c: scan, mkfs.ext4 -d, debugfs) on BUNDLE's
 * config.json, ROUNDS times; prints one JSON record per round:
 * {"rootfs_bytes","rootfs_inodes","image_bytes","scan_ms","mkfs_ms",
 *  "inject_ms","total_ms"}.  No KVM needed.  bench/oci_bench.sh runs it on
 * generated root file systems of several sizes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "oci.h"

int main(int argc, char **argv)
{
	struct oci_image_stats st;
	struct oci_spec spec;
	char err[2048];
	int rounds = argc > 3 ? atoi(argv[3]) : 1;

	if (argc < 3) {
		fprintf(stderr, "usage: %s BUNDLE IMG [ROUNDS]\n", argv[0]);
		return 2;
	}
	if (spec_load(argv[1], NULL, &spec, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	for (int i = 0; i < rounds; i++) {
		uint64_t t0 = oci_now_ns();

		if (oci_image_build(&spec, argv[2], 256ull << 20, &st, err, sizeof(err))) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		printf("{\"rootfs_bytes\":%llu,\"rootfs_inodes\":%llu,\"image_bytes\":%llu,"
		       "\"readonly\":%s,\"scan_ms\":%.3f,\"mkfs_ms\":%.3f,\"inject_ms\":%.3f,"
		       "\"total_ms\":%.3f}\n",
		       (unsigned long long)st.bytes, (unsigned long long)st.inodes,
		       (unsigned long long)st.image_bytes, spec.root_ro ? "true" : "false",
		       st.scan_ns / 1e6, st.mkfs_ns / 1e6, st.inject_ns / 1e6,
		       (oci_now_ns() - t0) / 1e6);
		unlink(argv[2]);
	}
	spec_free(&spec);
	return 0;
}
