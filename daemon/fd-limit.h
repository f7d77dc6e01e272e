/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Descriptors at the start.  RLIMIT_NOFILE: a service gets a soft limit of 1,024 and a hard one of
 * 524,288 (or what LimitNOFILE= says): the soft limit is there for programs that select(), which
 * fails on descriptors past 1,023.  The daemon does not (epoll in libuv, poll in sd-bus), and since
 * a reply or signal that cannot open a file fails whole (ReadFailed, errno_is_resource()), it
 * raises its soft limit to the hard one, as systemd does for itself, at most to fs.nr_open.  Unlike
 * systemd running as root, it never raises the hard limit: that is the administrator's.  (Only one
 * over fs.nr_open, the sysctl lowered since it was set, comes down to it: the kernel refuses any
 * limit over it, and gives no descriptor past it.)
 *
 * A child the daemon starts (sd-bus runs a unixexec: address's command) gets the soft limit back
 * that the daemon was started with, from a pthread_atfork() handler; sd-bus alone would give it
 * 1,024 (FORK_RLIMIT_NOFILE_SAFE), and lowers one above that to 1,024 after the handler.
 */

/* Opens /dev/null as each of stdin, stdout and stderr that is closed: else the first descriptors the
 * daemon opens take their numbers (libuv's signal lock pipe became stderr, the log lines filled it,
 * and the daemon slept in write(2) for good).  Negative errno when one cannot be had. */
int fd_stdio_ensure(void);

/* Raise the soft limit; says what it did at debug level.  Failure is no error: the daemon runs
 * under the limit it was given. */
void fd_limit_raise(void);

/* How many descriptors the process can still open, counted up to max (at most 64; each one opened
 * and closed again: call it while the process has one thread); negative errno when an open fails
 * for another reason than EMFILE. */
int fd_limit_available(unsigned max);
