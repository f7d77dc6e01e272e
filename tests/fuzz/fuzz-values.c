/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer entry point for the sysfs value parsers, fed as the daemon feeds them: the raw bytes of
 * a file go through sysfs_value_escape() (what sysfs_read_attr() returns), the result through every
 * parser of sysfs/values.h.  Each result is checked against an independent reading of the same text
 * and against what D-Bus will require of it (valid UTF-8), so that a parser that merely accepts the
 * wrong thing is a finding too, not only a crash.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/utf8.h"
#include "common/util.h"
#include "fuzz.h"
#include "sysfs/read.h"
#include "sysfs/sysfs.h"
#include "sysfs/values.h"

static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

/* The escaped value: valid UTF-8, no NUL, at most 4 bytes per input byte, and the input itself
 * when that was publishable already. */
static char *check_escape(const uint8_t *data, size_t size)
{
        char *v = sysfs_value_escape((const char *) data, size);
        size_t body = size > 0 && data[size - 1] == '\n' ? size - 1 : size;

        REQUIRE(v);
        REQUIRE(utf8_is_valid(v));
        REQUIRE(strlen(v) <= body * 4);
        if (!memchr(data, 0, body) && utf8_is_valid_n((const char *) data, body))
                REQUIRE(strlen(v) == body && memcmp(v, data, body) == 0);
        else
                REQUIRE(strlen(v) > body); /* something was escaped: \xNN is longer than its byte */
        return v;
}

/* The reference: 1 if s is a number that fits, 0 if it is digits past 2^64-1, -1 if not digits. */
static int reference_u64(const char *s, size_t n, uint64_t *ret)
{
        uint64_t x = 0;
        bool overflow = false;

        if (n == 0)
                return -1;
        for (size_t i = 0; i < n; i++) {
                if (!is_digit(s[i]))
                        return -1;
                unsigned d = (unsigned) (s[i] - '0');
                if (x > (UINT64_MAX - d) / 10)
                        overflow = true;
                else
                        x = x * 10 + d;
        }
        *ret = x;
        return overflow ? 0 : 1;
}

static void check_u64(const char *v)
{
        uint64_t x = 42, want = 0;
        int ref = reference_u64(v, strlen(v), &want);
        int r = parse_u64(v, &x);

        if (ref == 1) {
                REQUIRE(r == 0 && x == want);
                /* A size in sectors: bytes, or the most a u64 holds, never a wrapped-around number. */
                REQUIRE(sectors_to_bytes(x) == (x > UINT64_MAX / 512 ? UINT64_MAX : x * 512));
                return;
        }
        REQUIRE(x == 42);
        REQUIRE(r == (ref == 0 ? -ERANGE : -EBADMSG));
}

static void check_dev(const char *v)
{
        const char *colon = strchr(v, ':');
        unsigned major = 7, minor = 7;
        uint64_t want_major = 0, want_minor = 0;
        bool ok = colon && reference_u64(v, (size_t) (colon - v), &want_major) == 1 &&
                  reference_u64(colon + 1, strlen(colon + 1), &want_minor) == 1 &&
                  want_major <= UINT32_MAX && want_minor <= UINT32_MAX;
        int r = parse_dev(v, &major, &minor);

        if (ok)
                REQUIRE(r == 0 && major == want_major && minor == want_minor);
        else
                REQUIRE(r == -EBADMSG && major == 7 && minor == 7);
}

static void check_scheduler(const char *v)
{
        _cleanup_(strv_freep) char **all = NULL;
        _cleanup_(freep) char *active = NULL, *copy = strdup(v);
        char *tok, *save = NULL;
        size_t n_names = 0;
        const char *first_bracketed = NULL, *only = NULL;
        int r;

        REQUIRE(copy);
        r = parse_scheduler(v, &all, &active);
        REQUIRE(r == 0 && all && active);
        REQUIRE(utf8_is_valid(active));

        /* One name per blank-separated token, in order, its brackets taken off; "[]" names nothing. */
        for (tok = strtok_r(copy, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
                size_t l = strlen(tok);
                bool bracketed = l >= 2 && tok[0] == '[' && tok[l - 1] == ']';

                if (bracketed && l == 2)
                        continue;
                REQUIRE(n_names < strv_length(all));
                const char *name = all[n_names++];
                REQUIRE(utf8_is_valid(name));
                REQUIRE(!strpbrk(name, " \t"));
                if (bracketed)
                        REQUIRE(strlen(name) == l - 2 && memcmp(name, tok + 1, l - 2) == 0);
                else
                        REQUIRE(streq(name, tok));
                if (bracketed && !first_bracketed)
                        first_bracketed = name;
                if (!bracketed)
                        only = name;
        }
        REQUIRE(strv_length(all) == n_names);

        /* Active: the first bracketed name, or the one name a single-scheduler kernel shows, or "". */
        if (first_bracketed)
                REQUIRE(streq(active, first_bracketed));
        else if (n_names == 1)
                REQUIRE(streq(active, only));
        else
                REQUIRE(streq(active, ""));

        /* Either output may be left out, with the same result. */
        _cleanup_(freep) char *active2 = NULL;
        REQUIRE(parse_scheduler(v, NULL, &active2) == 0 && streq(active2, active));
        REQUIRE(parse_scheduler(v, NULL, NULL) == 0);
}

static void check_uevent_file(const char *v)
{
        _cleanup_(strv_freep) char **pairs = NULL;
        size_t n = 0;
        int r;

        r = parse_uevent_file(v, &pairs);
        REQUIRE(r == 0 && pairs);
        n = strv_length(pairs);
        REQUIRE(n % 2 == 0);

        /* One pair per distinct key of the lines that have '=' after a non-empty key, in the order
         * of its first line, with its last line's value. */
        size_t keys = 0;
        for (const char *line = v; *line;) {
                size_t l = strcspn(line, "\n");
                const char *eq = memchr(line, '=', l);
                if (eq && eq > line) {
                        _cleanup_(freep) char *key = strndup(line, (size_t) (eq - line));
                        const char *last = NULL;
                        size_t last_len = 0;
                        bool seen = false;

                        REQUIRE(key);
                        for (const char *o = v; *o;) {
                                size_t ol = strcspn(o, "\n");
                                const char *oeq = memchr(o, '=', ol);
                                if (oeq && (size_t) (oeq - o) == strlen(key) && memcmp(o, key, strlen(key)) == 0) {
                                        seen = seen || o < line;
                                        last = oeq + 1;
                                        last_len = (size_t) (o + ol - last);
                                }
                                o += ol + (o[ol] == '\n');
                        }
                        if (!seen) {
                                REQUIRE(2 * keys < n && streq(pairs[2 * keys], key));
                                REQUIRE(strlen(pairs[2 * keys + 1]) == last_len &&
                                        memcmp(pairs[2 * keys + 1], last, last_len) == 0);
                                keys++;
                        }
                }
                line += l + (line[l] == '\n');
        }
        REQUIRE(n == 2 * keys);

        for (size_t i = 0; i < n; i += 2) {
                _cleanup_(freep) char *got = NULL;

                REQUIRE(*pairs[i]);
                REQUIRE(!strpbrk(pairs[i], "\n="));
                REQUIRE(!strchr(pairs[i + 1], '\n'));
                REQUIRE(utf8_is_valid(pairs[i]) && utf8_is_valid(pairs[i + 1]));
                REQUIRE(uevent_file_get(v, pairs[i], &got) == 0);
                REQUIRE(streq(got, pairs[i + 1]));
        }

        /* No key has a '=' or a newline in it, and none is empty: such a lookup finds nothing. */
        char *none = (char *) "untouched";
        REQUIRE(uevent_file_get(v, "", &none) == -ENOENT);
        REQUIRE(uevent_file_get(v, "A=B", &none) == -ENOENT);
        REQUIRE(uevent_file_get(v, "A\nB", &none) == -ENOENT);
        REQUIRE(streq(none, "untouched"));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_(freep) char *v = NULL;

        /* sysfs never hands over more than a page; more only slows the fuzzer down. */
        if (size > SYSFS_VALUE_MAX)
                return 0;
        v = check_escape(data, size);
        check_u64(v);
        check_dev(v);
        check_scheduler(v);
        check_uevent_file(v);
        return 0;
}
