/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "sysfs/objdir.h"
#include "common/util.h"

void objdir_values_free(ObjDirValue *values, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(values[i].file);
                free(values[i].value);
        }
        free(values);
}

static void objdir_forget(ObjDir *d)
{
        objdir_values_free(d->values, d->n_values);
        d->values = NULL;
        d->n_values = 0;
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

int objdir_read(ObjDir *d, const char *relpath, const char **ret)
{
        _cleanup_(freep) char *file = NULL, *value = NULL;
        ObjDirValue *t;
        int fd, r;

        for (size_t i = 0; i < d->n_values; i++)
                if (streq(d->values[i].file, relpath)) {
                        if (!d->values[i].value)
                                return d->values[i].error;
                        *ret = d->values[i].value;
                        return 0;
                }

        fd = objdir_fd(d);
        if (fd < 0)
                return fd;
        r = sysfs_read_attr(fd, relpath, d->sysfs->kernfs, &value);
        if (r == -ENOMEM)
                return r;
        /* Each checked before the next: a realloc that moved the array must be kept. */
        file = strdup(relpath);
        if (!file)
                return -ENOMEM;
        t = realloc(d->values, sizeof(ObjDirValue) * (d->n_values + 1));
        if (!t)
                return -ENOMEM;
        d->values = t;
        d->values[d->n_values++] = (ObjDirValue){
                        .file = TAKE_PTR(file),
                        .value = r >= 0 ? value : NULL,
                        .error = r,
        };
        if (r < 0)
                return r;
        *ret = TAKE_PTR(value);
        return 0;
}

int objdir_read_attr(ObjDir *d, const Iface *iface, const Attr *a, const char **ret)
{
        _cleanup_(freep) char *rel = NULL;

        if (!iface->attr_dir)
                return objdir_read(d, a->file, ret);
        rel = iface_attr_relpath(iface, a);
        if (!rel)
                return -ENOMEM;
        return objdir_read(d, rel, ret);
}
