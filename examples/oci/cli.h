/* SPDX-License-Identifier: MIT */
/* minivmm-oci's command line (parsing kept apart from main() for tests). */
#ifndef MINIVMM_OCI_CLI_H
#define MINIVMM_OCI_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum oci_cmd {
	OCI_CMD_NONE,
	OCI_CMD_CREATE,
	OCI_CMD_START,
	OCI_CMD_STATE,
	OCI_CMD_KILL,
	OCI_CMD_DELETE,
	OCI_CMD_FEATURES,
	OCI_CMD_HELP,
	OCI_CMD_VERSION,
	OCI_CMD_PAUSE,
	OCI_CMD_RESUME,
	OCI_CMD_LIST,
	OCI_CMD_SPEC,
	OCI_CMD_RUN,
	OCI_CMD_UPDATE,
	OCI_CMD_EVENTS,
	OCI_CMD_UNSUPPORTED, /* exec, ps, ...: a clear error */
};

struct oci_cli {
	/* global */
	const char *root, *log, *log_format;
	const char *kernel, *initrd; /* --kernel/--initrd overrides */
	bool debug;
	bool systemd_cgroup; /* --systemd-cgroup: cgroupsPath is slice:prefix:name */
	enum oci_cmd cmd;
	const char *cmd_name;
	/* command */
	const char *id;
	const char *bundle, *pid_file, *console_socket;
	unsigned int preserve_fds;
	const char *signal; /* kill: default "SIGTERM" */
	bool all, force;
	const char *format; /* list: "table" (default) or "json" */
	bool quiet;	    /* list -q */
	bool rootless;	    /* spec --rootless */
	bool detach, keep;  /* run -d, --keep */
	/* update: as given, parsed by oci_update_resources() */
	const char *resources, *memory, *cpu_quota, *cpu_period, *cpuset_cpus,
		*cpuset_mems, *pids_limit;
	bool stats;		 /* events --stats: one sample, then exit */
	unsigned int interval_ms; /* events --interval (default 5 s) */
};

/*
 * Parse argv (the OCI runtime CLI's shape: global options, command, its
 * options, ID).  The reference runtime's global --rootless and --criu are
 * accepted and ignored; --systemd-cgroup sets systemd_cgroup.  Returns 0, or -1 with a one-line
 * reason in @err.  The strings point into argv.
 */
int oci_cli_parse(int argc, char **argv, struct oci_cli *c, char *err,
		  size_t errlen);
void oci_cli_usage(FILE *f);

#endif
