/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "sysfs/objdir.h"
#include "common/util.h"
#include "sysfs/read.h"

void objdir_values_free(ObjDirValue *values, size_t n, size_t n_borrowed)
{
        for (size_t i = n_borrowed; i < n; i++) {
                free(values[i].file);
                free(values[i].value);
        }
        free(values);
}

/* Past this many values, a file not read yet is looked up in d->files, not searched for... */
#define OBJDIR_SCAN_MAX 64
/* ...once it is not among the next few after the last one found. */
#define OBJDIR_NEAR ((size_t) 4)

static void objdir_forget(ObjDir *d)
{
        hashmap_deinit(&d->files);
        objdir_values_free(d->values, d->n_values, d->n_borrowed);
        d->values = NULL;
        d->n_values = d->n_allocated = d->n_borrowed = d->next = 0;
}

void objdir_done(ObjDir *d)
{
        if (d->fd >= 0)
                (void) close(d->fd);
        d->fd = -1;
        objdir_forget(d);
}

int objdir_fd(ObjDir *d)
{
        if (d->fd == -1)
                d->fd = sysfs_open_dir(d->sysfs, d->k->devpath);
        return d->fd;
}

/* Could relpath have been read?  Only a large object keeps the set that says so: without it, a
 * reading of N files (each new) would compare N²/2 names. */
static bool objdir_may_hold(ObjDir *d, const char *relpath)
{
        if (d->n_values <= OBJDIR_SCAN_MAX)
                return true;
        if (hashmap_size(&d->files) == 0) {
                hashmap_init(&d->files, hashmap_key_self);
                for (size_t i = 0; i < d->n_values; i++)
                        if (hashmap_put(&d->files, d->values[i].file) == -ENOMEM) {
                                hashmap_deinit(&d->files);
                                return true; /* searched instead */
                        }
        }
        return hashmap_get(&d->files, relpath);
}

/* The value read of relpath among the steps values from where the last lookup found one. */
static const ObjDirValue *objdir_scan(ObjDir *d, const char *relpath, size_t steps)
{
        for (size_t n = 0, i = d->next; n < steps; n++, i++) {
                if (i >= d->n_values)
                        i = 0;
                if (streq(d->values[i].file, relpath)) {
                        d->next = i + 1;
                        return &d->values[i];
                }
        }
        return NULL;
}

/* The value read of relpath, if any.  A reply reads an object's files in the order they were read
 * ahead (sysfs/prefetch.h): looking after the last one found first makes that one step each, and a
 * large object's set of names is asked only when those few steps found nothing. */
static const ObjDirValue *objdir_find(ObjDir *d, const char *relpath)
{
        const ObjDirValue *v = objdir_scan(d, relpath, MIN(d->n_values, OBJDIR_NEAR));

        if (v || d->n_values <= OBJDIR_NEAR || !objdir_may_hold(d, relpath))
                return v;
        return objdir_scan(d, relpath, d->n_values);
}

static int objdir_lookup(ObjDir *d, const char *relpath, const char **ret)
{
        _cleanup_(freep) char *file = NULL, *value = NULL;
        const ObjDirValue *v;
        int fd, r;

        v = objdir_find(d, relpath);
        if (v) {
                if (!v->value)
                        return v->error;
                *ret = v->value;
                return 0;
        }

        fd = objdir_fd(d);
        if (fd < 0)
                return fd;
        r = sysfs_read_source(fd, relpath, d->sysfs->kernfs, &value);
        if (r == -ENOMEM)
                return r;
        file = strdup(relpath);
        if (!file)
                return -ENOMEM;
        if (GREEDY_REALLOC(d->values, d->n_allocated, d->n_values + 1) < 0)
                return -ENOMEM;
        d->values[d->n_values++] = (ObjDirValue){
                        .file = TAKE_PTR(file),
                        .value = r >= 0 ? value : NULL,
                        .error = r,
        };
        /* Kept whole, or rebuilt by the next lookup that needs it. */
        if (hashmap_size(&d->files) > 0 && hashmap_put(&d->files, d->values[d->n_values - 1].file) < 0)
                hashmap_deinit(&d->files);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(value);
        return 0;
}

int objdir_read(ObjDir *d, const char *relpath, const char **ret)
{
        int r = objdir_lookup(d, relpath, ret);

        d->mark = fnv1a(relpath, strlen(relpath) + 1, d->mark);
        d->mark = r >= 0 ? fnv1a(*ret, strlen(*ret) + 1, d->mark) : fnv1a(&r, sizeof(r), d->mark);
        return r;
}

int objdir_read_attr(ObjDir *d, const Iface *iface, const Attr *a, const char **ret)
{
        char buf[IFACE_RELPATH_MAX];
        const char *rel = iface_attr_relpath_in(iface, a, buf);

        if (!rel)
                return -ENAMETOOLONG;
        /* What moves by itself (stat) would make no two readings alike: it is left out of the mark. */
        return a->flags & ATTR_VOLATILE ? objdir_lookup(d, rel, ret) : objdir_read(d, rel, ret);
}

bool objdir_has(ObjDir *d, const char *relpath)
{
        return objdir_find(d, relpath) != NULL;
}

const char *objdir_value(ObjDir *d, const char *relpath)
{
        const ObjDirValue *v = objdir_find(d, relpath);
        return v ? v->value : NULL;
}

bool objdir_has_attr(ObjDir *d, const Iface *iface, const Attr *a)
{
        char buf[IFACE_RELPATH_MAX];
        const char *rel = iface_attr_relpath_in(iface, a, buf);

        return rel && objdir_has(d, rel);
}

bool objdir_attr_gone(ObjDir *d, const Iface *iface, const Attr *a)
{
        char buf[IFACE_RELPATH_MAX];
        const char *rel = iface_attr_relpath_in(iface, a, buf);
        int fd = objdir_fd(d), r;

        if (!rel || fd < 0)
                return false;
        r = sysfs_file_mode(fd, rel);
        return r == -ENOENT || r == -ENOTDIR;
}
