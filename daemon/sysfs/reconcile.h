/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "model/kobject.h"
#include "sysfs/sysfs.h"

/*
 * Brings the model in line with sysfs as it is now, every kind of object:
 * removes the block devices that are gone and adds those that are new, and
 * below each disk adds or removes its queue and scheduler and follows a
 * `device` link that moved.  Every difference goes through model_link and
 * model_unlink, so the observer sees each one; a block device added or
 * removed is also reported to diff: action "add" (k is the new object) or
 * "remove" (k is NULL; devpath and object_path are what it had).  A disk
 * that goes takes its partitions with it: each gets its own "remove",
 * partitions first, as the kernel sends them.
 *
 * In steps, so that a caller can spread a rescan of 10,000 disks over many
 * loop iterations; events applied between two steps are no trouble, since
 * every decision is taken on what sysfs says at that step.
 */
typedef void (*ReconcileDiff)(void *userdata, const char *action, const char *devpath, const char *object_path,
                              Kobject *k);

/* Is an event for devpath still to come (read now, not applied yet)?  Then the difference is the
 * event's to tell, and reconcile leaves that device alone. */
typedef bool (*ReconcileAwaited)(void *userdata, const char *devpath);

typedef struct Reconcile Reconcile;

/* Lists class/block; -ENOENT (or another errno) if the tree cannot be read at all. */
int reconcile_new(const Sysfs *s, Model *m, ReconcileDiff diff, void *userdata, Reconcile **ret);
/* Asked before a block device is added or removed; with diff's userdata. */
void reconcile_set_awaited(Reconcile *r, ReconcileAwaited awaited);
/* One unit of work (one entry, one disk): 1 while there is more, 0 when done, or negative errno. */
int reconcile_step(Reconcile *r);
/* The block devices added and removed so far. */
int reconcile_changes(const Reconcile *r);
Reconcile *reconcile_free(Reconcile *r);
static inline void reconcile_freep(Reconcile **r)
{
        reconcile_free(*r);
}

/* All steps at once; returns the number of block devices added and removed. */
int reconcile_all(const Sysfs *s, Model *m, ReconcileDiff diff, void *userdata);
