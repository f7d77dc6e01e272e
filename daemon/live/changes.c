/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>

#include "base/hash.h"
#include "base/log-ratelimit.h"
#include "base/log.h"
#include "live/live-internal.h"
#include "live/record.h"
#include "model/iface.h"
#include "sysfs/scan.h"
#include "sysfs/typed-value.h"
#include "sysfs/values.h"

/*
 * Which properties did an event change?  Each object's record (live/record.h) has one slot per
 * typed property that announces its changes (slot_typed()), then one per raw attribute, interface
 * by interface in their order.
 */

size_t changes_n_slots(const Kobject *k)
{
        size_t n = 0;
        Iface iface;

        for (size_t i = 0; i < kobject_n_ifaces(k); i++) {
                kobject_iface(k, i, &iface);
                for (const PropertyInfo *p = iface.properties; p->name; p++)
                        n += slot_typed(p);
                n += iface.attrs ? iface.attrs->n_attrs : 0;
        }
        return n;
}

typedef struct Reading {
        ChangeRecord *record;
        StackingLinks links; /* as read now, if read */
        bool file_gone;      /* an attribute's file (or its group's directory) is no longer there */
} Reading;

static void reading_done(Reading *r)
{
        free(r->record);
        strv_free(r->links.holders);
        strv_free(r->links.slaves);
}

static int read_typed(Live *l, ObjDir *d, const PropertyInfo *p, Reading *rd)
{
        TypedValue v;
        int r;

        r = typed_value_read(d, l->model, p, &v);
        if (r < 0)
                return r;
        switch (p->signature[0]) {
        case 'u':
        case 't':
        case 'b':
                record_put_number(rd->record, v.number);
                break;
        case 's':
        case 'o':
                record_put_string(rd->record, strempty(v.string));
                break;
        default:
                record_put_fingerprint(rd->record, typed_value_hash(&v, FNV1A_INIT));
        }
        rd->record->value_bytes += typed_value_size(&v);
        if (p->id == PROP_HOLDERS || p->id == PROP_SLAVES) {
                assert(v.strv_ownership == STRV_OWNED); /* kept past this turn */
                if (p->id == PROP_HOLDERS) {
                        rd->links.holders = TAKE_PTR(v.strv);
                        rd->links.read_holders = true;
                } else {
                        rd->links.slaves = TAKE_PTR(v.strv);
                        rd->links.read_slaves = true;
                }
        }
        typed_value_done(&v);
        return 0;
}

static void read_attr(ObjDir *d, const Iface *iface, const Attr *a, Reading *rd)
{
        ChangeRecord *rec = rd->record;
        const char *v;
        int r;

        if (a->flags & ATTR_VOLATILE) {
                record_put_volatile(rec);
                return;
        }
        /* Signals and GetAll publish an unreadable file as "": that is what a client holds.  Not a
         * file the process could not open for want of descriptors or memory: read_slots() voids
         * that reading. */
        r = objdir_read_attr(d, iface, a, &v);
        if (r < 0)
                v = "";
        if (r == -ENOENT && objdir_attr_gone(d, iface, a))
                rd->file_gone = true;
        rec->value_bytes += 8 + strlen(v);
        record_put_string(rec, v);
}

/* Fills a new reading, from what d read already and what it reads now; what `how` does not re-read
 * is copied from old (which it then requires). */
static int read_slots(Live *l, Kobject *k, Refresh how, const ChangeRecord *old, ObjDir *d, Reading *ret)
{
        size_t n = changes_n_slots(k), old_offset = 0;
        bool whole = true; /* every slot read now, none copied from old */
        Reading rd = {};
        Iface iface;
        int r;

        r = record_new(n, &rd.record);
        if (r < 0)
                return r;

        for (size_t i = 0; i < kobject_n_ifaces(k); i++) {
                kobject_iface(k, i, &iface);
                for (const PropertyInfo *p = iface.properties; p->name; p++) {
                        if (!slot_typed(p))
                                continue;
                        RecordSlot was = old ? record_next(old, &old_offset) : (RecordSlot){};
                        if (reads_typed(k, &iface, p, how, d)) {
                                r = read_typed(l, d, p, &rd);
                                if (r < 0) {
                                        reading_done(&rd);
                                        return r;
                                }
                        } else {
                                record_put_slot(rd.record, was);
                                whole = false;
                        }
                }
                for (size_t j = 0; iface.attrs && j < iface.attrs->n_attrs; j++) {
                        const Attr *a = &iface.attrs->attrs[j];
                        RecordSlot was = old ? record_next(old, &old_offset) : (RecordSlot){};
                        if (reads_attr(k, &iface, a, how, d))
                                read_attr(d, &iface, a, &rd);
                        else {
                                record_put_slot(rd.record, was);
                                whole = false;
                        }
                }
        }
        assert(!old || old_offset == old->size);
        if (d->resource_error < 0) { /* values read as 0 or "" that sysfs may not hold */
                reading_done(&rd);
                return d->resource_error;
        }
        /* The size estimate is the last whole reading's: a few values re-read must not be added to it
         * again (the poll did, every round, until GetManagedObjects was refused as too large).  A reply
         * that read every value is a whole reading: kept from the first one, values that shrank
         * since without an event refused GetManagedObjects a quarter below the limit. */
        if (old && !whole && how != REFRESH_RECORD && how != REFRESH_ALL)
                rd.record->value_bytes = old->value_bytes;
        *ret = rd;
        return 0;
}

/* Did a queue's scheduler attribute change between two readings?  Its iosched kobject then did too.
 * Not when the file could not be read now (recorded as ""): that says nothing of a switch, and taking
 * it as one removed the iosched on a driver's passing EIO.  The first reading that says something
 * again is taken as a switch, as one may have come meanwhile: the iosched is read anew. */
static bool scheduler_changed(const Kobject *k, const ChangeRecord *old, const ChangeRecord *now)
{
        char value[RECORD_SHORT_MAX + 1];
        size_t s = 0;
        Iface iface;

        if (k->ktype->id != KTYPE_QUEUE)
                return false;
        for (size_t i = 0; i < 2; i++) {
                kobject_iface(k, i, &iface);
                for (const PropertyInfo *p = iface.properties; p->name; p++)
                        s += slot_typed(p);
                if (iface.kind != IFACE_KIND)
                        s += iface.attrs ? iface.attrs->n_attrs : 0;
        }
        kobject_iface(k, 1, &iface);
        for (size_t j = 0; iface.attrs && j < iface.attrs->n_attrs; j++)
                if (streq(iface.attrs->attrs[j].file, "scheduler")) {
                        RecordSlot is = record_slot_at(now, s + j);

                        if (record_slot_string(is, value) && isempty(value))
                                return false;
                        return !record_slot_equal(record_slot_at(old, s + j), is);
                }
        return false;
}

/*
 * PropertiesChanged, per interface, for every slot that differs (every one when there is no old
 * reading).  only_same_in: if not NULL, only the interfaces that stay the same in that shape.
 */
static int announce(Live *l, Kobject *k, const ChangeRecord *old, const ChangeRecord *now,
                    const Shape *only_same_in, ObjDir *d)
{
        size_t old_offset = 0, now_offset = 0;
        int count = 0, r;
        Iface iface;

        for (size_t i = 0; i < kobject_n_ifaces(k); i++) {
                _cleanup_(strv_freep) char **changed = NULL;
                size_t n_changed = 0;
                bool skip;

                kobject_iface(k, i, &iface);
                skip = only_same_in && !iface_same_in(&iface, only_same_in);
                for (const PropertyInfo *p = iface.properties; p->name; p++) {
                        if (!slot_typed(p))
                                continue;
                        RecordSlot is = record_next(now, &now_offset);
                        bool same = old && record_slot_equal(record_next(old, &old_offset), is);
                        if (!skip && !same) {
                                r = strv_extend(&changed, &n_changed, p->name);
                                if (r < 0)
                                        return r;
                        }
                }
                for (size_t j = 0; iface.attrs && j < iface.attrs->n_attrs; j++) {
                        const Attr *a = &iface.attrs->attrs[j];
                        RecordSlot is = record_next(now, &now_offset);
                        bool same = old && record_slot_equal(record_next(old, &old_offset), is);
                        if (skip || (a->flags & ATTR_VOLATILE) || same)
                                continue;
                        r = strv_extend(&changed, &n_changed, a->member);
                        if (r < 0)
                                return r;
                }
                if (n_changed == 0)
                        continue;
                l->ops->properties_changed(l->userdata, k, iface.name, changed, NULL, d);
                count += (int) n_changed;
        }
        return count;
}

/*
 * Is there an iosched, by the queue's scheduler file as this reading read it?  1 yes (a scheduler is
 * active), 0 no ("none"), -1 the reading does not say (it read no scheduler file, or one that brackets
 * no name).
 */
static int elevator_wanted(const Kobject *queue, ObjDir *d)
{
        _cleanup_(freep) char *active = NULL;
        const char *text;

        if (queue->ktype->id != KTYPE_QUEUE || !(text = objdir_value(d, "scheduler")) ||
            parse_scheduler(text, NULL, &active) < 0 || isempty(active))
                return -1;
        return !streq(active, "none");
}

/*
 * Is the model's iosched object not the directory's, where the scheduler file this reading read says
 * it may not be?  The kernel switches a scheduler in steps (elevator_switch() changes what `scheduler`
 * says; elv_change_done() then removes the old iosched directory and adds the new one), and a reading
 * of the file and a listing of the directory are two moments: a switch between them leaves the object
 * and the file telling two states, and the next switch may be back to what the record holds.  Every
 * reading of the file must put that right, not only one that finds the file changed, or Elevator
 * names a removed iosched (or none) until a Rescan.  The directory decides, as at a scan; it is
 * looked at only when the file and the object disagree.
 */
static bool elevator_astray(Live *l, const Kobject *queue, int wanted)
{
        bool have = kobject_find_child_type(queue, KTYPE_ELEVATOR) != NULL;
        _cleanup_(freep) char *devpath = NULL;

        if (wanted < 0 || wanted == have)
                return false;
        devpath = path_join(queue->devpath, "iosched");
        if (!devpath)
                return false;
        _cleanup_(closep) int fd = sysfs_open_dir(l->sysfs, devpath);
        return (fd >= 0) != have;
}

/* The kernel replaced the directory: a new kobject, even when the same name comes back.  Announced at
 * once, so that the queue's Elevator, told next, never names an object not yet added.  Whether the
 * model changed. */
static bool replace_elevator(Live *l, Kobject *queue)
{
        Kobject *old = kobject_find_child_type(queue, KTYPE_ELEVATOR), *now = NULL;
        int r;

        if (old)
                model_unlink(l->model, old);
        r = scan_add_elevator(l->sysfs, l->model, queue, &now);
        if (r < 0)
                log_warning_errno(r, "%s/iosched: cannot read the new scheduler: %m", queue->devpath);
        live_flush(l);
        return old || now;
}

static bool directory_gone(Live *l, const Kobject *k)
{
        _cleanup_(closep) int fd = sysfs_open_dir(l->sysfs, k->devpath);
        return fd == -ENOENT;
}

/* given: the values read for k so far in this step, and where it reads the rest (NULL: its own). */
static int refresh(Live *l, Kobject *k, Refresh how, const Shape *only_same_in, ObjDir *given)
{
        _cleanup_(objdir_donep) ObjDir own = OBJDIR_INIT(l->sysfs, k);
        ObjDir *d = given ?: &own;
        /* What the caller's lookups asked, before this reading's own. */
        uint64_t mark = d->mark;
        _cleanup_(freep) ChangeRecord *old = NULL;
        bool have_old;
        Reading now;
        int r, count = 0;

        r = changes_kept(k, &old);
        if (r < 0)
                return r;
        have_old = old && old->n_slots == changes_n_slots(k);

        /* A reply's values against a reading of another shape: the reshape tells that, not a reply. */
        if (how == REFRESH_SENT && !have_old)
                return 0;
        if (how != REFRESH_RECORD && how != REFRESH_ALL && !have_old)
                how = REFRESH_ALL; /* a partial reading with nothing to keep: read everything once */
        r = read_slots(l, k, how, have_old ? old : NULL, d, &now);
        if (r < 0)
                return r;
        /* A tunable written moves what derives from it (discard_max_bytes 0 zeroes
         * discard_granularity): once one watched value changed, read the whole object (the watched
         * values it read just now it keeps). */
        if ((how == REFRESH_WATCHED || how == REFRESH_TUNABLES) && !record_equal(old, now.record)) {
                reading_done(&now);
                r = read_slots(l, k, REFRESH_ALL, old, d, &now);
                if (r < 0)
                        return r;
        }

        /* Read after its directory went, an object's files are gone, which is no change of its values
         * (a detached loop's partitions, read with their disk's change before their removes come): its
         * removal tells it, by its event, its disk's, or a Rescan.  What derives from the model did
         * change, and is told as when the directory is there: a disk torn down loses its partitions
         * first, whose removes, read late, find its directory gone too.  A scheduler switch removes
         * the iosched directory before the queue's scheduler file says so: the queue's reading tells
         * the switch once there is one, and replaces the object. */
        if (old && how != REFRESH_RECORD && (!have_old || !record_equal(old, now.record)) &&
            directory_gone(l, k)) {
                reading_done(&now);
                if (k->ktype->id == KTYPE_ELEVATOR && k->parent->linked)
                        return refresh(l, k->parent, REFRESH_WATCHED, NULL, NULL);
                if (!have_old)
                        return 0;
                how = REFRESH_DERIVED;
                r = read_slots(l, k, how, old, d, &now);
                if (r < 0)
                        return r;
        }

        /* A file gone from a directory that stays changed the object's shape, not a value to "": the
         * interfaces' removal and addition tell it, as for a change event's new listing.  A reply's
         * reading (or the first, which makes a record or InterfacesAdded) re-lists it only once
         * that reply is out: signals before it would be undone by its old shape in a client. */
        if (now.file_gone && (how == REFRESH_SENT || how == REFRESH_RECORD))
                live_relist_later(l, k);
        if (now.file_gone && how == REFRESH_SENT) {
                reading_done(&now);
                return 0;
        }
        if (now.file_gone && how != REFRESH_RECORD && !only_same_in && !l->rereading && k->linked) {
                reading_done(&now);
                return changes_reread(l, k);
        }

        /* A scheduler switch: the iosched object is replaced first, then the queue read again whole,
         * so that one signal tells Scheduler, scheduler and Elevator together.  So too when the
         * object is astray (a switch between the two readings of an earlier one); not at a reply's
         * reading, whose reply holds the Elevator it read: the next reading does it. */
        if (have_old && how != REFRESH_RECORD) {
                bool switched = scheduler_changed(k, old, now.record);
                bool astray = !switched && how != REFRESH_SENT &&
                              elevator_astray(l, k, elevator_wanted(k, d));

                if ((switched || astray) && (replace_elevator(l, k) || switched)) {
                        reading_done(&now);
                        r = read_slots(l, k, REFRESH_ALL, old, d, &now);
                        if (r < 0)
                                return r;
                }
        }

        /* Without a reading of before, no client holds a value of k (every reply and InterfacesAdded
         * makes one): there is nothing to tell it.  A reading of another shape: every property may
         * have changed, and is told rather than one missed. */
        if (how != REFRESH_RECORD && l->announce && k->linked && old &&
            (!have_old || !record_equal(old, now.record)))
                count = announce(l, k, have_old ? old : NULL, now.record, only_same_in, d);
        /* Links the poll found moved, with no event to read the other side as apply.c does: the
         * devices k linked to and links to now are read here. */
        bool has_links = now.links.read_holders || now.links.read_slaves;
        bool polled_links = (how == REFRESH_WATCHED || how == REFRESH_TUNABLES) && has_links && k->linked &&
                            have_old && !record_equal(old, now.record);
        char **before = polled_links ? stacking_neighbours(l, k) : NULL;

        if (has_links && k->linked)
                stacking_note(l, k, &now.links);
        if (k->linked)
                changes_keep(l, k, have_old ? old : NULL, now.record);
        /* A reply's reading: the record now holds what it read (those of its values that differed were
         * told just now). */
        if (k->linked && mark != OBJDIR_MARK_NONE && (how == REFRESH_SENT || how == REFRESH_RECORD))
                changes_mark(k, mark);
        reading_done(&now);

        if (polled_links)
                stacking_refresh_neighbours(l, k, before);
        return count;
}

int changes_refresh(Live *l, Kobject *k, Refresh how)
{
        return refresh(l, k, how, NULL, NULL);
}

int changes_refresh_in(Live *l, Kobject *k, Refresh how, ObjDir *d)
{
        return refresh(l, k, how, NULL, d);
}

void live_record_reading(Live *l, Kobject *k, ObjDir *d)
{
        if (!k->linked || k->ktype->id == KTYPE_KSET)
                return;
        /* The same files, with the same values, as a reading the record was found equal to: a reply of
         * an object nothing changed costs a hash of what it read, not a comparison slot by slot. */
        if (d->mark != OBJDIR_MARK_NONE && changes_marked(k, d->mark))
                return;
        (void) refresh(l, k, changes_recorded(k) ? REFRESH_SENT : REFRESH_RECORD, NULL, d);
}

/* The names of k's interfaces that are not the same in other. */
static int ifaces_not_in(const Kobject *k, const Shape *other, char ***ret)
{
        _cleanup_(strv_freep) char **l = NULL;
        size_t n = 0;
        Iface iface;
        int r;

        for (size_t i = 0; i < kobject_n_ifaces(k); i++) {
                kobject_iface(k, i, &iface);
                if (iface_same_in(&iface, other))
                        continue;
                r = strv_extend(&l, &n, iface.name);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/* The directory gained or lost attribute files or groups: takes over the reference to shape. */
static int changes_reshape(Live *l, Kobject *k, Shape *shape)
{
        _cleanup_(strv_freep) char **gone = NULL, **came = NULL;
        /* One reading for the comparison, the interfaces that came and the new record. */
        _cleanup_(objdir_donep) ObjDir d = OBJDIR_INIT(l->sysfs, k);
        Shape *old = k->shape;
        int r, changed;

        if (shape == old) {
                shape_unref(&l->model->shapes, shape);
                return changes_refresh(l, k, REFRESH_ALL);
        }

        /* What stays is compared as usual; what goes is announced gone, what comes with its values. */
        changed = refresh(l, k, REFRESH_ALL, shape, &d);
        /* The reading found k's directory gone: an elevator's queue was read then, and a scheduler
         * switch it found there replaced k (changes_reread() holds k for us).  Nothing to tell. */
        if (!k->linked) {
                shape_unref(&l->model->shapes, shape);
                return changed;
        }
        r = ifaces_not_in(k, shape, &gone);
        k->shape = shape;
        if (r >= 0)
                r = ifaces_not_in(k, old, &came);
        shape_unref(&l->model->shapes, old);
        if (r < 0)
                return r;
        if (l->announce && k->linked) {
                if (gone)
                        l->ops->interfaces_changed(l->userdata, k, gone, false, &d);
                if (came)
                        l->ops->interfaces_changed(l->userdata, k, came, true, &d);
        }
        (void) refresh(l, k, REFRESH_RECORD, NULL, &d);
        return changed < 0 ? changed : changed + 1;
}

int changes_reread(Live *l, Kobject *k)
{
        bool outer = !l->rereading;
        Shape *shape = NULL;
        int r;

        /* Reading an elevator whose directory went reads its queue, which replaces the elevator on a
         * scheduler switch: k must outlive that, and its callers' loops with it. */
        kobject_ref(k);
        l->rereading = true;
        r = scan_shape(l->sysfs, l->model, k, &shape);
        if (r < 0 && errno_is_resource(r))
                /* Nothing learnt: what was published stays. */
                log_ratelimit_warning_errno(r, "%s: cannot re-read the directory, kept as published: %m",
                                            k->devpath);
        else if (r < 0) {
                log_debug_errno(r, "%s: cannot re-read the directory: %m", k->devpath);
                r = changes_refresh(l, k, REFRESH_ALL);
        } else
                r = changes_reshape(l, k, shape);
        if (outer)
                l->rereading = false;
        kobject_unref(l->model, k);
        return r;
}
