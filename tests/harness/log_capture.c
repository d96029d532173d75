/* Log capture for tests (see log_capture.h).  Messages may come from any
 * VMM thread, so the buffer is guarded by a mutex. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "log_capture.h"
#include "vmm/vmm.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER; /* guards below */
static char logbuf[16384];
static size_t loglen;

static void log_capture_fn(int level, const char *msg, void *opaque)
{
	(void)level;
	(void)opaque;
	pthread_mutex_lock(&log_lock);
	loglen += (size_t)snprintf(logbuf + loglen, sizeof(logbuf) - loglen, "%s\n", msg);
	if (loglen >= sizeof(logbuf))
		loglen = sizeof(logbuf) - 1;
	pthread_mutex_unlock(&log_lock);
}

int log_capture_attach(void)
{
	return vmm_set_log(log_capture_fn, NULL, VMM_LOG_DEBUG);
}

int log_capture_start(void)
{
	pthread_mutex_lock(&log_lock);
	loglen = 0;
	logbuf[0] = '\0';
	pthread_mutex_unlock(&log_lock);
	return log_capture_attach();
}

unsigned int log_capture_count(const char *needle)
{
	unsigned int n = 0;

	pthread_mutex_lock(&log_lock);
	for (const char *p = logbuf; (p = strstr(p, needle)); p++)
		n++;
	pthread_mutex_unlock(&log_lock);
	return n;
}
