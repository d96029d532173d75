/* SPDX-License-Identifier: MIT */
/* cpuid_fixup() on fake KVM_GET_SUPPORTED_CPUID tables. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/compiler.h"
#include "x86/cpuid.h"

#define MAX_ENTRIES 32
#define HTT (1u << 28)
#define HYPERVISOR (1u << 31)

static struct kvm_cpuid2 *table_new(void)
{
	struct kvm_cpuid2 *c = calloc(1, sizeof(*c) +
				      MAX_ENTRIES * sizeof(c->entries[0]));

	ck_assert_ptr_nonnull(c);
	return c;
}

static void add(struct kvm_cpuid2 *c, uint32_t fn, uint32_t idx, uint32_t eax,
		uint32_t ebx, uint32_t ecx, uint32_t edx)
{
	struct kvm_cpuid_entry2 *e;

	ck_assert_uint_lt(c->nent, MAX_ENTRIES);
	e = &c->entries[c->nent++];
	e->function = fn;
	e->index = idx;
	e->flags = (fn == 4 || fn == 0xb || fn == 0x1f || fn == 0x8000001d) ?
		   KVM_CPUID_FLAG_SIGNIFCANT_INDEX : 0;
	e->eax = eax;
	e->ebx = ebx;
	e->ecx = ecx;
	e->edx = edx;
}

static struct kvm_cpuid_entry2 *find(struct kvm_cpuid2 *c, uint32_t fn,
				     uint32_t idx)
{
	for (uint32_t i = 0; i < c->nent; i++)
		if (c->entries[i].function == fn && c->entries[i].index == idx)
			return &c->entries[i];
	ck_abort_msg("leaf 0x%x.%u missing", fn, idx);
	return NULL;
}

static void add_vendor(struct kvm_cpuid2 *c, const char v[12], uint32_t max)
{
	uint32_t ebx, edx, ecx;

	memcpy(&ebx, v, 4);
	memcpy(&edx, v + 4, 4);
	memcpy(&ecx, v + 8, 4);
	add(c, 0, 0, max, ebx, ecx, edx);
}

/* Cache leaf EAX: type (1 data, 2 insn, 3 unified), level, sharing, cores. */
static uint32_t cache_eax(uint32_t type, uint32_t level, uint32_t sharing,
			  uint32_t cores)
{
	return type | level << 5 | 1u << 8 | sharing << 14 | cores << 26;
}

/* What a 32-thread Intel host (16 cores x 2 threads) might report. */
static struct kvm_cpuid2 *intel_host(void)
{
	struct kvm_cpuid2 *c = table_new();

	add_vendor(c, "GenuineIntel", 0x1f);
	/* host APIC id 0x2a, 32 logical, CLFLUSH 8, HTT on, x2APIC. */
	add(c, 1, 0, 0x000906ea, 0x2a200800, 0x7ffafbff & ~HYPERVISOR,
	    0xbfebfbff);
	add(c, 4, 0, cache_eax(1, 1, 1, 15), 0x01c0003f, 0x3f, 0);
	add(c, 4, 1, cache_eax(2, 1, 1, 15), 0x01c0003f, 0x3f, 0);
	add(c, 4, 2, cache_eax(3, 2, 1, 15), 0x03c0003f, 0x3ff, 0);
	add(c, 4, 3, cache_eax(3, 3, 31, 15), 0x03c0003f, 0x3fff, 6);
	add(c, 4, 4, 0, 0, 0, 0);
	add(c, 0xb, 0, 1, 2, 0x100, 0x2a);
	add(c, 0xb, 1, 5, 32, 0x201, 0x2a);
	add(c, 0xb, 2, 0, 0, 2, 0x2a);
	add(c, 0x1f, 0, 1, 2, 0x100, 0x2a);
	add(c, 0x1f, 1, 4, 16, 0x201, 0x2a);
	add(c, 0x1f, 2, 5, 32, 0x502, 0x2a);	/* a die level */
	add(c, 0x1f, 3, 0, 0, 3, 0x2a);
	add(c, 0x80000000, 0, 0x80000008, 0, 0, 0);
	add(c, 0x80000008, 0, 0x3027, 0, 0, 0);
	return c;
}

static struct kvm_cpuid2 *amd_host(void)
{
	struct kvm_cpuid2 *c = table_new();

	add_vendor(c, "AuthenticAMD", 0x10);
	add(c, 1, 0, 0x00a20f12, 0x0d100800, 0x7ed8320b, 0x178bfbff);
	add(c, 0x80000000, 0, 0x80000021, 0, 0, 0);
	/* 16 cores, ApicIdSize 5, PerfTscSize bits must survive. */
	add(c, 0x80000008, 0, 0x3030, 0, 0x0001500f, 0);
	add(c, 0x8000001d, 0, cache_eax(1, 1, 1, 0), 0x01c0003f, 0x3f, 0);
	add(c, 0x8000001d, 1, cache_eax(3, 3, 15, 0), 0x03c0003f, 0x7fff, 1);
	add(c, 0x8000001d, 2, 0, 0, 0, 0);
	add(c, 0x8000001e, 0, 0x1b, 0x0000010d, 0x00000300, 0);
	return c;
}

static void check_topology(struct kvm_cpuid2 *c, uint32_t fn,
			   unsigned int vcpu, unsigned int nr, unsigned int last)
{
	struct kvm_cpuid_entry2 *e;

	e = find(c, fn, 0);
	ck_assert_uint_eq(e->eax & 0x1f, 0);		/* one thread per core */
	ck_assert_uint_eq(e->ebx & 0xffff, 1);
	ck_assert_uint_eq(e->ecx, 0 | 1u << 8);	/* SMT level */
	ck_assert_uint_eq(e->edx, vcpu);

	e = find(c, fn, 1);
	/* The core level's shift must cover every APIC id in the package. */
	ck_assert_uint_ge(1u << (e->eax & 0x1f), nr);
	ck_assert_uint_lt(1u << (e->eax & 0x1f), 2 * nr);
	ck_assert_uint_eq(vcpu >> (e->eax & 0x1f), 0);	/* package 0 */
	ck_assert_uint_eq(e->ebx & 0xffff, nr);
	ck_assert_uint_eq(e->ecx, 1 | 2u << 8);	/* core level */
	ck_assert_uint_eq(e->edx, vcpu);

	for (unsigned int sub = 2; sub <= last; sub++) {
		e = find(c, fn, sub);
		ck_assert_uint_eq((e->ecx >> 8) & 0xff, 0);	/* invalid */
		ck_assert_uint_eq(e->ecx & 0xff, sub);
		ck_assert_uint_eq(e->ebx & 0xffff, 0);
		ck_assert_uint_eq(e->edx, vcpu);
	}
}

START_TEST(test_intel_3_of_8)
{
	struct kvm_cpuid2 *c = intel_host();
	struct kvm_cpuid_entry2 *e;

	ck_assert_int_eq(cpuid_fixup(c, 3, 8), 0);

	e = find(c, 1, 0);
	ck_assert_uint_eq(e->ebx >> 24, 3);
	ck_assert_uint_eq((e->ebx >> 16) & 0xff, 8);
	ck_assert_uint_eq(e->ebx & 0xffff, 0x0800);	/* CLFLUSH untouched */
	ck_assert(e->edx & HTT);
	ck_assert(e->ecx & HYPERVISOR);
	ck_assert_uint_eq(e->ecx & ~HYPERVISOR, 0x7ffafbff & ~HYPERVISOR);
	ck_assert_uint_eq(e->eax, 0x000906ea);

	for (unsigned int sub = 0; sub < 4; sub++) {
		e = find(c, 4, sub);
		ck_assert_uint_eq(e->eax >> 26, 7);	/* cores - 1 */
		/* L1/L2 private, L3 shared by the package. */
		ck_assert_uint_eq((e->eax >> 14) & 0xfff, sub == 3 ? 7 : 0);
		ck_assert_uint_eq(e->eax & 0x3fff, cache_eax(sub == 1 ? 2 : sub >= 2 ? 3 : 1,
							       sub == 3 ? 3 : sub == 2 ? 2 : 1,
							       0, 0));
	}
	e = find(c, 4, 4);
	ck_assert_uint_eq(e->eax, 0);	/* the terminator stays a terminator */

	check_topology(c, 0xb, 3, 8, 2);
	check_topology(c, 0x1f, 3, 8, 3);

	/* Reserved on Intel: untouched. */
	ck_assert_uint_eq(find(c, 0x80000008, 0)->ecx, 0);
	ck_assert_uint_eq(find(c, 0x80000008, 0)->eax, 0x3027);
	free(c);
}
END_TEST

START_TEST(test_intel_0_of_1)
{
	struct kvm_cpuid2 *c = intel_host();
	struct kvm_cpuid_entry2 *e;

	ck_assert_int_eq(cpuid_fixup(c, 0, 1), 0);
	e = find(c, 1, 0);
	ck_assert_uint_eq(e->ebx >> 24, 0);
	ck_assert_uint_eq((e->ebx >> 16) & 0xff, 1);
	ck_assert(!(e->edx & HTT));
	ck_assert(e->ecx & HYPERVISOR);
	for (unsigned int sub = 0; sub < 4; sub++) {
		e = find(c, 4, sub);
		ck_assert_uint_eq(e->eax >> 26, 0);
		ck_assert_uint_eq((e->eax >> 14) & 0xfff, 0);
	}
	check_topology(c, 0xb, 0, 1, 2);
	check_topology(c, 0x1f, 0, 1, 3);
	free(c);
}
END_TEST

START_TEST(test_counts)
{
	/* Odd and large counts: ids stay in range, counts are powers of two. */
	static const unsigned int nrs[] = { 2, 3, 5, 64, 65, 128, 129, 254, 255,
					    256, 300, 384, 1024 };

	for (size_t i = 0; i < sizeof(nrs) / sizeof(nrs[0]); i++) {
		unsigned int nr = nrs[i], vcpu = nr - 1;
		struct kvm_cpuid2 *c = intel_host();
		struct kvm_cpuid_entry2 *e;
		unsigned int logical;

		ck_assert_int_eq(cpuid_fixup(c, vcpu, nr), 0);
		e = find(c, 1, 0);
		/* Leaf 1: the low byte of the id; 0xB has it whole. */
		ck_assert_uint_eq(e->ebx >> 24, vcpu & 0xff);
		logical = (e->ebx >> 16) & 0xff;
		ck_assert_uint_ge(logical, MIN(nr, 255u));
		ck_assert(logical == 255 || (logical & (logical - 1)) == 0);
		ck_assert(e->edx & HTT);
		e = find(c, 4, 0);
		ck_assert_uint_ge((e->eax >> 26) + 1, MIN(nr, 64u));
		check_topology(c, 0xb, vcpu, nr, 2);
		free(c);
	}
}
END_TEST

START_TEST(test_amd)
{
	struct kvm_cpuid2 *c = amd_host();
	struct kvm_cpuid_entry2 *e;

	ck_assert_int_eq(cpuid_fixup(c, 3, 8), 0);
	e = find(c, 1, 0);
	ck_assert_uint_eq(e->ebx >> 24, 3);
	ck_assert_uint_eq((e->ebx >> 16) & 0xff, 8);
	ck_assert(e->edx & HTT);
	ck_assert(e->ecx & HYPERVISOR);

	e = find(c, 0x80000008, 0);
	ck_assert_uint_eq(e->ecx & 0xff, 7);		/* NC */
	ck_assert_uint_eq((e->ecx >> 12) & 0xf, 3);	/* ApicIdSize */
	ck_assert_uint_eq(e->ecx & 0x30000, 0x10000);	/* PerfTscSize kept */
	ck_assert_uint_eq(e->eax, 0x3030);

	e = find(c, 0x8000001e, 0);
	ck_assert_uint_eq(e->eax, 3);
	ck_assert_uint_eq(e->ebx & 0xff, 3);
	ck_assert_uint_eq((e->ebx >> 8) & 0xff, 0);
	ck_assert_uint_eq(e->ecx & 0x7ff, 0);

	ck_assert_uint_eq((find(c, 0x8000001d, 0)->eax >> 14) & 0xfff, 0);
	ck_assert_uint_eq((find(c, 0x8000001d, 1)->eax >> 14) & 0xfff, 7);
	ck_assert_uint_eq(find(c, 0x8000001d, 2)->eax, 0);

	ck_assert_int_eq(cpuid_fixup(c, 0, 1), 0);
	e = find(c, 0x80000008, 0);
	ck_assert_uint_eq(e->ecx & 0xff, 0);
	ck_assert_uint_eq((e->ecx >> 12) & 0xf, 0);
	ck_assert(!(find(c, 1, 0)->edx & HTT));
	free(c);
}
END_TEST

START_TEST(test_tsc_deadline)
{
	struct kvm_cpuid2 *c = table_new();
	uint32_t vendor_ecx;

	add_vendor(c, "AuthenticAMD", 0xd);
	add(c, 1, 0, 0x00a00f11, 0, 0x1234, 0x5678);
	vendor_ecx = find(c, 0, 0)->ecx;
	cpuid_set_tsc_deadline(c);
	ck_assert_uint_eq(find(c, 1, 0)->ecx, 0x1234u | (1u << 24));
	ck_assert_uint_eq(find(c, 1, 0)->edx, 0x5678u);
	ck_assert_uint_eq(find(c, 0, 0)->ecx, vendor_ecx); /* other leaves untouched */
	free(c);
	cpuid_set_tsc_deadline(NULL); /* no table: nothing to do */
}
END_TEST

START_TEST(test_errors)
{
	struct kvm_cpuid2 *c = intel_host();

	ck_assert_int_eq(cpuid_fixup(NULL, 0, 1), -EINVAL);
	ck_assert_int_eq(cpuid_fixup(c, 0, 0), -EINVAL);
	ck_assert_int_eq(cpuid_fixup(c, 8, 8), -EINVAL);
	ck_assert_int_eq(cpuid_fixup(c, 0, 32769), -EINVAL);
	/* Errors leave the table alone. */
	ck_assert_uint_eq(find(c, 1, 0)->ebx, 0x2a200800);
	free(c);
}
END_TEST

/* KVM's feature leaf gets MSI_EXT_DEST_ID (bit 15), only under KVM's
 * signature: another hypervisor's 0x40000001 means something else. */
START_TEST(test_msi_ext_dest_id)
{
	struct kvm_cpuid2 *c = intel_host();
	uint32_t b, cx, d;

	memcpy(&b, "KVMK", 4);
	memcpy(&cx, "VMKV", 4);
	memcpy(&d, "M\0\0\0", 4);
	add(c, 0x40000000, 0, 0x40000001, b, cx, d);
	add(c, 0x40000001, 0, 0x01000089, 0, 0, 0);
	ck_assert_int_eq(cpuid_fixup(c, 299, 300), 0);
	ck_assert_uint_eq(find(c, 0x40000001, 0)->eax, 0x01000089u | (1u << 15));
	free(c);

	c = intel_host();
	memcpy(&b, "Micr", 4);
	add(c, 0x40000000, 0, 0x40000001, b, cx, d);
	add(c, 0x40000001, 0, 0x1234, 0, 0, 0);
	ck_assert_int_eq(cpuid_fixup(c, 0, 4), 0);
	ck_assert_uint_eq(find(c, 0x40000001, 0)->eax, 0x1234u);
	free(c);
}
END_TEST

START_TEST(test_empty_table)
{
	struct kvm_cpuid2 *c = table_new();

	ck_assert_int_eq(cpuid_fixup(c, 0, 4), 0);
	free(c);
}
END_TEST

static Suite *cpuid_suite(void)
{
	Suite *s = suite_create("cpuid");
	TCase *tc = tcase_create("fixup");

	tcase_add_test(tc, test_intel_3_of_8);
	tcase_add_test(tc, test_intel_0_of_1);
	tcase_add_test(tc, test_counts);
	tcase_add_test(tc, test_amd);
	tcase_add_test(tc, test_tsc_deadline);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_empty_table);
	tcase_add_test(tc, test_msi_ext_dest_id);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cpuid_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
