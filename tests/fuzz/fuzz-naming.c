/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer entry point for the names objects are published under (model/naming.h).  Object paths
 * must round-trip exactly through sd_bus_path_decode(), the way clients read them, for any sysfs
 * name; member names are lossy but must always be valid D-Bus members, or refused as too long.
 *
 * The input is up to two names separated by a NUL: a child below a parent, as a partition below
 * its disk.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <systemd/sd-bus.h>

#include "blkmodel/names.h"
#include "common/utf8.h"
#include "common/util.h"
#include "fuzz.h"
#include "model/naming.h"

/* parent + one element that decodes to exactly name. */
static char *check_path(const char *parent, const char *name)
{
        _cleanup_(freep) char *decoded = NULL, *path = NULL;
        int r;

        r = object_path_append(parent, name, &path);
        REQUIRE(r == 0 && path);
        REQUIRE(sd_bus_object_path_is_valid(path));
        REQUIRE(startswith(path, parent) && path[strlen(parent)] == '/');
        /* One element: the encoding never makes a '/' of its own. */
        REQUIRE(!strchr(path + strlen(parent) + 1, '/'));
        REQUIRE(sd_bus_path_decode(path, parent, &decoded) > 0);
        REQUIRE(streq(decoded, name));
        return TAKE_PTR(path);
}

static void check_member(const char *name)
{
        _cleanup_(freep) char *member = NULL;
        size_t n = strlen(name), want = name[0] >= '0' && name[0] <= '9';
        int r;

        /* One character of the member a character of the name; a byte that is none counts one. */
        for (size_t i = 0; i < n; want++)
                i += utf8_char_length(name + i, n - i) ?: 1;

        r = member_name_from_file(name, &member);
        if (want > MEMBER_NAME_MAX) {
                REQUIRE(r == -ENAMETOOLONG && !member);
                return;
        }
        REQUIRE(r == 0 && member);
        REQUIRE(member_name_is_valid(member));
        REQUIRE(strlen(member) == (n == 0 ? 1 : want));
        /* Sanitizing is idempotent: a valid member name is its own member name. */
        _cleanup_(freep) char *again = NULL;
        REQUIRE(member_name_from_file(member, &again) == 0 && streq(again, member));
        /* And what is valid stays as it is. */
        if (member_name_is_valid(name))
                REQUIRE(streq(member, name));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_(freep) char *buf = NULL, *parent = NULL, *child = NULL;
        const char *first, *second;

        /* sysfs names are at most NAME_MAX; a little more still finds the length limits. */
        if (size > 1024)
                return 0;
        first = buf = fuzz_two_strings(data, size, &second);
        if (!buf)
                return 0;

        parent = check_path(BLKMODEL_BLOCK_PATH, first);
        child = check_path(parent, second);

        check_member(first);
        check_member(second);
        return 0;
}
