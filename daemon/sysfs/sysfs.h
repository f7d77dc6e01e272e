/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * Reading below the sysfs root.  Every open is relative to the root's
 * directory fd and confined beneath it (openat2 RESOLVE_BENEATH), so a
 * crafted link or name can never make us read outside the tree.  No
 * logging here: callers decide what a failure means.
 */

typedef struct Sysfs {
        int root_fd;
        char *root;  /* as given, for messages and the SysfsRoot property */
        bool kernfs; /* the real sysfs, which refuses to open a file without read bits, even to root */
} Sysfs;

typedef enum SysfsEntryType {
        SYSFS_ENTRY_FILE,
        SYSFS_ENTRY_DIR,
        SYSFS_ENTRY_LINK,
        SYSFS_ENTRY_OTHER, /* FIFOs, sockets, devices: never read */
} SysfsEntryType;

typedef struct SysfsEntry {
        char *name;
        SysfsEntryType type;
} SysfsEntry;

int sysfs_open(const char *root, Sysfs *ret);
/* The directory at the root's path was replaced (a fixture deleted and made again): open the new
 * one.  1 if it was, 0 if not, negative errno if the path is gone. */
int sysfs_reopen_if_replaced(Sysfs *s);

/* openat() confined beneath dirfd (openat2 RESOLVE_BENEATH; one entry of dirfd not followed:
 * openat() O_NOFOLLOW; without openat2, plain openat() refusing absolute paths and ".."), following
 * symlinks unless no_symlinks. */
int sysfs_openat_beneath(int dirfd, const char *path, int flags, bool no_symlinks);
void sysfs_close(Sysfs *s);

/* Root opens a file of a fixture whatever its permission bits say; kernfs refuses a file without
 * read bits to everyone.  Gives up CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH on the calling thread,
 * and so on every thread it starts after: then the open itself refuses such a file, as on kernfs,
 * where an fstat() per file had to tell (13 % of the CPU of a reading of a 1,000 disk fixture).
 * Call before any other thread starts.  1 if they were held, 0 if not, negative errno. */
int sysfs_drop_dac_override(void);
/* Since sysfs_drop_dac_override(): every thread's open refuses a file without permission bits. */
bool sysfs_opens_check_modes(void);
/* Opens a file whose bits let others read or write it but not us, overriding them as root did
 * before sysfs_drop_dac_override(): the override is raised for this one open.  -EACCES when no
 * override was dropped. */
int sysfs_openat_overriding(int dirfd, const char *name, int flags);

/* Opens a directory by its path below the root ("devices/…" or "/devices/…"), following no links. */
int sysfs_open_dir(const Sysfs *s, const char *relpath);
/* Opens a subdirectory of an open directory, following no links. */
int sysfs_open_subdir(int dirfd, const char *name);

/* Lists a directory just opened, sorted by name; "." and ".." left out.  The names live in the
 * array's own allocation: sysfs_entries_free() frees both.  It reads on from where dirfd is: every
 * caller opens the directory for the listing, and an lseek() to its start first was a system call
 * per directory (31,500 for a scan of 1,000 disks, one per plain change event). */
int sysfs_list(int dirfd, SysfsEntry **ret, size_t *ret_n);
/* The same in memory from alloc (which returns memory aligned for a pointer, or NULL). */
typedef void *(*SysfsAlloc)(size_t size, void *userdata);
int sysfs_list_alloc(int dirfd, SysfsAlloc alloc, void *userdata, SysfsEntry **ret, size_t *ret_n);
/* A directory read an entry at a time, from its start, with getdents64 on dirfd itself (which it
 * neither copies nor closes, and whose position it moves). */
typedef struct SysfsDir SysfsDir;
int sysfs_opendir(int dirfd, SysfsDir **ret);
/* The next entry, in the directory's own order: 1 with its name (valid until the next call) and
 * type, 0 at the end, negative errno.  "." and ".." and entries gone meanwhile are left out. */
int sysfs_readdir(SysfsDir *d, const char **ret_name, SysfsEntryType *ret_type);
SysfsDir *sysfs_closedir(SysfsDir *d);
void sysfs_entries_free(SysfsEntry *e, size_t n);
bool sysfs_has_file(int dirfd, const char *name);
/* Permission bits of a file in dirfd, or negative errno. */
int sysfs_file_mode(int dirfd, const char *name);

/* One write() of the whole value, no link followed; -EIO on a short write. */
int sysfs_write_attr(int dirfd, const char *name, const char *value);

/* readlinkat(), allocated. */
int sysfs_readlink(int dirfd, const char *name, char **ret);

/* Where a symbolic link below the root leads, for a message: 1 somewhere, 0 nowhere (dangling),
 * negative errno (-EXDEV: out of the root, -ELOOP: links in a loop).  Its target in *ret_target,
 * NULL when it cannot be read.  Followed beneath the root, as nothing else here is: only to say
 * what a link that was not followed is. */
int sysfs_link_leads(const Sysfs *s, const char *relpath, char **ret_target);

/* Resolves a link target relative to the directory that holds the link, lexically:
 * base "/devices/pci0000:00/…/block/sda" + "../../sdb" → "/devices/…/sdb".
 * -EINVAL if it leaves the root. */
int sysfs_resolve_relative(const char *base_dir, const char *target, char **ret);
