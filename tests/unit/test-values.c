/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdint.h>

#include "common/util.h"
#include "sysfs/read.h"
#include "sysfs/values.h"
#include "tests.h"

/* Outputs must stay untouched on failure: callers keep their defaults (0, "", empty). */
#define SENTINEL UINT64_C(0xdeadbeefcafe)

static void check_u64(const char *v, int want_r, uint64_t want)
{
        uint64_t x = SENTINEL;
        int r = parse_u64(v, &x);

        CHECK(r == want_r);
        if (r != want_r)
                fprintf(stderr, "  parse_u64(\"%s\") = %d, expected %d\n", strempty(v), r, want_r);
        CHECK(x == (want_r == 0 ? want : SENTINEL));
}

static void test_u64(void)
{
        check_u64("0", 0, 0);
        check_u64("4096", 0, 4096);
        check_u64("18446744073709551615", 0, UINT64_MAX);
        /* Leading zeros are still decimal, never octal. */
        check_u64("0010", 0, 10);

        check_u64("18446744073709551616", -ERANGE, 0);
        check_u64("99999999999999999999999999999999", -ERANGE, 0);
        check_u64("", -EBADMSG, 0);
        check_u64(NULL, -EBADMSG, 0);
        check_u64("-1", -EBADMSG, 0);
        check_u64("+1", -EBADMSG, 0);
        check_u64(" 1", -EBADMSG, 0);
        check_u64("1 ", -EBADMSG, 0);
        /* sysfs_read_attr() takes the newline off; one left here is a malformed value. */
        check_u64("1\n", -EBADMSG, 0);
        check_u64("0x10", -EBADMSG, 0);
        check_u64("1e3", -EBADMSG, 0);
        check_u64("12abc", -EBADMSG, 0);
        check_u64("\xc3\xa9", -EBADMSG, 0);
}

static void check_dev(const char *v, int want_r, unsigned want_major, unsigned want_minor)
{
        unsigned major = 777, minor = 777;
        int r = parse_dev(v, &major, &minor);

        CHECK(r == want_r);
        if (r != want_r)
                fprintf(stderr, "  parse_dev(\"%s\") = %d, expected %d\n", v, r, want_r);
        CHECK(major == (want_r == 0 ? want_major : 777));
        CHECK(minor == (want_r == 0 ? want_minor : 777));
}

static void test_dev(void)
{
        check_dev("8:0", 0, 8, 0);
        check_dev("259:12", 0, 259, 12);
        check_dev("4294967295:4294967295", 0, UINT32_MAX, UINT32_MAX);

        check_dev("", -EBADMSG, 0, 0);
        check_dev("8", -EBADMSG, 0, 0);
        check_dev("8:", -EBADMSG, 0, 0);
        check_dev(":0", -EBADMSG, 0, 0);
        check_dev(":", -EBADMSG, 0, 0);
        check_dev("4294967296:0", -EBADMSG, 0, 0);
        check_dev("0:4294967296", -EBADMSG, 0, 0);
        /* Past 2^64 the number parser says ERANGE; the dev parser still just says malformed. */
        check_dev("99999999999999999999999:0", -EBADMSG, 0, 0);
        check_dev("-1:0", -EBADMSG, 0, 0);
        check_dev("8:-1", -EBADMSG, 0, 0);
        check_dev("8:1:2", -EBADMSG, 0, 0);
        check_dev("8::1", -EBADMSG, 0, 0);
        check_dev(" 8:1", -EBADMSG, 0, 0);
        check_dev("8: 1", -EBADMSG, 0, 0);
        check_dev("8 :1", -EBADMSG, 0, 0);
        check_dev("8:1\n", -EBADMSG, 0, 0);
}

static void test_sectors(void)
{
        CHECK(sectors_to_bytes(0) == 0);
        CHECK(sectors_to_bytes(1) == 512);
        CHECK(sectors_to_bytes(976773168) == UINT64_C(500107862016));
        CHECK(sectors_to_bytes(UINT64_MAX / 512) == UINT64_MAX / 512 * 512);
        CHECK(sectors_to_bytes(UINT64_MAX / 512 + 1) == UINT64_MAX);
        CHECK(sectors_to_bytes(UINT64_MAX) == UINT64_MAX);
}

/* expected: the names, NULL-terminated. */
static void check_scheduler(const char *v, const char *active, const char *const *expected)
{
        _cleanup_(strv_freep) char **all = NULL;
        _cleanup_(freep) char *a = NULL;
        size_t n = 0;

        CHECK(parse_scheduler(v, &all, &a) == 0);
        CHECK_STREQ(a, active);
        if (!all)
                return;
        while (expected[n])
                n++;
        CHECK(strv_length(all) == n);
        for (size_t i = 0; i < n && i < strv_length(all); i++)
                CHECK_STREQ(all[i], expected[i]);
}

static void test_scheduler(void)
{
        check_scheduler("none [mq-deadline] kyber bfq", "mq-deadline",
                        (const char *const[]){"none", "mq-deadline", "kyber", "bfq", NULL});
        /* The kernel prints a space after each name, the last one too. */
        check_scheduler("[none] mq-deadline ", "none", (const char *const[]){"none", "mq-deadline", NULL});
        check_scheduler("none mq-deadline kyber [bfq]", "bfq",
                        (const char *const[]){"none", "mq-deadline", "kyber", "bfq", NULL});
        check_scheduler("a\t[b]\t\tc", "b", (const char *const[]){"a", "b", "c", NULL});
        /* A kernel with one scheduler shows it without brackets (dm, md: "none"). */
        check_scheduler("none", "none", (const char *const[]){"none", NULL});
        check_scheduler("  none  ", "none", (const char *const[]){"none", NULL});
        /* Several names, none bracketed: nothing is known to be active. */
        check_scheduler("none mq-deadline", "", (const char *const[]){"none", "mq-deadline", NULL});
        check_scheduler("", "", (const char *const[]){NULL});
        check_scheduler("   ", "", (const char *const[]){NULL});
        /* Two bracketed names (a broken attribute): the first one wins. */
        check_scheduler("[a] [b]", "a", (const char *const[]){"a", "b", NULL});
        /* Half a bracket is part of the name. */
        check_scheduler("[a b]", "", (const char *const[]){"[a", "b]", NULL});
        check_scheduler("[", "[", (const char *const[]){"[", NULL});
        /* A newline is not a separator: sysfs_read_attr() took the kernel's off already. */
        check_scheduler("none [bfq]\n", "", (const char *const[]){"none", "[bfq]\n", NULL});

        /* Either output may be left out. */
        {
                _cleanup_(strv_freep) char **all = NULL;
                _cleanup_(freep) char *a = NULL;
                CHECK(parse_scheduler("[x] y", NULL, &a) == 0);
                CHECK_STREQ(a, "x");
                CHECK(parse_scheduler("[x] y", &all, NULL) == 0);
                CHECK(strv_length(all) == 2);
                CHECK(parse_scheduler("[x] y", NULL, NULL) == 0);
        }
}

/* expected: key, value, key, value …, NULL. */
static void check_uevent(const char *v, const char *const *expected)
{
        _cleanup_(strv_freep) char **pairs = NULL;
        size_t n = 0;

        CHECK(parse_uevent_file(v, &pairs) == 0);
        if (!pairs)
                return;
        while (expected[n])
                n++;
        CHECK(strv_length(pairs) == n);
        for (size_t i = 0; i < n && i < strv_length(pairs); i++)
                CHECK_STREQ(pairs[i], expected[i]);
}

static void check_get(const char *v, const char *key, int want_r, const char *want)
{
        char *x = (char *) "untouched";
        int r = uevent_file_get(v, key, &x);

        CHECK(r == want_r);
        if (r == 0) {
                CHECK_STREQ(x, want);
                free(x);
        } else
                CHECK_STREQ(x, "untouched");
}

static void test_uevent_file(void)
{
        static const char disk[] = "MAJOR=8\nMINOR=0\nDEVNAME=sda\nDEVTYPE=disk\nDISKSEQ=1\n";

        check_uevent(disk, (const char *const[]){"MAJOR", "8", "MINOR", "0", "DEVNAME", "sda", "DEVTYPE",
                                                 "disk", "DISKSEQ", "1", NULL});
        check_uevent("", (const char *const[]){NULL});
        check_uevent("\n\n\n", (const char *const[]){NULL});
        /* No newline at the end: the last line counts all the same. */
        check_uevent("A=1\nB=2", (const char *const[]){"A", "1", "B", "2", NULL});
        /* Lines without '=' and lines with an empty key are skipped, the rest is kept. */
        check_uevent("junk\nA=1\n=orphan\n\nB=2\n", (const char *const[]){"A", "1", "B", "2", NULL});
        /* An empty value is a value; only the first '=' splits. */
        check_uevent("A=\nB==x=\n", (const char *const[]){"A", "", "B", "=x=", NULL});
        /* Bytes are kept as they are: a CR is part of the value, not a line end. */
        check_uevent("A=1\r\nB=2\r\n\r\n", (const char *const[]){"A", "1\r", "B", "2\r", NULL});
        check_uevent("\rA=1", (const char *const[]){"\rA", "1", NULL});
        /* A repeated key keeps its place and its last value, as an event's does: a{ss} is a map. */
        check_uevent("A=1\nB=0\nA=2\n", (const char *const[]){"A", "2", "B", "0", NULL});
        check_uevent("PARTNAME=EFI System Partition\n",
                     (const char *const[]){"PARTNAME", "EFI System Partition", NULL});

        check_get(disk, "DEVNAME", 0, "sda");
        check_get(disk, "DISKSEQ", 0, "1");
        check_get(disk, "MISSING", -ENOENT, NULL);
        check_get(disk, "", -ENOENT, NULL);
        check_get(disk, "MAJOR=8", -ENOENT, NULL);
        /* Keys are matched whole, never by prefix. */
        check_get(disk, "DEV", -ENOENT, NULL);
        check_get("A=1\nA=2\n", "A", 0, "2");
        check_get("=x\n", "", -ENOENT, NULL);
        check_get("junk", "junk", -ENOENT, NULL);
        check_get("", "A", -ENOENT, NULL);
        check_get("A=1\r\n", "A", 0, "1\r");
}

int main(void)
{
        test_u64();
        test_dev();
        test_sectors();
        test_scheduler();
        test_uevent_file();
        return tests_summary();
}
