/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: minivmm-oci's command line -- oci_cli_parse() on an argv
 * split from the input at NUL bytes (at most 64 arguments), twice, then
 * spec_parse_signal(), spec_cpuset_count() and oci_valid_id() on every
 * argument (what `kill` takes, what a config.json's cpu.cpus holds, what
 * names a state directory).
 *
 * Checked beyond the sanitizers (abort()): a refusal has a reason; a
 * successful parse has a command, and for the commands that take one a
 * valid container ID (no '/', no leading '.'), a --log-format of text or
 * json (unless -v/-h ended the parse), a kill signal that parses, --preserve-fds up to 1024; both parses
 * agree; a signal is 1..NSIG-1; an ID oci_valid_id() accepts is
 * [A-Za-z0-9_.+-]+ of at most 250 bytes, starting with neither '.' nor '-'.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* By its path: minivmm's cli.h (fuzz_cli) is on the include path too. */
#include "../../examples/oci/cli.h"
#include "fuzz.h"
#include "oci.h"
#include "spec.h"

#define MAX_ARGS 64

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_oci_cli: %s\n", what);
	abort();
}

static int parse(int argc, char **strs, struct oci_cli *c)
{
	char *argv[MAX_ARGS + 2], err[256];
	int r;

	memcpy(argv, strs, sizeof(char *) * (size_t)(argc + 1));
	memset(err, 0xff, sizeof(err));
	r = oci_cli_parse(argc, argv, c, err, sizeof(err));
	if (r && (!memchr(err, '\0', sizeof(err)) || !err[0]))
		fail("a refusal without a reason");
	if (r)
		return r;
	if (c->cmd == OCI_CMD_NONE)
		fail("success without a command");
	/* -v/-h end the parse where they stand, options after them unseen. */
	if (c->cmd != OCI_CMD_VERSION && c->cmd != OCI_CMD_HELP &&
	    strcmp(c->log_format, "text") && strcmp(c->log_format, "json"))
		fail("--log-format neither text nor json");
	switch (c->cmd) {
	case OCI_CMD_CREATE:
	case OCI_CMD_START:
	case OCI_CMD_STATE:
	case OCI_CMD_KILL:
	case OCI_CMD_DELETE:
		if (!c->id || !oci_valid_id(c->id) || strchr(c->id, '/') ||
		    c->id[0] == '.')
			fail("a container ID that names no state directory of its own");
		if (c->cmd == OCI_CMD_CREATE && (!c->bundle || c->preserve_fds > 1024))
			fail("create without a bundle, or too many fds");
		if (c->cmd == OCI_CMD_KILL && spec_parse_signal(c->signal) < 0)
			fail("kill with a signal that does not parse");
		break;
	default:
		break;
	}
	return 0;
}

static void check_id(const char *s)
{
	size_t n = strlen(s);
	bool ok = n && n <= 250 && s[0] != '.' && s[0] != '-';

	for (size_t i = 0; i < n && ok; i++)
		ok = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789_.+-", s[i]) != NULL;
	if (oci_valid_id(s) != ok)
		fail("oci_valid_id() disagrees with its documented alphabet");
}

int fuzz_oci_cli(const uint8_t *data, size_t size)
{
	char *buf, *strs[MAX_ARGS + 2];
	int argc = fuzz_argv(data, size, "minivmm-oci", strs, MAX_ARGS, &buf), ra, rb;
	struct oci_cli a, b;

	ra = parse(argc, strs, &a);
	rb = parse(argc, strs, &b);
	if (ra != rb || (!ra && (a.cmd != b.cmd || a.id != b.id || a.signal != b.signal)))
		fail("two parses of one argv differ");

	for (int i = 1; i < argc; i++) {
		int sig = spec_parse_signal(strs[i]);

		if (sig != -1 && (sig < 1 || sig >= NSIG))
			fail("spec_parse_signal() out of range");
		(void)spec_cpuset_count(strs[i]);
		check_id(strs[i]);
	}
	free(buf);
	return 0;
}

FUZZ_TARGET(fuzz_oci_cli)
