/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/hashmap.h"
#include "common/util.h"
#include "fixture.h"
#include "live/live.h"
#include "model/iface.h"
#include "sysfs/objdir.h"
#include "uevent/uevent.h"

/*
 * The differential test (test-differential.c): random sequences of sysfs changes and uevents, right
 * and wrong, applied to the live layer; then live_rescan(), and the live model must equal what a
 * fresh scan_all() builds on the same tree, and the LiveOps calls must tell a client exactly that.
 *
 * differential-tree.c: the tree the sequences change, and putting it back as it was.
 * differential-world.c: what a sequence does to it (the kernel's changes, odd ones too) and the
 *                       uevents, well-formed or not, that go with it or not.
 * differential-check.c: the LiveOps calls as a client sees them, and the comparison of two models.
 */

/* ---- a small seedable generator (splitmix64): the same seed, the same sequence ---- */

typedef struct Rng {
        uint64_t state;
} Rng;

static inline uint64_t rng_next(Rng *r)
{
        uint64_t z = (r->state += UINT64_C(0x9e3779b97f4a7c15));
        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

/* 0 <= x < n; n > 0. */
static inline unsigned rng_below(Rng *r, unsigned n)
{
        return (unsigned) (rng_next(r) % n);
}

static inline bool rng_percent(Rng *r, unsigned percent)
{
        return rng_below(r, 100) < percent;
}

/* ---- differential-tree.c ---- */

typedef struct Tree {
        Fixture fixture; /* the standard fixture, never changed */
        char *pristine;  /* its sysfs root */
        char *work;      /* the mkdtemp() directory of the copy */
        char *root;      /* the copy's sysfs root, which the sequences change */
        char **regions;  /* paths below root changed since the last restore */
        size_t n_regions;
} Tree;

/* Makes the standard fixture (whole, or with most request queue and PCI attributes left out) and a
 * working copy of it below tmpdir. */
int tree_new(const char *tmpdir, bool whole, Tree *ret);
void tree_done(Tree *t);
/* Notes that rel (a file or a whole directory below the root) may differ from the pristine tree. */
void tree_touch(Tree *t, const char *rel);
/* Puts every touched region back as the pristine tree has it. */
int tree_restore(Tree *t);
/* Compares the whole working tree with the pristine one: 0, or -EUCLEAN with the first difference
 * printed (the test forgot to touch() something it changed). */
int tree_verify(const Tree *t);

/* The absolute path of rel in the working tree; the caller frees it. */
char *tree_path(const Tree *t, const char *rel);
int tree_write(Tree *t, const char *rel, const char *value, size_t len);
/* Reads a small file: its text without the trailing newline, or NULL. */
char *tree_read(const Tree *t, const char *rel);
bool tree_exists(const Tree *t, const char *rel);
bool tree_is_dir(const Tree *t, const char *rel);
/* The names in a directory, sorted, of one kind: 'f' regular files, 'd' directories, 'l' links,
 * 0 all; NULL-terminated (an empty list, not NULL, when there is nothing). */
char **tree_list(const Tree *t, const char *rel, char kind);

/* Where the link at rel points, as a path from the root ("/devices/…"); NULL if it is no relative link
 * or leaves the root. */
char *tree_link_devpath(const Tree *t, const char *rel);

/* One block device as class/block lists it now. */
typedef struct TreeDev {
        char *name;
        char *devpath; /* "/devices/…" */
        bool partition;
} TreeDev;

/* Every class/block entry that links to a directory, sorted by name. */
int tree_block_devs(const Tree *t, TreeDev **ret, size_t *ret_n);
void tree_devs_free(TreeDev *d, size_t n);

/* ---- differential-world.c ---- */

/* One thing a sequence does, applied by the driver. */
typedef enum StepKind {
        STEP_NOTHING, /* a change with no event (or none possible) */
        STEP_UEVENT,  /* events[] to live_on_uevent, in order */
        STEP_LOST,    /* live_on_lost() */
        STEP_DRAINED, /* live_on_drained() */
        STEP_LOOP,    /* the loop turns `turns` times: warm-up and rescan slices run */
        STEP_RESCAN,  /* live_rescan() in the middle of it all */
} StepKind;

#define STEP_EVENTS_MAX 8

typedef struct Step {
        StepKind kind;
        unsigned turns;
        size_t n_events;
        Uevent *events[STEP_EVENTS_MAX];
} Step;

typedef struct World {
        Tree tree;
        Uevent **pending; /* what the kernel sent and the daemon has not read yet, oldest first */
        size_t n_pending;
        char **gone; /* devpaths of block devices removed in this sequence */
        size_t n_gone;
        char **log; /* what the sequence did, one line a step, for the report */
        size_t n_log;
        unsigned n_unparsable; /* made-up datagrams uevent_parse() refused, as the source would */
} World;

/* Makes the next step: changes the tree (maybe) and the events to deliver (maybe), and logs it. */
int world_step(World *w, Rng *rng, Step *ret);
void step_done(Step *s);
/* At the end of a sequence: the pending events delivered (as many as a step holds), or lost. */
void world_flush(World *w, Rng *rng, Step *ret);
/* After a sequence: the tree as it was, and nothing remembered. */
int world_reset(World *w);
void world_log(World *w, const char *fmt, ...) _printf_(2, 3);
/* differential-changes.c: one random change to the tree, its events queued with pend(). */
void world_change(World *w, Rng *rng);
/* The kernel sends an event: it waits in w->pending until a step delivers it. */
void pend(World *w, const char *action, const char *devpath, const char *devpath_old);

/* ---- differential-changes.c and differential-layout.c: the tree's changes, and their helpers ---- */

#define SDA_LUN "/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0"
#define SR0_LUN "/devices/pci0000:00/0000:00:1f.2/ata2/host1/target1:0:0/1:0:0:0"
#define NVME0 "/devices/pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme/nvme0"
#define C0D0 "/devices/pci0000:00/0000:00:03.0/cciss0/c0d0"
#define PLATFORM_LUN "/devices/platform/host9/target9:0:0/9:0:0:0"
#define VIRT "/devices/virtual/block"

typedef struct Devs {
        TreeDev *d;
        size_t n;
} Devs;

/* A random block device: disks only, partitions only, or either (kind 'd', 'p', 0); NULL if none. */
const TreeDev *pick_dev(const Devs *d, Rng *rng, char kind);
/* dir/name; never NULL. */
char *sub(const char *dir, const char *name);
/* Every link in class/block, block and dev/block that points to devpath or below goes. */
void unlink_farms(World *w, const char *devpath);
void mkdir_p(World *w, const char *rel);
void write_str(World *w, const char *rel, const char *value);
void chmod_rel(World *w, const char *rel, mode_t mode);
/* A queue directory with a few attributes and a random scheduler. */
void make_queue(World *w, const char *disk, Rng *rng);

void switch_scheduler(World *w, const Devs *d, Rng *rng);
void queue_comes_or_goes(World *w, const Devs *d, Rng *rng);
void move_device_link(World *w, const Devs *d, Rng *rng);
void rename_disk(World *w, const Devs *d, Rng *rng);
void stack(World *w, const Devs *d, Rng *rng);
void odd_class_entry(World *w, Rng *rng);

/* ---- differential-check.c ---- */

typedef struct ClientObject ClientObject;

typedef struct Checker {
        const Sysfs *sysfs;
        Model *model;         /* the live one */
        bool started;         /* live_start() was called: calls are announcements */
        Hashmap client;       /* path → ClientObject: what the LiveOps calls told a client */
        uint64_t last_seqnum; /* the last event's */
        uint64_t lost;        /* live_on_lost() calls made */
        uint64_t n_calls;     /* LiveOps calls other than event */
        char **problems;
        size_t n_problems;
} Checker;

extern const LiveOps checker_ops;

void checker_init(Checker *c, const Sysfs *s, Model *m);
void checker_done(Checker *c);
/* The client's view starts as the whole model (what GetManagedObjects gives at the name); after
 * live_start(), as its readings are the first the live layer keeps. */
int checker_start(Checker *c, Live *l);
void checker_problem(Checker *c, const char *fmt, ...) _printf_(2, 3);
void checker_clear_problems(Checker *c);

/* One property of an object as a client reads it. */
typedef struct Value {
        const char *iface; /* borrowed from the model: valid while the object's shape is */
        const char *name;
        char *value;
        PropertyEmits emits;
} Value;

/* Does the client hold these values (the object's, in interface order) for the object? */
void checker_compare_client(Checker *c, const Kobject *k, const Value *values, size_t n);
/* Objects the client holds that the model has not. */
void checker_client_leftovers(Checker *c);

/* ---- differential-compare.c ---- */

/* A property's value as the publisher sends it (an unreadable file as ""), typed ones as one string;
 * NULL if there is no such property.  *emits: how its changes are announced (volatile attributes:
 * false). */
char *property_value(Model *m, ObjDir *d, const Iface *iface, const char *member,
                     PropertyEmits *emits);
/* Is a property of that kind held by a caching client (and so announced when it changes)? */
static inline bool property_held(PropertyEmits e)
{
        return e == PROPERTY_EMITS_TRUE || e == PROPERTY_EMITS_CONST;
}
/* The whole comparison at the end of a sequence: the client's view and the live model, the live
 * model and a fresh one, object by object, interface by interface, value by value. */
void checker_compare(Checker *c, Model *fresh);
