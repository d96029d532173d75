/* SPDX-License-Identifier: MIT */
/*
 * minivmm: the command-line front end of libvmm.  Everything it does goes
 * through the public API (include/vmm/vmm.h), like any embedder's code.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include "api.h"
#include "cli.h"
#include "sanitizer.h"
#include "vm-stats.h"
#include "user.h"

/*
 * minivmm's own messages: "minivmm: MSG" on stderr through
 * vmm_log_write(), waiting at most 200 ms for a stderr that takes nothing
 * (a pipe with stdout that is full for a moment after a guest's flood
 * still gets the last word; one nobody drains costs the line, not a stuck
 * exit).
 */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char line[1024];
	size_t n = sizeof("minivmm: ") - 1;
	va_list ap;
	int m;

	memcpy(line, "minivmm: ", n);
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (m > 0)
		n += (size_t)m < sizeof(line) - n - 1 ? (size_t)m : sizeof(line) - n - 2;
	line[n++] = '\n';
	vmm_log_write(line, n, 200);
}

/*
 * --stats / --stats-json at exit: composed in memory, then written with a
 * bounded wait (the JSON of many disks is one line of hundreds of KiB,
 * more than a pipe holds): a reader that keeps reading gets all of it, a
 * stderr that takes nothing for a second costs the rest.
 */
static void stats_report(struct vmm *vm, const struct cli_opts *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		say("--stats: %s", strerror(errno));
		return;
	}
	stats_print(vm, o->nr_disks, o->nr_nets, o->stats_json, f);
	if (!fclose(f))
		vmm_log_write(buf, len, 1000);
	free(buf);
}

static struct termios saved_tio;
static int tio_saved;

/* Raw-ish console when stdin is a terminal: the guest's line discipline
 * does the echoing and editing.  ISIG stays on so Ctrl-C stops the VM. */
static void console_raw(void)
{
	struct termios t;

	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_tio))
		return;
	t = saved_tio;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	t.c_iflag &= ~(tcflag_t)(ICRNL);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	if (!tcsetattr(STDIN_FILENO, TCSANOW, &t))
		tio_saved = 1;
}

static void console_restore(void)
{
	if (tio_saved)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
}

/* Wait for the VM to stop or for SIGINT/SIGTERM (then stop it), serving
 * the API socket meanwhile.  Returns the signal number that stopped it, or
 * 0; *@api_stop is set when an API "stop" ended it. */
static int wait_for_exit(struct vmm *vm, int sfd, struct api_server *api,
			 const struct api_info *info, bool *api_stop)
{
	struct pollfd pfd[3] = {
		{ .fd = vmm_get_exit_eventfd(vm), .events = POLLIN },
		{ .fd = sfd, .events = POLLIN },
		{ .fd = api ? api_server_fd(api) : -1, .events = POLLIN },
	};

	for (;;) {
		if (poll(pfd, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 0;
		}
		if (pfd[0].revents)
			return 0;
		if (pfd[1].revents) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				vmm_stop(vm);
				return (int)si.ssi_signo;
			}
		}
		if (pfd[2].revents && api_server_serve(api, vm, info))
			*api_stop = true;
	}
}

/* --user: the ids to drop to, and the reason if the drop failed. */
struct drop {
	uid_t uid;
	gid_t gid;
	char err[256];
};

/* libvmm's start hook: every file of the VM is open, no thread is
 * confined, no vCPU runs yet (vmm_set_start_hook()). */
static int drop_hook(void *opaque)
{
	struct drop *d = opaque;

	return user_drop(d->uid, d->gid, d->err, sizeof(d->err));
}

/* --fs: start virtiofsd for each path=DIR, then add every device. */
static int add_fs(struct vmm *vm, struct cli_opts *o)
{
	char err[256];

	for (unsigned int i = 0; i < o->nr_fs; i++) {
		struct cli_fs *f = &o->fs[i];
		struct vmm_fs_config c = {
			.struct_size = sizeof(c),
			.num_queues = (uint16_t)f->num_queues,
			.queue_size = (uint16_t)f->queue_size,
		};
		int ret;

		if (fs_spawn(f, err, sizeof(err))) {
			say("%s", err);
			return -1;
		}
		c.tag = f->tag;
		c.socket = f->socket;
		ret = vmm_add_fs(vm, &c, NULL);
		if (ret) {
			say("--fs %s: %s", f->tag, strerror(-ret));
			return -1;
		}
	}
	return 0;
}

/* The virtiofsd children end with the VM's connections. */
static void reap_fs(struct cli_opts *o)
{
	for (unsigned int i = 0; i < o->nr_fs; i++)
		fs_reap(&o->fs[i]);
}

static int run(struct cli_opts *o, struct drop *drop)
{
	bool confined = false;
	struct api_info info = { .vcpus = o->smp, .memory = o->mem,
				 .nr_disks = o->nr_disks, .nr_nets = o->nr_nets };
	struct api_server *api = NULL;
	struct vmm *vm = NULL;
	bool api_stop = false;
	int ret, reason = VMM_EXIT_ERROR, sig, sfd;
	uint32_t status = 0;
	sigset_t mask;

	vmm_set_log(NULL, NULL, o->log_level);
	ret = vmm_create(&vm);
	if (ret) {
		say("cannot create the VM: %s", strerror(-ret));
		return 1;
	}
	if ((ret = vmm_set_vcpus(vm, o->smp))) {
		say("--smp %u: %s", o->smp, strerror(-ret));
		goto out;
	}
	if ((ret = vmm_set_memory(vm, o->mem))) {
		say("--mem: %s", strerror(-ret));
		goto out;
	}
	if ((ret = vmm_set_kernel(vm, o->kernel, o->initrd, o->cmdline))) {
		say("kernel: %s", strerror(-ret));
		goto out;
	}
	if ((ret = vmm_set_console(vm, STDIN_FILENO, STDOUT_FILENO)))
		goto out;
	/* Every VMM thread gets its seccomp allow-list; a call off the list
	 * kills the process (SIGSYS).  Sanitizer builds keep it off: their
	 * runtime (LeakSanitizer at exit) needs ptrace and clone. */
	if (!o->no_seccomp && !SANITIZER_BUILD &&
	    (ret = vmm_set_seccomp(vm, VMM_SECCOMP_KILL))) {
		say("seccomp: %s", strerror(-ret));
		goto out;
	}
	/* --user: vmm_start() opens the kernel, initrd and disk images, then
	 * calls this before it confines or starts a thread that runs the
	 * guest. */
	if (drop && (ret = vmm_set_start_hook(vm, drop_hook, drop))) {
		say("--user: %s", strerror(-ret));
		goto out;
	}
	/* --fs: the back end maps guest RAM; shareable unless told otherwise. */
	if (o->nr_fs && !o->mem_backend_set)
		o->mem_backend = VMM_MEMORY_MEMFD;
	if ((ret = vmm_set_memory_backend(vm, o->mem_backend))) {
		say("--mem-backend: %s", strerror(-ret));
		goto out;
	}
	if (o->nr_cpu_affinity &&
	    (ret = vmm_set_cpu_affinity(vm, o->cpu_affinity, o->nr_cpu_affinity))) {
		say("--cpu-affinity: %s", strerror(-ret));
		goto out;
	}
	if ((ret = vmm_set_iothread_sched(vm, o->io_sched))) {
		say("--io-sched: %s", strerror(-ret));
		goto out;
	}
	for (unsigned int i = 0; i < o->nr_disks; i++) {
		ret = vmm_add_disk(vm, &o->disks[i].cfg, NULL);
		if (ret) {
			say("--disk %s: %s",
				o->disks[i].cfg.path, strerror(-ret));
			goto out;
		}
	}
	for (unsigned int i = 0; i < o->nr_nets; i++) {
		ret = vmm_add_net(vm, &o->nets[i].cfg, NULL);
		if (ret) {
			say("--net #%u: %s", i + 1, strerror(-ret));
			goto out;
		}
	}
	if (add_fs(vm, o))
		goto out;
	if (o->vsock.struct_size && (ret = vmm_add_vsock(vm, &o->vsock))) {
		say("--vsock: %s", strerror(-ret));
		goto out;
	}

	/* Bound now, as the invoking user, before anything is confined. */
	if (o->api_socket) {
		char err[256];

		ret = api_server_open(o->api_socket, &api, err, sizeof(err));
		if (ret) {
			say("--api-socket %s", err);
			goto out;
		}
	}
	/* SIGINT/SIGTERM are read through a signalfd; block them before the
	 * library creates its threads so that none of them takes the signal. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		ret = -errno;
		say("signalfd: %s", strerror(errno));
		goto out;
	}
	console_raw();
	ret = vmm_start(vm);
	if (ret) {
		console_restore();
		close(sfd);
		if (drop && drop->err[0])
			say("--user: %s", drop->err);
		else
			say("cannot start the VM: %s",
				strerror(-ret));
		goto out;
	}
	if (drop && o->log_level >= VMM_LOG_INFO)
		say("running as uid %u gid %u, no supplementary groups, "
		    "no capabilities, no_new_privs",
			(unsigned int)drop->uid, (unsigned int)drop->gid);
	/* The virtiofsd sockets are connected: their paths can go now, while
	 * unlink() is still allowed. */
	for (unsigned int i = 0; i < o->nr_fs; i++)
		fs_started(&o->fs[i]);
	/* This thread now only waits, stops, reports and tears down: the
	 * control allow-list (no open, no exec, no wait4) is all it needs. */
	confined = !o->no_seccomp && !SANITIZER_BUILD;
	if (!o->no_seccomp && !SANITIZER_BUILD &&
	    (ret = vmm_seccomp_confine_current_thread(vm))) {
		say("seccomp: %s", strerror(-ret));
		vmm_stop(vm);
	}
	sig = wait_for_exit(vm, sfd, api, &info, &api_stop);
	vmm_wait(vm, &reason);
	if (reason == VMM_EXIT_GUEST_STATUS && vmm_get_guest_status(vm, &status))
		reason = VMM_EXIT_ERROR; /* cannot happen: the status is set */
	console_restore();
	if (o->stats)
		stats_report(vm, o);
	close(sfd);
	vmm_destroy(vm);
	/* Confined: no wait4.  The virtiofsd children exit as their
	 * connections close (vmm_destroy()), at the latest with us
	 * (PR_SET_PDEATHSIG), and init reaps them after our exit. */
	if (!confined)
		reap_fs(o);
	api_server_close(api);
	if (sig)
		return 128 + sig;
	if (api_stop && reason == VMM_EXIT_STOPPED)
		return 0; /* asked to stop, through the API: not a failure */
	switch (reason) {
	case VMM_EXIT_GUEST_RESET:
	case VMM_EXIT_POWEROFF:
		return 0;
	case VMM_EXIT_GUEST_STATUS:
		/* The exit port (VMM_EXIT_PORT): the guest's status, as a
		 * process exit status (its low 8 bits). */
		return (int)(status & 0xff);
	case VMM_EXIT_TRIPLE_FAULT:
		say("the guest triple-faulted");
		return 1;
	default:
		say("the VM stopped: %s",
			vmm_exit_reason_str(reason));
		return 1;
	}
out:
	vmm_destroy(vm);
	reap_fs(o);
	api_server_close(api);
	return 1;
}

/*
 * Every virtqueue holds two eventfds (kick, interrupt) and libvmm sizes its
 * io_uring file tables by RLIMIT_NOFILE: with one queue per vCPU, 32 vCPUs
 * and 16 disks need ~1200 fds, over the usual soft limit of 1024.  Raise
 * the soft limit to the hard one at start-up (the hard limit is the
 * administrator's cap).  A failure only leaves the old limit.
 */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int main(int argc, char **argv)
{
	struct cli_opts o;
	struct drop drop = { 0 };
	char err[256] = "";
	int ret;

	/* The client form: minivmm --api PATH COMMAND [ARGS]. */
	if (argc >= 2 && !strcmp(argv[1], "--api"))
		return argc >= 4 ? api_client(argv[2], argv[3], argc - 4, argv + 4) :
				   api_client(NULL, NULL, 0, NULL);
	if (cli_parse(argc, argv, &o, err, sizeof(err))) {
		say("%s (see --help)", err);
		cli_free(&o);
		return 2;
	}
	if (o.help) {
		cli_usage(argv[0], stdout);
		cli_free(&o);
		return 0;
	}
	if (o.version) {
		printf("minivmm %s\n", VMM_VERSION_STRING);
		cli_free(&o);
		return 0;
	}
	/* Names are looked up now, while this is the only thread. */
	if (o.user.set && user_resolve(&o.user, &drop.uid, &drop.gid, err,
				       sizeof(err))) {
		say("%s (see --help)", err);
		cli_free(&o);
		return 2;
	}
	/* The capability sets a uid change keeps, emptied while this is the
	 * only thread: every VMM thread inherits them (user.h). */
	if (o.user.set && user_restrict(err, sizeof(err))) {
		say("--user: %s", err);
		cli_free(&o);
		return 1;
	}
	raise_nofile();
	ret = run(&o, o.user.set ? &drop : NULL);
	cli_free(&o);
	return ret;
}
