/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>

#include "common/util.h"
#include "sysfs/values.h"

int parse_dev(const char *v, unsigned *ret_major, unsigned *ret_minor)
{
        const char *colon = v ? strchr(v, ':') : NULL;
        _cleanup_(freep) char *maj_s = NULL;
        uint64_t maj, min;

        if (!colon)
                return -EBADMSG;
        maj_s = strndup(v, (size_t) (colon - v));
        if (!maj_s)
                return -ENOMEM;
        if (parse_u64(maj_s, &maj) < 0 || parse_u64(colon + 1, &min) < 0 || maj > UINT32_MAX ||
            min > UINT32_MAX)
                return -EBADMSG;
        *ret_major = (unsigned) maj;
        *ret_minor = (unsigned) min;
        return 0;
}

uint64_t sectors_to_bytes(uint64_t sectors)
{
        return sectors > UINT64_MAX / 512 ? UINT64_MAX : sectors * 512;
}

int parse_scheduler(const char *v, char ***ret_all, char **ret_active)
{
        _cleanup_(strv_freep) char **all = NULL;
        _cleanup_(freep) char *copy = NULL;
        char *tok, *save = NULL, *active_copy;
        const char *active = NULL;
        size_t n = 0;
        int r;

        if (!v)
                return -EBADMSG;
        copy = strdup(v);
        if (!copy)
                return -ENOMEM;
        for (tok = strtok_r(copy, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
                size_t l = strlen(tok);
                bool bracketed = l >= 2 && tok[0] == '[' && tok[l - 1] == ']';
                if (bracketed) {
                        tok[l - 1] = 0;
                        tok++;
                }
                if (!*tok)
                        continue; /* "[]" names nothing */
                r = strv_extend(&all, &n, tok);
                if (r < 0)
                        return r;
                if (bracketed && !active)
                        active = all[n - 1];
        }
        /* A kernel with one scheduler shows it without brackets. */
        if (!active && n == 1)
                active = all[0];
        if (!all) {
                all = calloc(1, sizeof(char *));
                if (!all)
                        return -ENOMEM;
        }
        active_copy = strdup(strempty(active));
        if (!active_copy)
                return -ENOMEM;
        if (ret_active)
                *ret_active = active_copy;
        else
                free(active_copy);
        if (ret_all)
                *ret_all = TAKE_PTR(all);
        return 0;
}

int parse_uevent_file(const char *v, char ***ret_pairs)
{
        _cleanup_(strv_freep) char **pairs = NULL;
        size_t n = 0;
        int r;

        pairs = calloc(1, sizeof(char *));
        if (!pairs)
                return -ENOMEM;
        for (const char *line = v; *line;) {
                size_t l = strcspn(line, "\n");
                const char *eq = memchr(line, '=', l);

                /* A key again replaces its value, as in the events: the a{ss} must be a map. */
                char **again = NULL;
                for (char **p = pairs; eq && p[0] && p[1] && !again; p += 2)
                        if (strlen(p[0]) == (size_t) (eq - line) && memcmp(p[0], line, (size_t) (eq - line)) == 0)
                                again = p;
                if (again) {
                        char *value = strndup(eq + 1, (size_t) (line + l - eq - 1));
                        if (!value)
                                return -ENOMEM;
                        free(again[1]);
                        again[1] = value;
                } else if (eq && eq > line) {
                        r = strv_consume(&pairs, &n, strndup(line, (size_t) (eq - line)));
                        if (r < 0)
                                return r;
                        r = strv_consume(&pairs, &n, strndup(eq + 1, (size_t) (line + l - eq - 1)));
                        if (r < 0)
                                return r;
                }
                line += l + (line[l] == '\n');
        }
        *ret_pairs = TAKE_PTR(pairs);
        return 0;
}

int uevent_file_get(const char *v, const char *key, char **ret)
{
        _cleanup_(strv_freep) char **pairs = NULL;
        int r;

        r = parse_uevent_file(v, &pairs);
        if (r < 0)
                return r;
        for (char **p = pairs; p[0] && p[1]; p += 2)
                if (streq(p[0], key)) {
                        char *x = strdup(p[1]);
                        if (!x)
                                return -ENOMEM;
                        *ret = x;
                        return 0;
                }
        return -ENOENT;
}

int parse_link_names(const char *v, LinkNameLookup lookup, void *userdata, char ***ret_paths)
{
        const char separator[] = {LINK_NAMES_SEPARATOR, 0};
        _cleanup_(strv_freep) char **paths = NULL;
        size_t n = 0;
        int r;

        paths = calloc(1, sizeof(char *));
        if (!paths)
                return -ENOMEM;
        for (const char *p = v; *p;) {
                size_t l = strcspn(p, separator);

                if (l > 0) {
                        _cleanup_(freep) char *name = strndup(p, l);
                        const char *path;

                        if (!name)
                                return -ENOMEM;
                        path = lookup(name, userdata);
                        if (path && (r = strv_extend(&paths, &n, path)) < 0)
                                return r;
                }
                p += l + (p[l] != 0);
        }
        *ret_paths = TAKE_PTR(paths);
        return 0;
}
