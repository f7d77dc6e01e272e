/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <systemd/sd-bus.h>

#include "common/util.h"
#include "model/naming.h"
#include "tests.h"

/* Paths must round-trip: clients decode them with sd_bus_path_decode(). */
static void check_encode(const char *name, const char *expected)
{
        _cleanup_(freep) char *path = NULL, *decoded = NULL;

        CHECK(object_path_append("/org/blkmodel1/block", name, &path) == 0);
        if (expected) {
                _cleanup_(freep) char *full = NULL;
                CHECK(asprintf(&full, "/org/blkmodel1/block/%s", expected) > 0);
                CHECK_STREQ(path, full);
        }
        CHECK(sd_bus_path_decode(path, "/org/blkmodel1/block", &decoded) > 0);
        CHECK_STREQ(decoded, name);
}

static void check_member(const char *file, const char *expected)
{
        _cleanup_(freep) char *m = NULL;

        CHECK(member_name_from_file(file, &m) == 0);
        CHECK_STREQ(m, expected);
        if (m)
                CHECK(member_name_is_valid(m));
}

int main(void)
{
        check_encode("sda", "sda");
        check_encode("dm-0", "dm_2d0");
        check_encode("cciss!c0d0", "cciss_21c0d0");
        check_encode("0000:00:1f.2", "_30000_3a00_3a1f_2e2");
        check_encode("nvme0n1p1", "nvme0n1p1");
        check_encode("a_b", "a_5fb");
        check_encode("", "_");
        check_encode("target0:0:0", NULL);
        check_encode("\xc3\xa9t\xc3\xa9", NULL);

        check_member("read_ahead_kb", "read_ahead_kb");
        check_member("power/control", "power_control");
        check_member("0dev", "_0dev");
        check_member("max-sectors", "max_sectors");
        check_member("", "_");
        /* A character each, whatever its bytes; a byte that is no character, one. */
        check_member("caf\xc3\xa9", "caf_");
        check_member("\xe2\x82\xac" "1", "_1");
        check_member("a\xff\xfe" "b", "a__b");
        check_member("a\xef\xbf\xbe" "b", "a_b"); /* U+FFFE: a character, one D-Bus refuses in values */
        CHECK(!member_name_is_valid("0abc"));
        CHECK(!member_name_is_valid("a.b"));
        CHECK(!member_name_is_valid(""));

        /* Too long is its own error, never mistaken for out of memory. */
        char longname[300];
        char *m = NULL;
        memset(longname, 'a', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = 0;
        CHECK(member_name_from_file(longname, &m) == -ENAMETOOLONG);
        CHECK(m == NULL);
        longname[MEMBER_NAME_MAX] = 0;
        CHECK(member_name_from_file(longname, &m) == 0);
        free(m);

        return tests_summary();
}
