/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <fcntl.h>

#include "base/pool.h"
#include "common/util.h"
#include "sysfs/prefetch.h"
#include "sysfs/read-many.h"
#include "sysfs/read.h"

typedef struct PrefetchObject {
        const char *devpath;
        /* After prefetch_read(): 0 if the directory opened, else negative errno.  While it reads, the
         * directory's descriptor; closed once its files are read: GetManagedObjects' batches in flight
         * held one an object, hundreds, and the loop appending the reply then ran out (EMFILE under a
         * limit where each object's GetAll read).  d opens it again if it reads more. */
        int fd;
        ObjDirValue *values;
        size_t n_values, n_allocated;
        PrefetchMode *modes;
        size_t n_modes, n_modes_allocated;
} PrefetchObject;

struct Prefetch {
        Sysfs root; /* the root fd is a copy: a Rescan may reopen the original meanwhile */
        PrefetchObject *objects;
        size_t n_objects, n_allocated;
        Pool strings; /* every devpath, file name and value */
        bool read;    /* prefetch_read() ran (a cancelled work item never does) */
};

int prefetch_new(const Sysfs *s, Prefetch **ret)
{
        Prefetch *b = calloc(1, sizeof(Prefetch));

        if (!b)
                return -ENOMEM;
        b->root.kernfs = s->kernfs;
        b->root.root_fd = fcntl(s->root_fd, F_DUPFD_CLOEXEC, 3);
        if (b->root.root_fd < 0) {
                int r = -errno;
                free(b);
                return r;
        }
        *ret = b;
        return 0;
}

Prefetch *prefetch_free(Prefetch *b)
{
        if (!b)
                return NULL;
        for (size_t i = 0; i < b->n_objects; i++) {
                PrefetchObject *o = &b->objects[i];
                free(o->values); /* their strings are the pool's */
                free(o->modes); /* its directory: closed by prefetch_read() */
        }
        free(b->objects);
        pool_free(&b->strings);
        (void) close(b->root.root_fd);
        free(b);
        return NULL;
}

int prefetch_add_object(Prefetch *b, const char *devpath)
{
        char *copy;

        if (GREEDY_REALLOC(b->objects, b->n_allocated, b->n_objects + 1) < 0)
                return -ENOMEM;
        copy = pool_strdup(&b->strings, devpath);
        if (!copy)
                return -ENOMEM;
        b->objects[b->n_objects++] = (PrefetchObject){.devpath = copy, .fd = -EBADF};
        return 0;
}

int prefetch_add_attr(Prefetch *b, const Iface *iface, const Attr *a)
{
        char buf[IFACE_RELPATH_MAX];
        const char *rel = iface_attr_relpath_in(iface, a, buf);

        return rel ? prefetch_add_file(b, rel) : -ENAMETOOLONG;
}

int prefetch_add_file(Prefetch *b, const char *relpath)
{
        PrefetchObject *o;
        char *copy;

        assert(b->n_objects > 0);
        o = &b->objects[b->n_objects - 1];
        if (GREEDY_REALLOC(o->values, o->n_allocated, o->n_values + 1) < 0)
                return -ENOMEM;
        copy = pool_strdup(&b->strings, relpath);
        if (!copy)
                return -ENOMEM;
        o->values[o->n_values++] = (ObjDirValue){.file = copy, .error = -ENODATA};
        return 0;
}

int prefetch_add_file_once(Prefetch *b, const char *relpath)
{
        const PrefetchObject *o;

        assert(b->n_objects > 0);
        o = &b->objects[b->n_objects - 1];
        for (size_t j = 0; j < o->n_values; j++)
                if (streq(o->values[j].file, relpath))
                        return 0;
        return prefetch_add_file(b, relpath);
}

int prefetch_add_mode(Prefetch *b, const char *relpath)
{
        PrefetchObject *o;
        char *copy;

        assert(b->n_objects > 0);
        o = &b->objects[b->n_objects - 1];
        if (GREEDY_REALLOC(o->modes, o->n_modes_allocated, o->n_modes + 1) < 0)
                return -ENOMEM;
        copy = pool_strdup(&b->strings, relpath);
        if (!copy)
                return -ENOMEM;
        o->modes[o->n_modes++] = (PrefetchMode){.file = copy, .mode = -ENODATA};
        return 0;
}

int prefetch_add_mode_attr(Prefetch *b, const Iface *iface, const Attr *a)
{
        char buf[IFACE_RELPATH_MAX];
        const char *rel = iface_attr_relpath_in(iface, a, buf);

        return rel ? prefetch_add_mode(b, rel) : -ENAMETOOLONG;
}

const PrefetchMode *prefetch_modes(const Prefetch *b, size_t i, size_t *ret_n)
{
        assert(i < b->n_objects);
        *ret_n = b->objects[i].n_modes;
        return b->objects[i].modes;
}

size_t prefetch_n_objects(const Prefetch *b)
{
        return b->n_objects;
}

static char *pool_dup(const char *s, size_t n, void *pool)
{
        return pool_strndup(pool, s, n);
}

/* The files of every object whose directory opened, at once (sysfs/read-many.h); -EOPNOTSUPP
 * when it cannot be done that way or does not pay here, with nothing read. */
static int read_all_at_once(Prefetch *b)
{
        _cleanup_(freep) int *dirfds = NULL;
        _cleanup_(freep) ObjDirValue **values = NULL;
        size_t n = 0;

        if (!b->root.kernfs || !sysfs_read_many_pays())
                return -EOPNOTSUPP;
        for (size_t i = 0; i < b->n_objects; i++)
                n += b->objects[i].fd >= 0 ? b->objects[i].n_values : 0;
        dirfds = malloc(n * sizeof(int));
        values = malloc(n * sizeof(ObjDirValue *));
        if (!dirfds || !values)
                return -EOPNOTSUPP;
        n = 0;
        for (size_t i = 0; i < b->n_objects; i++)
                for (size_t j = 0; b->objects[i].fd >= 0 && j < b->objects[i].n_values; j++) {
                        dirfds[n] = b->objects[i].fd;
                        values[n++] = &b->objects[i].values[j];
                }
        return sysfs_read_many(dirfds, values, n, pool_dup, &b->strings);
}

/* Object o's files, one by one, in its open directory. */
static void read_object(Prefetch *b, PrefetchObject *o)
{
        for (size_t j = 0; o->fd >= 0 && j < o->n_values; j++) {
                ObjDirValue *v = &o->values[j];
                v->error = sysfs_read_source_dup(o->fd, v->file, b->root.kernfs, pool_dup, &b->strings,
                                                 &v->value);
        }
}

void prefetch_read(Prefetch *b)
{
        /* All at once needs every directory open together; file by file, one directory at a time. */
        bool at_once = b->root.kernfs && sysfs_read_many_pays();

        for (size_t i = 0; i < b->n_objects; i++) {
                PrefetchObject *o = &b->objects[i];

                if (o->n_values == 0 && o->n_modes == 0)
                        continue;
                o->fd = sysfs_open_dir(&b->root, o->devpath);
                for (size_t j = 0; o->fd < 0 && j < o->n_values; j++)
                        o->values[j].error = o->fd;
                for (size_t j = 0; j < o->n_modes; j++)
                        o->modes[j].mode = o->fd < 0 ? o->fd : sysfs_file_mode(o->fd, o->modes[j].file);
                if (!at_once && o->fd >= 0) {
                        read_object(b, o);
                        (void) close(o->fd);
                        o->fd = 0;
                }
        }
        if (at_once && read_all_at_once(b) < 0)
                for (size_t i = 0; i < b->n_objects; i++)
                        read_object(b, &b->objects[i]);
        for (size_t i = 0; at_once && i < b->n_objects; i++) {
                PrefetchObject *o = &b->objects[i];

                if (o->fd >= 0) {
                        (void) close(o->fd);
                        o->fd = 0;
                }
        }
        b->read = true;
}

void prefetch_hand_over(Prefetch *b, size_t i, ObjDir *d)
{
        PrefetchObject *o;

        assert(i < b->n_objects);
        assert(d->fd < 0 && d->n_values == 0);
        if (!b->read)
                return; /* d reads for itself */
        o = &b->objects[i];
        /* A directory that would not open is tried again by whatever reads next: as without this.
         * Its files' errors stay here too: the directory may be back by now (a device gone and
         * another of its name come, its remove not applied yet), and d, looking for itself, then
         * finds the files there.  Handed over, every value read "" (a Size of 0) while no file was
         * gone from a directory that was there: a change the reading announced, and the reply sent. */
        if (o->fd < 0)
                return;
        /* A file the worker could not open for want of descriptors or memory (the batches in flight
         * hold theirs): that says nothing of it, and the loop may well read it now.  Handed over, its
         * error would fail the reply (ObjDir.resource_error) or void the reading: d reads for itself. */
        for (size_t j = 0; j < o->n_values; j++)
                if (!o->values[j].value && errno_is_resource(o->values[j].error))
                        return;
        d->values = TAKE_PTR(o->values);
        d->n_values = d->n_borrowed = o->n_values;
        d->n_allocated = o->n_allocated;
        o->n_values = o->n_allocated = 0;
}
