/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <limits.h>

#include "common/util.h"
#include "live/live-internal.h"
#include "model/iface.h"
#include "sysfs/prefetch.h"

/*
 * Which of an object's values each kind of refresh (Refresh) reads: the poll's, a change event's, a
 * reply's, a structural one's.  changes.c reads them; read-ahead.c fetches their files first.
 */

/*
 * What the poll re-reads, since it can change without an event we hear: every value that does not
 * move by itself.  Not only what is writable (a scheduler set with echo, a udev rule's tunable) and
 * a hardware device's attributes (its events are of its own subsystem): read-only ones change
 * silently too.  On 6.18, BLKROSET flips a disk's `ro`, LOOP_SET_DIRECT_IO its `loop/dio`, and
 * BLKPG_RESIZE_PARTITION a partition's `size`, none with a uevent.
 */
static bool attr_watched(const Attr *a)
{
        return !(a->flags & (ATTR_VOLATILE | ATTR_WRITE_ONLY));
}

/* Of those, what is set by hand or by a udev rule, the poll's first concern: whatever is writable,
 * a hardware device's attributes (bound and unbound with events of its own subsystem) and runtime
 * PM (power/).  The rest changes with the kernel's own operations (BLKROSET, a resize). */
static bool attr_tunable(const Kobject *k, const Iface *iface, const Attr *a)
{
        if (!attr_watched(a))
                return false;
        if ((a->flags & ATTR_WRITABLE) || k->ktype->id == KTYPE_DEVICE)
                return true;
        return iface->attr_dir && streq(iface->attr_dir, "power");
}

/* The attribute a typed property derives from, if it is one of the interface's files. */
static const Attr *source_attr(const Iface *iface, const PropertyInfo *p)
{
        for (size_t j = 0; p->source && iface->attrs && j < iface->attrs->n_attrs; j++)
                if (streq(iface->attrs->attrs[j].file, p->source))
                        return &iface->attrs->attrs[j];
        return NULL;
}

bool changes_watched(const Kobject *k)
{
        Iface iface;

        for (size_t i = 0; i < kobject_n_ifaces(k); i++) {
                kobject_iface(k, i, &iface);
                for (size_t j = 0; iface.attrs && j < iface.attrs->n_attrs; j++)
                        if (attr_watched(&iface.attrs->attrs[j]))
                                return true;
        }
        return false;
}

/*
 * What a block device's own change event can alter (a resize, a media change, DISK_RO, a loop
 * device configured, an md array started): a few files and its groups' values, read first; only
 * when one of them moved is the rest read.  A `udevadm trigger` storm then costs a few reads per
 * device, not a directory's worth and its queue's.
 */
static const char *const event_files[] = {"size", "ro", "removable", "capability", "diskseq", "start"};

static bool event_file(const char *file)
{
        for (size_t i = 0; i < ELEMENTSOF(event_files); i++)
                if (streq(event_files[i], file))
                        return true;
        return false;
}

static bool source_is_links(const PropertyInfo *p)
{
        return p->source &&
               (streq(p->source, PROPERTY_SOURCE_HOLDERS) || streq(p->source, PROPERTY_SOURCE_SLAVES));
}

bool reads_typed(const Kobject *k, const Iface *iface, const PropertyInfo *p, Refresh how, ObjDir *d)
{
        switch (how) {
        case REFRESH_SENT:
                /* What derives from the model costs no reading; the rest, if the reply read its file. */
                return !p->source || objdir_has(d, p->source);
        case REFRESH_DERIVED:
                return !p->source;
        case REFRESH_RECORD:
        case REFRESH_ALL:
                return true;
        case REFRESH_STRUCTURE:
                return !p->source || source_is_links(p);
        case REFRESH_WATCHED:
        case REFRESH_TUNABLES: {
                /* Stacking set up by hand (dmsetup load, mdadm --add) links before any event, if one
                 * comes at all. */
                if (source_is_links(p))
                        return true;
                /* The uevent file: a hardware device's names its driver (bind, unbind: events of its
                 * own subsystem); a block device's (DISKSEQ, PARTNAME) moves with its own events, but
                 * Uevent and Number promise any change within the poll interval. */
                if (p->source && streq(p->source, PROPERTY_SOURCE_UEVENT) &&
                    (k->ktype->id == KTYPE_DEVICE || how == REFRESH_WATCHED))
                        return true;
                const Attr *a = source_attr(iface, p);
                return a && (how == REFRESH_WATCHED ? attr_watched(a) : attr_tunable(k, iface, a));
        }
        case REFRESH_EVENT:
                /* A stacked device's own change moves its slaves/ (a dm table reloaded and resumed, an
                 * md member added); holders/ moves with the events of the device above, whose slaves
                 * are read then. */
                return p->source && (streq(p->source, PROPERTY_SOURCE_UEVENT) || event_file(p->source) ||
                                     streq(p->source, PROPERTY_SOURCE_SLAVES));
        }
        return true;
}

bool reads_attr(const Kobject *k, const Iface *iface, const Attr *a, Refresh how, ObjDir *d)
{
        switch (how) {
        case REFRESH_SENT:
                return objdir_has_attr(d, iface, a);
        case REFRESH_RECORD:
        case REFRESH_ALL:
                return true;
        case REFRESH_STRUCTURE:
        case REFRESH_DERIVED:
                return false;
        case REFRESH_WATCHED:
                return attr_watched(a);
        case REFRESH_TUNABLES:
                return attr_tunable(k, iface, a);
        case REFRESH_EVENT:
                /* A group's values (loop/, md/, dm/, integrity/) are re-read on the device's own
                 * events too; power/ and trace/ are tunables, left to the poll. */
                if (iface->kind == IFACE_GROUP)
                        return !streq(iface->attr_dir, "power") && !streq(iface->attr_dir, "trace");
                return iface->kind == IFACE_KIND && event_file(a->file);
        }
        return true;
}

/* Not for REFRESH_SENT, whose values are read already. */
int changes_read_ahead(Prefetch *b, Kobject *k, Refresh how)
{
        size_t n = 0;
        Iface iface;
        int r;

        r = prefetch_add_object(b, k->devpath);
        for (size_t i = 0; r >= 0 && i < kobject_n_ifaces(k); i++) {
                kobject_iface(k, i, &iface);
                for (size_t j = 0; r >= 0 && iface.attrs && j < iface.attrs->n_attrs; j++) {
                        const Attr *a = &iface.attrs->attrs[j];
                        if ((a->flags & ATTR_VOLATILE) || !reads_attr(k, &iface, a, how, NULL))
                                continue;
                        n++;
                        r = prefetch_add_attr(b, &iface, a);
                }
                /* What typed properties derive from, unless it is one of the files just added. */
                for (const PropertyInfo *p = iface.properties; r >= 0 && p->name; p++) {
                        if (!slot_typed(p) || !p->source || !reads_typed(k, &iface, p, how, NULL))
                                continue;
                        if (streq(p->source, PROPERTY_SOURCE_UEVENT) && !k->ktype->has_uevent)
                                continue;
                        const Attr *a = iface.attr_dir ? NULL : source_attr(&iface, p);
                        if (a && !(a->flags & ATTR_VOLATILE) && reads_attr(k, &iface, a, how, NULL))
                                continue;
                        n++;
                        r = prefetch_add_file_once(b, p->source);
                }
        }
        return r < 0 ? r : (int) MIN(n, (size_t) INT_MAX);
}
