/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/log.h"

struct uv_loop_s; /* libuv's uv_loop_t: <uv.h> here would change which MAX() its includers get */

/*
 * Lines a client can cause as often as it likes: a refusal, a reply too large to send, a reply that
 * could not be sent.  Limited per call site, in the spirit of systemd's log_ratelimit_*(): at most
 * LOG_RATELIMIT_BURST lines in a window of LOG_RATELIMIT_INTERVAL_MS that the first of them opens;
 * when the window ends, one line at the same level, "Suppressed N similar messages: " and the text of
 * the first line it stands for.  What tells of the daemon's own state (the start, the name, the bus
 * lost, rescans, kernel events) goes through log_*() as before and is never limited.
 *
 * Ten lines name the first callers, one line a second on average at most; the count comes within
 * 10 s of what it counts.  A site logs at most 11 lines per window, whatever the calls; a burst at a
 * window's end and another at the next one's start give 20 lines close together, as with systemd's.  The uevent
 * source's drop log (garbage datagrams from root or our uid) is limited the same way, one window per
 * source.
 *
 * The clock is the loop's (uv_now(): read once a turn, no system call per line); the summary, a
 * timer of the loop.  Before log_ratelimit_attach() and after log_ratelimit_detach(), and at
 * --log-level=debug, where the calls' own debug lines are as many anyway, every line is logged.
 * From the loop's thread only.
 */

#define LOG_RATELIMIT_BURST 10u
#define LOG_RATELIMIT_INTERVAL_MS UINT64_C(10000)

typedef struct LogRatelimit LogRatelimit;
struct LogRatelimit {
        bool open; /* a window is open, since begin_ms */
        uint64_t begin_ms;
        unsigned logged;     /* lines logged in the window */
        uint64_t suppressed; /* lines not logged in it */
        int level;           /* the first suppressed line's */
        char *first;         /* its text; NULL if there was no memory for it */
        LogRatelimit *next;  /* in the list of windows with a summary to tell */
};

/* interval_ms 0: nothing is limited. */
void log_ratelimit_attach(struct uv_loop_s *loop, uint64_t interval_ms);
/* Tells every summary due now: none is lost at exit. */
void log_ratelimit_detach(void);

/* For a LogRatelimit of an object's own, not a call site's (static, lives for ever): tells what its
 * window did not log, now, before the object goes. */
void log_ratelimit_done(LogRatelimit *rl);

void log_ratelimit_internal(LogRatelimit *rl, int level, int error, const char *fmt, ...) _printf_(4, 5);

/* One window per call site: its own static LogRatelimit. */
#define log_ratelimit_full_errno(level, error, ...)                                                         \
        ({                                                                                                  \
                static LogRatelimit _rl;                                                                    \
                int _rl_l = (level), _rl_e = (error);                                                       \
                if (_rl_l <= log_max_level)                                                                 \
                        log_ratelimit_internal(&_rl, _rl_l, _rl_e, __VA_ARGS__);                            \
                _rl_e < 0 ? _rl_e : -_rl_e;                                                                 \
        })
#define log_ratelimit_full(level, ...) (void) log_ratelimit_full_errno(level, 0, __VA_ARGS__)

#define log_ratelimit_info(...) log_ratelimit_full(LOG_INFO, __VA_ARGS__)
#define log_ratelimit_warning(...) log_ratelimit_full(LOG_WARNING, __VA_ARGS__)
#define log_ratelimit_error(...) log_ratelimit_full(LOG_ERR, __VA_ARGS__)

#define log_ratelimit_warning_errno(e, ...) log_ratelimit_full_errno(LOG_WARNING, e, __VA_ARGS__)
