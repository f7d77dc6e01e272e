/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "tests.h"
#include "common/util.h"

int main(void)
{
        enum { N = 20000 };
        static char *copies[N];
        Pool p = {};
        char name[32];

        /* Many blocks' worth: every copy stays where it was put, whole and terminated. */
        for (int i = 0; i < N; i++) {
                snprintf(name, sizeof(name), "power/runtime_%d", i);
                copies[i] = pool_strdup(&p, name);
                CHECK(copies[i]);
        }
        for (int i = 0; i < N; i++) {
                snprintf(name, sizeof(name), "power/runtime_%d", i);
                CHECK(streq(copies[i], name));
        }

        /* A value larger than a block (a 64 KiB uevent file) gets one of its own; what comes after
         * it still fits. */
        size_t big = 64 * 1024;
        char *s = malloc(big);
        CHECK(s);
        memset(s, 'x', big);
        char *t = pool_strndup(&p, s, big);
        CHECK(t && t[big] == 0 && memcmp(t, s, big) == 0);
        CHECK(streq(pool_strdup(&p, "after"), "after"));
        CHECK(streq(pool_strndup(&p, "none of this", 0), ""));
        free(s);

        pool_free(&p);
        CHECK(!p.blocks);
        pool_free(&p); /* twice is harmless */
        CHECK(streq(pool_strdup(&p, "reused"), "reused"));
        pool_free(&p);
        return tests_summary();
}
