/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "hashmap.h"
#include "sysfs.h"

/*
 * Shapes: what attribute files an object's directory has.  Thousands of
 * disks share a handful of shapes, so a shape is interned and shared, and
 * an object costs one pointer for all its attribute names (SPEC §9).
 * Values are never stored: they are read from sysfs when asked for.
 */

typedef enum AttrFlags {
        ATTR_VOLATILE = 1 << 0, /* changes without an event: no PropertiesChanged */
        ATTR_WRITABLE = 1 << 1, /* has a write bit (learned on first introspection) */
} AttrFlags;

typedef struct Attr {
        char *file;   /* the sysfs file name */
        char *member; /* its D-Bus property name */
        unsigned flags;
} Attr;

typedef struct AttrSet {
        unsigned n_ref;
        char *key;    /* interning key: the file names joined by '/' */
        size_t n_attrs;
        Attr *attrs;  /* sorted by member */
        /* File modes are not part of the interning key (listing a directory gives names, not modes):
         * the first object introspected tells them for all, as one kernel attribute has one mode. */
        bool modes_learned;
} AttrSet;

typedef struct Group {
        char *dir;       /* "power" */
        char *interface; /* "org.blkmodel1.Group.power" */
        AttrSet *attrs;
} Group;

typedef struct Shape {
        unsigned n_ref;
        char *key;
        AttrSet *attrs;
        size_t n_groups;
        Group *groups; /* sorted by interface */
} Shape;

typedef struct ShapeRegistry {
        Hashmap attr_sets;
        Hashmap shapes;
} ShapeRegistry;

typedef struct ShapeBuilder {
        char **files;  /* the kind's attribute files */
        size_t n_files;
        char **group_dirs;
        char ***group_files; /* per group, NULL-terminated */
        size_t n_groups;
} ShapeBuilder;

void shape_registry_init(ShapeRegistry *r);
void shape_registry_deinit(ShapeRegistry *r);

/* kind: the object kind ("disk"); reserved: member names its interface already uses (typed
 * properties), NULL-terminated; what: the object, for log lines.
 * Returns the interned shape with a new reference; -ENOMEM. Logs each name it leaves out. */
int shape_get(ShapeRegistry *r, const ShapeBuilder *b, const char *kind, const char *const *reserved,
              const char *what, Shape **ret);
Shape *shape_ref(Shape *s);
void shape_unref(ShapeRegistry *r, Shape *s);

void shape_builder_done(ShapeBuilder *b);
int shape_builder_add_files(ShapeBuilder *b, const SysfsEntry *e, size_t n);
int shape_builder_add_group(ShapeBuilder *b, const char *dir, const SysfsEntry *e, size_t n);

const Attr *attr_set_find(const AttrSet *s, const char *member);
const Group *shape_find_group(const Shape *s, const char *interface);
