/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "sysfs/objdir.h"

/*
 * Objects' files read ahead on a worker thread, for a request that reads every one of them
 * (GetManagedObjects).  On the real sysfs the reading is three quarters of such a reply, so a
 * worker reading the next objects while the loop appends the last ones, and a second one beside it,
 * cut the reply's time (issue 12).
 *
 * The loop thread says what to read (prefetch_new, prefetch_add_object, prefetch_add_file); a worker
 * reads it (prefetch_read, which touches nothing but the Prefetch: every string is its own copy and
 * the root its own fd); then the loop thread hands each object's values to the ObjDir that appends
 * the object (prefetch_hand_over).  The values are as live as the reply's slices make them anyway:
 * read a few milliseconds before they are appended.
 */

typedef struct Prefetch Prefetch;

int prefetch_new(const Sysfs *s, Prefetch **ret);
Prefetch *prefetch_free(Prefetch *b);
static inline void prefetch_freep(Prefetch **b)
{
        prefetch_free(*b);
}

/* Starts the next object: its directory's path below the root. */
int prefetch_add_object(Prefetch *b, const char *devpath);
/* A file of the last object, relative to its directory ("size", "power/control"). */
int prefetch_add_file(Prefetch *b, const char *relpath);
/* The same, unless the last object has it already. */
int prefetch_add_file_once(Prefetch *b, const char *relpath);
/* An attribute of the last object's interface (in its group's directory, if it has one). */
int prefetch_add_attr(Prefetch *b, const Iface *iface, const Attr *a);
/* A file of the last object whose permission bits the worker reads, not its value. */
int prefetch_add_mode(Prefetch *b, const char *relpath);
int prefetch_add_mode_attr(Prefetch *b, const Iface *iface, const Attr *a);
size_t prefetch_n_objects(const Prefetch *b);

typedef struct PrefetchMode {
        const char *file;
        int mode; /* sysfs_file_mode(): the bits, or negative errno (-ENODATA: never read) */
} PrefetchMode;

/* Object i's files added with prefetch_add_mode(), in that order, with their modes once read. */
const PrefetchMode *prefetch_modes(const Prefetch *b, size_t i, size_t *ret_n);

/* On the worker: opens each directory, reads each file (on kernfs, all at once: sysfs/read-many.h) and
 * each mode asked for. */
void prefetch_read(Prefetch *b);

/* Moves object i's values into d, which has read nothing yet (the directory was closed once read: d
 * opens it again for a file not read ahead); nothing if prefetch_read() never ran, the directory would
 * not open, or a file could not be read for want of descriptors or memory (d then reads for itself,
 * finding what is there now).  The strings stay b's: free b only after d is done. */
void prefetch_hand_over(Prefetch *b, size_t i, ObjDir *d);
