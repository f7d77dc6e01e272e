/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>
#include <systemd/sd-bus.h>

/* Manager.Resolve(spec) → object path, owned by the caller. */
int bus_resolve(sd_bus *bus, const char *spec, char **ret_path, sd_bus_error *error);

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

/* Properties.Get(iface, prop): the value. */
int bus_get_property(sd_bus *bus, const char *path, const char *iface, const char *prop, json_object **ret,
                     sd_bus_error *error);

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
