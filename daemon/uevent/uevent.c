/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "common/util.h"
#include "uevent/uevent.h"

/* Indexed by UeventAction; the kernel's kobject_actions[] spelled the same way. */
static const char *const uevent_action_table[_UEVENT_ACTION_MAX] = {
                [UEVENT_ADD] = "add",   [UEVENT_REMOVE] = "remove", [UEVENT_CHANGE] = "change",
                [UEVENT_MOVE] = "move", [UEVENT_ONLINE] = "online", [UEVENT_OFFLINE] = "offline",
                [UEVENT_BIND] = "bind", [UEVENT_UNBIND] = "unbind",
};

const char *uevent_action_to_string(UeventAction a)
{
        if ((unsigned) a >= ELEMENTSOF(uevent_action_table))
                return NULL;
        return uevent_action_table[a];
}

int uevent_action_from_string(const char *s)
{
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(uevent_action_table); i++)
                if (streq(s, uevent_action_table[i]))
                        return (int) i;
        return -EINVAL;
}

/*
 * Devpath rules (DEVPATH, DEVPATH_OLD and the header's): an absolute path
 * of at least one element, no empty element (no "//", no trailing "/"), no
 * "." or ".." element, no ASCII control character, valid UTF-8.  A devpath
 * becomes a filesystem path below the sysfs root and an object path, so
 * ".." must never get through, and one spelling per path keeps lookups
 * exact.
 */
static bool devpath_valid(const char *p)
{
        size_t n = strlen(p);

        if (n < 2 || p[0] != '/' || p[n - 1] == '/')
                return false;

        for (const char *e = p + 1;;) {
                size_t l = strcspn(e, "/");

                if (l == 0)
                        return false;
                if ((l == 1 && e[0] == '.') || (l == 2 && e[0] == '.' && e[1] == '.'))
                        return false;
                for (size_t i = 0; i < l; i++)
                        if (char_is_control(e[i]))
                                return false;
                if (e[l] == 0)
                        break;
                e += l + 1;
        }

        return utf8_is_valid_n(p, n);
}

static bool key_char_valid(char c, bool first)
{
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_')
                return true;
        return !first && c >= '0' && c <= '9';
}

/*
 * Checks one KEY=VALUE entry of length l (its NUL not counted).  Returns the
 * key's length, or -EBADMSG.
 */
static int entry_validate(const char *e, size_t l)
{
        const char *eq = memchr(e, '=', l);
        size_t kl;

        if (!eq)
                return -EBADMSG;
        kl = (size_t) (eq - e);
        if (kl == 0 || kl > UEVENT_KEY_LEN_MAX)
                return -EBADMSG;
        for (size_t i = 0; i < kl; i++)
                if (!key_char_valid(e[i], i == 0))
                        return -EBADMSG;
        return (int) kl;
}

/* DEVPATH and DEVPATH_OLD name the objects: those are checked by rule 8, never escaped. */
static bool key_is_devpath(const char *e, size_t kl)
{
        return (kl == 7 && memcmp(e, "DEVPATH", 7) == 0) || (kl == 11 && memcmp(e, "DEVPATH_OLD", 11) == 0);
}

/* A key given again keeps its first place and takes the last value, as sd-device and a uevent file's
 * reading (parse_uevent_file()) keep it. */
static void merge_repeated_keys(Uevent *u)
{
        size_t n = 0;

        for (size_t i = 0; i < u->n_env; i++) {
                size_t j = 0;

                while (j < n && !streq(u->env_keys[j], u->env_keys[i]))
                        j++;
                if (j == n)
                        u->env_keys[n++] = u->env_keys[i];
                u->env_values[j] = u->env_values[i];
        }
        u->n_env = n;
}

/* SEQNUM: 1 to 20 decimal digits, no sign, no leading zero, fits in a u64, not zero. */
static int seqnum_parse(const char *s, uint64_t *ret)
{
        uint64_t v = 0;
        size_t n = strlen(s);

        if (n == 0 || n > 20 || s[0] == '0')
                return -EBADMSG;
        for (size_t i = 0; i < n; i++) {
                unsigned d;

                if (s[i] < '0' || s[i] > '9')
                        return -EBADMSG;
                d = (unsigned) (s[i] - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -EBADMSG;
                v = v * 10 + d;
        }
        *ret = v;
        return 0;
}

/* Why the last uevent_parse() on this thread said -EBADMSG: which rule the datagram broke. */
static __thread const char *malformed;

const char *uevent_parse_malformed(void)
{
        return malformed ?: "no reason";
}

static int bad(const char *rule)
{
        malformed = rule;
        return -EBADMSG;
}

Uevent *uevent_free(Uevent *u)
{
        /* One allocation holds the struct, both arrays and all strings. */
        free(u);
        return NULL;
}

const char *uevent_get(const Uevent *u, const char *key)
{
        if (!u || !key)
                return NULL;
        for (size_t i = 0; i < u->n_env; i++)
                if (streq(u->env_keys[i], key))
                        return u->env_values[i];
        return NULL;
}

/*
 * The rules, each with its reason.  A datagram that breaks any of them is
 * refused as a whole: a half-understood event is worse than a dropped one,
 * since a drop can be repaired by a rescan and a misread cannot.
 *
 *  1. UEVENT_SIZE_MIN <= len <= UEVENT_SIZE_MAX (-EMSGSIZE).  sd-device
 *     refuses anything under 32 bytes; the kernel caps the variables at 2048
 *     bytes (UEVENT_BUFFER_SIZE), so 8 KiB leaves room for a long header.
 *  2. Not udev's re-broadcast, which starts "libudev\0" (-EPROTO): it is
 *     another format with a binary header, and must not be read as ours.
 *  3. The last byte is NUL: every entry, the last one included, is
 *     NUL-terminated and nothing trails it.  The kernel always sends it so.
 *  4. The first entry is the header "ACTION@DEVPATH": an action of 1 to
 *     UEVENT_ACTION_LEN_MAX characters [a-z_], an '@', and a devpath that
 *     starts with '/' (so the header contains "@/", as sd-device demands).
 *  5. Every further entry is "KEY=VALUE" and none is empty.  The key has 1
 *     to UEVENT_KEY_LEN_MAX characters [A-Za-z0-9_] and does not start with
 *     a digit.  Lower case is allowed because the kernel passes the
 *     arguments of a synthetic uevent through as "SYNTH_ARG_<key>" with the
 *     key's case kept (`echo "change UUID foo=bar" > uevent` yields
 *     SYNTH_ARG_foo=bar), and it accepts only alphanumeric keys there.  The
 *     value may be empty and may hold any byte: what D-Bus cannot carry is
 *     escaped as \\xNN, as in attribute values.  dm takes any byte but '/'
 *     in a name, and DM_NAME brings it (such an event was refused once, and
 *     so lost).
 *  6. At most UEVENT_VARS_MAX variables (the kernel sends at most 64).  A
 *     key given twice keeps its first place and its last value, as
 *     sd-device keeps it: the kernel passes a synthetic uevent's arguments
 *     through unchecked (`echo "change UUID A=1 A=2"` sends SYNTH_ARG_A
 *     twice), and the a{ss} we emit must be a map.  The bound keeps the
 *     duplicate check cheap.
 *  7. ACTION and DEVPATH variables are present and equal to the header's
 *     action and devpath: the header is what sd-device matches on, the
 *     variables are what we forward, and they must not tell two stories.
 *  8. DEVPATH, and DEVPATH_OLD wherever it appears, follow the devpath rules
 *     of devpath_valid(): absolute, no empty, "." or ".." element, no
 *     control character.
 *  9. SUBSYSTEM, if present, is non-empty and contains no '/': it names a
 *     directory of /sys/class or /sys/bus.
 * 10. SEQNUM, if present, is a canonical non-zero decimal u64.
 * 11. (Gone: a move need not carry DEVPATH_OLD.  A rename's does, but the
 *     kernel's synthetic one, echo move > uevent, has none, and is a move.)
 * 12. The action is one we know (-EOPNOTSUPP).  Checked last, so that a
 *     malformed event is -EBADMSG whatever its action, and only a
 *     well-formed event of a newer kernel is reported as unsupported.
 */
int uevent_parse(const void *buf, size_t len, Uevent **ret)
{
        _cleanup_(uevent_freep) Uevent *u = NULL;
        const char *p = buf, *end, *at, *vars, *action = NULL, *devpath = NULL, *seqnum = NULL;
        size_t hlen, alen, n = 0, vars_len, escaped_extra = 0;
        char *data;
        int a;

        assert(ret);

        /* Rule 1 */
        if (!buf || len < UEVENT_SIZE_MIN || len > UEVENT_SIZE_MAX)
                return -EMSGSIZE;
        end = p + len;

        /* Rule 2: len >= 32, so the 8 bytes are there. */
        if (memcmp(p, "libudev", 8) == 0)
                return -EPROTO;

        /* Rule 3: from here on strlen() never runs past the buffer. */
        if (end[-1] != 0)
                return bad("not NUL-terminated");

        /* Rule 4 */
        hlen = strlen(p);
        at = memchr(p, '@', hlen);
        if (!at)
                return bad("no ACTION@DEVPATH header");
        alen = (size_t) (at - p);
        if (alen == 0 || alen > UEVENT_ACTION_LEN_MAX)
                return bad("the header's action is empty or too long");
        for (size_t i = 0; i < alen; i++)
                if (!((p[i] >= 'a' && p[i] <= 'z') || p[i] == '_'))
                        return bad("the header's action is not [a-z_]");
        if (at[1] != '/')
                return bad("the header's devpath is not absolute");

        /* Rules 5 and the first half of 6: validate and count before allocating; and what the
         * values that need escaping will take beyond their bytes. */
        vars = p + hlen + 1;
        for (const char *e = vars; e < end;) {
                size_t l = strlen(e);
                int kl;

                if (l == 0 || (kl = entry_validate(e, l)) < 0)
                        return bad("a variable is not KEY=VALUE (key [A-Za-z_][A-Za-z0-9_]*)");
                if (++n > UEVENT_VARS_MAX)
                        return bad("too many variables");
                if (!utf8_is_valid_n(e + kl + 1, l - (size_t) kl - 1)) {
                        if (key_is_devpath(e, (size_t) kl))
                                return bad("DEVPATH or DEVPATH_OLD is not UTF-8");
                        escaped_extra += 3 * (l - (size_t) kl - 1);
                }
                e += l + 1;
        }
        if (n < 2) /* ACTION and DEVPATH at least */
                return bad("fewer than two variables");

        /* Bounded by rules 1 and 6, so none of this can overflow. */
        vars_len = (size_t) (end - vars);
        u = calloc(1, sizeof(Uevent) + 2 * n * sizeof(char *) + vars_len + escaped_extra);
        if (!u)
                return -ENOMEM;
        u->env_keys = (char **) (u + 1);
        u->env_values = u->env_keys + n;
        data = (char *) (u->env_values + n);

        for (const char *e = vars; u->n_env < n;) {
                size_t l = strlen(e), kl = (size_t) (strchr(e, '=') - e);

                memcpy(data, e, kl);
                data[kl] = 0;
                u->env_keys[u->n_env] = data;
                u->env_values[u->n_env] = data + kl + 1;
                data += kl + 1 + utf8_escape_into(e + kl + 1, l - kl - 1, data + kl + 1) + 1;
                u->n_env++;
                e += l + 1;
        }

        /* Rule 6, second half */
        merge_repeated_keys(u);
        n = u->n_env;

        for (size_t i = 0; i < n; i++) {
                const char *k = u->env_keys[i];
                char *v = u->env_values[i];

                if (streq(k, "ACTION"))
                        action = v;
                else if (streq(k, "DEVPATH"))
                        devpath = u->devpath = v;
                else if (streq(k, "SUBSYSTEM"))
                        u->subsystem = v;
                else if (streq(k, "DEVPATH_OLD"))
                        u->devpath_old = v;
                else if (streq(k, "SEQNUM"))
                        seqnum = v;
        }

        /* Rule 7 */
        if (!action || strlen(action) != alen || memcmp(action, p, alen) != 0)
                return bad("ACTION missing or not the header's");
        if (!devpath || !streq(devpath, at + 1))
                return bad("DEVPATH missing or not the header's");

        /* Rule 8 */
        if (!devpath_valid(devpath))
                return bad("DEVPATH is no devpath (empty, \".\" or \"..\" element, control character)");
        if (u->devpath_old && !devpath_valid(u->devpath_old))
                return bad("DEVPATH_OLD is no devpath");

        /* Rule 9 */
        if (u->subsystem && (u->subsystem[0] == 0 || strchr(u->subsystem, '/')))
                return bad("SUBSYSTEM empty or with a '/'");

        /* Rule 10 */
        if (seqnum && seqnum_parse(seqnum, &u->kernel_seqnum) < 0)
                return bad("SEQNUM is not a non-zero decimal u64 without leading zeros");

        /* Rule 12 */
        a = uevent_action_from_string(action);
        if (a < 0)
                return -EOPNOTSUPP;
        u->action = (UeventAction) a;

        /* The field is documented as move-only; the variable stays in env. */
        if (u->action != UEVENT_MOVE)
                u->devpath_old = NULL;

        *ret = TAKE_PTR(u);
        return 0;
}
