/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdint.h>

#include "common/util.h"
#include "tests.h"

static void test_greedy_realloc(void)
{
        _cleanup_(freep) int *a = NULL;
        size_t allocated = 0, n = 0;
        int *before;

        /* Appends one at a time: each value lands, and the array is moved O(log n) times. */
        unsigned moves = 0;
        for (int i = 0; i < 100000; i++) {
                before = a;
                if (GREEDY_REALLOC(a, allocated, n + 1) < 0) {
                        CHECK(false);
                        return;
                }
                moves += a != before;
                a[n++] = i;
        }
        CHECK(allocated >= n);
        CHECK(moves <= 20);
        CHECK(a[0] == 0 && a[99999] == 99999);

        /* Room enough: nothing moves, nothing shrinks. */
        before = a;
        size_t had = allocated;
        CHECK(GREEDY_REALLOC(a, allocated, 10) == 0);
        CHECK(a == before && allocated == had);

        /* Too much to ask: -ENOMEM, and the array and its room stay as they were. */
        CHECK(GREEDY_REALLOC(a, allocated, SIZE_MAX / 2) == -ENOMEM);
        CHECK(a == before && allocated == had && a[99999] == 99999);

        /* From nothing, for bytes (a string buffer). */
        _cleanup_(freep) char *s = NULL;
        size_t s_allocated = 0;
        CHECK(GREEDY_REALLOC(s, s_allocated, 3) == 0);
        CHECK(s && s_allocated >= 3);
        memcpy(s, "ab", 3);
        CHECK_STREQ(s, "ab");
}

static void test_path_squeeze_slashes(void)
{
        static const char *const cases[][2] = {
                        {"/", "/"},         {"//", "/"},
                        {"/a//b/", "/a/b"}, {"//sys//block/sda//", "/sys/block/sda"},
                        {"a//b", "a/b"},    {"a/", "a"},
                        {"", ""},           {"/a/b", "/a/b"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char buf[64];
                snprintf(buf, sizeof(buf), "%s", cases[i][0]);
                CHECK_STREQ(path_squeeze_slashes(buf), cases[i][1]);
        }
}

static void test_devnode_names(void)
{
        _cleanup_(freep) char *node = devnode_name_of("cciss!c0d0p1"),
                              *name = kernel_name_of("cciss/c0d0p1");

        CHECK_STREQ(node, "cciss/c0d0p1");
        CHECK_STREQ(name, "cciss!c0d0p1");
}

static void test_strv_contains(void)
{
        _cleanup_(strv_freep) char **l = NULL;
        size_t n = 0;

        CHECK(!strv_contains(NULL, "a"));
        CHECK(strv_extend(&l, &n, "/org/blkmodel1/block/loop2") == 0);
        CHECK(strv_extend(&l, &n, "b") == 0);
        CHECK(strv_contains(l, "/org/blkmodel1/block/loop2") && strv_contains(l, "b"));
        CHECK(!strv_contains(l, "/org/blkmodel1/block/loop") && !strv_contains(l, ""));
}

int main(void)
{
        test_greedy_realloc();
        test_path_squeeze_slashes();
        test_devnode_names();
        test_strv_contains();
        return tests_summary();
}
