/* SPDX-License-Identifier: MIT */
/*
 * For tests of a listening Unix socket whose path must appear only once
 * it listens (check_unix_listen, check_vsock_listen_appears): a watcher
 * that connects the moment the name appears, as a supervisor waiting for
 * the path does.  No Check macros: results come back as values.
 */
#ifndef VMM_TESTS_LISTEN_RACE_H
#define VMM_TESTS_LISTEN_RACE_H

/* 0, or -errno of a blocking connect() to the Unix socket @path. */
int listen_race_connect(const char *path);

/* Entries of directory @dir other than dot-files (-1: cannot open it). */
int listen_race_entries(const char *dir);

/*
 * @rounds times: remove @path, watch its directory (inotify), fork a child
 * that calls @listen_fn(@path) and, on 0, waits to be killed; connect the
 * moment the name appears, check that the directory holds exactly one
 * entry then, kill and reap the child.  Returns -1 when every round's
 * connect succeeded; otherwise the failing round, with -errno (or
 * -EEXIST: another entry beside the name; -ETIMEDOUT: the name did not
 * appear in 30 s) in *@err.
 */
int listen_race_rounds(const char *path, int (*listen_fn)(const char *path),
		       int rounds, int *err);

#endif
