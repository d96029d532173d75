/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: minivmm-oci's state.json loader (examples/oci/state.c):
 * the input is ROOT/fuzz/state.json (ROOT made once per process under
 * $TMPDIR or /tmp, removed at exit), read by oci_state_read() as `state`,
 * `start`, `kill` and `delete` do, then written back by oci_state_write()
 * and read again.
 *
 * Checked beyond the sanitizers (abort()): a read either fails with
 * -ENOENT or -EIO or gives NUL-terminated fields; what it gave, written
 * and read back, is the same state (bundle, created, pid, starttime, and
 * annotations when they are an object), unless the write refuses it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "oci.h"

#define ID "fuzz"

/* ROOT, with ROOT/ID in it. */
static const char *root(void)
{
	static const char *dir;
	char p[300];

	if (dir)
		return dir;
	dir = fuzz_tmpdir("oci-state");
	snprintf(p, sizeof(p), "%s/" ID, dir);
	if (mkdir(p, 0700))
		abort();
	return dir;
}

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_oci_state: %s\n", what);
	abort();
}

static bool terminated(const char *s, size_t n)
{
	return memchr(s, '\0', n) != NULL;
}

int fuzz_oci_state(const uint8_t *data, size_t size)
{
	struct oci_state a, b;
	char path[300];
	FILE *f;
	int r;

	snprintf(path, sizeof(path), "%s/" ID "/state.json", root());
	f = fopen(path, "w");
	if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f))
		abort();
	r = oci_state_read(root(), ID, &a);
	if (r) {
		if (r != -EIO && r != -ENOENT)
			fail("oci_state_read: an error it does not list");
		oci_state_free(&a);
		return 0;
	}
	if (!terminated(a.id, sizeof(a.id)) || !terminated(a.dir, sizeof(a.dir)) ||
	    !terminated(a.bundle, sizeof(a.bundle)) ||
	    !terminated(a.created, sizeof(a.created)) || strcmp(a.id, ID))
		fail("unterminated or wrong fields");
	if (oci_state_write(&a) == 0) {
		if (oci_state_read(root(), ID, &b))
			fail("a state written cannot be read back");
		if (strcmp(a.bundle, b.bundle) || strcmp(a.created, b.created) ||
		    a.pid != b.pid || a.starttime != b.starttime ||
		    (a.annotations && a.annotations[0] == '{' &&
		     (!b.annotations || strcmp(a.annotations, b.annotations))))
			fail("a state read back differs from what was written");
		oci_state_free(&b);
	}
	oci_state_free(&a);
	return 0;
}

FUZZ_TARGET(fuzz_oci_state)
