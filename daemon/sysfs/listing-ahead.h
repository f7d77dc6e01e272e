/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "sysfs/class-block.h"
#include "sysfs/listing.h"

/*
 * class/block's devices resolved and their disks listed ahead on helper threads, for a caller that
 * builds them one by one in a fixed order (the start: issue 12 measured listing at three quarters of
 * it).  The caller takes device i for i = 0, 1, 2, ...; helpers read the links and list the disks
 * after it, at most a bounded number ahead so that only a few listings wait in memory.  A disk's
 * listing brings its partitions' and those of its hardware ancestors that no other disk brought,
 * each listed once.  When the device the caller wants is still being listed, the caller lists the
 * next untaken one itself rather than wait.  Helpers touch only the slots they fill: the names are
 * the caller's (kept until listing_ahead_free()), the root is a copy of its fd.  Without a CPU to
 * spare there are no helpers, and the caller lists every disk itself.
 */

typedef struct ListingAhead ListingAhead;

/* devs: scan_list_block_names()'s, n of them, borrowed until listing_ahead_free(). */
int listing_ahead_start(const Sysfs *s, const BlockDev *devs, size_t n, ListingAhead **ret);
/* Device i's devpath (the caller's to free; NULL if class/block's entry is no usable link, logged)
 * and deep listing as a disk, with the hardware above it that no earlier call brought (1; the caller
 * then owns it); 0 for a device not listed: one inside the directory of another that class/block
 * lists (a partition, which its disk's listing holds), or with a `partition` file; or the negative
 * errno its listing failed with.  i must be one more than the last call's (0 first). */
int listing_ahead_take(ListingAhead *a, size_t i, char **ret_devpath, DirListing *ret);
/* Stops the helpers (waiting for the disk each is listing) and frees what nobody took. */
ListingAhead *listing_ahead_free(ListingAhead *a);
static inline void listing_ahead_freep(ListingAhead **a)
{
        listing_ahead_free(*a);
}
