/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "base/hashmap.h"
#include "common/interfaces.h"

/*
 * Shapes: what attribute files an object's directory has.  Thousands of
 * disks share a handful of shapes, so a shape is interned and shared, and
 * an object costs one pointer for all its attribute names (SPEC §9).
 * Values are never stored: they are read from sysfs when asked for.
 */

typedef enum AttrFlags {
        ATTR_VOLATILE = 1 << 0,   /* changes without an event: no PropertiesChanged */
        ATTR_WRITABLE = 1 << 1,   /* has a write bit: the property is read-write */
        ATTR_WRITE_ONLY = 1 << 2, /* no read bit (remove, rescan): always "", nothing to watch */
        /* Others may not read it (0400, 0600), or the kernel gives them less (a PCI device's config):
         * served to root and the daemon's own user only, never broadcast. */
        ATTR_PRIVILEGED = 1 << 3,
} AttrFlags;

typedef struct Attr {
        char *file;   /* the sysfs file name */
        char *member; /* its D-Bus property name */
        unsigned flags;
        unsigned mode_flags; /* those of flags the file's mode gave (attr_flags_of_mode()) */
} Attr;

typedef struct AttrSet {
        unsigned n_ref;
        char *key; /* interning key: the file names joined by '/' */
        size_t n_attrs;
        Attr *attrs; /* sorted by member */
} AttrSet;

typedef struct Group {
        char *dir;       /* "power" */
        char *interface; /* "org.blkmodel1.Group.power" */
        AttrSet *attrs;
} Group;

typedef struct Shape {
        unsigned n_ref;
        char *key;
        char *names_key; /* the ShapeBuilder's names that first made it (ShapeRegistry.by_names) */
        AttrSet *attrs;
        size_t n_groups;
        Group *groups; /* sorted by interface */
} Shape;

typedef struct ShapeRegistry {
        Hashmap attr_sets;
        Hashmap shapes;
        /* The same shapes by the names a directory listed: most objects repeat a listing seen before,
         * and then need neither their attribute sets built nor their names copied. */
        Hashmap by_names;
        /* Every shape_get() reads the modes (the start is over: the warm-up that checks them for
         * the objects shaped by their names has begun, and an object added later is never checked). */
        bool exact;
} ShapeRegistry;

typedef struct BuilderGroup {
        const char *dir;
        const char **files;
        size_t n_files, n_allocated;
} BuilderGroup;

/* What a directory scan found, for shape_get().  The names are borrowed: they must outlive the
 * builder. */
typedef struct ShapeBuilder {
        const char **files; /* the kind's attribute files */
        size_t n_files, n_files_allocated;
        BuilderGroup *groups;
        size_t n_groups, n_groups_allocated;
} ShapeBuilder;

/*
 * The permission bits of an attribute file ("size", or "power/control" in a group), or negative
 * errno.  The modes are part of an attribute set's identity: objects whose files have the same
 * names but other modes (a chmod, a driver's is_visible()) have sets of their own.  A listing
 * gives names, not modes, and a stat of every file would cost several times the listing: an
 * object whose names make a shape seen before takes that shape without asking (shape_get()), and
 * the warm-up and every re-listing check its modes (exact).  Out of descriptors or memory (-EMFILE,
 * -ENFILE, -ENOMEM, -ENOBUFS) fails shape_get() with that errno: it says nothing of the file.
 */
typedef int (*ShapeModeReader)(const char *relpath, void *userdata);

/* ATTR_WRITABLE, ATTR_WRITE_ONLY and ATTR_PRIVILEGED as a file's permission bits give them; 0 for
 * a negative errno. */
unsigned attr_flags_of_mode(int mode);

void shape_registry_init(ShapeRegistry *r);
void shape_registry_deinit(ShapeRegistry *r);

/* kind: the object kind ("disk"); reserved: the typed properties its interface has already, which no
 * attribute may shadow; what: the object, for log lines; exact: read every file's mode, rather than
 * take the shape first made of the same names.  Returns the interned shape with a new reference;
 * -ENOMEM, or the error of a mode reader out of descriptors or memory.  Logs each name it leaves out. */
int shape_get(ShapeRegistry *r, const ShapeBuilder *b, const char *kind, const PropertyInfo *reserved,
              ShapeModeReader mode_of, void *userdata, bool exact, const char *what, Shape **ret);
Shape *shape_ref(Shape *s);
void shape_unref(ShapeRegistry *r, Shape *s);

void shape_builder_done(ShapeBuilder *b);
int shape_builder_add_file(ShapeBuilder *b, const char *name);
/* Starts a group; the files added with shape_builder_add_group_file() until the next one are its own. */
int shape_builder_add_group(ShapeBuilder *b, const char *dir);
int shape_builder_add_group_file(ShapeBuilder *b, const char *name);

const Attr *attr_set_find(const AttrSet *s, const char *member);
/* Has any attribute of s (which may be NULL) this flag? */
bool attr_set_has_flag(const AttrSet *s, unsigned flag);
const Group *shape_find_group(const Shape *s, const char *interface);
