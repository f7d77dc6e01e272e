/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <systemd/sd-bus.h>

/* The interfaces and properties of one object, from Introspect. */
typedef struct IntrospectProperty {
        char *name;
        char *type;
        bool readable; /* access "read" or "readwrite"; a write-only attribute (remove) is not */
        bool writable;
        char *file; /* an attribute's file name where it is not the name (org.blkmodel1.File), or NULL */
} IntrospectProperty;

typedef struct IntrospectInterface {
        char *name;
        char *dir; /* an attribute group's directory where it is not the name's end, or NULL */
        IntrospectProperty *properties;
        size_t n_properties;
} IntrospectInterface;

typedef struct Introspection {
        IntrospectInterface *interfaces;
        size_t n_interfaces;
        /* The names of the child nodes (<node name="..."/>): path elements, still encoded. */
        char **children;
        size_t n_children;
} Introspection;

int introspect_parse(const char *xml, Introspection *ret);
int introspect_object(sd_bus *bus, const char *path, Introspection *ret, sd_bus_error *error);
void introspection_done(Introspection *i);
/* Whether the object has this interface. */
bool introspect_has_interface(const Introspection *in, const char *iface);
/* The sysfs name of an attribute property (its file) and of a group interface (its directory). */
const char *introspect_property_file(const IntrospectProperty *p);
const char *introspect_interface_dir(const IntrospectInterface *f);
/* Whether an interface is ours (not org.freedesktop.DBus.*). */
bool introspect_interface_is_model(const char *iface);

/*
 * Finds ATTR on an object: a typed or raw property name, an attribute's file
 * name (as the org.blkmodel1.File annotation gives it where the two differ),
 * or GROUP/FILE for an attribute group.  Names first, then file names; kind
 * interfaces first, then Kobject, Kset, Manager, then groups.
 */
int introspect_find_property(const Introspection *i, const char *attr, const IntrospectInterface **ret_iface,
                             const IntrospectProperty **ret_prop);
