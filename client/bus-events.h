/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>
#include <systemd/sd-bus.h>

/* One (tssoa{ss}) event: the Uevent signal's arguments or an item of GetEvents.  The strings point
 * into the message it was read from. */
typedef struct BusEvent {
        uint64_t seqnum;
        const char *action;
        const char *devpath;
        const char *object;
        json_object *env;       /* owned */
        uint64_t realtime_usec; /* when the signal arrived; 0 for GetEvents', which carry no time */
} BusEvent;

void bus_event_done(BusEvent *ev);
/* Reads the five fields at the read pointer (not inside a struct); *ret untouched on failure. */
int bus_message_read_event_fields(sd_bus_message *m, BusEvent *ret);

/*
 * Manager.GetEvents, page by page, asked of dest (a daemon's unique name: the one whose seqnums they
 * are; NULL: whichever owns org.blkmodel1 at each call): the daemon answers with as many events as fit in one message, so
 * this asks again after the last seqnum it got until it has every event up to until (UINT64_MAX:
 * LastSeqnum, read first), or a reply comes back empty.  Calls cb for each event in order.
 * EventsExpired comes back as the error, whichever page it answered.  An event larger than the bus
 * carries is skipped with a warning.
 */
typedef int (*BusEventCallback)(const BusEvent *ev, void *userdata);
int bus_get_events_from(sd_bus *bus, const char *dest, uint64_t after, uint64_t until, BusEventCallback cb,
                        void *userdata, sd_bus_error *error);

/* EventsExpired for a seqnum from before the daemon started: one kept from an earlier daemon. */
bool bus_error_is_earlier_daemons(const sd_bus_error *error);

/* The unique name of the daemon that owns org.blkmodel1 now (a copy in *ret), so that a reading in
 * several calls asks one daemon, whose seqnums they all are; negative errno (none owns it, too). */
int bus_get_daemon_owner(sd_bus *bus, char **ret);

/* Manager.LastSeqnum or OldestSeqnum of dest (NULL: of org.blkmodel1). */
int bus_get_seqnum_from(sd_bus *bus, const char *dest, const char *property, uint64_t *ret,
                        sd_bus_error *error);
