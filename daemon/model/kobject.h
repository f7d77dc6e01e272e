/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/hashmap.h"
#include "model/ktype.h"
#include "model/shape.h"

/*
 * The model: kobjects in the kernel's own terms (lib/kobject.c).  Each has
 * a name, a parent, a kset and a ktype, and is reference counted: a child
 * holds its parent, a disk holds the hardware device it sits on.  The
 * model does no I/O and sends nothing; it carries the names its objects
 * are published under, and tells one observer (the live layer) what comes
 * and goes.
 */

typedef struct Kobject Kobject;
typedef struct Model Model;
typedef struct SortedList SortedList;

struct Kobject {
        unsigned n_ref;
        bool linked;
        bool unlinking;                 /* model_unlink() is taking it and its children away */
        uint16_t n_users;               /* a Device: the linked disks whose device it is */
        uint32_t n_children, n_members; /* beside n_ref: 8 bytes less per object than two size_t apart */
        const Ktype *ktype;
        char *name;    /* as in sysfs: "cciss!c0d0" */
        char *devpath; /* below the sysfs root: "/devices/…/block/sda" */
        char *path;    /* the object path it is published under */
        /* (the three strings follow the struct, in its allocation) */
        Kobject *parent;
        Kobject *kset;
        Kobject *device; /* disks: the hardware device of the `device` link, or NULL */
        Shape *shape;

        /* The observer's own record of the object (the live layer's change record): set
         * and freed by the observer only, at the latest in its removed(); a mark of its own
         * (the live layer's: the values a reply last found equal to that record); and when it
         * last changed. */
        void *observer_data;
        uint64_t observer_mark;
        /* The observer's count of changed records when this one's last changed (0: not since the
         * start): what was read of it before that may be older than its record. */
        uint64_t observer_changed;

        /* The tree, for children lookups and introspection. */
        Kobject *first_child, *next_sibling, *prev_sibling;
        /* Kset membership. */
        Kobject *first_member, *next_member, *prev_member;
};

typedef struct ModelObserver {
        /* Linked: in the indexes and the tree.  Its children may not be there yet. */
        void (*added)(Model *m, Kobject *k, void *userdata);
        /* About to be unlinked; its children are gone already. */
        void (*removed)(Model *m, Kobject *k, void *userdata);
} ModelObserver;

struct Model {
        Kobject *block_kset;
        Kobject *devices_kset;
        ShapeRegistry shapes;
        Hashmap by_path;
        Hashmap by_devpath;
        Hashmap by_name;       /* disks and partitions by kernel name */
        size_t n_objects;      /* linked kobjects */
        uint64_t tree_changes; /* how many times an object was linked or unlinked: what was derived
                                * from the tree holds while it is the same */
        const ModelObserver *observer;
        void *observer_data;
        /* model/order.c: kset_members_sorted()'s and model_children_sorted()'s answers, kept up to date
         * as members and children come and go (one per owner), and the snapshots readers hold. */
        struct SortedList {
                const Kobject *owner; /* NULL: a free slot */
                Kobject **items;
                size_t n, n_allocated;
                unsigned changes; /* items that came or went since the last reading */
        } sorted_members[2], sorted_children[2];
        struct MembersSnapshot *members_snapshots;
};

int model_new(Model **ret);
Model *model_free(Model *m);
void model_set_observer(Model *m, const ModelObserver *o, void *userdata);

/* A new, unlinked kobject with one reference (the caller's).  -EILSEQ for a name that is not
 * UTF-8 (no D-Bus string can carry it). */
int kobject_new(Model *m, const Ktype *t, const char *name, Kobject *parent, Kobject *kset,
                const char *devpath, Kobject **ret);
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

/* Sorted by name; the caller frees the array (not the objects).  only: a kind, or _KTYPE_MAX for all. */
int kobject_children_sorted(const Kobject *k, KtypeId only, Kobject ***ret, size_t *ret_n);
/* The same, in the order cmp (a qsort() comparison of Kobject pointers) gives. */
int kobject_children_sorted_by(const Kobject *k, KtypeId only, int (*cmp)(const void *, const void *),
                               Kobject ***ret, size_t *ret_n);
/* For qsort() of Kobject pointers: by name. */
int kobject_name_cmp(const void *a, const void *b);
