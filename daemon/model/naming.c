/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <systemd/sd-bus.h>

#include "common/utf8.h"
#include "common/util.h"
#include "model/naming.h"

static bool is_alnum(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

int object_path_append(const char *parent, const char *name, char **ret)
{
        int r = sd_bus_path_encode(parent, name, ret);
        return r < 0 ? r : 0;
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

int member_name_from_file(const char *name, char **ret)
{
        size_t n = strlen(name), extra;
        char *m, *q;

        if (n == 0) {
                m = strdup("_");
                if (!m)
                        return -ENOMEM;
                *ret = m;
                return 0;
        }
        extra = is_digit(name[0]) ? 1 : 0;
        m = malloc(n + extra + 1);
        if (!m)
                return -ENOMEM;
        q = m;
        if (extra)
                *q++ = '_';
        for (size_t i = 0, k; i < n; i += k) {
                k = 1;
                if (is_alnum(name[i]) || name[i] == '_')
                        *q++ = name[i];
                else {
                        /* One "_" a character (SPEC): a multibyte one too, and each byte that is
                         * none. */
                        k = utf8_char_length(name + i, n - i) ?: 1;
                        *q++ = '_';
                }
        }
        *q = 0;
        if ((size_t) (q - m) > MEMBER_NAME_MAX) {
                free(m);
                return -ENAMETOOLONG;
        }
        *ret = m;
        return 0;
}
