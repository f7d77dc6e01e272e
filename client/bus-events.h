/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

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
        json_object *env; /* owned */
} BusEvent;

void bus_event_done(BusEvent *ev);
/* Reads the five fields at the read pointer (not inside a struct); *ret untouched on failure. */
int bus_message_read_event_fields(sd_bus_message *m, BusEvent *ret);

/* Manager.GetEvents(after); calls cb for each event in order. */
typedef int (*BusEventCallback)(const BusEvent *ev, void *userdata);
int bus_get_events(sd_bus *bus, uint64_t after, BusEventCallback cb, void *userdata, sd_bus_error *error);
