/* SPDX-License-Identifier: MIT */
/*
 * process.capabilities end to end, KVM-free: config.json parsing
 * (examples/oci/spec.c: names, sets, refusals), the CONFIG records
 * (spec_encode()) as the guest init decodes them (guest-init/config.c),
 * and the init's code that applies them (guest-init/caps.c), run as root
 * in a forked child that then execs cat /proc/self/status: what the
 * container's process would see (podman's default set for root; ambient
 * capabilities for another uid; no_new_privs).
 */
#include <check.h>
#include <errno.h>
#include <grp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "caps.h"
#include "config.h"
#include "proto.h"
#include "spec.h"

/* podman 4's default set: CHOWN 0, DAC_OVERRIDE 1, FOWNER 3, FSETID 4,
 * KILL 5, SETGID 6, SETUID 7, SETPCAP 8, NET_BIND_SERVICE 10,
 * SYS_CHROOT 18, SETFCAP 31. */
#define PODMAN_CAPS 0x800405fbull
#define PODMAN_NAMES                                                           \
	"[\"CAP_CHOWN\",\"CAP_DAC_OVERRIDE\",\"CAP_FOWNER\",\"CAP_FSETID\","  \
	"\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\",\"CAP_SETFCAP\",\"CAP_SETGID\"," \
	"\"CAP_SETPCAP\",\"CAP_SETUID\",\"CAP_SYS_CHROOT\"]"

static char dir[64];
static char err[1024];

static void setup(void)
{
	char p[128];

	strcpy(dir, "/tmp/check_oci_caps.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/rootfs", dir);
	ck_assert_int_eq(mkdir(p, 0755), 0);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Load a config whose process has @caps (JSON text, or NULL for none). */
static int load(const char *caps, struct oci_spec *s)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/config.json", dir);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\"},"
		"\"linux\":{\"namespaces\":[{\"type\":\"network\"}]},"
		"\"process\":{\"args\":[\"sh\"]%s%s}}", caps ? ",\"capabilities\":" : "",
		caps ? caps : "");
	fclose(f);
	return spec_load(dir, NULL, s, err, sizeof(err));
}

START_TEST(test_names)
{
	ck_assert_str_eq(spec_cap_names[0], "CAP_CHOWN");
	ck_assert_str_eq(spec_cap_names[SPEC_CAP_LAST], "CAP_CHECKPOINT_RESTORE");
	ck_assert_int_eq(spec_cap_number("CAP_NET_ADMIN"), 12);
	ck_assert_int_eq(spec_cap_number("CAP_SETFCAP"), 31);
	ck_assert_int_eq(spec_cap_number("CAP_BPF"), 39);
	ck_assert_int_eq(spec_cap_number("NET_ADMIN"), -1);
	ck_assert_int_eq(spec_cap_number("cap_net_admin"), -1);
	ck_assert_int_eq(spec_cap_number(""), -1);
	for (int i = 0; i <= SPEC_CAP_LAST; i++)
		ck_assert_int_eq(spec_cap_number(spec_cap_names[i]), i);
}
END_TEST

START_TEST(test_parse_podman)
{
	struct oci_spec s;

	ck_assert_msg(!load("{\"bounding\":" PODMAN_NAMES ",\"effective\":" PODMAN_NAMES
			    ",\"permitted\":" PODMAN_NAMES ",\"inheritable\":[],"
			    "\"ambient\":[]}", &s), "%s", err);
	ck_assert(s.has_caps);
	ck_assert_uint_eq(s.caps[PROTO_CAP_BOUNDING], PODMAN_CAPS);
	ck_assert_uint_eq(s.caps[PROTO_CAP_EFFECTIVE], PODMAN_CAPS);
	ck_assert_uint_eq(s.caps[PROTO_CAP_PERMITTED], PODMAN_CAPS);
	ck_assert_uint_eq(s.caps[PROTO_CAP_INHERITABLE], 0);
	ck_assert_uint_eq(s.caps[PROTO_CAP_AMBIENT], 0);
	spec_free(&s);

	/* A set left out is empty; the last capability fits the mask. */
	ck_assert_msg(!load("{\"bounding\":[\"CAP_CHECKPOINT_RESTORE\",\"CAP_CHOWN\"],"
			    "\"ambient\":null}", &s), "%s", err);
	ck_assert(s.has_caps);
	ck_assert_uint_eq(s.caps[PROTO_CAP_BOUNDING], (1ull << 40) | 1);
	ck_assert_uint_eq(s.caps[PROTO_CAP_EFFECTIVE], 0);
	spec_free(&s);

	/* No object: nothing to apply (every capability kept, as runc). */
	ck_assert(!load(NULL, &s));
	ck_assert(!s.has_caps);
	spec_free(&s);
	ck_assert(!load("null", &s));
	ck_assert(!s.has_caps);
	spec_free(&s);
	/* An empty object: every set empty. */
	ck_assert(!load("{}", &s));
	ck_assert(s.has_caps);
	for (int k = 0; k < PROTO_CAP_SETS; k++)
		ck_assert_uint_eq(s.caps[k], 0);
	spec_free(&s);
}
END_TEST

START_TEST(test_parse_refusals)
{
	static const struct {
		const char *caps, *reason;
	} bad[] = {
		{ "{\"bounding\":[\"CAP_CHOWN\",\"CAP_FLY\"]}",
		  "unknown capability \"CAP_FLY\" in process.capabilities.bounding" },
		{ "{\"ambient\":[\"NET_ADMIN\"]}",
		  "unknown capability \"NET_ADMIN\" in process.capabilities.ambient" },
		{ "{\"effective\":[\"cap_chown\"]}", "unknown capability \"cap_chown\"" },
		{ "{\"permitted\":[\"CAP_\\nX\"]}", "unknown capability \"?\" in "
						   "process.capabilities.permitted" },
		{ "{\"inheritable\":[7]}",
		  "process.capabilities.inheritable[0] is not a string" },
		{ "{\"bounding\":\"CAP_CHOWN\"}",
		  "process.capabilities.bounding must be an array" },
		{ "[\"CAP_CHOWN\"]", "process.capabilities must be an object" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct oci_spec s;

		ck_assert_msg(load(bad[i].caps, &s) == -1, "accepted %s", bad[i].caps);
		ck_assert_msg(strstr(err, bad[i].reason), "%s: '%s' lacks '%s'",
			      bad[i].caps, err, bad[i].reason);
		ck_assert_msg(!strchr(err, '\n'), "not one line: %s", err);
		spec_free(&s);
	}
}
END_TEST

/* spec_encode() -> the init's decoder. */
static void round_trip(const char *caps, struct init_config *c)
{
	struct proto_buf b = { 0 };
	struct oci_spec s;

	ck_assert_msg(!load(caps, &s), "%s", err);
	spec_encode(&s, 0, 0, &b);
	ck_assert_int_eq(b.err, 0);
	memset(c, 0, sizeof(*c));
	ck_assert_int_eq(init_config_parse(c, b.data, (uint32_t)b.len), 0);
	proto_buf_free(&b);
	spec_free(&s);
}

START_TEST(test_encode_decode)
{
	static struct init_config c;
	struct proto_buf b = { 0 };
	uint8_t rec[14];

	round_trip("{\"bounding\":" PODMAN_NAMES ",\"effective\":[\"CAP_KILL\"],"
		   "\"permitted\":[\"CAP_KILL\",\"CAP_SYS_ADMIN\"],"
		   "\"inheritable\":[\"CAP_NET_RAW\"],\"ambient\":[\"CAP_BPF\"]}", &c);
	ck_assert(c.has_caps);
	ck_assert_uint_eq(c.caps[PROTO_CAP_BOUNDING], PODMAN_CAPS);
	ck_assert_uint_eq(c.caps[PROTO_CAP_EFFECTIVE], 1ull << 5);
	ck_assert_uint_eq(c.caps[PROTO_CAP_PERMITTED], (1ull << 5) | (1ull << 21));
	ck_assert_uint_eq(c.caps[PROTO_CAP_INHERITABLE], 1ull << 13);
	ck_assert_uint_eq(c.caps[PROTO_CAP_AMBIENT], 1ull << 39);
	init_config_free(&c);

	/* No capabilities object: no record, nothing to apply. */
	round_trip(NULL, &c);
	ck_assert(!c.has_caps);
	init_config_free(&c);

	/* An empty object still sends (empty) sets: drop everything. */
	round_trip("{}", &c);
	ck_assert(c.has_caps);
	ck_assert_uint_eq(c.caps[PROTO_CAP_BOUNDING], 0);
	init_config_free(&c);

	/* A capability record of the wrong length is ignored; an unknown
	 * record type (a newer host) is skipped. */
	proto_rec_str(&b, PROTO_REC_ARG, "sh");
	proto_rec_u32(&b, PROTO_REC_CAP_BOUNDING, 5);
	memset(rec, 0xff, sizeof(rec));
	proto_rec(&b, 99, rec, sizeof(rec));
	ck_assert_int_eq(b.err, 0);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(init_config_parse(&c, b.data, (uint32_t)b.len), 0);
	ck_assert(!c.has_caps);
	init_config_free(&c);
	proto_buf_free(&b);
}
END_TEST

/* What a child reports from the status of a program it exec'ed. */
struct seen {
	unsigned long long inh, prm, eff, bnd, amb;
	int nnp, uid;
};

static void parse_status(const char *text, struct seen *s)
{
	const char *l = text;

	memset(s, 0, sizeof(*s));
	s->nnp = s->uid = -1;
	for (; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		sscanf(l, "CapInh: %llx", &s->inh);
		sscanf(l, "CapPrm: %llx", &s->prm);
		sscanf(l, "CapEff: %llx", &s->eff);
		sscanf(l, "CapBnd: %llx", &s->bnd);
		sscanf(l, "CapAmb: %llx", &s->amb);
		sscanf(l, "NoNewPrivs: %d", &s->nnp);
		sscanf(l, "Uid: %d", &s->uid);
	}
}

/*
 * As the init's child does: bounding set and keepcaps, uid/gid, the other
 * sets, no_new_privs, then exec cat /proc/self/status (what the process
 * sees).  Returns 0 with @out filled, or -1 with the init's reason in
 * @why.  Needs root.
 */
static int apply_and_exec(const uint64_t caps[PROTO_CAP_SETS], uid_t uid, bool nnp,
			  struct seen *out, char *why, size_t whylen)
{
	int out_pipe[2], err_pipe[2], status;
	char buf[8192];
	ssize_t n;
	size_t have = 0;
	pid_t pid;

	ck_assert_int_eq(pipe(out_pipe), 0);
	ck_assert_int_eq(pipe(err_pipe), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char e[300] = "";

		close(out_pipe[0]);
		close(err_pipe[0]);
		if (init_caps_before_user(caps, e, sizeof(e)) ||
		    setgroups(0, NULL) || setgid(uid) || setuid(uid) ||
		    init_caps_after_user(caps, e, sizeof(e)) ||
		    (nnp && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))) {
			if (!e[0])
				snprintf(e, sizeof(e), "ids: %s", strerror(errno));
			if (write(err_pipe[1], e, strlen(e)) < 0)
				_exit(2);
			_exit(1);
		}
		dup2(out_pipe[1], 1);
		execl("/bin/cat", "cat", "/proc/self/status", (char *)NULL);
		_exit(127);
	}
	close(out_pipe[1]);
	close(err_pipe[1]);
	while ((n = read(out_pipe[0], buf + have, sizeof(buf) - 1 - have)) > 0)
		have += (size_t)n;
	buf[have] = 0;
	n = read(err_pipe[0], why, whylen - 1);
	why[n > 0 ? n : 0] = 0;
	close(out_pipe[0]);
	close(err_pipe[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	if (WEXITSTATUS(status) == 1)
		return -1;
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	parse_status(buf, out);
	return 0;
}

START_TEST(test_apply_root)
{
	uint64_t caps[PROTO_CAP_SETS] = { 0 };
	struct seen s;
	char why[300];

	if (geteuid()) {
		printf("check_oci_caps: not root, the apply tests are not run\n");
		return;
	}
	/* podman's default for a root container. */
	caps[PROTO_CAP_BOUNDING] = caps[PROTO_CAP_EFFECTIVE] =
		caps[PROTO_CAP_PERMITTED] = PODMAN_CAPS;
	ck_assert_msg(!apply_and_exec(caps, 0, false, &s, why, sizeof(why)), "%s", why);
	ck_assert_int_eq(s.uid, 0);
	ck_assert_uint_eq(s.bnd, PODMAN_CAPS);
	ck_assert_uint_eq(s.eff, PODMAN_CAPS);
	ck_assert_uint_eq(s.prm, PODMAN_CAPS);
	ck_assert_uint_eq(s.inh, 0);
	ck_assert_uint_eq(s.amb, 0);
	ck_assert_int_eq(s.nnp, 0);

	/* --security-opt no-new-privileges, --cap-drop all --cap-add
	 * NET_ADMIN (12). */
	for (int k = 0; k < PROTO_CAP_SETS; k++)
		caps[k] = k == PROTO_CAP_INHERITABLE || k == PROTO_CAP_AMBIENT ? 0
									      : 1ull << 12;
	ck_assert_msg(!apply_and_exec(caps, 0, true, &s, why, sizeof(why)), "%s", why);
	ck_assert_uint_eq(s.bnd, 1ull << 12);
	ck_assert_uint_eq(s.eff, 1ull << 12);
	ck_assert_uint_eq(s.prm, 1ull << 12);
	ck_assert_int_eq(s.nnp, 1);

	/* Everything dropped. */
	memset(caps, 0, sizeof(caps));
	ck_assert_msg(!apply_and_exec(caps, 0, false, &s, why, sizeof(why)), "%s", why);
	ck_assert_uint_eq(s.bnd | s.eff | s.prm | s.inh | s.amb, 0);
}
END_TEST

START_TEST(test_apply_user)
{
	uint64_t caps[PROTO_CAP_SETS] = { 0 };
	struct seen s;
	char why[300];

	if (geteuid()) {
		printf("check_oci_caps: not root, the apply tests are not run\n");
		return;
	}
	/* A non-root uid gets only its ambient set at exec: here
	 * NET_BIND_SERVICE (10), which keepcaps carried over the setuid. */
	caps[PROTO_CAP_BOUNDING] = PODMAN_CAPS;
	caps[PROTO_CAP_EFFECTIVE] = caps[PROTO_CAP_PERMITTED] =
		caps[PROTO_CAP_INHERITABLE] = caps[PROTO_CAP_AMBIENT] = 1ull << 10;
	ck_assert_msg(!apply_and_exec(caps, 65534, false, &s, why, sizeof(why)), "%s",
		      why);
	ck_assert_int_eq(s.uid, 65534);
	ck_assert_uint_eq(s.bnd, PODMAN_CAPS);
	ck_assert_uint_eq(s.amb, 1ull << 10);
	ck_assert_uint_eq(s.prm, 1ull << 10);
	ck_assert_uint_eq(s.eff, 1ull << 10);
	ck_assert_uint_eq(s.inh, 1ull << 10);

	/* podman's default for a non-root user: nothing but the bounding
	 * set. */
	memset(caps, 0, sizeof(caps));
	caps[PROTO_CAP_BOUNDING] = PODMAN_CAPS;
	ck_assert_msg(!apply_and_exec(caps, 65534, false, &s, why, sizeof(why)), "%s",
		      why);
	ck_assert_uint_eq(s.bnd, PODMAN_CAPS);
	ck_assert_uint_eq(s.prm | s.eff | s.inh | s.amb, 0);

	/* An ambient capability that is not inheritable: refused, saying
	 * which. */
	caps[PROTO_CAP_PERMITTED] = caps[PROTO_CAP_AMBIENT] = 1ull << 10;
	ck_assert_int_eq(apply_and_exec(caps, 65534, false, &s, why, sizeof(why)), -1);
	ck_assert_msg(strstr(why, "ambient capability 10"), "%s", why);
	/* An effective capability that is not permitted: capset refuses. */
	memset(caps, 0, sizeof(caps));
	caps[PROTO_CAP_EFFECTIVE] = 1;
	ck_assert_int_eq(apply_and_exec(caps, 0, false, &s, why, sizeof(why)), -1);
	ck_assert_msg(strstr(why, "effective 0x1, permitted 0"), "%s", why);
}
END_TEST

static Suite *caps_suite(void)
{
	Suite *s = suite_create("oci_caps");
	TCase *tc = tcase_create("caps");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_parse_podman);
	tcase_add_test(tc, test_parse_refusals);
	tcase_add_test(tc, test_encode_decode);
	tcase_add_test(tc, test_apply_root);
	tcase_add_test(tc, test_apply_user);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(caps_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
