/* SPDX-License-Identifier: MIT */
/*
 * Logging is the one process-wide setting of the library: a sink shared by
 * every VM.  A mutex guards the
 * (fn, opaque, level) triple; messages are formatted and delivered outside
 * it, from a copy, so a slow callback never blocks another thread's
 * vmm_set_log().
 *
 * The default sink writes to standard error and never blocks: a stderr
 * that takes nothing now (a pipe nobody drains: conmon, systemd, a shell
 * pipeline that stopped) costs the line, which is counted, not a stuck
 * thread.  Several VMM threads log (vCPUs, I/O threads, the console
 * thread, the control thread that stops the VM): one of them blocked in
 * write(2) would make the VM unstoppable.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "nbfd.h"

static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static vmm_log_fn sink_fn;	       /* NULL: stderr */
static void *sink_opaque;
static int sink_level = VMM_LOG_WARN; /* read without the lock as a filter */

/* ---- standard error, non-blocking ------------------------------------ */

/*
 * Where the default sink writes: fd 2 reached through nbfd.h (a private
 * non-blocking reopen of a pipe or terminal, send(MSG_DONTWAIT) on a
 * socket, fd 2 itself for a file), as fd 2 was at the last
 * log_prepare_stderr().  Writers read it lock-free, from signal handlers
 * too (sandbox-trap.c): one atomic word, fd << 3 | mode, -1 before the
 * first prepare.  out_lock serialises the prepares only.
 *
 * The reopen lives at one fd number, own_fd, for good: a writer may still
 * hold the number from the word it read, so a prepare never closes it
 * (any open() could reuse a closed number, and a log line would land in
 * that file) but puts another description under it with dup3(): the new
 * reopen, or /dev/null -- never a blocking description, which a writer of
 * the old word would write() to.  The number is moved high
 * (OWN_FD_MIN), out of the way of embedders' dup2() onto small numbers;
 * an embedder that closes it anyway (closefrom()) is noticed at the next
 * prepare by its identity (own_st) and the number given up.
 */
#define OWN_FD_MIN 100

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static int out_state = -1;
static int own_fd = -1;	   /* out_lock */
static struct stat own_st; /* of what we put under own_fd (out_lock) */
static struct stat out_st; /* of fd 2 at the last prepare (out_lock) */
static uint64_t out_dropped;  /* texts dropped (atomic) */
static uint64_t out_reported; /* of those, already reported (atomic) */
static bool out_cut;	      /* a partial write left a line open (atomic) */
static bool out_poll_busy;    /* a writer is between poll() and write() */
/* This thread is seccomp-confined: no open()/fstat() (sandbox.c). */
static __thread bool thread_confined;

void log_thread_confined(void)
{
	thread_confined = true;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_rdev == b->st_rdev;
}

/* Put @fd's description under own_fd (made first if there is none, or if
 * the embedder closed ours).  Returns own_fd, or -1.  out_lock held. */
static int own_fd_set(int fd)
{
	struct stat st;

	if (own_fd >= 0 && (fstat(own_fd, &st) < 0 || !same_file(&st, &own_st)))
		own_fd = -1; /* not ours any more: leave it to its owner */
	if (own_fd < 0) {
		own_fd = fcntl(fd, F_DUPFD_CLOEXEC, OWN_FD_MIN);
		if (own_fd < 0)
			return -1;
	} else if (dup3(fd, own_fd, O_CLOEXEC) < 0) {
		return -1;
	}
	if (fstat(own_fd, &own_st) < 0)
		memset(&own_st, 0, sizeof(own_st));
	return own_fd;
}

/* Stop holding the old file open (a pipe's reader would never see its
 * end) without giving the number up: /dev/null under it.  out_lock. */
static void own_fd_release(void)
{
	int null;

	if (own_fd < 0)
		return;
	null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null >= 0) {
		own_fd_set(null);
		close(null);
	}
}

void log_prepare_stderr(void)
{
	enum nbfd_mode mode;
	struct stat st;
	struct nbfd e;
	int fd, state;

	if (thread_confined)
		return; /* keeps what an unconfined thread prepared */
	pthread_mutex_lock(&out_lock);
	if (fstat(STDERR_FILENO, &st) < 0) {
		/* Closed: nothing to write to (texts are dropped). */
		__atomic_store_n(&out_state, NBFD_NONE, __ATOMIC_RELEASE);
		memset(&out_st, 0, sizeof(out_st));
		own_fd_release();
		pthread_mutex_unlock(&out_lock);
		return;
	}
	if (__atomic_load_n(&out_state, __ATOMIC_RELAXED) > NBFD_NONE &&
	    same_file(&st, &out_st)) {
		pthread_mutex_unlock(&out_lock);
		return; /* the same file as last time */
	}
	nbfd_open(STDERR_FILENO, O_WRONLY, &e);
	fd = e.fd;
	mode = e.mode;
	if (e.own) {
		fd = own_fd_set(e.fd);
		if (fd < 0) { /* no fd left: the blocking one, after poll() */
			fd = STDERR_FILENO;
			mode = NBFD_POLL;
		}
		nbfd_close(&e);
	}
	state = fd << 3 | (int)mode;
	out_st = st;
	/* Release: pairs with the acquire load in log_write_stderr(). */
	__atomic_store_n(&out_state, state, __ATOMIC_RELEASE);
	if (fd != own_fd)
		own_fd_release(); /* after the switch: see above */
	pthread_mutex_unlock(&out_lock);
}

/* Write all of @buf, waiting up to @timeout_ms whenever stderr takes
 * nothing (nbfd_write_all()).  Async-signal-safe. */
static size_t out_put(int state, const char *buf, size_t len, int timeout_ms,
		      int *err)
{
	struct nbfd e = { .fd = state >> 3, .mode = (enum nbfd_mode)(state & 7) };

	return nbfd_write_all(&e, buf, len, timeout_ms, err);
}

/* "libvmm: N log lines dropped: ...\n" into @buf (128 bytes) without
 * stdio: the SIGSYS handler gets here.  Returns its length. */
static size_t drop_note(char *buf, uint64_t n)
{
	static const char pre[] = "libvmm: ";
	static const char post[] = " log lines dropped: standard error would block\n";
	char digits[20];
	size_t len = 0, nd = 0;

	do {
		digits[nd++] = (char)('0' + n % 10);
		n /= 10;
	} while (n);
	memcpy(buf, pre, sizeof(pre) - 1);
	len = sizeof(pre) - 1;
	while (nd)
		buf[len++] = digits[--nd];
	memcpy(buf + len, post, sizeof(post) - 1);
	return len + sizeof(post) - 1;
}

int log_write_stderr(const char *buf, size_t len, int timeout_ms)
{
	int state = __atomic_load_n(&out_state, __ATOMIC_ACQUIRE);
	uint64_t dropped, reported;
	bool polled;
	size_t n;
	int err;

	if (state < 0) { /* before any prepare: tests of internal modules */
		log_prepare_stderr();
		state = __atomic_load_n(&out_state, __ATOMIC_ACQUIRE);
		if (state < 0) /* a confined thread cannot: after poll() */
			state = STDERR_FILENO << 3 | NBFD_POLL;
	}
	if (!len)
		return 0;
	if (state == NBFD_NONE) {
		__atomic_add_fetch(&out_dropped, 1, __ATOMIC_RELAXED);
		return -EBADF;
	}
	/* A blocking description written after poll(): one of our writers
	 * at a time, or two could see the same free room and the second
	 * block.  The others drop their text, as for a full stderr.
	 * Acquire/release: pairs with the release below. */
	polled = (state & 7) == NBFD_POLL || (state & 7) == NBFD_POLL_PIPE;
	if (polled && __atomic_exchange_n(&out_poll_busy, true, __ATOMIC_ACQUIRE)) {
		__atomic_add_fetch(&out_dropped, 1, __ATOMIC_RELAXED);
		return -EAGAIN;
	}
	/* A text cut short by a partial write: end its line first. */
	if (__atomic_load_n(&out_cut, __ATOMIC_RELAXED)) {
		if (out_put(state, "\n", 1, timeout_ms, &err) != 1)
			goto drop;
		__atomic_store_n(&out_cut, false, __ATOMIC_RELAXED);
	}
	/* Texts dropped since the last report: say so first.  The claim on
	 * the count (the CAS) keeps two threads from reporting the same
	 * drops; one that fails to write gives its claim back. */
	dropped = __atomic_load_n(&out_dropped, __ATOMIC_RELAXED);
	reported = __atomic_load_n(&out_reported, __ATOMIC_RELAXED);
	if (dropped > reported &&
	    __atomic_compare_exchange_n(&out_reported, &reported, dropped, false,
					__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		char note[128];
		size_t m = drop_note(note, dropped - reported);

		n = out_put(state, note, m, timeout_ms, &err);
		if (n != m) {
			__atomic_sub_fetch(&out_reported, dropped - reported,
					   __ATOMIC_RELAXED);
			if (n) /* part of it: the next text starts anew */
				__atomic_store_n(&out_cut, true, __ATOMIC_RELAXED);
			goto drop;
		}
	}
	n = out_put(state, buf, len, timeout_ms, &err);
	if (n == len) {
		if (polled)
			__atomic_store_n(&out_poll_busy, false, __ATOMIC_RELEASE);
		return 0;
	}
	/* A terminal or socket took part of it: the rest is lost. */
	if (n)
		__atomic_store_n(&out_cut, buf[n - 1] != '\n', __ATOMIC_RELAXED);
drop:
	if (polled)
		__atomic_store_n(&out_poll_busy, false, __ATOMIC_RELEASE);
	__atomic_add_fetch(&out_dropped, 1, __ATOMIC_RELAXED);
	return err ? err : -EAGAIN;
}

int vmm_log_write(const char *buf, size_t len, int timeout_ms)
{
	if ((!buf && len) || timeout_ms < 0)
		return -EINVAL;
	return log_write_stderr(buf, len, timeout_ms);
}

uint64_t vmm_log_dropped(void)
{
	return __atomic_load_n(&out_dropped, __ATOMIC_RELAXED);
}

int vmm_set_log(vmm_log_fn fn, void *opaque, int level)
{
	if (level < VMM_LOG_ERROR || level > VMM_LOG_DEBUG)
		return -EINVAL;
	pthread_mutex_lock(&sink_lock);
	sink_fn = fn;
	sink_opaque = opaque;
	__atomic_store_n(&sink_level, level, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&sink_lock);
	/* The embedder's threads are never confined by the library: this
	 * thread may open() (see log.h). */
	log_prepare_stderr();
	return 0;
}

/*
 * The default sink: "libvmm: MSG\n" in one non-blocking write (not stdio:
 * it runs on seccomp-confined threads, and a buffered stderr's first
 * output would fstat() the fd, on no allow-list but control's); one write
 * keeps lines from different threads whole.
 */
static void log_stderr(const char *msg)
{
	char line[sizeof("libvmm: ") + 512 + 1];
	size_t len = (size_t)snprintf(line, sizeof(line), "libvmm: %s\n", msg);

	if (len >= sizeof(line)) { /* cut: keep the newline */
		len = sizeof(line) - 1;
		line[len - 1] = '\n';
	}
	log_write_stderr(line, len, 0);
}

void vmm_logf(int level, const char *fmt, ...)
{
	vmm_log_fn fn;
	void *opaque;
	char buf[512];
	va_list ap;
	int saved = errno;

	/* Cheap early filter; the level is re-checked under the lock. */
	if (level > __atomic_load_n(&sink_level, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&sink_lock);
	fn = sink_fn;
	opaque = sink_opaque;
	if (level > sink_level) {
		pthread_mutex_unlock(&sink_lock);
		return;
	}
	pthread_mutex_unlock(&sink_lock);
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (fn)
		fn(level, buf, opaque);
	else
		log_stderr(buf);
	errno = saved;
}

/* ---- rate-limited messages (see log.h) -------------------------------- */

/* Context: l->lock held. */
static uint64_t log_now_ns(const struct log_limit *l)
{
	struct timespec ts;

	if (l->clock)
		return l->clock(l->clock_opaque);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void log_limit_set_clock(struct log_limit *l, uint64_t (*clock)(void *opaque),
			 void *opaque)
{
	l->clock = clock;
	l->clock_opaque = opaque;
}

void log_limit_init(struct log_limit *l, const char *noun)
{
	memset(l, 0, sizeof(*l));
	l->noun = noun ? noun : "messages";
	l->level = VMM_LOG_DEBUG;
	pthread_mutex_init(&l->lock, NULL);
}

/* A line to deliver once the limiter's lock is dropped. */
struct log_line {
	int level; /* -1: none */
	char msg[LOG_LIMIT_SUBJECT + LOG_LIMIT_TEXT + 96];
};

/* The burst's summary into @out (if it counted anything), and start
 * counting afresh.  Lock held. */
static void limit_summary(struct log_limit *l, uint64_t now, const char *when,
			  struct log_line *out)
{
	out->level = -1;
	if (l->suppressed) {
		out->level = l->level;
		snprintf(out->msg, sizeof(out->msg), "%s: %llu more %s %s (last: %s)",
			 l->subject, (unsigned long long)l->suppressed, l->noun,
			 when, l->text);
	}
	l->suppressed = 0;
	l->level = VMM_LOG_DEBUG;
	l->report_ns = now;
}

static void limit_emit(const struct log_line *line)
{
	if (line->level >= 0)
		vmm_logf(line->level, "%s", line->msg);
}

void log_vlimited(struct log_limit *l, int level, const char *subject,
		  const char *fmt, va_list ap)
{
	struct log_line prev = { .level = -1 }, cur = { .level = -1 };
	char text[LOG_LIMIT_TEXT];
	uint64_t now;
	int saved = errno;

	/* Formatted outside the lock: only the copy is serialised. */
	vsnprintf(text, sizeof(text), fmt, ap);
	pthread_mutex_lock(&l->lock);
	/* Read under the lock, so that times only grow from one holder to
	 * the next (a stale "now" would look like a huge gap). */
	now = log_now_ns(l);
	l->total++;
	if (l->open && now - l->last_ns >= LOG_LIMIT_GAP_NS) {
		limit_summary(l, now, "in the previous burst", &prev);
		__atomic_store_n(&l->open, false, __ATOMIC_RELAXED);
	}
	if (!l->open) {
		/* First of a burst: in full. */
		cur.level = level;
		snprintf(cur.msg, sizeof(cur.msg), "%s: %s", subject, text);
		__atomic_store_n(&l->open, true, __ATOMIC_RELAXED);
		l->report_ns = now;
	} else {
		l->suppressed++;
		if (level < l->level)
			l->level = level;
		snprintf(l->subject, sizeof(l->subject), "%s", subject);
		memcpy(l->text, text, sizeof(text));
		if (now - l->report_ns >= LOG_LIMIT_REPORT_NS)
			limit_summary(l, now, "so far, still going", &cur);
	}
	l->last_ns = now;
	pthread_mutex_unlock(&l->lock);
	limit_emit(&prev);
	limit_emit(&cur);
	errno = saved;
}

void log_limited(struct log_limit *l, int level, const char *subject,
		 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vlimited(l, level, subject, fmt, ap);
	va_end(ap);
}

void log_limit_quiet(struct log_limit *l)
{
	struct log_line line = { .level = -1 };
	uint64_t now;

	/* Relaxed: a hint; the decision is re-made under the lock, and a
	 * burst missed here is closed by the next message or flush. */
	if (!__atomic_load_n(&l->open, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&l->lock);
	now = log_now_ns(l); /* under the lock: see log_vlimited() */
	if (l->open && now - l->last_ns >= LOG_LIMIT_GAP_NS) {
		limit_summary(l, now, "in the burst that just ended", &line);
		__atomic_store_n(&l->open, false, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&l->lock);
	limit_emit(&line);
}

void log_limit_flush(struct log_limit *l, const char *when)
{
	struct log_line line = { .level = -1 };

	pthread_mutex_lock(&l->lock);
	limit_summary(l, log_now_ns(l), when, &line);
	__atomic_store_n(&l->open, false, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&l->lock);
	limit_emit(&line);
}

uint64_t log_limit_total(struct log_limit *l)
{
	uint64_t n;

	pthread_mutex_lock(&l->lock);
	n = l->total;
	pthread_mutex_unlock(&l->lock);
	return n;
}

void log_limit_destroy(struct log_limit *l, const char *when)
{
	if (!l->noun)
		return; /* never initialised (zeroed) */
	log_limit_flush(l, when);
	pthread_mutex_destroy(&l->lock);
	l->noun = NULL;
}
