/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

#include "common/util.h" /* parse_u64() */

/*
 * Parsers for the text of sysfs attributes, as sysfs_read_attr() returns
 * it.  Pure: no I/O, no logging, no global state, so that the fuzzer can
 * drive them and everything that reads a value agrees on what it means.
 * All return 0 or a negative errno and leave their outputs untouched on
 * failure.
 */

/* The dev attribute: "MAJ:MIN".  -EBADMSG otherwise. */
int parse_dev(const char *v, unsigned *ret_major, unsigned *ret_minor);

/* sysfs counts sizes in 512-byte sectors whatever the device's block size; saturates. */
uint64_t sectors_to_bytes(uint64_t sectors);

/* A queue's scheduler attribute, "none [mq-deadline] kyber bfq": every name offered (a
 * NULL-terminated vector; either output may be NULL) and the active one, bracketed ("" if none is). */
int parse_scheduler(const char *v, char ***ret_all, char **ret_active);

/* A uevent file's KEY=value lines, as a NULL-terminated vector of key, value, key, value …
 * Lines without '=' or with an empty key are skipped. */
int parse_uevent_file(const char *v, char ***ret_pairs);
/* The value of one key of a uevent file, or -ENOENT. */
int uevent_file_get(const char *v, const char *key, char **ret);

/* What a link directory (holders/, slaves/) is read as, by sysfs_read_source(): the names of its
 * entries, sorted, this byte between each two.  Not a newline: a name may hold any byte but NUL and
 * '/', and one holding a newline came back as two names, each related as a holder or slave. */
#define LINK_NAMES_SEPARATOR '/'

/* A link directory's listing made the objects it relates to, in its order: lookup gives the path
 * of the object a name stands for, or NULL where there is none (left out).  A NULL-terminated
 * vector of copies, empty for "". */
typedef const char *(*LinkNameLookup)(const char *name, void *userdata);
int parse_link_names(const char *v, LinkNameLookup lookup, void *userdata, char ***ret_paths);
