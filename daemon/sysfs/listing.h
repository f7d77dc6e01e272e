/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "base/pool.h"
#include "model/ktype.h"
#include "sysfs/sysfs.h"

/*
 * A kobject's directories as listed: the system calls of a scan, apart from what the scan makes of
 * them.  Listing is three quarters of a start on a thousand disks (getdents64, openat2, close), and
 * a listing is plain data, so it can be made on any thread: the start lists disks on helper threads
 * while the loop thread builds the model from what they listed (scan_all).
 *
 * A kobject's listing holds its entries and the listing of each subdirectory its kind does not
 * handle itself: attribute groups, and kobjects of their own.  A disk's listing goes all the way
 * down: its partitions' groups, its queue, the queue's scheduler, and where its `device` link
 * points.
 */

typedef struct DirListing DirListing;
struct DirListing {
        const char *name;    /* in the directory above; NULL for the kobject listed */
        SysfsEntry *entries; /* sorted by name */
        size_t n_entries;
        DirListing *subdirs; /* sorted by name; a subdirectory that could not be listed is left out */
        size_t n_subdirs;
        const char *device_link; /* a disk's `device` link as read, NULL if none */
        int device_error;        /* why that link could not be read */
        DirListing *ancestors;   /* hardware above a disk listed with it; name: the devpath */
        size_t n_ancestors, n_ancestors_allocated;
        /* The kobject listed owns the memory of everything above, its subdirectories' included: a
         * few blocks per disk rather than a malloc per directory. */
        Pool pool;
};

/* Subdirectories a kind handles itself, or that are link directories or kobject trees outside the
 * model; they are never attribute groups. */
bool listing_kind_handles(KtypeId id, const char *dir);

/* Lists the kobject of kind id whose directory is dirfd (not closed).  deep: also the kobjects below
 * it that the scan publishes with it (a disk's partitions, queue and scheduler); otherwise only what
 * its own shape needs. */
int listing_read(int dirfd, KtypeId id, bool deep, DirListing *ret);
/* The same from its devpath. */
int listing_read_at(const Sysfs *s, const char *devpath, KtypeId id, bool deep, DirListing *ret);

const DirListing *listing_subdir(const DirListing *l, const char *name);
const SysfsEntry *listing_entry(const DirListing *l, const char *name);
/* A kobject's directory: a uevent file, or a partition's file (which counts even without uevent). */
bool listing_is_kobject(const DirListing *l);

/* Lists a disk's hardware ancestor at devpath into the disk's listing. */
int listing_add_ancestor(const Sysfs *s, DirListing *disk, const char *devpath);
const DirListing *listing_ancestor(const DirListing *disk, const char *devpath);

/* Frees a listing made by listing_read() (not one of its subdirectories). */
void listing_done(DirListing *l);
