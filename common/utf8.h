/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above
 * U+10FFFF, no NUL, and no Unicode noncharacters.  sd-bus refuses to append
 * anything else to a message (its utf8_is_valid()).
 */

/* Does s (len bytes) start with one valid sequence?  Its length in *ret_len. */
bool utf8_valid_prefix(const unsigned char *s, size_t len, size_t *ret_len);
/* The length of the character at s (len bytes at most), noncharacters too; 0 where the bytes are
 * no well-formed sequence. */
size_t utf8_char_length(const char *s, size_t len);
/* Are the n bytes at s valid UTF-8 throughout? */
bool utf8_is_valid_n(const char *s, size_t n);
/* The whole NUL-terminated string. */
bool utf8_is_valid(const char *s);
/* The len bytes at buf as D-Bus can carry them: each byte outside a valid sequence (NUL too) as
 * \\xNN.  out holds len * 4 + 1; returns the length written, without the NUL it ends with. */
size_t utf8_escape_into(const char *buf, size_t len, char *out);

/* An ASCII control character (C0 or DEL): text that no log line, XML attribute or udev rule should
 * carry as it is.  Not iscntrl(), which follows the locale. */
static inline bool char_is_control(char c)
{
        return (unsigned char) c < 0x20 || c == 0x7f;
}
