/* SPDX-License-Identifier: MIT */
/* See vu_rig.h. */
#include "vu_rig.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/virtio_blk.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include "test_clock.h"

#define BIT(n) (1ull << (n))

uint8_t vr_pat(uint64_t off)
{
	return (uint8_t)(off ^ (off >> 9) * 29 ^ (off >> 16) ^ 0xa5);
}

static int make_image(const char *path, uint64_t size)
{
	static uint8_t buf[65536];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	for (uint64_t off = 0; off < size; off += sizeof(buf)) {
		size_t n = (size_t)MIN((uint64_t)sizeof(buf), size - off);

		for (size_t i = 0; i < n; i++)
			buf[i] = vr_pat(off + i);
		if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n) {
			close(fd);
			return -EIO;
		}
	}
	close(fd);
	return 0;
}

/* The first @n CPUs of our affinity mask in @set; -EINVAL if we have
 * fewer. */
static int first_cpus(unsigned int n, cpu_set_t *set)
{
	cpu_set_t all;

	if (sched_getaffinity(0, sizeof(all), &all))
		return -errno;
	CPU_ZERO(set);
	for (int c = 0; c < CPU_SETSIZE && (unsigned int)CPU_COUNT(set) < n; c++)
		if (CPU_ISSET(c, &all))
			CPU_SET(c, set);
	return (unsigned int)CPU_COUNT(set) == n ? 0 : -EINVAL;
}

int vr_spawn(struct vr *r, const char *bin, const struct vr_opts *o)
{
	char disk[512];
	const char *argv[32];
	unsigned int n = 0;
	cpu_set_t cpus;
	int ret, logfd;

	memset(r, 0, sizeof(*r));
	r->pid = -1;
	for (unsigned int i = 0; i < VR_MAX_Q; i++)
		r->q[i].kick = r->q[i].call = -1;
	r->f.sock = -1;
	snprintf(r->dir, sizeof(r->dir), "/tmp/vu_rig.XXXXXX");
	if (!mkdtemp(r->dir))
		return -errno;
	snprintf(r->sock, sizeof(r->sock), "%s/sock", r->dir);
	snprintf(r->img, sizeof(r->img), "%s/disk.img", r->dir);
	snprintf(r->log, sizeof(r->log), "%s/log", r->dir);
	if (o && o->cpus && (ret = first_cpus(o->cpus, &cpus)))
		return ret;
	r->img_size = o && o->img_size ? o->img_size : 16ull << 20;
	ret = make_image(r->img, r->img_size);
	if (ret)
		return ret;
	snprintf(disk, sizeof(disk), "path=%s%s", r->img,
		 o && o->disk_extra ? o->disk_extra : "");
	argv[n++] = bin;
	argv[n++] = "--socket";
	argv[n++] = r->sock;
	argv[n++] = "--disk";
	argv[n++] = disk;
	for (unsigned int i = 0; o && o->args && o->args[i] && n < 30; i++)
		argv[n++] = o->args[i];
	argv[n] = NULL;
	logfd = open(r->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (logfd < 0)
		return -errno;
	r->pid = fork();
	if (r->pid < 0) {
		ret = -errno;
		close(logfd);
		return ret;
	}
	if (r->pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		/* A test that dies (a failed assertion) takes its daemon
		 * with it. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (o && o->cpus && sched_setaffinity(0, sizeof(cpus), &cpus))
			_exit(126);

		dup2(null, 0);
		dup2(logfd, 1);
		dup2(logfd, 2);
		/* Only stdio: the daemon's fd count is the test's business. */
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(logfd);
	return 0;
}

bool vr_alive(struct vr *r, int *status)
{
	int st;

	if (r->pid <= 0)
		return false;
	if (waitpid(r->pid, &st, WNOHANG) == r->pid) {
		r->pid = -1;
		if (status)
			*status = st;
		return false;
	}
	return true;
}

int vr_stop(struct vr *r)
{
	int st = -1;

	vr_disconnect(r);
	if (r->pid > 0) {
		kill(r->pid, SIGTERM);
		for (int i = 0; i < 1000; i++) {
			if (waitpid(r->pid, &st, WNOHANG) == r->pid)
				break;
			if (i == 999) {
				kill(r->pid, SIGKILL);
				waitpid(r->pid, &st, 0);
			}
			usleep(10000);
		}
		r->pid = -1;
	}
	if (r->dir[0]) {
		unlink(r->img);
		unlink(r->sock);
		unlink(r->log);
		rmdir(r->dir);
		r->dir[0] = '\0';
	}
	return st;
}

int vr_fd_count(const struct vr *r)
{
	char path[64];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)r->pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

int vr_thread_count(const struct vr *r, const char *prefix)
{
	char path[300], comm[32];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)r->pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)r->pid,
			 de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue; /* a thread that just ended */
		if (fgets(comm, sizeof(comm), f) &&
		    !strncmp(comm, prefix, strlen(prefix)))
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

long vr_status_kib(const struct vr *r, const char *field)
{
	char path[64], line[128];
	size_t n = strlen(field);
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)r->pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':' &&
		    sscanf(line + n + 1, "%ld", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

long vr_rss_kib(const struct vr *r)
{
	return vr_status_kib(r, "VmRSS");
}

void vr_log_tail(const struct vr *r, char *buf, unsigned int len)
{
	int fd = open(r->log, O_RDONLY | O_CLOEXEC);
	off_t size;
	ssize_t n = 0;

	buf[0] = '\0';
	if (fd < 0)
		return;
	size = lseek(fd, 0, SEEK_END);
	if (size > (off_t)len - 1)
		lseek(fd, size - (off_t)len + 1, SEEK_SET);
	else
		lseek(fd, 0, SEEK_SET);
	n = read(fd, buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
}

int vr_end(struct vr *r, char *why, unsigned int len)
{
	char log[2048];
	int st;

	vr_disconnect(r);
	if (r->pid > 0 && !vr_alive(r, &st)) {
		vr_log_tail(r, log, sizeof(log));
		vr_stop(r);
		snprintf(why, len, "minivmm-blkd died (status %#x):\n%s", st, log);
		return -1;
	}
	st = vr_stop(r);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		snprintf(why, len, "minivmm-blkd exit status %#x after SIGTERM", st);
		return -1;
	}
	return 0;
}

int vr_stats_line(struct vr *r, unsigned int nth, char *out, size_t len)
{
	/* The tail it looks in: enough for a few lines of 1024 queues. */
	static char log[1 << 20];

	for (int tries = 0; tries < 500; tries++) {
		const char *p = log;
		unsigned int seen = 0;

		vr_log_tail(r, log, sizeof(log));
		while ((p = strstr(p, "{\"blkd\":"))) {
			const char *e;

			if (++seen < nth) {
				p++;
				continue;
			}
			e = strchr(p, '\n');
			if (!e)
				break; /* still being written */
			if ((size_t)(e - p) >= len)
				return -E2BIG;
			memcpy(out, p, (size_t)(e - p));
			out[e - p] = '\0';
			return 0;
		}
		usleep(10000);
	}
	return -ETIMEDOUT;
}

int vr_connect_bare(struct vr *r)
{
	int ret = vuf_connect(&r->f, r->sock, 10000);

	if (ret)
		return ret;
	return vuf_init(&r->f, BIT(VHOST_USER_PROTOCOL_F_MQ) |
				       BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK) |
				       BIT(VHOST_USER_PROTOCOL_F_CONFIG) |
				       BIT(VHOST_USER_PROTOCOL_F_RESET_DEVICE));
}

int vr_connect(struct vr *r, unsigned int nq, uint16_t qsize, uint64_t features,
	       uint64_t ram)
{
	uint64_t base;
	int ret;

	if (nq > VR_MAX_Q)
		return -EINVAL;
	ret = vr_connect_bare(r);
	if (ret)
		return ret;
	ret = fg_init_memfd(&r->g, ram ? ram : 16ull << 20);
	if (ret)
		return ret;
	r->have_g = true;
	base = (uint64_t)(uintptr_t)r->g.ram;
	r->features = features & r->f.features;
	if ((ret = vuf_set_features(&r->f, r->features)) ||
	    (ret = vuf_set_mem_one(&r->f, r->g.fd, r->g.ram, r->g.ram_size)))
		return ret;
	r->nq = nq;
	r->qsize = qsize;
	for (unsigned int i = 0; i < nq; i++) {
		struct vr_q *q = &r->q[i];

		ret = fg_vq_init(&r->g, &q->vq, qsize,
				 r->features & (BIT(VIRTIO_RING_F_EVENT_IDX) |
						BIT(VIRTIO_RING_F_INDIRECT_DESC)));
		if (ret)
			return ret;
		q->inited = true;
		q->kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		q->call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (q->kick < 0 || q->call < 0)
			return -errno;
		if ((ret = vuf_ring_setup(&r->f, i, qsize, 0, base + q->vq.desc_gpa,
					  base + q->vq.avail_gpa, base + q->vq.used_gpa,
					  q->kick, q->call)) ||
		    (ret = vuf_ring_enable(&r->f, i, true)))
			return ret;
	}
	return 0;
}

void vr_disconnect(struct vr *r)
{
	vuf_close(&r->f);
	for (unsigned int i = 0; i < VR_MAX_Q; i++) {
		struct vr_q *q = &r->q[i];

		if (q->inited)
			fg_vq_destroy(&q->vq);
		q->inited = false;
		if (q->kick >= 0)
			close(q->kick);
		if (q->call >= 0)
			close(q->call);
		q->kick = q->call = -1;
	}
	if (r->have_g)
		fg_destroy(&r->g);
	r->have_g = false;
	r->nq = 0;
}

void vr_kick(struct vr *r, unsigned int q)
{
	uint64_t one = 1;

	fg_vq_publish(&r->q[q].vq);
	if (write(r->q[q].kick, &one, sizeof(one)) < 0)
		abort();
}

unsigned int vr_wait_used(struct vr *r, unsigned int q, unsigned int n,
			  uint32_t *ids, unsigned int timeout_ms)
{
	double end = test_now_ms_f() + timeout_ms;
	unsigned int got = 0;

	while (got < n) {
		struct pollfd p = { .fd = r->q[q].call, .events = POLLIN };
		uint32_t id, len;
		uint64_t v;

		while (got < n && fg_vq_get_used(&r->q[q].vq, &id, &len) == 1) {
			if (ids)
				ids[got] = id;
			got++;
		}
		if (got >= n || test_now_ms_f() > end)
			break;
		/* The interrupt; a short poll too, in case EVENT_IDX
		 * suppressed it (the used ring is checked again). */
		if (poll(&p, 1, 20) > 0 && read(r->q[q].call, &v, sizeof(v)) < 0)
			continue;
	}
	return got;
}

int vr_req(struct vr *r, unsigned int q, uint32_t type, uint64_t sector,
	   void *buf, uint32_t len)
{
	struct fg_blk_req req;
	struct fg_buf data;
	uint64_t gpa = 0;
	bool in = type == VIRTIO_BLK_T_IN || type == VIRTIO_BLK_T_GET_ID;
	int ret;

	if (len) {
		gpa = fg_alloc(&r->g, len, 64);
		if (!gpa)
			return -ENOMEM;
		if (!in)
			memcpy(fg_ptr(&r->g, gpa, len), buf, len);
	}
	data = (struct fg_buf){ gpa, len, in };
	ret = fg_blk_add(&r->q[q].vq, type, sector, &data, len ? 1 : 0,
			 r->features & BIT(VIRTIO_RING_F_INDIRECT_DESC), &req);
	if (ret)
		return ret;
	vr_kick(r, q);
	if (vr_wait_used(r, q, 1, NULL, 10000) != 1)
		return -ETIMEDOUT;
	if (in && len)
		memcpy(buf, fg_ptr(&r->g, gpa, len), len);
	return fg_blk_status(&r->g, &req);
}

int vr_img_read(struct vr *r, uint64_t off, void *buf, uint32_t len)
{
	int fd = open(r->img, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = pread(fd, buf, len, (off_t)off);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}
