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

static const char *value_file(const void *v)
{
        return ((const ObjDirValue *) v)->file;
}

/* The value read of relpath, by the set of a large object's values; 0 not read, -ENOMEM the set
 * could not be made (then search).  Without the set, a reading of N files (each new) would compare
 * N²/2 names; and it gives the value itself, not only that there is one: a reply asking in another
 * order than the files were read (a listing newest first) would search N times. */
static int objdir_held(ObjDir *d, const char *relpath, const ObjDirValue **ret)
{
        if (hashmap_size(&d->files) == 0) {
                hashmap_init(&d->files, value_file);
                for (size_t i = 0; i < d->n_values; i++)
                        if (hashmap_put(&d->files, &d->values[i]) == -ENOMEM) {
                                hashmap_deinit(&d->files);
                                return -ENOMEM;
                        }
        }
        *ret = hashmap_get(&d->files, relpath);
        return 0;
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
 * large object's set of values is asked only when those few steps found nothing. */
static const ObjDirValue *objdir_find(ObjDir *d, const char *relpath)
{
        const ObjDirValue *v = objdir_scan(d, relpath, MIN(d->n_values, OBJDIR_NEAR));

        if (v || d->n_values <= OBJDIR_NEAR)
                return v;
        if (d->n_values <= OBJDIR_SCAN_MAX || objdir_held(d, relpath, &v) < 0)
                return objdir_scan(d, relpath, d->n_values);
        if (v)
                d->next = (size_t) (v - d->values) + 1;
        return v;
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
        const ObjDirValue *before = d->values;
        if (GREEDY_REALLOC(d->values, d->n_allocated, d->n_values + 1) < 0)
                return -ENOMEM;
        if (d->values != before)
                hashmap_deinit(&d->files); /* its entries point into the array that moved */
        d->values[d->n_values++] = (ObjDirValue){
                        .file = TAKE_PTR(file),
                        .value = r >= 0 ? value : NULL,
                        .error = r,
        };
        /* Kept whole, or rebuilt by the next lookup that needs it. */
        if (hashmap_size(&d->files) > 0 && hashmap_put(&d->files, &d->values[d->n_values - 1]) < 0)
                hashmap_deinit(&d->files);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(value);
        return 0;
}

/* objdir_lookup(), noting a read that learnt nothing (resource_error). */
static int objdir_get(ObjDir *d, const char *relpath, const char **ret)
{
        int r = objdir_lookup(d, relpath, ret);

        if (r < 0 && errno_is_resource(r) && d->resource_error == 0)
                d->resource_error = r;
        return r;
}

int objdir_read(ObjDir *d, const char *relpath, const char **ret)
{
        int r = objdir_get(d, relpath, ret);

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
        return a->flags & ATTR_VOLATILE ? objdir_get(d, rel, ret) : objdir_read(d, rel, ret);
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
