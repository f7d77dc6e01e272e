/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdarg.h>
#include <syslog.h>

#include "common/util.h"

/*
 * Logging to stderr with the "<N>" syslog level prefixes of sd-daemon(3),
 * so that journald files each line at its level.  Library-like modules
 * return errors; only the daemon's edges (main, reconcile, bus handlers)
 * log.
 */

extern int log_max_level;

int log_level_from_string(const char *s);
void log_set_max_level(int level);

/* A line's text at most, before its control characters are escaped. */
#define LOG_LINE_MAX 2048

void log_internal(int level, int error, const char *fmt, ...) _printf_(3, 4);
void log_internalv(int level, int error, const char *fmt, va_list ap) _printf_(3, 0);
/* The text a line of fmt would have, %m of error included, into buf. */
void log_format(char *buf, size_t size, int error, const char *fmt, va_list ap) _printf_(4, 0);

#define log_full_errno(level, error, ...)                                                                   \
        ({                                                                                                  \
                int _l = (level), _e = (error);                                                             \
                if (_l <= log_max_level)                                                                    \
                        log_internal(_l, _e, __VA_ARGS__);                                                  \
                _e < 0 ? _e : -_e;                                                                          \
        })
#define log_full(level, ...) (void) log_full_errno(level, 0, __VA_ARGS__)

#define log_debug(...) log_full(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_full(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_full(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_full(LOG_ERR, __VA_ARGS__)

#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, e, __VA_ARGS__)
#define log_info_errno(e, ...) log_full_errno(LOG_INFO, e, __VA_ARGS__)
#define log_notice_errno(e, ...) log_full_errno(LOG_NOTICE, e, __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, e, __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, e, __VA_ARGS__)
