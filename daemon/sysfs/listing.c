/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "sysfs/listing.h"

static const char *const disk_handles[] = {"queue", "holders", "slaves", "mq", NULL};
static const char *const partition_handles[] = {"holders", NULL};
static const char *const queue_handles[] = {"iosched", NULL};

bool listing_kind_handles(KtypeId id, const char *dir)
{
        const char *const *l = id == KTYPE_DISK        ? disk_handles
                               : id == KTYPE_PARTITION ? partition_handles
                               : id == KTYPE_QUEUE     ? queue_handles
                                                       : NULL;
        for (; l && *l; l++)
                if (streq(*l, dir))
                        return true;
        return false;
}

const SysfsEntry *listing_entry(const DirListing *l, const char *name)
{
        for (size_t i = 0; i < l->n_entries; i++)
                if (streq(l->entries[i].name, name))
                        return &l->entries[i];
        return NULL;
}

const DirListing *listing_subdir(const DirListing *l, const char *name)
{
        for (size_t i = 0; i < l->n_subdirs; i++)
                if (streq(l->subdirs[i].name, name))
                        return &l->subdirs[i];
        return NULL;
}

static bool has_file(const DirListing *l, const char *name)
{
        const SysfsEntry *e = listing_entry(l, name);
        return e && e->type == SYSFS_ENTRY_FILE;
}

bool listing_is_kobject(const DirListing *l)
{
        return has_file(l, "uevent") || has_file(l, "partition");
}

/* sysfs_list_alloc()'s allocator: a listing's entries live as long as the listing. */
static void *listing_alloc(size_t size, void *userdata)
{
        return pool_alloc(userdata, size);
}

void listing_done(DirListing *l)
{
        pool_free(&l->pool);
        *l = (DirListing){};
}

/* The kind of the kobject a subdirectory of a kind-id directory is known to be, or _KTYPE_MAX for
 * one that is a group, or (below a disk) a partition if its listing says it is a kobject. */
static KtypeId subdir_kind(KtypeId id, const char *name)
{
        if (id == KTYPE_DISK && streq(name, "queue"))
                return KTYPE_QUEUE;
        if (id == KTYPE_QUEUE && streq(name, "iosched"))
                return KTYPE_ELEVATOR;
        return _KTYPE_MAX;
}

static int list_dir(int dirfd, KtypeId id, bool deep, Pool *pool, DirListing *l);
static int list_subdirs(int dirfd, KtypeId id, bool deep, Pool *pool, DirListing *l);

/* Lists one subdirectory; -ENOENT and the like leave it out (it vanished meanwhile, or is no
 * directory we may open), only running out of memory or descriptors fails the whole listing: a
 * listing without the subdirectory would tell its group gone. */
static int list_subdir(int dirfd, KtypeId id, bool deep, const char *name, Pool *pool,
                       DirListing *l)
{
        KtypeId kind = deep ? subdir_kind(id, name) : _KTYPE_MAX;
        DirListing sub = {};
        int fd, r;

        if (kind == _KTYPE_MAX && listing_kind_handles(id, name))
                return 0;
        fd = sysfs_open_subdir(dirfd, name);
        if (fd < 0)
                return errno_is_resource(fd) ? fd : 0;
        if (kind != _KTYPE_MAX)
                r = list_dir(fd, kind, true, pool, &sub);
        else {
                r = sysfs_list_alloc(fd, listing_alloc, pool, &sub.entries, &sub.n_entries);
                /* Below a disk, a kobject is a partition: its own groups are part of the disk's. */
                if (r >= 0 && deep && id == KTYPE_DISK && listing_is_kobject(&sub))
                        r = list_subdirs(fd, KTYPE_PARTITION, false, pool, &sub);
        }
        (void) close(fd);
        if (r >= 0) {
                sub.name = pool_strdup(pool, name);
                r = sub.name ? 0 : -ENOMEM;
        }
        if (r < 0) /* what it took stays in the pool until the whole listing is freed */
                return errno_is_resource(r) ? r : 0;
        l->subdirs[l->n_subdirs++] = sub;
        return 0;
}

static int list_subdirs(int dirfd, KtypeId id, bool deep, Pool *pool, DirListing *l)
{
        size_t n = 0;
        int r;

        for (size_t i = 0; i < l->n_entries; i++)
                n += l->entries[i].type == SYSFS_ENTRY_DIR;
        if (n == 0)
                return 0;
        l->subdirs = pool_alloc(pool, n * sizeof(DirListing));
        if (!l->subdirs)
                return -ENOMEM;
        for (size_t i = 0; i < l->n_entries; i++)
                if (l->entries[i].type == SYSFS_ENTRY_DIR) {
                        r = list_subdir(dirfd, id, deep, l->entries[i].name, pool, l);
                        if (r < 0)
                                return r;
                }
        return 0;
}

static int list_dir(int dirfd, KtypeId id, bool deep, Pool *pool, DirListing *l)
{
        const SysfsEntry *e;
        char *link = NULL;
        int r;

        r = sysfs_list_alloc(dirfd, listing_alloc, pool, &l->entries, &l->n_entries);
        if (r >= 0)
                r = list_subdirs(dirfd, id, deep, pool, l);
        if (r >= 0 && deep && id == KTYPE_DISK && (e = listing_entry(l, "device")) &&
            e->type == SYSFS_ENTRY_LINK) {
                l->device_error = sysfs_readlink(dirfd, "device", &link);
                if (link) {
                        l->device_link = pool_strdup(pool, link);
                        free(link);
                        if (!l->device_link)
                                r = -ENOMEM;
                } else if (l->device_error == -ENOMEM)
                        r = -ENOMEM;
        }
        return r;
}

int listing_read(int dirfd, KtypeId id, bool deep, DirListing *ret)
{
        DirListing l = {};
        int r;

        r = list_dir(dirfd, id, deep, &l.pool, &l);
        if (r < 0) {
                listing_done(&l);
                return r;
        }
        *ret = l;
        return 0;
}

int listing_add_ancestor(const Sysfs *s, DirListing *disk, const char *devpath)
{
        DirListing a = {};
        int fd, r;

        if (disk->n_ancestors == disk->n_ancestors_allocated) {
                size_t n = disk->n_ancestors_allocated ? 2 * disk->n_ancestors_allocated : 8;
                DirListing *p = pool_alloc(&disk->pool, n * sizeof(DirListing));
                if (!p)
                        return -ENOMEM;
                if (disk->n_ancestors)
                        memcpy(p, disk->ancestors, disk->n_ancestors * sizeof(DirListing));
                disk->ancestors = p;
                disk->n_ancestors_allocated = n;
        }
        fd = sysfs_open_dir(s, devpath);
        if (fd < 0)
                return fd;
        r = list_dir(fd, KTYPE_DEVICE, false, &disk->pool, &a);
        (void) close(fd);
        if (r >= 0) {
                a.name = pool_strdup(&disk->pool, devpath);
                r = a.name ? 0 : -ENOMEM;
        }
        if (r < 0)
                return r;
        disk->ancestors[disk->n_ancestors++] = a;
        return 0;
}

const DirListing *listing_ancestor(const DirListing *disk, const char *devpath)
{
        for (size_t i = 0; disk && i < disk->n_ancestors; i++)
                if (streq(disk->ancestors[i].name, devpath))
                        return &disk->ancestors[i];
        return NULL;
}

int listing_read_at(const Sysfs *s, const char *devpath, KtypeId id, bool deep, DirListing *ret)
{
        int fd = sysfs_open_dir(s, devpath), r;

        if (fd < 0)
                return fd;
        r = listing_read(fd, id, deep, ret);
        (void) close(fd);
        return r;
}
