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

/* doc/model.md: a file name as a D-Bus member name; caller frees. */
char *model_sanitize_member(const char *name);

/* The interfaces and properties of one object, from Introspect. */
typedef struct IntrospectProperty {
        char *name;
        char *type;
        bool writable;
} IntrospectProperty;

typedef struct IntrospectInterface {
        char *name;
        IntrospectProperty *properties;
        size_t n_properties;
} IntrospectInterface;

typedef struct Introspection {
        IntrospectInterface *interfaces;
        size_t n_interfaces;
} Introspection;

int introspect_parse(const char *xml, Introspection *ret);
int introspect_object(sd_bus *bus, const char *path, Introspection *ret, sd_bus_error *error);
void introspection_done(Introspection *i);
/* Whether an interface is ours (not org.freedesktop.DBus.*). */
bool introspect_interface_is_model(const char *iface);

/*
 * Finds ATTR on an object: a typed or raw property name, a file name
 * (sanitized as the daemon does), or GROUP/FILE for an attribute group.
 * Kind interfaces come first, then Kobject, Kset, Manager, then groups.
 */
int introspect_find_property(const Introspection *i, const char *attr, const IntrospectInterface **ret_iface,
                             const IntrospectProperty **ret_prop);
