/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"
#include "shape.h"
#include "sysfs.h"

/*
 * The model: kobjects in the kernel's own terms (lib/kobject.c).  Each has
 * a name, a parent, a kset and a ktype, and is reference counted: a child
 * holds its parent, a disk holds the hardware device it sits on.  The
 * model knows nothing of D-Bus; the publisher watches it through a
 * ModelObserver.
 */

typedef struct Kobject Kobject;
typedef struct Model Model;

typedef enum KtypeId {
        KTYPE_KSET,
        KTYPE_DISK,
        KTYPE_PARTITION,
        KTYPE_QUEUE,
        KTYPE_ELEVATOR,
        KTYPE_DEVICE,
        _KTYPE_MAX,
} KtypeId;

/* What a kind of kobject is: data, not code paths (like struct kobj_type). */
typedef struct Ktype {
        KtypeId id;
        const char *name; /* the Ktype property */
        /* The model's typed property names on the kind's interface; attribute files may not shadow them. */
        const char *const *typed_names;
        /* Kept alive by the objects below it rather than by the model: a Device is
         * published exactly as long as some disk sits on it. */
        bool held_by_dependents;
} Ktype;

extern const Ktype ktype_kset, ktype_disk, ktype_partition, ktype_queue, ktype_elevator, ktype_device;
const Ktype *ktype_from_id(KtypeId id);

struct Kobject {
        unsigned n_ref;
        const Ktype *ktype;
        char *name;    /* as in sysfs: "cciss!c0d0" */
        char *devpath; /* below the sysfs root: "/devices/…/block/sda" */
        char *path;    /* the D-Bus object path */
        Kobject *parent;
        Kobject *kset;
        Kobject *device; /* disks: the hardware device of the `device` link, or NULL */
        Shape *shape;
        bool linked;
        bool unlinking; /* model_unlink() is taking it and its children away */

        /* Fingerprints of the values last seen (bus-object.c), to tell which properties a change
         * event changed; NULL until first read.  8 bytes per attribute, not the values. */
        uint64_t *value_hashes;
        size_t n_value_hashes;
        /* What its Uevent property takes in a message, as of the last reading; 0 if never read. */
        uint16_t uevent_bytes;

        /* The tree, for children lookups and introspection. */
        Kobject *first_child, *next_sibling, *prev_sibling;
        size_t n_children;
        /* Kset membership. */
        Kobject *first_member, *next_member, *prev_member;
        size_t n_members;
};

typedef struct ModelObserver {
        void (*added)(Model *m, Kobject *k, void *userdata);
        void (*removed)(Model *m, Kobject *k, void *userdata);
} ModelObserver;

struct Model {
        Sysfs *sysfs;
        ShapeRegistry shapes;
        Kobject *block_kset;
        Kobject *devices_kset;
        Hashmap by_path;
        Hashmap by_devpath;
        Hashmap by_name; /* disks and partitions by kernel name */
        size_t n_objects; /* linked kobjects */
        const ModelObserver *observer;
        void *observer_data;
};

int model_new(Sysfs *sysfs, Model **ret);
Model *model_free(Model *m);
void model_set_observer(Model *m, const ModelObserver *o, void *userdata);

/* A new, unlinked kobject with one reference (the caller's). */
int kobject_new(Model *m, const Ktype *t, const char *name, Kobject *parent, Kobject *kset, const char *devpath,
                Kobject **ret);
Kobject *kobject_ref(Kobject *k);
/* kobject_put(): the last reference releases it, unlinking it first if needed. */
void kobject_unref(Model *m, Kobject *k);

/* Makes the object part of the model (indexes, tree, kset) and tells the observer.
 * Unless its ktype is held by dependents, the model takes a reference. -EEXIST for a taken path. */
int model_link(Model *m, Kobject *k);
/* Removes the object and everything below it, children first, and tells the observer. */
void model_unlink(Model *m, Kobject *k);

Kobject *model_find_path(const Model *m, const char *path);
Kobject *model_find_devpath(const Model *m, const char *devpath);
Kobject *model_find_name(const Model *m, const char *name);
Kobject *kobject_find_child(const Kobject *k, const char *name);
/* The first child of a kind, or NULL. */
Kobject *kobject_find_child_type(const Kobject *k, KtypeId id);

/* Sorted by name; the caller frees the array (not the objects). */
int kobject_children_sorted(const Kobject *k, KtypeId only, Kobject ***ret, size_t *ret_n);
int kset_members_sorted(const Kobject *kset, Kobject ***ret, size_t *ret_n);
