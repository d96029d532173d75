/* SPDX-License-Identifier: MIT */
/*
 * The guest's serial console (its kernel's messages, and whatever a root
 * container writes to COM1 itself: `ioperm(0x3f8)` + `rep outsb`) goes to
 * a file on the host, often on the /run tmpfs: at most console_max bytes
 * of it.  libvmm writes the console to a pipe (non-blocking on its side:
 * what the pipe does not take it drops and counts); the shim's loop copies
 * the pipe into the file up to the cap, then writes one line saying so and
 * drops the rest, counted and logged at the end.  The first bytes are the
 * ones kept: the boot, and the start of whatever went wrong.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "oci.h"

int oci_conlog_open(struct oci_conlog *c, const struct oci_settings *set,
		    const char *state_dir, char *err, size_t errlen)
{
	int p[2], fd;

	*c = (struct oci_conlog){ .file = -1, .pipe_r = -1, .pipe_w = -1,
				  .max = set->console_max };
	if (set->console_dir)
		snprintf(c->path, sizeof(c->path), "%s/%s.console.log",
			 set->console_dir, strrchr(state_dir, '/') + 1);
	else
		snprintf(c->path, sizeof(c->path), "%s/console.log", state_dir);
	fd = oci_file_create(c->path, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "console log %s: %s", c->path, strerror(-fd));
		return -1;
	}
	if (pipe2(p, O_CLOEXEC)) {
		snprintf(err, errlen, "console pipe: %s", strerror(errno));
		close(fd);
		return -1;
	}
	/* Room for a burst while the loop is busy (best effort: capped by
	 * /proc/sys/fs/pipe-max-size for an unprivileged process). */
	fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	c->file = fd;
	c->pipe_r = p[0];
	c->pipe_w = p[1];
	return 0;
}

/* Write @n bytes to the file; a failed write (ENOSPC) drops them. */
static void file_put(struct oci_conlog *c, const uint8_t *b, size_t n)
{
	while (n) {
		ssize_t w = write(c->file, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			c->dropped += n;
			return;
		}
		b += w;
		n -= (size_t)w;
		c->written += (uint64_t)w;
	}
}

size_t oci_conlog_pump(struct oci_conlog *c, size_t budget)
{
	uint8_t buf[65536];
	size_t total = 0;

	while (c->pipe_r >= 0 && total < budget) {
		ssize_t n = read(c->pipe_r, buf, sizeof(buf));
		size_t keep;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		total += (size_t)n;
		keep = (size_t)n;
		if (c->max && c->written + keep > c->max)
			keep = c->written >= c->max ? 0 : (size_t)(c->max - c->written);
		if (keep)
			file_put(c, buf, keep);
		if (keep < (size_t)n) {
			c->dropped += (size_t)n - keep;
			if (!c->capped) {
				char line[160];
				int l = snprintf(line, sizeof(line),
						 "\n[" OCI_NAME ": console_max (%llu bytes) "
						 "reached: the rest of the console output "
						 "is dropped]\n",
						 (unsigned long long)c->max);

				c->capped = true;
				if (l > 0)
					file_put(c, (const uint8_t *)line, (size_t)l);
			}
		}
	}
	return total;
}

void oci_conlog_finish(struct oci_conlog *c)
{
	/* What the pipe still holds (at most its size: libvmm's side has
	 * stopped writing). */
	while (oci_conlog_pump(c, OCI_CONLOG_TURN))
		;
	if (c->dropped)
		oci_warn("guest console: %llu bytes dropped (over console_max, %llu "
			 "bytes, or not written to %s)", (unsigned long long)c->dropped,
			 (unsigned long long)c->max, c->path);
	if (c->file >= 0)
		close(c->file);
	if (c->pipe_r >= 0)
		close(c->pipe_r);
	c->file = c->pipe_r = -1;
	/* pipe_w: libvmm borrows it until vmm_destroy(); the exit closes it. */
}
