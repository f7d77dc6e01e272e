/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "sysfs/sysfs.h"

/*
 * Reading one value below an object's directory, as it is published: confined beneath the
 * directory like every open (sysfs/sysfs.h), never blocking, escaped where it is not text.
 */

#define SYSFS_VALUE_MAX 4096

/* Reads an attribute: at most SYSFS_VALUE_MAX bytes, one trailing newline removed,
 * NUL and invalid UTF-8 escaped as \xNN.  Never blocks on FIFOs.  A file without read permission
 * bits reads as ""; kernfs: dirfd is on the real sysfs (Sysfs.kernfs), which enforces that itself. */
int sysfs_read_attr(int dirfd, const char *name, bool kernfs, char **ret);
/* The same, relative to the root. */
int sysfs_read_attr_at(const Sysfs *s, const char *relpath, char **ret);

/*
 * What a value is read from, relative to an object's directory: an attribute ("size",
 * "power/control"), as sysfs_read_attr(); a link directory ("holders/"): the names of its entries,
 * sorted, as sysfs_link_names_join() puts them ("" when there is no such directory; parse_link_names()
 * reads them back); or a link ("subsystem@"): the basename of its target, as
 * sysfs_link_basename_escape() has it ("" when there is none).  So that an object's links are read,
 * and kept for the length of a request, as its files are (sysfs/objdir.h, sysfs/prefetch.h).
 */
int sysfs_read_source(int dirfd, const char *source, bool kernfs, char **ret);
/* The same, the value copied by dup (n bytes at s, to be NUL-terminated; NULL when out of memory)
 * rather than malloc'd: a worker reading ahead puts values in its batch's pool (sysfs/prefetch.c). */
typedef char *(*SysfsStrndup)(const char *s, size_t n, void *userdata);
int sysfs_read_source_dup(int dirfd, const char *source, bool kernfs, SysfsStrndup dup, void *userdata,
                          char **ret);
/* A link directory's n entries, listed (sorted), as one value: their names, LINK_NAMES_SEPARATOR
 * (sysfs/values.h) between each two.  Malloc'd; NULL when out of memory. */
char *sysfs_link_names_join(const SysfsEntry *e, size_t n);
/* The basename of a link's target, as a link source ("driver@") reads it: "../../bus/scsi/drivers/sd"
 * → "sd"; escaped as a value is (NUL and invalid UTF-8 as \xNN), but with no newline taken off.
 * NULL on ENOMEM. */
char *sysfs_link_basename_escape(const char *target);
/* The source is an attribute, not a link directory or a link. */
bool sysfs_source_is_attr(const char *source);

/* One value as published, of len bytes read: a trailing newline removed, NUL and invalid UTF-8
 * escaped as \xNN.  NULL on ENOMEM. */
char *sysfs_value_escape(const char *buf, size_t len);
/* The same, copied by dup. */
char *sysfs_value_dup(const char *buf, size_t len, SysfsStrndup dup, void *userdata);
