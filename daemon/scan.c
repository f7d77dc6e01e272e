/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>

#include "log.h"
#include "scan.h"
#include "common/util.h"

/* A device hierarchy deeper than this is a loop or a broken tree, not hardware. */
#define DEVICE_DEPTH_MAX 64

/* Subdirectories a kind handles itself, or that are link directories or kobject
 * trees outside the model; they are never attribute groups. */
static const char *const disk_special[] = {"queue", "holders", "slaves", "mq", NULL};
static const char *const partition_special[] = {"holders", NULL};
static const char *const queue_special[] = {"iosched", NULL};
static const char *const no_special[] = {NULL};

static const char *const *special_dirs(KtypeId id)
{
        return id == KTYPE_DISK ? disk_special
             : id == KTYPE_PARTITION ? partition_special
             : id == KTYPE_QUEUE ? queue_special
             : no_special;
}

static bool strv_contains(const char *const *l, const char *s)
{
        for (; *l; l++)
                if (streq(*l, s))
                        return true;
        return false;
}

static bool entries_have_file(const SysfsEntry *e, size_t n, const char *name)
{
        for (size_t i = 0; i < n; i++)
                if (e[i].type == SYSFS_ENTRY_FILE && streq(e[i].name, name))
                        return true;
        return false;
}

static const SysfsEntry *entries_find(const SysfsEntry *e, size_t n, const char *name)
{
        for (size_t i = 0; i < n; i++)
                if (streq(e[i].name, name))
                        return &e[i];
        return NULL;
}

typedef struct DirScan {
        SysfsEntry *entries;
        size_t n_entries;
        ShapeBuilder shape;
        char **kobject_dirs; /* subdirectories with a uevent file: kobjects of their own */
        size_t n_kobject_dirs;
} DirScan;

static void dir_scan_done(DirScan *d)
{
        sysfs_entries_free(d->entries, d->n_entries);
        shape_builder_done(&d->shape);
        strv_free(d->kobject_dirs);
        *d = (DirScan){};
}

/*
 * Reads one kobject directory: its files become the kind's attributes, a
 * subdirectory without uevent that holds files becomes an attribute group,
 * a subdirectory with uevent is a child kobject (reported to the caller).
 */
static int dir_scan(int dirfd, const char *const *special, const char *what, DirScan *ret)
{
        DirScan d = {};
        int r;

        r = sysfs_list(dirfd, &d.entries, &d.n_entries);
        if (r < 0)
                return r;
        r = shape_builder_add_files(&d.shape, d.entries, d.n_entries);
        if (r < 0)
                goto fail;

        for (size_t i = 0; i < d.n_entries; i++) {
                const SysfsEntry *e = &d.entries[i];
                SysfsEntry *sub = NULL;
                size_t n_sub = 0;
                int subfd;

                if (e->type != SYSFS_ENTRY_DIR || strv_contains(special, e->name))
                        continue;
                subfd = sysfs_open_subdir(dirfd, e->name);
                if (subfd < 0) {
                        log_debug_errno(subfd, "%s: cannot open '%s', skipped: %m", what, e->name);
                        continue;
                }
                r = sysfs_list(subfd, &sub, &n_sub);
                close(subfd);
                if (r < 0) {
                        log_debug_errno(r, "%s: cannot list '%s', skipped: %m", what, e->name);
                        continue;
                }
                /* A partition is a kobject even if its uevent file is missing or unreadable. */
                if (entries_have_file(sub, n_sub, "uevent") || entries_have_file(sub, n_sub, "partition"))
                        r = strv_extend(&d.kobject_dirs, &d.n_kobject_dirs, e->name);
                else {
                        bool has_files = false;
                        for (size_t j = 0; j < n_sub; j++)
                                has_files = has_files || sub[j].type == SYSFS_ENTRY_FILE;
                        r = has_files ? shape_builder_add_group(&d.shape, e->name, sub, n_sub) : 0;
                }
                sysfs_entries_free(sub, n_sub);
                if (r < 0)
                        goto fail;
        }
        *ret = d;
        return 0;

fail:
        dir_scan_done(&d);
        return r;
}

/* Creates, shapes and links one kobject from a scanned directory. */
static int kobject_add_scanned(Model *m, const Ktype *t, const char *name, Kobject *parent, Kobject *kset,
                               const char *devpath, const DirScan *d, Kobject *device, Kobject **ret)
{
        Kobject *k;
        int r;

        r = kobject_new(m, t, name, parent, kset, devpath, &k);
        if (r < 0)
                return r;
        r = shape_get(&m->shapes, &d->shape, t->name, t->typed_names, devpath, &k->shape);
        if (r < 0)
                goto fail;
        k->device = kobject_ref(device);
        r = model_link(m, k);
        if (r < 0)
                goto fail;
        /* Linked objects are held by the model (or by their dependents); hand back a borrowed pointer. */
        if (!t->held_by_dependents) {
                kobject_unref(m, k);
                *ret = k;
        } else
                *ret = k; /* the caller owns this reference */
        return 0;

fail:
        kobject_unref(m, k);
        return r;
}

static const char *basename_of(const char *path)
{
        const char *s = strrchr(path, '/');
        return s ? s + 1 : path;
}

static char *dirname_of(const char *path)
{
        const char *s = strrchr(path, '/');
        return s ? strndup(path, (size_t) (s - path)) : strdup("");
}

/* Returns a new reference to the Device object for devpath, creating it and its ancestors. */
static int device_get(Model *m, const char *devpath, unsigned depth, Kobject **ret)
{
        _cleanup_(freep) char *parent_devpath = NULL;
        Kobject *k, *parent;
        DirScan d;
        int fd, r;

        k = model_find_devpath(m, devpath);
        if (k) {
                if (k->ktype->id != KTYPE_DEVICE)
                        return -ENOTDIR;
                *ret = kobject_ref(k);
                return 0;
        }
        if (depth > DEVICE_DEPTH_MAX || !startswith(devpath, "/devices/"))
                return -EINVAL;

        parent_devpath = dirname_of(devpath);
        if (!parent_devpath)
                return -ENOMEM;
        if (streq(parent_devpath, "/devices"))
                parent = kobject_ref(m->devices_kset);
        else {
                r = device_get(m, parent_devpath, depth + 1, &parent);
                if (r < 0)
                        return r;
        }

        fd = sysfs_open_dir(m->sysfs, devpath);
        if (fd < 0) {
                kobject_unref(m, parent);
                return fd;
        }
        r = dir_scan(fd, no_special, devpath, &d);
        close(fd);
        if (r < 0) {
                kobject_unref(m, parent);
                return r;
        }
        r = kobject_add_scanned(m, &ktype_device, basename_of(devpath), parent, m->devices_kset, devpath, &d,
                                NULL, &k);
        dir_scan_done(&d);
        /* The child holds the parent now (or failed and let it go). */
        kobject_unref(m, parent);
        if (r < 0)
                return r;
        *ret = k;
        return 0;
}

int scan_add_elevator(Model *m, Kobject *queue, Kobject **ret)
{
        _cleanup_(freep) char *devpath = path_join(queue->devpath, "iosched");
        DirScan d;
        int fd, r;

        if (!devpath)
                return -ENOMEM;
        fd = sysfs_open_dir(m->sysfs, devpath);
        if (fd == -ENOENT)
                return 0; /* scheduler "none" */
        if (fd < 0)
                return fd;
        r = dir_scan(fd, no_special, devpath, &d);
        close(fd);
        if (r < 0)
                return r;
        r = kobject_add_scanned(m, &ktype_elevator, "iosched", queue, NULL, devpath, &d, NULL, ret);
        dir_scan_done(&d);
        return r < 0 ? r : 1;
}

int scan_add_queue(Model *m, Kobject *disk, Kobject **ret)
{
        _cleanup_(freep) char *devpath = path_join(disk->devpath, "queue");
        Kobject *q, *e;
        DirScan d;
        int fd, r;

        if (!devpath)
                return -ENOMEM;
        fd = sysfs_open_dir(m->sysfs, devpath);
        if (fd < 0)
                return fd;
        r = dir_scan(fd, special_dirs(KTYPE_QUEUE), devpath, &d);
        close(fd);
        if (r < 0)
                return r;
        r = kobject_add_scanned(m, &ktype_queue, "queue", disk, NULL, devpath, &d, NULL, &q);
        dir_scan_done(&d);
        if (r < 0)
                return r;

        r = scan_add_elevator(m, q, &e);
        if (r < 0)
                log_warning_errno(r, "%s/iosched: cannot read the I/O scheduler, skipped: %m", devpath);
        if (ret)
                *ret = q;
        return 0;
}

int scan_add_partition(Model *m, Kobject *disk, const char *name, Kobject **ret)
{
        _cleanup_(freep) char *devpath = path_join(disk->devpath, name);
        Kobject *p;
        DirScan d;
        int fd, r;

        if (!devpath)
                return -ENOMEM;
        if (model_find_devpath(m, devpath))
                return -EEXIST;
        fd = sysfs_open_dir(m->sysfs, devpath);
        if (fd < 0)
                return fd;
        r = dir_scan(fd, special_dirs(KTYPE_PARTITION), devpath, &d);
        close(fd);
        if (r < 0)
                return r;
        if (!entries_have_file(d.entries, d.n_entries, "partition")) {
                dir_scan_done(&d);
                return -ENOTDIR;
        }
        r = kobject_add_scanned(m, &ktype_partition, name, disk, m->block_kset, devpath, &d, NULL, &p);
        dir_scan_done(&d);
        if (r < 0)
                return r;
        if (ret)
                *ret = p;
        return 0;
}

static int disk_device(Model *m, const char *devpath, const DirScan *d, Kobject **ret)
{
        _cleanup_(freep) char *target = NULL, *resolved = NULL;
        const SysfsEntry *e;
        int fd, r;

        e = entries_find(d->entries, d->n_entries, "device");
        if (!e || e->type != SYSFS_ENTRY_LINK) {
                *ret = NULL; /* a virtual device */
                return 0;
        }
        fd = sysfs_open_dir(m->sysfs, devpath);
        if (fd < 0)
                return fd;
        r = sysfs_readlink(fd, "device", &target);
        close(fd);
        if (r < 0)
                return r;
        r = sysfs_resolve_relative(devpath, target, &resolved);
        if (r < 0)
                return r;
        /* The hardware is above the disk, never the disk itself or below it. */
        const char *rest = startswith(resolved, devpath);
        if (rest && (*rest == 0 || *rest == '/'))
                return -ELOOP;
        return device_get(m, resolved, 0, ret);
}

int scan_add_disk(Model *m, const char *devpath, Kobject **ret)
{
        Kobject *disk, *device = NULL;
        const char *name = basename_of(devpath);
        DirScan d;
        int fd, r;

        if (model_find_devpath(m, devpath) || model_find_name(m, name))
                return -EEXIST;

        fd = sysfs_open_dir(m->sysfs, devpath);
        if (fd < 0)
                return fd;
        r = dir_scan(fd, special_dirs(KTYPE_DISK), devpath, &d);
        close(fd);
        if (r < 0)
                return r;

        r = disk_device(m, devpath, &d, &device);
        if (r < 0) {
                /* A dangling or odd `device` link: publish the disk without its hardware. */
                log_warning_errno(r,
                                  "%s: cannot follow the 'device' link, publishing the disk without it: %m",
                                  devpath);
                device = NULL;
        }

        r = kobject_add_scanned(m, &ktype_disk, name, m->block_kset, m->block_kset, devpath, &d, device,
                                &disk);
        kobject_unref(m, device); /* the disk holds it now */
        if (r < 0) {
                dir_scan_done(&d);
                return r;
        }

        if (entries_find(d.entries, d.n_entries, "queue")) {
                r = scan_add_queue(m, disk, NULL);
                if (r < 0)
                        log_warning_errno(r, "%s/queue: cannot read the request queue, skipped: %m",
                                          devpath);
        }

        for (size_t i = 0; i < d.n_kobject_dirs; i++) {
                r = scan_add_partition(m, disk, d.kobject_dirs[i], NULL);
                if (r == -ENOTDIR)
                        log_debug("%s/%s: a kobject that is not a partition, not published.", devpath,
                                  d.kobject_dirs[i]);
                else if (r < 0)
                        log_warning_errno(r, "%s/%s: cannot read the partition, skipped: %m", devpath,
                                          d.kobject_dirs[i]);
        }
        dir_scan_done(&d);
        if (ret)
                *ret = disk;
        return 0;
}

int scan_shape(Model *m, Kobject *k, Shape **ret)
{
        DirScan d;
        int fd, r;

        fd = sysfs_open_dir(m->sysfs, k->devpath);
        if (fd < 0)
                return fd;
        r = dir_scan(fd, special_dirs(k->ktype->id), k->devpath, &d);
        close(fd);
        if (r < 0)
                return r;
        r = shape_get(&m->shapes, &d.shape, k->ktype->name, k->ktype->typed_names, k->devpath, ret);
        dir_scan_done(&d);
        return r;
}

int scan_all(Model *m)
{
        SysfsEntry *e = NULL;
        size_t n = 0;
        int fd, r, n_disks = 0;

        fd = sysfs_open_dir(m->sysfs, "class/block");
        if (fd < 0)
                return log_error_errno(fd, "Cannot open %s/class/block: %m", m->sysfs->root);
        r = sysfs_list(fd, &e, &n);
        if (r < 0) {
                close(fd);
                return log_error_errno(r, "Cannot list %s/class/block: %m", m->sysfs->root);
        }

        for (size_t i = 0; i < n; i++) {
                _cleanup_(freep) char *target = NULL, *devpath = NULL;
                int devfd;

                if (e[i].type != SYSFS_ENTRY_LINK) {
                        log_warning("class/block/%s is not a link, skipped.", e[i].name);
                        continue;
                }
                r = sysfs_readlink(fd, e[i].name, &target);
                if (r >= 0)
                        r = sysfs_resolve_relative("/class/block", target, &devpath);
                if (r < 0) {
                        log_warning_errno(r, "class/block/%s: unusable link, skipped: %m", e[i].name);
                        continue;
                }
                if (!streq(basename_of(devpath), e[i].name)) {
                        log_warning("class/block/%s points to %s, a different name; skipped.", e[i].name,
                                    devpath);
                        continue;
                }
                /* Partitions are found inside their disk's directory. */
                devfd = sysfs_open_dir(m->sysfs, devpath);
                if (devfd < 0) {
                        log_warning_errno(devfd, "%s: cannot open, skipped: %m", devpath);
                        continue;
                }
                bool is_partition = sysfs_has_file(devfd, "partition");
                close(devfd);
                if (is_partition)
                        continue;

                r = scan_add_disk(m, devpath, NULL);
                if (r == -EEXIST)
                        log_warning("%s: a block device of that name or path exists already, skipped.",
                                    devpath);
                else if (r < 0)
                        log_warning_errno(r, "%s: cannot read the disk, skipped: %m", devpath);
                else
                        n_disks++;
        }

        /* A partition whose disk did not make it stays out; say so rather than vanish silently. */
        for (size_t i = 0; i < n; i++)
                if (!model_find_name(m, e[i].name))
                        log_notice("class/block/%s is not in the model.", e[i].name);

        sysfs_entries_free(e, n);
        close(fd);
        return n_disks;
}
