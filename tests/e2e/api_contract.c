/*
 * api_contract KERNEL INITRD: the public API's limits and its extensible
 * statistics structs, on real KVM through the shared library (exits 77
 * without /dev/kvm).
 *  - Limits checked up front: num_queues above VMM_MAX_DISK_QUEUES is
 *    -EINVAL, queues beyond VMM_MAX_QUEUES over all disks -ENOSPC at
 *    vmm_add_disk(); disks left at the default share what is left.
 *  - A FIFO as kernel, initrd or disk image (read-only or not) fails
 *    vmm_start() with -EINVAL at once, where an open() used to block it
 *    forever (an alarm turns a hang into a failure here).
 *  - Statistics: a caller built against the first published structs
 *    (VMM_*_STATS_SIZE_VER0) still works and gets struct_size back as what
 *    was filled; a smaller size is -EINVAL; a larger struct is filled up
 *    to the library's size and no further; after a guest that probes its
 *    disk, the new counters are filled (doorbells >= wake-ups > 0).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <unistd.h>

#include <vmm/vmm.h>

static int failures;

#define CHECK(cond, ...)                                                     \
	do {                                                                 \
		if (!(cond)) {                                               \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);          \
			printf(__VA_ARGS__);                                 \
			printf("\n");                                        \
			failures++;                                          \
		}                                                            \
	} while (0)

static const char *kernel, *initrd;
static char dir[64];

static struct vmm *new_vm(unsigned int vcpus)
{
	struct vmm *vm = NULL;
	int ret = vmm_create(&vm);

	CHECK(ret == 0, "vmm_create: %d", ret);
	if (ret)
		exit(1);
	CHECK(vmm_set_vcpus(vm, vcpus) == 0, "set_vcpus %u", vcpus);
	return vm;
}

static int add_disk(struct vmm *vm, const char *path, unsigned int nq,
		    uint32_t flags)
{
	struct vmm_disk_config dc = {
		.struct_size = sizeof(dc), .path = path, .fd = -1,
		.num_queues = (uint16_t)nq, .flags = flags | VMM_DISK_NO_LOCK,
	};

	return vmm_add_disk(vm, &dc, NULL);
}

static void queue_limits(const char *img)
{
	struct vmm_disk_stats st = { .struct_size = sizeof(st) };
	struct vmm *vm = new_vm(1);
	int ret;

	CHECK(add_disk(vm, img, VMM_MAX_DISK_QUEUES + 1, 0) == -EINVAL,
	      "num_queues %d accepted", VMM_MAX_DISK_QUEUES + 1);
	CHECK(add_disk(vm, img, 65535, 0) == -EINVAL, "num_queues 65535 accepted");
	for (int i = 0; i < 3; i++)
		CHECK(add_disk(vm, img, VMM_MAX_DISK_QUEUES, 0) == 0, "disk %d", i);
	ret = add_disk(vm, img, VMM_MAX_DISK_QUEUES, 0);
	CHECK(ret == -ENOSPC, "4 x 1024 queues: %d, not -ENOSPC", ret);
	ret = add_disk(vm, img, VMM_MAX_QUEUES - 3 * VMM_MAX_DISK_QUEUES, 0);
	CHECK(ret == 0, "exactly VMM_MAX_QUEUES queues: %d", ret);
	ret = add_disk(vm, img, 0, 0);
	CHECK(ret == -ENOSPC, "one more (default) disk: %d, not -ENOSPC", ret);
	vmm_destroy(vm);

	/* 3 x 1024 explicit queues leave 984 for 20 default disks: 49 each
	 * instead of one per vCPU (100). */
	vm = new_vm(100);
	for (int i = 0; i < 3; i++)
		CHECK(add_disk(vm, img, VMM_MAX_DISK_QUEUES, 0) == 0, "disk %d", i);
	for (int i = 0; i < 20; i++)
		CHECK(add_disk(vm, img, 0, VMM_DISK_READONLY) == 0, "default disk %d", i);
	CHECK(vmm_get_disk_stats(vm, 5, &st) == 0 && st.num_queues == 49,
	      "default disk gets %u queues, expected 49", st.num_queues);
	CHECK(vmm_get_disk_stats(vm, 1, &st) == 0 && st.num_queues == 1024,
	      "explicit disk gets %u queues", st.num_queues);
	vmm_destroy(vm);
	printf("limits: num_queues > %d -EINVAL, > %d in all -ENOSPC, defaults "
	       "shrink to fit: ok\n", VMM_MAX_DISK_QUEUES, VMM_MAX_QUEUES);
}

/* Too few file descriptors for the queues' eventfds: vmm_start() says
 * -EMFILE before anything runs (not a device reset at the guest's
 * DRIVER_OK), and the VM can start once the limit is raised. */
static void fd_limit(const char *img)
{
	struct rlimit old, low;
	struct vmm *vm = new_vm(4);
	int ret;

	CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0, "getrlimit");
	for (int i = 0; i < 8; i++)
		CHECK(add_disk(vm, img, 64, VMM_DISK_READONLY) == 0, "disk %d", i);
	CHECK(vmm_set_kernel(vm, kernel, initrd, "console=ttyS0") == 0, "kernel");
	low = old;
	low.rlim_cur = 512; /* 8 x 64 queues need over 1,000 */
	CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0, "setrlimit");
	ret = vmm_start(vm);
	CHECK(ret == -EMFILE, "512 descriptors for 512 queues: %d, not -EMFILE", ret);
	CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0, "setrlimit back");
	if (old.rlim_cur >= 2048) {
		ret = vmm_start(vm);
		CHECK(ret == 0, "start after raising the limit: %d", ret);
		if (!ret) {
			int reason;

			CHECK(vmm_stop(vm) == 0, "stop");
			CHECK(vmm_wait(vm, &reason) == 0, "wait");
		}
	}
	vmm_destroy(vm);
	printf("fd limit: -EMFILE at vmm_start, then a start: ok\n");
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "FAIL: vmm_start() blocked on a FIFO\n";

	(void)!write(1, msg, sizeof(msg) - 1);
	_exit(1);
}

static void fifos(const char *img)
{
	char fifo[96];
	struct vmm *vm;
	int ret;

	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
	signal(SIGALRM, on_alarm);
	alarm(120);
	vm = new_vm(1);
	CHECK(vmm_set_console(vm, -1, -1) == 0, "console");
	CHECK(vmm_set_kernel(vm, fifo, NULL, NULL) == 0, "set_kernel");
	ret = vmm_start(vm);
	CHECK(ret == -EINVAL, "FIFO kernel: %d", ret);
	CHECK(vmm_set_kernel(vm, kernel, fifo, NULL) == 0, "set_kernel");
	ret = vmm_start(vm);
	CHECK(ret == -EINVAL, "FIFO initrd: %d", ret);
	CHECK(vmm_set_kernel(vm, kernel, initrd, NULL) == 0, "set_kernel");
	CHECK(add_disk(vm, fifo, 1, VMM_DISK_READONLY) == 0, "add FIFO disk");
	ret = vmm_start(vm);
	CHECK(ret == -EINVAL, "read-only FIFO disk: %d", ret);
	vmm_destroy(vm);
	vm = new_vm(1);
	CHECK(vmm_set_console(vm, -1, -1) == 0, "console");
	CHECK(vmm_set_kernel(vm, kernel, initrd, NULL) == 0, "set_kernel");
	CHECK(add_disk(vm, img, 1, 0) == 0, "add disk");
	CHECK(add_disk(vm, fifo, 1, 0) == 0, "add FIFO disk");
	ret = vmm_start(vm);
	CHECK(ret == -EINVAL, "writable FIFO disk: %d", ret);
	vmm_destroy(vm);
	alarm(0);
	unlink(fifo);
	printf("FIFO as kernel, initrd, disk (ro and rw): refused at once: ok\n");
}

/* struct_size: what an old caller, a too-small one and a newer one get. */
static void stats_sizes(struct vmm *vm, int started)
{
	struct {
		struct vmm_disk_stats st;
		uint8_t newer[64];
	} big;
	struct vmm_disk_stats st;
	struct vmm_kvm_stats ks;
	int ret;

	memset(&st, 0xa5, sizeof(st));
	st.struct_size = VMM_DISK_STATS_SIZE_VER0;
	ret = vmm_get_disk_stats(vm, 0, &st);
	CHECK(ret == 0, "disk stats, old size: %d", ret);
	CHECK(st.struct_size == VMM_DISK_STATS_SIZE_VER0, "old size: %u filled",
	      st.struct_size);
	CHECK(st.num_queues == 1, "old size: num_queues %u", st.num_queues);
	CHECK(st.doorbells == 0xa5a5a5a5a5a5a5a5ull, "old size: wrote past it");
	st.struct_size = VMM_DISK_STATS_SIZE_VER0 - 8;
	CHECK(vmm_get_disk_stats(vm, 0, &st) == -EINVAL, "smaller than VER0");
	st.struct_size = 0;
	CHECK(vmm_get_disk_stats(vm, 0, &st) == -EINVAL, "size 0");

	memset(&big, 0x5a, sizeof(big));
	big.st.struct_size = sizeof(big);
	ret = vmm_get_disk_stats(vm, 0, &big.st);
	CHECK(ret == 0 && big.st.struct_size == sizeof(struct vmm_disk_stats),
	      "newer caller: %d, %u filled", ret, big.st.struct_size);
	CHECK(big.newer[0] == 0x5a && big.newer[63] == 0x5a,
	      "newer caller: bytes past the library's struct written");

	ks.struct_size = VMM_KVM_STATS_SIZE_VER0 - 1;
	CHECK(vmm_get_kvm_stats(vm, &ks) == -EINVAL, "kvm stats below VER0");
	ks.struct_size = VMM_KVM_STATS_SIZE_VER0;
	ret = vmm_get_kvm_stats(vm, &ks);
	if (!started) {
		CHECK(ret == -EBUSY, "kvm stats, old size, before start: %d", ret);
	} else {
		CHECK(ret == 0 || ret == -ENOTSUP, "kvm stats, old size: %d", ret);
		if (!ret)
			CHECK(ks.struct_size == VMM_KVM_STATS_SIZE_VER0 && ks.exits > 0,
			      "kvm stats, old size: %u bytes, %llu exits",
			      ks.struct_size, (unsigned long long)ks.exits);
	}
}

static void boot_and_stats(const char *img)
{
	struct vmm_disk_stats st = { .struct_size = sizeof(st) };
	char cmd[] = "console=ttyS0 reboot=k panic=-1 pci=conf1,noearly quiet guest.run=smoke";
	struct vmm *vm = new_vm(1);
	int reason = -1, ret;

	CHECK(vmm_set_memory(vm, 256ull << 20) == 0, "memory");
	CHECK(vmm_set_kernel(vm, kernel, initrd, cmd) == 0, "kernel");
	CHECK(vmm_set_console(vm, -1, -1) == 0, "console");
	CHECK(add_disk(vm, img, 1, 0) == 0, "disk");
	stats_sizes(vm, 0);
	ret = vmm_start(vm);
	CHECK(ret == 0, "start: %d", ret);
	if (ret) {
		vmm_destroy(vm);
		return;
	}
	{
		struct pollfd p = { .fd = vmm_get_exit_eventfd(vm), .events = POLLIN };

		CHECK(poll(&p, 1, 600 * 1000) == 1, "the guest never exited");
	}
	CHECK(vmm_wait(vm, &reason) == 0 && reason == VMM_EXIT_GUEST_RESET,
	      "exit reason %d", reason);
	stats_sizes(vm, 1);
	ret = vmm_get_disk_stats(vm, 0, &st);
	CHECK(ret == 0 && st.struct_size == sizeof(st), "disk stats: %d", ret);
	printf("disk stats: %llu reads, %llu doorbells, %llu wake-ups, %llu "
	       "interrupts (%llu direct), %llu config interrupts, %llu route "
	       "flushes (%llu lazy), longest DRIVER_OK %llu ns\n",
	       (unsigned long long)st.total.requests[VMM_REQ_READ],
	       (unsigned long long)st.doorbells,
	       (unsigned long long)st.total.kicks,
	       (unsigned long long)st.total.interrupts,
	       (unsigned long long)st.interrupts_direct,
	       (unsigned long long)st.config_interrupts,
	       (unsigned long long)st.route_flushes,
	       (unsigned long long)st.route_flushes_lazy,
	       (unsigned long long)st.driver_ok_ns_max);
	CHECK(st.total.requests[VMM_REQ_READ] > 0, "Linux read nothing from the disk");
	CHECK(st.total.kicks > 0 && st.doorbells >= st.total.kicks,
	      "doorbells %llu, wake-ups %llu", (unsigned long long)st.doorbells,
	      (unsigned long long)st.total.kicks);
	CHECK(st.route_flushes_lazy <= st.route_flushes, "lazy flushes");
	/* The driver reached DRIVER_OK (it read the disk), which takes a
	 * wiring transaction: never 0 ns. */
	CHECK(st.driver_ok_ns_max > 0, "no DRIVER_OK time recorded");
	vmm_destroy(vm);
}

int main(int argc, char **argv)
{
	char img[96];
	int fd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (access("/dev/kvm", R_OK | W_OK)) {
		printf("SKIP: no usable /dev/kvm\n");
		return 77;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: %s KERNEL INITRD\n", argv[0]);
		return 2;
	}
	kernel = argv[1];
	initrd = argv[2];
	snprintf(dir, sizeof(dir), "%s/api_contract.XXXXXX",
		 getenv("RIG_SCRATCH") ? getenv("RIG_SCRATCH") : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(img, sizeof(img), "%s/disk.img", dir);
	fd = open(img, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, 8 << 20) < 0) {
		perror(img);
		return 1;
	}
	close(fd);

	queue_limits(img);
	fd_limit(img);
	fifos(img);
	boot_and_stats(img);

	unlink(img);
	rmdir(dir);
	printf("%s: %d failures\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
