/* SPDX-License-Identifier: MIT */
/*
 * footprint_preload.so - LD_PRELOAD probe: CPU time from exec to the first
 * KVM_RUN, for any VMM that calls ioctl(2) through libc.
 *
 * On the first ioctl(fd, KVM_RUN) of the process it reads
 * CLOCK_PROCESS_CPUTIME_ID (user + system time of all threads since the
 * process began: the dynamic loader, argument parsing, image loading, KVM
 * setup) and CLOCK_REALTIME, appends one line
 *     first_kvm_run cpu_ns=<n> realtime_ns=<n> exec_cpu_ns=<n> exec_realtime_ns=<n> pid=<pid>
 * to the file named by $FOOTPRINT_OUT, and forwards the call.  Every other
 * ioctl costs one predictable branch.  footprint_exec passes the CPU time
 * and wall clock it read just before execve(2) (FOOTPRINT_EXEC_CPU_NS,
 * FOOTPRINT_EXEC_REALTIME_NS); they are printed as exec_cpu_ns and
 * exec_realtime_ns for the caller to subtract.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int (*ioctl_fn)(int, unsigned long, ...);

static atomic_int seen;
static int out_fd = -1;

/* Open the output at load time: by the first KVM_RUN the VMM may have
 * confined its threads with seccomp (minivmm allows write(2) and
 * clock_gettime(2) there, not open(2)). */
__attribute__((constructor)) static void probe_init(void)
{
	const char *path = getenv("FOOTPRINT_OUT");

	if (path)
		out_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

static unsigned long long ts_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void record(void)
{
	unsigned long long cpu = ts_ns(CLOCK_PROCESS_CPUTIME_ID);
	unsigned long long real = ts_ns(CLOCK_REALTIME);
	char line[256];
	int len;
	const char *e_cpu = getenv("FOOTPRINT_EXEC_CPU_NS");
	const char *e_real = getenv("FOOTPRINT_EXEC_REALTIME_NS");
	unsigned long long cpu0 = e_cpu ? strtoull(e_cpu, NULL, 10) : 0;
	unsigned long long real0 = e_real ? strtoull(e_real, NULL, 10) : 0;

	if (out_fd < 0)
		return;
	len = snprintf(line, sizeof(line),
		       "first_kvm_run cpu_ns=%llu realtime_ns=%llu exec_cpu_ns=%llu exec_realtime_ns=%llu pid=%d\n",
		       cpu, real, cpu0, real0, (int)getpid());
	if (write(out_fd, line, (size_t)len) < 0) {
		/* nothing to do: the measurement is simply missing */
	}
}

/*
 * The interposer: exported as the symbol "ioctl" (what the dynamic linker
 * binds the VMM's calls to), under a C name of its own so that readers and
 * tools of the source do not take it for the ioctl(2) the library calls.
 */
int fp_ioctl(int fd, unsigned long req, ...) __asm__("ioctl");
int fp_ioctl(int fd, unsigned long req, ...)
{
	static ioctl_fn real_ioctl;
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (__builtin_expect(req == KVM_RUN, 0) && atomic_exchange(&seen, 1) == 0)
		record();
	if (!real_ioctl)
		real_ioctl = (ioctl_fn)dlsym(RTLD_NEXT, "ioctl");
	return real_ioctl(fd, req, arg);
}
