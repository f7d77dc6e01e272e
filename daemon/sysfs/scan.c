/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>

#include "base/log.h"
#include "common/utf8.h"
#include "common/util.h"
#include "sysfs/scan.h"

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
        return id == KTYPE_DISK        ? disk_special
               : id == KTYPE_PARTITION ? partition_special
               : id == KTYPE_QUEUE     ? queue_special
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

/* uevent is the Uevent property, never an attribute (SPEC §4). */
static int builder_add_files(ShapeBuilder *b, const SysfsEntry *e, size_t n, bool group)
{
        int r = 0;

        for (size_t i = 0; r >= 0 && i < n; i++)
                if (e[i].type == SYSFS_ENTRY_FILE && !streq(e[i].name, "uevent"))
                        r = group ? shape_builder_add_group_file(b, e[i].name)
                                  : shape_builder_add_file(b, e[i].name);
        return r;
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
        r = builder_add_files(&d.shape, d.entries, d.n_entries, false);
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
                        r = has_files ? shape_builder_add_group(&d.shape, e->name) : 0;
                        if (r >= 0 && has_files)
                                r = builder_add_files(&d.shape, sub, n_sub, true);
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

static int mode_at(const char *relpath, void *userdata)
{
        return sysfs_file_mode(*(const int *) userdata, relpath);
}

static int shape_of(Model *m, const Ktype *t, int dirfd, const DirScan *d, const char *devpath, Shape **ret)
{
        return shape_get(&m->shapes, &d->shape, t->name, t->properties, mode_at, &dirfd, devpath, ret);
}

/* Creates, shapes and links one kobject from a scanned directory (still open as dirfd). */
static int kobject_add_scanned(Model *m, const Ktype *t, const char *name, Kobject *parent, Kobject *kset,
                               const char *devpath, int dirfd, const DirScan *d, Kobject *device,
                               Kobject **ret)
{
        Kobject *k;
        int r;

        r = kobject_new(m, t, name, parent, kset, devpath, &k);
        if (r == -EILSEQ)
                log_warning("%s: a kobject whose name is not UTF-8 cannot be published, skipped.", devpath);
        if (r < 0)
                return r;
        r = shape_of(m, t, dirfd, d, devpath, &k->shape);
        if (r >= 0) {
                k->device = kobject_ref(device);
                r = model_link(m, k);
        }
        /* Linked objects are held by the model, or by their dependents: then the caller owns this
         * reference.  Otherwise the pointer handed back is borrowed. */
        if (r < 0 || !t->held_by_dependents)
                kobject_unref(m, k);
        if (r < 0)
                return r;
        *ret = k;
        return 0;
}


/* Opens and scans a kobject's directory; the fd stays open for kobject_add_scanned(). */
static int open_and_scan(const Sysfs *s, const char *devpath, KtypeId id, int *ret_fd, DirScan *ret)
{
        _cleanup_(closep) int fd = -1;
        int r;

        fd = sysfs_open_dir(s, devpath);
        if (fd < 0)
                return fd;
        r = dir_scan(fd, special_dirs(id), devpath, ret);
        if (r < 0)
                return r;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* Returns a new reference to the Device object for devpath, creating it and its ancestors. */
static int device_get(const Sysfs *s, Model *m, const char *devpath, unsigned depth, Kobject **ret)
{
        _cleanup_(freep) char *parent_devpath = NULL;
        _cleanup_(closep) int fd = -1;
        Kobject *k, *parent;
        DirScan d;
        int r;

        k = model_find_devpath(m, devpath);
        if (k) {
                if (k->ktype->id != KTYPE_DEVICE)
                        return -ENOTDIR;
                *ret = kobject_ref(k);
                return 0;
        }
        if (depth > DEVICE_DEPTH_MAX || !startswith(devpath, "/devices/"))
                return -EINVAL;

        parent_devpath = path_dirname(devpath);
        if (!parent_devpath)
                return -ENOMEM;
        if (streq(parent_devpath, "/devices"))
                parent = kobject_ref(m->devices_kset);
        else {
                r = device_get(s, m, parent_devpath, depth + 1, &parent);
                if (r < 0)
                        return r;
        }

        /* A block device's directory (or one below it) is no hardware: taken for some, it would hide
         * the block device from the scan whenever the link came first. */
        r = class_block_lists(s, devpath) ? -ENOTDIR : open_and_scan(s, devpath, KTYPE_DEVICE, &fd, &d);
        if (r >= 0) {
                r = kobject_add_scanned(m, &ktype_device, path_basename(devpath), parent, m->devices_kset,
                                        devpath, fd, &d, NULL, &k);
                dir_scan_done(&d);
        }
        /* The child holds the parent now (or failed and let it go). */
        kobject_unref(m, parent);
        if (r < 0)
                return r;
        *ret = k;
        return 0;
}

int scan_add_elevator(const Sysfs *s, Model *m, Kobject *queue, Kobject **ret)
{
        _cleanup_(freep) char *devpath = path_join(queue->devpath, "iosched");
        _cleanup_(closep) int fd = -1;
        DirScan d;
        int r;

        if (!devpath)
                return -ENOMEM;
        r = open_and_scan(s, devpath, KTYPE_ELEVATOR, &fd, &d);
        if (r == -ENOENT)
                return 0; /* scheduler "none" */
        if (r < 0)
                return r;
        r = kobject_add_scanned(m, &ktype_elevator, "iosched", queue, NULL, devpath, fd, &d, NULL, ret);
        dir_scan_done(&d);
        return r < 0 ? r : 1;
}

int scan_add_queue(const Sysfs *s, Model *m, Kobject *disk)
{
        _cleanup_(freep) char *devpath = path_join(disk->devpath, "queue");
        _cleanup_(closep) int fd = -1;
        Kobject *q, *e;
        DirScan d;
        int r;

        if (!devpath)
                return -ENOMEM;
        r = open_and_scan(s, devpath, KTYPE_QUEUE, &fd, &d);
        if (r < 0)
                return r;
        r = kobject_add_scanned(m, &ktype_queue, "queue", disk, NULL, devpath, fd, &d, NULL, &q);
        dir_scan_done(&d);
        if (r < 0)
                return r;

        r = scan_add_elevator(s, m, q, &e);
        if (r < 0)
                log_warning_errno(r, "%s/iosched: cannot read the I/O scheduler, skipped: %m", devpath);
        return 0;
}

/* Adds one partition below its disk, which must be in the model. */
static int scan_add_partition(const Sysfs *s, Model *m, Kobject *disk, const char *name, Kobject **ret)
{
        _cleanup_(freep) char *devpath = path_join(disk->devpath, name);
        _cleanup_(closep) int fd = -1;
        Kobject *p;
        DirScan d;
        int r;

        if (!devpath)
                return -ENOMEM;
        if (model_find_devpath(m, devpath))
                return -EEXIST;
        r = open_and_scan(s, devpath, KTYPE_PARTITION, &fd, &d);
        if (r < 0)
                return r;
        if (entries_have_file(d.entries, d.n_entries, "partition"))
                r = kobject_add_scanned(m, &ktype_partition, name, disk, m->block_kset, devpath, fd, &d,
                                        NULL, &p);
        else
                r = -ENOTDIR;
        dir_scan_done(&d);
        if (r < 0)
                return r;
        if (ret)
                *ret = p;
        return 0;
}

static int disk_device(const Sysfs *s, Model *m, const char *devpath, int dirfd, const DirScan *d,
                       Kobject **ret)
{
        _cleanup_(freep) char *target = NULL, *resolved = NULL;
        const SysfsEntry *e;
        int r;

        e = entries_find(d->entries, d->n_entries, "device");
        if (!e || e->type != SYSFS_ENTRY_LINK) {
                *ret = NULL; /* a virtual device */
                return 0;
        }
        r = sysfs_readlink(dirfd, "device", &target);
        if (r < 0)
                return r;
        r = sysfs_resolve_relative(devpath, target, &resolved);
        if (r < 0)
                return r;
        /* The hardware is above the disk, never the disk itself or below it. */
        const char *rest = startswith(resolved, devpath);
        if (rest && (*rest == 0 || *rest == '/'))
                return -ELOOP;
        return device_get(s, m, resolved, 0, ret);
}

/* Would device_get() publish devpath as hardware, or find it published?  The same checks, nothing
 * made. */
static bool device_followable(const Sysfs *s, const Model *m, const char *devpath)
{
        _cleanup_(freep) char *p = strdup(devpath);

        if (!p)
                return false;
        for (unsigned depth = 0; !streq(p, "/devices"); depth++) {
                Kobject *k = model_find_devpath(m, p);
                int fd;

                if (k)
                        return k->ktype->id == KTYPE_DEVICE;
                if (depth > DEVICE_DEPTH_MAX || !startswith(p, "/devices/") || !utf8_is_valid(p))
                        return false;
                if (class_block_lists(s, p))
                        return false;
                fd = sysfs_open_dir(s, p);
                if (fd < 0)
                        return false;
                (void) close(fd);
                *strrchr(p, '/') = 0;
        }
        return true;
}

int scan_disk_device_devpath(const Sysfs *s, const Model *m, const Kobject *disk, char **ret)
{
        _cleanup_(freep) char *target = NULL, *resolved = NULL;
        _cleanup_(closep) int fd = sysfs_open_dir(s, disk->devpath);
        const char *rest;
        int r;

        if (fd < 0)
                return fd;
        *ret = NULL; /* a virtual device, or a link the scan does not follow */
        r = sysfs_readlink(fd, "device", &target);
        if (r == -ENOENT || r == -EINVAL)
                return 0;
        if (r < 0)
                return r;
        if (sysfs_resolve_relative(disk->devpath, target, &resolved) < 0)
                return 0;
        rest = startswith(resolved, disk->devpath);
        if ((rest && (*rest == 0 || *rest == '/')) || !device_followable(s, m, resolved))
                return 0;
        *ret = TAKE_PTR(resolved);
        return 0;
}

/* Adds one disk (with its partitions, queue, scheduler, groups and hardware ancestors) from its
 * devpath.  -EEXIST if it is already in the model. */
static int scan_add_disk(const Sysfs *s, Model *m, const char *devpath, Kobject **ret)
{
        _cleanup_(closep) int fd = -1;
        Kobject *disk, *device = NULL;
        const char *name = path_basename(devpath);
        DirScan d;
        int r;

        if (model_find_devpath(m, devpath) || model_find_name(m, name))
                return -EEXIST;

        r = open_and_scan(s, devpath, KTYPE_DISK, &fd, &d);
        if (r < 0)
                return r;

        r = disk_device(s, m, devpath, fd, &d, &device);
        if (r < 0) {
                /* A dangling or odd `device` link: publish the disk without its hardware. */
                log_warning_errno(r,
                                  "%s: cannot follow the 'device' link, publishing the disk without it: %m",
                                  devpath);
                device = NULL;
        }

        r = kobject_add_scanned(m, &ktype_disk, name, m->block_kset, m->block_kset, devpath, fd, &d, device,
                                &disk);
        kobject_unref(m, device); /* the disk holds it now */
        if (r < 0) {
                dir_scan_done(&d);
                return r;
        }

        if (entries_find(d.entries, d.n_entries, "queue")) {
                r = scan_add_queue(s, m, disk);
                if (r < 0)
                        log_warning_errno(r, "%s/queue: cannot read the request queue, skipped: %m",
                                          devpath);
        }

        for (size_t i = 0; i < d.n_kobject_dirs; i++) {
                r = scan_add_partition(s, m, disk, d.kobject_dirs[i], NULL);
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

int scan_add_block_device(const Sysfs *s, Model *m, const char *devpath, Kobject **ret)
{
        _cleanup_(freep) char *parent = NULL;
        Kobject *disk, *k;
        bool is_partition;
        int fd, r;

        if (model_find_devpath(m, devpath))
                return -EEXIST;
        if (!class_block_lists(s, devpath)) {
                fd = sysfs_open_dir(s, devpath);
                if (fd < 0)
                        return fd;
                (void) close(fd);
                return -ENODEV;
        }
        fd = sysfs_open_dir(s, devpath);
        if (fd < 0)
                return fd;
        is_partition = sysfs_has_file(fd, "partition");
        (void) close(fd);
        if (!is_partition)
                return scan_add_disk(s, m, devpath, ret);

        parent = path_dirname(devpath);
        if (!parent)
                return -ENOMEM;
        disk = model_find_devpath(m, parent);
        if (!disk) {
                /* Its disk's add was lost or is still to come: the disk brings its partitions along. */
                r = scan_add_disk(s, m, parent, &disk);
                if (r < 0)
                        return r;
                k = model_find_devpath(m, devpath);
                if (!k)
                        return -ENOENT;
                *ret = k;
                return 0;
        }
        if (disk->ktype->id != KTYPE_DISK)
                return -ENOTDIR;
        return scan_add_partition(s, m, disk, path_basename(devpath), ret);
}

static bool attr_set_has_file(const AttrSet *a, const char *file)
{
        for (size_t i = 0; a && i < a->n_attrs; i++)
                if (streq(a->attrs[i].file, file))
                        return true;
        return false;
}

bool scan_shape_unchanged(const Sysfs *s, const Kobject *k)
{
        _cleanup_(closep) int fd = -1;
        SysfsEntry *e = NULL;
        size_t n = 0, files = 0, dirs = 0, expected_dirs;
        bool same = true;

        if (!k->shape)
                return false;
        fd = sysfs_open_dir(s, k->devpath);
        if (fd < 0 || sysfs_list(fd, &e, &n) < 0)
                return false;
        expected_dirs = k->shape->n_groups;
        for (Kobject *c = k->first_child; c; c = c->next_sibling)
                if (!strv_contains(special_dirs(k->ktype->id), c->name))
                        expected_dirs++;
        for (size_t i = 0; same && i < n; i++) {
                const char *name = e[i].name;
                if (e[i].type == SYSFS_ENTRY_FILE) {
                        if (streq(name, "uevent"))
                                continue;
                        same = attr_set_has_file(k->shape->attrs, name);
                        files++;
                } else if (e[i].type == SYSFS_ENTRY_DIR) {
                        if (strv_contains(special_dirs(k->ktype->id), name))
                                continue;
                        bool group = false;
                        for (size_t g = 0; g < k->shape->n_groups && !group; g++)
                                group = streq(k->shape->groups[g].dir, name);
                        same = group || kobject_find_child(k, name);
                        dirs++;
                }
        }
        sysfs_entries_free(e, n);
        return same && files == (k->shape->attrs ? k->shape->attrs->n_attrs : 0) && dirs == expected_dirs;
}

int scan_shape(const Sysfs *s, Model *m, Kobject *k, Shape **ret)
{
        _cleanup_(closep) int fd = -1;
        DirScan d;
        int r;

        r = open_and_scan(s, k->devpath, k->ktype->id, &fd, &d);
        if (r < 0)
                return r;
        r = shape_of(m, k->ktype, fd, &d, k->devpath, ret);
        dir_scan_done(&d);
        return r;
}

int scan_all(const Sysfs *s, Model *m)
{
        BlockDev *devs = NULL;
        size_t n = 0;
        int r, n_disks = 0;

        r = scan_list_block_devs(s, &devs, &n);
        if (r < 0)
                return log_error_errno(r, "Cannot list %s/class/block: %m", s->root);

        for (size_t i = 0; i < n; i++) {
                /* Partitions are found inside their disk's directory. */
                if (devs[i].partition)
                        continue;
                r = scan_add_disk(s, m, devs[i].devpath, NULL);
                if (r == -EEXIST)
                        log_warning("%s: a block device of that name or path exists already, skipped.",
                                    devs[i].devpath);
                else if (r < 0)
                        log_warning_errno(r, "%s: cannot read the disk, skipped: %m", devs[i].devpath);
                else
                        n_disks++;
        }

        /* A partition whose disk did not make it stays out; say so rather than vanish silently. */
        for (size_t i = 0; i < n; i++)
                if (!model_find_name(m, devs[i].name))
                        log_notice("class/block/%s is not in the model.", devs[i].name);

        block_devs_free(devs, n);
        return n_disks;
}
