/* SPDX-License-Identifier: MIT */
/*
 * Replays every fuzz input kept in the tree through its target, in every
 * build (no clang or libFuzzer needed): the seed corpus
 * tests/fuzz/corpus/<target>/ and the crash regressions
 * tests/fuzz/regressions/<target>/, one named file per bug the fuzzers
 * found (see tests/fuzz/regressions/README).  A target abort()s or trips
 * ASan/UBSan (in the VMM_SANITIZE build) on a regression.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

typedef int (*fuzz_fn)(const uint8_t *data, size_t size);

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	ck_assert_msg(f != NULL, "open %s: %s", path, strerror(errno));
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_ge(n, 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* Feed every regular file of @dir (sorted, for a stable order) to @fn.
 * Returns the number of files; 0 if the directory does not exist. */
static unsigned int replay_dir(const char *dir, fuzz_fn fn)
{
	struct dirent **names;
	unsigned int count = 0;
	int n = scandir(dir, &names, NULL, alphasort);

	if (n < 0)
		return 0;
	for (int i = 0; i < n; i++) {
		char path[4096];
		struct stat st;
		uint8_t *buf;
		size_t len;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		free(names[i]);
		if (stat(path, &st) || !S_ISREG(st.st_mode) ||
		    !strcmp(path + strlen(path) - 7, "/README"))
			continue;
		buf = slurp(path, &len);
		fprintf(stderr, "replay %s (%zu bytes)\n", path, len);
		fn(buf, len);
		free(buf);
		count++;
	}
	free(names);
	return count;
}

static void replay(const char *target, fuzz_fn fn)
{
	char dir[4096];
	unsigned int seeds;

	snprintf(dir, sizeof(dir), "%s/corpus/%s", VMM_FUZZ_DIR, target);
	seeds = replay_dir(dir, fn);
	ck_assert_msg(seeds > 0, "no seed corpus in %s", dir);
	snprintf(dir, sizeof(dir), "%s/regressions/%s", VMM_FUZZ_DIR, target);
	replay_dir(dir, fn);
	/* The empty input is every target's first. */
	fn(NULL, 0);
}

START_TEST(virtqueue_blk)
{
	replay("fuzz_virtqueue_blk", fuzz_virtqueue_blk);
}
END_TEST

START_TEST(virtio_pci)
{
	replay("fuzz_virtio_pci", fuzz_virtio_pci);
}
END_TEST

#ifdef VMM_FUZZ_X86 /* tests/fuzz/CMakeLists.txt: x86 builds only */
START_TEST(bzimage)
{
	replay("fuzz_bzimage", fuzz_bzimage);
}
END_TEST

START_TEST(pvh)
{
	replay("fuzz_pvh", fuzz_pvh);
}
END_TEST

START_TEST(pc_ports)
{
	replay("fuzz_pc_ports", fuzz_pc_ports);
}
END_TEST
#endif

/* Every build: the arm64 sources come with the target where the library
 * has not got them (tests/fuzz/CMakeLists.txt). */
START_TEST(arm64_boot)
{
	replay("fuzz_arm64_boot", fuzz_arm64_boot);
}
END_TEST

START_TEST(cli)
{
	replay("fuzz_cli", fuzz_cli);
}
END_TEST

START_TEST(vhost_user)
{
	replay("fuzz_vhost_user", fuzz_vhost_user);
}
END_TEST

START_TEST(net)
{
	replay("fuzz_net", fuzz_net);
}
END_TEST

START_TEST(net_stream)
{
	replay("fuzz_net_stream", fuzz_net_stream);
}
END_TEST

START_TEST(vcon)
{
	replay("fuzz_vcon", fuzz_vcon);
}
END_TEST

START_TEST(vsock)
{
	replay("fuzz_vsock", fuzz_vsock);
}
END_TEST

START_TEST(oci_exec)
{
	replay("fuzz_oci_exec", fuzz_oci_exec);
}
END_TEST

START_TEST(oci_proto)
{
	replay("fuzz_oci_proto", fuzz_oci_proto);
}
END_TEST

START_TEST(oci_init_config)
{
	replay("fuzz_oci_init_config", fuzz_oci_init_config);
}
END_TEST

START_TEST(oci_shim)
{
	replay("fuzz_oci_shim", fuzz_oci_shim);
}
END_TEST

START_TEST(pci_bus)
{
	replay("fuzz_pci_bus", fuzz_pci_bus);
}
END_TEST

#ifndef VMM_FUZZ_USER_QEMU /* tests/fuzz/CMakeLists.txt: not under qemu-user */
START_TEST(blk_uring)
{
	replay("fuzz_blk_uring", fuzz_blk_uring);
}
END_TEST

START_TEST(vu_socket)
{
	replay("fuzz_vu_socket", fuzz_vu_socket);
}
END_TEST
#endif

START_TEST(oci_config)
{
	replay("fuzz_oci_config", fuzz_oci_config);
}
END_TEST

START_TEST(oci_state)
{
	replay("fuzz_oci_state", fuzz_oci_state);
}
END_TEST

START_TEST(oci_cli)
{
	replay("fuzz_oci_cli", fuzz_oci_cli);
}
END_TEST

START_TEST(blkd_cli)
{
	replay("fuzz_blkd_cli", fuzz_blkd_cli);
}
END_TEST

START_TEST(api_request)
{
	replay("fuzz_api_request", fuzz_api_request);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fuzz_regressions");
	TCase *tc = tcase_create("replay");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, virtqueue_blk);
	tcase_add_test(tc, virtio_pci);
#ifdef VMM_FUZZ_X86
	tcase_add_test(tc, bzimage);
	tcase_add_test(tc, pvh);
	tcase_add_test(tc, pc_ports);
#endif
	tcase_add_test(tc, arm64_boot);
	tcase_add_test(tc, cli);
	tcase_add_test(tc, vhost_user);
	tcase_add_test(tc, vcon);
	tcase_add_test(tc, net);
	tcase_add_test(tc, net_stream);
	tcase_add_test(tc, vsock);
	tcase_add_test(tc, oci_exec);
	tcase_add_test(tc, oci_proto);
	tcase_add_test(tc, oci_init_config);
	tcase_add_test(tc, oci_shim);
	tcase_add_test(tc, pci_bus);
#ifndef VMM_FUZZ_USER_QEMU
	tcase_add_test(tc, blk_uring);
	tcase_add_test(tc, vu_socket);
#endif
	tcase_add_test(tc, oci_config);
	tcase_add_test(tc, oci_state);
	tcase_add_test(tc, oci_cli);
	tcase_add_test(tc, blkd_cli);
	tcase_add_test(tc, api_request);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
