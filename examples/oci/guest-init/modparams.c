/* SPDX-License-Identifier: MIT */
#include "modparams.h"

#include <stdbool.h>
#include <string.h>

/* Names compare with '-' and '_' alike. */
static bool name_char_eq(char a, char b)
{
	return (a == '-' ? '_' : a) == (b == '-' ? '_' : b);
}

/* The blanks that separate the command line's words. */
static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

/* End of the word starting at @p: the next blank outside double quotes. */
static const char *word_end(const char *p)
{
	bool quoted = false;

	for (; *p; p++) {
		if (*p == '"')
			quoted = !quoted;
		else if (!quoted && is_blank(*p))
			break;
	}
	return p;
}

int modparams_for(const char *cmdline, const char *file, char *out, size_t len)
{
	const char *base = strrchr(file, '/');
	size_t name_len, used = 0;
	const char *p = cmdline;

	base = base ? base + 1 : file;
	name_len = strcspn(base, ".");
	if (!len)
		return -1;
	out[0] = 0;
	while (*p) {
		const char *w, *e;
		size_t i, n;

		while (is_blank(*p))
			p++;
		if (!*p)
			break;
		w = p;
		e = word_end(w);
		p = e;
		/* "MOD." then at least one character of the parameter. */
		if ((size_t)(e - w) <= name_len + 1 || w[name_len] != '.')
			continue;
		for (i = 0; i < name_len && name_char_eq(w[i], base[i]); i++)
			;
		if (i < name_len)
			continue;
		w += name_len + 1;
		n = (size_t)(e - w);
		if (used + (used ? 1 : 0) + n + 1 > len) {
			out[0] = 0;
			return -1;
		}
		if (used)
			out[used++] = ' ';
		memcpy(out + used, w, n);
		used += n;
		out[used] = 0;
	}
	return 0;
}
