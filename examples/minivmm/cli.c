/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "errf.h"
#include "opts.h"
#include "parse.h"

enum {
	OPT_APPEND = 256,
	OPT_STATS,
	OPT_STATS_JSON,
	OPT_NO_SECCOMP,
	OPT_USER,
	OPT_IO_SCHED,
	OPT_MEM_BACKEND,
	OPT_NET,
	OPT_FS,
	OPT_API_SOCKET,
	OPT_VSOCK,
	OPT_CPU_AFFINITY,
};

static const struct option long_opts[] = {
	{ "smp", required_argument, NULL, 'c' },
	{ "mem", required_argument, NULL, 'm' },
	{ "kernel", required_argument, NULL, 'k' },
	{ "initrd", required_argument, NULL, 'i' },
	{ "cmdline", required_argument, NULL, 'p' },
	{ "append", required_argument, NULL, OPT_APPEND },
	{ "disk", required_argument, NULL, 'd' },
	{ "stats", no_argument, NULL, OPT_STATS },
	{ "stats-json", no_argument, NULL, OPT_STATS_JSON },
	{ "no-seccomp", no_argument, NULL, OPT_NO_SECCOMP },
	{ "user", required_argument, NULL, OPT_USER },
	{ "io-sched", required_argument, NULL, OPT_IO_SCHED },
	{ "mem-backend", required_argument, NULL, OPT_MEM_BACKEND },
	{ "net", required_argument, NULL, OPT_NET },
	{ "fs", required_argument, NULL, OPT_FS },
	{ "api-socket", required_argument, NULL, OPT_API_SOCKET },
	{ "vsock", required_argument, NULL, OPT_VSOCK },
	{ "cpu-affinity", required_argument, NULL, OPT_CPU_AFFINITY },
	OPTS_COMMON_LONG,
	{ NULL, 0, NULL, 0 },
};

/* --cpu-affinity LIST: CPUs below CLI_MAX_AFFINITY (the library's
 * limit), each once.  0 or -1. */
static int parse_affinity(const char *v, struct cli_opts *o)
{
	if (parse_cpulist(v, o->cpu_affinity, CLI_MAX_AFFINITY, &o->nr_cpu_affinity))
		return -1;
	for (unsigned int i = 0; i < o->nr_cpu_affinity; i++)
		if (o->cpu_affinity[i] >= CLI_MAX_AFFINITY)
			return -1;
	return 0;
}

void cli_usage(const char *prog, void *file)
{
	fprintf(file,
		"Usage: %s --kernel " CLI_KERNEL_ARG " [options]\n"
		"       minivmm --api PATH info|stats|pause|resume|stop|shutdown\n"
		"       minivmm --api PATH set-rate-limit diskN|netN [rate-KEY=N ...]\n"
		"       minivmm --api PATH set-link netN up|down\n"
		"Boot a Linux kernel in a KVM virtual machine (libvmm %s).\n"
		"\n"
		"  -c, --smp N          number of vCPUs (default 1, max %d)\n"
		"      --cpu-affinity LIST  host CPUs (\"0-3,8\"): vCPU i and the I/O\n"
		"                       thread serving its queues run on the i-th\n"
		"                       (round robin; default: not pinned)\n"
		"  -m, --mem SIZE       guest RAM: 512M, 2G, or a number of MiB\n"
		"                       (default 256M)\n"
		"      --mem-backend B  guest RAM: anon (default: private, huge\n"
		"                       pages), memfd (shareable; huge pages only\n"
		"                       if shmem THP is enabled) or hugetlb (a\n"
		"                       hugetlbfs memfd, 2 MiB pages reserved at\n"
		"                       start from /proc/sys/vm/nr_hugepages)\n"
		CLI_KERNEL_HELP
		"  -i, --initrd FILE    initrd / initramfs, a regular file\n"
		"  -p, --cmdline S      kernel command line, replacing the default:\n"
		"                       \"%s\"\n"
		"      --append S       add S to the command line\n"
		"  -d, --disk SPEC      virtio-blk-pci disk (repeatable, up to %d): IMG\n"
		"                       or path=IMG[,num-queues=N][,queue-size=N]\n"
		"                       [,ro=on][,serial=S][,direct=on][,poll-us=N]\n"
		"                       [,cache=writeback|unsafe][,event-idx=off]\n"
		"                       [,lock=off][,wiring=per-vector]\n"
		"                       IMG: a regular file or a block device.\n"
		"                       num-queues 1..%d, default the vCPU count;\n"
		"                       all disks together at most %d queues (one\n"
		"                       KVM interrupt route each): defaults are\n"
		"                       lowered to fit.  The image is locked (shared\n"
		"                       if ro=on, else exclusive) unless lock=off\n"
		"                       wiring=per-vector: one KVM routing update\n"
		"                       per queue at driver start (slower; to\n"
		"                       compare with the batched default)\n"
		"                       Rate limits (both --disk and --net, any\n"
		"                       form but vhost=on): rate-bw=N[K|M|G]\n"
		"                       (bytes/s, binary suffixes: 50M = 50 MiB/s)\n"
		"                       [,rate-bw-burst=N[K|M|G]][,rate-ops=N]\n"
		"                       (requests or frames/s)[,rate-ops-burst=N]\n"
		"                       [,rate-bw-one-time=N][,rate-ops-one-time=N];\n"
		"                       burst default one second's worth; a NIC's\n"
		"                       RX and TX each; changeable at run time\n"
		"                       (set-rate-limit on the --api-socket)\n"
		"      --stats          print disk, KVM and console statistics at exit\n"
		"      --stats-json     the same, as one JSON object on stderr\n"
		"      --no-seccomp     do not confine the VMM's threads with\n"
		"                       seccomp-bpf allow-lists (on by default)\n"
		"      --user UID[:GID] once /dev/kvm, the kernel, initrd and disk\n"
		"                       images are open and before the guest runs,\n"
		"                       drop to this user and group (numbers or\n"
		"                       names; GID defaults to the user's group) with\n"
		"                       no supplementary groups, no capabilities\n"
		"                       (bounding set included) and no_new_privs;\n"
		"                       minivmm must start as root; 0 (root) is\n"
		"                       refused\n"
		"      --io-sched P     I/O threads' scheduling policy: batch\n"
		"                       (default: a kick does not preempt the\n"
		"                       vCPU, so requests are served in batches)\n"
		"                       or normal (lower latency at queue depth 1\n"
		"                       when vCPUs and I/O threads share CPUs)\n"
		"                       or adaptive (per I/O thread: batch while\n"
		"                       kicks find batches or frames arrive in\n"
		"                       bursts, normal while kicks find one\n"
		"                       request; batch again after 100 ms idle)\n"
		"      --net SPEC       virtio-net-pci NIC on a tap (repeatable, up\n"
		"                       to %d): tap=NAME[,mac=MAC][,queue-pairs=N]\n"
		"                       [,queue-size=N][,mtu=N] (the tap is opened\n"
		"                       or created, multi-queue, one file per pair)\n"
		"                       or fd=N[:N...][,mac=MAC][,queue-size=N]\n"
		"                       [,mtu=N] (inherited tap files with a\n"
		"                       virtio-net header, one per pair).\n"
		"                       queue-pairs 1..%d, default the vCPU count;\n"
		"                       mac default: 52:54 and four bytes derived\n"
		"                       from the tap's name (stream: the path)\n"
		"                       and the NIC's index; vhost=on|off (tap or\n"
		"                       fd form, default off): the kernel's\n"
		"                       vhost-net moves the frames\n"
		"                       (/dev/vhost-net, one file per pair; the\n"
		"                       NIC's packet/kick counters then stay 0).  Or\n"
		"                       stream=PATH[,mac=MAC][,queue-size=N]\n"
		"                       [,mtu=N]: a Unix stream socket speaking\n"
		"                       passt's framing (4-byte big-endian length,\n"
		"                       frame), e.g. passt --socket PATH run by an\n"
		"                       unprivileged user; one queue pair, no\n"
		"                       offloads; the link goes down if the peer\n"
		"                       goes\n"
		"      --fs SPEC        virtio-fs shared directory (repeatable, up\n"
		"                       to 8), mounted in the guest with\n"
		"                       mount -t virtiofs TAG DIR:\n"
		"                       tag=T,socket=PATH[,num-queues=N][,queue-size=N]\n"
		"                       a vhost-user back end (virtiofsd) listening\n"
		"                       on PATH, or tag=T,path=DIR[,ro=on] to start\n"
		"                       virtiofsd on DIR (MINIVMM_VIRTIOFSD, default\n"
		"                       /usr/lib/qemu/virtiofsd; ro=on: a read-only\n"
		"                       bind in its own mount namespace, as root).\n"
		"                       Makes guest RAM memfd unless --mem-backend\n"
		"                       is given\n"
		"      --api-socket PATH\n"
		"                       answer JSON requests on a Unix socket at\n"
		"                       PATH (mode 0600; this user or root only):\n"
		"                       info, stats, pause, resume, stop, shutdown,\n"
		"                       set-rate-limit, set-link (see minivmm(1));\n"
		"                       `minivmm --api PATH CMD` asks\n"
		"      --vsock cid=N,socket=PATH\n"
		"                       virtio-vsock device, guest CID N (3 and up);\n"
		"                       host programs connect to the Unix socket\n"
		"                       PATH (created; a stale socket is replaced;\n"
		"                       it appears once minivmm listens) and write\n"
		"                       \"CONNECT <port>\\n\", answered \"OK <hostport>\\n\"\n"
		"                       once the guest accepts; guest connections\n"
		"                       to host (CID 2) port P reach PATH_P\n"
		"      --vsock cid=N,vhost=on\n"
		"                       the same device on the kernel's vhost-vsock\n"
		"                       (module vhost_vsock): host programs use\n"
		"                       AF_VSOCK to CID N directly\n"
		OPTS_COMMON_HELP
		"\n"
		CLI_END_HELP,
		prog, VMM_VERSION_STRING, VMM_MAX_VCPUS, CLI_DEFAULT_CMDLINE,
		VMM_MAX_DISKS, VMM_MAX_DISK_QUEUES, VMM_MAX_QUEUES, VMM_MAX_NETS,
		VMM_MAX_NET_PAIRS);
}

int cli_parse_size(const char *s, uint64_t *out)
{
	uint64_t v;

	if (parse_size(s, &v) || !v)
		return -1;
	*out = v;
	return 0;
}

static int append_cmdline(struct cli_opts *o, const char *s, char *err,
			  size_t errlen)
{
	size_t a = strlen(o->cmdline), b = strlen(s);
	char *n;

	if (a + 1 + b > VMM_MAX_CMDLINE)
		return errf(err, errlen, "kernel command line longer than %d bytes",
			    VMM_MAX_CMDLINE);
	n = realloc(o->cmdline, a + b + 2);
	if (!n)
		return errf(err, errlen, "out of memory");
	if (a)
		n[a++] = ' ';
	memcpy(n + a, s, b + 1);
	o->cmdline = n;
	return 0;
}

/* Every queue of every disk has its own MSI route in KVM: at most
 * VMM_MAX_QUEUES in all (a disk without num-queues is lowered to fit, down
 * to one queue; vmm_add_disk()). */
static int check_queues(const struct cli_opts *o, char *err, size_t errlen)
{
	unsigned long total = 0;

	for (unsigned int i = 0; i < o->nr_disks; i++)
		total += o->disks[i].cfg.num_queues ? o->disks[i].cfg.num_queues : 1;
	if (total > VMM_MAX_QUEUES)
		return errf(err, errlen,
			    "--disk: %lu queues in all (num-queues, 1 for a disk "
			    "without) but KVM's interrupt routes allow %d",
			    total, VMM_MAX_QUEUES);
	return 0;
}

int cli_parse(int argc, char **argv, struct cli_opts *o, char *err, size_t errlen)
{
	struct opts_common oc = { &o->log_level, &o->help, &o->version };
	unsigned long long n;
	int c;

	memset(o, 0, sizeof(*o));
	o->smp = 1;
	o->mem = 256ull << 20;
	o->log_level = VMM_LOG_WARN;
	o->cmdline = strdup(CLI_DEFAULT_CMDLINE);
	if (!o->cmdline)
		return errf(err, errlen, "out of memory");
	opts_reset();
	while ((c = opts_next(argc, argv, ":c:m:k:i:p:d:" OPTS_COMMON_SHORT,
			      long_opts, &oc, err, errlen)) >= 0) {
		switch (c) {
		case 'c':
			if (parse_uint(optarg, 1, VMM_MAX_VCPUS, &n))
				return errf(err, errlen,
					    "--smp must be a number from 1 to %d, got '%s'",
					    VMM_MAX_VCPUS, optarg);
			o->smp = (unsigned int)n;
			break;
		case 'm':
			if (cli_parse_size(optarg, &o->mem) ||
			    o->mem < VMM_MIN_MEMORY || (o->mem & 0xfff))
				return errf(err, errlen,
					    "--mem must be a size of at least 16M (e.g. 512M, 2G), got '%s'",
					    optarg);
			break;
		case 'k':
			o->kernel = optarg;
			break;
		case 'i':
			o->initrd = optarg;
			break;
		case 'p':
			free(o->cmdline);
			o->cmdline = strdup("");
			if (!o->cmdline)
				return errf(err, errlen, "out of memory");
			if (append_cmdline(o, optarg, err, errlen))
				return -1;
			break;
		case OPT_APPEND:
			if (append_cmdline(o, optarg, err, errlen))
				return -1;
			break;
		case 'd':
			if (o->nr_disks == CLI_MAX_DISKS)
				return errf(err, errlen, "at most %d disks",
					    CLI_MAX_DISKS);
			if (cli_parse_disk(optarg, &o->disks[o->nr_disks++], err,
					   errlen))
				return -1;
			break;
		case OPT_STATS:
			o->stats = true;
			break;
		case OPT_STATS_JSON:
			o->stats = o->stats_json = true;
			break;
		case OPT_NO_SECCOMP:
			o->no_seccomp = true;
			break;
		case OPT_USER: /* the last one counts */
			user_spec_free(&o->user);
			if (user_parse(optarg, "--user", &o->user, err, errlen))
				return -1;
			break;
		case OPT_MEM_BACKEND:
			if (!strcmp(optarg, "anon"))
				o->mem_backend = VMM_MEMORY_ANON;
			else if (!strcmp(optarg, "memfd"))
				o->mem_backend = VMM_MEMORY_MEMFD;
			else if (!strcmp(optarg, "hugetlb"))
				o->mem_backend = VMM_MEMORY_HUGETLB;
			else
				return errf(err, errlen,
					    "--mem-backend must be anon, memfd or hugetlb, got '%s'",
					    optarg);
			o->mem_backend_set = true;
			break;
		case OPT_IO_SCHED:
			if (opts_io_sched(optarg, &o->io_sched, err, errlen))
				return -1;
			break;
		case OPT_NET:
			if (o->nr_nets == CLI_MAX_NETS)
				return errf(err, errlen, "at most %d NICs", CLI_MAX_NETS);
			if (cli_parse_net(optarg, &o->nets[o->nr_nets++], err, errlen))
				return -1;
			break;
		case OPT_FS:
			if (o->nr_fs == CLI_MAX_FS)
				return errf(err, errlen, "at most %d --fs", CLI_MAX_FS);
			if (cli_parse_fs(optarg, &o->fs[o->nr_fs++], err, errlen))
				return -1;
			break;
		case OPT_API_SOCKET:
			if (!*optarg)
				return errf(err, errlen, "--api-socket needs a path");
			o->api_socket = optarg;
			break;
		case OPT_VSOCK:
			if (o->vsock.struct_size)
				return errf(err, errlen, "--vsock: one vsock device only");
			if (cli_parse_vsock(optarg, o, err, errlen))
				return -1;
			break;
		case OPT_CPU_AFFINITY:
			if (parse_affinity(optarg, o))
				return errf(err, errlen,
					    "--cpu-affinity must list host CPUs below %d, each once "
					    "(e.g. 0-3,8), got '%s'", CLI_MAX_AFFINITY, optarg);
			break;
		}
	}
	if (c != OPTS_END)
		return c == OPTS_STOP ? 0 : -1;
	if (!o->kernel)
		return errf(err, errlen, "--kernel is required");
	return check_queues(o, err, errlen);
}

void cli_free(struct cli_opts *o)
{
	for (unsigned int i = 0; i < o->nr_disks; i++)
		free(o->disks[i].spec);
	free(o->cmdline);
	o->cmdline = NULL;
	o->nr_disks = 0;
	for (unsigned int i = 0; i < o->nr_nets; i++)
		free(o->nets[i].spec);
	o->nr_nets = 0;
	user_spec_free(&o->user);
	for (unsigned int i = 0; i < o->nr_fs; i++)
		cli_fs_free(&o->fs[i]);
	o->nr_fs = 0;
	free(o->vsock_path);
	o->vsock_path = NULL;
}

int cli_parse_vsock(const char *spec, struct cli_opts *o, char *err, size_t errlen)
{
	unsigned long long cid = 0;
	const char *p = spec;
	bool vhost = false;

	while (*p) {
		const char *end = strchr(p, ','), *eq = strchr(p, '=');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char val[VMM_VSOCK_PATH_MAX + 2];

		if (!eq || eq >= p + len || (size_t)(p + len - eq - 1) >= sizeof(val))
			return errf(err, errlen, "--vsock: expected cid=N,socket=PATH, got '%s'",
				    spec);
		memcpy(val, eq + 1, (size_t)(p + len - eq - 1));
		val[p + len - eq - 1] = 0;
		if (eq - p == 3 && !strncmp(p, "cid", 3)) {
			if (parse_uint(val, 3, 0xfffffffeu, &cid))
				return errf(err, errlen,
					    "--vsock: cid must be a number from 3 to 4294967294, got '%s'",
					    val);
		} else if (eq - p == 5 && !strncmp(p, "vhost", 5) &&
			   (!strcmp(val, "on") || !strcmp(val, "off"))) {
			vhost = !strcmp(val, "on");
		} else if (eq - p == 6 && !strncmp(p, "socket", 6) && *val) {
			free(o->vsock_path);
			if (!(o->vsock_path = strdup(val)))
				return errf(err, errlen, "out of memory");
		} else {
			return errf(err, errlen, "--vsock: unknown or empty '%.*s'",
				    (int)len, p);
		}
		p += len + (end ? 1 : 0);
	}
	if (vhost && (!cid || o->vsock_path))
		return errf(err, errlen, "--vsock: vhost=on takes cid=N and no socket=");
	if (!vhost && (!cid || !o->vsock_path))
		return errf(err, errlen, "--vsock: cid=N and socket=PATH are both required");
	o->vsock = (struct vmm_vsock_config){ .struct_size = sizeof(o->vsock),
					      .flags = vhost ? VMM_VSOCK_VHOST : 0,
					      .guest_cid = cid,
					      .socket_path = o->vsock_path };
	return 0;
}
