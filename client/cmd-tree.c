/* SPDX-License-Identifier: LGPL-2.1-or-later */

/*
 * tree: the kobject hierarchy as LWN's "Examining a kobject hierarchy"
 * draws it: each kobject under its parent, with its ktype, its kset and,
 * for disks, the "device" link into /sys/devices.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <blkmodel/names.h>

#include "blkmodelctl.h"
#include "bus-error.h"
#include "bus-model.h"
#include "model.h"
#include "output.h"

static bool tree_filter(const char *iface, const char *name, void *userdata)
{
        if (strcmp(iface, BLKMODEL_IFACE_KOBJECT) == 0)
                return strcmp(name, BLKMODEL_PROP_NAME) == 0 || strcmp(name, BLKMODEL_PROP_KTYPE) == 0 ||
                       strcmp(name, BLKMODEL_PROP_KSET) == 0 || strcmp(name, BLKMODEL_PROP_PARENT) == 0 ||
                       strcmp(name, BLKMODEL_PROP_DEVPATH) == 0;
        if (strcmp(iface, BLKMODEL_IFACE_DISK) == 0)
                return strcmp(name, BLKMODEL_PROP_DEVICE) == 0;
        return false;
}

typedef struct TreeContext {
        Ctl *ctl;
        json_object *model;
        json_object *children; /* parent path → [child path] */
        Table *table;
        TreePrefix prefix;
} TreeContext;

static int tree_index(TreeContext *tc)
{
        tc->children = json_object_new_object();
        if (!tc->children)
                return -ENOMEM;

        json_object_object_foreach(tc->model, path, obj) {
                const char *parent = model_string(obj, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_PARENT);
                json_object *list = NULL, *s;

                if (!model_has_iface(obj, BLKMODEL_IFACE_KOBJECT))
                        continue;
                if (!parent || !parent[0])
                        parent = "/";

                if (!json_object_object_get_ex(tc->children, parent, &list)) {
                        list = json_object_new_array();
                        if (!list || json_object_object_add(tc->children, parent, list) < 0) {
                                json_object_put(list);
                                return -ENOMEM;
                        }
                }
                s = json_object_new_string(path);
                if (!s || json_object_array_add(list, s) < 0) {
                        json_object_put(s);
                        return -ENOMEM;
                }
        }
        return 0;
}

/* The sorted children of path; the strings belong to the index. */
static int tree_children(TreeContext *tc, const char *path, const char ***ret, size_t *ret_n)
{
        json_object *list = NULL;
        const char **c;
        size_t n;

        if (!json_object_object_get_ex(tc->children, path, &list)) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        n = json_object_array_length(list);
        c = calloc(n + 1, sizeof(char *));
        if (!c)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                c[i] = json_object_get_string(json_object_array_get_idx(list, i));
        model_sort_paths(tc->model, c, n);
        *ret = c;
        *ret_n = n;
        return 0;
}

static const char *tree_kset_name(TreeContext *tc, json_object *obj)
{
        const char *kset = model_string(obj, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_KSET);

        if (!kset || strcmp(kset, "/") == 0)
                return NULL;
        return model_name(tc->model, kset);
}

/* The devpath the disk's "device" link points to, NULL when virtual. */
static const char *tree_device_link(TreeContext *tc, json_object *obj)
{
        const char *dev = model_string(obj, BLKMODEL_IFACE_DISK, BLKMODEL_PROP_DEVICE);
        const char *devpath;

        if (!dev || strcmp(dev, "/") == 0)
                return NULL;
        devpath = model_string(model_object(tc->model, dev), BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_DEVPATH);
        return devpath ? devpath : dev;
}

static int tree_node(TreeContext *tc, const char *path, json_object *jparent, bool last, bool root,
                     unsigned depth)
{
        json_object *obj = model_object(tc->model, path);
        const char *name = model_name(tc->model, path);
        const char *ktype = model_string(obj, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_KTYPE);
        const char *kset = tree_kset_name(tc, obj);
        const char *link = tree_device_link(tc, obj);
        const char **children = NULL;
        char *prefix = NULL, *label = NULL, *linktext = NULL;
        size_t n_children = 0, saved;
        int r;

        /* A parent loop in a confused model must not recurse forever. */
        if (depth > 256)
                return 0;

        r = tree_children(tc, path, &children, &n_children);
        if (r < 0)
                return r;
        r = -ENOMEM;

        if (tc->ctl->json) {
                json_object *j = json_object_new_object();

                if (!j)
                        goto finish;
                if (json_object_is_type(jparent, json_type_array))
                        r = json_object_array_add(jparent, j);
                else
                        r = json_object_object_add(jparent, "tree", j);
                if (r < 0) {
                        json_object_put(j);
                        r = -ENOMEM;
                        goto finish;
                }
                r = -ENOMEM;
                json_object_object_add(j, "name", json_object_new_string(name));
                json_object_object_add(j, "object", json_object_new_string(path));
                json_object_object_add(j, "ktype", ktype ? json_object_new_string(ktype) : NULL);
                json_object_object_add(j, "kset", kset ? json_object_new_string(kset) : NULL);
                if (model_has_iface(obj, BLKMODEL_IFACE_DISK))
                        json_object_object_add(j, "device", link ? json_object_new_string(link) : NULL);
                if (n_children > 0) {
                        json_object *arr = json_object_new_array();

                        if (!arr)
                                goto finish;
                        json_object_object_add(j, "children", arr);
                        for (size_t i = 0; i < n_children; i++) {
                                r = tree_node(tc, children[i], arr, i + 1 == n_children, false, depth + 1);
                                if (r < 0)
                                        goto finish;
                        }
                }
                r = 0;
                goto finish;
        }

        prefix = tree_prefix_line(&tc->prefix, TREE_STYLE_TREE, tc->ctl->utf8, last, root);
        if (!prefix || asprintf(&label, "%s%s", prefix, name) < 0) {
                label = NULL;
                goto finish;
        }
        if (link && asprintf(&linktext, "%s %s", tc->ctl->utf8 ? "\u2192" : "->", link) < 0) {
                linktext = NULL;
                goto finish;
        }
        r = table_add_row(tc->table, (const char *const[]){label, ktype ? ktype : "", kset ? kset : "",
                                                           linktext ? linktext : ""});
        if (r < 0)
                goto finish;

        saved = tc->prefix.len;
        r = tree_prefix_push(&tc->prefix, TREE_STYLE_TREE, tc->ctl->utf8, last, root);
        for (size_t i = 0; r >= 0 && i < n_children; i++)
                r = tree_node(tc, children[i], NULL, i + 1 == n_children, false, depth + 1);
        tree_prefix_pop(&tc->prefix, saved);

finish:
        free(children);
        free(prefix);
        free(label);
        free(linktext);
        return r;
}

int cmd_tree(Ctl *ctl, char **args, int n_args)
{
        static const TableColumn columns[] = {
                        {"NAME", ALIGN_LEFT},
                        {"KTYPE", ALIGN_LEFT},
                        {"KSET", ALIGN_LEFT},
                        {"DEVICE", ALIGN_LEFT},
        };
        sd_bus_error error = SD_BUS_ERROR_NULL;
        TreeContext tc = {.ctl = ctl};
        json_object *jroot = NULL, *jlist = NULL;
        const char **roots = NULL;
        size_t n_roots = 0;
        char *start = NULL;
        sd_bus *bus = NULL;
        int r;

        r = ctl_bus(ctl, &bus);
        if (r != EXIT_OK)
                return r;

        if (n_args > 0) {
                r = ctl_resolve(ctl, args[0], &bus, &start);
                if (r != EXIT_OK)
                        goto finish;
                /* The manager is no kobject: below it is the whole model. */
                if (strcmp(start, BLKMODEL_ROOT_PATH) == 0) {
                        free(start);
                        start = NULL;
                }
        }

        r = bus_get_managed_objects(bus, tree_filter, NULL, &tc.model, &error);
        if (r < 0) {
                r = bus_report_error(&error, r, "Failed to get the model");
                goto finish;
        }
        if (tree_index(&tc) < 0)
                goto oom;

        if (start) {
                if (!model_object(tc.model, start)) {
                        /* Resolved, then removed before we looked. */
                        r = ctl_fail("No such object: %s (%s)", args[0], BLKMODEL_ERROR_NO_SUCH_OBJECT);
                        goto finish;
                }
                roots = calloc(2, sizeof(char *));
                if (!roots)
                        goto oom;
                roots[0] = start;
                n_roots = 1;
        } else if (tree_children(&tc, "/", &roots, &n_roots) < 0)
                goto oom;

        if (ctl->json) {
                jroot = json_object_new_object();
                jlist = json_object_new_array();
                if (!jroot || !jlist) {
                        json_object_put(jlist);
                        goto oom;
                }
                json_object_object_add(jroot, "kobjects", jlist);
        } else {
                tc.table = table_new(columns, sizeof(columns) / sizeof(columns[0]));
                if (!tc.table)
                        goto oom;
        }

        for (size_t i = 0; i < n_roots; i++)
                if (tree_node(&tc, roots[i], jlist, true, true, 0) < 0)
                        goto oom;

        if (ctl->json)
                output_json(jroot, true);
        else
                table_print(tc.table, stdout, ctl->legend, ctl->colour);
        r = EXIT_OK;
        goto finish;

oom:
        r = ctl_fail("Out of memory");
finish:
        free(roots);
        free(start);
        json_object_put(jroot);
        json_object_put(tc.children);
        json_object_put(tc.model);
        table_free(tc.table);
        tree_prefix_done(&tc.prefix);
        sd_bus_error_free(&error);
        return r;
}
