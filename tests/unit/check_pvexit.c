/* SPDX-License-Identifier: MIT */
/* The paravirtual exit device (VMM_EXIT_PORT): writes of every width at
 * the base report the zero-extended value, writes elsewhere are ignored,
 * reads return the signature; and vmm_get_guest_status()'s argument
 * checks. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iobus.h"
#include "legacy/pvexit.h"
#include "vmm/vmm.h"

static struct iobus pio;
static unsigned int calls;
static uint32_t last;

static void on_exit_status(void *opaque, uint32_t status)
{
	ck_assert_ptr_eq(opaque, &calls);
	calls++;
	last = status;
}

static void setup(void)
{
	calls = 0;
	last = 0;
	ck_assert_int_eq(iobus_init(&pio, "pio"), 0);
}

static void teardown(void)
{
	iobus_destroy(&pio);
}

static void out(uint16_t port, uint32_t v, uint32_t len)
{
	ck_assert_int_eq(iobus_dispatch(&pio, port, &v, len, true), 0);
}

START_TEST(test_widths)
{
	struct pvexit *d;

	ck_assert_int_eq(pvexit_create(&pio, VMM_EXIT_PORT, on_exit_status,
				       &calls, &d), 0);
	out(VMM_EXIT_PORT, 7, 1);
	ck_assert_uint_eq(calls, 1);
	ck_assert_uint_eq(last, 7);
	out(VMM_EXIT_PORT, 0xbeef, 2);
	ck_assert_uint_eq(last, 0xbeef);
	out(VMM_EXIT_PORT, 0xdeadbeef, 4);
	ck_assert_uint_eq(calls, 3);
	ck_assert_uint_eq(last, 0xdeadbeef);
	/* A byte write takes only the low byte of what the register held. */
	out(VMM_EXIT_PORT, 0x1234ff, 1);
	ck_assert_uint_eq(last, 0xff);
	pvexit_destroy(d);
}
END_TEST

START_TEST(test_offsets_ignored)
{
	struct pvexit *d;

	ck_assert_int_eq(pvexit_create(&pio, VMM_EXIT_PORT, on_exit_status,
				       &calls, &d), 0);
	for (uint16_t off = 1; off < PVEXIT_LEN; off++)
		out((uint16_t)(VMM_EXIT_PORT + off), 1, 1);
	out(VMM_EXIT_PORT + 2, 1, 2);
	ck_assert_uint_eq(calls, 0);
	pvexit_destroy(d);
	/* Unregistered: the port is free again. */
	ck_assert_int_eq(pvexit_create(&pio, VMM_EXIT_PORT, on_exit_status,
				       &calls, &d), 0);
	pvexit_destroy(d);
}
END_TEST

START_TEST(test_read_magic)
{
	struct pvexit *d;
	uint32_t v = 0;
	uint8_t b = 0;

	ck_assert_int_eq(pvexit_create(&pio, VMM_EXIT_PORT, on_exit_status,
				       &calls, &d), 0);
	ck_assert_int_eq(iobus_dispatch(&pio, VMM_EXIT_PORT, &v, 4, false), 0);
	ck_assert_uint_eq(v, VMM_EXIT_PORT_MAGIC);
	ck_assert_int_eq(iobus_dispatch(&pio, VMM_EXIT_PORT + 1, &b, 1, false), 0);
	ck_assert_uint_eq(b, (VMM_EXIT_PORT_MAGIC >> 8) & 0xff);
	ck_assert_uint_eq(calls, 0);
	pvexit_destroy(d);
}
END_TEST

START_TEST(test_create_errors)
{
	struct pvexit *d, *d2;

	ck_assert_int_eq(pvexit_create(NULL, VMM_EXIT_PORT, on_exit_status,
				       NULL, &d), -EINVAL);
	ck_assert_int_eq(pvexit_create(&pio, VMM_EXIT_PORT, NULL, NULL, &d),
			 -EINVAL);
	ck_assert_int_eq(pvexit_create(&pio, VMM_EXIT_PORT, on_exit_status,
				       NULL, NULL), -EINVAL);
	ck_assert_int_eq(pvexit_create(&pio, VMM_EXIT_PORT, on_exit_status,
				       &calls, &d), 0);
	ck_assert_int_eq(pvexit_create(&pio, VMM_EXIT_PORT + 2, on_exit_status,
				       &calls, &d2), -EEXIST);
	pvexit_destroy(d);
	pvexit_destroy(NULL);
}
END_TEST

START_TEST(test_api_args)
{
	uint32_t st = 0;

	ck_assert_int_eq(vmm_get_guest_status(NULL, &st), -EINVAL);
	ck_assert_str_eq(vmm_exit_reason_str(VMM_EXIT_GUEST_STATUS),
			 "guest exit status");
}
END_TEST

static Suite *pvexit_suite(void)
{
	Suite *s = suite_create("pvexit");
	TCase *tc = tcase_create("device");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_widths);
	tcase_add_test(tc, test_offsets_ignored);
	tcase_add_test(tc, test_read_magic);
	tcase_add_test(tc, test_create_errors);
	tcase_add_test(tc, test_api_args);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(pvexit_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
