/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "reconcile.h"
#include "log.h"
#include "scan.h"
#include "common/util.h"

typedef struct BlockDev {
        char *name;
        char *devpath;
        bool partition;
} BlockDev;

static void block_devs_free(BlockDev *l, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(l[i].name);
                free(l[i].devpath);
        }
        free(l);
}

/* What class/block says now. */
static int list_block_devs(Model *m, BlockDev **ret, size_t *ret_n)
{
        SysfsEntry *e = NULL;
        BlockDev *l = NULL;
        size_t n = 0, k = 0;
        int fd, r;

        fd = sysfs_open_dir(m->sysfs, "class/block");
        if (fd < 0)
                return fd;
        r = sysfs_list(fd, &e, &n);
        if (r < 0) {
                close(fd);
                return r;
        }
        l = calloc(n + 1, sizeof(BlockDev));
        if (!l) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_(freep) char *target = NULL;
                char *devpath = NULL;
                int devfd;

                if (e[i].type != SYSFS_ENTRY_LINK || sysfs_readlink(fd, e[i].name, &target) < 0 ||
                    sysfs_resolve_relative("/class/block", target, &devpath) < 0)
                        continue;
                devfd = sysfs_open_dir(m->sysfs, devpath);
                if (devfd < 0) {
                        free(devpath);
                        continue;
                }
                l[k].partition = sysfs_has_file(devfd, "partition");
                close(devfd);
                l[k].devpath = devpath;
                l[k].name = strdup(e[i].name);
                if (!l[k].name) {
                        block_devs_free(l, k + 1);
                        r = -ENOMEM;
                        goto out;
                }
                k++;
        }
        *ret = l;
        *ret_n = k;
        r = 0;
out:
        sysfs_entries_free(e, n);
        close(fd);
        return r;
}

typedef struct Gone {
        char *devpath;
        char *path;
} Gone;

/* Unlinks k (and its partitions) and reports each removal, children first. */
static int remove_reporting(Model *m, Kobject *k, ReconcileDiff diff, void *userdata)
{
        Gone *gone;
        size_t n = 0, max = k->n_children + 1;
        int r = 0;

        gone = calloc(max, sizeof(Gone));
        if (!gone)
                return -ENOMEM;
        for (Kobject *c = k->first_child; c; c = c->next_sibling)
                if (c->ktype->id == KTYPE_PARTITION && n < max - 1) {
                        gone[n].devpath = strdup(c->devpath);
                        gone[n].path = strdup(c->path);
                        n++;
                }
        gone[n].devpath = strdup(k->devpath);
        gone[n].path = strdup(k->path);
        n++;
        model_unlink(m, k);
        for (size_t i = 0; i < n; i++) {
                if (!gone[i].devpath || !gone[i].path)
                        r = -ENOMEM;
                else if (diff)
                        diff(userdata, "remove", gone[i].devpath, gone[i].path, NULL);
                free(gone[i].devpath);
                free(gone[i].path);
        }
        free(gone);
        return r;
}

/* Reports a new disk and each of its partitions. */
static void report_added(Kobject *k, ReconcileDiff diff, void *userdata)
{
        if (!diff)
                return;
        diff(userdata, "add", k->devpath, k->path, k);
        for (Kobject *c = k->first_child; c; c = c->next_sibling)
                if (c->ktype->id == KTYPE_PARTITION)
                        diff(userdata, "add", c->devpath, c->path, c);
}

int reconcile_all(Model *m, ReconcileDiff diff, void *userdata)
{
        _cleanup_(freep) Kobject **disks = NULL;
        BlockDev *devs = NULL;
        size_t n_devs = 0, n_disks = 0;
        Hashmap present;
        int r, changes = 0;

        r = list_block_devs(m, &devs, &n_devs);
        if (r < 0)
                return r;
        hashmap_init(&present);
        for (size_t i = 0; i < n_devs; i++)
                (void) hashmap_put(&present, devs[i].devpath, &devs[i]);

        /* Removals first: a reused name (loop0 detached and attached again) must go before it comes back. */
        r = kobject_children_sorted(m->block_kset, KTYPE_DISK, &disks, &n_disks);
        if (r < 0)
                goto out;
        for (size_t i = 0; i < n_disks; i++) {
                Kobject *d = disks[i], *next;
                if (!hashmap_get(&present, d->devpath)) {
                        changes += 1 + (int) d->n_children;
                        r = remove_reporting(m, d, diff, userdata);
                        if (r < 0)
                                goto out;
                        continue;
                }
                for (Kobject *c = d->first_child; c; c = next) {
                        next = c->next_sibling;
                        if (c->ktype->id == KTYPE_PARTITION && !hashmap_get(&present, c->devpath)) {
                                r = remove_reporting(m, c, diff, userdata);
                                if (r < 0)
                                        goto out;
                                changes++;
                        }
                }
        }

        for (size_t i = 0; i < n_devs; i++) {
                const BlockDev *b = &devs[i];
                if (model_find_devpath(m, b->devpath))
                        continue;
                if (!b->partition) {
                        Kobject *k;
                        r = scan_add_disk(m, b->devpath, &k);
                        if (r >= 0) {
                                changes++;
                                report_added(k, diff, userdata);
                        } else
                                log_warning_errno(r, "%s: cannot add the disk: %m", b->devpath);
                }
        }
        for (size_t i = 0; i < n_devs; i++) {
                const BlockDev *b = &devs[i];
                _cleanup_(freep) char *parent = NULL;
                Kobject *disk;
                const char *slash;

                if (!b->partition || model_find_devpath(m, b->devpath))
                        continue;
                slash = strrchr(b->devpath, '/');
                parent = strndup(b->devpath, (size_t) (slash - b->devpath));
                if (!parent) {
                        r = -ENOMEM;
                        goto out;
                }
                disk = model_find_devpath(m, parent);
                if (!disk || disk->ktype->id != KTYPE_DISK)
                        continue;
                Kobject *k;
                r = scan_add_partition(m, disk, b->name, &k);
                if (r >= 0) {
                        changes++;
                        report_added(k, diff, userdata);
                } else
                        log_warning_errno(r, "%s: cannot add the partition: %m", b->devpath);
        }
        r = changes;
out:
        hashmap_deinit(&present);
        block_devs_free(devs, n_devs);
        return r;
}
