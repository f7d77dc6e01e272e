/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "model/kobject.h"

/*
 * The interfaces an object is published with, in a fixed order: Kobject,
 * the interface of its kind (Disk, Queue …), then one per attribute group
 * (Group.power …), sorted.  They follow from the ktype and the interned
 * shape alone, so they cost the object nothing.
 */

typedef enum IfaceKind {
        IFACE_KOBJECT,
        IFACE_KIND,
        IFACE_GROUP,
} IfaceKind;

typedef struct Iface {
        IfaceKind kind;
        const char *name;
        const PropertyInfo *properties; /* the typed ones; never NULL */
        const AttrSet *attrs;           /* the raw attributes, or NULL */
        const char *attr_dir;           /* a group's directory, NULL for the object's own */
} Iface;

size_t kobject_n_ifaces(const Kobject *k);
/* The i-th interface, i < kobject_n_ifaces(k). */
void kobject_iface(const Kobject *k, size_t i, Iface *ret);
bool kobject_find_iface(const Kobject *k, const char *name, Iface *ret);

/* Is the interface, with the same attributes, also in shape s?  (Shapes and attribute sets are
 * interned, so identity is pointer equality.) */
bool iface_same_in(const Iface *iface, const Shape *s);

/* The attribute's file relative to the object's directory ("power/control"), without an
 * allocation, for the reading of every value: a->file itself, or the group's path in buf (a group
 * and a file are sysfs names, NAME_MAX each); NULL if it does not fit. */
#define IFACE_RELPATH_MAX (2 * NAME_MAX + 2)
const char *iface_attr_relpath_in(const Iface *iface, const Attr *a, char buf[static IFACE_RELPATH_MAX]);

/* The same, copied for the caller (error messages); NULL on ENOMEM. */
char *iface_attr_relpath(const Iface *iface, const Attr *a);
