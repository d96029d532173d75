/* SPDX-License-Identifier: MIT */
/*
 * guest_ram_bench - what guest RAM costs per backend (issue 11, item 2):
 * anon (private anonymous, MADV_HUGEPAGE), memfd (sealed shmem memfd mapped
 * shared) and hugetlb (hugetlbfs memfd, 2 MiB pages reserved at the mmap),
 * made by libvmm's own guest_mem_init(), side by side in one process.
 *
 * One trial, for a backend, a RAM size and a thread count, on a fresh
 * mapping (only one mapping exists at a time):
 *   prewarm    (unless --no-prewarm) as much THP anonymous memory touched
 *              and freed just before, so that the trial's pages are ones
 *              the hypervisor under a VM host has backed: the first touch
 *              of never-used or returned guest-physical memory (free page
 *              reporting, virtio-balloon) costs a host fault on top and
 *              made single runs vary several-fold; recorded as prewarm_ns;
 *   setup      guest_mem_init() (mmap, memfd_create + ftruncate + seals,
 *              madvise), as vmm_start() does it;
 *   register   KVM_SET_USER_MEMORY_REGION of every region on a VM made with
 *              KVM_CREATE_VM (before the trial, not timed), when /dev/kvm
 *              opens; else the record says kvm:false;
 *   touch      one byte written per 4 KiB page of the whole RAM by 1 or 2
 *              threads (each its half), timed from a barrier that releases
 *              them to the last join: first-touch page faults (allocation
 *              and zeroing included), with the minor faults counted;
 *   huge       /proc/self/smaps of the mapping after the touch:
 *              AnonHugePages, ShmemPmdMapped, FilePmdMapped,
 *              Shared_Hugetlb + Private_Hugetlb;
 *   unregister the slots deleted again (memory_size 0);
 *   teardown   guest_mem_destroy() (munmap, close of the memfd, which frees
 *              its pages).
 * Backends take turns within a round and the order rotates round by round
 * (A B C, B C A, C A B ...), so drift hits them alike.  hugetlb is tried
 * only when the pool (/proc/sys/vm/nr_hugepages) has enough free pages;
 * otherwise a "guest_ram_skip" record says so (bench/guest_ram_bench.sh
 * sizes the pool for the run).
 *
 * Output: "BENCH-JSON {...}" lines on stdout (one per trial, one describing
 * the machine, one per skip), a human line per trial on stderr.  Never
 * asserts a timing; exits 1 only when a backend that should work fails.
 *
 * usage: guest_ram_bench [--rounds R] [--warmup] [--sizes 512M,2G]
 *        [--threads 1,2] [--backends anon,memfd,hugetlb] [--no-kvm]
 *        [--no-prewarm]
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "memory.h"
#include "x86/e820.h"

#define PAGE_4K 4096ull
#define HUGE_2M (2ull << 20)
#define MAX_LIST 8

static const char *const backend_name[] = { "anon", "memfd", "hugetlb" };

struct opts {
	unsigned int rounds;
	bool warmup;
	bool kvm;
	bool prewarm;
	uint64_t sizes[MAX_LIST];
	unsigned int nr_sizes;
	unsigned int threads[MAX_LIST];
	unsigned int nr_threads;
	int backends[MAX_LIST];
	unsigned int nr_backends;
};

struct smaps {
	uint64_t rss_kib, anon_huge_kib, shmem_pmd_kib, file_pmd_kib,
		hugetlb_kib;
	bool found;
};

struct trial {
	uint64_t prewarm_ns, setup_ns, register_ns, touch_ns, unregister_ns,
		teardown_ns;
	uint64_t minor_faults;
	unsigned int slots;
	struct smaps sm;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The first line of @path, newline stripped, into @buf ("" if unreadable). */
static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* A "Key:   N kB" (or bare N) value of /proc/meminfo, or -1. */
static long long meminfo(const char *key)
{
	char line[256];
	size_t klen = strlen(key);
	long long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			v = strtoll(line + klen + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

/* 2 MiB pages the hugetlb pool can still give to a new mapping. */
static long long hugetlb_available(void)
{
	long long free_pages = meminfo("HugePages_Free");
	long long rsvd = meminfo("HugePages_Rsvd");

	if (free_pages < 0 || meminfo("Hugepagesize") != 2048)
		return 0;
	return free_pages - (rsvd > 0 ? rsvd : 0);
}

/* The smaps fields of the VMA that starts at @base. */
static void read_smaps(const void *base, struct smaps *sm)
{
	char line[512], head[32];
	bool in = false;
	FILE *f = fopen("/proc/self/smaps", "r");

	memset(sm, 0, sizeof(*sm));
	if (!f)
		return;
	snprintf(head, sizeof(head), "%lx-", (unsigned long)(uintptr_t)base);
	while (fgets(line, sizeof(line), f)) {
		char key[64];
		unsigned long long v;

		/* A VMA header is "start-end perms ...", a lower-case hex
		 * digit first; a field line starts "Key:" in capitals. */
		if (line[0] && strchr("0123456789abcdef", line[0])) {
			if (in)
				break;
			in = !strncmp(line, head, strlen(head));
			sm->found |= in;
			continue;
		}
		if (!in || sscanf(line, "%63[^:]: %llu", key, &v) != 2)
			continue;
		if (!strcmp(key, "Rss"))
			sm->rss_kib = v;
		else if (!strcmp(key, "AnonHugePages"))
			sm->anon_huge_kib = v;
		else if (!strcmp(key, "ShmemPmdMapped"))
			sm->shmem_pmd_kib = v;
		else if (!strcmp(key, "FilePmdMapped"))
			sm->file_pmd_kib = v;
		else if (!strcmp(key, "Shared_Hugetlb") ||
			 !strcmp(key, "Private_Hugetlb"))
			sm->hugetlb_kib += v;
	}
	fclose(f);
}

struct toucher {
	pthread_barrier_t *start;
	volatile uint8_t *p;
	uint64_t len;
};

static void *touch_thread(void *arg)
{
	struct toucher *t = arg;

	pthread_barrier_wait(t->start);
	for (uint64_t off = 0; off < t->len; off += PAGE_4K)
		t->p[off] = 1;
	return NULL;
}

static uint64_t minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)ru.ru_minflt;
}

/* Write a byte per 4 KiB page of @len bytes at @p with @n threads. */
static int touch(uint8_t *p, uint64_t len, unsigned int n, uint64_t *ns,
		 uint64_t *faults)
{
	pthread_t tid[MAX_LIST];
	struct toucher t[MAX_LIST];
	pthread_barrier_t start;
	uint64_t per = (len / n) & ~(HUGE_2M - 1), off = 0, t0, f0;
	unsigned int i;
	int err = 0;

	pthread_barrier_init(&start, NULL, n + 1);
	for (i = 0; i < n; i++) {
		t[i] = (struct toucher){ &start, p + off,
					 i + 1 == n ? len - off : per };
		off += per;
		err = pthread_create(&tid[i], NULL, touch_thread, &t[i]);
		if (err)
			break;
	}
	if (err) {
		/* Cannot happen short of resources; the barrier would hang. */
		fprintf(stderr, "pthread_create: %s\n", strerror(err));
		exit(1);
	}
	f0 = minflt();
	t0 = now_ns();
	pthread_barrier_wait(&start);
	for (i = 0; i < n; i++)
		pthread_join(tid[i], NULL);
	*ns = now_ns() - t0;
	*faults = minflt() - f0;
	pthread_barrier_destroy(&start);
	return 0;
}

/*
 * Touch and free @size bytes of THP anonymous memory, so that the trial
 * right after it gets guest-physical pages the hypervisor below has backed
 * (see the top of guest_ram_bench.sh: this host is a VM whose freed memory
 * goes back to its host).  Returns the time it took.
 */
static uint64_t prewarm(uint64_t size)
{
	uint64_t t0 = now_ns();
	volatile uint8_t *p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				   -1, 0);

	if (p == MAP_FAILED)
		return 0;
	madvise((void *)p, (size_t)size, MADV_HUGEPAGE);
	for (uint64_t off = 0; off < size; off += PAGE_4K)
		p[off] = 1;
	munmap((void *)p, (size_t)size);
	return now_ns() - t0;
}

static int kvm_fd = -1;

static int set_slots(int vm_fd, const struct guest_mem *mem, bool add)
{
	for (unsigned int i = 0; i < mem->nr_regions; i++) {
		const struct guest_region *r = &mem->regions[i];
		struct kvm_userspace_memory_region slot = {
			.slot = i,
			.guest_phys_addr = r->gpa,
			.memory_size = add ? r->size : 0,
			.userspace_addr = (uintptr_t)r->hva,
		};

		if (ioctl(vm_fd, KVM_SET_USER_MEMORY_REGION, &slot) < 0) {
			fprintf(stderr, "KVM_SET_USER_MEMORY_REGION slot %u: %s\n",
				i, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* One trial; 0, or -errno of guest_mem_init(), or -EIO (KVM refused). */
static int run_trial(int backend, uint64_t size, unsigned int threads,
		     bool warm, struct trial *tr)
{
	struct guest_mem mem;
	int vm_fd = -1, ret;
	uint64_t t0;

	memset(tr, 0, sizeof(*tr));
	if (warm)
		tr->prewarm_ns = prewarm(size);
	if (kvm_fd >= 0) {
		vm_fd = ioctl(kvm_fd, KVM_CREATE_VM, 0);
		if (vm_fd < 0) {
			fprintf(stderr, "KVM_CREATE_VM: %s\n", strerror(errno));
			return -EIO;
		}
	}
	t0 = now_ns();
	ret = guest_mem_init(&mem, size, backend, &x86_guest_layout);
	tr->setup_ns = now_ns() - t0;
	if (ret)
		goto out;
	if (vm_fd >= 0) {
		t0 = now_ns();
		ret = set_slots(vm_fd, &mem, true) ? -EIO : 0;
		tr->register_ns = now_ns() - t0;
		tr->slots = mem.nr_regions;
		if (ret) {
			guest_mem_destroy(&mem);
			goto out;
		}
	}
	touch(mem.base, mem.size, threads, &tr->touch_ns, &tr->minor_faults);
	read_smaps(mem.base, &tr->sm);
	if (vm_fd >= 0) {
		t0 = now_ns();
		ret = set_slots(vm_fd, &mem, false) ? -EIO : 0;
		tr->unregister_ns = now_ns() - t0;
	}
	t0 = now_ns();
	guest_mem_destroy(&mem);
	tr->teardown_ns = now_ns() - t0;
out:
	if (vm_fd >= 0)
		close(vm_fd);
	return ret;
}

static void emit_trial(int backend, uint64_t size, unsigned int threads,
		       unsigned int round, bool warmup, const struct trial *tr)
{
	uint64_t pages = size / PAGE_4K;
	uint64_t huge = tr->sm.anon_huge_kib + tr->sm.shmem_pmd_kib +
			tr->sm.file_pmd_kib + tr->sm.hugetlb_kib;
	double ns_page = (double)tr->touch_ns / (double)pages;
	double gib_s = (double)size / (1ull << 30) / ((double)tr->touch_ns / 1e9);
	char kvm[160];

	if (kvm_fd >= 0)
		snprintf(kvm, sizeof(kvm),
			 "\"kvm\":true,\"kvm_slots\":%u,\"kvm_register_ns\":%" PRIu64
			 ",\"kvm_unregister_ns\":%" PRIu64,
			 tr->slots, tr->register_ns, tr->unregister_ns);
	else
		snprintf(kvm, sizeof(kvm),
			 "\"kvm\":false,\"kvm_register_ns\":null,\"kvm_unregister_ns\":null");
	printf("BENCH-JSON {\"bench\":\"guest_ram\",\"backend\":\"%s\","
	       "\"size_mib\":%" PRIu64 ",\"threads\":%u,\"round\":%u,"
	       "\"warmup\":%s,\"prewarm_ns\":%" PRIu64 ","
	       "\"setup_ns\":%" PRIu64 ",%s,"
	       "\"touch_ns\":%" PRIu64 ",\"pages_4k\":%" PRIu64 ","
	       "\"touch_ns_per_4k\":%.2f,\"touch_gib_s\":%.3f,"
	       "\"minor_faults\":%" PRIu64 ",\"smaps_found\":%s,"
	       "\"rss_kib\":%" PRIu64 ",\"anon_huge_kib\":%" PRIu64 ","
	       "\"shmem_pmd_kib\":%" PRIu64 ",\"file_pmd_kib\":%" PRIu64 ","
	       "\"hugetlb_kib\":%" PRIu64 ",\"huge_kib\":%" PRIu64 ","
	       "\"huge_fraction\":%.4f,\"teardown_ns\":%" PRIu64 "}\n",
	       backend_name[backend], size >> 20, threads, round,
	       warmup ? "true" : "false", tr->prewarm_ns, tr->setup_ns, kvm,
	       tr->touch_ns,
	       pages, ns_page, gib_s, tr->minor_faults,
	       tr->sm.found ? "true" : "false", tr->sm.rss_kib,
	       tr->sm.anon_huge_kib, tr->sm.shmem_pmd_kib, tr->sm.file_pmd_kib,
	       tr->sm.hugetlb_kib, huge, (double)huge * 1024 / (double)size,
	       tr->teardown_ns);
	fflush(stdout);
	fprintf(stderr,
		"%-7s %5" PRIu64 " MiB %u thr round %u%s: setup %.3f ms, "
		"register %.3f ms, touch %.1f ms (%.1f ns/4K, %.2f GiB/s, "
		"%" PRIu64 " faults), huge %.0f%%, teardown %.3f ms\n",
		backend_name[backend], size >> 20, threads, round,
		warmup ? " (warm-up)" : "", tr->setup_ns / 1e6,
		tr->register_ns / 1e6, tr->touch_ns / 1e6, ns_page, gib_s,
		tr->minor_faults, 100.0 * (double)huge * 1024 / (double)size,
		tr->teardown_ns / 1e6);
}

static void emit_machine(const char *kvm_note)
{
	char thp[128], defrag[128], shmem[128], load[128], cpu[256] = "";
	char line[512];
	struct utsname u;
	FILE *f;

	uname(&u);
	read_line("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof(thp));
	read_line("/sys/kernel/mm/transparent_hugepage/defrag", defrag,
		  sizeof(defrag));
	read_line("/sys/kernel/mm/transparent_hugepage/shmem_enabled", shmem,
		  sizeof(shmem));
	read_line("/proc/loadavg", load, sizeof(load));
	f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
			snprintf(cpu, sizeof(cpu), "%s", strchr(line, ':') + 2);
			cpu[strcspn(cpu, "\n\"\\")] = '\0';
			break;
		}
	}
	if (f)
		fclose(f);
	printf("BENCH-JSON {\"bench\":\"guest_ram_machine\",\"kernel\":\"%s\","
	       "\"cpu\":\"%s\",\"cpus\":%ld,\"mem_total_kib\":%lld,"
	       "\"thp_enabled\":\"%s\",\"thp_defrag\":\"%s\","
	       "\"thp_shmem_enabled\":\"%s\",\"hugepages_2m_total\":%lld,"
	       "\"hugepages_2m_free\":%lld,\"kvm\":%s,\"kvm_note\":\"%s\","
	       "\"loadavg\":\"%s\"}\n",
	       u.release, cpu, sysconf(_SC_NPROCESSORS_ONLN),
	       meminfo("MemTotal"), thp, defrag, shmem,
	       meminfo("HugePages_Total"), meminfo("HugePages_Free"),
	       kvm_fd >= 0 ? "true" : "false", kvm_note, load);
	fflush(stdout);
}

static void emit_skip(int backend, uint64_t size, const char *why)
{
	printf("BENCH-JSON {\"bench\":\"guest_ram_skip\",\"backend\":\"%s\","
	       "\"size_mib\":%" PRIu64 ",\"reason\":\"%s\"}\n",
	       backend_name[backend], size >> 20, why);
	fflush(stdout);
	fprintf(stderr, "%s %" PRIu64 " MiB skipped: %s\n", backend_name[backend],
		size >> 20, why);
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	switch (*end) {
	case 'G': case 'g': v <<= 30; end++; break;
	case 'M': case 'm': v <<= 20; end++; break;
	case 'K': case 'k': v <<= 10; end++; break;
	default: break;
	}
	if (*end || v == 0 || v % HUGE_2M)
		return -1;
	*out = v;
	return 0;
}

/* Comma-separated @arg into up to MAX_LIST items via @one. */
static int parse_list(char *arg, unsigned int *n,
		      int (*one)(const char *, void *, unsigned int), void *out)
{
	*n = 0;
	for (char *tok = strtok(arg, ","); tok; tok = strtok(NULL, ",")) {
		if (*n == MAX_LIST || one(tok, out, *n))
			return -1;
		(*n)++;
	}
	return *n ? 0 : -1;
}

static int one_size(const char *s, void *out, unsigned int i)
{
	return parse_size(s, &((uint64_t *)out)[i]);
}

static int one_thread(const char *s, void *out, unsigned int i)
{
	int v = atoi(s);

	if (v < 1 || v > MAX_LIST)
		return -1;
	((unsigned int *)out)[i] = (unsigned int)v;
	return 0;
}

static int one_backend(const char *s, void *out, unsigned int i)
{
	for (int b = 0; b < 3; b++) {
		if (!strcmp(s, backend_name[b])) {
			((int *)out)[i] = b;
			return 0;
		}
	}
	return -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: guest_ram_bench [--rounds R] [--warmup] "
			"[--sizes 512M,2G] [--threads 1,2]\n"
			"       [--backends anon,memfd,hugetlb] [--no-kvm] "
			"[--no-prewarm]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = { .rounds = 5, .kvm = true, .prewarm = true };
	char def_sizes[] = "512M,2G", def_threads[] = "1,2",
	     def_backends[] = "anon,memfd,hugetlb";
	char *sizes = def_sizes, *threads = def_threads, *backends = def_backends;
	const char *kvm_note = "KVM_SET_USER_MEMORY_REGION timed";
	bool skipped[MAX_LIST] = { false };
	int fails = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--warmup"))
			o.warmup = true;
		else if (!strcmp(a, "--no-kvm"))
			o.kvm = false;
		else if (!strcmp(a, "--no-prewarm"))
			o.prewarm = false;
		else if (i + 1 == argc)
			usage();
		else if (!strcmp(a, "--rounds"))
			o.rounds = (unsigned int)atoi(argv[++i]);
		else if (!strcmp(a, "--sizes"))
			sizes = argv[++i];
		else if (!strcmp(a, "--threads"))
			threads = argv[++i];
		else if (!strcmp(a, "--backends"))
			backends = argv[++i];
		else
			usage();
	}
	if (o.rounds < 1 ||
	    parse_list(sizes, &o.nr_sizes, one_size, o.sizes) ||
	    parse_list(threads, &o.nr_threads, one_thread, o.threads) ||
	    parse_list(backends, &o.nr_backends, one_backend, o.backends))
		usage();

	if (!o.kvm) {
		kvm_note = "skipped: --no-kvm";
	} else {
		kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
		if (kvm_fd < 0) {
			kvm_note = "skipped: /dev/kvm does not open";
		} else {
			int vm = ioctl(kvm_fd, KVM_CREATE_VM, 0);

			if (vm < 0) {
				kvm_note = "skipped: KVM_CREATE_VM fails";
				close(kvm_fd);
				kvm_fd = -1;
			} else {
				close(vm);
			}
		}
	}
	emit_machine(kvm_note);

	for (unsigned int r = o.warmup ? 0 : 1; r <= o.rounds; r++) {
		for (unsigned int s = 0; s < o.nr_sizes; s++) {
			for (unsigned int t = 0; t < o.nr_threads; t++) {
				for (unsigned int k = 0; k < o.nr_backends; k++) {
					unsigned int bi = (k + r) % o.nr_backends;
					int b = o.backends[bi];
					uint64_t size = o.sizes[s];
					struct trial tr;
					int ret;

					if (b == GUEST_MEM_HUGETLB &&
					    hugetlb_available() <
						    (long long)(size / HUGE_2M)) {
						if (!skipped[s])
							emit_skip(b, size,
								  "too few free 2 MiB pages in /proc/sys/vm/nr_hugepages");
						skipped[s] = true;
						continue;
					}
					ret = run_trial(b, size, o.threads[t],
							o.prewarm, &tr);
					if (ret) {
						fprintf(stderr, "%s %" PRIu64 " MiB: %s\n",
							backend_name[b], size >> 20,
							strerror(-ret));
						fails++;
						continue;
					}
					emit_trial(b, size, o.threads[t], r, r == 0, &tr);
				}
			}
		}
	}
	if (kvm_fd >= 0)
		close(kvm_fd);
	return fails ? 1 : 0;
}
