/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "model/kobject.h"
#include "sysfs/sysfs.h"

/*
 * Brings the model in line with sysfs as it is now: removes the block
 * devices that are gone, adds those that are new.  Every difference goes
 * through model_link/model_unlink, so the observer sees each one, and is
 * reported to diff after it is applied: action "add" (k is the new disk or
 * partition) or "remove" (k is NULL; devpath and object_path are what it
 * had).  A disk that goes takes its partitions with it: each gets its own
 * "remove", partitions first, as the kernel sends them.
 *
 * Returns the number of block devices added or removed, or negative errno
 * if the tree could not be read at all.
 */
typedef void (*ReconcileDiff)(void *userdata, const char *action, const char *devpath,
                              const char *object_path, Kobject *k);

int reconcile_all(const Sysfs *s, Model *m, ReconcileDiff diff, void *userdata);
