/* SPDX-License-Identifier: MIT */
/* See log_lines.h. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log_lines.h"
#include "vmm/vmm.h"

static pthread_mutex_t lines_lock = PTHREAD_MUTEX_INITIALIZER; /* guards below */
static char **lines;
static unsigned int nr_lines, cap_lines;

static void log_lines_fn(int level, const char *msg, void *opaque)
{
	char *copy = strdup(msg);

	(void)level;
	(void)opaque;
	pthread_mutex_lock(&lines_lock);
	if (nr_lines == cap_lines) {
		unsigned int ncap = cap_lines ? 2 * cap_lines : 256;
		char **n = realloc(lines, ncap * sizeof(*n));

		if (!n) {
			pthread_mutex_unlock(&lines_lock);
			free(copy);
			return;
		}
		lines = n;
		cap_lines = ncap;
	}
	lines[nr_lines++] = copy;
	pthread_mutex_unlock(&lines_lock);
}

int log_lines_start(void)
{
	pthread_mutex_lock(&lines_lock);
	for (unsigned int i = 0; i < nr_lines; i++)
		free(lines[i]);
	nr_lines = 0;
	pthread_mutex_unlock(&lines_lock);
	return vmm_set_log(log_lines_fn, NULL, VMM_LOG_DEBUG);
}

unsigned int log_lines_total(void)
{
	unsigned int n;

	pthread_mutex_lock(&lines_lock);
	n = nr_lines;
	pthread_mutex_unlock(&lines_lock);
	return n;
}

unsigned int log_lines_count(const char *needle)
{
	unsigned int n = 0;

	pthread_mutex_lock(&lines_lock);
	for (unsigned int i = 0; i < nr_lines; i++)
		if (lines[i] && strstr(lines[i], needle))
			n++;
	pthread_mutex_unlock(&lines_lock);
	return n;
}

uint64_t log_lines_sum_more(const char *prefix, const char *noun)
{
	uint64_t sum = 0;
	size_t plen = strlen(prefix);

	pthread_mutex_lock(&lines_lock);
	for (unsigned int i = 0; i < nr_lines; i++) {
		const char *p = lines[i] ? strstr(lines[i], prefix) : NULL;
		unsigned long long n;
		int end = 0;

		if (!p || sscanf(p + plen, ": %llu more %n", &n, &end) != 1 ||
		    !end)
			continue;
		if (noun && strncmp(p + plen + end, noun, strlen(noun)))
			continue;
		sum += n;
	}
	pthread_mutex_unlock(&lines_lock);
	return sum;
}

void log_lines_dump(unsigned int max)
{
	pthread_mutex_lock(&lines_lock);
	for (unsigned int i = 0; i < nr_lines && i < max; i++)
		fprintf(stderr, "log[%u]: %s\n", i, lines[i]);
	pthread_mutex_unlock(&lines_lock);
}
