/* SPDX-License-Identifier: MIT */
/*
 * What happens when a confined thread makes a call its allow-list refuses
 * (VMM_SECCOMP_KILL): one line on stderr naming the thread, its class and
 * the system call (name and number), then the process ends exactly as with
 * SECCOMP_RET_KILL_PROCESS: killed by SIGSYS (exit status 159 in a shell).
 *
 * Mechanism: the filters answer SECCOMP_RET_TRAP with SANDBOX_TRAP_DATA in
 * the data bits (sandbox.c), so the kernel skips the call and sends SIGSYS
 * to the thread with si_code SYS_SECCOMP, si_errno SANDBOX_TRAP_DATA,
 * si_syscall and si_arch.  The handler below runs on that thread, under the
 * same filter, so it only uses calls every list allows (gettid, and the
 * log sink's non-blocking write to stderr: write, sendto, poll) and memory
 * that needs no allocation.  It then makes one more refused call
 * (seccomp(), on no list) while SIGSYS is blocked (the kernel blocks it for
 * the handler's duration): for a trapped call with the signal blocked the
 * kernel resets SIGSYS to SIG_DFL, unblocks and delivers it, and the
 * default action ends the whole process with a core dump, as
 * KILL_PROCESS does.  A thread taken over by an attacker cannot turn this
 * into a survivable error: rt_sigaction is refused (it would trap), and
 * blocking SIGSYS only makes the kernel use SIG_DFL directly.
 *
 * Why not SECCOMP_RET_USER_NOTIF: the listener would have to run outside
 * the filter, i.e. another process or an unconfined thread of this one
 * doing the judging; a log line needs neither.
 *
 * The handler is process-wide (a disposition) and installed only when
 * SIGSYS has the default disposition (sandbox_trap_ready()); an
 * embedder's own SIGSYS handler is never replaced: then the filters use
 * SECCOMP_RET_KILL_PROCESS, silent as before.  A SIGSYS that is not one of
 * our traps (another filter's trap, kill -SYS) gets what SIG_DFL would do.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "sandbox-trap.h"

#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1 /* si_code of a seccomp trap */
#endif

/*
 * The calling thread, as recorded by sandbox_trap_thread() before it
 * confined itself.  initial-exec TLS: read by the handler without
 * __tls_get_addr (which may allocate for a dlopen()ed library).
 */
static __thread struct {
	char name[16];
	const char *cls; /* the allow-list's name (static storage) */
	bool set;
} self __attribute__((tls_model("initial-exec")));

/*
 * System call names for the report, resolved once per process by
 * libseccomp (which allocates: not possible in the handler) into static
 * storage, immutable afterwards.  Shared by all VMs of the process.
 */
#define NAMES_NR 512 /* x86-64 and arm64 numbers are below this */
static char names_buf[8192];
static uint16_t names_off[NAMES_NR]; /* 1 + offset into names_buf; 0: none */
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void names_init(void)
{
	size_t used = 0;

	for (int nr = 0; nr < NAMES_NR; nr++) {
		char *s = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
		size_t n;

		if (!s)
			continue;
		n = strlen(s) + 1;
		if (used + n <= sizeof(names_buf)) {
			memcpy(names_buf + used, s, n);
			names_off[nr] = (uint16_t)(used + 1);
			used += n;
		}
		free(s);
	}
}

/* ---- async-signal-safe line building ------------------------------------ */

struct line {
	char buf[256];
	size_t len;
};

static void put(struct line *l, const char *s)
{
	while (*s && l->len < sizeof(l->buf) - 1)
		l->buf[l->len++] = *s++;
}

static void put_uint(struct line *l, unsigned long v, unsigned int base)
{
	char tmp[24];
	int i = 0;

	do {
		tmp[i++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v && i < (int)sizeof(tmp));
	while (i > 0 && l->len < sizeof(l->buf) - 1)
		l->buf[l->len++] = tmp[--i];
}

/* seccomp_arch_native(): the build's audit arch (AUDIT_ARCH_X86_64,
 * AUDIT_ARCH_AARCH64; libseccomp's tokens are the audit values), a
 * constant read: fine in the handler. */
static const char *syscall_name(const siginfo_t *si)
{
	if (si->si_arch != seccomp_arch_native() || si->si_syscall < 0 ||
	    si->si_syscall >= NAMES_NR || !names_off[si->si_syscall])
		return NULL;
	return names_buf + names_off[si->si_syscall] - 1;
}

/* Build the report for @si (a trap of ours) on the calling thread. */
size_t sandbox_trap_format(const siginfo_t *si, char *out, size_t size)
{
	struct line l = { .len = 0 };
	const char *name = syscall_name(si);

	put(&l, "libvmm: seccomp: thread ");
	put(&l, self.set ? self.name : "?");
	put(&l, " (tid ");
	put_uint(&l, (unsigned long)syscall(SYS_gettid), 10);
	if (self.set) {
		put(&l, ", ");
		put(&l, self.cls);
		put(&l, " allow-list");
	}
	put(&l, ") made system call ");
	put(&l, name ? name : "?");
	put(&l, " (");
	put_uint(&l, (unsigned long)(unsigned int)si->si_syscall, 10);
	if (si->si_arch != seccomp_arch_native()) {
		put(&l, ", arch 0x");
		put_uint(&l, si->si_arch, 16);
	}
	put(&l, "), which its list refuses: ending the process (SIGSYS)\n");
	if (size) {
		size_t n = l.len < size - 1 ? l.len : size - 1;

		memcpy(out, l.buf, n);
		out[n] = '\0';
	}
	return l.len;
}

/* Ends the process by SIGSYS; called with SIGSYS blocked (in the handler). */
static void die_by_sigsys(void)
{
	unsigned int act = SECCOMP_RET_KILL_PROCESS;

	/* Trapped by every list (seccomp() is on none): the kernel forces
	 * SIG_DFL on the blocked SIGSYS and the process dumps core. */
	syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &act);
	/* Only if some filter let seccomp() through. */
	syscall(SYS_exit_group, 128 + SIGSYS);
}

static void sigsys_handler(int sig, siginfo_t *si, void *uctx)
{
	char buf[256];
	size_t len;

	(void)uctx;
	if (si->si_code != SYS_SECCOMP || si->si_errno != SANDBOX_TRAP_DATA) {
		/* Not ours: what the default disposition would do.  (On a
		 * confined thread sigaction() itself traps, with the same
		 * end.)  raise() leaves it pending until the handler returns. */
		struct sigaction dfl;

		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigaction(sig, &dfl, NULL);
		raise(sig);
		return;
	}
	len = sandbox_trap_format(si, buf, sizeof(buf));
	if (len > sizeof(buf) - 1)
		len = sizeof(buf) - 1;
	/* Non-blocking, like every log line: a stalled stderr must not keep
	 * the process from ending. */
	log_write_stderr(buf, len, 0);
	die_by_sigsys();
}

bool sandbox_trap_ready(void)
{
	struct sigaction old, sa;

	pthread_once(&names_once, names_init);
	if (sigaction(SIGSYS, NULL, &old) < 0)
		return false;
	if (old.sa_flags & SA_SIGINFO)
		return old.sa_sigaction == sigsys_handler;
	if (old.sa_handler != SIG_DFL)
		return false; /* the embedder's handler (or SIG_IGN): keep it */
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sigsys_handler;
	/* No SA_NODEFER: SIGSYS stays blocked in the handler (die_by_sigsys
	 * relies on it); no SA_RESTART: nothing to restart. */
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	/* Two VMs starting at once both install the same handler: benign. */
	return sigaction(SIGSYS, &sa, NULL) == 0;
}

int sandbox_trap_thread(const char *cls)
{
	sigset_t set;
	int ret;

	memset(self.name, 0, sizeof(self.name));
	if (pthread_getname_np(pthread_self(), self.name, sizeof(self.name)))
		strcpy(self.name, "?");
	self.cls = cls;
	self.set = true;
	/*
	 * Threads inherit their creator's mask, and embedders often block
	 * everything (signalfd daemons).  A blocked SIGSYS would still end
	 * the process (the kernel forces SIG_DFL) but without the report:
	 * unblock it in this thread.  It is synchronous, never a way to
	 * deliver the embedder's asynchronous signals here.
	 */
	sigemptyset(&set);
	sigaddset(&set, SIGSYS);
	ret = pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	return -ret;
}
