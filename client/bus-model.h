/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>
#include <systemd/sd-bus.h>

#include "introspect.h"

/*
 * OBJECT as the user gives it → object path, owned by the caller.  A path that stat()s to a block
 * device node (/dev/sda1, /dev/disk/by-id/..., /dev/mapper/...) is asked for by its MAJ:MIN, which
 * only this side can read; anything else goes to Manager.Resolve as it is.
 */
int bus_resolve(sd_bus *bus, const char *spec, char **ret_path, sd_bus_error *error);

/* Whether a property (iface, name) is worth keeping while loading. */
typedef bool (*BusPropertyFilter)(const char *iface, const char *name, void *userdata);

/*
 * The objects at and below top (BLKMODEL_ROOT_PATH: the whole model, the Manager included) into
 * { path: { iface: { prop: value } } }, with only the properties the filter keeps (all if NULL).
 * One GetManagedObjects where the daemon can answer it; where it refuses with LimitsExceeded (the
 * subtree would not fit in one message), the subtree is read in parts: the ObjectManagers below
 * (the ksets, each disk, each Device) one by one, recursively, and the objects between them with
 * Introspect and GetAll.
 */
int bus_load_model(sd_bus *bus, const char *top, BusPropertyFilter filter, void *userdata, json_object **ret,
                   sd_bus_error *error);

/* One object, every interface and property (Introspect, then GetAll on each), into model[path];
 * the introspection to ret_in if not NULL (the caller frees it with introspection_done()). */
int bus_load_object(sd_bus *bus, const char *path, json_object *model, Introspection *ret_in,
                    sd_bus_error *error);

/* Properties.GetAll(iface) into { prop: value }. */
int bus_get_all(sd_bus *bus, const char *path, const char *iface, json_object **ret, sd_bus_error *error);

/* Properties.Get(iface, prop): the value. */
int bus_get_property(sd_bus *bus, const char *path, const char *iface, const char *prop, json_object **ret,
                     sd_bus_error *error);
