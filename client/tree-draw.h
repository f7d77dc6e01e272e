/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "blkmodelctl.h"
#include "output.h"

/*
 * Trees of model objects as list and tree draw them: a table whose first column carries the
 * branches before each name, lsblk's ("├─") or tree(1)'s ("├── "), or with --json nested objects,
 * each with its children in a "children" array.  The command says what a node's children are and
 * what it shows of a node; the walk, the branches and the JSON nesting are done here.
 */

typedef enum TreeStyle {
        TREE_STYLE_LSBLK,
        TREE_STYLE_TREE,
} TreeStyle;

typedef struct TreeDraw TreeDraw;

typedef struct TreeDrawOps {
        TreeStyle style;
        /* Deeper nodes are left out: a loop in a confused model must not recurse forever. */
        unsigned max_depth;
        const TableColumn *columns;
        size_t n_columns;
        /* The column whose cells get the branches before them (lsblk's NAME, wherever it stands); -1 for
         * none: a flat list. */
        int tree_column;
        /* With --json: the key of the array of top-level nodes. */
        const char *json_key;
        /* With --json: a "children" array on every node, empty or not (else only where there are some,
         * as lsblk does). */
        bool json_children_always;

        /* The children of path in the order to draw them; the caller frees the array, not the strings. */
        int (*children)(const char *path, const char ***ret_children, size_t *ret_n, void *userdata);
        /*
         * Draws path itself: its row with tree_draw_row(), or with --json its fields into j.  Returns
         * 0, > 0 to leave the node out with its children, or a negative errno.
         */
        int (*node)(TreeDraw *d, const char *path, json_object *j, void *userdata);
} TreeDrawOps;

/* The node above the one being drawn; NULL for a root. */
const char *tree_draw_parent(const TreeDraw *d);

/* Adds the node's row: the branches are drawn before cells[ops->tree_column]. */
int tree_draw_row(TreeDraw *d, const char *const *cells);

/* Draws the trees below roots and prints them; negative errno on failure, with nothing printed. */
int tree_draw(const TreeDrawOps *ops, const Ctl *ctl, const char *const *roots, size_t n_roots,
              void *userdata);
