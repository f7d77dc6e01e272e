/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "kobject.h"

/*
 * Building the model from sysfs.  Odd trees are the rule here, not the
 * exception: a device can vanish mid-scan, a link can dangle, a file can be
 * missing.  Each such thing is logged and skipped; the rest is published.
 */

/* Enumerates every block device under class/block; returns the number of disks added. */
int scan_all(Model *m);

/* Reads an object's directory again: the shape it has now, with a new reference. */
int scan_shape(Model *m, Kobject *k, Shape **ret);

/* Adds one disk (with its partitions, queue, scheduler, groups and hardware ancestors)
 * from its devpath.  -EEXIST if it is already in the model. */
int scan_add_disk(Model *m, const char *devpath, Kobject **ret);
/* Adds one partition below its disk, which must be in the model. */
int scan_add_partition(Model *m, Kobject *disk, const char *name, Kobject **ret);
/* Adds the queue (and its scheduler) of a disk. */
int scan_add_queue(Model *m, Kobject *disk, Kobject **ret);
/* Adds the I/O scheduler kobject below a queue, if the directory exists; 0 if there is none. */
int scan_add_elevator(Model *m, Kobject *queue, Kobject **ret);
