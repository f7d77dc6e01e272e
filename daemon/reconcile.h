/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "kobject.h"

/*
 * Brings the model in line with sysfs as it is now: removes what is gone,
 * adds what is new.  Every difference goes through model_link/model_unlink,
 * so the observer (the publisher) sees each one.  Returns the number of
 * differences, or negative errno if the tree could not be read at all.
 */
/*
 * Told of each difference after it is applied: action "add" (k is the new object) or "remove"
 * (k is NULL; devpath and object_path are what it had).  A disk that goes takes its partitions
 * with it: each gets its own "remove", partitions first, as the kernel sends them.
 */
typedef void (*ReconcileDiff)(void *userdata, const char *action, const char *devpath, const char *object_path,
                              Kobject *k);

int reconcile_all(Model *m, ReconcileDiff diff, void *userdata);
