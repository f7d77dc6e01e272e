/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer entry point for the reading of holders/ and slaves/ (dm, md, bcache stacking): a link
 * directory's entries become one value (sysfs_link_names_join(), what sysfs_read_source() gives for
 * "holders/"), and that value the published Holders/Slaves (parse_link_names(), with the model's
 * lookup of each name).  The one thing that must hold whatever the names: each entry of the
 * directory is looked up once, as itself, in the directory's order, and the relations are exactly
 * the published ones among them.  A name that came back cut in two, or glued to its neighbour,
 * would relate a device to ones it is not stacked on.
 *
 * The input is the directory's entries: names separated by NUL or '/', the two bytes a name cannot
 * hold (empty ones and repeats left out, as a directory has them).  It is also read as a value
 * itself (up to its first NUL), as a hand-made one could be: no crash, and only what it names.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/util.h"
#include "fuzz.h"
#include "sysfs/read.h"
#include "sysfs/sysfs.h"
#include "sysfs/values.h"

/* Names are at most NAME_MAX, a directory holds a few hundred at most: more only slows it down. */
#define INPUT_MAX 8192
#define PATH_PREFIX "/org/blkmodel1/block/"

/* A model: every name, or those of an even byte sum, is a published device at PATH_PREFIX<name>. */
typedef struct Model {
        bool all;
        char **asked; /* the names looked up, in turn */
        size_t n_asked;
        char *path; /* the last lookup's answer: parse_link_names() copies it before the next */
} Model;

static bool published(const Model *m, const char *name)
{
        unsigned sum = 0;

        for (const char *c = name; *c; c++)
                sum += (unsigned char) *c;
        return m->all || sum % 2 == 0;
}

static char *path_of(const char *name)
{
        char *p = malloc(strlen(PATH_PREFIX) + strlen(name) + 1);

        REQUIRE(p);
        return strcat(strcpy(p, PATH_PREFIX), name);
}

static const char *lookup(const char *name, void *userdata)
{
        Model *m = userdata;

        REQUIRE(strv_extend(&m->asked, &m->n_asked, name) == 0);
        free(m->path);
        m->path = published(m, name) ? path_of(name) : NULL;
        return m->path;
}

static void model_done(Model *m)
{
        m->asked = strv_free(m->asked);
        m->n_asked = 0;
        m->path = mfree(m->path);
}

static int entry_cmp(const void *a, const void *b)
{
        return strcmp(((const SysfsEntry *) a)->name, ((const SysfsEntry *) b)->name);
}

/* The directory the input describes, sorted and each name once, as sysfs_list() gives it. */
static SysfsEntry *entries_of(char *buf, size_t size, size_t *ret_n)
{
        SysfsEntry *e = calloc(size / 2 + 1, sizeof(SysfsEntry));
        size_t n = 0, k = 0;

        REQUIRE(e);
        for (size_t i = 0; i < size; i++)
                if (buf[i] == '/')
                        buf[i] = 0;
        for (size_t i = 0; i < size; i += strlen(buf + i) + 1)
                if (buf[i])
                        e[n++] = (SysfsEntry){.name = buf + i, .type = SYSFS_ENTRY_LINK};
        if (n > 1)
                qsort(e, n, sizeof(SysfsEntry), entry_cmp);
        for (size_t i = 0; i < n; i++)
                if (k == 0 || !streq(e[k - 1].name, e[i].name))
                        e[k++] = e[i];
        *ret_n = k;
        return e;
}

static void check_directory(const SysfsEntry *e, size_t n, bool all)
{
        _cleanup_(freep) char *value = sysfs_link_names_join(e, n);
        _cleanup_(strv_freep) char **paths = NULL;
        Model m = {.all = all};
        size_t k = 0;

        REQUIRE(value);
        REQUIRE(n > 0 || streq(value, ""));
        REQUIRE(parse_link_names(value, lookup, &m, &paths) == 0);
        REQUIRE(paths);
        /* Each entry asked for once, as itself, in the directory's order. */
        REQUIRE(m.n_asked == n);
        for (size_t i = 0; i < n; i++)
                REQUIRE(streq(m.asked[i], e[i].name));
        /* Exactly the published ones, in that order. */
        for (size_t i = 0; i < n; i++) {
                if (!published(&m, e[i].name))
                        continue;
                _cleanup_(freep) char *want = path_of(e[i].name);
                REQUIRE(paths[k] && streq(paths[k], want));
                k++;
        }
        REQUIRE(!paths[k]);
        model_done(&m);
}

/* A value no listing made: whatever it says, no crash, and only names that are in it. */
static void check_value(const char *value)
{
        const char separator[] = {LINK_NAMES_SEPARATOR, 0};
        _cleanup_(strv_freep) char **paths = NULL;
        Model m = {.all = false};
        size_t k = 0;

        REQUIRE(parse_link_names(value, lookup, &m, &paths) == 0);
        REQUIRE(paths);
        for (size_t i = 0; i < m.n_asked; i++) {
                const char *name = m.asked[i];

                REQUIRE(*name && !strpbrk(name, separator));
                REQUIRE(strstr(value, name));
                if (!published(&m, name))
                        continue;
                _cleanup_(freep) char *want = path_of(name);
                REQUIRE(paths[k] && streq(paths[k], want));
                k++;
        }
        REQUIRE(!paths[k]);
        model_done(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_(freep) char *buf = NULL;
        _cleanup_(freep) SysfsEntry *e = NULL;
        size_t n;

        if (size > INPUT_MAX)
                return 0;
        buf = malloc(size + 1);
        REQUIRE(buf);
        memcpy(buf, data, size);
        buf[size] = 0;

        check_value(buf);
        e = entries_of(buf, size, &n);
        check_directory(e, n, true);
        check_directory(e, n, false);
        return 0;
}
