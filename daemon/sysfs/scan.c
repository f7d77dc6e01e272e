/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>

#include "base/log.h"
#include "common/utf8.h"
#include "common/util.h"
#include "sysfs/listing-ahead.h"
#include "sysfs/scan.h"

/* A device hierarchy deeper than this is a loop or a broken tree, not hardware. */
#define DEVICE_DEPTH_MAX 64

/* How far below /devices a device directory is (/devices/pci0000:00: 0).  Counted from /devices,
 * not from the nearest device published already: else whether a deep directory is published would
 * depend on the order its disks came in (a disk on a shallower part of the chain first), and a
 * fresh start would disagree with the live model. */
static unsigned device_depth(const char *devpath)
{
        unsigned slashes = 0;

        for (const char *p = devpath; *p; p++)
                slashes += *p == '/';
        return slashes >= 2 ? slashes - 2 : 0;
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
 * The shape one kobject's listing makes: its files become the kind's attributes, a subdirectory
 * without uevent that holds files becomes an attribute group; a subdirectory with uevent is a
 * kobject of its own, not part of the shape.
 */
static int shape_builder_from(const DirListing *l, KtypeId id, ShapeBuilder *ret)
{
        ShapeBuilder b = {};
        int r;

        r = builder_add_files(&b, l->entries, l->n_entries, false);
        for (size_t i = 0; r >= 0 && i < l->n_subdirs; i++) {
                const DirListing *sub = &l->subdirs[i];
                bool has_files = false;

                if (listing_kind_handles(id, sub->name) || listing_is_kobject(sub))
                        continue;
                for (size_t j = 0; j < sub->n_entries; j++)
                        has_files = has_files || sub->entries[j].type == SYSFS_ENTRY_FILE;
                if (has_files) {
                        r = shape_builder_add_group(&b, sub->name);
                        if (r >= 0)
                                r = builder_add_files(&b, sub->entries, sub->n_entries, true);
                }
        }
        if (r < 0) {
                shape_builder_done(&b);
                return r;
        }
        *ret = b;
        return 0;
}

/* The object's directory, opened only if a new attribute set asks for file modes. */
typedef struct ModeSource {
        const Sysfs *sysfs;
        const char *devpath;
        int fd; /* not opened yet: -EBADF */
} ModeSource;

static int mode_at(const char *relpath, void *userdata)
{
        ModeSource *src = userdata;

        if (src->fd == -EBADF)
                src->fd = sysfs_open_dir(src->sysfs, src->devpath);
        return src->fd < 0 ? src->fd : sysfs_file_mode(src->fd, relpath);
}

static int shape_of(const Sysfs *s, Model *m, const Ktype *t, const DirListing *l, const char *devpath,
                    bool exact, Shape **ret)
{
        ModeSource src = {.sysfs = s, .devpath = devpath, .fd = -EBADF};
        ShapeBuilder b;
        int r;

        r = shape_builder_from(l, t->id, &b);
        if (r < 0)
                return r;
        r = shape_get(&m->shapes, &b, t->name, t->properties, mode_at, &src, exact, devpath, ret);
        shape_builder_done(&b);
        if (src.fd >= 0)
                (void) close(src.fd);
        return r;
}

/* Creates, shapes and links one kobject from its directory's listing. */
static int kobject_add_listed(const Sysfs *s, Model *m, const Ktype *t, const char *name, Kobject *parent,
                              Kobject *kset, const char *devpath, const DirListing *l, Kobject *device,
                              Kobject **ret)
{
        Kobject *k;
        int r;

        r = kobject_new(m, t, name, parent, kset, devpath, &k);
        if (r == -EILSEQ)
                log_warning("%s: a kobject whose name is not UTF-8 cannot be published, skipped.", devpath);
        if (r < 0)
                return r;
        r = shape_of(s, m, t, l, devpath, false, &k->shape);
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

/* Returns a new reference to the Device object for devpath, creating it and its ancestors, from
 * the listings of them that came with the disk where there are (a listing helper got there first),
 * else listed here. */
static int device_get(const Sysfs *s, Model *m, const char *devpath, const DirListing *disk,
                      Kobject **ret)
{
        _cleanup_(freep) char *parent_devpath = NULL;
        const DirListing *listed;
        Kobject *k, *parent;
        DirListing l = {};
        int r;

        k = model_find_devpath(m, devpath);
        if (k) {
                if (k->ktype->id != KTYPE_DEVICE)
                        return -ENOTDIR;
                *ret = kobject_ref(k);
                return 0;
        }
        if (device_depth(devpath) > DEVICE_DEPTH_MAX || !startswith(devpath, "/devices/"))
                return -EINVAL;

        parent_devpath = path_dirname(devpath);
        if (!parent_devpath)
                return -ENOMEM;
        if (streq(parent_devpath, "/devices"))
                parent = kobject_ref(m->devices_kset);
        else {
                r = device_get(s, m, parent_devpath, disk, &parent);
                if (r < 0)
                        return r;
        }

        /* A block device's directory (or one below it) is no hardware: taken for some, it would hide
         * the block device from the scan whenever the link came first. */
        listed = listing_ancestor(disk, devpath);
        r = class_block_lists(s, devpath) ? -ENOTDIR
            : listed                      ? 0
                                          : listing_read_at(s, devpath, KTYPE_DEVICE, false, &l);
        if (r >= 0) {
                listed = listed ?: &l;
                /* Without a uevent file it is no device but a class's glue directory (the "nvme" between
                 * a PCI function and nvme0): a kobject of the class's own kset, which is not published,
                 * and a parent udev skips. */
                r = kobject_add_listed(s, m, &ktype_device, path_basename(devpath), parent,
                                       listing_is_kobject(listed) ? m->devices_kset : NULL, devpath, listed,
                                       NULL, &k);
                listing_done(&l);
        }
        /* The child holds the parent now (or failed and let it go). */
        kobject_unref(m, parent);
        if (r < 0)
                return r;
        *ret = k;
        return 0;
}

static int add_elevator_listed(const Sysfs *s, Model *m, Kobject *queue, const DirListing *l, Kobject **ret)
{
        _cleanup_(freep) char *devpath = path_join(queue->devpath, "iosched");

        if (!devpath)
                return -ENOMEM;
        return kobject_add_listed(s, m, &ktype_elevator, "iosched", queue, NULL, devpath, l, NULL, ret);
}

int scan_add_elevator(const Sysfs *s, Model *m, Kobject *queue, Kobject **ret)
{
        _cleanup_(freep) char *devpath = path_join(queue->devpath, "iosched");
        DirListing l;
        int r;

        if (!devpath)
                return -ENOMEM;
        r = listing_read_at(s, devpath, KTYPE_ELEVATOR, true, &l);
        if (r == -ENOENT)
                return 0; /* scheduler "none" */
        if (r < 0)
                return r;
        r = add_elevator_listed(s, m, queue, &l, ret);
        listing_done(&l);
        return r < 0 ? r : 1;
}

/* A part the scan skips with a warning (r) is left out for good by the start's scan only if sysfs said
 * so: out of descriptors or memory the process learnt nothing, and the start's scan fails instead
 * (resource_error, NULL for the live adds, which a Rescan completes). */
static void note_skipped(int r, int *resource_error)
{
        if (resource_error && *resource_error == 0 && errno_is_resource(r))
                *resource_error = r;
}

/* A queue's listing holds its scheduler's, unless it has none ("none", or gone meanwhile). */
static int add_queue_listed(const Sysfs *s, Model *m, Kobject *disk, const DirListing *l, int *resource_error)
{
        _cleanup_(freep) char *devpath = path_join(disk->devpath, "queue");
        const DirListing *iosched;
        Kobject *q, *e;
        int r;

        if (!devpath)
                return -ENOMEM;
        r = kobject_add_listed(s, m, &ktype_queue, "queue", disk, NULL, devpath, l, NULL, &q);
        if (r < 0)
                return r;
        iosched = listing_subdir(l, "iosched");
        if (iosched) {
                r = add_elevator_listed(s, m, q, iosched, &e);
                note_skipped(r, resource_error);
                if (r < 0)
                        log_warning_errno(r, "%s/iosched: cannot read the I/O scheduler, skipped: %m",
                                          devpath);
        }
        return 0;
}

/* Adds one partition below its disk, which must be in the model; -ENOTDIR if the kobject listed is
 * no partition. */
static int add_partition_listed(const Sysfs *s, Model *m, Kobject *disk, const char *name,
                                const DirListing *l, Kobject **ret)
{
        _cleanup_(freep) char *devpath = path_join(disk->devpath, name);
        const SysfsEntry *e = listing_entry(l, "partition");
        Kobject *p;
        int r;

        if (!devpath)
                return -ENOMEM;
        if (model_find_devpath(m, devpath))
                return -EEXIST;
        if (!e || e->type != SYSFS_ENTRY_FILE)
                return -ENOTDIR;
        r = kobject_add_listed(s, m, &ktype_partition, name, disk, m->block_kset, devpath, l, NULL, &p);
        if (r >= 0 && ret)
                *ret = p;
        return r;
}

static int scan_add_partition(const Sysfs *s, Model *m, Kobject *disk, const char *name, Kobject **ret)
{
        _cleanup_(freep) char *devpath = path_join(disk->devpath, name);
        DirListing l;
        int r;

        if (!devpath)
                return -ENOMEM;
        if (model_find_devpath(m, devpath))
                return -EEXIST;
        r = listing_read_at(s, devpath, KTYPE_PARTITION, true, &l);
        if (r < 0)
                return r;
        r = add_partition_listed(s, m, disk, name, &l, ret);
        listing_done(&l);
        return r;
}

static int disk_device(const Sysfs *s, Model *m, const char *devpath, const DirListing *l, Kobject **ret)
{
        _cleanup_(freep) char *resolved = NULL;
        int r;

        if (!l->device_link) {
                *ret = NULL; /* a virtual device */
                return l->device_error;
        }
        r = sysfs_resolve_relative(devpath, l->device_link, &resolved);
        if (r < 0)
                return r;
        /* The hardware is above the disk, never the disk itself or below it. */
        const char *rest = startswith(resolved, devpath);
        if (rest && (*rest == 0 || *rest == '/'))
                return -ELOOP;
        return device_get(s, m, resolved, l, ret);
}

/* Would device_get() publish devpath as hardware, or find it published?  The same checks, nothing
 * made. */
/* 1: a chain of hardware directories the scan follows; 0: not; negative errno: cannot tell (the
 * process ran out of descriptors or memory). */
static int device_followable(const Sysfs *s, const Model *m, const char *devpath)
{
        _cleanup_(freep) char *p = strdup(devpath);

        if (!p)
                return -ENOMEM;
        if (device_depth(p) > DEVICE_DEPTH_MAX)
                return 0;
        while (!streq(p, "/devices")) {
                Kobject *k = model_find_devpath(m, p);
                int fd, r;

                if (k)
                        return k->ktype->id == KTYPE_DEVICE;
                if (!startswith(p, "/devices/") || !utf8_is_valid(p))
                        return 0;
                r = class_block_check(s, p);
                if (r != 0)
                        return r < 0 ? r : 0;
                fd = sysfs_open_dir(s, p);
                if (fd < 0)
                        return errno_is_resource(fd) ? fd : 0;
                (void) close(fd);
                *strrchr(p, '/') = 0;
        }
        return 1;
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
        if (rest && (*rest == 0 || *rest == '/'))
                return 0;
        r = device_followable(s, m, resolved);
        if (r <= 0)
                return r;
        *ret = TAKE_PTR(resolved);
        return 0;
}

/* Adds one disk (with its partitions, queue, scheduler, groups and hardware ancestors) from its deep
 * listing.  -EEXIST if it is already in the model. */
static int add_disk_listed(const Sysfs *s, Model *m, const char *devpath, const DirListing *l, Kobject **ret,
                           int *resource_error)
{
        Kobject *disk, *device = NULL;
        const char *name = path_basename(devpath);
        const DirListing *queue;
        int r;

        if (model_find_devpath(m, devpath) || model_find_name(m, name))
                return -EEXIST;

        r = disk_device(s, m, devpath, l, &device);
        note_skipped(r, resource_error);
        if (r < 0) {
                /* A dangling or odd `device` link: publish the disk without its hardware. */
                log_warning_errno(r,
                                  "%s: cannot follow the 'device' link, publishing the disk without it: %m",
                                  devpath);
                device = NULL;
        }

        r = kobject_add_listed(s, m, &ktype_disk, name, m->block_kset, m->block_kset, devpath, l, device,
                               &disk);
        kobject_unref(m, device); /* the disk holds it now */
        if (r < 0)
                return r;

        queue = listing_subdir(l, "queue");
        const SysfsEntry *e = listing_entry(l, "queue");
        _cleanup_(freep) char *rel = e && !queue ? path_join(devpath, "queue") : NULL;
        if (queue)
                r = add_queue_listed(s, m, disk, queue, resource_error);
        else if (e && e->type == SYSFS_ENTRY_LINK) {
                /* The kernel's queue is a directory of the disk's own, never a link: one (in a tree
                 * made by hand) is not followed, and said to be one, not the open's ELOOP ("Too many
                 * levels of symbolic links"). */
                _cleanup_(freep) char *target = NULL;
                bool dangling = rel && sysfs_link_leads(s, rel, &target) == 0;
                log_warning("%s/queue: cannot read the request queue, skipped: a %ssymbolic link (to '%s'), "
                            "not a directory of its own%s.",
                            devpath, dangling ? "dangling " : "", strna(target),
                            dangling ? "" : "; links are not followed");
                r = 0;
        } else if (e) {
                /* There, but it could not be listed: the log says why (a file, no permission). */
                _cleanup_(closep) int fd = rel ? sysfs_open_dir(s, rel) : -ENOMEM;
                r = fd < 0 ? fd : -EIO;
        }
        note_skipped(r, resource_error);
        /* Gone since the listing: the disk is going (a loop device removed as it was added), and its
         * remove event follows; no warning for that. */
        if (r < 0)
                log_full_errno(r == -ENOENT ? LOG_DEBUG : LOG_WARNING, r,
                               "%s/queue: cannot read the request queue, skipped: %m", devpath);

        for (size_t i = 0; i < l->n_subdirs; i++) {
                const DirListing *sub = &l->subdirs[i];

                if (listing_kind_handles(KTYPE_DISK, sub->name) || !listing_is_kobject(sub))
                        continue;
                r = add_partition_listed(s, m, disk, sub->name, sub, NULL);
                note_skipped(r, resource_error);
                if (r == -ENOTDIR)
                        log_debug("%s/%s: a kobject that is not a partition, not published.", devpath,
                                  sub->name);
                else if (r < 0)
                        log_warning_errno(r, "%s/%s: cannot read the partition, skipped: %m", devpath,
                                          sub->name);
        }
        if (ret)
                *ret = disk;
        return 0;
}

int scan_add_disk(const Sysfs *s, Model *m, const char *devpath, const DirListing *given, Kobject **ret)
{
        DirListing own;
        int r;

        if (model_find_devpath(m, devpath) || model_find_name(m, path_basename(devpath)))
                return -EEXIST;
        if (!given) {
                r = listing_read_at(s, devpath, KTYPE_DISK, true, &own);
                if (r < 0)
                        return r;
        }
        r = add_disk_listed(s, m, devpath, given ?: &own, ret, NULL);
        if (!given)
                listing_done(&own);
        return r;
}

int scan_add_block_device(const Sysfs *s, Model *m, const char *devpath, Kobject **ret)
{
        _cleanup_(freep) char *parent = NULL;
        Kobject *disk, *k;
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
        r = block_dev_is_partition(s, devpath);
        if (r < 0)
                return r;
        if (r == 0)
                return scan_add_disk(s, m, devpath, NULL, ret);

        parent = path_dirname(devpath);
        if (!parent)
                return -ENOMEM;
        disk = model_find_devpath(m, parent);
        if (!disk) {
                /* Its disk's add was lost or is still to come: the disk brings its partitions along.
                 * Not a disk the kernel does not list: the scan and every rescan would disagree on it. */
                if (!class_block_lists(s, parent))
                        return -ENXIO;
                r = scan_add_disk(s, m, parent, NULL, &disk);
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

int scan_shape(const Sysfs *s, Model *m, Kobject *k, Shape **ret)
{
        DirListing l;
        int r;

        r = listing_read_at(s, k->devpath, k->ktype->id, false, &l);
        if (r < 0)
                return r;
        r = shape_of(s, m, k->ktype, &l, k->devpath, true, ret);
        listing_done(&l);
        return r;
}

/* A device the listing helpers did not list (listing_ahead_take() returned 0): a partition its disk
 * brought along, as a real tree always has it.  An odd tree may hold something else there, which is
 * treated as the scan of one device would: a partition stays out if its disk did not bring it, any
 * other directory is listed as a disk.  1 if a disk was added. */
static int add_unlisted(const Sysfs *s, Model *m, const char *devpath)
{
        int r;

        if (model_find_devpath(m, devpath))
                return 0;
        r = block_dev_is_partition(s, devpath);
        if (r < 0)
                return r;
        if (r > 0)
                return 0;
        r = scan_add_disk(s, m, devpath, NULL, NULL);
        return r < 0 ? r : 1;
}

int scan_all(const Sysfs *s, Model *m)
{
        _cleanup_(listing_ahead_freep) ListingAhead *ahead = NULL;
        BlockDev *devs = NULL;
        size_t n = 0;
        int r, added = 0, resource_error = 0;

        r = scan_list_block_names(s, &devs, &n);
        if (r < 0)
                return log_error_errno(r, "Cannot list %s/class/block: %m", s->root);
        r = listing_ahead_start(s, devs, n, &ahead);
        if (r < 0) {
                block_devs_free(devs, n);
                return log_error_errno(r, "Cannot start listing: %m");
        }

        for (size_t i = 0; i < n; i++) {
                const char *devpath;
                DirListing l;

                r = listing_ahead_take(ahead, i, &devs[i].devpath, &l);
                devpath = devs[i].devpath;
                if (!devpath) { /* not a usable link: logged */
                        note_skipped(r, &resource_error);
                        continue;
                }
                if (r == 0)
                        r = add_unlisted(s, m, devpath);
                else if (r > 0) {
                        r = add_disk_listed(s, m, devpath, &l, NULL, &resource_error);
                        listing_done(&l);
                        r = r < 0 ? r : 1;
                }
                note_skipped(r, &resource_error);
                if (r == -EEXIST)
                        log_warning("%s: a block device of that name or path exists already, skipped.",
                                    devpath);
                else if (r < 0)
                        log_warning_errno(r, "%s: cannot read the disk, skipped: %m", devpath);
                else
                        added += r;
        }
        ahead = listing_ahead_free(ahead);

        /* A partition whose disk did not make it stays out; say so rather than vanish silently. */
        for (size_t i = 0; i < n; i++)
                if (devs[i].devpath && !model_find_name(m, devs[i].name))
                        log_notice("class/block/%s is not in the model.", devs[i].name);

        block_devs_free(devs, n);
        if (resource_error < 0)
                return log_error_errno(resource_error,
                                       "Cannot read all of %s: %m; not publishing a model with parts left out.",
                                       s->root);
        return added;
}
