/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>

#include "base/log.h"

int log_max_level = LOG_INFO;

static const char *const level_names[] = {
                [LOG_EMERG] = "emerg", [LOG_ALERT] = "alert",     [LOG_CRIT] = "crit",
                [LOG_ERR] = "err",     [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
                [LOG_INFO] = "info",   [LOG_DEBUG] = "debug",
};

int log_level_from_string(const char *s)
{
        for (size_t i = 0; i < ELEMENTSOF(level_names); i++)
                if (streq(s, level_names[i]))
                        return (int) i;
        if (streq(s, "error"))
                return LOG_ERR;
        if (s[0] >= '0' && s[0] <= '7' && s[1] == 0)
                return s[0] - '0';
        return -EINVAL;
}

void log_set_max_level(int level)
{
        log_max_level = level;
}

void log_format(char *buf, size_t size, int error, const char *fmt, va_list ap)
{
        /* %m in the format refers to the error passed in, not to whatever errno is now. */
        if (error != 0)
                errno = error < 0 ? -error : error;
        (void) vsnprintf(buf, size, fmt, ap);
}

void log_internalv(int level, int error, const char *fmt, va_list ap)
{
        char buf[LOG_LINE_MAX];

        log_format(buf, sizeof(buf), error, fmt, ap);

        /* A name or a value with a newline in it (a fixture's, a caller's Set) must not start a line
         * of its own, with a priority of its choosing: control characters are written as \xNN. */
        char out[4 * sizeof(buf)], *o = out;
        for (const char *c = buf; *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                        o += sprintf(o, "\\x%02x", (unsigned) (unsigned char) *c);
                else
                        *o++ = *c;
        *o = 0;

        /* One fprintf per line keeps concurrent lines whole. */
        fprintf(stderr, "<%d>%s\n", level, out);
}

void log_internal(int level, int error, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        log_internalv(level, error, fmt, ap);
        va_end(ap);
}
