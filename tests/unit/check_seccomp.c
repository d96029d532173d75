/* SPDX-License-Identifier: MIT */
/*
 * The seccomp allow-lists of libvmm/core/sandbox.c, KVM-free: each class's
 * filter is built with libseccomp and installed in a forked child (on a
 * thread of its own, as the library does), which then checks that the calls
 * its class needs still work and that others are refused: EPERM in
 * VMM_SECCOMP_ERRNO mode, SIGSYS (the whole process) in VMM_SECCOMP_KILL
 * mode.  Also the io_uring opcode restrictions of the I/O threads' rings.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/kvm.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "iothread.h"
#include "sandbox.h"
#include "vmm/vmm.h"

/* ---- child harness ------------------------------------------------------ */

static int report_fd = -1; /* child -> parent: first failure message */

static void child_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void child_fail(const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (write(report_fd, msg, (size_t)(n > 0 ? n : 0)) < 0)
		_exit(3);
	_exit(1);
}

#define CHILD_CHECK(cond, ...)                 \
	do {                                   \
		if (!(cond))                   \
			child_fail(__VA_ARGS__); \
	} while (0)

/* A call that the filter must refuse with EPERM (ERRNO mode). */
#define EXPECT_EPERM(call, what)                                               \
	do {                                                                   \
		long r_ = (long)(call);                                        \
		CHILD_CHECK(r_ == -1 && errno == EPERM,                         \
			    "%s: expected EPERM, got %ld (%s)", what, r_,       \
			    strerror(errno));                                  \
	} while (0)

struct job {
	enum sandbox_class cls;
	int mode;
	void (*body)(const struct job *j);
	struct sandbox *sb;
};

static void *job_thread(void *arg)
{
	const struct job *j = arg;
	int ret = sandbox_install(j->sb, j->cls);

	CHILD_CHECK(ret == 0, "sandbox_install: %s", strerror(-ret));
	j->body(j);
	return NULL;
}

/*
 * Fork; in the child build the filters, install @cls's on a new thread and
 * run @body there.  Returns the child's wait status; a failure message from
 * the child fails the test.
 */
static int run_confined(enum sandbox_class cls, int mode,
			void (*body)(const struct job *j))
{
	struct job j = { .cls = cls, .mode = mode, .body = body };
	char msg[256] = "";
	int p[2], status;
	pid_t pid;
	ssize_t n;

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		pthread_t t;
		int ret;

		close(p[0]);
		report_fd = p[1];
		ret = sandbox_build_classes(mode, (1u << SANDBOX_CLASS_NR) - 1, &j.sb);
		CHILD_CHECK(ret == 0, "sandbox_build: %s", strerror(-ret));
		CHILD_CHECK(pthread_create(&t, NULL, job_thread, &j) == 0,
			    "pthread_create");
		CHILD_CHECK(pthread_join(t, NULL) == 0, "pthread_join");
		/* The filter was the thread's own: this thread is free. */
		ret = open("/dev/null", O_RDONLY | O_CLOEXEC);
		CHILD_CHECK(ret >= 0, "open on the unconfined thread: %s",
			    strerror(errno));
		_exit(0); /* no atexit handlers (LeakSanitizer) in the child */
	}
	close(p[1]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	n = read(p[0], msg, sizeof(msg) - 1);
	close(p[0]);
	if (n > 0) {
		msg[n] = '\0';
		ck_abort_msg("%s filter (mode %d): %s", sandbox_class_name(cls),
			     mode, msg);
	}
	return status;
}

/* ---- what every class may do --------------------------------------------- */

static long io_uring_setup_raw(void)
{
	char params[120]; /* struct io_uring_params */

	memset(params, 0, sizeof(params));
	return syscall(SYS_io_uring_setup, 1, params);
}

static void common_allowed(void)
{
	uint64_t v = 1;
	void *big;
	char *small;

	CHILD_CHECK(getpid() > 0, "getpid");
	CHILD_CHECK(syscall(SYS_gettid) > 0, "gettid");
	/* malloc, small and large (brk / mmap without PROT_EXEC). */
	small = malloc(100);
	big = malloc(8u << 20);
	CHILD_CHECK(small && big, "malloc");
	memset(big, 1, 8u << 20);
	free(big);
	free(small);
	big = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHILD_CHECK(big != MAP_FAILED, "mmap rw: %s", strerror(errno));
	CHILD_CHECK(mprotect(big, 4096, PROT_READ) == 0, "mprotect r");
	CHILD_CHECK(madvise(big, 1 << 20, MADV_DONTNEED) == 0, "madvise");
	CHILD_CHECK(munmap(big, 1 << 20) == 0, "munmap");
	/* write on an fd that exists (zero bytes: nothing reaches the
	 * parent). */
	CHILD_CHECK(write(report_fd, &v, 0) == 0, "write: %s", strerror(errno));
	CHILD_CHECK(usleep(100) == 0, "usleep");
}

static void common_refused(void)
{
	static char prog[] = "/bin/true";
	char *const argv[] = { prog, NULL };
	void *p;

	EXPECT_EPERM(openat(AT_FDCWD, "/etc/passwd", O_RDONLY), "openat /etc/passwd");
	EXPECT_EPERM(open("/dev/kvm", O_RDWR), "open /dev/kvm");
	EXPECT_EPERM(socket(AF_INET, SOCK_STREAM, 0), "socket");
	EXPECT_EPERM(execve(argv[0], argv, NULL), "execve");
	EXPECT_EPERM(syscall(SYS_ptrace, 0, 0, 0, 0), "ptrace");
	EXPECT_EPERM(syscall(SYS_clone3, NULL, 0), "clone3");
	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHILD_CHECK(p == MAP_FAILED && errno == EPERM, "mmap PROT_EXEC allowed");
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHILD_CHECK(p != MAP_FAILED, "mmap rw");
	EXPECT_EPERM(mprotect(p, 4096, PROT_READ | PROT_EXEC), "mprotect PROT_EXEC");
	munmap(p, 4096);
	/* tgkill outside this process (pid 1, signal 0: harmless if let
	 * through, but it must not be). */
	EXPECT_EPERM(syscall(SYS_tgkill, 1, 1, 0), "tgkill pid 1");
	/* An ioctl no class allows. */
	EXPECT_EPERM(ioctl(report_fd, KVM_CREATE_VM, 0), "ioctl KVM_CREATE_VM");
	EXPECT_EPERM(ioctl(report_fd, FIONREAD, &(int){ 0 }), "ioctl FIONREAD");
}

/* ---- per class ------------------------------------------------------------ */

/* An allowed ioctl request gets past the filter: on a pipe KVM answers
 * nothing, the kernel says ENOTTY (not EPERM). */
static void expect_ioctl_passes(unsigned long req, const char *what)
{
	long r = ioctl(report_fd, req, NULL);

	CHILD_CHECK(r == -1 && errno != EPERM, "%s: filtered (%ld, %s)", what, r,
		    strerror(errno));
}

static void vcpu_body(const struct job *j)
{
	int efd;

	common_allowed();
	expect_ioctl_passes(KVM_RUN, "KVM_RUN");
	expect_ioctl_passes(KVM_IRQFD, "KVM_IRQFD");
	expect_ioctl_passes(KVM_IOEVENTFD, "KVM_IOEVENTFD");
	expect_ioctl_passes(KVM_SET_GSI_ROUTING, "KVM_SET_GSI_ROUTING");
	expect_ioctl_passes(KVM_SIGNAL_MSI, "KVM_SIGNAL_MSI");
	expect_ioctl_passes(KVM_IRQ_LINE, "KVM_IRQ_LINE");
	/* A request whose low 32 bits match but upper ones do not: the
	 * kernel truncates, so does the filter. */
	expect_ioctl_passes(KVM_RUN | (1ul << 40), "KVM_RUN | high bits");
	efd = eventfd(0, EFD_CLOEXEC);
	CHILD_CHECK(efd >= 0, "eventfd: %s", strerror(errno));
	CHILD_CHECK(close(efd) == 0, "close");
	/* The vCPU kick: a signal to a thread of this process. */
	CHILD_CHECK(syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), 0) == 0,
		    "tgkill self: %s", strerror(errno));
	/* ... consumed after KVM_RUN by sigtimedwait() (none pending here). */
	{
		static const struct timespec zero;
		sigset_t set;

		sigemptyset(&set);
		sigaddset(&set, VMM_KICK_SIGNAL);
		CHILD_CHECK(sigtimedwait(&set, NULL, &zero) == -1 && errno == EAGAIN,
			    "sigtimedwait: %s", strerror(errno));
	}
	if (j->mode == VMM_SECCOMP_ERRNO) {
		common_refused();
		EXPECT_EPERM(io_uring_setup_raw(), "io_uring_setup");
		EXPECT_EPERM(syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0),
			     "io_uring_enter");
		EXPECT_EPERM(ioctl(report_fd, KVM_SET_USER_MEMORY_REGION, NULL),
			     "KVM_SET_USER_MEMORY_REGION");
	}
}

static void io_body(const struct job *j)
{
	common_allowed();
	CHILD_CHECK(syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0) == -1 &&
			    errno == EBADF,
		    "io_uring_enter filtered: %s", strerror(errno));
	CHILD_CHECK(fdatasync(report_fd) == -1 && errno == EINVAL,
		    "fdatasync filtered: %s", strerror(errno));
	expect_ioctl_passes(BLKDISCARD, "BLKDISCARD");
	if (j->mode == VMM_SECCOMP_ERRNO) {
		common_refused();
		EXPECT_EPERM(ioctl(report_fd, KVM_RUN, 0), "KVM_RUN on an I/O thread");
		EXPECT_EPERM(io_uring_setup_raw(), "io_uring_setup");
	}
}

static void console_body(const struct job *j)
{
	common_allowed();
	expect_ioctl_passes(KVM_IRQ_LINE, "KVM_IRQ_LINE");
	if (j->mode == VMM_SECCOMP_ERRNO) {
		common_refused();
		EXPECT_EPERM(ioctl(report_fd, KVM_RUN, 0), "KVM_RUN on the console");
	}
}

static void control_body(const struct job *j)
{
	struct stat st;

	common_allowed();
	CHILD_CHECK(fstat(report_fd, &st) == 0, "fstat: %s", strerror(errno));
	CHILD_CHECK(fcntl(report_fd, F_GETFL) >= 0, "fcntl F_GETFL: %s",
		    strerror(errno));
	expect_ioctl_passes(KVM_IRQFD, "KVM_IRQFD");
	if (j->mode == VMM_SECCOMP_ERRNO) {
		common_refused();
		EXPECT_EPERM(syscall(SYS_newfstatat, AT_FDCWD, "/etc/passwd", &st, 0),
			     "stat of a path");
		EXPECT_EPERM(ioctl(report_fd, KVM_RUN, 0), "KVM_RUN on control");
		EXPECT_EPERM(fcntl(report_fd, F_DUPFD_CLOEXEC, 0), "fcntl F_DUPFD");
	}
}

/* vhost-user back end's control thread (minivmm-blkd). */
static void vhost_body(const struct job *j)
{
	struct msghdr mh = { 0 };
	struct pollfd pfd = { .fd = report_fd, .events = POLLOUT };
	struct stat st;
	void *p;

	common_allowed();
	/* Socket calls reach the kernel (a pipe is no socket). */
	CHILD_CHECK(accept4(report_fd, NULL, NULL, SOCK_CLOEXEC) == -1 &&
			    errno == ENOTSOCK,
		    "accept4 filtered: %s", strerror(errno));
	CHILD_CHECK(recvmsg(report_fd, &mh, MSG_DONTWAIT) == -1 && errno == ENOTSOCK,
		    "recvmsg filtered: %s", strerror(errno));
	CHILD_CHECK(sendmsg(report_fd, &mh, MSG_NOSIGNAL) == -1 && errno == ENOTSOCK,
		    "sendmsg filtered: %s", strerror(errno));
	CHILD_CHECK(poll(&pfd, 1, 0) == 1, "poll: %s", strerror(errno));
	CHILD_CHECK(fstat(report_fd, &st) == 0, "fstat: %s", strerror(errno));
	/* A shared mapping of a received fd (a pipe cannot be mapped). */
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, report_fd, 0);
	CHILD_CHECK(p == MAP_FAILED && errno != EPERM, "mmap MAP_SHARED filtered");
	if (j->mode == VMM_SECCOMP_ERRNO) {
		common_refused();
		EXPECT_EPERM(syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0),
			     "io_uring_enter");
		EXPECT_EPERM(syscall(SYS_memfd_create, "x", 0), "memfd_create");
		EXPECT_EPERM(syscall(SYS_connect, report_fd, NULL, 0), "connect");
		EXPECT_EPERM(ioctl(report_fd, KVM_IRQFD, NULL), "KVM_IRQFD");
	}
}

/* The I/O thread of a vsock device: the I/O list and its host sockets. */
static void io_sock_body(const struct job *j)
{
	struct msghdr mh = { 0 };
	struct epoll_event ev;
	char c;
	struct iovec iov = { &c, 1 };
	int fd;

	io_body(j);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	CHILD_CHECK(fd >= 0, "socket(AF_UNIX): %s", strerror(errno));
	CHILD_CHECK(connect(fd, NULL, 0) == -1 && errno != EPERM,
		    "connect filtered: %s", strerror(errno));
	CHILD_CHECK(shutdown(fd, SHUT_WR) == 0 || errno != EPERM,
		    "shutdown filtered: %s", strerror(errno));
	close(fd);
	CHILD_CHECK(accept4(report_fd, NULL, NULL, SOCK_NONBLOCK) == -1 &&
			    errno == ENOTSOCK,
		    "accept4 filtered: %s", strerror(errno));
	CHILD_CHECK(epoll_wait(report_fd, &ev, 1, 0) == -1 && errno == EINVAL,
		    "epoll_wait filtered: %s", strerror(errno));
	CHILD_CHECK(epoll_ctl(report_fd, EPOLL_CTL_DEL, report_fd, NULL) == -1 &&
			    errno != EPERM,
		    "epoll_ctl filtered: %s", strerror(errno));
	CHILD_CHECK(sendmsg(report_fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) == -1 &&
			    errno == ENOTSOCK,
		    "sendmsg filtered: %s", strerror(errno));
	CHILD_CHECK(recv(report_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == -1 &&
			    errno == ENOTSOCK,
		    "recv(MSG_PEEK) filtered: %s", strerror(errno));
	CHILD_CHECK(readv(report_fd, &iov, 1) == -1 && errno == EBADF,
		    "readv filtered: %s", strerror(errno));
	if (j->mode == VMM_SECCOMP_ERRNO) {
		EXPECT_EPERM(socket(AF_INET, SOCK_STREAM, 0), "socket(AF_INET)");
		EXPECT_EPERM(socket(AF_UNIX, SOCK_DGRAM, 0), "socket(SOCK_DGRAM)");
		EXPECT_EPERM(sendmsg(report_fd, &mh, 0), "sendmsg, blocking");
		EXPECT_EPERM(recvfrom(report_fd, &c, 1, MSG_DONTWAIT,
				      (struct sockaddr *)&mh, &(socklen_t){ 8 }),
			     "recvfrom with an address");
	}
}

static void (*const bodies[SANDBOX_CLASS_NR])(const struct job *j) = {
	[SANDBOX_CLASS_VCPU] = vcpu_body,
	[SANDBOX_CLASS_IO] = io_body,
	[SANDBOX_CLASS_CONSOLE] = console_body,
	[SANDBOX_CLASS_CONTROL] = control_body,
	[SANDBOX_CLASS_VHOST] = vhost_body,
	[SANDBOX_CLASS_IO_SOCK] = io_sock_body,
};

/* ERRNO mode: what the class needs works, the rest fails with EPERM. */
START_TEST(errno_mode)
{
	enum sandbox_class cls = (enum sandbox_class)_i;
	int st = run_confined(cls, VMM_SECCOMP_ERRNO, bodies[cls]);

	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "%s child: status 0x%x", sandbox_class_name(cls), st);
}
END_TEST

/* KILL mode: what the class needs still works (the process lives). */
START_TEST(kill_mode_allowed)
{
	enum sandbox_class cls = (enum sandbox_class)_i;
	int st = run_confined(cls, VMM_SECCOMP_KILL, bodies[cls]);

	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "%s child: status 0x%x", sandbox_class_name(cls), st);
}
END_TEST

static void forbidden_open(const struct job *j)
{
	(void)j;
	openat(AT_FDCWD, "/etc/passwd", O_RDONLY);
	child_fail("openat returned under the KILL filter");
}

static void forbidden_socket(const struct job *j)
{
	/* AF_UNIX streams are the io-sock class's own. */
	socket(j->cls == SANDBOX_CLASS_IO_SOCK ? AF_INET : AF_UNIX, SOCK_STREAM, 0);
	child_fail("socket returned under the KILL filter");
}

/* KILL mode: a forbidden call kills the whole process with SIGSYS, not
 * just the thread (SECCOMP_RET_KILL_PROCESS). */
START_TEST(kill_mode_forbidden)
{
	enum sandbox_class cls = (enum sandbox_class)_i;
	int st = run_confined(cls, VMM_SECCOMP_KILL, forbidden_open);

	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS,
		      "%s: openat: status 0x%x", sandbox_class_name(cls), st);
	st = run_confined(cls, VMM_SECCOMP_KILL, forbidden_socket);
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS,
		      "%s: socket: status 0x%x", sandbox_class_name(cls), st);
}
END_TEST

START_TEST(build_and_counts)
{
	struct sandbox *sb = NULL;

	ck_assert_int_eq(sandbox_build(VMM_SECCOMP_OFF, &sb), -EINVAL);
	ck_assert_int_eq(sandbox_build(42, &sb), -EINVAL);
	ck_assert_ptr_null(sb);
	ck_assert_int_eq(sandbox_install(NULL, SANDBOX_CLASS_VCPU), 0);
	ck_assert_int_eq(sandbox_build(VMM_SECCOMP_KILL, &sb), 0);
	ck_assert_int_eq(sandbox_install(sb, SANDBOX_CLASS_NR), -EINVAL);
	/* A VM builds only its own classes. */
	ck_assert_int_eq(sandbox_install(sb, SANDBOX_CLASS_VHOST), -EINVAL);
	sandbox_free(sb);
	for (int c = 0; c < SANDBOX_CLASS_NR; c++) {
		unsigned int n = sandbox_class_nr_syscalls((enum sandbox_class)c);

		printf("seccomp allow-list %-8s %u system calls\n",
		       sandbox_class_name((enum sandbox_class)c), n);
		ck_assert_uint_gt(n, 10);
		/* The control thread also speaks the vhost-user front end's
		 * messages (sendmsg/recvmsg) and serves an embedder's control
		 * socket (accept4, getsockopt SO_PEERCRED); io-sock is the I/O
		 * list and ten socket calls: their budgets are larger.  The
		 * I/O list carries a stream NIC's sendmsg and shutdown, and
		 * the adaptive policy's sched_setscheduler. */
		ck_assert_uint_lt(n, c == SANDBOX_CLASS_CONTROL ? 44 :
				     c == SANDBOX_CLASS_IO_SOCK ? 50 :
				     c == SANDBOX_CLASS_IO ? 43 : 40);
	}
	sandbox_free(NULL);
}
END_TEST

START_TEST(api_args)
{
	ck_assert_int_eq(vmm_set_seccomp(NULL, VMM_SECCOMP_KILL), -EINVAL);
	ck_assert_int_eq(vmm_seccomp_confine_current_thread(NULL), -EINVAL);
}
END_TEST

/* ---- io_uring restrictions --------------------------------------------- */

struct cqe_wait {
	struct iothread_cb cb;
	bool done;
	int res;
};

static void cqe_done(struct iothread_cb *cb, int res, uint32_t flags)
{
	struct cqe_wait *w = (struct cqe_wait *)cb;

	(void)flags;
	w->res = res;
	w->done = true;
}

static bool waited(void *opaque)
{
	return ((struct cqe_wait *)opaque)->done;
}

/* Submit one prepared SQE (on the not-started thread's ring, from here) and
 * return its result. */
static int ring_op(struct iothread *io, void (*prep)(struct io_uring_sqe *sqe))
{
	struct cqe_wait w = { .cb.fn = cqe_done };
	struct io_uring_sqe *sqe = iothread_get_sqe(io, &w.cb);

	ck_assert_ptr_nonnull(sqe);
	prep(sqe);
	iothread_sqe_nofile(io, sqe); /* registered-file rings want it */
	iothread_run_until(io, waited, &w);
	return w.res;
}

static void prep_nop(struct io_uring_sqe *sqe)
{
	io_uring_prep_nop(sqe);
}

static void prep_openat(struct io_uring_sqe *sqe)
{
	io_uring_prep_openat(sqe, AT_FDCWD, "/etc/passwd", O_RDONLY, 0);
}

static void prep_socket_like(struct io_uring_sqe *sqe)
{
	/* IORING_OP_CONNECT on fd 0: refused before it looks at the fd. */
	io_uring_prep_connect(sqe, 0, NULL, 0);
}

static void prep_drain_nop(struct io_uring_sqe *sqe)
{
	io_uring_prep_nop(sqe);
	sqe->flags |= IOSQE_IO_DRAIN; /* no SQE flag is allowed */
}

START_TEST(ring_restrictions)
{
	struct iothread *io;

	ck_assert_int_eq(iothread_create(0, 8, &io), 0);
	if (!iothread_ring_restricted(io)) {
		printf("io_uring restrictions unsupported here (kernel < 5.10)\n");
		iothread_destroy(io);
		return;
	}
	ck_assert_int_eq(ring_op(io, prep_nop), 0);
	ck_assert_int_eq(ring_op(io, prep_openat), -EACCES);
	ck_assert_int_eq(ring_op(io, prep_socket_like), -EACCES);
	ck_assert_int_eq(ring_op(io, prep_drain_nop), -EACCES);
	iothread_destroy(io);
}
END_TEST

static Suite *seccomp_suite(void)
{
	Suite *s = suite_create("seccomp");
	TCase *tc = tcase_create("seccomp");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, build_and_counts);
	tcase_add_test(tc, api_args);
	tcase_add_loop_test(tc, errno_mode, 0, SANDBOX_CLASS_NR);
	tcase_add_loop_test(tc, kill_mode_allowed, 0, SANDBOX_CLASS_NR);
	tcase_add_loop_test(tc, kill_mode_forbidden, 0, SANDBOX_CLASS_NR);
	tcase_add_test(tc, ring_restrictions);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(seccomp_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
