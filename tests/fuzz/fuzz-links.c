/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer entry point for the reading of sysfs link targets, sysfs_resolve_relative(): what
 * class/block/NAME, a disk's device link and dev/block/MAJ:MIN point to becomes a devpath, so it must
 * come out clean ("/a/b": no empty, "." or ".." element, no trailing '/') and never above the root,
 * whatever the target says.  Checked against a reference that walks a stack of elements.  Also the
 * path helpers Resolve uses on a client's spec: path_squeeze_slashes() and the /dev name and kernel
 * name of a device (kernel_name_of(), devnode_name_of()).  And the basename of a target as the
 * Subsystem and Driver properties publish it (sysfs_link_basename_escape()): any byte but '/' may be
 * in it, and D-Bus takes only UTF-8.
 *
 * The input is a base devpath (the directory holding the link), a NUL, the link's target.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/utf8.h"
#include "common/util.h"
#include "fuzz.h"
#include "sysfs/read.h"
#include "sysfs/sysfs.h"

/* sysfs names are at most NAME_MAX, link targets at most PATH_MAX: more only slows it down. */
#define INPUT_MAX 8192

/* A devpath as the model holds one: "/" and elements, none empty, "." or "..". */
static bool devpath_clean(const char *p)
{
        if (p[0] != '/')
                return false;
        if (p[1] == 0)
                return true;
        for (const char *e = p + 1;;) {
                size_t l = strcspn(e, "/");

                if (l == 0 || (l == 1 && e[0] == '.') || (l == 2 && e[0] == '.' && e[1] == '.'))
                        return false;
                if (e[l] == 0)
                        return true;
                e += l + 1;
        }
}

/* The reference: the base's elements on a stack, the target's applied one by one. */
static int reference_resolve(const char *base, const char *target, char **ret)
{
        size_t n = 0, cap = strlen(base) + strlen(target) + 2;
        const char **el = calloc(cap, sizeof(char *));
        size_t *len = calloc(cap, sizeof(size_t));
        char *out = NULL, *q;
        int r = 0;

        REQUIRE(el && len);
        if (target[0] == '/') {
                r = -EINVAL;
                goto finish;
        }
        for (int pass = 0; pass < 2; pass++)
                for (const char *p = pass == 0 ? base : target; *p;) {
                        size_t l = strcspn(p, "/");

                        if (l == 0 || (l == 1 && p[0] == '.'))
                                ;
                        else if (l == 2 && p[0] == '.' && p[1] == '.') {
                                if (n == 0) {
                                        r = -EINVAL;
                                        goto finish;
                                }
                                n--;
                        } else {
                                el[n] = p;
                                len[n++] = l;
                        }
                        p += l + (p[l] == '/');
                }
        if (n == 0) {
                r = -EINVAL;
                goto finish;
        }
        out = q = malloc(cap + 1);
        REQUIRE(out);
        for (size_t i = 0; i < n; i++) {
                *q++ = '/';
                memcpy(q, el[i], len[i]);
                q += len[i];
        }
        *q = 0;
        *ret = out;
finish:
        free(el);
        free(len);
        return r;
}

static void check_resolve(const char *base, const char *target)
{
        _cleanup_(freep) char *got = NULL, *want = NULL;
        char *const untouched = (char *) 0x1;
        char *p = untouched;
        int r, ref;

        if (!devpath_clean(base))
                return;
        r = sysfs_resolve_relative(base, target, &p);
        ref = reference_resolve(base, target, &want);
        REQUIRE(r == 0 || r == -EINVAL || r == -ENOMEM);
        if (r < 0) {
                REQUIRE(p == untouched);
                REQUIRE(r == -ENOMEM || ref == -EINVAL);
                return;
        }
        got = p;
        REQUIRE(ref == 0);
        REQUIRE(streq(got, want));
        REQUIRE(devpath_clean(got) && !streq(got, "/"));
}

static void check_squeeze(const char *s)
{
        _cleanup_(freep) char *p = strdup(s), *want = NULL;
        size_t n = 0, l = strlen(s);

        REQUIRE(p);
        /* The reference: each run of '/' as one, then a trailing '/' off unless it is all. */
        want = malloc(l + 1);
        REQUIRE(want);
        for (size_t i = 0; i < l; i++)
                if (s[i] != '/' || n == 0 || want[n - 1] != '/')
                        want[n++] = s[i];
        if (n > 1 && want[n - 1] == '/')
                n--;
        want[n] = 0;

        REQUIRE(path_squeeze_slashes(p) == p);
        REQUIRE(streq(p, want));
        REQUIRE(!strstr(p, "//"));
        /* Idempotent. */
        _cleanup_(freep) char *again = strdup(p);
        REQUIRE(again && streq(path_squeeze_slashes(again), p));
}

static void check_names(const char *s)
{
        _cleanup_(freep) char *k = kernel_name_of(s), *d = devnode_name_of(s);
        _cleanup_(freep) char *kd = NULL, *dk = NULL;

        REQUIRE(k && d);
        REQUIRE(strlen(k) == strlen(s) && strlen(d) == strlen(s));
        REQUIRE(!strchr(k, '/') && !strchr(d, '!'));
        /* Each undoes the other where the name had none of the other's character. */
        kd = devnode_name_of(k);
        dk = kernel_name_of(d);
        REQUIRE(kd && dk);
        if (!strchr(s, '!'))
                REQUIRE(streq(kd, s));
        if (!strchr(s, '/'))
                REQUIRE(streq(dk, s));
}

/* The basename as published: what D-Bus carries, no '/', and the name itself when it is text (a
 * newline at its end too: part of the name, not a line's end). */
static void check_basename(const char *target)
{
        _cleanup_(freep) char *v = sysfs_link_basename_escape(target);
        const char *slash = strrchr(target, '/'), *base = slash ? slash + 1 : target;

        REQUIRE(v);
        REQUIRE(utf8_is_valid(v));
        REQUIRE(!strchr(v, '/'));
        if (utf8_is_valid(base))
                REQUIRE(streq(v, base));
        else
                REQUIRE(strlen(v) > strlen(base));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_(freep) char *buf = NULL;
        const char *base, *target;

        if (size > INPUT_MAX)
                return 0;
        base = buf = fuzz_two_strings(data, size, &target);
        if (!buf)
                return 0;

        check_resolve(base, target);
        /* The fixed bases the daemon uses. */
        check_resolve("/class/block", target);
        check_resolve("/dev/block", target);
        check_squeeze(base);
        check_squeeze(target);
        check_names(base);
        check_basename(target);
        return 0;
}
