/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/utf8.h"

/* The well-formed sequence (RFC 3629) at s: its length, and its code point in *ret_cp; 0 if none. */
static size_t decode(const unsigned char *s, size_t len, uint32_t *ret_cp)
{
        unsigned c;
        uint32_t cp;
        size_t n;

        if (len == 0 || s[0] == 0)
                return 0;
        c = s[0];
        if (c < 0x80) {
                *ret_cp = c;
                return 1;
        }
        if (c >= 0xc2 && c <= 0xdf) {
                n = 2;
                cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
                n = 3;
                cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
                n = 4;
                cp = c & 0x07;
        } else
                return 0;
        if (len < n)
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        /* No overlong forms, no surrogates, nothing past U+10FFFF. */
        if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        *ret_cp = cp;
        return n;
}

bool utf8_valid_prefix(const unsigned char *s, size_t len, size_t *ret_len)
{
        uint32_t cp;
        size_t n = decode(s, len, &cp);

        /* None of the noncharacters (U+FDD0..U+FDEF, U+xFFFE, U+xFFFF) either, which sd-bus refuses
         * too: one in a USB model string failed every GetManagedObjects reply. */
        if (n == 0 || (cp >= 0xfdd0 && cp <= 0xfdef) || (cp & 0xfffe) == 0xfffe)
                return false;
        *ret_len = n;
        return true;
}

size_t utf8_char_length(const char *s, size_t len)
{
        uint32_t cp;

        return decode((const unsigned char *) s, len, &cp);
}

bool utf8_is_valid_n(const char *s, size_t len)
{
        size_t n;

        for (size_t i = 0; i < len; i += n)
                if (!utf8_valid_prefix((const unsigned char *) s + i, len - i, &n))
                        return false;
        return true;
}

bool utf8_is_valid(const char *s)
{
        return utf8_is_valid_n(s, strlen(s));
}

size_t utf8_escape_into(const char *buf, size_t len, char *out)
{
        const unsigned char *s = (const unsigned char *) buf;
        char *q = out;

        for (size_t i = 0; i < len;) {
                size_t n;
                if (utf8_valid_prefix(s + i, len - i, &n)) {
                        memcpy(q, s + i, n);
                        q += n;
                        i += n;
                } else {
                        q += sprintf(q, "\\x%02x", s[i]);
                        i++;
                }
        }
        *q = 0;
        return (size_t) (q - out);
}
