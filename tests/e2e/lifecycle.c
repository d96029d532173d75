/*
 * lifecycle KERNEL INITRD: the public API's lifecycle on real KVM, through
 * the shared library like any embedder: two VMs in one process boot side by
 * side; configuration after start is -EBUSY; vmm_stop() from another thread
 * ends a running VM; a failed start leaves the VM configurable and a retry
 * works; KVM statistics are readable.  Exits 77 without /dev/kvm.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* A VM with 1 vCPU whose console goes to a temp file (returned in *out_fd). */
static struct vmm *make_vm(const char *run, int *out_fd)
{
	char path[] = "/tmp/lifecycle-console.XXXXXX", cmd[256];
	struct vmm *vm = NULL;
	int fd = mkstemp(path), ret;

	if (fd < 0)
		return NULL;
	unlink(path);
	snprintf(cmd, sizeof(cmd), "console=ttyS0 reboot=k panic=-1 pci=conf1,noearly quiet guest.run=%s", run);
	ret = vmm_create(&vm);
	CHECK(ret == 0, "vmm_create: %d", ret);
	if (ret) {
		close(fd);
		return NULL;
	}
	CHECK(vmm_set_vcpus(vm, 1) == 0, "set_vcpus");
	CHECK(vmm_set_memory(vm, 256ull << 20) == 0, "set_memory");
	CHECK(vmm_set_kernel(vm, kernel, initrd, cmd) == 0, "set_kernel");
	CHECK(vmm_set_console(vm, -1, fd) == 0, "set_console");
	*out_fd = fd;
	return vm;
}

static int console_has(int fd, const char *what)
{
	char buf[1 << 16];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The console may hold NULs from the early boot: search piecewise. */
	for (ssize_t off = 0; off < n; off += (ssize_t)strlen(buf + off) + 1)
		if (strstr(buf + off, what))
			return 1;
	return 0;
}

static void *stopper(void *arg)
{
	usleep(300 * 1000);
	CHECK(vmm_stop(arg) == 0, "vmm_stop from another thread");
	return NULL;
}

int main(int argc, char **argv)
{
	struct vmm_kvm_stats ks = { .struct_size = sizeof(ks) };
	struct vmm_disk_config dc = { .struct_size = sizeof(dc), .path = "/dev/null" };
	struct vmm *a, *b, *c;
	int fa, fb, fc, ra = -1, rb = -1, rc = -1, ret;
	pthread_t th;

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

	/* Two VMs in one process, running at the same time. */
	a = make_vm("smoke", &fa);
	b = make_vm("smoke", &fb);
	if (!a || !b)
		return 1;
	CHECK(vmm_start(a) == 0, "start a");
	CHECK(vmm_start(b) == 0, "start b");
	CHECK(vmm_set_vcpus(a, 2) == -EBUSY, "set_vcpus after start");
	CHECK(vmm_set_memory(a, 512ull << 20) == -EBUSY, "set_memory after start");
	CHECK(vmm_set_kernel(a, kernel, NULL, NULL) == -EBUSY, "set_kernel after start");
	CHECK(vmm_set_console(a, -1, -1) == -EBUSY, "set_console after start");
	CHECK(vmm_add_disk(a, &dc, NULL) == -EBUSY, "add_disk after start");
	CHECK(vmm_start(a) == -EBUSY, "second start");
	{
		struct pollfd p = { .fd = vmm_get_exit_eventfd(a), .events = POLLIN };

		CHECK(poll(&p, 1, 600 * 1000) == 1, "exit eventfd of a never fired");
	}
	CHECK(vmm_wait(a, &ra) == 0 && ra == VMM_EXIT_GUEST_RESET,
	      "a: exit reason %d (%s)", ra, vmm_exit_reason_str(ra));
	CHECK(vmm_wait(b, &rb) == 0 && rb == VMM_EXIT_GUEST_RESET,
	      "b: exit reason %d (%s)", rb, vmm_exit_reason_str(rb));
	CHECK(vmm_wait(a, &ra) == 0 && ra == VMM_EXIT_GUEST_RESET, "second wait");
	ret = vmm_get_kvm_stats(a, &ks);
	CHECK(ret == 0 || ret == -ENOTSUP, "kvm stats: %d", ret);
	if (!ret)
		CHECK(ks.exits > 0 && ks.nr_vcpus == 1, "kvm stats: %llu exits",
		      (unsigned long long)ks.exits);
	{
		struct vmm_console_stats cs = { .struct_size = sizeof(cs) };
		off_t len = lseek(fa, 0, SEEK_END);

		CHECK(vmm_get_console_stats(a, &cs) == 0, "console stats");
		CHECK(cs.bytes_out > 0 && cs.bytes_out == (uint64_t)len &&
			      cs.bytes_dropped == 0,
		      "console stats: %llu bytes out, %llu dropped, file %lld",
		      (unsigned long long)cs.bytes_out,
		      (unsigned long long)cs.bytes_dropped, (long long)len);
	}
	CHECK(console_has(fa, "MINIVMM-PAYLOAD-EXIT=0"), "a's guest did not run its payload");
	CHECK(console_has(fb, "MINIVMM-PAYLOAD-EXIT=0"), "b's guest did not run its payload");
	vmm_destroy(a);
	vmm_destroy(b);
	printf("two VMs in one process: both booted and reset (%llu exits in a)\n",
	       (unsigned long long)ks.exits);

	/* A failed start leaves the VM in CONFIG; a retry works; vmm_stop()
	 * from another thread ends it. */
	c = make_vm("shell", &fc); /* waits for console input that never comes */
	if (!c)
		return 1;
	CHECK(vmm_set_kernel(c, "/nonexistent/bzImage", NULL, NULL) == 0, "set bad kernel");
	ret = vmm_start(c);
	CHECK(ret == -ENOENT, "start with a missing kernel: %d", ret);
	CHECK(vmm_stop(c) == -EBUSY, "stop before start");
	CHECK(vmm_set_kernel(c, kernel, initrd,
			     "console=ttyS0 reboot=k panic=-1 quiet guest.run=shell") == 0,
	      "set good kernel");
	CHECK(vmm_start(c) == 0, "retry start");
	pthread_create(&th, NULL, stopper, c);
	CHECK(vmm_wait(c, &rc) == 0 && rc == VMM_EXIT_STOPPED,
	      "c: exit reason %d (%s)", rc, vmm_exit_reason_str(rc));
	pthread_join(th, NULL);
	vmm_destroy(c);
	printf("failed start, retry, vmm_stop from another thread: ok\n");

	printf("%s: %d failures\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
