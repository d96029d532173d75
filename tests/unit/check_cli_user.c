/*
 * minivmm --user UID[:GID]: parsing, name resolution, the capability
 * restriction and the drop itself (examples/common/user.c, shared with
 * minivmm-oci's VMM process), and libvmm's vmm_set_start_hook() argument
 * checks.  The drop runs in a forked child when the test runs as root (CI
 * does), with a second thread blocked in read(): glibc must move it to the
 * new ids too, and it must inherit the emptied bounding, inheritable and
 * ambient sets and no_new_privs from user_restrict().
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "user.h"

static int parse(struct cli_opts *o, char *err, int argc, ...)
{
	char *argv[16];
	va_list ap;

	va_start(ap, argc);
	argv[0] = (char *)"minivmm";
	for (int i = 1; i <= argc; i++)
		argv[i] = va_arg(ap, char *);
	argv[argc + 1] = NULL;
	va_end(ap);
	return cli_parse(argc + 1, argv, o, err, 256);
}

START_TEST(parse_ok)
{
	struct user_spec u;
	struct cli_opts o;
	char err[256];

	ck_assert_int_eq(user_parse("65534:65534", "--user", &u, err, sizeof(err)), 0);
	ck_assert(u.set && u.has_gid);
	ck_assert_uint_eq(u.uid, 65534);
	ck_assert_uint_eq(u.gid, 65534);
	ck_assert_ptr_null(u.user_name);
	ck_assert_ptr_null(u.group_name);
	user_spec_free(&u);

	ck_assert_int_eq(user_parse("1000", "--user", &u, err, sizeof(err)), 0);
	ck_assert(u.set && !u.has_gid);
	ck_assert_uint_eq(u.uid, 1000);
	user_spec_free(&u);

	ck_assert_int_eq(user_parse("4294967294:007", "--user", &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(u.uid, 4294967294u);
	ck_assert_uint_eq(u.gid, 7);
	user_spec_free(&u);

	ck_assert_int_eq(user_parse("nobody:nogroup", "--user", &u, err, sizeof(err)), 0);
	ck_assert(u.set && u.has_gid);
	ck_assert_str_eq(u.user_name, "nobody");
	ck_assert_str_eq(u.group_name, "nogroup");
	user_spec_free(&u);

	ck_assert_int_eq(user_parse("vmm-user.1$:100", "--user", &u, err, sizeof(err)), 0);
	ck_assert_str_eq(u.user_name, "vmm-user.1$");
	ck_assert_ptr_null(u.group_name);
	ck_assert_uint_eq(u.gid, 100);
	user_spec_free(&u);

	/* Through cli_parse(): off by default, the last --user counts. */
	ck_assert_int_eq(parse(&o, err, 2, "--kernel", "bz"), 0);
	ck_assert(!o.user.set);
	cli_free(&o);
	ck_assert_int_eq(parse(&o, err, 6, "--kernel", "bz", "--user", "alice:staff",
			       "--user", "123:456"),
			 0);
	ck_assert(o.user.set);
	ck_assert_uint_eq(o.user.uid, 123);
	ck_assert_uint_eq(o.user.gid, 456);
	ck_assert_ptr_null(o.user.user_name);
	cli_free(&o);
	ck_assert(!o.user.set);
}
END_TEST

START_TEST(parse_errors)
{
	static const struct {
		const char *arg, *reason;
	} bad[] = {
		{ "", "needs a value" },
		{ "0", "root" },
		{ "00", "root" },
		{ "0:65534", "root" },
		{ "65534:0", "root" },
		{ "65534:", "group after ':' is missing" },
		{ ":65534", "user before ':' is missing" },
		{ ":", "user before" },
		{ "1:2:3", "more than one ':'" },
		{ "-1", "neither a number nor a name" },
		{ "+5", "neither a number nor a name" },
		{ "1e3", NULL }, /* a valid name: resolved (and refused) later */
		{ "4294967295", "out of range" },
		{ "99999999999999999999999999", "out of range" },
		{ "abc def", "neither a number nor a name" },
		{ "abc\ndef", "neither a number nor a name" },
		{ "a$b", "neither a number nor a name" },
		{ "nobody:-x", "neither a number nor a name" },
		{ "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
		  "longer than" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct user_spec u;
		char err[256] = "";
		int ret = user_parse(bad[i].arg, "--user", &u, err, sizeof(err));

		if (!bad[i].reason) {
			ck_assert_msg(ret == 0, "refused '%s': %s", bad[i].arg, err);
			user_spec_free(&u);
			continue;
		}
		ck_assert_msg(ret == -1, "accepted '%s'", bad[i].arg);
		ck_assert_msg(strstr(err, bad[i].reason), "'%s': reason '%s' lacks '%s'",
			      bad[i].arg, err, bad[i].reason);
		ck_assert_msg(!strchr(err, '\n'), "reason must be one line: '%s'", err);
		ck_assert(!u.set);
		user_spec_free(&u);
	}
}
END_TEST

START_TEST(parse_errors_argv)
{
	struct cli_opts o;
	char err[256];

	ck_assert_int_eq(parse(&o, err, 3, "--kernel", "bz", "--user"), -1);
	ck_assert_ptr_nonnull(strstr(err, "needs a value"));
	cli_free(&o);
	ck_assert_int_eq(parse(&o, err, 4, "--kernel", "bz", "--user", "0"), -1);
	ck_assert_ptr_nonnull(strstr(err, "root"));
	cli_free(&o);
	/* A name allocated before the error is freed by cli_free() (ASan). */
	ck_assert_int_eq(parse(&o, err, 4, "--kernel", "bz", "--user", "alice:0"), -1);
	cli_free(&o);
}
END_TEST

static int resolve(const char *arg, uid_t *uid, gid_t *gid, char *err)
{
	struct user_spec u;
	int ret;

	ck_assert_msg(user_parse(arg, "--user", &u, err, 256) == 0, "parse '%s': %s", arg,
		      err);
	ret = user_resolve(&u, uid, gid, err, 256);
	user_spec_free(&u);
	return ret;
}

START_TEST(resolve_ids_and_names)
{
	const struct passwd *pw;
	uid_t uid, want_uid = 0;
	gid_t gid, want_gid = 0;
	char err[256], name[128] = "", arg[160];

	/* Both numbers: no database lookup. */
	ck_assert_int_eq(resolve("65534:65534", &uid, &gid, err), 0);
	ck_assert_uint_eq(uid, 65534);
	ck_assert_uint_eq(gid, 65534);

	/* Names that resolve to root are refused like "0". */
	ck_assert_int_eq(resolve("root", &uid, &gid, err), -1);
	ck_assert_ptr_nonnull(strstr(err, "root"));
	ck_assert_int_eq(resolve("65534:root", &uid, &gid, err), -1);
	ck_assert_ptr_nonnull(strstr(err, "gid 0"));

	ck_assert_int_eq(resolve("no-such-user-vmm", &uid, &gid, err), -1);
	ck_assert_ptr_nonnull(strstr(err, "no user named 'no-such-user-vmm'"));
	ck_assert_int_eq(resolve("65534:no-such-group-vmm", &uid, &gid, err), -1);
	ck_assert_ptr_nonnull(strstr(err, "no group named 'no-such-group-vmm'"));

	/* A uid without a group needs a passwd entry to take it from. */
	ck_assert_int_eq(resolve("3999999999", &uid, &gid, err), -1);
	ck_assert_ptr_nonnull(strstr(err, "give the group too, as 3999999999:GID"));

	/* Any unprivileged account of this system: by name and by number,
	 * its primary group is the default. */
	setpwent();
	while ((pw = getpwent()))
		if (pw->pw_uid && pw->pw_gid && pw->pw_uid != (uid_t)-1 &&
		    pw->pw_gid != (gid_t)-1 && strlen(pw->pw_name) < 64 &&
		    !strpbrk(pw->pw_name, ":$ ")) {
			snprintf(name, sizeof(name), "%s", pw->pw_name);
			want_uid = pw->pw_uid;
			want_gid = pw->pw_gid;
			break;
		}
	endpwent();
	if (!name[0])
		return; /* no such account here (a minimal container) */
	ck_assert_msg(resolve(name, &uid, &gid, err) == 0, "%s: %s", name, err);
	ck_assert_uint_eq(uid, want_uid);
	ck_assert_uint_eq(gid, want_gid);
	snprintf(arg, sizeof(arg), "%u", (unsigned int)want_uid);
	ck_assert_msg(resolve(arg, &uid, &gid, err) == 0, "%s: %s", arg, err);
	ck_assert_uint_eq(uid, want_uid);
	ck_assert_uint_eq(gid, want_gid);
	snprintf(arg, sizeof(arg), "%s:4242", name);
	ck_assert_int_eq(resolve(arg, &uid, &gid, err), 0);
	ck_assert_uint_eq(uid, want_uid);
	ck_assert_uint_eq(gid, 4242);
}
END_TEST

/* The calling thread's capability sets and no_new_privs, as /proc shows
 * them (CapInh/CapPrm/CapEff/CapBnd/CapAmb, NoNewPrivs). */
struct capstate {
	unsigned long long inh, prm, eff, bnd, amb;
	int nnp;
};

static int read_capstate(struct capstate *c)
{
	char path[64], line[256];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/thread-self/status");
	f = fopen(path, "re");
	if (!f)
		return -1;
	memset(c, 0, sizeof(*c));
	c->nnp = -1;
	while (fgets(line, sizeof(line), f)) {
		n += sscanf(line, "CapInh: %llx", &c->inh) == 1;
		n += sscanf(line, "CapPrm: %llx", &c->prm) == 1;
		n += sscanf(line, "CapEff: %llx", &c->eff) == 1;
		n += sscanf(line, "CapBnd: %llx", &c->bnd) == 1;
		n += sscanf(line, "CapAmb: %llx", &c->amb) == 1;
		n += sscanf(line, "NoNewPrivs: %d", &c->nnp) == 1;
	}
	fclose(f);
	return n == 6 ? 0 : -1;
}

static bool capstate_empty(const struct capstate *c)
{
	return !c->inh && !c->prm && !c->eff && !c->bnd && !c->amb && c->nnp == 1;
}

/* A second thread, blocked in read() while the first one drops. */
struct peer {
	int pipe[2];
	uid_t r, e, s;
	gid_t rg, eg, sg;
	int ngroups;
	struct capstate caps;
	int caps_ok;
};

static void *peer_main(void *arg)
{
	struct peer *p = arg;
	char c;

	if (read(p->pipe[0], &c, 1) != 1)
		return NULL;
	getresuid(&p->r, &p->e, &p->s);
	getresgid(&p->rg, &p->eg, &p->sg);
	p->ngroups = getgroups(0, NULL);
	p->caps_ok = read_capstate(&p->caps) == 0;
	return NULL;
}

/* Child side of drop_as_root: returns the line that failed, 0 if none. */
static int drop_child(const char *rootonly)
{
	struct peer p = { .ngroups = -1 };
	struct capstate cs;
	char err[256] = "";
	pthread_t t;
	int fd;

	fd = open(rootonly, O_RDWR); /* before the drop, like the VM's files */
	if (fd < 0 || pipe(p.pipe))
		return __LINE__;
	/* One thread: the sets the uid change keeps are emptied here. */
	if (user_restrict(err, sizeof(err)))
		return __LINE__;
	/* Root keeps its permitted and effective sets until the drop. */
	if (read_capstate(&cs) || !cs.prm || !cs.eff || cs.bnd || cs.inh ||
	    cs.amb || cs.nnp != 1)
		return __LINE__;
	if (open(rootonly, O_RDONLY) < 0)
		return __LINE__;
	if (pthread_create(&t, NULL, peer_main, &p))
		return __LINE__;
	usleep(20000); /* let the peer block in read() */
	if (user_drop(65534, 65534, err, sizeof(err)))
		return __LINE__;
	if (write(p.pipe[1], "x", 1) != 1 || pthread_join(t, NULL))
		return __LINE__;
	if (p.r != 65534 || p.e != 65534 || p.s != 65534 || p.rg != 65534 ||
	    p.eg != 65534 || p.sg != 65534 || p.ngroups != 0)
		return __LINE__; /* the other thread kept its ids */
	if (!p.caps_ok || !capstate_empty(&p.caps))
		return __LINE__; /* ... or a capability, or may gain one */
	if (geteuid() != 65534 || getegid() != 65534 || getgroups(0, NULL))
		return __LINE__;
	if (read_capstate(&cs) || !capstate_empty(&cs))
		return __LINE__;
	/* The fd opened before still writes; the path no longer opens. */
	if (pwrite(fd, "ok", 2, 0) != 2)
		return __LINE__;
	if (open(rootonly, O_RDONLY) >= 0 || errno != EACCES)
		return __LINE__;
	/* Irreversible: a second drop (back up, or sideways) is refused. */
	if (user_drop(0, 0, err, sizeof(err)) != -EPERM || !strstr(err, "setgroups"))
		return __LINE__;
	if (user_drop(65533, 65533, err, sizeof(err)) != -EPERM)
		return __LINE__;
	return 0;
}

/* Without user_restrict() first, the drop itself works but its check
 * finds the bounding set still full: user_drop() fails. */
static int drop_unrestricted_child(void)
{
	char err[256] = "";

	if (user_drop(65534, 65534, err, sizeof(err)) != -EPERM ||
	    !strstr(err, "bounding capability set is not empty"))
		return __LINE__;
	return 0;
}

/* Run @fn in a forked child; its return value is the failing line. */
static void in_child(int (*fn)(void *), void *arg, const char *what)
{
	int status, line = -1, rep[2];
	pid_t pid;

	ck_assert_int_eq(pipe(rep), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		line = fn(arg);
		_exit(write(rep[1], &line, sizeof(line)) == sizeof(line) ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "%s: the child died (status 0x%x)", what, status);
	ck_assert_int_eq(read(rep[0], &line, sizeof(line)), sizeof(line));
	ck_assert_msg(line == 0, "%s: failed at check_cli_user.c:%d", what, line);
	close(rep[0]);
	close(rep[1]);
}

static int drop_child_fn(void *arg)
{
	return drop_child(arg);
}

static int drop_unrestricted_fn(void *arg)
{
	(void)arg;
	return drop_unrestricted_child();
}

START_TEST(drop_as_root)
{
	char path[] = "/tmp/check_cli_user.XXXXXX", err[256] = "", buf[4] = "";
	int fd;

	if (geteuid() != 0) {
		/* Unprivileged: both steps fail at once, saying why. */
		ck_assert_int_eq(user_restrict(err, sizeof(err)), -EPERM);
		ck_assert_ptr_nonnull(strstr(err, "must start as root"));
		ck_assert_int_eq(user_drop(65534, 65534, err, sizeof(err)), -EPERM);
		ck_assert_ptr_nonnull(strstr(err, "must start as root"));
		return;
	}
	fd = mkstemp(path); /* mode 0600, owned by root */
	ck_assert_int_ge(fd, 0);
	in_child(drop_child_fn, path, "restrict + drop");
	ck_assert_int_eq(pread(fd, buf, 2, 0), 2);
	ck_assert_str_eq(buf, "ok");
	close(fd);
	unlink(path);
	in_child(drop_unrestricted_fn, NULL, "drop without restrict");
}
END_TEST

START_TEST(start_hook_api)
{
	ck_assert_int_eq(vmm_set_start_hook(NULL, NULL, NULL), -EINVAL);
}
END_TEST

static Suite *cli_user_suite(void)
{
	Suite *s = suite_create("cli_user");
	TCase *tc = tcase_create("user");

	tcase_add_test(tc, parse_ok);
	tcase_add_test(tc, parse_errors);
	tcase_add_test(tc, parse_errors_argv);
	tcase_add_test(tc, resolve_ids_and_names);
	tcase_add_test(tc, drop_as_root);
	tcase_add_test(tc, start_hook_api);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cli_user_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
