/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "output.h"

/*
 * The columns of list: lsblk's names, meanings and JSON keys (the name in lower case) for every
 * column that a kobject attribute can give, and OBJECT, the D-Bus object.  A value is computed from
 * the model as lsblk computes it from sysfs: partitions take the queue, removable flag and hardware
 * of their disk, an attribute that is not there is an empty cell (null in JSON).
 */

typedef enum ColumnType {
        COLUMN_STRING,
        COLUMN_NUMBER,
        COLUMN_BOOL,
        COLUMN_SIZE, /* bytes: human (1.5G) unless --bytes; in JSON a string, or a number with --bytes */
} ColumnType;

/* What a row is computed from: one block device of the model, and what it sits in. */
typedef struct ListRow {
        json_object *model;
        const char *path;
        json_object *obj;
        bool partition;
        json_object *disk;   /* the whole disk: obj itself for a disk */
        json_object *queue;  /* the disk's request queue, or NULL */
        json_object *device; /* the disk's Device object, NULL when virtual */
        const char *parent;  /* the device above it in the tree, NULL at the top */
} ListRow;

typedef enum CellKind {
        CELL_NONE,
        CELL_STRING,
        CELL_NUMBER,
        CELL_BOOL,
} CellKind;

typedef struct Cell {
        CellKind kind;
        char *s; /* owned */
        uint64_t u;
        bool b;
} Cell;

typedef struct ListColumn {
        const char *name;
        ColumnType type;
        Align align;
        size_t width_hint; /* TableColumn.width_hint */
        const char *help;
        int (*get)(const ListRow *row, const struct ListColumn *c, Cell *ret);
        /* For columns that are one attribute: where it is, and which. */
        int where;
        const char *attr;
} ListColumn;

extern const ListColumn list_columns[];
extern const size_t list_n_columns;
/* "NAME,MAJ:MIN,RM,SIZE,RO,TYPE,SCHED" */
extern const char list_default_columns[];

/* By name, case-insensitively (lsblk takes -o size too); NULL if there is none. */
const ListColumn *list_column_find(const char *name, size_t len);
/* For a column of lsblk's that is not a kobject attribute: where lsblk takes it from; else NULL. */
const char *list_column_not_offered(const char *name, size_t len);

/* Fills row for the device at path; its parent in the tree, if any. */
void list_row_init(ListRow *row, json_object *model, const char *path, const char *parent);
uint64_t list_row_size(const ListRow *row);

/* The cell as text ("" when empty) or as JSON (NULL for null). */
int list_cell_text(const ListColumn *c, const ListRow *row, bool bytes, char **ret);
int list_cell_json(const ListColumn *c, const ListRow *row, bool bytes, json_object **ret);

/* The properties the columns read: the model can be large. */
bool list_filter(const char *iface, const char *name, void *userdata);
