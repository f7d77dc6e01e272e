/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uevent/uevent.h"
#include "tests.h"

/* A wire message: its entries joined, each with its NUL.  The caller frees msg->buf. */
typedef struct Msg {
        char *buf;
        size_t len;
} Msg;

static Msg msgv(const char *first, va_list ap)
{
        Msg m = {};

        for (const char *e = first; e; e = va_arg(ap, const char *)) {
                size_t l = strlen(e) + 1;

                m.buf = realloc(m.buf, m.len + l);
                if (!m.buf)
                        abort();
                memcpy(m.buf + m.len, e, l);
                m.len += l;
        }
        return m;
}

static Msg msg(const char *first, ...)
{
        va_list ap;
        Msg m;

        va_start(ap, first);
        m = msgv(first, ap);
        va_end(ap);
        return m;
}

/* Parses the entries given; returns what uevent_parse() did, frees everything. */
static int parse_entries(const char *first, ...)
{
        Uevent *u = NULL;
        va_list ap;
        Msg m;
        int r;

        va_start(ap, first);
        m = msgv(first, ap);
        va_end(ap);

        r = uevent_parse(m.buf, m.len, &u);
        if ((r == 0) != (u != NULL))
                r = -9999; /* a broken ret contract shows up as a failed check */
        uevent_free(u);
        free(m.buf);
        return r;
}

/* The value of key once the entries are parsed; "" when the parse failed or has no such key. */
static char parsed_value[64];
static const char *parse_value(const char *key, const char *first, ...)
{
        Uevent *u = NULL;
        va_list ap;
        Msg m;

        va_start(ap, first);
        m = msgv(first, ap);
        va_end(ap);
        parsed_value[0] = 0;
        if (uevent_parse(m.buf, m.len, &u) == 0 && uevent_get(u, key))
                snprintf(parsed_value, sizeof(parsed_value), "%s", uevent_get(u, key));
        uevent_free(u);
        free(m.buf);
        return parsed_value;
}

#define LOOP0 "/devices/virtual/block/loop0"

static void test_actions(void)
{
        for (int a = 0; a < _UEVENT_ACTION_MAX; a++) {
                const char *s = uevent_action_to_string((UeventAction) a);

                CHECK(s != NULL);
                CHECK(uevent_action_from_string(s) == a);
        }
        CHECK_STREQ(uevent_action_to_string(UEVENT_ADD), "add");
        CHECK_STREQ(uevent_action_to_string(UEVENT_UNBIND), "unbind");
        CHECK(uevent_action_to_string(_UEVENT_ACTION_MAX) == NULL);
        CHECK(uevent_action_to_string((UeventAction) -1) == NULL);
        CHECK(uevent_action_from_string("mount") == -EINVAL);
        CHECK(uevent_action_from_string("ADD") == -EINVAL);
        CHECK(uevent_action_from_string("") == -EINVAL);
        CHECK(uevent_action_from_string(NULL) == -EINVAL);
}

static void test_real_event(void)
{
        /* Captured from this kernel: echo "change <uuid> foo=bar Ab9=x" > /sys/block/loop0/uevent */
        static const char wire[] = "change@" LOOP0 "\0ACTION=change\0DEVPATH=" LOOP0
                                   "\0SUBSYSTEM=block\0SYNTH_UUID=1b4e28ba-2fa1-11d2-883f-0016d3cca427\0"
                                   "SYNTH_ARG_foo=bar\0SYNTH_ARG_Ab9=x\0MAJOR=7\0MINOR=0\0DEVNAME=loop0\0"
                                   "DEVTYPE=disk\0DISKSEQ=12\0SEQNUM=832";
        static const char *const keys[] = { "ACTION",        "DEVPATH",        "SUBSYSTEM", "SYNTH_UUID",
                                             "SYNTH_ARG_foo", "SYNTH_ARG_Ab9", "MAJOR",     "MINOR",
                                             "DEVNAME",       "DEVTYPE",        "DISKSEQ",   "SEQNUM" };
        Uevent *u = NULL;
        int r;

        /* sizeof includes the final NUL the kernel sends. */
        CHECK(sizeof(wire) == 250);
        r = uevent_parse(wire, sizeof(wire), &u);
        CHECK(r == 0);
        if (!u)
                return;

        CHECK(u->action == UEVENT_CHANGE);
        CHECK_STREQ(u->devpath, LOOP0);
        CHECK_STREQ(u->subsystem, "block");
        CHECK(u->devpath_old == NULL);
        CHECK(u->kernel_seqnum == 832);
        CHECK(u->n_env == 12);
        for (size_t i = 0; i < 12 && i < u->n_env; i++)
                CHECK_STREQ(u->env_keys[i], keys[i]);
        CHECK_STREQ(u->env_values[0], "change");
        CHECK_STREQ(u->env_values[11], "832");
        CHECK_STREQ(uevent_get(u, "DEVNAME"), "loop0");
        CHECK_STREQ(uevent_get(u, "SYNTH_ARG_foo"), "bar");
        CHECK_STREQ(uevent_get(u, "SEQNUM"), "832");
        CHECK(uevent_get(u, "PARTN") == NULL);
        CHECK(uevent_get(u, "devname") == NULL);
        CHECK(uevent_get(u, NULL) == NULL);
        CHECK(uevent_get(NULL, "ACTION") == NULL);

        CHECK(uevent_free(u) == NULL);
        CHECK(uevent_free(NULL) == NULL);
}

static void test_move(void)
{
        Uevent *u = NULL;
        Msg m;

        m = msg("move@/devices/virtual/net/eth1", "ACTION=move", "DEVPATH=/devices/virtual/net/eth1",
                "SUBSYSTEM=net", "DEVPATH_OLD=/devices/virtual/net/eth0", "SEQNUM=5", NULL);
        CHECK(uevent_parse(m.buf, m.len, &u) == 0);
        if (u) {
                CHECK(u->action == UEVENT_MOVE);
                CHECK_STREQ(u->devpath_old, "/devices/virtual/net/eth0");
                CHECK_STREQ(u->devpath, "/devices/virtual/net/eth1");
                u = uevent_free(u);
        }
        free(m.buf);

        /* The kernel's synthetic move (echo move > uevent) says nowhere it came from: still a move. */
        m = msg("move@" LOOP0, "ACTION=move", "DEVPATH=" LOOP0, "SUBSYSTEM=block", "SYNTH_UUID=0", "SEQNUM=6",
                NULL);
        CHECK(uevent_parse(m.buf, m.len, &u) == 0);
        if (u) {
                CHECK(u->action == UEVENT_MOVE);
                CHECK(u->devpath_old == NULL);
                u = uevent_free(u);
        }
        free(m.buf);
        /* Where it says where from, that path obeys the devpath rules. */
        CHECK(parse_entries("move@/devices/virtual/net/eth1", "ACTION=move", "DEVPATH=/devices/virtual/net/eth1",
                            "DEVPATH_OLD=/devices/../etc", NULL) == -EBADMSG);
        CHECK(parse_entries("move@/devices/virtual/net/eth1", "ACTION=move", "DEVPATH=/devices/virtual/net/eth1",
                            "DEVPATH_OLD=", NULL) == -EBADMSG);

        /* DEVPATH_OLD elsewhere: checked, kept in env, not in the move-only field. */
        m = msg("change@" LOOP0, "ACTION=change", "DEVPATH=" LOOP0, "DEVPATH_OLD=/devices/x", NULL);
        CHECK(uevent_parse(m.buf, m.len, &u) == 0);
        if (u) {
                CHECK(u->devpath_old == NULL);
                CHECK_STREQ(uevent_get(u, "DEVPATH_OLD"), "/devices/x");
                CHECK(u->subsystem == NULL);
                CHECK(u->kernel_seqnum == 0);
                u = uevent_free(u);
        }
        free(m.buf);
        CHECK(parse_entries("change@" LOOP0, "ACTION=change", "DEVPATH=" LOOP0, "DEVPATH_OLD=/devices//x", NULL) ==
              -EBADMSG);
}

static void test_sizes(void)
{
        Uevent *u = (Uevent *) 0x1, *v = NULL;
        char *big;
        size_t n;
        int r;

        /* Rule 1: nothing shorter than 32 bytes, and ret untouched on failure. */
        CHECK(uevent_parse("add@/a\0ACTION=add\0DEVPATH=/a", 28, &u) == -EMSGSIZE);
        CHECK(u == (Uevent *) 0x1);
        CHECK(uevent_parse(NULL, 0, &u) == -EMSGSIZE);
        CHECK(uevent_parse("", 0, &u) == -EMSGSIZE);
        CHECK(u == (Uevent *) 0x1);

        /* 7 + 11 + 11 = 29 bytes: too short, however well-formed; 3 more make exactly 32, fine. */
        CHECK(parse_entries("add@/a", "ACTION=add", "DEVPATH=/a", NULL) == -EMSGSIZE);
        CHECK(parse_entries("add@/a", "ACTION=add", "DEVPATH=/a", "X=", NULL) == 0);

        /* Build one of exactly UEVENT_SIZE_MAX bytes, then one byte more. */
        big = malloc(UEVENT_SIZE_MAX + 2);
        if (!big)
                abort();
        n = (size_t) snprintf(big, UEVENT_SIZE_MAX, "add@/a%cACTION=add%cDEVPATH=/a%cPAD=", 0, 0, 0);
        memset(big + n, 'x', UEVENT_SIZE_MAX - n - 1);
        big[UEVENT_SIZE_MAX - 1] = 0;
        r = uevent_parse(big, UEVENT_SIZE_MAX, &v);
        CHECK(r == 0);
        if (v) {
                CHECK(strlen(uevent_get(v, "PAD")) == UEVENT_SIZE_MAX - n - 1);
                v = uevent_free(v);
        }
        big[UEVENT_SIZE_MAX - 1] = 'x';
        big[UEVENT_SIZE_MAX] = 0;
        CHECK(uevent_parse(big, UEVENT_SIZE_MAX + 1, &v) == -EMSGSIZE);
        CHECK(v == NULL);
        free(big);
}

static void test_header(void)
{
        static const char udev[] = "libudev\0\xfe\xed\xca\xfe"
                                   "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
        Uevent *u = NULL;

        /* Rule 2: udev's own format. */
        CHECK(uevent_parse(udev, sizeof(udev), &u) == -EPROTO);

        /* Rule 3: the buffer must end in NUL. */
        {
                Msg m = msg("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, NULL);
                CHECK(uevent_parse(m.buf, m.len, &u) == 0);
                u = uevent_free(u);
                CHECK(uevent_parse(m.buf, m.len - 1, &u) == -EBADMSG);
                CHECK(u == NULL);
                free(m.buf);
        }

        /* Rule 4 */
        CHECK(parse_entries("add" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, NULL) == -EBADMSG);
        CHECK(parse_entries("@" LOOP0, "ACTION=", "DEVPATH=" LOOP0, NULL) == -EBADMSG);
        CHECK(parse_entries("add@devices/virtual/block/loop0", "ACTION=add", "DEVPATH=devices/virtual/block/loop0",
                            NULL) == -EBADMSG);
        CHECK(parse_entries("ADD@" LOOP0, "ACTION=ADD", "DEVPATH=" LOOP0, NULL) == -EBADMSG);
        CHECK(parse_entries("a-d@" LOOP0, "ACTION=a-d", "DEVPATH=" LOOP0, NULL) == -EBADMSG);
        CHECK(parse_entries("abcdefghijklmnopqrstuvwxyzabcdefg@" LOOP0, "ACTION=abcdefghijklmnopqrstuvwxyzabcdefg",
                            "DEVPATH=" LOOP0, NULL) == -EBADMSG);
        /* 32 characters is still an action (an unknown one). */
        CHECK(parse_entries("abcdefghijklmnopqrstuvwxyzabcdef@" LOOP0, "ACTION=abcdefghijklmnopqrstuvwxyzabcdef",
                            "DEVPATH=" LOOP0, NULL) == -EOPNOTSUPP);
        /* Only the header, no variables. */
        CHECK(parse_entries("add@/devices/virtual/block/loop0/and/more/padding", NULL) == -EBADMSG);
}

static void test_entries(void)
{
        char key64[65 + 2], key65[66 + 2];

        /* Rule 5 */
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "NOEQUALS", NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "=value", NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "", "DEVPATH=" LOOP0, NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "A-B=1", NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "A B=1", NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "1AB=1", NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "A\xc3\xa4=1", NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "_A1b=1", NULL) == 0);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "EMPTY=", NULL) == 0);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "EQ==x=y", NULL) == 0);

        memset(key64, 'K', 64);
        memcpy(key64 + 64, "=", 2);
        memset(key65, 'K', 65);
        memcpy(key65 + 65, "=", 2);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, key64, NULL) == 0);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, key65, NULL) == -EBADMSG);

        /* Values: UTF-8 as it is; what D-Bus cannot carry escaped, as attribute values are. */
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "MODEL=Gr\xc3\xb6\xc3\x9f\xe2\x82\xac",
                            "EMOJI=\xf0\x9f\x92\xbe", "TAB=a\tb", NULL) == 0);
        CHECK_STREQ(parse_value("MODEL", "add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "MODEL=\xff", NULL), "\\xff");
        CHECK_STREQ(parse_value("MODEL", "add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "MODEL=a\xc3", NULL),
                    "a\\xc3");
        CHECK_STREQ(parse_value("MODEL", "add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "MODEL=\xc0\xaf", NULL),
                    "\\xc0\\xaf");
        CHECK_STREQ(parse_value("MODEL", "add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "MODEL=\xed\xa0\x80", NULL),
                    "\\xed\\xa0\\x80");
        CHECK_STREQ(parse_value("DM_NAME", "change@" LOOP0, "ACTION=change", "DEVPATH=" LOOP0,
                                "DM_NAME=vg\xef\xbf\xbe-\xff", "SEQNUM=9", NULL),
                    "vg\\xef\\xbf\\xbe-\\xff");
        CHECK_STREQ(parse_value("SEQNUM", "change@" LOOP0, "ACTION=change", "DEVPATH=" LOOP0, "DM_NAME=\xff",
                                "SEQNUM=9", NULL),
                    "9");
        /* A devpath names an object: never escaped, refused. */
        CHECK(parse_entries("move@" LOOP0, "ACTION=move", "DEVPATH=" LOOP0, "DEVPATH_OLD=/devices/\xff", NULL) ==
              -EBADMSG);

        /* Rule 6: a key given again keeps its last value; and the count limit. */
        CHECK_STREQ(parse_value("MAJOR", "add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "MAJOR=7", "MAJOR=8", NULL),
                    "8");
        CHECK_STREQ(parse_value("SYNTH_ARG_A", "change@" LOOP0, "ACTION=change", "DEVPATH=" LOOP0,
                                "SYNTH_UUID=0", "SYNTH_ARG_A=1", "SYNTH_ARG_A=2", NULL),
                    "2");
        {
                /* Its first place, its last value: as udevadm shows it. */
                Uevent *u = NULL;
                Msg m = msg("change@" LOOP0, "ACTION=change", "DEVPATH=" LOOP0, "A=1", "B=x", "A=2", NULL);

                CHECK(uevent_parse(m.buf, m.len, &u) == 0);
                if (u) {
                        CHECK(u->n_env == 4);
                        CHECK_STREQ(u->env_keys[2], "A");
                        CHECK_STREQ(u->env_values[2], "2");
                        CHECK_STREQ(u->env_keys[3], "B");
                }
                uevent_free(u);
                free(m.buf);
        }
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "ACTION=add", NULL) == 0);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "ACTION=remove", NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "major=7", "MAJOR=7", NULL) == 0);
        {
                char *buf = malloc(UEVENT_SIZE_MAX);
                Uevent *u = NULL;
                size_t n;

                if (!buf)
                        abort();
                for (size_t vars = UEVENT_VARS_MAX; vars <= UEVENT_VARS_MAX + 1; vars++) {
                        n = (size_t) sprintf(buf, "add@/a%cACTION=add%cDEVPATH=/a%c", 0, 0, 0);
                        for (size_t i = 2; i < vars; i++)
                                n += (size_t) sprintf(buf + n, "V%zu=%c", i, 0);
                        CHECK(uevent_parse(buf, n, &u) == (vars <= UEVENT_VARS_MAX ? 0 : -EBADMSG));
                        if (u) {
                                CHECK(u->n_env == UEVENT_VARS_MAX);
                                CHECK_STREQ(u->env_keys[UEVENT_VARS_MAX - 1], "V127");
                                u = uevent_free(u);
                        }
                }
                free(buf);
        }
}

static void test_agreement(void)
{
        /* Rule 7 */
        CHECK(parse_entries("add@" LOOP0, "DEVPATH=" LOOP0, "SUBSYSTEM=block", NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "SUBSYSTEM=block", "SEQNUM=1", NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=remove", "DEVPATH=" LOOP0, NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=addx", "DEVPATH=" LOOP0, NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=ad", "DEVPATH=" LOOP0, NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=/devices/virtual/block/loop1", NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0 "/", NULL) == -EBADMSG);
        /* Order does not matter. */
        CHECK(parse_entries("add@" LOOP0, "SEQNUM=3", "DEVPATH=" LOOP0, "ACTION=add", NULL) == 0);
}

static int parse_devpath(const char *devpath)
{
        char header[256], var[256];

        snprintf(header, sizeof(header), "change@%s", devpath);
        snprintf(var, sizeof(var), "DEVPATH=%s", devpath);
        return parse_entries(header, "ACTION=change", var, "SUBSYSTEM=block", NULL);
}

static void test_devpaths(void)
{
        /* Rule 8 */
        CHECK(parse_devpath("/devices/virtual/block/loop0") == 0);
        CHECK(parse_devpath("/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda") == 0);
        CHECK(parse_devpath("/devices/virtual/block/cciss!c0d0") == 0);
        CHECK(parse_devpath("/devices/virtual/block/with space") == 0);
        CHECK(parse_devpath("/devices/virtual/block/...") == 0);
        CHECK(parse_devpath("/devices/virtual/block/.hidden") == 0);
        CHECK(parse_devpath("/devices/virtual/block/d\xc3\xa4") == 0);
        CHECK(parse_devpath("/a") == 0);

        CHECK(parse_devpath("/") == -EBADMSG);
        CHECK(parse_devpath("/devices//virtual") == -EBADMSG);
        CHECK(parse_devpath("/devices/virtual/") == -EBADMSG);
        CHECK(parse_devpath("/devices/../../etc/passwd") == -EBADMSG);
        CHECK(parse_devpath("/devices/virtual/..") == -EBADMSG);
        CHECK(parse_devpath("/..") == -EBADMSG);
        CHECK(parse_devpath("/./devices") == -EBADMSG);
        CHECK(parse_devpath("/devices/./virtual") == -EBADMSG);
        CHECK(parse_devpath("/devices/virtual/block/loop\n0") == -EBADMSG);
        CHECK(parse_devpath("/devices/virtual/block/loop\x01") == -EBADMSG);
        CHECK(parse_devpath("/devices/virtual/block/loop\x7f") == -EBADMSG);
        CHECK(parse_devpath("/devices/virtual/block/loop\t0") == -EBADMSG);
        CHECK(parse_devpath("/devices/virtual/block/\xff") == -EBADMSG);
        CHECK(parse_devpath("/devices/virtual/block/\xc0\xae\xc0\xae") == -EBADMSG);
}

static void test_subsystem_seqnum(void)
{
        Uevent *u = NULL;
        Msg m;

        /* Rule 9 */
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "SUBSYSTEM=", NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "SUBSYSTEM=a/b", NULL) == -EBADMSG);
        CHECK(strstr(uevent_parse_malformed(), "SUBSYSTEM") != NULL);

        /* Rule 10 */
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "SEQNUM=0", NULL) == -EBADMSG);
        /* The log says which rule: the kernel never sends SEQNUM=0, and a replay that does is told so. */
        CHECK(strstr(uevent_parse_malformed(), "SEQNUM") != NULL);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "SEQNUM=007", NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "SEQNUM=", NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "SEQNUM=-1", NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "SEQNUM=+1", NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "SEQNUM= 1", NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "SEQNUM=1x", NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "SEQNUM=0x10", NULL) == -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "SEQNUM=18446744073709551616", NULL) ==
              -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "SEQNUM=99999999999999999999", NULL) ==
              -EBADMSG);
        CHECK(parse_entries("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "SEQNUM=184467440737095516150", NULL) ==
              -EBADMSG);

        m = msg("add@" LOOP0, "ACTION=add", "DEVPATH=" LOOP0, "SEQNUM=18446744073709551615", NULL);
        CHECK(uevent_parse(m.buf, m.len, &u) == 0);
        if (u) {
                CHECK(u->kernel_seqnum == UINT64_MAX);
                u = uevent_free(u);
        }
        free(m.buf);
}

static void test_unknown_action(void)
{
        Uevent *u = (Uevent *) 0x1;
        Msg m;

        /* Rule 12: well-formed but new → -EOPNOTSUPP, ret untouched. */
        m = msg("teleport@" LOOP0, "ACTION=teleport", "DEVPATH=" LOOP0, "SUBSYSTEM=block", "SEQNUM=9", NULL);
        CHECK(uevent_parse(m.buf, m.len, &u) == -EOPNOTSUPP);
        CHECK(u == (Uevent *) 0x1);
        free(m.buf);

        /* Malformed and new → -EBADMSG, the malformation wins. */
        CHECK(parse_entries("teleport@" LOOP0, "ACTION=teleport", "DEVPATH=" LOOP0, "SEQNUM=0", NULL) == -EBADMSG);
        CHECK(parse_entries("teleport@" LOOP0, "ACTION=teleport", "DEVPATH=" LOOP0 "/..", NULL) == -EBADMSG);
}

/* Every accepted event must satisfy what the header promises. */
static bool invariants_hold(const Uevent *u)
{
        const char *a = uevent_action_to_string(u->action);

        return a && u->devpath && u->devpath[0] == '/' && !strstr(u->devpath, "//") &&
               !strstr(u->devpath, "/../") && uevent_get(u, "ACTION") && strcmp(uevent_get(u, "ACTION"), a) == 0 &&
               uevent_get(u, "DEVPATH") == u->devpath && u->n_env >= 2 && u->n_env <= UEVENT_VARS_MAX &&
               (u->devpath_old == NULL || u->action == UEVENT_MOVE);
}

/*
 * Cheap in-tree fuzzing: random damage to valid messages must never crash
 * (ASan watches) and whatever is accepted must still satisfy the invariants.
 */
static void test_mutations(void)
{
        static const char *const seeds[] = {
                "change@" LOOP0 "\0ACTION=change\0DEVPATH=" LOOP0 "\0SUBSYSTEM=block\0MAJOR=7\0MINOR=0\0"
                "DEVNAME=loop0\0DEVTYPE=disk\0DISKSEQ=12\0SEQNUM=832",
                "move@/devices/virtual/net/eth1\0ACTION=move\0DEVPATH=/devices/virtual/net/eth1\0"
                "SUBSYSTEM=net\0DEVPATH_OLD=/devices/virtual/net/eth0\0SEQNUM=5",
                "add@/devices/virtual/block/loop0/loop0p1\0ACTION=add\0DEVPATH=/devices/virtual/block/loop0/loop0p1\0"
                "SUBSYSTEM=block\0DEVTYPE=partition\0PARTN=1\0SEQNUM=77",
        };
        static const size_t seed_len[] = {
                sizeof("change@" LOOP0 "\0ACTION=change\0DEVPATH=" LOOP0 "\0SUBSYSTEM=block\0MAJOR=7\0MINOR=0\0"
                       "DEVNAME=loop0\0DEVTYPE=disk\0DISKSEQ=12\0SEQNUM=832"),
                sizeof("move@/devices/virtual/net/eth1\0ACTION=move\0DEVPATH=/devices/virtual/net/eth1\0"
                       "SUBSYSTEM=net\0DEVPATH_OLD=/devices/virtual/net/eth0\0SEQNUM=5"),
                sizeof("add@/devices/virtual/block/loop0/loop0p1\0ACTION=add\0DEVPATH=/devices/virtual/block/loop0/"
                       "loop0p1\0SUBSYSTEM=block\0DEVTYPE=partition\0PARTN=1\0SEQNUM=77"),
        };
        static const char interesting[] = { 0, '=', '@', '/', '.', 'A', 'a', '0', '\n', (char) 0xc3, (char) 0xff };
        unsigned accepted = 0, bad = 0;
        uint64_t state = 0x9e3779b97f4a7c15ULL;

        for (unsigned iter = 0; iter < 200000; iter++) {
                char buf[512];
                size_t len, s;
                Uevent *u = NULL;
                unsigned k;
                int r;

                /* xorshift64*: deterministic, so a failure reproduces. */
#define RND()                                                                                              \
        (state ^= state >> 12, state ^= state << 25, state ^= state >> 27, state * 2685821657736338717ULL)
                s = (size_t) (RND() % 3);
                len = seed_len[s];
                memcpy(buf, seeds[s], len);

                k = 1 + (unsigned) (RND() % 4);
                for (unsigned j = 0; j < k; j++) {
                        size_t pos = (size_t) (RND() % len);

                        switch (RND() % 4) {
                        case 0:
                                buf[pos] = interesting[RND() % sizeof(interesting)];
                                break;
                        case 1:
                                buf[pos] ^= (char) (1u << (RND() % 8));
                                break;
                        case 2:
                                len = pos > 0 ? pos : 1;
                                break;
                        case 3:
                                if (len < sizeof(buf)) {
                                        memmove(buf + pos + 1, buf + pos, len - pos);
                                        buf[pos] = interesting[RND() % sizeof(interesting)];
                                        len++;
                                }
                                break;
                        }
                }
#undef RND

                r = uevent_parse(buf, len, &u);
                if (r == 0) {
                        accepted++;
                        if (!invariants_hold(u) && bad++ < 5)
                                printf("FAIL mutation %u: accepted event breaks invariants\n", iter);
                        uevent_free(u);
                } else if (u || !(r == -EBADMSG || r == -EMSGSIZE || r == -EOPNOTSUPP || r == -EPROTO)) {
                        if (bad++ < 5)
                                printf("FAIL mutation %u: r=%d u=%p\n", iter, r, (void *) u);
                }
        }
        CHECK(bad == 0);
        /* Some mutations (e.g. a changed value) must survive, or the seeds are broken. */
        CHECK(accepted > 1000);
        CHECK(accepted < 200000);
}

int main(void)
{
        test_actions();
        test_real_event();
        test_move();
        test_sizes();
        test_header();
        test_entries();
        test_agreement();
        test_devpaths();
        test_subsystem_seqnum();
        test_unknown_action();
        test_mutations();

        return tests_summary();
}
