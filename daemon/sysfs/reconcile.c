/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "sysfs/reconcile.h"
#include "base/log.h"
#include "common/util.h"
#include "sysfs/scan.h"

typedef struct Gone {
        char *devpath;
        char *path;
} Gone;

static void gone_free(Gone *g, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(g[i].devpath);
                free(g[i].path);
        }
        free(g);
}

static int gone_add(Gone *g, size_t *n, const Kobject *k)
{
        g[*n].devpath = strdup(k->devpath);
        g[*n].path = strdup(k->path);
        (*n)++;
        return g[*n - 1].devpath && g[*n - 1].path ? 0 : -ENOMEM;
}

/* Unlinks k (and its partitions) and reports each removal, children first; returns how many. */
static int remove_reporting(Model *m, Kobject *k, ReconcileDiff diff, void *userdata)
{
        Gone *gone;
        size_t n = 0;
        int r = 0;

        /* What the objects were called must outlive them. */
        gone = calloc(k->n_children + 1, sizeof(Gone));
        if (!gone)
                return -ENOMEM;
        for (Kobject *c = k->first_child; r >= 0 && c; c = c->next_sibling)
                if (c->ktype->id == KTYPE_PARTITION)
                        r = gone_add(gone, &n, c);
        if (r >= 0)
                r = gone_add(gone, &n, k);
        if (r < 0) {
                gone_free(gone, n);
                return r;
        }
        model_unlink(m, k);
        for (size_t i = 0; diff && i < n; i++)
                diff(userdata, "remove", gone[i].devpath, gone[i].path, NULL);
        gone_free(gone, n);
        return (int) n;
}

/* Reports a new disk and each of its partitions; returns how many. */
static int report_added(Kobject *k, ReconcileDiff diff, void *userdata)
{
        int n = 1;

        if (diff)
                diff(userdata, "add", k->devpath, k->path, k);
        for (Kobject *c = k->first_child; c; c = c->next_sibling)
                if (c->ktype->id == KTYPE_PARTITION) {
                        if (diff)
                                diff(userdata, "add", c->devpath, c->path, c);
                        n++;
                }
        return n;
}

static int remove_gone(Model *m, const Hashmap *present, ReconcileDiff diff, void *userdata)
{
        _cleanup_(freep) Kobject **disks = NULL;
        size_t n_disks = 0;
        int r, changes = 0;

        r = kobject_children_sorted(m->block_kset, KTYPE_DISK, &disks, &n_disks);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_disks; i++) {
                Kobject *d = disks[i], *next;

                if (!hashmap_get(present, d->devpath)) {
                        r = remove_reporting(m, d, diff, userdata);
                        if (r < 0)
                                return r;
                        changes += r;
                        continue;
                }
                for (Kobject *c = d->first_child; c; c = next) {
                        next = c->next_sibling;
                        if (c->ktype->id != KTYPE_PARTITION || hashmap_get(present, c->devpath))
                                continue;
                        r = remove_reporting(m, c, diff, userdata);
                        if (r < 0)
                                return r;
                        changes += r;
                }
        }
        return changes;
}

/* Disks first, so that a partition finds its disk in place. */
static int add_new(const Sysfs *s, Model *m, const BlockDev *devs, size_t n, bool partitions,
                   ReconcileDiff diff, void *userdata)
{
        int changes = 0;

        for (size_t i = 0; i < n; i++) {
                Kobject *k;
                int r;

                if (devs[i].partition != partitions || model_find_devpath(m, devs[i].devpath))
                        continue;
                r = scan_add_block_device(s, m, devs[i].devpath, &k);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        log_warning_errno(r, "%s: cannot add the block device: %m", devs[i].devpath);
                        continue;
                }
                changes += report_added(k, diff, userdata);
        }
        return changes;
}

int reconcile_all(const Sysfs *s, Model *m, ReconcileDiff diff, void *userdata)
{
        BlockDev *devs = NULL;
        size_t n_devs = 0;
        Hashmap present;
        int r, changes = 0;

        r = scan_list_block_devs(s, &devs, &n_devs);
        if (r < 0)
                return r;
        hashmap_init(&present);
        for (size_t i = 0; r >= 0 && i < n_devs; i++) {
                r = hashmap_put(&present, devs[i].devpath, &devs[i]);
                if (r == -EEXIST)
                        r = 0;
        }

        /* Removals first: a name that comes back under another devpath (a disk moved to another
         * controller) must go before it comes back. */
        if (r >= 0)
                r = remove_gone(m, &present, diff, userdata);
        if (r >= 0) {
                changes += r;
                r = add_new(s, m, devs, n_devs, false, diff, userdata);
        }
        if (r >= 0) {
                changes += r;
                r = add_new(s, m, devs, n_devs, true, diff, userdata);
        }
        if (r >= 0)
                changes += r;

        hashmap_deinit(&present);
        block_devs_free(devs, n_devs);
        return r < 0 ? r : changes;
}
