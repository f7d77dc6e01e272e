/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>
#include <systemd/sd-bus.h>

/* True if the error says that nobody owns org.blkmodel1. */
bool bus_error_is_not_running(const sd_bus_error *error);

/*
 * Prints the one-line failure message for a failed call: the daemon's
 * message and the D-Bus error name, or "blkmodeld is not running on this
 * bus", or what (strerror) for a local failure.  Returns EXIT_FAIL.
 */
int bus_report_error(const sd_bus_error *error, int r, const char *what);

/* The failure of bus_resolve(): "No such object: SPEC (...NoSuchObject)". */
int bus_report_resolve_error(const sd_bus_error *error, int r, const char *spec);

/* Manager.Resolve(spec) → object path, owned by the caller. */
int bus_resolve(sd_bus *bus, const char *spec, char **ret_path, sd_bus_error *error);

/* Reads one complete value of any type at the read pointer into JSON. */
int bus_message_read_json(sd_bus_message *m, json_object **ret);

/* Formats the basic value at the read pointer as text (for dict keys). */
int bus_message_read_basic_string(sd_bus_message *m, char type, char **ret);

/* Whether a property (iface, name) is worth keeping while loading. */
typedef bool (*BusPropertyFilter)(const char *iface, const char *name, void *userdata);

/*
 * ObjectManager.GetManagedObjects into { path: { iface: { prop: value } } }.
 * Interfaces are always listed, with only the properties the filter keeps
 * (all if filter is NULL), so that a huge model need not be held in full.
 */
int bus_get_managed_objects(sd_bus *bus, BusPropertyFilter filter, void *userdata, json_object **ret,
                            sd_bus_error *error);

/* Properties.GetAll(iface) into { prop: value }. */
int bus_get_all(sd_bus *bus, const char *path, const char *iface, json_object **ret, sd_bus_error *error);

/*
 * GetManagedObjects carries the Kobject and typed properties; raw attribute values come from
 * Get/GetAll.  One request: Get(iface, prop), or GetAll(iface) when prop is NULL.
 */
typedef struct BusPropRequest {
        const char *path;
        const char *iface;
        const char *prop;
} BusPropRequest;

/*
 * Runs the requests with many calls in flight and merges the answers into
 * model[path][iface].  An object that vanished meanwhile is skipped.
 */
int bus_fetch_properties(sd_bus *bus, json_object *model, const BusPropRequest *req, size_t n,
                         sd_bus_error *error);

/* Reads one a(tssoa{ss}) event struct (Uevent signal args or GetEvents item). */
typedef struct BusEvent {
        uint64_t seqnum;
        const char *action;
        const char *devpath;
        const char *object;
        json_object *env; /* owned */
} BusEvent;

void bus_event_done(BusEvent *ev);
/* Reads the five fields at the read pointer (not inside a struct). */
int bus_message_read_event_fields(sd_bus_message *m, BusEvent *ret);

/* SIGINT and SIGTERM as a file descriptor (blocked for the process). */
int bus_signalfd_open(void);

/*
 * Waits until the bus has work, a signal arrives on sigfd (returns 1), or
 * deadline (CLOCK_MONOTONIC µs, USEC_INFINITY = never) passes (-ETIMEDOUT).
 * Returns 0 when sd_bus_process() should run.
 */
int bus_wait_event(sd_bus *bus, int sigfd, uint64_t deadline);

/* Manager.GetEvents(after); calls cb for each event in order. */
typedef int (*BusEventCallback)(const BusEvent *ev, void *userdata);
int bus_get_events(sd_bus *bus, uint64_t after, BusEventCallback cb, void *userdata, sd_bus_error *error);
