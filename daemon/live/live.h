/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "model/kobject.h"
#include "sysfs/objdir.h"
#include "sysfs/sysfs.h"
#include "uevent/eventlog.h"
#include "uevent/source.h"

/*
 * The live model: kernel uevents applied to the model, the self-healing
 * rescan, the stacking links kept right on both sides, and change
 * detection: which properties an event, a write or a change nobody
 * announced (a scheduler set with echo) altered.
 *
 * Live tells the world through the LiveOps its owner gives it, never by
 * calling the bus: the composition root wires the ops to the publisher.
 */

typedef struct Live Live;

/*
 * d, where an op has one: k's values as live just read them to tell what changed (NULL: none were).
 * Values sent are read through it, so that a client gets exactly what the change record holds, and
 * no file is read twice for one announcement.
 */
typedef struct LiveOps {
        /* k is in the model with everything below it that came with it: announce it. */
        void (*object_added)(void *userdata, Kobject *k, ObjDir *d);
        /* k is about to leave the model; what was below it has left already. */
        void (*object_removed)(void *userdata, Kobject *k);
        /* Interfaces of k came (added) or went: a NULL-terminated list of names. */
        void (*interfaces_changed)(void *userdata, Kobject *k, char *const *interfaces, bool added, ObjDir *d);
        /* Properties of one interface of k changed: with their new values (changed) or only by
         * name (invalidated).  Either list may be NULL. */
        void (*properties_changed)(void *userdata, Kobject *k, const char *interface, char *const *changed,
                                   char *const *invalidated, ObjDir *d);
        /* One event was applied and logged: a kernel uevent, or one a rescan made up. */
        void (*event)(void *userdata, const EventRecord *e);
        /* The kernel dropped events; total: how many times so far. */
        void (*events_lost)(void *userdata, uint64_t total);
        /* Read every uevent the source holds now, handing each to live_on_uevent() (a rescan asks,
         * before it makes up a difference an event may be about to tell).  May be NULL. */
        void (*read_uevents)(void *userdata);
        /* Queued uevents were applied and signalled (live_events_applied() moved), in a turn's idle
         * phase, after which the loop may sleep: whoever waits for them is told here.  May be NULL. */
        void (*events_applied)(void *userdata);
} LiveOps;

typedef struct LiveConfig {
        uv_loop_t *loop;
        Sysfs *sysfs; /* a rescan reopens the root when it was replaced */
        Model *model;
        EventLog *events;
        /* Re-read what changes without an event once per interval; 0: never. */
        unsigned poll_interval_ms;
        const LiveOps *ops;
        void *userdata;
} LiveConfig;

int live_new(const LiveConfig *c, Live **ret);
/* Stops everything and lets go of the model at once; the memory goes with the last libuv close
 * callback, so the loop must run once more.  NULL is fine. */
void live_free(Live *l);

/* From now on every difference is announced (the bus name is taken); warm-up and polling start. */
int live_start(Live *l);
/* Nothing more is announced; warm-up and polling stop. */
void live_stop(Live *l);

/*
 * A client reads the whole model (GetManagedObjects): every value, as the warm-up does.  Both at
 * once would double the time to the first complete reading after a start, so the warm-up waits
 * until as many releases as holds have come.
 */
void live_warmup_hold(Live *l);
void live_warmup_release(Live *l);
/* What a client was sent of k, read into d: unless k has a reading, k's first (the warm-up's for
 * it), so that a change from it is announced, and the warm-up need not read k again; else what
 * differs from that reading is announced to every client (a change the poll has not reached yet,
 * which the caller now holds and the others do not), and kept. */
void live_record_reading(Live *l, Kobject *k, ObjDir *d);
/* A client's reading of the attribute failed: if its file is gone (its directory stays), k's shape
 * changed, and is read anew and told (InterfacesRemoved, InterfacesAdded without it). */
void live_attr_unreadable(Live *l, Kobject *k, ObjDir *d, const Iface *iface, const Attr *a);

/* UeventSource callbacks; userdata is the Live. */
void live_on_uevent(UeventSource *s, Uevent *u, void *userdata);
void live_on_lost(UeventSource *s, void *userdata);
/* The rescan after a loss runs here, when the socket has been read empty. */
void live_on_drained(UeventSource *s, void *userdata);

/*
 * Re-reads sysfs and announces every difference: block devices added and removed, and everything
 * of every object, each changed block device with a made-up "change" event.  In time slices that
 * yield to the loop; done(result, userdata) is called at the end with the number of block devices
 * added, removed or changed, or a negative errno.  A request while a rescan runs gets a fresh one
 * after it.  done may be NULL.
 */
typedef void (*LiveRescanDone)(int result, void *userdata);
int live_rescan_start(Live *l, LiveRescanDone done, void *userdata);
/* The same, to the end before returning (tests, and nothing that must keep the loop turning). */
int live_rescan(Live *l);
/*
 * While held, a rescan takes no further step (the one running, or one asked for meanwhile), and no
 * uevent queued behind a change event's burst is applied (what comes behind them waits with them).
 * Their announcements have no uevent behind them that the source could leave in the kernel: when the
 * bus falls behind, this is how its owner stops them piling up in our write queue ahead of every
 * reply.  A step is one block device or one object, so little is queued past the moment it is held.
 */
void live_hold(Live *l, bool hold);

/* Before a write: makes sure there is a reading to compare the written value with. */
void live_object_before_write(Live *l, Kobject *k);
/* After a write: re-reads the object and announces what the kernel stored. */
void live_object_after_write(Live *l, Kobject *k);

/*
 * Uevents wait in a queue while a change event's burst comes in, and are applied from it in order, a
 * slice of the loop at a time: how many were queued so far, and how many of the first of those are
 * applied and signalled, all of them.  Those queued before a moment are applied once the second
 * count reaches what the first was then.
 */
uint64_t live_events_queued(const Live *l);
uint64_t live_events_applied(const Live *l);

uint64_t live_events_lost(const Live *l);
/* How many times an object's recorded values changed so far (an event's reading, the poll's, a
 * reply's): values read ahead before another reading changed a record may be older than it. */
uint64_t live_records_changed(const Live *l);
/* Has k's record changed since live_records_changed() was n?  What was read of k before then may
 * be older than the record; what another object's change moved says nothing of k's. */
bool live_record_changed_since(const Kobject *k, uint64_t n);
/* The bytes the object's property values took at its last reading, 0 if never read. */
size_t live_object_value_bytes(const Kobject *k);
