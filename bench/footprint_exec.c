/* SPDX-License-Identifier: MIT */
/*
 * footprint_exec - run a VMM with the footprint_preload.so probe.
 *
 * usage: footprint_exec PRELOAD.so OUTFILE CMD [ARGS...]
 *
 * Sets LD_PRELOAD=PRELOAD.so and FOOTPRINT_OUT=OUTFILE, then reads this
 * process's CPU time and the wall clock as the very last thing before
 * execve(2) and passes them on as FOOTPRINT_EXEC_CPU_NS and
 * FOOTPRINT_EXEC_REALTIME_NS, so the probe reports CPU and wall time from
 * exec to the first KVM_RUN (the exec'd process keeps this PID and its CPU
 * counters, which is why the time spent before exec must be subtracted).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned long long ts_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	char cpu[32], real[32];

	if (argc < 4) {
		fprintf(stderr, "usage: %s PRELOAD.so OUTFILE CMD [ARGS...]\n", argv[0]);
		return 2;
	}
	if (setenv("LD_PRELOAD", argv[1], 1) || setenv("FOOTPRINT_OUT", argv[2], 1)) {
		perror("setenv");
		return 127;
	}
	snprintf(real, sizeof(real), "%llu", ts_ns(CLOCK_REALTIME));
	snprintf(cpu, sizeof(cpu), "%llu", ts_ns(CLOCK_PROCESS_CPUTIME_ID));
	if (setenv("FOOTPRINT_EXEC_REALTIME_NS", real, 1) ||
	    setenv("FOOTPRINT_EXEC_CPU_NS", cpu, 1)) {
		perror("setenv");
		return 127;
	}
	execvp(argv[3], argv + 3);
	perror(argv[3]);
	return 127;
}
