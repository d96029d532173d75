/* SPDX-License-Identifier: MIT */
/*
 * The VMM process of one container (what conmon / containerd's shim wait
 * on): builds the microVM with libvmm, boots it, and then serves
 *  - ctl.sock: "start" (send the process configuration to the guest init,
 *    answer once it ran the process or failed), "signal N" (forward),
 *    "pause" / "resume" (the vCPUs, vmm_pause()), "stats" (the VM's
 *    counters as JSON, vm-stats.h: `events`);
 *  - the guest init on the minivmm.ctl port (READY, STARTED, ERROR);
 *  - its own signals: SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR2 are
 *    forwarded to the container's process, SIGWINCH (the terminal's size
 *    changed) becomes a RESIZE;
 * until the VM ends, then exits with the status the guest init wrote to
 * the exit port (the process's exit code, or 128 + its signal).
 * Its stdin/stdout/stderr are the container's (ports minivmm.stdin/
 * stdout/stderr) and then /dev/null: nothing it says reaches them.
 * Started as root, it runs as an unprivileged user with no capabilities
 * from libvmm's start hook on (drop_hook()): whatever it uses afterwards
 * must have been opened before.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "cgroup.h"
#include "errf.h"
#include "exec-cmd.h"
#include "netns.h"
#include "oci.h"
#include "proto.h"
#include "shimctl.h"
#include "parse.h"
#include "user.h"
#include "vm-stats.h"
#include "vmm/vmm.h"

/* pci=noearly: no early PCI scan; on the AMD family 0Fh CPU that nested
 * TCG presents, arch/x86/kernel/aperture_64.c otherwise scans all 256
 * buses twice for an AGP bridge (about 20 s of a nested boot). */
#define CMDLINE                                                                \
	"console=ttyS0 reboot=k panic=-1 pci=conf1,noearly acpi=off i8042.noaux " \
	"i8042.nopnp i8042.dumbkbd quiet"

/* The CPU numbers vmm_set_cpu_affinity() takes: below 1024. */
#define SHIM_MAX_PIN 1024

struct shim {
	const struct oci_shim_params *p;
	struct vmm *vm;
	int sfd;	/* signalfd */
	struct shim_ctl c;
	struct oci_conlog con; /* the guest's serial console -> its file */
	char drop_err[256];
	struct netns_plan net; /* the VM's NIC (net.nic), netns.h */
	unsigned int net_id;   /* the NIC's vmm_add_net() id, if has_nic */
	bool has_nic;
	int tap_fds[VMM_MAX_NET_PAIRS];
	unsigned int ntaps;    /* open in tap_fds until vmm_start() */
	/* The NIC is on a bare tap, connected at start (spec->net_at_start
	 * and the tap made: NETNS_AT_START_FILE written) */
	bool net_later;
	struct virtiofsd vols[SPEC_MAX_VOLUMES]; /* volumes.c */
	struct virtiofsd root_fs; /* the root over virtio-fs (volumes.c) */
};

/* libvmm's messages, from any of its threads (under their seccomp filters:
 * oci_log_file() only write()s): to the log file, never stderr (whose
 * reader may stall), rate-limited (a guest can make libvmm talk). */
static struct oci_limit libvmm_limit = OCI_LIMIT_INIT("libvmm messages", 50);
static char libvmm_last_error[256];
static pthread_mutex_t libvmm_last_lock = PTHREAD_MUTEX_INITIALIZER;

static void libvmm_log(int level, const char *msg, void *opaque)
{
	(void)opaque;
	if (level == VMM_LOG_ERROR) {
		pthread_mutex_lock(&libvmm_last_lock);
		snprintf(libvmm_last_error, sizeof(libvmm_last_error), "%s", msg);
		pthread_mutex_unlock(&libvmm_last_lock);
	}
	oci_log_limited(&libvmm_limit, level == VMM_LOG_ERROR ? "error" :
			level == VMM_LOG_WARN ? "warning" : "info", false,
			"libvmm: %s", msg);
}

/* The last error libvmm reported, for a one-line answer to create. */
static void libvmm_error(char *out, size_t len)
{
	pthread_mutex_lock(&libvmm_last_lock);
	snprintf(out, len, "%s", libvmm_last_error[0] ? libvmm_last_error
						      : "see the runtime log");
	pthread_mutex_unlock(&libvmm_last_lock);
}

static void stop_vm(void *opaque)
{
	vmm_stop(((struct shim *)opaque)->vm);
}

/* ctl.sock's `pause` / `resume`.  Context: the shim's loop. */
static int pause_vm(void *opaque, bool pause)
{
	struct vmm *vm = ((struct shim *)opaque)->vm;

	return pause ? vmm_pause(vm) : vmm_resume(vm);
}

/* ctl.sock's `stats`: the rootfs disk, the NIC if any, and the rest the
 * VM reports itself (vm-stats.h).  Context: the shim's loop. */
static int stats_vm(void *opaque, char **json)
{
	struct shim *s = opaque;
	size_t len = 0;
	FILE *f = open_memstream(json, &len);

	if (!f)
		return -errno;
	stats_print(s->vm, s->p->spec->root_virtiofs ? 0 : 1,
		    s->net.nic || s->net_later ? 1 : 0, true, f);
	if (fclose(f)) {
		free(*json);
		*json = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int add_port(struct vmm *vm, const char *name, int in, int out)
{
	struct vmm_port_config pc = {
		.struct_size = sizeof(pc), .name = name, .in_fd = in, .out_fd = out,
	};
	int ret = vmm_add_port(vm, &pc, NULL);

	if (ret)
		oci_err("port %s: %s", name, strerror(-ret));
	return ret;
}

/* libvmm's start hook: every file of the VM is open (the image, /dev/kvm,
 * the console log, the ports' fds), no thread is confined, no vCPU runs.
 * Context: vmm_start(), on this process's main thread. */
static int drop_hook(void *opaque)
{
	struct shim *s = opaque;
	int ret;

	/* The volumes' sockets are connected: removed while still root. */
	oci_volumes_connected(s->p->spec, s->vols);
	virtiofsd_unlink(&s->root_fs);
	ret = user_drop(s->p->uid, s->p->gid, s->drop_err, sizeof(s->drop_err));

	if (ret)
		oci_err("dropping to uid %u gid %u: %s", (unsigned int)s->p->uid,
			(unsigned int)s->p->gid, s->drop_err);
	return ret;
}

/* The NIC on the tap netns_connect() made, with the veth's MAC and MTU
 * (connected at start: a random MAC, MTU 1500): one queue
 * pair per tap queue (per vCPU). */
static int add_net(struct shim *s)
{
	struct vmm_net_config nc = {
		.struct_size = sizeof(nc), .fds = s->tap_fds, .nr_fds = s->ntaps,
		.queue_pairs = (uint16_t)s->ntaps, .mtu = (uint16_t)s->net.ifc.mtu,
	};
	int ret;

	memcpy(nc.mac, s->net_later ? s->net.find_mac : s->net.ifc.mac, 6);
	ret = vmm_add_net(s->vm, &nc, &s->net_id);
	s->has_nic = !ret;
	if (ret)
		oci_err("the VM's network device: %s", strerror(-ret));
	return ret;
}

/* A cpuset (linux.resources.cpu.cpus) pins vCPU i and the I/O thread
 * serving its queues to the set's i-th CPU (vmm_set_cpu_affinity()); a
 * set the library cannot take (CPUs from 1024 on) leaves them unpinned
 * inside the cpuset, with a warning. */
static int pin_vcpus(struct vmm *vm, const struct oci_spec *spec)
{
	unsigned int cpus[SHIM_MAX_PIN], n;
	int ret;

	if (!spec->cpuset_list)
		return 0;
	if (parse_cpulist(spec->cpuset_list, cpus, SHIM_MAX_PIN, &n))
		n = 0;
	for (unsigned int i = 0; i < n; i++)
		if (cpus[i] >= SHIM_MAX_PIN)
			n = 0;
	if (!n) {
		oci_warn("cpuset \"%s\": vCPUs not pinned (CPUs from %d on)",
			 spec->cpuset_list, SHIM_MAX_PIN);
		return 0;
	}
	if ((ret = vmm_set_cpu_affinity(vm, cpus, n)))
		oci_err("pinning the vCPUs to cpuset %s: %s", spec->cpuset_list,
			strerror(-ret));
	return ret;
}

/* The exec channel (exec-cmd.h): a vsock device whose host side is
 * STATE/vsock.sock (created by vmm_start(), as root, in the 0700 state
 * directory: only root reaches it).  A state path too long for the
 * socket leaves the VM without it: exec and ps then say so. */
static int add_vsock(struct shim *s)
{
	struct vmm_vsock_config vc = { .struct_size = sizeof(vc),
				       .guest_cid = EXEC_GUEST_CID };
	char path[4200];
	int ret;

	snprintf(path, sizeof(path), "%s/" OCI_VSOCK_SOCKET, s->p->state_dir);
	if (strlen(path) > VMM_VSOCK_PATH_MAX) {
		oci_warn("%s is over %u bytes: no exec channel (exec and ps will fail)",
			 path, VMM_VSOCK_PATH_MAX);
		return 0;
	}
	vc.socket_path = path;
	ret = vmm_add_vsock(s->vm, &vc);
	if (ret)
		oci_err("the VM's vsock device (exec): %s", strerror(-ret));
	return ret;
}

/*
 * The namespace as `minivmm-oci start` left it (the NIC connected at
 * start: it redirected the tap to the interface CNI made, or set the tap
 * down when it found none): read again here (no privilege needed:
 * netlink dumps, /proc/net) for the guest's NET records, which find the
 * NIC by the MAC it was made with.  None (only a loopback): no record,
 * the guest init leaves the NIC down, unconfigured, and its link is held
 * down (the guest sees no carrier, as the tap has no peer).
 * Context: the shim's loop (shim_ctl's read_net), once, before CONFIG.
 */
static void read_net_at_start(void *opaque)
{
	struct shim *s = opaque;
	uint8_t mac[6];
	char err[256];

	memcpy(mac, s->net.find_mac, 6);
	memset(&s->net, 0, sizeof(s->net));
	if (netns_read(&s->net, err, sizeof(err))) {
		oci_warn("the container's network at start: %s; the VM's NIC stays down", err);
		memset(&s->net, 0, sizeof(s->net));
	} else if (s->net.notes[0]) {
		oci_info("network namespace at start: %s", s->net.notes);
	}
	s->net.find = true;
	memcpy(s->net.find_mac, mac, 6);
	s->c.net = s->net.nic ? &s->net : NULL;
	if (!s->net.nic && s->has_nic) {
		int ret = vmm_set_net_link(s->vm, s->net_id, 0);

		if (ret)
			oci_warn("holding the VM's NIC link down: %s", strerror(-ret));
	}
}

static void close_taps(struct shim *s)
{
	for (unsigned int i = 0; i < s->ntaps; i++)
		close(s->tap_fds[i]);
	s->ntaps = 0;
}

/*
 * Join the container's network namespace and connect the VM to it
 * (netns.h), while the process is still root with every capability
 * (setns, the tap, tc), before anything is given up.  No namespace path:
 * a new one, made here as runc does (containerd's CNI, `ctr run --cni`,
 * configures /proc/PID/ns/net of the process create reports: never the
 * host's).  Connected at start (spec->net_at_start: SPEC_ANN_NETWORK
 * "start", or a new namespace by default) the VM gets a NIC on a bare tap
 * in the namespace (a random local MAC) and NETNS_AT_START_FILE tells
 * `minivmm-oci start` to redirect it to the interface found then
 * (read_net_at_start()).  By default a tap that cannot be made (no
 * /dev/net/tun, no tun module) leaves the VM without a NIC, with a
 * warning; asked for by the annotation, it fails create.  A pod's
 * sandbox container (spec->pod_sandbox) gets no NIC: the namespace is
 * left to the pod's first application container's VM.
 * Context: oci_shim_run(), one thread.
 */
static int setup_net(struct shim *s, char *err, size_t errlen)
{
	const struct oci_spec *spec = s->p->spec;
	char path[4200];
	unsigned int pairs;

	if (!spec->netns_path && s->p->drop && unshare(CLONE_NEWNET))
		return errf_line(err, errlen, "a new network namespace: %s", strerror(errno));
	if (spec->netns_path && netns_enter(spec->netns_path, err, errlen))
		return -1;
	if (spec->pod_sandbox) {
		oci_info("a pod's sandbox container: its VM has no network device (the "
			 "pod's first container's VM serves the namespace)");
		return 0;
	}
	pairs = spec_guest_vcpus(spec, s->p->set->cpus_default);
	if (pairs > VMM_MAX_NET_PAIRS)
		pairs = VMM_MAX_NET_PAIRS;
	if (spec->net_at_start) {
		if (getrandom(s->net.find_mac, 6, 0) != 6)
			return errf_line(err, errlen, "getrandom: %s", strerror(errno));
		/* Unicast, locally administered. */
		s->net.find_mac[0] = (uint8_t)((s->net.find_mac[0] & 0xfc) | 0x02);
		s->net.ifc.mtu = 0;
		if (netns_tap_open(pairs, s->tap_fds, err, errlen)) {
			if (spec->net_mode == SPEC_NET_START)
				return -1;
			oci_warn("%s: the VM has no network device", err);
			return 0;
		}
		s->ntaps = pairs;
		snprintf(path, sizeof(path), "%s/" NETNS_AT_START_FILE, s->p->state_dir);
		if (oci_file_write_atomic(path, "")) {
			close_taps(s);
			return errf_line(err, errlen, "%s: %s", path, strerror(errno));
		}
		s->net_later = true;
		return 0;
	}
	if (!spec->netns_path)
		return 0;
	if (netns_read(&s->net, err, errlen))
		return -1;
	if (s->net.notes[0])
		oci_warn("network namespace %s: %s", spec->netns_path, s->net.notes);
	if (!s->net.nic) {
		oci_info("network namespace %s has only a loopback: the VM has no "
			 "network device", spec->netns_path);
		return 0;
	}
	if (netns_connect(&s->net, pairs, s->tap_fds, err, errlen))
		return -1;
	s->ntaps = pairs;
	/* Not fatal: only connections made inside the namespace need it. */
	if (netns_local_path(&s->net, err, errlen))
		oci_warn("network namespace %s: the namespace's own connections to the "
			 "VM (rootless podman's -p forwarder) will not reach it: %s",
			 spec->netns_path, err);
	return 0;
}

static int build_vm(struct shim *s, int guest_ctl)
{
	const struct oci_shim_params *p = s->p;
	const struct oci_spec *spec = p->spec;
	struct vmm_disk_config dc = { .struct_size = sizeof(dc) };
	char cmdline[VMM_MAX_CMDLINE + 1];
	const char *console = s->con.path;
	int con = s->con.pipe_w, ret, tty = p->tty_slave;

	snprintf(cmdline, sizeof(cmdline), "%s%s%s", CMDLINE,
		 p->set->append ? " " : "", p->set->append ? p->set->append : "");
	if ((ret = vmm_set_vcpus(s->vm, spec_guest_vcpus(spec, p->set->cpus_default))) ||
	    (ret = vmm_set_memory(s->vm, spec_guest_memory(spec, p->set->mem_default))) ||
	    (ret = vmm_set_kernel(s->vm, p->set->kernel, p->set->initrd, cmdline)) ||
	    (ret = vmm_set_console(s->vm, -1, con))) {
		oci_err("configuring the VM: %s", strerror(-ret));
		return ret;
	}
	if ((ret = pin_vcpus(s->vm, spec)))
		return ret;
	dc.path = p->image;
	dc.flags = spec->root_ro ? VMM_DISK_READONLY : 0;
	dc.num_queues = 1;
	if (spec->root_virtiofs ? (ret = oci_rootfs_add(s->vm, spec, &s->root_fs)) :
				  (ret = vmm_add_disk(s->vm, &dc, NULL)))
		return ret;
	if (s->ntaps && (ret = add_net(s)))
		return ret;
	if ((ret = oci_volumes_add(s->vm, spec, s->vols)))
		return ret;
	if ((ret = add_port(s->vm, PROTO_PORT_CTL, guest_ctl, guest_ctl)) ||
	    (ret = add_port(s->vm, PROTO_PORT_STDIN, tty >= 0 ? tty : 0, -1)) ||
	    (ret = add_port(s->vm, PROTO_PORT_STDOUT, -1, tty >= 0 ? tty : 1)) ||
	    (ret = add_port(s->vm, PROTO_PORT_STDERR, -1, tty >= 0 ? -1 : 2)))
		return ret;
	if ((ret = add_vsock(s)))
		return ret;
	if (p->set->seccomp && (ret = vmm_set_seccomp(s->vm, VMM_SECCOMP_KILL)))
		return ret;
	if (p->drop && (ret = vmm_set_start_hook(s->vm, drop_hook, s)))
		return ret;
	if ((ret = vmm_start(s->vm))) {
		char why[256];

		libvmm_error(why, sizeof(why));
		oci_err("starting the VM: %s: %s (see %s)", strerror(-ret), why, console);
		return ret;
	}
	/* con stays open: libvmm borrows the console fd until vmm_destroy();
	 * the taps it duplicated. */
	close_taps(s);
	oci_volumes_connected(spec, s->vols);
	virtiofsd_unlink(&s->root_fs);
	return 0;
}

static void ready_report(int fd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void ready_report(int fd, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (write(fd, line, strlen(line)) < 0)
		oci_warn("reporting to create: %s", strerror(errno));
	close(fd);
}

int oci_shim_run(const struct oci_shim_params *p)
{
	struct shim s = { .p = p, .sfd = -1 };
	int sp[2], reason = VMM_EXIT_ERROR, null, code;
	char err[512];
	sigset_t mask;
	uint32_t status;

	signal(SIGPIPE, SIG_IGN);
	vmm_set_log(libvmm_log, NULL, VMM_LOG_WARN);
	/* Every device is opened before the container's cgroup is joined --
	 * /dev/kvm (the VM made), the tap's /dev/net/tun, /dev/null for our
	 * stdio -- and the virtiofsd started (each opens /dev/null): the engine's
	 * device rules there are a container's, which may refuse them all
	 * (podman puts a pod's containers under the pod's cgroup, whose eBPF
	 * device filter refuses /dev/kvm and /dev/net/tun with EPERM). */
	if ((code = vmm_create(&s.vm))) {
		oci_err("cannot create the VM: %s", strerror(-code));
		ready_report(p->ready_fd, "error: cannot create the VM: %s\n", strerror(-code));
		return 1;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigaddset(&mask, SIGUSR2);
	sigaddset(&mask, SIGWINCH);
	/* Blocked before any thread exists: every VMM thread inherits it. */
	sigprocmask(SIG_BLOCK, &mask, NULL);
	if (setup_net(&s, err, sizeof(err))) {
		oci_err("%s", err);
		ready_report(p->ready_fd, "error: %s\n", err);
		return 1;
	}
	/* The volumes' virtiofsd, as root (read-only binds), before the
	 * VM is built: vmm_start() connects to them. */
	if (oci_rootfs_start(p->spec, p->state_dir, &s.root_fs, err, sizeof(err)) ||
	    oci_volumes_start(p->spec, p->state_dir, s.vols, err, sizeof(err))) {
		oci_err("%s", err);
		ready_report(p->ready_fd, "error: %s\n", err);
		virtiofsd_reap(&s.root_fs);
		return 1;
	}
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	/* Into the container's cgroup before the guest's RAM and the VM's
	 * threads exist: they are charged there from the start. */
	if (p->cgroup_dir && *p->cgroup_dir && (code = oci_cgroup_join(p->cgroup_dir, 0))) {
		oci_err("joining cgroup %s: %s", p->cgroup_dir, strerror(-code));
		ready_report(p->ready_fd, "error: joining cgroup %s: %s\n", p->cgroup_dir,
			     strerror(-code));
		return 1;
	}
	/* So is what user_restrict() empties (user.h): every capability set
	 * but the permitted and effective ones, which the uid change in
	 * drop_hook() clears; no execve() can give one back. */
	if (p->drop && user_restrict(s.drop_err, sizeof(s.drop_err))) {
		oci_err("%s", s.drop_err);
		ready_report(p->ready_fd, "error: %s\n", s.drop_err);
		return 1;
	}
	s.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) || s.sfd < 0) {
		ready_report(p->ready_fd, "error: %s\n", strerror(errno));
		return 1;
	}
	if (oci_conlog_open(&s.con, p->set, p->state_dir, err, sizeof(err))) {
		ready_report(p->ready_fd, "error: %s\n", err);
		return 1;
	}
	shim_ctl_init(&s.c, p, sp[0], stop_vm, &s);
	s.c.net = s.net.nic ? &s.net : NULL;
	if (s.net_later)
		s.c.read_net = read_net_at_start;
	s.c.pause_vm = pause_vm;
	s.c.stats_vm = stats_vm;
	/* Opened now: after the uid drop the file may be out of reach. */
	if (p->set->timings)
		s.c.timings_fd = open(p->set->timings,
				      O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (build_vm(&s, sp[1])) {
		libvmm_error(err, sizeof(err));
		ready_report(p->ready_fd, "error: cannot start the container's VM: "
			     "%s\n", err);
		vmm_destroy(s.vm);
		close_taps(&s);
		oci_volumes_stop(p->spec, s.vols);
		virtiofsd_reap(&s.root_fs);
		return 1;
	}
	close(sp[1]);
	shim_ctl_timing(&s.c, "vm_started");
	/* libvmm has its own copies of the stdio fds: from now on nothing we
	 * print can reach the container's streams. */
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		close(null);
	}
	oci_log_quiet_stderr(true);
	ready_report(p->ready_fd, "ok\n");

	/*
	 * One thread serves it all; nothing in this loop waits for a peer:
	 * the ctl socket, the clients and the console pipe are non-blocking,
	 * and each turn reads a bounded amount (shimctl.h), so the VM's end
	 * and signals are seen at the next turn whatever the guest sends.
	 */
	for (;;) {
		struct pollfd pfd[3 + SHIM_CTL_NFDS] = {
			{ .fd = vmm_get_exit_eventfd(s.vm), .events = POLLIN },
			{ .fd = s.sfd, .events = POLLIN },
			{ .fd = s.con.pipe_r, .events = POLLIN },
		};
		int n = 3 + shim_ctl_pollfds(&s.c, pfd + 3);

		if (poll(pfd, (nfds_t)n, shim_ctl_timeout_ms(&s.c)) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[0].revents)
			break;
		if (pfd[1].revents) {
			struct signalfd_siginfo si;

			while (read(s.sfd, &si, sizeof(si)) == sizeof(si))
				shim_ctl_signal(&s.c, (int)si.ssi_signo);
		}
		if (pfd[2].revents)
			oci_conlog_pump(&s.con, OCI_CONLOG_TURN);
		shim_ctl_handle(&s.c, pfd + 3);
	}
	/* Bounded: the devices' stops write out queued output for at most
	 * a second (the serial console) and half a second (the ports, whose
	 * ctl socket nobody reads meanwhile), then drop it. */
	vmm_wait(s.vm, &reason);
	shim_ctl_finish(&s.c);
	oci_conlog_finish(&s.con);
	if (reason == VMM_EXIT_GUEST_STATUS && !vmm_get_guest_status(s.vm, &status)) {
		code = (int)(status & 0xff);
	} else if (s.c.exit_code) {
		code = s.c.exit_code;
	} else {
		oci_err("the container's VM stopped: %s (see its kernel log)",
			vmm_exit_reason_str(reason));
		code = 255;
	}
	shim_ctl_timing(&s.c, "vm_exited");
	vmm_destroy(s.vm);
	/* The VM's connections are closed: each virtiofsd ends. */
	oci_volumes_stop(p->spec, s.vols);
	virtiofsd_reap(&s.root_fs);
	oci_limit_flush(&libvmm_limit, "warning");
	close(s.c.ctl);
	if (s.c.timings_fd >= 0)
		close(s.c.timings_fd);
	return code;
}
