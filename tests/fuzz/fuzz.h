/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What every fuzz target shares: its entry point, its invariant check, and the input made strings. */
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Not assert(): checked whatever NDEBUG says. */
#define REQUIRE(expr)                                                                                       \
        do {                                                                                                \
                if (!(expr)) {                                                                              \
                        fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #expr);        \
                        abort();                                                                            \
                }                                                                                           \
        } while (0)

/* The input as two strings: up to its first NUL, and what follows up to the next ("" when the input
 * has no NUL).  A copy for the caller to free; NULL when out of memory. */
static inline char *fuzz_two_strings(const uint8_t *data, size_t size, const char **ret_second)
{
        char *buf = malloc(size + 2);

        if (!buf)
                return NULL;
        memcpy(buf, data, size);
        buf[size] = buf[size + 1] = 0;
        *ret_second = buf + strlen(buf) + 1;
        if (*ret_second > buf + size)
                *ret_second = "";
        return buf;
}
