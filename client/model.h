/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>
#include <systemd/sd-bus.h>

/*
 * Helpers over the JSON form of the model that bus_get_managed_objects()
 * returns: { path: { iface: { prop: value } } }.  Missing values read as
 * NULL, 0 or false, as doc/model.md says the daemon publishes them.
 */
json_object *model_object(json_object *model, const char *path);
json_object *model_prop(json_object *object, const char *iface, const char *prop);
bool model_has_iface(json_object *object, const char *iface);
const char *model_string(json_object *object, const char *iface, const char *prop);
uint64_t model_u64(json_object *object, const char *iface, const char *prop);
bool model_bool(json_object *object, const char *iface, const char *prop);
/* The name of a kobject, its path's last element if it has no Name. */
const char *model_name(json_object *model, const char *path);

/* Sorts paths by their objects' names in version order (sda2 < sda10). */
void model_sort_paths(json_object *model, const char **paths, size_t n);

/* Display and dump order of interfaces: Kobject, the kind, Kset/Manager, then the groups. */
int model_interface_rank(const char *iface);

/*
 * A copy of an interface's { prop: value } in model order: the typed properties as the model
 * defines them (common/interfaces.c), then the raw attributes by name; the Manager's as the daemon
 * sends them.  NULL when out of memory.
 */
json_object *model_ordered_properties(const char *iface, json_object *props);

/*
 * The paths of a model in model order, borrowed, in an array the caller frees: the Manager, then
 * the kobjects depth first (parents before children, siblings by name in version order).  NULL
 * when out of memory.
 */
const char **model_ordered_paths(json_object *model, size_t *ret_n);

/*
 * A copy of one object of a model in model order, so that two dumps of one model are
 * byte-identical: interfaces by model_interface_rank(), properties as model_ordered_properties().
 */
json_object *model_ordered_object(json_object *model, const char *path);
