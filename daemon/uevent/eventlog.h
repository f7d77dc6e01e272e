/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/*
 * The retained event window behind Manager.GetEvents (SPEC §5): a ring of
 * the last `capacity` events, each numbered by the daemon's own counter
 * (first, first + 1, ... with no gaps), so that a client can ask for
 * "everything after N" and either get exactly that or learn that it is too
 * late.  The daemon starts its counter where no earlier daemon's reached
 * (see manager.c), so that an N kept from one of those is too late too,
 * rather than naming other events.
 *
 * Fixed size: the ring is allocated once by eventlog_new() and an append
 * never allocates; once full, it frees the oldest record and reuses its
 * slot.  No D-Bus, no libuv, no logging.
 */

typedef struct EventRecord {
        uint64_t seqnum;   /* assigned by eventlog_append(); 0 before */
        char *action;      /* "add", "remove", ... */
        char *devpath;     /* the kernel's DEVPATH */
        char *object_path; /* the object the event is about ("/" if none) */
        size_t n_env;
        char **env_keys; /* the kernel's variables, in wire order */
        char **env_values;
} EventRecord;

/*
 * Makes a record holding copies of all the strings, in one allocation (so
 * the fields point into it and must not be freed or replaced one by one).
 * action, devpath and object_path must not be NULL; n_env may be 0, else
 * neither array nor any of their first n_env strings may be NULL.
 * Returns 0, -EINVAL or -ENOMEM; *ret untouched on failure.
 */
int event_record_new(const char *action, const char *devpath, const char *object_path, size_t n_env,
                     char *const *env_keys, char *const *env_values, EventRecord **ret);
/* Accepts NULL; returns NULL.  Only for records not (yet) handed to a log. */
EventRecord *event_record_free(EventRecord *r);

typedef struct EventLog EventLog;

/*
 * capacity >= 1 records, numbered from first_seqnum >= 1 (-EINVAL for 0 of
 * either); -ENOMEM.  *ret untouched on failure.
 */
int eventlog_new(size_t capacity, uint64_t first_seqnum, EventLog **ret);
/* Frees the log and every retained record.  Accepts NULL; returns NULL. */
EventLog *eventlog_free(EventLog *l);

/*
 * Appends a record made by event_record_new() and takes ownership of it.
 * Assigns rec->seqnum (the previous one + 1, starting at first_seqnum) and
 * returns it.
 * Cannot fail.  If the log was full, the oldest record is freed.  rec stays
 * valid until `capacity` more records have been appended, so the caller may
 * still read it (to emit the signal) right after this call.
 */
uint64_t eventlog_append(EventLog *l, EventRecord *rec);

/* The seqnum the log started from. */
uint64_t eventlog_first_seqnum(const EventLog *l);
/* The seqnum of the newest record ever appended; first_seqnum - 1 if none yet. */
uint64_t eventlog_last_seqnum(const EventLog *l);
/* The seqnum of the oldest record still retained; the next one's if none. */
uint64_t eventlog_oldest_seqnum(const EventLog *l);
/* How many records are retained now, and at most. */
size_t eventlog_size(const EventLog *l);
size_t eventlog_capacity(const EventLog *l);

/*
 * The records with seqnum > after, oldest first, as a range of indexes for
 * eventlog_get(): *ret_first_index .. *ret_first_index + *ret_count - 1.
 *
 * `after` 0, which no event has, means from the first: all of them while
 * none has been evicted.  Returns 0, or -ESTALE
 * (→ org.blkmodel1.Error.EventsExpired) if records after `after` have been
 * evicted or were never here, i.e. after + 1 < oldest: the caller would see
 * a gap, or events that are not the ones it means, and must resync.
 * after >= last gives count 0 (nothing new; this includes an `after` from
 * the future: the caller decides whether that deserves an error).  Outputs
 * untouched on failure.
 */
int eventlog_since(const EventLog *l, uint64_t after, size_t *ret_first_index, size_t *ret_count);

/*
 * The retained record at index i, 0 being the oldest (seqnum oldest + i);
 * NULL if i >= eventlog_size().  O(1).  Valid until the next append.
 */
const EventRecord *eventlog_get(const EventLog *l, size_t i);
