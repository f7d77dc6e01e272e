/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "tree-draw.h"

#include "common/util.h"

enum {
        GLYPH_BRANCH,
        GLYPH_LAST_BRANCH,
        GLYPH_VERTICAL,
        GLYPH_BLANK,
};

/* [style][utf8] */
static const char *const glyphs[2][2][4] = {
                [TREE_STYLE_LSBLK][0] = {"|-", "`-", "| ", "  "},
                [TREE_STYLE_LSBLK][1] = {"\u251c\u2500", "\u2514\u2500", "\u2502 ", "  "},
                [TREE_STYLE_TREE][0] = {"|-- ", "`-- ", "|   ", "    "},
                [TREE_STYLE_TREE][1] = {"\u251c\u2500\u2500 ", "\u2514\u2500\u2500 ", "\u2502   ", "    "},
};

struct TreeDraw {
        const TreeDrawOps *ops;
        void *userdata;
        bool json;
        bool utf8;
        Table *table;

        /* The indentation the ancestors leave: a vertical line, or blanks below a last child. */
        char *indent;
        size_t indent_len;
        size_t indent_allocated;

        /* Where the node being drawn stands among its siblings, and below what. */
        bool last;
        bool root;
        const char *parent;
};

static void tree_draw_done(TreeDraw *d)
{
        d->table = table_free(d->table);
        d->indent = mfree(d->indent);
}

/* A root has no branches; a last child takes the glyph for last ones. */
static const char *tree_draw_glyph(const TreeDraw *d, bool last, bool root, int glyph, int glyph_if_last)
{
        if (root)
                return "";
        return glyphs[d->ops->style][d->utf8][last ? glyph_if_last : glyph];
}

const char *tree_draw_parent(const TreeDraw *d)
{
        return d->parent;
}

int tree_draw_row(TreeDraw *d, const char *const *cells)
{
        _cleanup_(freep) const char **row = NULL;
        _cleanup_(freep) char *label = NULL;
        const char *branch = tree_draw_glyph(d, d->last, d->root, GLYPH_BRANCH, GLYPH_LAST_BRANCH);
        int t = d->ops->tree_column;

        row = malloc(d->ops->n_columns * sizeof(char *));
        if (!row)
                return -ENOMEM;
        memcpy(row, cells, d->ops->n_columns * sizeof(char *));
        if (t >= 0 && (size_t) t < d->ops->n_columns) {
                if (asprintf(&label, "%.*s%s%s", (int) d->indent_len, strempty(d->indent), branch,
                             cells[t]) < 0)
                        return -ENOMEM;
                row[t] = label;
        }
        return table_add_row(d->table, row);
}

/* Indents the children of a node; the caller goes back to the length it saw before. */
static int tree_draw_indent(TreeDraw *d, bool last, bool root)
{
        const char *g = tree_draw_glyph(d, last, root, GLYPH_VERTICAL, GLYPH_BLANK);
        size_t n = strlen(g);

        if (GREEDY_REALLOC(d->indent, d->indent_allocated, d->indent_len + n + 1) < 0)
                return -ENOMEM;
        memcpy(d->indent + d->indent_len, g, n);
        d->indent_len += n;
        d->indent[d->indent_len] = '\0';
        return 0;
}

static int tree_draw_node(TreeDraw *d, const char *path, const char *parent, json_object *jparent, bool last,
                          bool root, unsigned depth)
{
        _cleanup_(json_object_putp) json_object *j = NULL;
        _cleanup_(freep) const char **children = NULL;
        size_t n_children = 0, saved = d->indent_len;
        json_object *jchildren = NULL;
        int r;

        if (depth > d->ops->max_depth)
                return 0;

        if (d->json) {
                j = json_object_new_object();
                if (!j)
                        return -ENOMEM;
        }
        d->last = last;
        d->root = root;
        d->parent = parent;
        r = d->ops->node(d, path, j, d->userdata);
        if (r != 0)
                return r < 0 ? r : 0;

        r = d->ops->children(path, &children, &n_children, d->userdata);
        if (r < 0)
                return r;

        if (j) {
                if (n_children > 0 || d->ops->json_children_always) {
                        jchildren = json_add_array(j, "children");
                        if (!jchildren)
                                return -ENOMEM;
                }
                if (json_object_array_add(jparent, j) < 0)
                        return -ENOMEM;
                TAKE_PTR(j);
        }

        r = tree_draw_indent(d, last, root);
        for (size_t i = 0; r >= 0 && i < n_children; i++)
                r = tree_draw_node(d, children[i], path, jchildren, i + 1 == n_children, false, depth + 1);
        d->indent_len = saved;
        if (d->indent)
                d->indent[saved] = '\0';
        return r;
}

int tree_draw(const TreeDrawOps *ops, const Ctl *ctl, const char *const *roots, size_t n_roots,
              void *userdata)
{
        _cleanup_(tree_draw_done) TreeDraw d = {
                        .ops = ops,
                        .userdata = userdata,
                        .json = ctl->json,
                        .utf8 = ctl->utf8,
        };
        _cleanup_(json_object_putp) json_object *jroot = NULL;
        json_object *jnodes = NULL;
        int r;

        if (d.json) {
                jroot = json_object_new_object();
                jnodes = jroot ? json_add_array(jroot, ops->json_key) : NULL;
                if (!jnodes)
                        return -ENOMEM;
        } else {
                d.table = table_new(ops->columns, ops->n_columns);
                if (!d.table)
                        return -ENOMEM;
        }

        for (size_t i = 0; i < n_roots; i++) {
                r = tree_draw_node(&d, roots[i], NULL, jnodes, true, true, 0);
                if (r < 0)
                        return r;
        }

        if (d.json)
                output_json(jroot, true);
        else
                table_print(d.table, stdout, ctl->legend, ctl->colour);
        return 0;
}
