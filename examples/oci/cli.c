/* SPDX-License-Identifier: MIT */
/* minivmm-oci command-line parsing (see cli.h). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "oci.h"
#include "errf.h"

void oci_cli_usage(FILE *f)
{
	fprintf(f,
		"Usage: " OCI_NAME " [GLOBAL OPTIONS] COMMAND [OPTIONS] ID\n"
		"An OCI runtime that runs each container in a minivmm microVM.\n\n"
		"Commands:\n"
		"  create --bundle DIR [--pid-file F] [--console-socket S] ID\n"
		"                    build the root image (or, with rootfs = virtiofs in\n"
		"                    the config file or the annotation org.minivmm.rootfs=\n"
		"                    virtiofs, share the root directory: no copy), start\n"
		"                    the VM (paused before the process); the VMM process\n"
		"                    is the container's pid and\n"
		"                    runs as the user set in " OCI_CONFIG_FILE "\n"
		"                    (default " OCI_VMM_USER ", else nobody), with no\n"
		"                    capabilities\n"
		"  start ID          run the container's process (a new network namespace,\n"
		"                    or the annotation org.minivmm.network=start: first\n"
		"                    connect the VM to the namespace as it is now, ctr\n"
		"                    run --cni; org.minivmm.network=create: not)\n"
		"  state ID          print the OCI state JSON\n"
		"  kill [--all] ID [SIGNAL]  signal the process (default TERM; KILL ends the VM)\n"
		"  delete [--force] ID       remove a stopped container (--force: any)\n"
		"  features          print the supported features JSON\n"
		"  pause ID          stop the VM's vCPUs (state: paused); resume ID: go on\n"
		"  list [--format table|json] [-q]  every container under --root\n"
		"  spec [--bundle DIR] [--rootless]  write a starting config.json\n"
		"  run [create's options] [-d|--detach] [--keep] ID\n"
		"                    create and start; without -d wait for the container,\n"
		"                    forward INT/TERM/HUP/QUIT/USR1/USR2 to it, remove it\n"
		"                    (unless --keep) and exit with its status\n"
		"  update [-r FILE|-] [--memory M] [--cpu-quota N] [--cpu-period N]\n"
		"         [--cpuset-cpus L] [--cpuset-mems L] [--pids-limit N] ID\n"
		"                    change the container's cgroup (CPU quota, cpuset);\n"
		"                    the VM's memory and vCPU count stay as created\n"
		"  exec [--process F | -t | --console-socket S | --pid-file F | -d |\n"
		"        --cwd D | -e K=V | -u UID[:GID]] ID [COMMAND ARGS...]\n"
		"                    run a process in the container (in its VM, over\n"
		"                    vsock): stdio relayed, signals forwarded, exit\n"
		"                    status mirrored (128+N when killed by N); -d: the\n"
		"                    relaying process (--pid-file) goes on alone\n"
		"  ps [--format table|json] ID  the container's processes (guest pids)\n"
		"  events [--stats] [--interval DURATION] ID\n"
		"                    the container's statistics as JSON lines (its cgroup's\n"
		"                    CPU, memory and pids, the VM's counters), one every\n"
		"                    DURATION (default 5s; 500ms, 2s, 1m) until it stops,\n"
		"                    with an \"oom\" line when its cgroup saw an OOM kill;\n"
		"                    --stats: one, then exit\n"
		"  checkpoint, restore  not supported\n\n"
		"Global options:\n"
		"  --root DIR        state directory (default " OCI_DEFAULT_ROOT ";\n"
		"                    rootless: $XDG_RUNTIME_DIR/" OCI_NAME ")\n"
		"  --log FILE        append errors here (containerd reads it)\n"
		"  --log-format text|json\n"
		"  --kernel F, --initrd F  boot these (else " OCI_CONFIG_FILE ",\n"
		"                    MINIVMM_OCI_KERNEL/MINIVMM_OCI_INITRD, /vmlinuz)\n"
		"  --systemd-cgroup  linux.cgroupsPath is systemd's slice:prefix:name\n"
		"  --debug           more messages in the log\n"
		"  -v, --version     print the version\n\n"
		"Exit status: 0 success, 1 failure (one-line reason on stderr and in\n"
		"the log).  The VMM process exits with the container's status.\n");
}

/* "--name=value" or "--name value": the value, advancing *i. */
static int opt_value(int argc, char **argv, int *i, const char *name,
		     const char **out, char *err, size_t errlen)
{
	const char *a = argv[*i];
	size_t n = strlen(name);

	if (!strncmp(a, name, n) && a[n] == '=') {
		*out = a + n + 1;
		return 1;
	}
	if (strcmp(a, name))
		return 0;
	if (*i + 1 >= argc)
		return errf(err, errlen, "option %s needs a value", name);
	*out = argv[++*i];
	return 1;
}

/* runc's durations: N followed by ms, s, m or h (a bare N is seconds). */
static int parse_interval(const char *v, unsigned int *ms)
{
	static const struct {
		const char *unit;
		unsigned long long ms;
	} units[] = { { "ms", 1 }, { "s", 1000 }, { "", 1000 }, { "m", 60000 },
		      { "h", 3600000 } };
	char *e;
	unsigned long long n = strtoull(v, &e, 10);

	if (e == v || *v == '-')
		return -1;
	for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++)
		if (!strcmp(e, units[k].unit)) {
			if (n == 0 || n > 86400000ull / units[k].ms)
				return -1;
			*ms = (unsigned int)(n * units[k].ms);
			return 0;
		}
	return -1;
}

/* events' options: 1 taken, 0 not theirs, -1 bad. */
static int events_option(struct oci_cli *c, int argc, char **argv, int *i,
			 char *err, size_t errlen)
{
	const char *v;
	int r;

	if (!strcmp(argv[*i], "--stats")) {
		c->stats = true;
		return 1;
	}
	if ((r = opt_value(argc, argv, i, "--interval", &v, err, errlen)) <= 0)
		return r;
	if (parse_interval(v, &c->interval_ms))
		return errf(err, errlen,
			    "events: bad --interval %s (1ms .. 24h, e.g. 500ms, 5s, 1m)", v);
	return 1;
}

/* list's, update's, events' and spec's options: 1 taken, 0 not theirs,
 * -1 bad. */
static int list_spec_option(struct oci_cli *c, int argc, char **argv, int *i,
			    char *err, size_t errlen)
{
	const char *a = argv[*i];
	int r = 0;

	if (c->cmd == OCI_CMD_LIST || c->cmd == OCI_CMD_PS) {
		if (c->cmd == OCI_CMD_LIST && (!strcmp(a, "-q") || !strcmp(a, "--quiet"))) {
			c->quiet = true;
			return 1;
		}
		if ((r = opt_value(argc, argv, i, "--format", &c->format, err, errlen)) ||
		    (r = opt_value(argc, argv, i, "-f", &c->format, err, errlen))) {
			if (r > 0 && strcmp(c->format, "table") && strcmp(c->format, "json"))
				return errf(err, errlen, "%s: --format must be table or json",
					    c->cmd_name);
			return r;
		}
	}
	if (c->cmd == OCI_CMD_UPDATE) {
		static const struct {
			const char *name;
			size_t off;
		} opts[] = {
			{ "--resources", offsetof(struct oci_cli, resources) },
			{ "-r", offsetof(struct oci_cli, resources) },
			{ "--memory", offsetof(struct oci_cli, memory) },
			{ "-m", offsetof(struct oci_cli, memory) },
			{ "--cpu-quota", offsetof(struct oci_cli, cpu_quota) },
			{ "--cpu-period", offsetof(struct oci_cli, cpu_period) },
			{ "--cpuset-cpus", offsetof(struct oci_cli, cpuset_cpus) },
			{ "--cpuset-mems", offsetof(struct oci_cli, cpuset_mems) },
			{ "--pids-limit", offsetof(struct oci_cli, pids_limit) },
		};

		for (size_t k = 0; k < sizeof(opts) / sizeof(opts[0]); k++)
			if ((r = opt_value(argc, argv, i, opts[k].name,
					   (const char **)((char *)c + opts[k].off), err,
					   errlen)))
				return r;
	}
	if (c->cmd == OCI_CMD_EVENTS)
		return events_option(c, argc, argv, i, err, errlen);
	if (c->cmd == OCI_CMD_SPEC) {
		if (!strcmp(a, "--rootless")) {
			c->rootless = true;
			return 1;
		}
		if ((r = opt_value(argc, argv, i, "--bundle", &c->bundle, err, errlen)) ||
		    (r = opt_value(argc, argv, i, "-b", &c->bundle, err, errlen)))
			return r;
	}
	return 0;
}

/* exec's options: 1 taken, 0 not exec's, -1 bad. */
static int exec_option(struct oci_cli *c, int argc, char **argv, int *i,
		       char *err, size_t errlen)
{
	static const char *const ignored[] = { "--no-new-privs", "--ignore-paused" };
	static const char *const ignored_value[] = { "--apparmor", "--process-label",
						     "--cgroup", "--preserve-fds" };
	const char *a = argv[*i], *v;
	int r;

	if (!strcmp(a, "-t") || !strcmp(a, "--tty"))
		return c->tty = true, 1;
	if (!strcmp(a, "-d") || !strcmp(a, "--detach"))
		return c->detach = true, 1;
	for (size_t k = 0; k < sizeof(ignored) / sizeof(ignored[0]); k++)
		if (!strcmp(a, ignored[k]))
			return 1;
	for (size_t k = 0; k < sizeof(ignored_value) / sizeof(ignored_value[0]); k++)
		if ((r = opt_value(argc, argv, i, ignored_value[k], &v, err, errlen)))
			return r;
	if ((r = opt_value(argc, argv, i, "--env", &v, err, errlen)) ||
	    (r = opt_value(argc, argv, i, "-e", &v, err, errlen))) {
		if (r < 0)
			return -1;
		if (!strchr(v, '=') || v[0] == '=')
			return errf(err, errlen, "exec: --env %s is not KEY=VALUE", v);
		if (c->nenv >= OCI_CLI_MAX_ENV)
			return errf(err, errlen, "exec: more than %u --env", OCI_CLI_MAX_ENV);
		c->env[c->nenv++] = v;
		return 1;
	}
	if ((r = opt_value(argc, argv, i, "--process", &c->process, err, errlen)) ||
	    (r = opt_value(argc, argv, i, "-p", &c->process, err, errlen)) ||
	    (r = opt_value(argc, argv, i, "--cwd", &c->cwd, err, errlen)) ||
	    (r = opt_value(argc, argv, i, "--user", &c->user, err, errlen)) ||
	    (r = opt_value(argc, argv, i, "-u", &c->user, err, errlen)) ||
	    (r = opt_value(argc, argv, i, "--pid-file", &c->pid_file, err, errlen)) ||
	    (r = opt_value(argc, argv, i, "--console-socket", &c->console_socket, err,
			   errlen)))
		return r;
	if ((r = opt_value(argc, argv, i, "--cap", &v, err, errlen)) ||
	    (r = opt_value(argc, argv, i, "-c", &v, err, errlen)))
		return r < 0 ? -1 : errf(err, errlen, "exec: --cap is not supported "
					 "(give the capabilities in --process FILE)");
	return 0;
}

static const struct {
	const char *name;
	enum oci_cmd cmd;
} commands[] = {
	{ "create", OCI_CMD_CREATE }, { "start", OCI_CMD_START },
	{ "state", OCI_CMD_STATE },   { "kill", OCI_CMD_KILL },
	{ "delete", OCI_CMD_DELETE }, { "features", OCI_CMD_FEATURES },
	{ "help", OCI_CMD_HELP },     { "exec", OCI_CMD_EXEC },
	{ "pause", OCI_CMD_PAUSE },   { "resume", OCI_CMD_RESUME },
	{ "checkpoint", OCI_CMD_UNSUPPORTED }, { "restore", OCI_CMD_UNSUPPORTED },
	{ "update", OCI_CMD_UPDATE }, { "ps", OCI_CMD_PS },
	{ "events", OCI_CMD_EVENTS }, { "run", OCI_CMD_RUN },
	{ "list", OCI_CMD_LIST },     { "spec", OCI_CMD_SPEC },
};

int oci_cli_parse(int argc, char **argv, struct oci_cli *c, char *err,
		  size_t errlen)
{
	const char *pos[2] = { NULL, NULL }, *v;
	unsigned int npos = 0;
	int i, r;

	memset(c, 0, sizeof(*c));
	c->root = OCI_DEFAULT_ROOT;
	c->log_format = "text";
	c->signal = "SIGTERM";
	c->interval_ms = 5000;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (a[0] != '-')
			break;
		if ((r = opt_value(argc, argv, &i, "--root", &c->root, err, errlen)) ||
		    (r = opt_value(argc, argv, &i, "--log", &c->log, err, errlen)) ||
		    (r = opt_value(argc, argv, &i, "--log-format", &c->log_format, err,
				   errlen)) ||
		    (r = opt_value(argc, argv, &i, "--kernel", &c->kernel, err, errlen)) ||
		    (r = opt_value(argc, argv, &i, "--initrd", &c->initrd, err, errlen)) ||
		    (r = opt_value(argc, argv, &i, "--criu", &v, err, errlen)) ||
		    (r = opt_value(argc, argv, &i, "--rootless", &v, err, errlen))) {
			if (r < 0)
				return -1;
			continue;
		}
		if (!strcmp(a, "--debug")) {
			c->debug = true;
		} else if (!strcmp(a, "--systemd-cgroup")) {
			c->systemd_cgroup = true;
		} else if (!strcmp(a, "-v") || !strcmp(a, "--version")) {
			c->cmd = OCI_CMD_VERSION;
			return 0;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			c->cmd = OCI_CMD_HELP;
			return 0;
		} else {
			return errf(err, errlen, "unknown global option %s", a);
		}
	}
	if (strcmp(c->log_format, "text") && strcmp(c->log_format, "json"))
		return errf(err, errlen, "--log-format must be text or json");
	if (i >= argc)
		return errf(err, errlen, "no command (see --help)");
	c->cmd_name = argv[i];
	for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
		if (!strcmp(argv[i], commands[k].name))
			c->cmd = commands[k].cmd;
	if (c->cmd == OCI_CMD_NONE)
		return errf(err, errlen, "unknown command %s", argv[i]);
	if (c->cmd == OCI_CMD_UNSUPPORTED || c->cmd == OCI_CMD_HELP ||
	    c->cmd == OCI_CMD_FEATURES)
		return 0;
	for (i++; i < argc; i++) {
		const char *a = argv[i];

		if (a[0] == '-' && a[1]) {
			r = 0;
			if (c->cmd == OCI_CMD_RUN && (!strcmp(a, "-d") || !strcmp(a, "--detach"))) {
				c->detach = true;
				continue;
			}
			if (c->cmd == OCI_CMD_RUN && !strcmp(a, "--keep")) {
				c->keep = true;
				continue;
			}
			if (c->cmd == OCI_CMD_EXEC) {
				if ((r = exec_option(c, argc, argv, &i, err, errlen)) < 0)
					return -1;
				if (r)
					continue;
			}
			if (c->cmd == OCI_CMD_CREATE || c->cmd == OCI_CMD_RUN) {
				if ((r = opt_value(argc, argv, &i, "--bundle", &c->bundle, err,
						   errlen)) ||
				    (r = opt_value(argc, argv, &i, "-b", &c->bundle, err,
						   errlen)) ||
				    (r = opt_value(argc, argv, &i, "--pid-file", &c->pid_file,
						   err, errlen)) ||
				    (r = opt_value(argc, argv, &i, "--console-socket",
						   &c->console_socket, err, errlen))) {
					if (r < 0)
						return -1;
					continue;
				}
				if ((r = opt_value(argc, argv, &i, "--preserve-fds", &v, err,
						   errlen))) {
					char *e;
					unsigned long n;

					if (r < 0)
						return -1;
					n = strtoul(v, &e, 10);
					if (*e || !*v || n > 1024)
						return errf(err, errlen, "bad --preserve-fds %s", v);
					c->preserve_fds = (unsigned int)n;
					continue;
				}
				if (!strcmp(a, "--no-pivot") || !strcmp(a, "--no-new-keyring"))
					continue;
			}
			if ((r = list_spec_option(c, argc, argv, &i, err, errlen))) {
				if (r < 0)
					return -1;
				continue;
			}
			if (c->cmd == OCI_CMD_KILL && (!strcmp(a, "--all") || !strcmp(a, "-a"))) {
				c->all = true;
				continue;
			}
			if (c->cmd == OCI_CMD_DELETE &&
			    (!strcmp(a, "--force") || !strcmp(a, "-f"))) {
				c->force = true;
				continue;
			}
			/* kill ID -9 style is not the OCI CLI's; numbers come bare. */
			return errf(err, errlen, "%s: unknown option %s", c->cmd_name, a);
		}
		if (npos >= 2)
			return errf(err, errlen, "%s: too many arguments", c->cmd_name);
		pos[npos++] = a;
		/* exec ID COMMAND...: the rest is the command, dashes and all;
		 * ps ID [ps options]: the rest is ignored (no ps(1) runs). */
		if (c->cmd == OCI_CMD_EXEC || c->cmd == OCI_CMD_PS) {
			c->exec_args = argv + i + 1;
			c->nexec_args = (unsigned int)(argc - i - 1);
			break;
		}
	}
	if (c->cmd == OCI_CMD_LIST || c->cmd == OCI_CMD_SPEC) {
		if (npos)
			return errf(err, errlen, "%s takes no container ID", c->cmd_name);
		return 0;
	}
	if (!npos)
		return errf(err, errlen, "%s: container ID missing", c->cmd_name);
	c->id = pos[0];
	if (npos == 2) {
		if (c->cmd != OCI_CMD_KILL)
			return errf(err, errlen, "%s: too many arguments", c->cmd_name);
		c->signal = pos[1];
	}
	if (!oci_valid_id(c->id))
		return errf(err, errlen, "invalid container ID \"%s\"", c->id);
	if ((c->cmd == OCI_CMD_CREATE || c->cmd == OCI_CMD_RUN) && !c->bundle)
		c->bundle = ".";
	if (c->cmd == OCI_CMD_EXEC && !c->process && !c->nexec_args)
		return errf(err, errlen, "exec: no command (give one after the ID, or --process FILE)");
	if (c->cmd == OCI_CMD_EXEC && c->tty && c->detach && !c->console_socket)
		return errf(err, errlen, "exec: --detach with --tty needs --console-socket");
	if (c->cmd == OCI_CMD_PS && !c->format)
		c->format = "table";
	if (c->cmd == OCI_CMD_KILL && spec_parse_signal(c->signal) < 0)
		return errf(err, errlen, "kill: unknown signal \"%s\"", c->signal);
	return 0;
}
