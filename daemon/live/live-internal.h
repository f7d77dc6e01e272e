/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The live layer's own state, shared by its files and nobody else. */

#include "base/hashmap.h"
#include "live/live.h"
#include "model/round.h"
#include "sysfs/prefetch.h"

/* The env key that marks an event made up from a rescan rather than sent by the kernel. */
#define SYNTHESIZED_KEY "BLKMODEL_SYNTHESIZED"

typedef enum Refresh {
        REFRESH_RECORD,    /* read everything and remember it; announce nothing */
        REFRESH_ALL,       /* read everything; announce what changed */
        REFRESH_STRUCTURE, /* only what the model's structure and the link directories decide */
        REFRESH_WATCHED,   /* only what changes without an event (a scheduler set with echo, ro) */
        REFRESH_TUNABLES,  /* of that, what a write or a udev rule changes: the poll's most rounds */
        REFRESH_EVENT,   /* only what a change event of the object's own can alter (size, ro, uevent …) */
        REFRESH_SENT,    /* only what a reply just read and sent (its ObjDir holds it) */
        REFRESH_DERIVED, /* only what derives from the model (Partitions, Elevator), no file */
} Refresh;

/*
 * A round's objects read on the thread pool, a batch at a time, and compared with their records on
 * the loop (read-ahead.c): the warm-up's and the poll's.
 */
typedef struct ReadBatch ReadBatch;
typedef struct RoundReader {
        ModelRound *round;
        bool (*wants)(const Kobject *k); /* is k still to be read? */
        Refresh (*how)(const Live *l, const Kobject *k);
        void (*on_read)(Live *l); /* a batch is back from the worker: reader_compare() may go on */
        bool check_modes;         /* the warm-up: are the files' modes what the shape says? */
        ReadBatch *batch;
        Kobject **objects; /* the batch's, referenced */
        size_t n, n_max, applied;
        uint64_t spent; /* µs of the batch so far: taking, reading, comparing */
        /* Of the objects compared, those whose values were read ahead, and those read again as their
         * records changed meanwhile: for the debug log, then zeroed. */
        size_t n_ahead, n_again;
} RoundReader;

typedef struct QueuedEvent {
        Uevent *u;
        uint64_t index; /* 1 for the first event ever queued */
} QueuedEvent;

struct Live {
        uv_loop_t *loop;
        Sysfs *sysfs;
        Model *model;
        EventLog *events;
        unsigned poll_interval_ms;
        const LiveOps *ops;
        void *userdata;

        /* The bus name is taken: every difference is announced. */
        bool announce;
        bool rereading; /* changes_reread() runs: a file found gone reshapes nothing more */
        uint64_t events_lost;
        bool resync_pending; /* events were lost: rescan when the source is drained */

        /* Objects linked since the last flush: announced once whole (live_flush()). */
        Kobject **added;
        size_t n_added, n_added_max;
        bool members_changed[2]; /* block, devices kset */

        /* Uevents waiting for a change event's burst to be in, applied in order a slice of the loop at
         * a time (apply.c): one reading an object for a burst, and every Uevent signal after what
         * its event changed. */
        QueuedEvent *queue;
        size_t n_queue, n_queue_max, queue_pos;
        uint64_t n_queued; /* since the start; the last n_queue - queue_pos of them are still queued */
        uv_idle_t queue_idle;
        bool queue_only;    /* live_on_uevent() applies nothing at once: a rescan step reads the source */
        Hashmap read_marks; /* objects read while events were queued (apply.c) */

        /* Objects a reply's reading found a file of gone, by path, with a reference each: re-listed
         * in slices once the reply is out (live.c). */
        Hashmap relist;
        uv_idle_t relist_idle;

        /* Change records' templates, by shape key (kept.c). */
        Hashmap templates;

        /* Disks and partitions with holders/ or slaves/ links, by object path (stacking.c). */
        Hashmap stacked;

        uv_idle_t warmup;
        ModelRound warm;
        RoundReader warm_reader;
        unsigned warm_holds; /* live_warmup_hold() */
        uv_idle_t rescan_idle;
        struct Rescan *rescan;             /* the one running, or NULL */
        struct RescanWaiter *next_waiters; /* asked for while one ran: they get the next */
        size_t n_next_waiters;
        /* While a rescan's reconcile steps: what the records of the block devices it removes held
         * of their uevent variables (changes_kept_uevent()), for the removes it makes up, which come
         * after the objects are gone (rescan_note_gone()). */
        bool reconciling;
        struct GoneUevent *gone;
        size_t n_gone, n_gone_max;
        bool held; /* live_hold(): no rescan step, no queued uevent */

        uv_timer_t poll_timer;
        ModelRound polled;
        RoundReader poll_reader;
        uint64_t poll_round_start; /* µs */
        unsigned poll_rounds;      /* begun: which objects a round reads whole (poll.c) */
        bool poll_all_whole;       /* the last round was short enough for every object whole */
        /* How many times a record changed (kept.c): values read ahead before another reading
         * changed one are not compared, as they may be older than it. */
        uint64_t n_keeps;
        unsigned n_open_handles;
};

/* ---- apply.c: uevents applied in arrival order ---- */

/* Applies every queued uevent now. */
void live_apply_queued(Live *l);
/* Does a uevent still queued name devpath (or move from it)? */
bool apply_queued_names(const Live *l, const char *devpath);
/* Reads now what the queued change events of k's disk and its partitions change (nothing for a
 * hardware device); their Uevents keep their turn. */
void live_read_queued_changes_of(Live *l, Kobject *k);
void apply_init(Live *l);
/* k is going: no reading of it spares a later one. */
void apply_forget(Live *l, Kobject *k);
/* Drops the queued uevents unapplied. */
void apply_done(Live *l);
/* At exit: applies the queued uevents for a slice of a turn, as the loop would, and drops the rest;
 * how many it dropped. */
size_t apply_at_exit(Live *l);
/* live_hold() was called: the queue stops or goes on. */
void apply_held(Live *l);

/* Announces what was linked since the last flush: each object once, parents first. */
void live_flush(Live *l);
/* Re-lists k's directory (changes_reread()) on a later turn of the loop: after the reply whose
 * reading found one of its files gone has gone out, so that a client sees that reply's shape
 * first and then the signals that change it. */
void live_relist_later(Live *l, Kobject *k);
/* Starts the re-listing again once no reply holds it (live_warmup_release()). */
void live_relist_go_on(Live *l);

/* Appends a reference to k to a growable list (*n of them, room for *max); -ENOMEM. */
int live_push_ref(Kobject ***list, size_t *n, size_t *max, Kobject *k);

/* Logs the event, then hands it to ops->event. */
int live_publish_event(Live *l, const char *action, const char *devpath, const char *object_path,
                       size_t n_env, char *const *keys, char *const *values);

/* ---- changes.c: what an object's properties were at its last reading ---- */

/* Re-reads and announces, per interface, exactly the properties whose value changed (all of them
 * if there was no reading before).  Returns how many were announced. */
int changes_refresh(Live *l, Kobject *k, Refresh how);
/* The same, with what d read already (read ahead: sysfs/prefetch.h); d reads the rest. */
int changes_refresh_in(Live *l, Kobject *k, Refresh how, ObjDir *d);
/* Re-reads the directory and what changed in it, shape and values. */
int changes_reread(Live *l, Kobject *k);

/* ---- reads.c: which of an object's values each kind of refresh reads ---- */

/* Does a refresh `how` read the typed property p (else it keeps the last reading's value)?  d: what
 * a reply read (REFRESH_SENT); NULL for the others. */
bool reads_typed(const Kobject *k, const Iface *iface, const PropertyInfo *p, Refresh how, ObjDir *d);
/* … the attribute a of iface? */
bool reads_attr(const Kobject *k, const Iface *iface, const Attr *a, Refresh how, ObjDir *d);
/* Adds k and the files changes_refresh(how) reads of it to b; how many files, or -ENOMEM. */
int changes_read_ahead(Prefetch *b, Kobject *k, Refresh how);
/* Has k anything the poll must re-read? */
bool changes_watched(const Kobject *k);

/* ---- kept.c: what an object keeps of its last reading ---- */

typedef struct ChangeRecord ChangeRecord;

/* Has the property a slot of its own in a record (changes.c)?  Those that announce their changes. */
static inline bool slot_typed(const PropertyInfo *p)
{
        return p->emits == PROPERTY_EMITS_TRUE;
}
/* How many slots a record of k's shape has. */
size_t changes_n_slots(const Kobject *k);

bool changes_recorded(const Kobject *k);
/* The mark (ObjDir.mark) of a reading k's record was made of, or found equal to. */
void changes_mark(Kobject *k, uint64_t fingerprint);
bool changes_marked(const Kobject *k, uint64_t fingerprint);
/* k's last reading, unpacked (NULL if none); free() it. */
int changes_kept(const Kobject *k, ChangeRecord **ret);
/* Keeps now as k's last reading (old: the one before, as changes_kept() gave it, or NULL). */
void changes_keep(Live *l, Kobject *k, const ChangeRecord *old, const ChangeRecord *now);
void changes_forget(Kobject *k);
/* What k's record holds of a block device's uevent variables, for a remove made up after its files
 * went: MAJOR, MINOR, DEVNAME, DEVTYPE, DISKSEQ, PARTN as the kernel's remove has them, each that it
 * holds whole.  Key/value pairs, NULL-terminated; NULL for no block device or no record. */
int changes_kept_uevent(const Kobject *k, char ***ret);
void changes_init(Live *l);
/* After every object's changes_forget(). */
void changes_done(Live *l);

/* ---- stacking.c: holders/ and slaves/ right on both sides of a link ---- */

/* A reading's holders/ and slaves/ (object paths; NULL-terminated), and which of them it read. */
typedef struct StackingLinks {
        char **holders, **slaves;
        bool read_holders, read_slaves;
} StackingLinks;

/* What k links to, as its last reading of each side found. */
void stacking_note(Live *l, Kobject *k, const StackingLinks *now);
void stacking_forget(Live *l, Kobject *k);
/* A copy of what k linked to before an event (NULL if nothing). */
char **stacking_neighbours(Live *l, const Kobject *k);
/* After an event on k: re-reads the links of what it linked to before and links to now. */
void stacking_refresh_neighbours(Live *l, Kobject *k, char **before);
void stacking_init(Live *l);
void stacking_done(Live *l);

/* ---- read-ahead.c ---- */

/* Takes the round's next objects the reader wants, a batch's worth, and queues their reading: 1 if
 * queued (on_read follows), 0 if there was none to take in this slice, negative errno if it could
 * not queue (then reader_compare() reads those taken itself). */
int reader_read_ahead(Live *l, RoundReader *rr, uint64_t start);
/* A batch is on a worker. */
bool reader_busy(const RoundReader *rr);
/* Objects are taken and not compared yet. */
bool reader_pending(const RoundReader *rr);
/* Compares the batch's objects (reads them, if it could not read ahead) for one slice of the loop
 * that began at start: true when all are done. */
bool reader_compare(Live *l, RoundReader *rr, uint64_t start);
/* Drops the objects; a batch still on a worker frees itself. */
void reader_stop(Live *l, RoundReader *rr);

/* ---- poll.c: warm-up and polling ---- */

int poll_warmup_start(Live *l);
void poll_warmup_stop(Live *l);
void poll_start(Live *l);
void poll_stop(Live *l);
/* While a rescan runs, the warm-up and the poll wait (it reads every object); this resumes them. */
void poll_after_rescan(Live *l);

/* ---- rescan.c ---- */

/* live_hold() was called: a running rescan stops or goes on. */
void rescan_held(Live *l);
/* Stops a running rescan; its waiters hear -ECANCELED. */
void rescan_cancel(Live *l);
/* k is about to leave the model: during a reconcile step, what its record holds for its made-up
 * remove is kept until that is sent. */
void rescan_note_gone(Live *l, const Kobject *k);
