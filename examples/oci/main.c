/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci: an OCI runtime (the usual OCI runtime command line) that runs each
 * container in a minivmm microVM.  See minivmm-oci(1) and README "Running
 * containers".  This file holds the commands; the VMM process is shim.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "cli.h"
#include "exec-cmd.h"
#include "manage.h"
#include "netns.h"
#include "oci.h"
#include "rootless.h"
#include "spec.h"
#include "vmm/vmm.h"

static struct oci_settings SET;

static void append_timing(const char *id, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void append_timing(const char *id, const char *fmt, ...)
{
	char rec[1024];
	va_list ap;
	FILE *f;

	if (!SET.timings || !(f = fopen(SET.timings, "ae")))
		return;
	va_start(ap, fmt);
	vsnprintf(rec, sizeof(rec), fmt, ap);
	va_end(ap);
	fprintf(f, "{\"id\":\"%s\",%s}\n", id, rec);
	fclose(f);
}

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

/* CPU time (user + system) of this process and the children it waited
 * for (mkfs.ext4, debugfs): what create cost the host, outside the VMM. */
static double cpu_ms(void)
{
	struct rusage self, kids;

	if (getrusage(RUSAGE_SELF, &self) || getrusage(RUSAGE_CHILDREN, &kids))
		return -1;
	return (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec +
			kids.ru_stime.tv_sec) * 1e3 +
	       (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec + kids.ru_utime.tv_usec +
			kids.ru_stime.tv_usec) / 1e3;
}

/* The OCI console socket: the pty master goes to @path with SCM_RIGHTS. */
static int send_console(const char *path, int master, char *err, size_t errlen)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char name[] = "/dev/ptmx";
	struct iovec iov = { .iov_base = name, .iov_len = sizeof(name) - 1 };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	int fd;

	if (strlen(path) >= sizeof(a.sun_path)) {
		snprintf(err, errlen, "console socket path %s is too long", path);
		return -1;
	}
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		snprintf(err, errlen, "console socket %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	memset(u.buf, 0, sizeof(u.buf));
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &master, sizeof(int));
	if (sendmsg(fd, &m, 0) < 0) {
		snprintf(err, errlen, "sending the terminal to %s: %s", path,
			 strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static int make_tty(const char *console_socket, int *slave, char *err,
		    size_t errlen)
{
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	struct termios t;

	if (master < 0 || grantpt(master) || unlockpt(master)) {
		snprintf(err, errlen, "cannot allocate a pty: %s", strerror(errno));
		return -1;
	}
	*slave = open(ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*slave < 0) {
		snprintf(err, errlen, "pty: %s", strerror(errno));
		close(master);
		return -1;
	}
	/* The guest's own pty does the line discipline: this one only
	 * carries bytes. */
	if (!tcgetattr(*slave, &t)) {
		cfmakeraw(&t);
		tcsetattr(*slave, TCSANOW, &t);
	}
	if (send_console(console_socket, master, err, errlen)) {
		close(master);
		return -1;
	}
	close(master);
	return 0;
}

static int listen_ctl(const char *dir)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd, ret = -1;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(a.sun_path, sizeof(a.sun_path), "ctl.sock");
	if (fd >= 0 && chdir(dir) == 0 &&
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
		ret = listen(fd, 16);
	if (cwd >= 0) {
		if (fchdir(cwd))
			ret = -1;
		close(cwd);
	}
	if (ret) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* mkdir -p (containerd's --root is several levels deep). */
static void mkdir_p(const char *path)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			mkdir(p, 0711);
			*s = '/';
		}
	mkdir(p, 0711);
}

static void now_rfc3339(char *out, size_t len)
{
	struct timespec ts;
	struct tm tm;
	char base[40];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, len, "%s.%09ldZ", base, ts.tv_nsec);
}

static int cmd_create(const struct oci_cli *c)
{
	struct oci_spec spec;
	struct oci_image_stats is = { 0 };
	struct oci_state st = { 0 };
	char err[2048], dir[4096], img[4200], bundle[PATH_MAX], buf[2048];
	char cgdir[PATH_MAX] = "";
	uint64_t t0 = oci_now_ns(), t_img;
	int tty = -1, lfd = -1, ready[2] = { -1, -1 }, status;
	pid_t child, vmm = 0;
	bool drop = geteuid() == 0;
	uid_t vmm_uid = 0;
	gid_t vmm_gid = 0;
	size_t have = 0;

	if (!realpath(c->bundle, bundle)) {
		oci_err("bundle %s: %s", c->bundle, strerror(errno));
		return 1;
	}
	if (spec_load(bundle, NULL, &spec, err, sizeof(err))) {
		oci_err("%s", err);
		spec_free(&spec);
		return 1;
	}
	if (c->preserve_fds) {
		oci_err("--preserve-fds %u is not supported: file descriptors cannot be "
			"passed into the container's VM", c->preserve_fds);
		goto err_spec;
	}
	if (spec.terminal && !c->console_socket) {
		oci_err("process.terminal is set but no --console-socket was given");
		goto err_spec;
	}
	if (spec_check_executable(&spec, err, sizeof(err)) ||
	    oci_boot_files(&SET, err, sizeof(err))) {
		oci_err("%s", err);
		goto err_spec;
	}
	/* Who the VMM process becomes (resolved here: one thread).  Not
	 * started as root, it has no privilege to give up and keeps its ids. */
	if (drop && oci_vmm_user(&SET, &vmm_uid, &vmm_gid, err, sizeof(err))) {
		oci_err("%s", err);
		goto err_spec;
	}
	if (spec.warnings)
		oci_warn("%s", spec.warnings);
	/* A new namespace (made only as root) is connected at start by
	 * default: `ctr run --cni` fills it between create and start. */
	spec.net_at_start = spec_net_at_start(&spec, drop);
	/* The root's kind: the annotation over the `rootfs` setting. */
	spec.root_virtiofs = (spec.ann_rootfs ? spec.ann_rootfs : SET.rootfs) ==
			     SPEC_ROOTFS_VIRTIOFS;
	if (spec.root_virtiofs && spec.nvolumes >= VMM_MAX_FS) {
		oci_err("with rootfs=virtiofs, at most %u directories can be bound into "
			"the container (%u asked)", VMM_MAX_FS - 1, spec.nvolumes);
		goto err_spec;
	}
	mkdir_p(c->root);
	oci_state_dir(c->root, c->id, dir, sizeof(dir));
	if (mkdir(dir, 0700)) {
		if (errno == EEXIST)
			oci_err("container with id %s already exists", c->id);
		else
			oci_err("state directory %s: %s", dir, strerror(errno));
		goto err_spec;
	}
	if (drop && oci_cgroup_setup(OCI_CGROUP_ROOT, &spec, c->systemd_cgroup,
				     spec_guest_memory(&spec, SET.mem_default), cgdir,
				     sizeof(cgdir), err, sizeof(err))) {
		/* Rootless podman with cgroupfs names a cgroup in a tree the
		 * user was not delegated: as crun, run without one. */
		if (!oci_rootless_cgroup_skip(oci_rootless(), errno)) {
			oci_err("%s", err);
			goto err_dir;
		}
		oci_warn("%s: rootless, the container runs without a cgroup of its own "
			 "(its VM's size still bounds its memory)", err);
		cgdir[0] = 0;
	}
	snprintf(img, sizeof(img), "%s/cgroup", dir);
	if (cgdir[0] && oci_file_write_atomic(img, cgdir)) {
		oci_err("%s: %s", img, strerror(errno));
		goto err_dir;
	}
	snprintf(img, sizeof(img), "%s/rootfs.img", dir);
	if (spec.root_virtiofs ? spec_read_files(&spec, err, sizeof(err)) :
	    oci_image_build(&spec, img, SET.root_free, &is, err, sizeof(err))) {
		oci_err("%s", err);
		goto err_dir;
	}
	t_img = oci_now_ns();
	if (spec.terminal && make_tty(c->console_socket, &tty, err, sizeof(err))) {
		oci_err("%s", err);
		goto err_dir;
	}
	lfd = listen_ctl(dir);
	if (lfd < 0 || pipe2(ready, O_CLOEXEC)) {
		oci_err("control socket in %s: %s", dir, strerror(errno));
		goto err_dir;
	}
	child = fork();
	if (child < 0) {
		oci_err("fork: %s", strerror(errno));
		goto err_dir;
	}
	if (child == 0) {
		/* Orphan the VMM: conmon (a subreaper) then waits on it. */
		setsid();
		child = fork();
		if (child != 0)
			_exit(child < 0 ? 1 : 0);
		close(ready[0]);
		setsid();
		if (tty >= 0 && ioctl(tty, TIOCSCTTY, 0))
			oci_warn("terminal: TIOCSCTTY: %s", strerror(errno));
		dprintf(ready[1], "pid %d\n", (int)getpid());
		{
			struct oci_shim_params sp = {
				.spec = &spec, .set = &SET, .state_dir = dir,
				.image = img, .listen_fd = lfd, .tty_slave = tty,
				.ready_fd = ready[1], .t0_ns = t0,
				.cgroup_dir = cgdir,
				.drop = drop, .uid = vmm_uid, .gid = vmm_gid,
			};

			_exit(oci_shim_run(&sp));
		}
	}
	close(ready[1]);
	ready[1] = -1;
	waitpid(child, &status, 0);
	for (;;) {
		ssize_t n = read(ready[0], buf + have, sizeof(buf) - 1 - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	buf[have] = 0;
	close(ready[0]);
	sscanf(buf, "pid %d", &vmm);
	{
		char *line = strchr(buf, '\n');

		line = line ? line + 1 : buf;
		if (vmm <= 0 || strncmp(line, "ok", 2)) {
			line[strcspn(line, "\n")] = 0;
			oci_err("%s", !strncmp(line, "error: ", 7) ? line + 7
				: "the VMM process failed to start");
			if (vmm > 0)
				kill(vmm, SIGKILL);
			goto err_dir;
		}
	}
	snprintf(st.id, sizeof(st.id), "%s", c->id);
	snprintf(st.dir, sizeof(st.dir), "%s", dir);
	snprintf(st.bundle, sizeof(st.bundle), "%s", bundle);
	now_rfc3339(st.created, sizeof(st.created));
	st.pid = vmm;
	st.starttime = oci_proc_starttime(vmm);
	st.annotations = spec.annotations_json;
	/* 0: the VMM is gone already, or /proc does not show it (hidepid):
	 * a state that cannot tell it from a reused pid is not written. */
	if (!st.starttime) {
		oci_err("the VMM process %d cannot be found in /proc (it exited, or "
			"/proc hides it)", (int)vmm);
		kill(vmm, SIGKILL);
		goto err_dir;
	}
	if (oci_state_write(&st)) {
		oci_err("writing %s/state.json failed", dir);
		kill(vmm, SIGKILL);
		goto err_dir;
	}
	if (c->pid_file) {
		char p[32];

		snprintf(p, sizeof(p), "%d", (int)vmm);
		if (oci_file_write_atomic(c->pid_file, p)) {
			oci_err("pid file %s: %s", c->pid_file, strerror(errno));
			kill(vmm, SIGKILL);
			goto err_dir;
		}
	}
	append_timing(c->id, "\"event\":\"create\",\"rootfs\":\"%s\",\"rootfs_bytes\":%llu,"
		      "\"rootfs_inodes\":%llu,\"image_bytes\":%llu,\"scan_ms\":%.3f,"
		      "\"mkfs_ms\":%.3f,\"inject_ms\":%.3f,\"image_ms\":%.3f,"
		      "\"create_ms\":%.3f,\"cpu_ms\":%.3f",
		      spec.root_virtiofs ? "virtiofs" : "ext4",
		      (unsigned long long)is.bytes, (unsigned long long)is.inodes,
		      (unsigned long long)is.image_bytes, ms(is.scan_ns), ms(is.mkfs_ns),
		      ms(is.inject_ns), ms(t_img - t0), ms(oci_now_ns() - t0), cpu_ms());
	if (tty >= 0)
		close(tty);
	close(lfd);
	spec_free(&spec);
	return 0;
err_dir:
	if (tty >= 0)
		close(tty);
	if (lfd >= 0)
		close(lfd);
	oci_state_remove(dir);
	if (cgdir[0])
		oci_cgroup_remove(cgdir);
err_spec:
	spec_free(&spec);
	return 1;
}

static int load(const struct oci_cli *c, struct oci_state *st)
{
	int ret = oci_state_read(c->root, c->id, st);

	if (ret == -ENOENT)
		oci_err("container %s does not exist", c->id);
	else if (ret)
		oci_err("container %s: unreadable state in %s", c->id, st->dir);
	return ret;
}

/*
 * The VM's NIC waits on a bare tap (the shim left NETNS_AT_START_FILE:
 * SPEC_ANN_NETWORK "start", or a new namespace by default; `ctr run
 * --cni`: containerd ran CNI on the VMM process's namespace after
 * create): join that namespace and redirect the tap to the interface
 * found now (netns_redirect(), as root: the VMM process gave up its
 * privileges when its VM started); the shim reads the same namespace for
 * the guest's NET records.  Only a loopback (plain `ctr run`): the tap is
 * set down and the guest init leaves the NIC down, with no address.
 * 0, or -1 with a reason in @err.
 */
static int start_network(const struct oci_state *st, char *err, size_t errlen)
{
	static struct netns_plan plan;
	char path[4200];

	snprintf(path, sizeof(path), "%s/" NETNS_AT_START_FILE, st->dir);
	if (access(path, F_OK))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)st->pid);
	if (netns_enter(path, err, errlen) || netns_read(&plan, err, errlen))
		return -1;
	if (!plan.nic) {
		oci_info("container %s: its network namespace has only a loopback at "
			 "start: the VM's network device stays down", st->id);
		return netns_tap_down(err, errlen);
	}
	if (netns_redirect(&plan, err, errlen))
		return -1;
	/* Not fatal: only connections made inside the namespace need it. */
	if (netns_local_path(&plan, err, errlen))
		oci_warn("container %s: the namespace's own connections to the VM will "
			 "not reach it: %s", st->id, err);
	return 0;
}

static int cmd_start(const struct oci_cli *c)
{
	struct oci_state st;
	char started[4200], err[512];
	enum oci_status s;
	int net;

	if (load(c, &st))
		return 1;
	s = oci_state_status(&st);
	net = s == OCI_CREATED ? start_network(&st, err, sizeof(err)) : 0;
	oci_state_free(&st);
	if (s != OCI_CREATED) {
		oci_err("cannot start a container that is %s", oci_status_name(s));
		return 1;
	}
	if (net) {
		oci_err("%s", err);
		return 1;
	}
	if (oci_ctl_command(st.dir, c->id, "start\n", OCI_CTL_START_TIMEOUT_MS))
		return 1;
	/* Running from now on: recorded once the process did start. */
	snprintf(started, sizeof(started), "%s/started", st.dir);
	if (oci_file_write_atomic(started, "")) {
		oci_err("%s: %s", started, strerror(errno));
		return 1;
	}
	return 0;
}

static int cmd_state(const struct oci_cli *c)
{
	struct oci_state st;
	enum oci_status s;
	json_error_t je;
	json_t *o, *ann;
	char *text;

	if (load(c, &st))
		return 1;
	s = oci_state_status(&st);
	ann = json_loads(st.annotations ? st.annotations : "{}", 0, &je);
	o = json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:s, s:o}", "ociVersion",
		      OCI_SPEC_VERSION, "id", st.id, "status", oci_status_name(s),
		      "pid", s == OCI_STOPPED ? 0 : (int)st.pid, "bundle", st.bundle,
		      "created", st.created, "owner", "", "annotations",
		      ann ? ann : json_object());
	oci_state_free(&st);
	text = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
	json_decref(o);
	if (!text) {
		oci_err("out of memory");
		return 1;
	}
	printf("%s\n", text);
	free(text);
	return 0;
}

static int cmd_kill(const struct oci_cli *c)
{
	int sig = spec_parse_signal(c->signal);
	struct oci_state st;
	char req[32], ans[256];

	if (load(c, &st))
		return 1;
	oci_state_free(&st);
	if (oci_state_status(&st) == OCI_STOPPED) {
		oci_err("container not running");
		return 1;
	}
	if (sig == SIGKILL) {
		/* The VM ends at once; conmon sees the process killed by 9. */
		if (kill(st.pid, SIGKILL) && errno != ESRCH) {
			oci_err("kill: %s", strerror(errno));
			return 1;
		}
		return 0;
	}
	snprintf(req, sizeof(req), "signal %d\n", sig);
	if (oci_ctl_request(st.dir, req, ans, sizeof(ans), OCI_CTL_SIGNAL_TIMEOUT_MS) ||
	    strcmp(ans, "ok")) {
		if (oci_state_status(&st) == OCI_STOPPED) {
			oci_err("container not running");
			return 1;
		}
		oci_err("container %s: its VMM process does not answer", c->id);
		return 1;
	}
	return 0;
}

/* The container's cgroup (ROOT/ID/cgroup names it), its VMM gone. */
static void remove_cgroup(const char *dir)
{
	char cg[PATH_MAX];
	int ret;

	if (oci_cgroup_recorded(dir, cg, sizeof(cg)))
		return;
	if ((ret = oci_cgroup_remove(cg)))
		oci_warn("removing cgroup %s: %s", cg, strerror(-ret));
}

static int cmd_delete(const struct oci_cli *c)
{
	uint64_t t0 = oci_now_ns();
	struct oci_state st;
	enum oci_status s;
	int ret = oci_state_read(c->root, c->id, &st);

	if (ret == -ENOENT) {
		if (c->force)
			return 0;
		oci_err("container %s does not exist", c->id);
		return 1;
	}
	oci_state_free(&st);
	if (ret && !c->force) {
		oci_err("container %s: unreadable state in %s", c->id, st.dir);
		return 1;
	}
	s = ret ? OCI_STOPPED : oci_state_status(&st);
	if ((s == OCI_RUNNING || s == OCI_PAUSED) && !c->force) {
		oci_err("cannot delete container %s that is not stopped: %s", c->id,
			oci_status_name(s));
		return 1;
	}
	if (s != OCI_STOPPED) {
		kill(st.pid, SIGKILL);
		/* Gone (or a zombie for its parent to reap) within a moment. */
		for (int i = 0; i < 500 && oci_state_status(&st) != OCI_STOPPED; i++)
			usleep(10000);
	}
	remove_cgroup(st.dir);
	if (oci_state_remove(st.dir)) {
		oci_err("removing %s: %s", st.dir, strerror(errno));
		return 1;
	}
	append_timing(c->id, "\"event\":\"delete\",\"delete_ms\":%.3f",
		      ms(oci_now_ns() - t0));
	return 0;
}

static int cmd_features(void)
{
	printf("{\n"
	       "  \"ociVersionMin\": \"1.0.0\",\n"
	       "  \"ociVersionMax\": \"" OCI_SPEC_VERSION "\",\n"
	       "  \"hooks\": [],\n"
	       "  \"mountOptions\": [\"ro\", \"rw\", \"nosuid\", \"suid\", \"nodev\", "
	       "\"dev\", \"noexec\", \"exec\", \"relatime\", \"noatime\", "
	       "\"strictatime\", \"sync\", \"nodiratime\"],\n"
	       "  \"linux\": {\n"
	       "    \"namespaces\": [\"pid\", \"mount\", \"uts\", \"ipc\", \"network\"],\n"
	       "    \"capabilities\": [");
	/* Applied by the guest init (process.capabilities). */
	for (int i = 0; i <= SPEC_CAP_LAST; i++)
		printf("%s\"%s\"", i ? ", " : "", spec_cap_names[i]);
	printf("],\n"
	       "    \"cgroup\": {\"v1\": false, \"v2\": true, \"systemd\": false,"
	       " \"systemdUser\": false},\n"
	       "    \"seccomp\": {\"enabled\": false},\n"
	       "    \"apparmor\": {\"enabled\": false},\n"
	       "    \"selinux\": {\"enabled\": false}\n"
	       "  },\n"
	       "  \"annotations\": {\"org.minivmm.oci.vm\": \"true\"}\n"
	       "}\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct oci_cli c;
	char err[512];
	int ret;

	if (oci_cli_parse(argc, argv, &c, err, sizeof(err))) {
		fprintf(stderr, OCI_NAME ": %s\n", err);
		return 1;
	}
	oci_log_init(c.log, !strcmp(c.log_format, "json"));
	/* Rootless (podman's user namespace), the default state directory
	 * is the user's, as runc's and crun's: podman passes no --root but
	 * gives every runtime call its XDG_RUNTIME_DIR. */
	if (c.root == (const char *)OCI_DEFAULT_ROOT) {
		static char root[PATH_MAX];

		c.root = oci_rootless_state_root(oci_rootless(), getenv("XDG_RUNTIME_DIR"),
						 root, sizeof(root));
	}
	switch (c.cmd) {
	case OCI_CMD_HELP:
		oci_cli_usage(stdout);
		return 0;
	case OCI_CMD_VERSION:
		printf(OCI_NAME " version " OCI_VERSION "\nspec: " OCI_SPEC_VERSION
		       "\nlibvmm: %s\n", VMM_VERSION_STRING);
		return 0;
	case OCI_CMD_UNSUPPORTED:
		oci_err("%s is not supported by minivmm-oci", c.cmd_name);
		return 1;
	case OCI_CMD_FEATURES:
		return cmd_features();
	case OCI_CMD_LIST:
		return oci_cmd_list(&c);
	case OCI_CMD_SPEC:
		return oci_cmd_spec(&c);
	case OCI_CMD_UPDATE:
		return oci_cmd_update(&c);
	case OCI_CMD_EVENTS:
		return oci_cmd_events(&c);
	case OCI_CMD_PAUSE:
	case OCI_CMD_RESUME:
		return oci_cmd_pause(&c, c.cmd == OCI_CMD_PAUSE);
	case OCI_CMD_EXEC: {
		static const struct oci_exec_hooks hooks = { .make_tty = make_tty };

		return oci_cmd_exec(&c, &hooks);
	}
	case OCI_CMD_PS:
		return oci_cmd_ps(&c);
	default:
		break;
	}
	if (oci_settings_load(&SET, err, sizeof(err))) {
		oci_err("%s", err);
		return 1;
	}
	if ((c.kernel && (free(SET.kernel), !(SET.kernel = strdup(c.kernel)))) ||
	    (c.initrd && (free(SET.initrd), !(SET.initrd = strdup(c.initrd))))) {
		oci_err("out of memory");
		return 1;
	}
	switch (c.cmd) {
	case OCI_CMD_CREATE: ret = cmd_create(&c); break;
	case OCI_CMD_START: ret = cmd_start(&c); break;
	case OCI_CMD_STATE: ret = cmd_state(&c); break;
	case OCI_CMD_KILL: ret = cmd_kill(&c); break;
	case OCI_CMD_DELETE: ret = cmd_delete(&c); break;
	case OCI_CMD_RUN: {
		static const struct oci_run_steps steps = {
			.create = cmd_create, .start = cmd_start, .remove = cmd_delete,
		};

		ret = oci_cmd_run(&c, &steps);
		break;
	}
	default: ret = 1; break;
	}
	oci_settings_free(&SET);
	return ret;
}
