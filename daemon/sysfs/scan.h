/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "model/kobject.h"
#include "sysfs/class-block.h"
#include "sysfs/listing.h"
#include "sysfs/sysfs.h"

/*
 * Building the model from sysfs.  Odd trees are the rule here, not the
 * exception: a device can vanish mid-scan, a link can dangle, a file can be
 * missing.  Each such thing is logged and skipped; the rest is published.
 */

/* Where a disk's `device` link points now, as a devpath; NULL for a virtual disk (no link) and for
 * a link the scan would not follow (dangling, into the disk, to what is no hardware). */
int scan_disk_device_devpath(const Sysfs *s, const Model *m, const Kobject *disk, char **ret);

/* Enumerates every block device under class/block; returns the number of disks added. */
int scan_all(const Sysfs *s, Model *m);

/* Reads an object's directory again: the shape it has now, its files' modes read too, with a new
 * reference. */
int scan_shape(const Sysfs *s, Model *m, Kobject *k, Shape **ret);

/* Adds the I/O scheduler kobject below a queue if its directory exists: 1, or 0 if there is none. */
int scan_add_elevator(const Sysfs *s, Model *m, Kobject *queue, Kobject **ret);

/* Adds the disk at devpath, with everything below it, from given, its deep listing
 * (listing_read_at(s, devpath, KTYPE_DISK, true, ...)), or one made here if NULL.  -EEXIST if a disk
 * of that path or name is there. */
int scan_add_disk(const Sysfs *s, Model *m, const char *devpath, const DirListing *given, Kobject **ret);

/*
 * Adds the block device at devpath, disk or partition as its directory says.  A partition
 * whose disk is not in the model brings its disk along (with every partition).  Returns the
 * object, -EEXIST if it is there already, -ENOENT if the directory is gone, -ENODEV if class/block
 * does not list it as a block device, -ENXIO if it is a partition and class/block does not list its
 * disk (the scan leaves such a one out too).
 */
int scan_add_block_device(const Sysfs *s, Model *m, const char *devpath, Kobject **ret);
