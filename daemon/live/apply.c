/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "base/log.h"
#include "base/turn.h"
#include "live/live-internal.h"
#include "sysfs/scan.h"

/* One event's effect on the model, for what follows it. */
typedef struct Applied {
        Kobject *k;      /* what the event is about now, NULL if nothing (any more) */
        char *gone_path; /* the object path of what it removed */
        Kobject *disk;   /* a disk whose partitions changed (a reference) */
} Applied;

static void applied_done(Live *l, Applied *a)
{
        free(a->gone_path);
        kobject_unref(l->model, a->disk);
}

static Kobject *add_from_sysfs(Live *l, const char *devpath, Applied *a)
{
        Kobject *k;
        int r;

        r = scan_add_block_device(l->sysfs, l->model, devpath, &k);
        if (r == -EEXIST)
                return model_find_devpath(l->model, devpath);
        if (r == -ENOENT)
                log_debug("%s: gone before it could be read.", devpath);
        else if (r == -ENODEV)
                log_warning("%s: an event for what class/block does not list as a block device; ignored.",
                            devpath);
        else if (r < 0)
                log_warning_errno(r, "%s: cannot add the block device: %m", devpath);
        if (r < 0)
                return NULL;
        if (k->ktype->id == KTYPE_PARTITION && !a->disk)
                a->disk = kobject_ref(k->parent);
        return k;
}

/* sysfs, not the datagram, says whether something went: a synthetic remove (udevadm trigger
 * --action=remove) leaves the device where it is.  Returns whether it went. */
static bool remove_object(Live *l, Kobject *k, Applied *a)
{
        if (scan_block_device_present(l->sysfs, k->devpath)) {
                log_debug("%s: removed by an event, but class/block still lists it; it stays.", k->devpath);
                return false;
        }
        free(a->gone_path);
        a->gone_path = strdup(k->path);
        if (!a->gone_path)
                log_error("Out of memory: the remove event of %s names no object.", k->devpath);
        if (k->ktype->id == KTYPE_PARTITION && !a->disk)
                a->disk = kobject_ref(k->parent);
        model_unlink(l->model, k);
        return true;
}

/*
 * What follows a disk changes with the disk's event, with none of its own: attaching a loop device
 * changes its queue's limits; a media change gives the partitions the disk's new DISKSEQ.
 */
static void reread_with_followers(Live *l, Kobject *k)
{
        (void) changes_reread(l, k);
        if (k->ktype->id != KTYPE_DISK)
                return;
        for (Kobject *c = k->first_child; c; c = c->next_sibling) {
                (void) changes_reread(l, c);
                if (c->ktype->id != KTYPE_QUEUE)
                        continue;
                Kobject *e = kobject_find_child_type(c, KTYPE_ELEVATOR);
                if (e)
                        (void) changes_reread(l, e);
        }
}

/* Env keys a plain change carries: anything else (DM_*, MD_*, …) says more may have moved. */
static const char *const plain_keys[] = {
        "ACTION", "DEVPATH", "SUBSYSTEM", "SEQNUM", "MAJOR", "MINOR", "DEVNAME", "DEVTYPE", "DISKSEQ",
        "PARTN", "PARTNAME", "SYNTH_UUID", "RESIZE", "DISK_RO", "DISK_MEDIA_CHANGE",
};

static bool plain_change(const Uevent *u)
{
        for (size_t i = 0; i < u->n_env; i++) {
                bool known = false;
                for (size_t j = 0; j < ELEMENTSOF(plain_keys) && !known; j++)
                        known = streq(u->env_keys[i], plain_keys[j]);
                if (!known)
                        return false;
        }
        return true;
}

/* sliced: for a slice of the turn (base/turn.h) at most, as a storm of changes must not stall the
 * callers; else all of them. */
static void apply_pending_changes(Live *l, bool sliced);

static void on_pending_idle(uv_idle_t *h)
{
        apply_pending_changes(h->data, true);
}

static void defer_change(Live *l, Kobject *k, bool plain)
{
        for (size_t i = l->pending_pos; i < l->n_pending; i++)
                if (l->pending[i].k == k) {
                        l->pending[i].plain = l->pending[i].plain && plain;
                        return;
                }
        if (GREEDY_REALLOC(l->pending, l->n_pending_max, l->n_pending + 1) < 0) {
                /* Read it now rather than not at all. */
                reread_with_followers(l, k);
                return;
        }
        l->pending[l->n_pending++] = (PendingChange){kobject_ref(k), plain};
        l->n_deferred++;
        (void) uv_idle_start(&l->pending_idle, on_pending_idle);
}

static void apply_one(Live *l, const PendingChange *c)
{
        Kobject *k = c->k;
        TURN_PART("the change of %s", k->devpath);

        if (k->linked) {
                char **before = stacking_neighbours(l, k);
                /* A plain change re-reads what such an event alters, and lists the directory; only
                 * when that moved is the rest read, with what follows the disk. */
                if (!c->plain || !scan_shape_unchanged(l->sysfs, k) ||
                    changes_refresh(l, k, REFRESH_EVENT) != 0)
                        reread_with_followers(l, k);
                live_flush(l);
                stacking_refresh_neighbours(l, k, before);
        }
        kobject_unref(l->model, k);
}

/* Applies deferred changes in arrival order until the queue is empty or the slice is over. */
static void apply_pending_changes(Live *l, bool sliced)
{
        uint64_t start = now_usec();

        while (l->pending_pos < l->n_pending) {
                /* Taken off the queue first: reading may announce, and nothing may see it twice. */
                PendingChange c = l->pending[l->pending_pos++];
                if (!c.k) /* applied ahead of its turn */
                        continue;
                apply_one(l, &c);
                if (sliced && turn_slice_over(start))
                        return;
        }
        l->pending = mfree(l->pending);
        l->n_pending = l->n_pending_max = l->pending_pos = 0;
        (void) uv_idle_stop(&l->pending_idle);
}

void live_apply_pending(Live *l)
{
        apply_pending_changes(l, false);
}

static Kobject *disk_of(Kobject *k)
{
        for (; k; k = k->parent)
                if (k->ktype->id == KTYPE_DISK)
                        return k;
        return NULL;
}

/*
 * Only the disk's own changes come before what an event or a write does to it: applying every
 * deferred change there held the loop for all of them (1,000 disks' DM change events, then an add:
 * 437 ms in the add's turn).  The others keep their turn in the queue.
 */
void live_apply_pending_of(Live *l, Kobject *k)
{
        Kobject *disk = disk_of(k);

        if (!disk)
                return;
        for (size_t i = l->pending_pos; i < l->n_pending; i++) {
                PendingChange c = l->pending[i];
                /* A removed one is read by nobody, in its turn or now. */
                if (!c.k || !c.k->linked || disk_of(c.k) != disk)
                        continue;
                l->pending[i].k = NULL;
                apply_one(l, &c);
        }
}

/* The disk an event is about, or will be once applied: for a partition not in the model yet, the
 * disk its directory is in. */
static Kobject *event_disk(Live *l, const char *devpath)
{
        Kobject *k = devpath ? model_find_devpath(l->model, devpath) : NULL;
        const char *slash;

        if (k || !devpath || !(slash = strrchr(devpath, '/')))
                return k;
        _cleanup_(freep) char *dir = strndup(devpath, slash - devpath);
        return dir ? model_find_devpath(l->model, dir) : NULL;
}

static void apply(Live *l, const Uevent *u, Applied *a)
{
        Kobject *k = model_find_devpath(l->model, u->devpath);
        /* Written into a uevent file (udevadm trigger): the kernel marks it, since 4.13 even without
         * arguments (SYNTH_UUID=0).  It changed nothing in sysfs: nothing to read again. */
        bool synthetic = uevent_get(u, "SYNTH_UUID");

        /* Ksets, queues, schedulers and devices follow their disk, never an event of their own. */
        if (k && !ktype_is_block_device(k->ktype)) {
                log_debug("%s: an event for a %s, which follows its disk; not applied.", u->devpath,
                          k->ktype->name);
                a->k = k;
                return;
        }

        switch (u->action) {
        case UEVENT_ADD:
                /* An add for what we have is harmless: the scan may have seen it first. */
                if (k) {
                        if (!synthetic)
                                reread_with_followers(l, k);
                        a->k = k;
                } else
                        a->k = add_from_sysfs(l, u->devpath, a);
                return;

        case UEVENT_REMOVE:
                if (k && !remove_object(l, k, a))
                        a->k = k;
                return;

        case UEVENT_MOVE: {
                /* A rename changes the object path: the old object goes, the new one comes. */
                Kobject *old = u->devpath_old ? model_find_devpath(l->model, u->devpath_old) : NULL;
                if (old && ktype_is_block_device(old->ktype))
                        (void) remove_object(l, old, a);
                /* What the event names may have gone with the old one: the same devpath, or below it. */
                k = model_find_devpath(l->model, u->devpath);
                a->k = k ? k : add_from_sysfs(l, u->devpath, a);
                return;
        }

        case UEVENT_CHANGE:
        case UEVENT_ONLINE:
        case UEVENT_OFFLINE:
        case UEVENT_BIND:
        case UEVENT_UNBIND:
                if (!k) {
                        /* A change for something we never saw: its add was lost. */
                        a->k = add_from_sysfs(l, u->devpath, a);
                        return;
                }
                /* Read once this loop iteration's burst is in: a storm of changes of one object
                 * costs one reading. */
                if (!synthetic)
                        defer_change(l, k, plain_change(u));
                a->k = k;
                return;

        case _UEVENT_ACTION_MAX:
                break;
        }
}

void live_on_uevent(UeventSource *s, Uevent *u, void *userdata)
{
        _cleanup_(uevent_freep) _unused_ Uevent *owned = u;
        Live *l = userdata;
        const char *action = uevent_action_to_string(u->action);
        Applied a = {};
        char **before;

        if (!streq_ptr(u->subsystem, "block"))
                return;
        TURN_PART("the uevent %s %s", action, u->devpath);
        log_debug("uevent %s %s", action, u->devpath);
        /* Whatever comes or goes is applied after the changes of its disk before it. */
        if (u->action == UEVENT_ADD || u->action == UEVENT_REMOVE || u->action == UEVENT_MOVE) {
                live_apply_pending_of(l, event_disk(l, u->devpath));
                live_apply_pending_of(l, event_disk(l, u->devpath_old));
        }

        /* What the object linked to is known only before the event changes it. */
        before = stacking_neighbours(
                        l, model_find_devpath(l->model, u->devpath_old ? u->devpath_old : u->devpath));

        apply(l, u, &a);
        /* Whole objects are announced before what refers to them, and before the event. */
        live_flush(l);
        if (a.disk && a.disk->linked)
                (void) changes_refresh(l, a.disk, REFRESH_STRUCTURE);
        stacking_refresh_neighbours(l, a.k, before);

        (void) live_publish_event(l, action, u->devpath,
                                  a.k           ? a.k->path
                                  : a.gone_path ? a.gone_path
                                                : "/",
                                  u->n_env, u->env_keys, u->env_values);
        applied_done(l, &a);
}
