/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdio.h>
#include <string.h>

/* A minimal check harness: every failed check is printed, the summary line is what CI reads. */

static unsigned tests_passed, tests_failed;

#define CHECK(expr)                                                                                        \
        do {                                                                                               \
                if (expr)                                                                                  \
                        tests_passed++;                                                                    \
                else {                                                                                     \
                        tests_failed++;                                                                    \
                        fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #expr);           \
                }                                                                                          \
        } while (0)

#define CHECK_STREQ(a, b)                                                                                  \
        do {                                                                                               \
                const char *_a = (a), *_b = (b);                                                           \
                if (_a && _b && strcmp(_a, _b) == 0)                                                       \
                        tests_passed++;                                                                    \
                else {                                                                                     \
                        tests_failed++;                                                                    \
                        fprintf(stderr, "%s:%d: check failed: %s == %s ('%s' vs '%s')\n", __FILE__,        \
                                __LINE__, #a, #b, _a ? _a : "(null)", _b ? _b : "(null)");                 \
                }                                                                                          \
        } while (0)

static inline int tests_summary(void)
{
        printf("%u passed, %u failed\n", tests_passed, tests_failed);
        return tests_failed ? 1 : 0;
}
