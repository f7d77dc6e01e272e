/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "sysfs/reconcile.h"
#include "base/log-ratelimit.h"
#include "base/log.h"
#include "common/time-util.h"
#include "common/util.h"
#include "sysfs/listing.h"
#include "sysfs/scan.h"

/* A readlink, an open and a stat each: about half a millisecond a step. */
#define CLASS_BLOCK_PER_STEP 32

/* How long a block device whose class/block link is gone and whose directory stays is given to be
 * torn down (device_del() sends its remove in between), before it counts as gone: a tree that stays
 * so (a fixture) is then what a fresh start publishes. */
#define TEARDOWN_WAIT_USEC (100 * USEC_PER_MSEC)

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

static int partition_cmp(const void *a, const void *b)
{
        return strverscmp((*(Kobject *const *) a)->name, (*(Kobject *const *) b)->name);
}

/* A disk's partitions in the order the kernel adds and drops them, by number: sda2 before sda10. */
static int partitions_in_order(const Kobject *disk, Kobject ***ret, size_t *ret_n)
{
        return kobject_children_sorted_by(disk, KTYPE_PARTITION, partition_cmp, ret, ret_n);
}

/* Unlinks k (and its partitions) and reports each removal, children first; returns how many. */
static int remove_reporting(Model *m, Kobject *k, ReconcileDiff diff, void *userdata)
{
        _cleanup_(freep) Kobject **parts = NULL;
        size_t n_parts = 0, n = 0;
        Gone *gone;
        int r;

        r = partitions_in_order(k, &parts, &n_parts);
        if (r < 0)
                return r;
        /* What the objects were called must outlive them. */
        gone = calloc(n_parts + 1, sizeof(Gone));
        if (!gone)
                return -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n_parts; i++)
                r = gone_add(gone, &n, parts[i]);
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
        _cleanup_(freep) Kobject **parts = NULL;
        size_t n_parts = 0;
        int r;

        r = partitions_in_order(k, &parts, &n_parts);
        if (r < 0)
                return r;
        if (diff) {
                diff(userdata, "add", k->devpath, k->path, k);
                for (size_t i = 0; i < n_parts; i++)
                        diff(userdata, "add", parts[i]->devpath, parts[i]->path, parts[i]);
        }
        return (int) n_parts + 1;
}

typedef enum Phase {
        PHASE_LIST,   /* read class/block's links, a few entries a step */
        PHASE_REMOVE, /* each disk and partition of the model: still there? */
        PHASE_ADD,    /* each block device listed: in the model?  disks, then partitions */
        PHASE_FOLLOW, /* each disk: its queue, scheduler and hardware as sysfs has them now */
        PHASE_TEARDOWN, /* the devices being torn down: removed by their events, or else by us */
        PHASE_DONE,
} Phase;

struct Reconcile {
        const Sysfs *sysfs;
        Model *model;
        ReconcileDiff diff;
        ReconcileAwaited awaited;
        void *userdata;
        Phase phase;
        BlockDevReader *class_block; /* read CLASS_BLOCK_PER_STEP entries a step */
        size_t n_devs_max;
        BlockDev *devs;
        size_t n_devs;
        Kobject **disks; /* references: an event may remove one between two steps */
        size_t n_disks;
        size_t pos;
        bool partitions;
        int changes;
        Kobject **tearing_down; /* references */
        size_t n_tearing_down, n_tearing_down_max;
        uint64_t teardown_seen; /* µs: when the first of them was found */
};

static void release_disks(Reconcile *r)
{
        for (size_t i = r->pos; i < r->n_disks; i++)
                kobject_unref(r->model, r->disks[i]);
        r->disks = mfree(r->disks);
        r->n_disks = r->pos = 0;
}

static int snapshot_disks(Reconcile *r)
{
        Kobject *kset = r->model->block_kset;

        release_disks(r);
        r->disks = calloc(kset->n_children + 1, sizeof(Kobject *));
        if (!r->disks)
                return -ENOMEM;
        for (Kobject *k = kset->first_child; k; k = k->next_sibling)
                if (k->ktype->id == KTYPE_DISK)
                        r->disks[r->n_disks++] = kobject_ref(k);
        return 0;
}

Reconcile *reconcile_free(Reconcile *r)
{
        if (!r)
                return NULL;
        release_disks(r);
        for (size_t i = 0; i < r->n_tearing_down; i++)
                kobject_unref(r->model, r->tearing_down[i]);
        free(r->tearing_down);
        block_devs_free(r->devs, r->n_devs);
        block_dev_reader_free(r->class_block);
        free(r);
        return NULL;
}

int reconcile_new(const Sysfs *s, Model *m, ReconcileDiff diff, void *userdata, Reconcile **ret)
{
        _cleanup_(reconcile_freep) Reconcile *r = NULL;
        int k;

        r = calloc(1, sizeof(Reconcile));
        if (!r)
                return -ENOMEM;
        *r = (Reconcile){.sysfs = s, .model = m, .diff = diff, .userdata = userdata};
        k = block_dev_reader_open(s, &r->class_block);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(r);
        return 0;
}

void reconcile_set_awaited(Reconcile *r, ReconcileAwaited awaited)
{
        r->awaited = awaited;
}

static bool awaited(Reconcile *r, const char *devpath)
{
        return r->awaited && r->awaited(r->userdata, devpath);
}

/* 1 there, 0 not, negative errno: cannot tell (out of descriptors or memory: errno_is_resource()). */
static int dir_check(const Sysfs *s, const char *devpath, const char *name)
{
        _cleanup_(freep) char *rel = path_join(devpath, name);
        _cleanup_(closep) int fd = rel ? sysfs_open_dir(s, rel) : -ENOMEM;

        if (fd >= 0)
                return 1;
        return errno_is_resource(fd) ? fd : 0;
}

/* A reading that could not tell keeps the object as it is: only sysfs saying so removes one. */
static int cannot_tell(const Kobject *k, int error)
{
        /* Out of descriptors or memory, every object of a Rescan says so: a line each was hundreds. */
        log_ratelimit_warning_errno(error,
                                    "%s: cannot tell whether it is still there, kept as published: %m",
                                    k->devpath);
        return error;
}

static int remove_now(Reconcile *r, Kobject *k)
{
        int n = remove_reporting(r->model, k, r->diff, r->userdata);

        if (n > 0)
                r->changes += n;
        return n < 0 ? n : 0;
}

typedef enum Presence {
        PRESENT,       /* there, gone from the model, or its event (read, not applied) tells it */
        TEARING_DOWN,  /* its class/block link went and its directory stays, or a disk's queue went */
        GONE,
} Presence;

/*
 * A block device of the model, as sysfs and the events have it.  device_del() drops the class/block
 * link, sends the remove, then deletes the directory: while the directory stays, the remove is still
 * to come; once it is gone, the remove was read, is in the socket (awaited), or was lost.  Before all
 * that del_gendisk() takes the disk's queue directory away, and a disk never loses its queue while it
 * lives.  The socket is read (awaited()) only for a device that looks gone: a rescan asks this of
 * every partition.
 */
static Presence presence(Reconcile *r, Kobject *k)
{
        bool queue_went;
        int c;

        if (!k->linked)
                return PRESENT;
        c = scan_block_device_check(r->sysfs, k->devpath);
        if (c < 0)
                return cannot_tell(k, c), PRESENT;
        if (c > 0) {
                c = kobject_find_child_type(k, KTYPE_QUEUE) ? dir_check(r->sysfs, k->devpath, "queue") : 1;
                if (c < 0)
                        return cannot_tell(k, c), PRESENT;
                queue_went = c == 0;
                return queue_went && !awaited(r, k->devpath) ? TEARING_DOWN : PRESENT;
        }
        if (awaited(r, k->devpath))
                return PRESENT;
        c = dir_check(r->sysfs, k->devpath, "");
        if (c < 0)
                return cannot_tell(k, c), PRESENT;
        return c > 0 ? TEARING_DOWN : GONE;
}

/* The disk goes and comes back as sysfs has it now: what anyone can tell of a disk whose hardware or
 * queue changed, which a disk's never does while it lives (Device and Queue are constant). */
static int replace_disk(Reconcile *r, Kobject *disk)
{
        _cleanup_(freep) char *devpath = strdup(disk->devpath);
        Kobject *again;
        DirListing l;
        int k, removed;
        bool listed;

        if (!devpath)
                return -ENOMEM;
        /* Listed before the old one goes: out of descriptors or memory, the new one could not be read,
         * and the old one went for nothing (its partitions too) until the next Rescan: it stays, as
         * for any reading that cannot tell.  The add takes this listing (one deep listing, not two). */
        k = listing_read_at(r->sysfs, devpath, KTYPE_DISK, true, &l);
        if (k < 0 && errno_is_resource(k))
                return cannot_tell(disk, k), 0;
        listed = k >= 0;
        removed = remove_reporting(r->model, disk, r->diff, r->userdata);
        if (removed >= 0 && listed)
                k = scan_add_disk(r->sysfs, r->model, devpath, &l, &again);
        if (listed)
                listing_done(&l);
        if (removed < 0)
                return removed;
        r->changes += removed;
        if (k >= 0)
                k = report_added(again, r->diff, r->userdata);
        if (k >= 0)
                r->changes += k;
        /* Short of resources after all: the Rescan fails, saying so, rather than report success
         * with the disk left out. */
        return errno_is_resource(k) ? k : 0;
}

/* Gone from sysfs?  Then it goes from the model, reported; being torn down, it waits for
 * PHASE_TEARDOWN. */
static int remove_if_gone(Reconcile *r, Kobject *k)
{
        switch (presence(r, k)) {
        case PRESENT:
                return 0;
        case TEARING_DOWN:
                if (r->n_tearing_down == 0)
                        r->teardown_seen = now_usec();
                if (GREEDY_REALLOC(r->tearing_down, r->n_tearing_down_max, r->n_tearing_down + 1) < 0)
                        return -ENOMEM;
                r->tearing_down[r->n_tearing_down++] = kobject_ref(k);
                return 0;
        case GONE:
                break;
        }
        return remove_now(r, k);
}

/* Those being torn down: each gone from the model by its event, back, or else removed here once its
 * directory went or the wait is over (a disk whose queue alone went for good: replaced).  1 while
 * some wait on, 0 when none is left. */
static int step_teardown(Reconcile *r)
{
        bool waited = now_usec() - r->teardown_seen >= TEARDOWN_WAIT_USEC;
        size_t w = 0;
        int k = 0;

        for (size_t i = 0; i < r->n_tearing_down; i++) {
                Kobject *d = r->tearing_down[i];
                Presence p = k >= 0 ? presence(r, d) : PRESENT;

                if (p == TEARING_DOWN && !waited) {
                        r->tearing_down[w++] = d;
                        continue;
                }
                /* Its queue gone for good, its link there: a tree, not the kernel. */
                int c = p == TEARING_DOWN ? scan_block_device_check(r->sysfs, d->devpath) : 0;
                if (c < 0)
                        (void) cannot_tell(d, c);
                else if (c > 0)
                        k = replace_disk(r, d);
                else if (p != PRESENT)
                        k = remove_now(r, d);
                kobject_unref(r->model, d);
        }
        r->n_tearing_down = w;
        return k < 0 ? k : w > 0;
}

static int step_remove(Reconcile *r, Kobject *disk)
{
        _cleanup_(freep) Kobject **parts = NULL;
        size_t n_parts = 0;
        int k;

        if (!disk->linked)
                return 0;
        k = scan_block_device_check(r->sysfs, disk->devpath);
        if (k < 0)
                return cannot_tell(disk, k), 0;
        if (k == 0)
                return remove_if_gone(r, disk);
        k = partitions_in_order(disk, &parts, &n_parts);
        for (size_t i = 0; k >= 0 && i < n_parts; i++)
                k = remove_if_gone(r, parts[i]);
        return k < 0 ? k : 0;
}

static int step_add(Reconcile *r, const BlockDev *b)
{
        Kobject *k;
        int n;

        /* Its add on its way too: the kernel sends it once the directory is made (a disk's, once its
         * partitions are read), so one that comes later still is told twice, made up and its own. */
        if (b->partition != r->partitions || model_find_devpath(r->model, b->devpath) ||
            awaited(r, b->devpath))
                return 0;
        n = scan_add_block_device(r->sysfs, r->model, b->devpath, &k);
        if (n == -ENOMEM)
                return n;
        if (n == -EEXIST)
                return 0;
        /* Gone since class/block was listed: its remove event says so.  A partition of a disk
         * class/block does not list: the start said so once, and it stays out. */
        if (n == -ENOENT)
                log_debug("%s: gone before it could be read.", b->devpath);
        else if (n == -ENXIO)
                log_debug("%s: its disk is not listed in class/block; left out.", b->devpath);
        else if (n < 0)
                log_warning_errno(n, "%s: cannot add the block device: %m", b->devpath);
        if (n < 0)
                return 0;
        n = report_added(k, r->diff, r->userdata);
        if (n < 0)
                return n;
        r->changes += n;
        return 0;
}

/* What follows a disk, as sysfs has it now: its queue, the queue's scheduler, its hardware. */
static int step_follow(Reconcile *r, Kobject *disk)
{
        _cleanup_(freep) char *device = NULL;
        Kobject *q, *e;
        int k;

        if (!disk->linked)
                return 0;
        k = scan_disk_device_devpath(r->sysfs, r->model, disk, &device);
        if (k < 0 && errno_is_resource(k))
                return cannot_tell(disk, k), 0;
        q = kobject_find_child_type(disk, KTYPE_QUEUE);
        int c = dir_check(r->sysfs, disk->devpath, "queue");
        if (c < 0)
                return cannot_tell(disk, c), 0;
        bool has_queue = c > 0;
        /* Its queue went: being torn down (presence()), left to its remove while the teardown waits. */
        if (q && !has_queue)
                return scan_block_device_present(r->sysfs, disk->devpath) ? remove_if_gone(r, disk) : 0;
        /* Moved to other hardware, or a request queue that came. */
        if (k >= 0 && (!streq_ptr(device, disk->device ? disk->device->devpath : NULL) || (!q && has_queue)))
                return replace_disk(r, disk);

        if (!q)
                return 0;
        e = kobject_find_child_type(q, KTYPE_ELEVATOR);
        c = e ? dir_check(r->sysfs, e->devpath, "") : 1;
        if (c < 0)
                (void) cannot_tell(e, c);
        else if (c == 0)
                model_unlink(r->model, e);
        else if (!e) {
                k = scan_add_elevator(r->sysfs, r->model, q, &e);
                if (k == -ENOMEM)
                        return k;
        }
        return 0;
}

int reconcile_step(Reconcile *r)
{
        int k;

        switch (r->phase) {
        case PHASE_LIST:
                k = block_dev_reader_next(r->class_block, CLASS_BLOCK_PER_STEP, &r->devs, &r->n_devs,
                                          &r->n_devs_max);
                if (k != 0)
                        return k;
                r->pos = 0;
                /* Removals first: a name that comes back under another devpath (a disk moved to another
                 * controller) must go before it comes back. */
                k = snapshot_disks(r);
                if (k < 0)
                        return k;
                r->phase = PHASE_REMOVE;
                return 1;

        case PHASE_REMOVE:
                if (r->pos < r->n_disks) {
                        Kobject *d = r->disks[r->pos++];
                        k = step_remove(r, d);
                        kobject_unref(r->model, d);
                        return k < 0 ? k : 1;
                }
                release_disks(r);
                r->phase = PHASE_ADD;
                return 1;

        case PHASE_ADD:
                if (r->pos < r->n_devs) {
                        k = step_add(r, &r->devs[r->pos++]);
                        return k < 0 ? k : 1;
                }
                r->pos = 0;
                /* Disks first, so that a partition finds its disk in place. */
                if (!r->partitions) {
                        r->partitions = true;
                        return 1;
                }
                k = snapshot_disks(r);
                if (k < 0)
                        return k;
                r->phase = PHASE_FOLLOW;
                return 1;

        case PHASE_FOLLOW:
                if (r->pos < r->n_disks) {
                        Kobject *d = r->disks[r->pos++];
                        k = step_follow(r, d);
                        kobject_unref(r->model, d);
                        return k < 0 ? k : 1;
                }
                release_disks(r);
                r->phase = PHASE_TEARDOWN;
                return 1;

        case PHASE_TEARDOWN:
                k = step_teardown(r);
                if (k != 0)
                        return k;
                r->phase = PHASE_DONE;
                return 0;

        case PHASE_DONE:
                return 0;
        }
        return 0;
}

int reconcile_changes(const Reconcile *r)
{
        return r->changes;
}

int reconcile_all(const Sysfs *s, Model *m, ReconcileDiff diff, void *userdata)
{
        _cleanup_(reconcile_freep) Reconcile *r = NULL;
        int k;

        k = reconcile_new(s, m, diff, userdata, &r);
        if (k < 0)
                return k;
        while ((k = reconcile_step(r)) > 0)
                ;
        return k < 0 ? k : reconcile_changes(r);
}
