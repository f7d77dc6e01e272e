/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdint.h>
#include <stdio.h>

#include "common/util.h"

char **strv_free(char **l)
{
        if (!l)
                return NULL;
        for (char **i = l; *i; i++)
                free(*i);
        free(l);
        return NULL;
}

size_t strv_length(char *const *l)
{
        size_t n = 0;
        if (l)
                while (l[n])
                        n++;
        return n;
}

int greedy_realloc(void **p, size_t *allocated, size_t need, size_t size)
{
        size_t n;
        void *t;

        if (need <= *allocated)
                return 0;
        if (need > SIZE_MAX / 2 / size)
                return -ENOMEM;
        n = MAX(need * 2, (size_t) 16);
        t = reallocarray(*p, n, size);
        if (!t)
                return -ENOMEM;
        *p = t;
        *allocated = n;
        return 0;
}

int strv_consume(char ***l, size_t *n, char *s)
{
        char **t;

        if (!s)
                return -ENOMEM;
        t = realloc(*l, sizeof(char *) * (*n + 2));
        if (!t) {
                free(s);
                return -ENOMEM;
        }
        t[(*n)++] = s;
        t[*n] = NULL;
        *l = t;
        return 0;
}

bool strv_contains(char *const *l, const char *s)
{
        for (; l && *l; l++)
                if (streq(*l, s))
                        return true;
        return false;
}

int strv_extend(char ***l, size_t *n, const char *s)
{
        return strv_consume(l, n, strdup(s));
}

char *path_join(const char *a, const char *b)
{
        char *p;

        if (!a || !*a)
                return strdup(b);
        if (asprintf(&p, "%s%s%s", a, a[strlen(a) - 1] == '/' ? "" : "/", b[0] == '/' ? b + 1 : b) < 0)
                return NULL;
        return p;
}

char *path_squeeze_slashes(char *p)
{
        char *to = p;

        for (const char *from = p; *from; from++)
                if (*from != '/' || to == p || to[-1] != '/')
                        *to++ = *from;
        if (to - p > 1 && to[-1] == '/')
                to--;
        *to = 0;
        return p;
}

static char *copy_replacing(const char *s, char from, char to)
{
        char *copy = strdup(s);

        for (char *c = copy; c && *c; c++)
                if (*c == from)
                        *c = to;
        return copy;
}

char *devnode_name_of(const char *kernel_name)
{
        return copy_replacing(kernel_name, '!', '/');
}

char *kernel_name_of(const char *devnode_name)
{
        return copy_replacing(devnode_name, '/', '!');
}

int parse_u64(const char *v, uint64_t *ret)
{
        unsigned long long x;
        char *end;

        if (!v || v[0] < '0' || v[0] > '9')
                return -EBADMSG;
        errno = 0;
        x = strtoull(v, &end, 10);
        if (*end != 0)
                return -EBADMSG;
        if (errno == ERANGE)
                return -ERANGE;
        if (errno != 0)
                return -EBADMSG;
        *ret = x;
        return 0;
}
