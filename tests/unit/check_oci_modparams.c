/* SPDX-License-Identifier: MIT */
/*
 * The guest init's module parameters from the kernel command line
 * (examples/oci/guest-init/modparams.c): the MOD.PARAM[=VALUE] words of
 * the module's own name ('-' and '_' alike, the name from the file's base
 * name), without the prefix, joined by spaces; quoted values kept whole;
 * other modules' words, bare words and a prefix alone ignored; too long
 * for the buffer: nothing, and an error.
 */
#include <check.h>
#include <string.h>

#include "modparams.h"

static const char *params(const char *cmdline, const char *file)
{
	static char out[256];

	ck_assert_int_eq(modparams_for(cmdline, file, out, sizeof(out)), 0);
	return out;
}

START_TEST(own_words_only)
{
	const char *c = "console=hvc0 quiet virtio_net.napi_tx=0 virtio_blk.queue_depth=64 "
			"virtio_netx.a=1 virtio.b=2 virtio_net. virtio_net.csum=1\n";

	ck_assert_str_eq(params(c, "kernel/drivers/net/virtio_net.ko"), "napi_tx=0 csum=1");
	ck_assert_str_eq(params(c, "kernel/drivers/block/virtio_blk.ko"), "queue_depth=64");
	ck_assert_str_eq(params(c, "kernel/drivers/virtio/virtio_pci.ko"), "");
	ck_assert_str_eq(params("", "virtio_net.ko"), "");
}
END_TEST

START_TEST(dash_and_underscore_alike)
{
	ck_assert_str_eq(params("vmw-vsock-virtio-transport.x=1",
				"kernel/net/vmw_vsock/vmw_vsock_virtio_transport.ko"), "x=1");
	ck_assert_str_eq(params("crc32c_intel.y", "crc32c-intel.ko.xz"), "y");
}
END_TEST

START_TEST(quoted_values_whole)
{
	ck_assert_str_eq(params("m.opt=\"a b\" m.n=1", "m.ko"), "opt=\"a b\" n=1");
}
END_TEST

START_TEST(too_long_gives_nothing)
{
	char out[8] = "junk";

	ck_assert_int_eq(modparams_for("m.a=1 m.bbbbbbbb=2", "m.ko", out, sizeof(out)), -1);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(modparams_for("m.a=1", "m.ko", out, 0), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oci_modparams");
	TCase *tc = tcase_create("modparams");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, own_words_only);
	tcase_add_test(tc, dash_and_underscore_alike);
	tcase_add_test(tc, quoted_values_whole);
	tcase_add_test(tc, too_long_gives_nothing);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
