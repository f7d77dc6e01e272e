/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
#include "base/hash.h"
#include "base/hashmap.h"

#include "model/iface.h"
#include "sysfs/sysfs.h"

/*
 * One object's directory for the length of one request: opened on first
 * use, and every file read at most once, so that the properties derived
 * from one file (Major and Minor from dev, Scheduler and Schedulers from
 * scheduler) agree, and a GetAll costs one read per file.
 */

typedef struct ObjDirValue {
        char *file;
        char *value; /* NULL: the read failed with error */
        int error;
} ObjDirValue;

typedef struct ObjDir {
        const Sysfs *sysfs;
        const Kobject *k;
        int fd;
        ObjDirValue *values;
        size_t n_values, n_allocated;
        /* The first n_borrowed values' strings belong to whoever read them ahead (sysfs/prefetch.h),
         * which keeps them until d is done; the array and the rest are d's. */
        size_t n_borrowed;
        size_t next; /* where the next lookup starts */
        /* The files read, once there are so many that a lookup of a file not read yet would cost
         * more than a hash (an object of thousands of attributes); empty until then. */
        Hashmap files;
        /* A hash of every lookup's file and value, in turn, but those of what moves by itself:
         * two readings that asked the same of the same values have the same mark. */
        uint64_t mark;
        /* The first read that failed for want of descriptors or memory (errno_is_resource()),
         * else 0: such a reading says nothing of sysfs, and what read it must not publish it. */
        int resource_error;
} ObjDir;

#define OBJDIR_MARK_NONE FNV1A_INIT /* nothing asked yet */
#define OBJDIR_INIT(s, obj) ((ObjDir){.sysfs = (s), .k = (obj), .fd = -1, .mark = OBJDIR_MARK_NONE})

void objdir_done(ObjDir *d);
/* Frees n values, each with its file name, but the first n_borrowed ones', and the array. */
void objdir_values_free(ObjDirValue *values, size_t n, size_t n_borrowed);
static inline void objdir_donep(ObjDir *d)
{
        objdir_done(d);
}

/* The directory's fd (owned by d), or negative errno. */
int objdir_fd(ObjDir *d);
/* Reads a file relative to the directory ("size", "power/control"); the value stays d's:
 * valid until objdir_done(). */
int objdir_read(ObjDir *d, const char *relpath, const char **ret);
/* Reads one raw attribute of an interface. */
int objdir_read_attr(ObjDir *d, const Iface *iface, const Attr *a, const char **ret);
/* Has d read that file (or link, or link directory) already? */
bool objdir_has(ObjDir *d, const char *relpath);
/* The value d read of that file, if it did and the read succeeded (else NULL): no read, and no part of
 * the mark. */
const char *objdir_value(ObjDir *d, const char *relpath);
bool objdir_has_attr(ObjDir *d, const Iface *iface, const Attr *a);
/* Is the attribute's file (or its group's directory) gone from the object's directory?  Not a read
 * that failed with ENOENT: some show() callbacks answer that for a file that is there. */
bool objdir_attr_gone(ObjDir *d, const Iface *iface, const Attr *a);
