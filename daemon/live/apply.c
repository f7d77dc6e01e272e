/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/turn.h"
#include "live/live-internal.h"
#include "sysfs/listing.h"
#include "sysfs/scan.h"
#include "sysfs/shape-check.h"

/* One event's effect on the model, for what follows it. */
typedef struct Applied {
        Kobject *k;      /* what the event is about now, NULL if nothing (any more) */
        char *gone_path; /* the object path of what it removed */
        Kobject *disk;   /* a disk whose partitions changed (a reference) */
        bool came_back;  /* it removed a device whose name sysfs lists again: read the new one */
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
        else if (r == -ENXIO)
                log_warning("%s: an event for a partition whose disk class/block does not list; ignored.",
                            devpath);
        else if (r < 0)
                log_warning_errno(r, "%s: cannot add the block device: %m", devpath);
        if (r < 0)
                return NULL;
        if (k->ktype->id == KTYPE_PARTITION && !a->disk)
                a->disk = kobject_ref(k->parent);
        return k;
}

/*
 * A disk there already when a rename's old object goes was added while that object held the names of
 * its partitions (renames read late: the soak audit's sda, sda-mv, sda), and its partitions were
 * refused (EEXIST): they come now that the names are free.
 */
static void add_partitions_freed(Live *l, Kobject *disk, Applied *a)
{
        _cleanup_(closep) int fd = -1;
        SysfsEntry *e = NULL;
        size_t n = 0;

        if (disk->ktype->id != KTYPE_DISK)
                return;
        fd = sysfs_open_dir(l->sysfs, disk->devpath);
        if (fd < 0 || sysfs_list(fd, &e, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                const char *name = e[i].name;
                _cleanup_(freep) char *devpath = NULL, *partition = NULL;

                if (e[i].type != SYSFS_ENTRY_DIR || listing_kind_handles(KTYPE_DISK, name) ||
                    kobject_find_child(disk, name) || model_find_name(l->model, name))
                        continue;
                partition = path_join(name, "partition");
                if (!partition || faccessat(fd, partition, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                devpath = path_join(disk->devpath, name);
                if (devpath)
                        (void) add_from_sysfs(l, devpath, a);
        }
        sysfs_entries_free(e, n);
}

/*
 * sysfs says whether something went: a synthetic remove (udevadm trigger --action=remove) leaves the
 * device where it is.  But the kernel deletes the device's class/block link before it sends its
 * remove: one the kernel sent (by_kernel: not marked SYNTH_UUID, as it marks every synthetic event
 * since 4.13) for a name class/block lists again means another device came under that name before
 * the event was read (a loop device detached and attached at once).  That one is not the object the
 * clients hold: the object goes, and the new one is read after the event.  Returns whether it went.
 */
static bool remove_object(Live *l, Kobject *k, Applied *a, bool by_kernel)
{
        if (scan_block_device_present(l->sysfs, k->devpath)) {
                if (!by_kernel) {
                        log_debug("%s: removed by an event, but class/block still lists it; it stays.",
                                  k->devpath);
                        return false;
                }
                log_debug("%s: removed by the kernel, and one of that name is back already.", k->devpath);
                a->came_back = true;
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

/*
 * Readings of objects made while events were queued: a change event queued before a reading of its
 * object needs none of its own, as the kernel changes sysfs before it sends the event.
 */
typedef struct ReadMark {
        Kobject *k;            /* not a reference: apply_forget() drops the mark when k goes */
        uint64_t queued_plain; /* events queued when what a plain change alters was last read */
        uint64_t queued_whole; /* … when all of it was */
} ReadMark;

static const char *read_mark_key(const void *value)
{
        return ((const ReadMark *) value)->k->path;
}

static ReadMark *read_mark(Live *l, const Kobject *k)
{
        ReadMark *m = hashmap_get(&l->read_marks, k->path);
        return m && m->k == k ? m : NULL;
}

/* Has k been read, as much as this change reads, since the index-th queued event came? */
static bool read_since(Live *l, const Kobject *k, uint64_t index, bool plain)
{
        ReadMark *m = index > 0 ? read_mark(l, k) : NULL;

        return m && (m->queued_whole >= index || (plain && m->queued_plain >= index));
}

static void mark_read(Live *l, Kobject *k, bool whole)
{
        ReadMark *m = read_mark(l, k);

        if (!m) {
                /* Without a mark the next change reads again: slower, not wrong. */
                m = malloc(sizeof(ReadMark));
                if (!m)
                        return;
                *m = (ReadMark){.k = k};
                if (hashmap_put(&l->read_marks, m) < 0) {
                        free(m);
                        return;
                }
        }
        m->queued_plain = l->n_queued;
        if (whole)
                m->queued_whole = l->n_queued;
}

static void forget_read_marks(Live *l)
{
        ReadMark *m;
        size_t i = 0;

        while ((m = hashmap_iterate(&l->read_marks, &i)))
                free(m);
        hashmap_deinit(&l->read_marks);
}

void apply_init(Live *l)
{
        hashmap_init(&l->read_marks, read_mark_key);
}

void apply_forget(Live *l, Kobject *k)
{
        ReadMark *m = hashmap_size(&l->read_marks) > 0 ? read_mark(l, k) : NULL;

        if (m) {
                (void) hashmap_remove(&l->read_marks, m);
                free(m);
        }
}

void apply_done(Live *l)
{
        for (size_t i = l->queue_pos; i < l->n_queue; i++)
                uevent_free(l->queue[i].u);
        l->queue = mfree(l->queue);
        l->n_queue = l->n_queue_max = l->queue_pos = 0;
        forget_read_marks(l);
}

/* The reading a change event asks for (index: its place in the queue; 0 if it was not queued). */
static void read_changed(Live *l, Kobject *k, uint64_t index, bool plain)
{
        char **before;
        bool whole;

        if (!k->linked || read_since(l, k, index, plain))
                return;
        before = stacking_neighbours(l, k);
        /* A plain change re-reads what such an event alters, and lists the directory; only when that
         * moved is the rest read, with what follows the disk. */
        whole = !plain || !shape_check_unchanged(l->sysfs, k) || changes_refresh(l, k, REFRESH_EVENT) != 0;
        if (whole)
                reread_with_followers(l, k);
        mark_read(l, k, whole);
        live_flush(l);
        stacking_refresh_neighbours(l, k, before);
}

/* Change events wait for the end of the loop iteration they came in, so that a burst of them costs
 * one reading an object; ones of other kinds wait only when one does. */
static bool waits_for_burst(const Uevent *u)
{
        switch (u->action) {
        case UEVENT_CHANGE:
        case UEVENT_ONLINE:
        case UEVENT_OFFLINE:
        case UEVENT_BIND:
        case UEVENT_UNBIND:
                /* udevadm trigger's (SYNTH_UUID) changed nothing in sysfs: nothing to read. */
                return !uevent_get(u, "SYNTH_UUID");
        default:
                return false;
        }
}

static void apply_event(Live *l, const Uevent *u, uint64_t index);

/* sliced: for a slice of the turn (base/turn.h) at most, as a storm of changes must not stall the
 * callers; else all of them. */
static void apply_queued_slice(Live *l, bool sliced)
{
        uint64_t start = now_usec();

        while (l->queue_pos < l->n_queue) {
                /* Taken off the queue first: nothing may apply it twice. */
                _cleanup_(uevent_freep) Uevent *u = TAKE_PTR(l->queue[l->queue_pos].u);
                uint64_t index = l->queue[l->queue_pos++].index;

                apply_event(l, u, index);
                /* Held by what its signal did to the bus (live_hold() stopped the idle handle):
                 * the rest waits now, not at the end of the slice. */
                if (sliced && (l->held || turn_slice_over(start))) {
                        /* A storm that never lets the queue empty must not grow it for good. */
                        if (l->queue_pos >= 1024 && l->queue_pos * 2 >= l->n_queue) {
                                memmove(l->queue, l->queue + l->queue_pos,
                                        (l->n_queue - l->queue_pos) * sizeof(QueuedEvent));
                                l->n_queue -= l->queue_pos;
                                l->queue_pos = 0;
                        }
                        return;
                }
        }
        l->queue = mfree(l->queue);
        l->n_queue = l->n_queue_max = l->queue_pos = 0;
        /* What comes next is queued after every reading: no mark can spare it one. */
        forget_read_marks(l);
        (void) uv_idle_stop(&l->queue_idle);
}

/* What it applied is told to whoever waits for it (Settle): from an idle callback the loop may sleep
 * next, before any later phase of the turn could tell them. */
static void apply_queued(Live *l, bool sliced)
{
        uint64_t applied = live_events_applied(l);

        apply_queued_slice(l, sliced);
        if (live_events_applied(l) != applied && l->ops->events_applied)
                l->ops->events_applied(l->userdata);
}

static void on_queue_idle(uv_idle_t *h)
{
        apply_queued(h->data, true);
}

void live_apply_queued(Live *l)
{
        apply_queued(l, false);
}

size_t apply_at_exit(Live *l)
{
        size_t left;

        apply_queued(l, true);
        left = l->n_queue - l->queue_pos;
        apply_done(l);
        (void) uv_idle_stop(&l->queue_idle);
        return left;
}

bool apply_queued_names(const Live *l, const char *devpath)
{
        for (size_t i = l->queue_pos; i < l->n_queue; i++) {
                const Uevent *u = l->queue[i].u;
                if (streq_ptr(u->devpath, devpath) || streq_ptr(u->devpath_old, devpath))
                        return true;
        }
        return false;
}

void apply_held(Live *l)
{
        if (l->held)
                (void) uv_idle_stop(&l->queue_idle);
        else if (l->queue_pos < l->n_queue)
                (void) uv_idle_start(&l->queue_idle, on_queue_idle);
}

static Kobject *disk_of(Kobject *k)
{
        for (; k; k = k->parent)
                if (k->ktype->id == KTYPE_DISK)
                        return k;
        return NULL;
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

static void apply(Live *l, const Uevent *u, uint64_t index, Applied *a)
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
                if (k && !remove_object(l, k, a, !synthetic))
                        a->k = k;
                return;

        case UEVENT_MOVE: {
                /* A rename changes the object path: the old object goes, the new one comes. */
                Kobject *old = u->devpath_old ? model_find_devpath(l->model, u->devpath_old) : NULL;
                if (old && ktype_is_block_device(old->ktype))
                        (void) remove_object(l, old, a, false);
                /* What the event names may have gone with the old one: the same devpath, or below it. */
                k = model_find_devpath(l->model, u->devpath);
                if (k && old)
                        add_partitions_freed(l, k, a);
                a->k = k ? k : add_from_sysfs(l, u->devpath, a);
                /* The event is about the device at its new devpath: gone too by now, it names no
                 * object, not the old one it removed under another devpath (a client would take that
                 * for the device).  A move onto itself names what it removed, as a remove does. */
                if (!a->k && !streq_ptr(u->devpath_old, u->devpath))
                        a->gone_path = mfree(a->gone_path);
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
                if (!synthetic)
                        read_changed(l, k, index, plain_change(u));
                a->k = k;
                return;

        case _UEVENT_ACTION_MAX:
                break;
        }
}

/* Whole objects are announced before what refers to them: the disk's Partitions, the links of the
 * devices k linked to before (taken over) and links to now. */
static void announce_applied(Live *l, const Applied *a, char **before)
{
        live_flush(l);
        if (a->disk && a->disk->linked)
                (void) changes_refresh(l, a->disk, REFRESH_STRUCTURE);
        stacking_refresh_neighbours(l, a->k, before);
}

/* The device that came under a removed one's name, announced after the remove's Uevent: its own add
 * event, which follows, then finds it read. */
static void add_back(Live *l, const char *devpath)
{
        Applied a = {};

        a.k = add_from_sysfs(l, devpath, &a);
        announce_applied(l, &a, NULL);
        applied_done(l, &a);
}

/* Applies the event and then sends its Uevent signal: what it changed is announced first. */
static void apply_event(Live *l, const Uevent *u, uint64_t index)
{
        const char *action = uevent_action_to_string(u->action);
        Applied a = {};
        char **before;
        TURN_PART("the uevent %s %s", action, u->devpath);

        log_debug("uevent %s %s", action, u->devpath);
        /* What the object linked to is known only before the event changes it. */
        before = stacking_neighbours(
                        l, model_find_devpath(l->model, u->devpath_old ? u->devpath_old : u->devpath));

        apply(l, u, index, &a);
        /* And before the event. */
        announce_applied(l, &a, before);

        (void) live_publish_event(l, action, u->devpath,
                                  a.k           ? a.k->path
                                  : a.gone_path ? a.gone_path
                                                : "/",
                                  u->n_env, u->env_keys, u->env_values);
        if (a.came_back)
                add_back(l, u->devpath);
        applied_done(l, &a);
}

/*
 * Only the disk's own queued changes are read before a write to it, so that its announcement lists
 * what the write did (reading every queued one there held the loop: 1,000 disks' DM change events,
 * 437 ms).  They keep their place in the queue, and their Uevents follow in it; the reading spares
 * them theirs.  Not past an event that adds or removes something of the disk: that comes first.
 */
void live_read_queued_changes_of(Live *l, Kobject *k)
{
        Kobject *disk = disk_of(k);

        for (size_t i = l->queue_pos; disk && i < l->n_queue; i++) {
                const Uevent *u = l->queue[i].u;
                Kobject *c;

                if (!waits_for_burst(u)) {
                        if (event_disk(l, u->devpath) == disk || event_disk(l, u->devpath_old) == disk)
                                return;
                        continue;
                }
                c = model_find_devpath(l->model, u->devpath);
                if (c && ktype_is_block_device(c->ktype) && disk_of(c) == disk)
                        read_changed(l, c, l->queue[i].index, plain_change(u));
        }
}

void live_on_uevent(UeventSource *s, Uevent *u, void *userdata)
{
        _cleanup_(uevent_freep) Uevent *owned = u;
        Live *l = userdata;

        if (!streq_ptr(u->subsystem, "block"))
                return;
        /* In arrival order, each Uevent signal after what its event changed: behind a change waiting
         * for its burst, everything waits.  Before the start nobody is told anything: the name is
         * taken on a model with every event applied. */
        if (!l->queue_only && (!l->announce || (l->queue_pos == l->n_queue && !waits_for_burst(u)))) {
                apply_event(l, u, 0);
                return;
        }
        if (GREEDY_REALLOC(l->queue, l->n_queue_max, l->n_queue + 1) < 0) {
                log_error("Out of memory: the uevents queued are applied at once.");
                apply_queued(l, false);
                apply_event(l, u, 0);
                return;
        }
        l->queue[l->n_queue++] = (QueuedEvent){TAKE_PTR(owned), ++l->n_queued};
        if (!l->held)
                (void) uv_idle_start(&l->queue_idle, on_queue_idle);
}
