/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "list-columns.h"

/* How each column of list-columns.c gets its value from a row: lsblk's rules, from the model. */

/* Where a one-attribute column reads its attribute (ListColumn.where). */
enum {
        FROM_SELF,   /* the device's own directory */
        FROM_QUEUE,  /* the disk's queue/ */
        FROM_DEVICE, /* the disk's device/, for whole disks only */
};

int get_attr(const ListRow *row, const ListColumn *c, Cell *ret);
int get_attr_or_zero(const ListRow *row, const ListColumn *c, Cell *ret);
int get_discard_attr(const ListRow *row, const ListColumn *c, Cell *ret);
int get_kname(const ListRow *row, const ListColumn *c, Cell *ret);
int get_name(const ListRow *row, const ListColumn *c, Cell *ret);
int get_path(const ListRow *row, const ListColumn *c, Cell *ret);
int get_majmin(const ListRow *row, const ListColumn *c, Cell *ret);
int get_size(const ListRow *row, const ListColumn *c, Cell *ret);
int get_ro(const ListRow *row, const ListColumn *c, Cell *ret);
int get_rm(const ListRow *row, const ListColumn *c, Cell *ret);
int get_hotplug(const ListRow *row, const ListColumn *c, Cell *ret);
int get_type(const ListRow *row, const ListColumn *c, Cell *ret);
int get_sched(const ListRow *row, const ListColumn *c, Cell *ret);
int get_pkname(const ListRow *row, const ListColumn *c, Cell *ret);
int get_hctl(const ListRow *row, const ListColumn *c, Cell *ret);
int get_tran(const ListRow *row, const ListColumn *c, Cell *ret);
int get_subsystems(const ListRow *row, const ListColumn *c, Cell *ret);
int get_state(const ListRow *row, const ListColumn *c, Cell *ret);
int get_start(const ListRow *row, const ListColumn *c, Cell *ret);
int get_zone_sz(const ListRow *row, const ListColumn *c, Cell *ret);
int get_object(const ListRow *row, const ListColumn *c, Cell *ret);
