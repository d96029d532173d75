/* SPDX-License-Identifier: MIT */
/* minivmm's JSON control socket and its client (api.h). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "rate-spec.h"
#include "vm-stats.h"
#include "unix-listen.h"

struct api_server {
	int fd;
	int reaper; /* write end of the remover's pipe (see spawn_remover()) */
	uid_t euid; /* read at open: the confined control thread may not */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

static const char *const cmd_names[] = {
	[API_INFO] = "info",	 [API_STATS] = "stats", [API_PAUSE] = "pause",
	[API_RESUME] = "resume", [API_STOP] = "stop",	[API_SHUTDOWN] = "shutdown",
	[API_SET_RATE_LIMIT] = "set-rate-limit", [API_SET_LINK] = "set-link",
};

#define NR_CMDS (sizeof(cmd_names) / sizeof(cmd_names[0]))

/* set-rate-limit's members (api.h): the device and the limits, in the
 * order rate_field() gives their places. */
static const char *const rate_members[] = {
	"bw", "bw_burst", "bw_one_time", "ops", "ops_burst", "ops_one_time",
};
#define NR_RATE_MEMBERS (sizeof(rate_members) / sizeof(rate_members[0]))

/* The place of rate_members[@i] in @l.  (Named members, not an offset
 * table: GCC's object-size checks see through a byte offset from the
 * struct's first member and reject it.) */
static uint64_t *rate_field(struct vmm_rate_limit *l, size_t i)
{
	uint64_t *const f[NR_RATE_MEMBERS] = { &l->bw,	&l->bw_burst,  &l->bw_one_time,
					       &l->ops, &l->ops_burst, &l->ops_one_time };

	return f[i];
}
#define API_RATE_MAX (1ll << 60)

/* "diskN" / "netN", N a decimal index below VMM_MAX_DISKS, no leading 0. */
static int rate_device(const char *s, size_t len, struct api_request *r)
{
	size_t pre = !strncmp(s, "disk", 4) ? 4 : !strncmp(s, "net", 3) ? 3 : 0;
	unsigned int n = 0;

	if (!pre || len == pre || len > pre + 3 || strlen(s) != len ||
	    (s[pre] == '0' && len > pre + 1))
		return -1;
	for (size_t i = pre; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		n = n * 10 + (unsigned int)(s[i] - '0');
	}
	if (n >= VMM_MAX_DISKS)
		return -1;
	r->net = pre == 3;
	r->index = n;
	return 0;
}

/* One member of a set-rate-limit request. */
static int rate_member(const char *key, json_t *v, struct api_request *r,
		       char *err, size_t errlen)
{
	if (!strcmp(key, "device")) {
		if (!json_is_string(v) ||
		    rate_device(json_string_value(v), json_string_length(v), r)) {
			snprintf(err, errlen, "\"device\" must be \"diskN\" or "
				 "\"netN\" (N below %d)", VMM_MAX_DISKS);
			return -1;
		}
		return 0;
	}
	for (size_t i = 0; i < NR_RATE_MEMBERS; i++) {
		uint64_t x;

		if (strcmp(key, rate_members[i]))
			continue;
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > API_RATE_MAX) {
			snprintf(err, errlen, "\"%s\" must be an integer 0..2^60", key);
			return -1;
		}
		x = (uint64_t)json_integer_value(v);
		*rate_field(&r->rate, i) = x;
		return 0;
	}
	snprintf(err, errlen, "unknown member \"%.40s\"", key);
	return -1;
}

/* One member of a set-link request. */
static int link_member(const char *key, json_t *v, struct api_request *r,
		       char *err, size_t errlen)
{
	if (!strcmp(key, "device")) {
		if (!json_is_string(v) ||
		    rate_device(json_string_value(v), json_string_length(v), r) ||
		    !r->net) {
			snprintf(err, errlen, "\"device\" must be \"netN\" (N below %d)",
				 VMM_MAX_DISKS);
			return -1;
		}
		return 0;
	}
	if (!strcmp(key, "up")) {
		if (!json_is_boolean(v)) {
			snprintf(err, errlen, "\"up\" must be true or false");
			return -1;
		}
		r->up = json_is_true(v);
		return 0;
	}
	snprintf(err, errlen, "unknown member \"%.40s\"", key);
	return -1;
}

/* The members besides "command": set-rate-limit's, set-link's, or none. */
static int request_members(json_t *req, struct api_request *r, char *err,
			   size_t errlen)
{
	bool device = false, up = false;
	const char *key;
	json_t *v;

	json_object_foreach(req, key, v) {
		if (!strcmp(key, "command"))
			continue;
		if (r->cmd == API_SET_LINK) {
			if (link_member(key, v, r, err, errlen))
				return -1;
		} else if (r->cmd != API_SET_RATE_LIMIT) {
			snprintf(err, errlen, "unknown member \"%.40s\"", key);
			return -1;
		} else if (rate_member(key, v, r, err, errlen)) {
			return -1;
		}
		device = device || !strcmp(key, "device");
		up = up || !strcmp(key, "up");
	}
	if ((r->cmd == API_SET_RATE_LIMIT || r->cmd == API_SET_LINK) && !device) {
		snprintf(err, errlen, "\"device\" is missing");
		return -1;
	}
	if (r->cmd == API_SET_LINK && !up) {
		snprintf(err, errlen, "\"up\" is missing");
		return -1;
	}
	if ((!r->rate.bw && (r->rate.bw_burst || r->rate.bw_one_time)) ||
	    (!r->rate.ops && (r->rate.ops_burst || r->rate.ops_one_time))) {
		snprintf(err, errlen, "a burst or one-time allowance needs its rate");
		return -1;
	}
	return 0;
}

int api_parse_request(const char *buf, size_t len, enum api_cmd *cmd,
		      char *err, size_t errlen)
{
	struct api_request r;

	if (api_parse(buf, len, &r, err, errlen))
		return -1;
	*cmd = r.cmd;
	return 0;
}

int api_parse(const char *buf, size_t len, struct api_request *r, char *err,
	      size_t errlen)
{
	json_error_t je;
	json_t *req, *c;
	const char *name;
	int ret = -1;

	memset(r, 0, sizeof(*r));
	r->rate.struct_size = sizeof(r->rate);
	if (len > API_MAX_REQUEST) {
		snprintf(err, errlen, "request over %d bytes", API_MAX_REQUEST);
		return -1;
	}
	/* JSON_REJECT_DUPLICATES: {"command":"info","command":"stop"} is
	 * ambiguous; JSON_DISABLE_EOF_CHECK off: nothing may follow but
	 * white space (the newline). */
	req = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!req) {
		snprintf(err, errlen, "not JSON: %s (offset %d)", je.text, je.position);
		return -1;
	}
	if (!json_is_object(req)) {
		snprintf(err, errlen, "the request must be a JSON object");
		goto out;
	}
	c = json_object_get(req, "command");
	if (!json_is_string(c)) {
		snprintf(err, errlen, "\"command\" (a string) is missing");
		goto out;
	}
	name = json_string_value(c);
	for (size_t i = 0; i < NR_CMDS; i++)
		if (!strcmp(name, cmd_names[i]) &&
		    strlen(name) == json_string_length(c)) {
			r->cmd = (enum api_cmd)i;
			ret = request_members(req, r, err, errlen);
			goto out;
		}
	snprintf(err, errlen, "unknown command \"%.40s\" (info, stats, pause, "
		 "resume, stop, shutdown, set-rate-limit, set-link)", name);
out:
	json_decref(req);
	return ret;
}

/*
 * The socket file must go when minivmm ends, but its control thread runs
 * confined (no unlink(): a confined thread must not delete files).  A
 * child forked now, while minivmm has one thread, waits for the pipe to
 * close -- at minivmm's exit, however it ends, a crash included -- and
 * removes the path if it is still this socket.  Returns the pipe's write
 * end, or -errno.
 */
static int spawn_remover(const char *path, const struct stat *sock)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (pid == 0) {
		struct stat st;
		char c;
		int null = open("/dev/null", O_RDWR);

		prctl(PR_SET_NAME, "minivmm-api-rm");
		dup2(p[0], 0);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		close_range(3, ~0u, 0);
		while (read(0, &c, 1) < 0 && errno == EINTR)
			;
		if (!lstat(path, &st) && st.st_ino == sock->st_ino &&
		    st.st_dev == sock->st_dev)
			unlink(path);
		_exit(0);
	}
	close(p[0]);
	return p[1];
}

int api_server_open(const char *path, struct api_server **out, char *err,
		    size_t errlen)
{
	struct sockaddr_un sa;
	struct api_server *s;
	struct stat st;
	int ret;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "path longer than %zu bytes", sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	strcpy(s->path, path);
	s->euid = geteuid();
	/* jansson seeds its hash function from /dev/urandom at the first
	 * object it makes: now, not on the confined control thread (no
	 * open() there). */
	json_object_seed(0);
	/* A socket left by a minivmm that died is replaced; anything else at
	 * the path is the operator's and stays (unix-listen.h: the path
	 * appears once the socket listens).  0600 from the start: no moment
	 * where another user could connect. */
	ret = unix_listen(path, SOCK_CLOEXEC | SOCK_NONBLOCK, 16, 0177, &s->fd);
	if (ret == -EEXIST) {
		snprintf(err, errlen, "%s exists and is not a socket", path);
		free(s);
		return ret;
	}
	if (ret)
		goto fail;
	if (lstat(path, &st))
		ret = -errno;
	if (!ret) {
		s->reaper = spawn_remover(path, &st);
		ret = s->reaper < 0 ? s->reaper : 0;
		if (ret)
			unlink(path);
	}
	if (ret) {
		close(s->fd);
		goto fail;
	}
	*out = s;
	return 0;
fail:
	snprintf(err, errlen, "%s: %s", path, strerror(-ret));
	free(s);
	return ret;
}

int api_server_fd(const struct api_server *s)
{
	return s->fd;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Read a request from @fd (non-blocking) until a newline, EOF, the size
 * limit or the deadline.  Returns its length, or -1 with a reason.
 */
static ssize_t read_request(int fd, char *buf, size_t cap, char *err,
			    size_t errlen)
{
	int64_t deadline = now_ms() + API_REQUEST_MS;
	size_t n = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - now_ms();
		ssize_t r;

		if (left <= 0 || poll(&p, 1, (int)left) == 0) {
			snprintf(err, errlen, "request not complete within %d ms",
				 API_REQUEST_MS);
			return -1;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0) {
			snprintf(err, errlen, "read: %s", strerror(errno));
			return -1;
		}
		if (r == 0 || memchr(buf + n, '\n', (size_t)r))
			return (ssize_t)(n + (size_t)r);
		n += (size_t)r;
		if (n == cap) {
			snprintf(err, errlen, "request over %d bytes", API_MAX_REQUEST);
			return -1;
		}
	}
}

/* Send @reply and a newline, bounded like the request. */
static void send_reply(int fd, json_t *reply)
{
	char *txt = json_dumps(reply, JSON_COMPACT);
	int64_t deadline = now_ms() + API_REQUEST_MS;
	size_t len, off = 0;

	json_decref(reply);
	if (!txt)
		return;
	len = strlen(txt);
	txt[len] = '\n'; /* json_dumps' NUL: the newline takes its place */
	len++;
	while (off < len) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int64_t left = deadline - now_ms();
		ssize_t w;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		/* MSG_NOSIGNAL: a client gone away is no SIGPIPE. */
		w = send(fd, txt + off, len - off, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	free(txt);
}

static json_t *error_reply(const char *msg)
{
	return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

static json_t *stats_reply(struct vmm *vm, const struct api_info *info)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_t *st = NULL;

	if (f) {
		stats_print(vm, info->nr_disks, info->nr_nets, true, f);
		if (!fclose(f))
			st = json_loadb(buf, len, 0, NULL);
		free(buf);
	}
	if (!st)
		return error_reply("statistics unavailable");
	return json_pack("{s:b, s:o}", "ok", 1, "stats", st);
}

/* set-rate-limit: the library checks the device and the limits. */
static json_t *set_rate_reply(struct vmm *vm, const struct api_request *r)
{
	int ret = r->net ? vmm_set_net_rate_limit(vm, r->index, &r->rate) :
			   vmm_set_disk_rate_limit(vm, r->index, &r->rate);

	if (ret == -ENOENT)
		return error_reply("no such device");
	if (ret == -EOPNOTSUPP)
		return error_reply("a vhost=on NIC cannot be rate-limited (the "
				   "kernel moves its frames)");
	if (ret)
		return error_reply(strerror(-ret));
	return json_pack("{s:b}", "ok", 1);
}

/* set-link: the library checks the NIC. */
static json_t *set_link_reply(struct vmm *vm, const struct api_request *r)
{
	int ret = vmm_set_net_link(vm, r->index, r->up);

	if (ret == -ENOENT)
		return error_reply("no such device");
	if (ret == -ENOTCONN)
		return error_reply("the stream's peer went away: the link stays "
				   "down");
	if (ret)
		return error_reply(strerror(-ret));
	return json_pack("{s:b}", "ok", 1);
}

/* Returns the reply; *@ending set when the VM was told to end. */
static json_t *act(const struct api_request *r, struct vmm *vm,
		   const struct api_info *info, bool *ending)
{
	int ret = 0, p;

	switch (r->cmd) {
	case API_INFO:
		p = vmm_is_paused(vm);
		return json_pack("{s:b, s:s, s:i, s:I, s:i, s:s}", "ok", 1, "state",
				 p == 1 ? "paused" : "running", "vcpus",
				 (int)info->vcpus, "memory_bytes",
				 (json_int_t)info->memory, "disks",
				 (int)info->nr_disks, "version", VMM_VERSION_STRING);
	case API_STATS:
		return stats_reply(vm, info);
	case API_PAUSE:
		ret = vmm_pause(vm);
		break;
	case API_RESUME:
		ret = vmm_resume(vm);
		break;
	case API_STOP:
		ret = vmm_stop(vm);
		*ending = !ret;
		break;
	case API_SHUTDOWN:
		/* The guest powers off in its own time: minivmm then exits 0
		 * as for any poweroff. */
		ret = vmm_shutdown(vm);
		break;
	case API_SET_RATE_LIMIT:
		return set_rate_reply(vm, r);
	case API_SET_LINK:
		return set_link_reply(vm, r);
	}
	if (ret)
		return error_reply(strerror(-ret));
	return json_pack("{s:b}", "ok", 1);
}

/* Whether the peer on @fd is us or root. */
static bool peer_allowed(const struct api_server *s, int fd)
{
	struct ucred cr;
	socklen_t l = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) || l != sizeof(cr))
		return false;
	return cr.uid == 0 || cr.uid == s->euid;
}

int api_server_serve(struct api_server *s, struct vmm *vm,
		     const struct api_info *info)
{
	char buf[API_MAX_REQUEST], err[256];
	bool ending = false;
	struct api_request req;
	ssize_t n;
	int fd;

	fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return 0; /* gone already, or EAGAIN: nothing to serve */
	if (!peer_allowed(s, fd)) {
		send_reply(fd, error_reply("permission denied"));
		close(fd);
		return 0;
	}
	n = read_request(fd, buf, sizeof(buf), err, sizeof(err));
	if (n < 0 || api_parse(buf, (size_t)n, &req, err, sizeof(err)))
		send_reply(fd, error_reply(err));
	else
		send_reply(fd, act(&req, vm, info, &ending));
	close(fd);
	return ending;
}

void api_server_close(struct api_server *s)
{
	if (!s)
		return;
	close(s->fd);
	close(s->reaper); /* the remover unlinks the path */
	free(s);
}

/*
 * The request the client sends: {"command":COMMAND}, with set-rate-limit's
 * DEVICE and rate-*=N arguments (the --disk keys) as its members, or
 * set-link's netN and up|down.  NULL with a reason in @err for arguments
 * that do not fit the command.
 */
static json_t *client_request(const char *command, int argc, char **argv,
			      char *err, size_t errlen)
{
	struct vmm_rate_limit r = { 0 };
	json_t *req;

	if (!strcmp(command, "set-link")) {
		if (argc != 2 || (strcmp(argv[1], "up") && strcmp(argv[1], "down"))) {
			snprintf(err, errlen, "set-link needs a NIC and up or down "
				 "(set-link net0 down)");
			return NULL;
		}
		req = json_pack("{s:s, s:s, s:b}", "command", command, "device",
				argv[0], "up", !strcmp(argv[1], "up"));
		if (!req)
			snprintf(err, errlen, "out of memory");
		return req;
	}
	if (strcmp(command, "set-rate-limit")) {
		if (argc)
			snprintf(err, errlen, "%s takes no arguments", command);
		return argc ? NULL : json_pack("{s:s}", "command", command);
	}
	if (argc < 1) {
		snprintf(err, errlen, "set-rate-limit needs a device (disk0, net0)");
		return NULL;
	}
	for (int i = 1; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		int ret;

		if (!eq) {
			snprintf(err, errlen, "'%s' is not rate-KEY=N", argv[i]);
			return NULL;
		}
		*eq = '\0';
		ret = rate_spec_key(argv[i], eq + 1, &r, "set-rate-limit", err, errlen);
		if (ret > 0)
			snprintf(err, errlen, "unknown key '%s'", argv[i]);
		if (ret)
			return NULL;
	}
	req = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "command",
			command, "device", argv[0], "bw", (json_int_t)r.bw,
			"bw_burst", (json_int_t)r.bw_burst, "bw_one_time",
			(json_int_t)r.bw_one_time, "ops", (json_int_t)r.ops,
			"ops_burst", (json_int_t)r.ops_burst, "ops_one_time",
			(json_int_t)r.ops_one_time);
	if (!req)
		snprintf(err, errlen, "out of memory");
	return req;
}

int api_client(const char *path, const char *command, int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	json_t *req, *reply, *ok;
	char *txt, *buf = NULL, err[256] = "";
	size_t n = 0, cap = 0;
	int fd, status = 1;

	if (!path || !command || strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: minivmm --api PATH info|stats|pause|resume|stop|shutdown\n"
			"       minivmm --api PATH set-rate-limit diskN|netN [rate-bw=N[K|M|G]]\n"
			"               [rate-bw-burst=N] [rate-ops=N] [rate-ops-burst=N] ...\n"
			"       minivmm --api PATH set-link netN up|down\n");
		return 2;
	}
	req = client_request(command, argc, argv, err, sizeof(err));
	if (!req) {
		fprintf(stderr, "minivmm --api: %s\n", err);
		return 2;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "minivmm: %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		json_decref(req);
		return 1;
	}
	txt = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (!txt || dprintf(fd, "%s\n", txt) < 0) {
		fprintf(stderr, "minivmm: sending the request: %s\n", strerror(errno));
		free(txt);
		close(fd);
		return 1;
	}
	free(txt);
	shutdown(fd, SHUT_WR);
	/* The answer: up to 64 MiB (statistics of many disks). */
	for (;;) {
		ssize_t r;

		if (n + 1 >= cap) {
			char *nb = cap < (64u << 20) ? realloc(buf, cap ? cap * 2 : 65536) : NULL;

			if (!nb)
				break;
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		r = read(fd, buf + n, cap - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (buf) {
		fwrite(buf, 1, n, stdout);
		reply = json_loadb(buf, n, 0, NULL);
		ok = reply ? json_object_get(reply, "ok") : NULL;
		if (json_is_true(ok))
			status = 0;
		json_decref(reply);
	}
	free(buf);
	return status;
}
