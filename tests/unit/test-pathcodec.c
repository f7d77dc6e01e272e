/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <systemd/sd-bus.h>

#include "pathcodec.h"
#include "tests.h"
#include "common/util.h"

/* Our encoder must agree byte for byte with sd_bus_path_encode(), which clients use to build paths. */
static void check_encode(const char *name, const char *expected)
{
        _cleanup_(freep) char *ours = objpath_append("/org/blkmodel1/block", name);
        _cleanup_(freep) char *theirs = NULL, *decoded = NULL;

        CHECK(sd_bus_path_encode("/org/blkmodel1/block", name, &theirs) >= 0);
        CHECK_STREQ(ours, theirs);
        if (expected) {
                _cleanup_(freep) char *full = NULL;
                CHECK(asprintf(&full, "/org/blkmodel1/block/%s", expected) > 0);
                CHECK_STREQ(ours, full);
        }
        const char *element = strrchr(ours, '/') + 1;
        CHECK(objpath_decode_element(element, strlen(element), &decoded) == 0);
        CHECK_STREQ(decoded, name);
}

static void check_member(const char *file, const char *expected)
{
        _cleanup_(freep) char *m = member_name_from_file(file);
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

        /* Crafted elements never decode into a path separator or a truncation. */
        char *x = NULL;
        CHECK(objpath_decode_element("a_2fb", 5, &x) == -EINVAL);
        CHECK(objpath_decode_element("a_00", 4, &x) == -EINVAL);
        CHECK(objpath_decode_element("a_zz", 4, &x) == -EINVAL);
        CHECK(objpath_decode_element("a_2", 3, &x) == -EINVAL);
        CHECK(objpath_decode_element("a-b", 3, &x) == -EINVAL);
        CHECK(x == NULL);

        check_member("read_ahead_kb", "read_ahead_kb");
        check_member("power/control", "power_control");
        check_member("0dev", "_0dev");
        check_member("max-sectors", "max_sectors");
        check_member("", "_");
        CHECK(!member_name_is_valid("0abc"));
        CHECK(!member_name_is_valid("a.b"));
        CHECK(!member_name_is_valid(""));

        char longname[300];
        memset(longname, 'a', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = 0;
        CHECK(member_name_from_file(longname) == NULL);

        return tests_summary();
}
