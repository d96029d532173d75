/* SPDX-License-Identifier: MIT */
/*
 * minivmm-oci exec's channel without a VM (issue 32, item 2):
 * examples/oci/exec-proto.c's frames -- every type's length rule, both
 * directions, a stream cut anywhere, hostile headers (length 0, over the
 * limit, an unknown type, a type of the other direction) ending the
 * session and staying ended, the output queue's bound -- the exit status
 * conventions, the request's process records decoded by the guest init's
 * own decoder (guest-init/config.c), and exec's and ps's command lines.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cli.h"
#include "config.h"
#include "exec-proto.h"
#include "spec.h"

static struct exec_reader R;

static void feed(struct exec_reader *r, const uint8_t *p, size_t n)
{
	size_t room;
	uint8_t *d = exec_reader_space(r, &room);

	ck_assert_uint_ge(room, n);
	memcpy(d, p, n);
	exec_reader_commit(r, n);
}

START_TEST(test_frames_split)
{
	static struct exec_outq q;
	uint8_t data[100], type;
	const uint8_t *p;
	uint32_t len;
	size_t total;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7);
	ck_assert_int_eq(exec_outq_put(&q, EXEC_MSG_STDOUT, data, sizeof(data)), 0);
	ck_assert_int_eq(exec_outq_put(&q, EXEC_MSG_EXIT, "\0\3\0\0\0", 5), 0);
	total = q.len;
	ck_assert_uint_eq(total, 2 * EXEC_HDR + 100 + 5);
	/* Byte by byte: nothing until a frame is whole. */
	exec_reader_init(&R, EXEC_SIDE_HOST);
	for (size_t i = 0; i < total; i++) {
		int got;

		feed(&R, q.buf + i, 1);
		got = exec_reader_next(&R, &type, &p, &len);
		if (i == EXEC_HDR + 100 - 1) {
			ck_assert_int_eq(got, 1);
			ck_assert_uint_eq(type, EXEC_MSG_STDOUT);
			ck_assert_uint_eq(len, 100);
			ck_assert_mem_eq(p, data, 100);
		} else if (i == total - 1) {
			ck_assert_int_eq(got, 1);
			ck_assert_uint_eq(type, EXEC_MSG_EXIT);
			ck_assert_int_eq(exec_exit_code(p), 3);
		} else {
			ck_assert_int_eq(got, 0);
		}
	}
}
END_TEST

static int one(enum exec_side side, uint32_t l, uint8_t type, uint32_t payload)
{
	uint8_t b[EXEC_HDR + 8] = { (uint8_t)l, (uint8_t)(l >> 8), (uint8_t)(l >> 16),
				    (uint8_t)(l >> 24), type };
	const uint8_t *p;
	uint32_t len;
	uint8_t t;

	exec_reader_init(&R, side);
	feed(&R, b, EXEC_HDR + (payload < 8 ? payload : 8));
	return exec_reader_next(&R, &t, &p, &len);
}

START_TEST(test_hostile)
{
	const uint8_t *p;
	uint32_t len;
	uint8_t t;

	/* Length 0, over the limit, the top bit. */
	ck_assert_int_eq(one(EXEC_SIDE_GUEST, 0, EXEC_MSG_STDIN, 0), -1);
	ck_assert_int_eq(one(EXEC_SIDE_GUEST, EXEC_MAX_FRAME + 1, EXEC_MSG_EXEC, 0), -1);
	ck_assert_int_eq(one(EXEC_SIDE_HOST, 0xffffffffu, EXEC_MSG_STDOUT, 0), -1);
	ck_assert_ptr_nonnull(R.err);
	/* Broken stays broken, and takes no more bytes. */
	ck_assert_int_eq(exec_reader_next(&R, &t, &p, &len), -1);
	{
		size_t room;

		exec_reader_space(&R, &room);
		ck_assert_uint_eq(room, 0);
	}
	/* Unknown type; a type of the other direction. */
	ck_assert_int_eq(one(EXEC_SIDE_GUEST, 1, 99, 0), -1);
	ck_assert_int_eq(one(EXEC_SIDE_GUEST, 1 + 4, EXEC_MSG_STARTED, 4), -1);
	ck_assert_int_eq(one(EXEC_SIDE_HOST, 1 + 4, EXEC_MSG_SIGNAL, 4), -1);
	/* Lengths against the type: data over EXEC_MAX_DATA or empty, a
	 * signal of 3 bytes, an EOF with a payload, EXIT of 4. */
	ck_assert_int_eq(one(EXEC_SIDE_GUEST, 1 + EXEC_MAX_DATA + 1, EXEC_MSG_STDIN, 0), -1);
	ck_assert_int_eq(one(EXEC_SIDE_GUEST, 1, EXEC_MSG_STDIN, 0), -1);
	ck_assert_int_eq(one(EXEC_SIDE_GUEST, 1 + 3, EXEC_MSG_SIGNAL, 3), -1);
	ck_assert_int_eq(one(EXEC_SIDE_GUEST, 1 + 1, EXEC_MSG_STDIN_EOF, 1), -1);
	ck_assert_int_eq(one(EXEC_SIDE_HOST, 1 + 4, EXEC_MSG_EXIT, 4), -1);
	ck_assert_int_eq(one(EXEC_SIDE_HOST, 1 + 600, EXEC_MSG_ERROR, 0), -1);
	/* Good headers wait for their payload. */
	ck_assert_int_eq(one(EXEC_SIDE_GUEST, 1 + EXEC_MAX_DATA, EXEC_MSG_STDIN, 8), 0);
	ck_assert_int_eq(one(EXEC_SIDE_GUEST, EXEC_MAX_FRAME, EXEC_MSG_EXEC, 8), 0);
	ck_assert_int_eq(one(EXEC_SIDE_GUEST, 1, EXEC_MSG_STDIN_EOF, 0), 1);
}
END_TEST

START_TEST(test_outq_bound)
{
	static struct exec_outq q;
	static uint8_t big[EXEC_MAX_DATA];
	unsigned int n = 0;

	while (exec_outq_fits(&q, EXEC_MAX_DATA)) {
		ck_assert_int_eq(exec_outq_put(&q, EXEC_MSG_STDOUT, big, sizeof(big)), 0);
		n++;
	}
	ck_assert_uint_ge(n, 2);
	ck_assert_uint_le(q.len, EXEC_OUTQ_CAP);
	ck_assert_int_eq(exec_outq_put(&q, EXEC_MSG_STDOUT, big, sizeof(big)), -ENOSPC);
	ck_assert_int_eq(exec_outq_put(&q, EXEC_MSG_EXEC, big, EXEC_MAX_FRAME), -EINVAL);
	/* Some of it written: the room comes back (compacted). */
	q.off = q.len - EXEC_HDR - EXEC_MAX_DATA;
	ck_assert(exec_outq_fits(&q, EXEC_MAX_DATA));
	ck_assert_int_eq(exec_outq_put(&q, EXEC_MSG_STDOUT, big, sizeof(big)), 0);
	ck_assert_uint_le(q.len, EXEC_OUTQ_CAP);
}
END_TEST

START_TEST(test_exit_codes)
{
	uint8_t b[5];

	exec_exit_encode(3 << 8, b); /* exited 3 */
	ck_assert_int_eq(exec_exit_code(b), 3);
	exec_exit_encode(SIGKILL, b); /* killed by 9 */
	ck_assert_int_eq(exec_exit_code(b), 137);
	exec_exit_encode(SIGTERM, b);
	ck_assert_int_eq(exec_exit_code(b), 143);
	b[0] = 1, b[1] = 0xff, b[2] = b[3] = b[4] = 0xff; /* hostile: bounded */
	ck_assert_int_le(exec_exit_code(b), 255);
}
END_TEST

/* The request's records, as the guest init decodes them. */
START_TEST(test_process_records)
{
	static char a0[] = "sh", a1[] = "-c", a2[] = "exit 3", e0[] = "A=1",
		    e1[] = "PATH=/bin", cwd[] = "/tmp", host[] = "not-sent";
	char *args[] = { a0, a1, a2 }, *env[] = { e0, e1 };
	uint32_t gids[] = { 10, 20 };
	struct oci_spec s = { .args = args, .nargs = 3, .env = env, .nenv = 2,
			      .cwd = cwd, .uid = 1000, .gid = 100, .gids = gids,
			      .ngids = 2, .terminal = true, .nnp = true, .has_caps = true,
			      .caps = { 1, 2, 3, 4, 5 }, .hostname = host,
			      .root_ro = true };
	struct proto_buf b = { 0 };
	struct init_config *c = calloc(1, sizeof(*c));

	spec_encode_process(&s, 33, 77, &b);
	ck_assert_int_eq(b.err, 0);
	ck_assert_int_eq(init_config_parse(c, b.data, (uint32_t)b.len), 0);
	ck_assert_uint_eq(c->nargs, 3);
	ck_assert_str_eq(c->args[2], "exit 3");
	ck_assert_uint_eq(c->nenv, 2);
	ck_assert_str_eq(c->env[1], "PATH=/bin");
	ck_assert_str_eq(c->cwd, "/tmp");
	ck_assert_uint_eq(c->uid, 1000);
	ck_assert_uint_eq(c->gid, 100);
	ck_assert_uint_eq(c->ngroups, 2);
	ck_assert(c->terminal && c->nnp && c->has_caps);
	ck_assert_uint_eq(c->caps[PROTO_CAP_AMBIENT], 5);
	ck_assert_uint_eq(c->rows, 33);
	ck_assert_uint_eq(c->cols, 77);
	/* Only the process: no hostname, no read-only root, no mounts. */
	ck_assert_ptr_null(c->hostname);
	ck_assert(!c->root_ro);
	ck_assert_uint_eq(c->nmounts, 0);
	init_config_free(c);
	free(c);
	proto_buf_free(&b);
}
END_TEST

/* parse(c, err, ARG..., NULL) */
static int parse(struct oci_cli *c, char *err, ...)
{
	static char *argv[32], name[] = "minivmm-oci";
	int argc = 1;
	va_list ap;

	va_start(ap, err);
	argv[0] = name;
	while (argc < 31 && (argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	return oci_cli_parse(argc, argv, c, err, 256);
}

START_TEST(test_cli)
{
	struct oci_cli c;
	char err[256];

	/* podman's (conmon's) shape. */
	ck_assert_int_eq(parse(&c, err, "--root", "/r", "exec", "--pid-file", "/p",
			       "--process", "/f.json", "--detach", "--tty",
			       "--console-socket=/s", "ctr1", NULL), 0);
	ck_assert_int_eq(c.cmd, OCI_CMD_EXEC);
	ck_assert_str_eq(c.id, "ctr1");
	ck_assert(c.detach && c.tty);
	ck_assert_str_eq(c.process, "/f.json");
	ck_assert_str_eq(c.console_socket, "/s");
	/* runc's: options, ID, then the command with its own dashes. */
	ck_assert_int_eq(parse(&c, err, "exec", "-e", "A=1", "--env=B=2", "-u", "5:6",
			       "ctr1", "ls", "-l", "--", "/", NULL), 0);
	ck_assert_uint_eq(c.nexec_args, 4);
	ck_assert_str_eq(c.exec_args[2], "--");
	ck_assert_int_eq(parse(&c, err, "exec", "-e", "A=1", "--env=B=2", "-u", "5:6",
			       "--cwd", "/tmp", "ctr1", "ls", "-l", NULL), 0);
	ck_assert_uint_eq(c.nenv, 2);
	ck_assert_str_eq(c.env[1], "B=2");
	ck_assert_str_eq(c.user, "5:6");
	ck_assert_uint_eq(c.nexec_args, 2);
	ck_assert_str_eq(c.exec_args[1], "-l");
	/* Errors. */
	ck_assert_int_eq(parse(&c, err, "exec", "ctr1", NULL), -1);
	ck_assert_ptr_nonnull(strstr(err, "no command"));
	ck_assert_int_eq(parse(&c, err, "exec", "-e", "NOEQUALS", "ctr1", "ls", NULL), -1);
	ck_assert_int_eq(parse(&c, err, "exec", "-d", "-t", "ctr1", "sh", NULL), -1);
	ck_assert_ptr_nonnull(strstr(err, "console-socket"));
	ck_assert_int_eq(parse(&c, err, "exec", "--cap", "CAP_KILL", "ctr1", "sh", NULL), -1);
	/* ps. */
	ck_assert_int_eq(parse(&c, err, "ps", "ctr1", NULL), 0);
	ck_assert_int_eq(c.cmd, OCI_CMD_PS);
	ck_assert_str_eq(c.format, "table");
	ck_assert_int_eq(parse(&c, err, "ps", "--format", "json", "ctr1", "-ef", NULL), 0);
	ck_assert_str_eq(c.format, "json");
	ck_assert_int_eq(parse(&c, err, "ps", "--format", "xml", "ctr1", NULL), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oci_exec_proto");
	TCase *tc = tcase_create("proto");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_frames_split);
	tcase_add_test(tc, test_hostile);
	tcase_add_test(tc, test_outq_bound);
	tcase_add_test(tc, test_exit_codes);
	tcase_add_test(tc, test_process_records);
	tcase_add_test(tc, test_cli);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
