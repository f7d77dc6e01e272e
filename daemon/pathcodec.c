/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>

#include "pathcodec.h"
#include "common/util.h"

#define MEMBER_NAME_MAX 255

static bool is_alnum(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

static int unhex(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -EINVAL;
}

char *objpath_append(const char *parent, const char *name)
{
        static const char hex[] = "0123456789abcdef";
        size_t lp = strlen(parent), ln = strlen(name);
        char *p, *q;

        p = malloc(lp + 1 + (ln ? ln * 3 : 1) + 1);
        if (!p)
                return NULL;
        memcpy(p, parent, lp);
        q = p + lp;
        /* The root "/" already ends in a slash. */
        if (!(lp == 1 && parent[0] == '/'))
                *q++ = '/';

        if (ln == 0)
                *q++ = '_';
        for (size_t i = 0; i < ln; i++) {
                unsigned char c = (unsigned char) name[i];
                if (is_alnum((char) c) && !(i == 0 && is_digit((char) c)))
                        *q++ = (char) c;
                else {
                        *q++ = '_';
                        *q++ = hex[c >> 4];
                        *q++ = hex[c & 15];
                }
        }
        *q = 0;
        return p;
}

int objpath_decode_element(const char *element, size_t len, char **ret)
{
        char *s, *q;

        if (len == 1 && element[0] == '_') {
                s = strdup("");
                if (!s)
                        return -ENOMEM;
                *ret = s;
                return 0;
        }
        if (len == 0)
                return -EINVAL;

        s = malloc(len + 1);
        if (!s)
                return -ENOMEM;
        q = s;
        for (size_t i = 0; i < len; i++) {
                if (element[i] == '_') {
                        int a, b;
                        if (i + 2 >= len) {
                                free(s);
                                return -EINVAL;
                        }
                        a = unhex(element[i + 1]);
                        b = unhex(element[i + 2]);
                        /* A NUL or '/' can never be part of a sysfs name. */
                        if (a < 0 || b < 0 || (a == 0 && b == 0) || (a << 4 | b) == '/') {
                                free(s);
                                return -EINVAL;
                        }
                        *q++ = (char) (a << 4 | b);
                        i += 2;
                } else if (is_alnum(element[i]))
                        *q++ = element[i];
                else {
                        free(s);
                        return -EINVAL;
                }
        }
        *q = 0;
        *ret = s;
        return 0;
}

bool member_name_is_valid(const char *name)
{
        size_t n = strlen(name);

        if (n == 0 || n > MEMBER_NAME_MAX || is_digit(name[0]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!is_alnum(name[i]) && name[i] != '_')
                        return false;
        return true;
}

char *member_name_from_file(const char *name)
{
        size_t n = strlen(name), extra;
        char *m, *q;

        if (n == 0)
                return strdup("_");
        extra = is_digit(name[0]) ? 1 : 0;
        if (n + extra > MEMBER_NAME_MAX)
                return NULL;
        m = malloc(n + extra + 1);
        if (!m)
                return NULL;
        q = m;
        if (extra)
                *q++ = '_';
        for (size_t i = 0; i < n; i++)
                *q++ = is_alnum(name[i]) || name[i] == '_' ? name[i] : '_';
        *q = 0;
        return m;
}
