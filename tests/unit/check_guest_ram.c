/* SPDX-License-Identifier: MIT */
/*
 * Guest RAM backends (libvmm/core/memory.c, vmm_set_memory_backend()): the
 * anonymous default, a shareable sealed memfd, a hugetlbfs memfd (its
 * failure when the pool is short, its success when it is not), and the
 * public setter's checks.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memory.h"
#include "x86/e820.h"
#include "vmm/vmm.h"

#define MIB (1ull << 20)

/* HugePages_Free from /proc/meminfo (0 if unreadable). */
static unsigned long huge_free(void)
{
	char line[128];
	unsigned long n = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "HugePages_Free: %lu", &n) == 1)
			break;
	fclose(f);
	return n;
}

START_TEST(anon_default)
{
	struct guest_mem m;

	ck_assert_int_eq(guest_mem_init(&m, 64 * MIB, GUEST_MEM_ANON, &x86_guest_layout), 0);
	ck_assert_int_eq(m.fd, -1);
	ck_assert(m.mapped);
	ck_assert_uint_eq((uintptr_t)m.base % (2 * MIB), 0);
	ck_assert_uint_eq(m.nr_regions, 1);
	m.base[64 * MIB - 1] = 0x5a;
	ck_assert_uint_eq(*(uint8_t *)guest_mem_ptr(&m, 64 * MIB - 1, 1), 0x5a);
	guest_mem_destroy(&m);
	ck_assert_int_eq(m.fd, -1);
	ck_assert(!m.mapped);
}
END_TEST

START_TEST(memfd_shared_sealed)
{
	struct guest_mem m;
	struct stat st;
	uint8_t b = 0;
	uint8_t *other;
	int seals;

	ck_assert_int_eq(guest_mem_init(&m, 64 * MIB, GUEST_MEM_MEMFD, &x86_guest_layout), 0);
	ck_assert_int_ge(m.fd, 0);
	ck_assert_uint_eq((uintptr_t)m.base % (2 * MIB), 0);
	ck_assert_int_eq(fstat(m.fd, &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)(64 * MIB));
	ck_assert_int_ne(fcntl(m.fd, F_GETFD) & FD_CLOEXEC, 0);
	/* A receiver can trust the size: no shrink, no grow, no unsealing. */
	seals = fcntl(m.fd, F_GET_SEALS);
	ck_assert_int_eq(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
			 F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	ck_assert_int_eq(ftruncate(m.fd, 4096), -1);
	ck_assert_int_eq(errno, EPERM);
	/* Shared: what the guest writes, another mapping of the fd sees. */
	m.base[5 * MIB + 7] = 0xa5;
	ck_assert_int_eq(pread(m.fd, &b, 1, 5 * MIB + 7), 1);
	ck_assert_uint_eq(b, 0xa5);
	other = mmap(NULL, 64 * MIB, PROT_READ | PROT_WRITE, MAP_SHARED, m.fd, 0);
	ck_assert_ptr_ne(other, MAP_FAILED);
	other[63 * MIB] = 0x3c;
	ck_assert_uint_eq(m.base[63 * MIB], 0x3c);
	munmap(other, 64 * MIB);
	guest_mem_destroy(&m);
	ck_assert_int_eq(m.fd, -1);
}
END_TEST

/* High RAM above the PCI hole lies in the same memfd, after low RAM. */
START_TEST(memfd_high_ram)
{
	const uint64_t size = 3 * 1024 * MIB + 64 * MIB;
	struct guest_mem m;
	uint8_t b = 0;

	ck_assert_int_eq(guest_mem_init(&m, size, GUEST_MEM_MEMFD, &x86_guest_layout), 0);
	ck_assert_uint_eq(m.nr_regions, 2);
	*(uint8_t *)guest_mem_ptr(&m, X86_PCI_HOLE_END + 10, 1) = 0x77;
	ck_assert_int_eq(pread(m.fd, &b, 1, (off_t)(X86_PCI_HOLE_START + 10)), 1);
	ck_assert_uint_eq(b, 0x77);
	guest_mem_destroy(&m);
}
END_TEST

/*
 * hugetlbfs: every page is reserved at the mapping, so a pool that is too
 * small fails cleanly here (never a SIGBUS at a later guest page fault).
 * The success path runs only where the host has free huge pages; the
 * test never changes the host's pool.
 */
START_TEST(hugetlb_pool)
{
	unsigned long free_pages = huge_free();
	uint64_t fit = free_pages * 2 * MIB;
	struct guest_mem m;
	int ret;

	ret = guest_mem_init(&m, fit + 64 * MIB, GUEST_MEM_HUGETLB, &x86_guest_layout);
	if (ret == -ENOTSUP)
		return; /* no hugetlbfs memfd in this kernel */
	ck_assert_int_eq(ret, -ENOMEM);
	ck_assert(!m.mapped);
	if (free_pages >= 2) {
		/* 3 MiB + 4 KiB rounds up to two 2 MiB pages. */
		ck_assert_int_eq(guest_mem_init(&m, 3 * MIB + 4096, GUEST_MEM_HUGETLB, &x86_guest_layout), 0);
		ck_assert_uint_eq(m.map_size, 4 * MIB);
		ck_assert_uint_eq(m.size, 3 * MIB + 4096);
		ck_assert_int_ge(m.fd, 0);
		m.base[3 * MIB] = 1;
		guest_mem_destroy(&m);
	}
}
END_TEST

START_TEST(bad_backend)
{
	struct guest_mem m;

	ck_assert_int_eq(guest_mem_init(&m, 64 * MIB, 3, &x86_guest_layout), -EINVAL);
	ck_assert_int_eq(guest_mem_init(&m, 64 * MIB, -1, &x86_guest_layout), -EINVAL);
	ck_assert_int_eq(guest_mem_init(&m, 0, GUEST_MEM_MEMFD, &x86_guest_layout), -EINVAL);
}
END_TEST

/* The platform's layout: arm64 keeps RAM in one piece above its devices;
 * layouts that wrap or start RAM inside the hole are refused. */
START_TEST(platform_layouts)
{
	const struct guest_layout arm64 = { 0x80000000ull, 0, 0 };
	const struct guest_layout bad[] = {
		{ 0xd0000000ull, X86_PCI_HOLE_START, X86_PCI_HOLE_END }, /* in it */
		{ UINT64_MAX - MIB, 0, 0 },				/* wraps */
		{ 0, 0x2000, 0x1000 },					/* inverted */
		{ 0, 0x100000, UINT64_MAX - MIB },			/* above wraps */
	};
	struct guest_mem m;

	ck_assert_int_eq(guest_mem_init(&m, 64 * MIB, GUEST_MEM_ANON, &arm64), 0);
	ck_assert_uint_eq(m.nr_regions, 1);
	ck_assert_uint_eq(m.regions[0].gpa, 0x80000000ull);
	ck_assert_uint_eq(m.regions[0].size, 64 * MIB);
	ck_assert_ptr_eq(guest_mem_ptr(&m, 0x80000000ull + 10, 1), m.base + 10);
	ck_assert_ptr_null(guest_mem_ptr(&m, 10, 1));
	ck_assert_ptr_null(guest_mem_ptr(&m, 0x80000000ull + 64 * MIB - 1, 2));
	guest_mem_destroy(&m);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(guest_mem_init(&m, 64 * MIB, GUEST_MEM_ANON, &bad[i]),
				 -EINVAL);
	ck_assert_int_eq(guest_mem_init(&m, 64 * MIB, GUEST_MEM_ANON, NULL), -EINVAL);
}
END_TEST

START_TEST(api_setter)
{
	struct vmm *vm;

	ck_assert_int_eq(vmm_set_memory_backend(NULL, VMM_MEMORY_MEMFD), -EINVAL);
	if (vmm_create(&vm))
		return; /* no /dev/kvm: the CONFIG-state checks need a VM */
	ck_assert_int_eq(vmm_set_memory_backend(vm, VMM_MEMORY_MEMFD), 0);
	ck_assert_int_eq(vmm_set_memory_backend(vm, VMM_MEMORY_HUGETLB), 0);
	ck_assert_int_eq(vmm_set_memory_backend(vm, VMM_MEMORY_ANON), 0);
	ck_assert_int_eq(vmm_set_memory_backend(vm, 7), -EINVAL);
	vmm_destroy(vm);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("guest_ram");
	TCase *tc = tcase_create("backends");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, anon_default);
	tcase_add_test(tc, memfd_shared_sealed);
	tcase_add_test(tc, memfd_high_ram);
	tcase_add_test(tc, hugetlb_pool);
	tcase_add_test(tc, bad_backend);
	tcase_add_test(tc, api_setter);
	tcase_add_test(tc, platform_layouts);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
