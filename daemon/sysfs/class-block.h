/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "model/kobject.h"
#include "sysfs/sysfs.h"

/* What the kernel's class/block says: which block devices exist, and where their disks sit. */

/* One entry of class/block: a block device by its kernel name and devpath. */
typedef struct BlockDev {
        char *name;
        char *devpath;
        bool partition;      /* BlockDevReader only */
        SysfsEntryType type; /* scan_list_block_names() only */
} BlockDev;

void block_devs_free(BlockDev *l, size_t n);

/* What class/block lists now, in name order: names and entry types only, no devpath.  The start
 * leaves each link's reading (block_dev_resolve()) to its listing threads: read here first, 3,000
 * links kept them waiting for 10-20 ms. */
int scan_list_block_names(const Sysfs *s, BlockDev **ret, size_t *ret_n);

/* The entry named by the first len bytes of name in l (sorted by name, as above), or NULL. */
const BlockDev *block_devs_find(const BlockDev *l, size_t n, const char *name, size_t len);

/* Does devpath's directory hold a `partition` file: 1 or 0, or the negative errno its opening failed
 * with. */
int block_dev_is_partition(const Sysfs *s, const char *devpath);

/* The devpath class/block/entry links to (classfd: class/block).  An entry that is not a link to a
 * path of the same name is logged, and negative. */
int block_dev_resolve(int classfd, const char *entry, SysfsEntryType type, char **ret_devpath);

/* The same a few entries at a time, in the directory's own order, for a reader that must not keep
 * the loop long (a rescan: 50,000 entries and their sort at once took 36 ms). */
typedef struct BlockDevReader BlockDevReader;
int block_dev_reader_open(const Sysfs *s, BlockDevReader **ret);
/* Appends up to max block devices to *devs (*n of them, room for *n_max, grown as needed): 1 while
 * class/block has more, 0 at its end, negative errno. */
int block_dev_reader_next(BlockDevReader *r, size_t max, BlockDev **devs, size_t *n, size_t *n_max);
BlockDevReader *block_dev_reader_free(BlockDevReader *r);
static inline void block_dev_reader_freep(BlockDevReader **r)
{
        *r = block_dev_reader_free(*r);
}

/* Does class/block list devpath: a link of its name that resolves to it?  One syscall for a name it
 * has no link of (every hardware device's). */
bool class_block_lists(const Sysfs *s, const char *devpath);
/* The same, telling "no" from "cannot tell": 1 listed, 0 not, negative errno when the process ran out
 * of something (errno_is_resource()) and the answer is unknown. */
int class_block_check(const Sysfs *s, const char *devpath);

/*
 * Is there a block device at devpath: its directory, and class/block listing it?  The kernel
 * takes the class/block link away before it sends a device's remove event (device_del()), and
 * only then the directory: a remove that finds the link still there is synthetic (udevadm
 * trigger --action=remove), and the device stays.
 */
bool scan_block_device_present(const Sysfs *s, const char *devpath);
/* 1 present, 0 not, negative errno: cannot tell (see class_block_check()). */
int scan_block_device_check(const Sysfs *s, const char *devpath);
