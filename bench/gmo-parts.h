/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Reading a whole object tree with GetManagedObjects, in parts when one reply cannot hold it.
 *
 * GmoReader calls GetManagedObjects on a root.  When the service refuses with
 * org.freedesktop.DBus.Error.LimitsExceeded (blkmodeld does when the reply would pass the bus's
 * message limit), the reader introspects that path and reads each child instead: the child's own
 * interfaces with Properties.GetAll (GetManagedObjects does not include the manager itself) and
 * what is below it with GetManagedObjects, recursively.  Calls are pipelined (up to in_flight at
 * once), as a client that wants the model fast would do.  A GetManagedObjects that fails with
 * UnknownMethod/UnknownInterface/UnknownObject marks a leaf (an object that is no ObjectManager).
 *
 * Every object path seen is passed to on_object; every value of every reply is read (what any real
 * client must do once).
 */
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "bus-open.h"
#include "clock.h"

typedef struct GmoStats {
        uint64_t objects;    /* object paths seen (GMO entries + part roots) */
        uint64_t interfaces; /* interface entries */
        uint64_t properties; /* property entries */
        uint64_t values;     /* basic values in the properties */
        uint64_t gmo_calls, gmo_refused, introspect_calls, getall_calls;
} GmoStats;

typedef void (*GmoObjectFunc)(const char *path, void *userdata);

/* Reads a GetManagedObjects reply from its start, every value, counting into *stats. */
int gmo_read_reply(sd_bus_message *m, GmoStats *stats);

/* Reads everything below root (root itself excluded, as GetManagedObjects does).  0 or -errno;
 * on failure error_text (static or malloc'ed into *error_text) says what failed. */
int gmo_read_all(sd_bus *bus, const char *dest, const char *root, unsigned in_flight, uint64_t timeout_usec,
                 GmoObjectFunc on_object, void *userdata, GmoStats *stats, char **error_text);

/* The non-empty lines of file, each without its newline and any of the characters in trailing
 * at its end, sorted with bench_cmp_str (strcmp on char * elements, for qsort and bsearch). */
int bench_read_lines(const char *file, const char *trailing, char ***ret, size_t *ret_n);
int bench_cmp_str(const void *a, const void *b);
