/* SPDX-License-Identifier: MIT */
/*
 * vCPU kicks (libvmm/core/vcpu.c) against a fake KVM, KVM-free: this program
 * defines ioctl() (and wraps pthread_create()/pthread_kill()), so the
 * library's own vcpu_create/start/kick/join run unchanged while KVM_RUN is
 * emulated with the kernel's signal semantics:
 *   - KVM_RUN returns -EINTR at once if immediate_exit is set;
 *   - otherwise it waits, with the mask given by KVM_SET_SIGNAL_MASK (or
 *     the thread's own mask if none was given), until a signal that mask
 *     does not block is pending, and returns -EINTR leaving it pending.
 *     The wait is sigtimedwait() on those signals, which, like KVM_RUN,
 *     keeps the thread's user mask in real_blocked: an ignored signal
 *     that the thread blocks is queued, one it does not block is
 *     discarded (exactly what made SIG_IGN lose kicks).
 * Each test runs in its own process (Check's fork mode), so it may set
 * SIGUSR1's disposition and mask as an embedder would.  A vCPU that is
 * never kicked shows as a join that does not finish within
 * JOIN_DEADLINE_S: a failure, with the stuck vCPU named.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "vcpu.h"
#include "vm.h"

#define NR 2
#define MMAP_SIZE 4096
#define JOIN_DEADLINE_S 30

/* ---- fake KVM ----------------------------------------------------------- */

struct fake_vcpu {
	int fd;
	struct kvm_run *run; /* our own mapping of the shared memfd */
	sigset_t mask;	     /* KVM_SET_SIGNAL_MASK */
	bool mask_set;
	sigset_t user_mask;  /* the thread's own mask at its last KVM_RUN */
	int in_run;	     /* threads inside KVM_RUN now (atomic) */
	int entries;	     /* KVM_RUN calls (atomic) */
	bool shutdown_first; /* first KVM_RUN exits with KVM_EXIT_SHUTDOWN */
	bool leave;	     /* make a waiting KVM_RUN return -EINTR (atomic) */
	/* Gate: the next KVM_RUN entry stops before anything else until
	 * the test opens it (the window between the thread's stopping check
	 * and the ioctl). */
	bool gate_armed, at_gate, gate_open;
};

static struct fake_vcpu fake[NR];
static int fake_vm_fd = 1000;
static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fake_cond = PTHREAD_COND_INITIALIZER;

static struct fake_vcpu *fake_by_fd(int fd)
{
	for (int i = 0; i < NR; i++)
		if (fake[i].run && fake[i].fd == fd)
			return &fake[i];
	return NULL;
}

static int fake_create_vcpu(unsigned long index)
{
	struct fake_vcpu *f;
	int fd;

	if (index >= NR)
		return errno = EINVAL, -1;
	f = &fake[index];
	fd = memfd_create("fake-vcpu", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, MMAP_SIZE) < 0)
		return -1;
	f->run = mmap(NULL, MMAP_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (f->run == MAP_FAILED)
		return -1;
	f->fd = fd;
	return fd;
}

static void fake_gate(struct fake_vcpu *f)
{
	pthread_mutex_lock(&fake_lock);
	if (f->gate_armed) {
		f->gate_armed = false;
		f->at_gate = true;
		pthread_cond_broadcast(&fake_cond);
		while (!f->gate_open)
			pthread_cond_wait(&fake_cond, &fake_lock);
	}
	pthread_mutex_unlock(&fake_lock);
}

static int fake_run(struct fake_vcpu *f)
{
	sigset_t runmask, wait;
	siginfo_t si;
	int ret = -1;

	__atomic_fetch_add(&f->entries, 1, __ATOMIC_SEQ_CST);
	fake_gate(f);
	if (__atomic_load_n(&f->run->immediate_exit, __ATOMIC_ACQUIRE))
		return errno = EINTR, -1;
	if (f->shutdown_first &&
	    __atomic_load_n(&f->entries, __ATOMIC_SEQ_CST) == 1) {
		f->run->exit_reason = KVM_EXIT_SHUTDOWN;
		return 0;
	}
	pthread_sigmask(SIG_BLOCK, NULL, &f->user_mask);
	runmask = f->mask_set ? f->mask : f->user_mask;
	/* The standard signals that are unblocked inside KVM_RUN. */
	sigemptyset(&wait);
	for (int s = 1; s < 32; s++)
		if (s != SIGKILL && s != SIGSTOP && !sigismember(&runmask, s))
			sigaddset(&wait, s);
	__atomic_fetch_add(&f->in_run, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		/* The system call: glibc's wrapper would turn SI_TKILL into
		 * SI_USER before we queue the signal back. */
		int sig = (int)syscall(SYS_rt_sigtimedwait, &wait, &si, &ts, 8);

		if (sig > 0) {
			/* KVM leaves the signal pending: queue it back on this
			 * thread with its siginfo (allowed for oneself). */
			syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), sig, &si);
			errno = EINTR;
			break;
		}
		if (__atomic_load_n(&f->leave, __ATOMIC_SEQ_CST)) {
			errno = EINTR;
			break;
		}
	}
	__atomic_fetch_sub(&f->in_run, 1, __ATOMIC_SEQ_CST);
	return ret;
}

/* The library's calls resolve here (this program defines ioctl()). */
int ioctl(int fd, unsigned long req, ...)
{
	struct fake_vcpu *f;
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (fd == fake_vm_fd && req == KVM_CREATE_VCPU)
		return fake_create_vcpu((unsigned long)arg);
	f = fake_by_fd(fd);
	if (!f)
		return (int)syscall(SYS_ioctl, fd, req, arg);
	switch (req) {
	case KVM_RUN:
		return fake_run(f);
	case KVM_SET_SIGNAL_MASK: {
		const struct kvm_signal_mask *m = arg;

		if (m->len != 8)
			return errno = EINVAL, -1;
		sigemptyset(&f->mask);
		memcpy(&f->mask, m->sigset, 8);
		f->mask_set = true;
		return 0;
	}
#ifdef KVM_GET_LAPIC /* x86's vCPU set-up */
	case KVM_GET_LAPIC:
		memset(arg, 0, sizeof(struct kvm_lapic_state));
		return 0;
	case KVM_SET_CPUID2:
	case KVM_SET_FPU:
	case KVM_SET_LAPIC:
		return 0;
#endif
	default: /* KVM_GET_STATS_FD and the rest: not offered */
		return errno = ENOTTY, -1;
	}
}

/* ---- pthread wrappers (item: start-up race, kick after join) ----------- */

static int (*real_create)(pthread_t *, const pthread_attr_t *,
			  void *(*)(void *), void *);
static int (*real_kill)(pthread_t, int);

/* Run by pthread_create()'s wrapper once the new thread is in KVM_RUN. */
static void (*after_create_hook)(void);
/* Run by pthread_kill()'s wrapper instead of the kill, for @kill_target. */
static bool kill_hook_armed;
static pthread_t kill_target;
static int (*kill_hook)(pthread_t t, int sig);

int pthread_create(pthread_t *t, const pthread_attr_t *attr,
		   void *(*fn)(void *), void *arg)
{
	void (*hook)(void) = __atomic_exchange_n(&after_create_hook, NULL,
						  __ATOMIC_SEQ_CST);
	int ret;

	if (!real_create)
		real_create = dlsym(RTLD_NEXT, "pthread_create");
	ret = real_create(t, attr, fn, arg);
	if (!ret && hook)
		hook();
	return ret;
}

int pthread_kill(pthread_t t, int sig)
{
	if (!real_kill)
		real_kill = dlsym(RTLD_NEXT, "pthread_kill");
	if (__atomic_load_n(&kill_hook_armed, __ATOMIC_SEQ_CST) &&
	    pthread_equal(t, kill_target)) {
		__atomic_store_n(&kill_hook_armed, false, __ATOMIC_SEQ_CST);
		return kill_hook(t, sig);
	}
	return real_kill(t, sig);
}

/* ---- VM scaffolding ---------------------------------------------------- */

static struct vmm *vm;

static void vm_up(void)
{
	vm = calloc(1, sizeof(*vm));
	ck_assert_ptr_nonnull(vm);
	vm->vm_fd = fake_vm_fd;
	vm->kvm.vcpu_mmap_size = MMAP_SIZE;
	vm->nr_vcpus = NR;
	vm->exit_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ck_assert_int_ge(vm->exit_efd, 0);
	vm->vcpus = calloc(NR, sizeof(*vm->vcpus));
	ck_assert_ptr_nonnull(vm->vcpus);
	for (unsigned int i = 0; i < NR; i++)
		ck_assert_int_eq(vcpu_create(vm, i, &vm->vcpus[i]), 0);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void wait_in_run(unsigned int i)
{
	double end = now_s() + JOIN_DEADLINE_S;

	while (!__atomic_load_n(&fake[i].in_run, __ATOMIC_SEQ_CST)) {
		ck_assert_msg(now_s() < end, "vCPU %u never entered KVM_RUN", i);
		usleep(1000);
	}
}

static void start_all(void)
{
	for (unsigned int i = 0; i < NR; i++)
		ck_assert_int_eq(vcpu_start(&vm->vcpus[i]), 0);
	for (unsigned int i = 0; i < NR; i++)
		wait_in_run(i);
}

struct joiner {
	pthread_t t;
	bool done; /* atomic */
};

static struct joiner joiners[NR];

static void *join_main(void *arg)
{
	struct joiner *j = arg;

	vcpu_join(&vm->vcpus[j - joiners]);
	__atomic_store_n(&j->done, true, __ATOMIC_SEQ_CST);
	return NULL;
}

static void start_joiner(unsigned int i)
{
	ck_assert_int_eq(pthread_create(&joiners[i].t, NULL, join_main,
					&joiners[i]), 0);
}

/* Every vCPU thread must end (be kicked out of KVM_RUN) in time. */
static void join_all(void)
{
	double end = now_s() + JOIN_DEADLINE_S;

	for (unsigned int i = 0; i < NR; i++)
		if (!joiners[i].t)
			start_joiner(i);
	for (unsigned int i = 0; i < NR; i++) {
		while (!__atomic_load_n(&joiners[i].done, __ATOMIC_SEQ_CST)) {
			if (now_s() > end) {
				/* Let the stuck thread go, so the process can
				 * end; the test has failed already. */
				__atomic_store_n(&fake[i].leave, true, __ATOMIC_SEQ_CST);
				ck_abort_msg("vCPU %u was never kicked out of KVM_RUN", i);
			}
			usleep(1000);
		}
		pthread_join(joiners[i].t, NULL);
	}
}

static void vm_down(void)
{
	for (unsigned int i = 0; i < NR; i++)
		vcpu_destroy(&vm->vcpus[i]);
	free(vm->vcpus);
	close(vm->exit_efd);
	free(vm);
}

static struct sigaction usr1_now(void)
{
	struct sigaction sa;

	ck_assert_int_eq(sigaction(VMM_KICK_SIGNAL, NULL, &sa), 0);
	return sa;
}

/* ---- tests -------------------------------------------------------------- */

/* SIG_IGN (inherited from a supervisor, nohup-style): the kick still gets
 * both vCPUs out of KVM_RUN; the disposition is left alone. */
START_TEST(kick_with_signal_ignored)
{
	signal(VMM_KICK_SIGNAL, SIG_IGN);
	vm_up();
	start_all();
	vcpu_stop_all(vm, VMM_EXIT_GUEST_RESET);
	join_all();
	ck_assert_ptr_eq(usr1_now().sa_handler, SIG_IGN);
	vm_down();
}
END_TEST

/* Blocked in the thread that starts the VM ("block everything, read a
 * signalfd"): the kick still works, and that thread's mask is unchanged. */
START_TEST(kick_with_signal_blocked)
{
	sigset_t set, cur;

	sigemptyset(&set);
	sigaddset(&set, VMM_KICK_SIGNAL);
	ck_assert_int_eq(pthread_sigmask(SIG_BLOCK, &set, NULL), 0);
	vm_up();
	start_all();
	vcpu_stop_all(vm, VMM_EXIT_GUEST_RESET);
	join_all();
	ck_assert_int_eq(pthread_sigmask(SIG_BLOCK, NULL, &cur), 0);
	ck_assert(sigismember(&cur, VMM_KICK_SIGNAL));
	ck_assert_ptr_eq(usr1_now().sa_handler, SIG_DFL);
	vm_down();
}
END_TEST

/* SIG_DFL (whose action is to terminate): kicks never terminate the
 * process and the library installs no handler. */
START_TEST(kick_with_default_action)
{
	signal(VMM_KICK_SIGNAL, SIG_DFL);
	vm_up();
	start_all();
	vcpu_stop_all(vm, VMM_EXIT_STOPPED);
	join_all();
	ck_assert_ptr_eq(usr1_now().sa_handler, SIG_DFL);
	vm_down();
}
END_TEST

static int handler_calls; /* atomic */

static void embedder_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	__atomic_fetch_add(&handler_calls, 1, __ATOMIC_SEQ_CST);
}

/*
 * The embedder has its own SA_SIGINFO handler: kicks never call it; and a
 * process-directed SIGUSR1 of its own (kill(2)) that a vCPU thread took
 * because it was the one in KVM_RUN with the signal unblocked is passed on
 * to the main thread, not swallowed.
 */
START_TEST(kick_with_embedder_handler)
{
	struct sigaction sa = { .sa_sigaction = embedder_handler,
				.sa_flags = SA_SIGINFO | SA_RESTART };
	struct timespec ts = { JOIN_DEADLINE_S, 0 };
	sigset_t set;

	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(VMM_KICK_SIGNAL, &sa, NULL), 0);
	vm_up();
	start_all();
	/* The main thread blocks it: only a vCPU in KVM_RUN can take it. */
	sigemptyset(&set);
	sigaddset(&set, VMM_KICK_SIGNAL);
	ck_assert_int_eq(pthread_sigmask(SIG_BLOCK, &set, NULL), 0);
	ck_assert_int_eq(kill(getpid(), VMM_KICK_SIGNAL), 0);
	ck_assert_msg(sigtimedwait(&set, NULL, &ts) == VMM_KICK_SIGNAL,
		      "the process-directed signal was lost");
	ck_assert_int_eq(pthread_sigmask(SIG_UNBLOCK, &set, NULL), 0);
	vcpu_stop_all(vm, VMM_EXIT_STOPPED);
	join_all();
	ck_assert_int_eq(__atomic_load_n(&handler_calls, __ATOMIC_SEQ_CST), 0);
	ck_assert(usr1_now().sa_sigaction == embedder_handler);
	vm_down();
}
END_TEST

/*
 * The kick lands between the vCPU's check of vm_stopping() and its
 * KVM_RUN.  immediate_exit is cleared before the thread goes on, so that
 * only the signal can save it: it must still be pending (blocked outside
 * KVM_RUN) and make KVM_RUN return at once.
 */
START_TEST(kick_before_kvm_run)
{
	vm_up();
	start_all();
	pthread_mutex_lock(&fake_lock);
	fake[0].gate_armed = true;
	pthread_mutex_unlock(&fake_lock);
	/* Make vCPU 0 leave its current KVM_RUN and come back to the gate
	 * (a spurious exit: the VM is not stopping yet). */
	vcpu_kick(&vm->vcpus[0]);
	pthread_mutex_lock(&fake_lock);
	while (!fake[0].at_gate)
		pthread_cond_wait(&fake_cond, &fake_lock);
	pthread_mutex_unlock(&fake_lock);
	vcpu_stop_all(vm, VMM_EXIT_STOPPED);
	__atomic_store_n(&fake[0].run->immediate_exit, 0, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&fake_lock);
	fake[0].gate_open = true;
	pthread_cond_broadcast(&fake_cond);
	pthread_mutex_unlock(&fake_lock);
	join_all();
	vm_down();
}
END_TEST

/* Start-up race: the guest exits (here: another thread requests it) while
 * vCPU 1's thread already runs KVM_RUN but vcpu_start() has not returned. */
static int hook_done; /* atomic */

static void *exit_requester(void *arg)
{
	(void)arg;
	vcpu_stop_all(vm, VMM_EXIT_TRIPLE_FAULT);
	__atomic_store_n(&hook_done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static pthread_t requester;

static void exit_during_create(void)
{
	double end;

	/* Inside vcpu_start(), after pthread_create(): wait until the new
	 * thread is in KVM_RUN, then have another thread stop the VM and
	 * give it a moment (it may have to wait for vcpu_start()). */
	wait_in_run(1);
	ck_assert_int_eq(pthread_create(&requester, NULL, exit_requester, NULL), 0);
	end = now_s() + 0.3;
	while (!__atomic_load_n(&hook_done, __ATOMIC_SEQ_CST) && now_s() < end)
		usleep(1000);
}

START_TEST(exit_while_vcpus_start)
{
	vm_up();
	ck_assert_int_eq(vcpu_start(&vm->vcpus[0]), 0);
	wait_in_run(0);
	__atomic_store_n(&after_create_hook, exit_during_create, __ATOMIC_SEQ_CST);
	ck_assert_int_eq(vcpu_start(&vm->vcpus[1]), 0);
	join_all();
	pthread_join(requester, NULL);
	ck_assert_int_eq(vm->exit_reason, VMM_EXIT_TRIPLE_FAULT);
	vm_down();
}
END_TEST

/*
 * Kick against join: a kicker has decided to signal vCPU 0 when the thread
 * ends and a joiner joins it.  The kill must never reach a joined thread
 * (undefined behaviour): the wrapper lets the thread end and waits for the
 * join to finish before it kills; it records a violation if the join
 * finished first.
 */
static bool kill_after_join; /* atomic */

static int kill_racing_join(pthread_t t, int sig)
{
	double end;

	__atomic_store_n(&fake[0].leave, true, __ATOMIC_SEQ_CST);
	end = now_s() + 0.5;
	while (now_s() < end) {
		if (__atomic_load_n(&joiners[0].done, __ATOMIC_SEQ_CST)) {
			__atomic_store_n(&kill_after_join, true, __ATOMIC_SEQ_CST);
			return ESRCH; /* do not commit the undefined call */
		}
		usleep(1000);
	}
	return real_kill(t, sig);
}

START_TEST(no_kick_after_join)
{
	vm_up();
	start_all();
	start_joiner(0);
	kill_target = vm->vcpus[0].thread;
	kill_hook = kill_racing_join;
	__atomic_store_n(&kill_hook_armed, true, __ATOMIC_SEQ_CST);
	vcpu_stop_all(vm, VMM_EXIT_STOPPED);
	join_all();
	ck_assert_msg(!__atomic_load_n(&kill_after_join, __ATOMIC_SEQ_CST),
		      "pthread_kill() on a vCPU thread that was already joined");
	/* And later kicks are no-ops. */
	vcpu_kick(&vm->vcpus[0]);
	vcpu_kick(&vm->vcpus[1]);
	vm_down();
}
END_TEST

/*
 * The vCPU threads' masks: every asynchronous signal blocked, the fault
 * signals not (thread.h); inside KVM_RUN VMM_KICK_SIGNAL is unblocked too.
 */
START_TEST(vcpu_masks)
{
	sigset_t run, user;

	vm_up();
	start_all();
	ck_assert(fake[0].mask_set && fake[1].mask_set);
	user = fake[0].user_mask;
	ck_assert(sigismember(&user, VMM_KICK_SIGNAL));
	ck_assert(sigismember(&user, SIGINT));
	ck_assert(sigismember(&user, SIGPIPE));
	ck_assert(!sigismember(&user, SIGSEGV));
	ck_assert(!sigismember(&user, SIGSYS));
	run = fake[0].mask;
	ck_assert(!sigismember(&run, VMM_KICK_SIGNAL));
	ck_assert(!sigismember(&run, SIGSEGV));
	ck_assert(!sigismember(&run, SIGBUS));
	ck_assert(!sigismember(&run, SIGSYS));
	ck_assert(sigismember(&run, SIGINT));
	ck_assert(sigismember(&run, SIGTERM));
	ck_assert(sigismember(&run, SIGPIPE));
	ck_assert(sigismember(&run, SIGUSR2));
	vcpu_stop_all(vm, VMM_EXIT_STOPPED);
	join_all();
	vm_down();
}
END_TEST

#define ADD(s, t)                                     \
	do {                                          \
		TCase *tc = tcase_create(#t);         \
		tcase_set_timeout(tc, 90);            \
		tcase_add_test(tc, t);                \
		suite_add_tcase(s, tc);               \
	} while (0)

static Suite *kick_suite(void)
{
	Suite *s = suite_create("vcpu_kick");

	ADD(s, kick_with_signal_ignored);
	ADD(s, kick_with_signal_blocked);
	ADD(s, kick_with_default_action);
	ADD(s, kick_with_embedder_handler);
	ADD(s, kick_before_kvm_run);
	ADD(s, exit_while_vcpus_start);
	ADD(s, no_kick_after_join);
	ADD(s, vcpu_masks);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(kick_suite());
	int failed;

	/* Each test sets process-wide signal state: one process each. */
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
