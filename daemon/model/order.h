/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "model/kobject.h"

/*
 * A kset's members, and an object's children, in name order: for the Kset interface's Members and
 * Introspect's child nodes.  The block kset has every disk and partition: 50,000 members at 10,000
 * disks, where sorting them for every GetAll was a 26 ms turn, and 10,000 children.  So the order is
 * kept, and kept up to date as they come and go, and a reader that takes several loop turns holds a
 * snapshot of the members instead.
 */

/* The members sorted by name: the model's array, valid until a member comes or goes. */
int kset_members_sorted(Model *m, const Kobject *kset, Kobject *const **ret, size_t *ret_n);

/*
 * The members as they are now, sorted by name, valid across loop turns: one that leaves the kset
 * meanwhile reads as NULL.  They are not referenced: at 10,000 disks, referencing 50,000 objects no
 * one had touched for a while took 10 ms in one turn.  Free every snapshot before the model.
 */
typedef struct MembersSnapshot MembersSnapshot;
int kset_members_snapshot(Model *m, const Kobject *kset, MembersSnapshot **ret);
size_t members_snapshot_size(const MembersSnapshot *s);
/* The i-th member, i < members_snapshot_size(s), or NULL if it has left since. */
Kobject *members_snapshot_get(MembersSnapshot *s, size_t i);
MembersSnapshot *members_snapshot_free(Model *m, MembersSnapshot *s);

/* k's children sorted by name: the model's array, valid until a child comes or goes.  For objects with
 * many children; others sort their few with kobject_children_sorted(). */
int model_children_sorted(Model *m, const Kobject *k, Kobject *const **ret, size_t *ret_n);
/* In that order, k's first child whose name comes after `after` (NULL: the first child), or NULL if none:
 * a walk by name that holds no child between its steps. */
int model_child_after(Model *m, const Kobject *k, const char *after, Kobject **ret);

/* For model_link() and model_unlink(): k came (added), or is leaving. */
void kset_members_changed(Model *m, const Kobject *kset, Kobject *k, bool added);
void kobject_children_changed(Model *m, const Kobject *parent, Kobject *k, bool added);
/* At model_free(). */
void model_order_done(Model *m);
