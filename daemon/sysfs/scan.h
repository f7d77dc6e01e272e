/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "model/kobject.h"
#include "sysfs/sysfs.h"

/*
 * Building the model from sysfs.  Odd trees are the rule here, not the
 * exception: a device can vanish mid-scan, a link can dangle, a file can be
 * missing.  Each such thing is logged and skipped; the rest is published.
 */

/* One entry of class/block: a block device by its kernel name and devpath. */
typedef struct BlockDev {
        char *name;
        char *devpath;
        bool partition;
} BlockDev;

void block_devs_free(BlockDev *l, size_t n);

/* One entry of class/block (classfd), read into *ret; logged and negative when unusable. */
int block_dev_read_entry(const Sysfs *s, int classfd, const SysfsEntry *e, BlockDev *ret);

/* What class/block lists now, in name order.  Entries that are not links to a directory of the
 * same name are logged and left out. */
int scan_list_block_devs(const Sysfs *s, BlockDev **ret, size_t *ret_n);

/*
 * Is there a block device at devpath: its directory, and class/block listing it?  The kernel
 * takes the class/block link away before it sends a device's remove event (device_del()), and
 * only then the directory: a remove that finds the link still there is synthetic (udevadm
 * trigger --action=remove), and the device stays.
 */
bool scan_block_device_present(const Sysfs *s, const char *devpath);

/* Where a disk's `device` link points now, as a devpath; NULL for a virtual disk (no link) and for
 * a link the scan would not follow (dangling, into the disk, to what is no hardware). */
int scan_disk_device_devpath(const Sysfs *s, const Model *m, const Kobject *disk, char **ret);

/* Enumerates every block device under class/block; returns the number of disks added. */
int scan_all(const Sysfs *s, Model *m);

/* Reads an object's directory again: the shape it has now, with a new reference. */
int scan_shape(const Sysfs *s, Model *m, Kobject *k, Shape **ret);

/* Adds one disk (with its partitions, queue, scheduler, groups and hardware ancestors)
 * from its devpath.  -EEXIST if it is already in the model. */
int scan_add_disk(const Sysfs *s, Model *m, const char *devpath, Kobject **ret);
/* Adds one partition below its disk, which must be in the model. */
int scan_add_partition(const Sysfs *s, Model *m, Kobject *disk, const char *name, Kobject **ret);
/* Adds the request queue of a disk, and its scheduler. */
int scan_add_queue(const Sysfs *s, Model *m, Kobject *disk);
/* Adds the I/O scheduler kobject below a queue if its directory exists: 1, or 0 if there is none. */
int scan_add_elevator(const Sysfs *s, Model *m, Kobject *queue, Kobject **ret);

/*
 * Adds the block device at devpath, disk or partition as its directory says.  A partition
 * whose disk is not in the model brings its disk along (with every partition).  Returns the
 * object, -EEXIST if it is there already, -ENOENT if the directory is gone, -ENODEV if class/block
 * does not list it as a block device.
 */
int scan_add_block_device(const Sysfs *s, Model *m, const char *devpath, Kobject **ret);
