/* SPDX-License-Identifier: LGPL-2.1-or-later */

/*
 * tree: the kobject hierarchy as LWN's "Examining a kobject hierarchy"
 * draws it: each kobject under its parent, with its ktype, its kset and,
 * for disks, the "device" link into /sys/devices.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blkmodel/names.h>

#include "blkmodelctl.h"
#include "bus-error.h"
#include "bus-model.h"
#include "json-util.h"
#include "model.h"
#include "output.h"
#include "tree-draw.h"

#include "common/util.h"

static bool tree_filter(const char *iface, const char *name, void *userdata)
{
        if (streq(iface, BLKMODEL_IFACE_KOBJECT))
                return streq(name, BLKMODEL_PROP_NAME) || streq(name, BLKMODEL_PROP_KTYPE) ||
                       streq(name, BLKMODEL_PROP_KSET) || streq(name, BLKMODEL_PROP_PARENT) ||
                       streq(name, BLKMODEL_PROP_DEVPATH);
        if (streq(iface, BLKMODEL_IFACE_DISK))
                return streq(name, BLKMODEL_PROP_DEVICE);
        return false;
}

typedef struct TreeContext {
        Ctl *ctl;
        json_object *model;
        json_object *children; /* parent path → [child path] */
} TreeContext;

static void tree_context_done(TreeContext *tc)
{
        json_object_put(tc->model);
        tc->model = NULL;
        json_object_put(tc->children);
        tc->children = NULL;
}

static int tree_index(TreeContext *tc)
{
        tc->children = json_object_new_object();
        if (!tc->children)
                return -ENOMEM;

        json_object_object_foreach(tc->model, path, obj) {
                _cleanup_(json_object_putp) json_object *s = NULL;
                const char *parent = model_string(obj, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_PARENT);
                json_object *list;

                if (!model_has_iface(obj, BLKMODEL_IFACE_KOBJECT))
                        continue;
                if (isempty(parent))
                        parent = "/";

                if (!json_object_object_get_ex(tc->children, parent, &list)) {
                        list = json_add_array(tc->children, parent);
                        if (!list)
                                return -ENOMEM;
                }
                s = json_object_new_string(path);
                if (!s || json_object_array_add(list, s) < 0)
                        return -ENOMEM;
                TAKE_PTR(s);
        }
        return 0;
}

/* The sorted children of path; the strings belong to the index. */
static int tree_children(const char *path, const char ***ret_children, size_t *ret_n, void *userdata)
{
        TreeContext *tc = userdata;
        json_object *list;
        const char **c;
        size_t n;

        if (!json_object_object_get_ex(tc->children, path, &list)) {
                *ret_children = NULL;
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
        *ret_children = c;
        *ret_n = n;
        return 0;
}

static const char *tree_kset_name(TreeContext *tc, json_object *obj)
{
        const char *kset = model_string(obj, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_KSET);

        if (!kset || streq(kset, "/"))
                return NULL;
        return model_name(tc->model, kset);
}

/* The devpath the disk's "device" link points to, NULL when virtual. */
static const char *tree_device_link(TreeContext *tc, json_object *obj)
{
        const char *dev = model_string(obj, BLKMODEL_IFACE_DISK, BLKMODEL_PROP_DEVICE);
        const char *devpath;

        if (!dev || streq(dev, "/"))
                return NULL;
        devpath = model_string(model_object(tc->model, dev), BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_DEVPATH);
        return devpath ?: dev;
}

static int tree_node(TreeDraw *d, const char *path, json_object *j, void *userdata)
{
        _cleanup_(freep) char *linktext = NULL;
        TreeContext *tc = userdata;
        json_object *obj = model_object(tc->model, path);
        const char *name = model_name(tc->model, path);
        const char *ktype = model_string(obj, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_KTYPE);
        const char *kset = tree_kset_name(tc, obj);
        const char *link = tree_device_link(tc, obj);

        if (j) {
                json_object_object_add(j, "name", json_object_new_string(name));
                json_object_object_add(j, "object", json_object_new_string(path));
                json_object_object_add(j, "ktype", ktype ? json_object_new_string(ktype) : NULL);
                json_object_object_add(j, "kset", kset ? json_object_new_string(kset) : NULL);
                /* The same keys on every node: null where there is no device link. */
                json_object_object_add(j, "device", link ? json_object_new_string(link) : NULL);
                return 0;
        }

        if (link && asprintf(&linktext, "%s %s", tc->ctl->utf8 ? "\u2192" : "->", link) < 0)
                return -ENOMEM;
        return tree_draw_row(
                        d, (const char *const[]){name, strempty(ktype), strempty(kset), strempty(linktext)});
}

static const TableColumn tree_columns[] = {
                {"NAME", ALIGN_LEFT},
                {"KTYPE", ALIGN_LEFT},
                {"KSET", ALIGN_LEFT},
                {"DEVICE", ALIGN_LEFT},
};

static const TreeDrawOps tree_draw_ops = {
                .style = TREE_STYLE_TREE,
                /* A parent loop in a confused model. */
                .max_depth = 256,
                .columns = tree_columns,
                .n_columns = ELEMENTSOF(tree_columns),
                .json_key = "kobjects",
                .json_children_always = true,
                .children = tree_children,
                .node = tree_node,
};

/*
 * A subtree of block/ does not hold the Device objects its disks' links point to: ask each for its
 * DevPath, which is all the DEVICE column shows of it.
 */
static int tree_fetch_device_paths(TreeContext *tc, sd_bus *bus, sd_bus_error *error)
{
        _cleanup_(json_object_putp) json_object *found = json_object_new_object();
        int r;

        if (!found)
                return -ENOMEM;
        json_object_object_foreach(tc->model, path, obj) {
                _cleanup_(json_object_putp) json_object *devpath = NULL;
                const char *dev = model_string(obj, BLKMODEL_IFACE_DISK, BLKMODEL_PROP_DEVICE);
                json_object *o, *k;

                (void) path;
                if (!dev || streq(dev, "/") || model_object(tc->model, dev) || model_object(found, dev))
                        continue;
                r = bus_get_property(bus, dev, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_DEVPATH, &devpath,
                                     error);
                if (r < 0 && sd_bus_error_has_name(error, SD_BUS_ERROR_UNKNOWN_OBJECT)) {
                        sd_bus_error_free(error);
                        continue; /* gone meanwhile */
                }
                if (r < 0)
                        return r;
                o = json_add_object(found, dev);
                k = o ? json_add_object(o, BLKMODEL_IFACE_KOBJECT) : NULL;
                if (!k || json_object_object_add(k, BLKMODEL_PROP_DEVPATH, TAKE_PTR(devpath)) < 0)
                        return -ENOMEM;
        }
        /* Only looked up, never drawn: the drawing starts at the subtree asked for. */
        json_object_object_foreach(found, p, o) {
                if (json_object_object_add(tc->model, p, json_object_get(o)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int cmd_tree(Ctl *ctl, char **args, int n_args)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(tree_context_done) TreeContext tc = {.ctl = ctl};
        _cleanup_(freep) const char **roots = NULL;
        _cleanup_(freep) char *start = NULL;
        size_t n_roots = 0;
        sd_bus *bus = NULL;
        int r;

        r = ctl_bus(ctl, &bus);
        if (r != EXIT_OK)
                return r;

        /* The ksets by their names, as sysfs has /sys/block and /sys/devices: Resolve takes a bare name
         * for a block device. */
        if (n_args > 0 && (streq(args[0], "block") || streq(args[0], "devices"))) {
                if (asprintf(&start, "%s/%s", BLKMODEL_ROOT_PATH, args[0]) < 0)
                        return ctl_fail("Out of memory");
        } else if (n_args > 0) {
                r = ctl_resolve(ctl, args[0], &bus, &start);
                if (r != EXIT_OK)
                        return r;
                /* The manager is no kobject: below it is the whole model. */
                if (streq(start, BLKMODEL_ROOT_PATH) || streq(start, BLKMODEL_MANAGER_PATH))
                        start = mfree(start);
        }

        /* Only the subtree asked for: a kset or a disk answers GetManagedObjects for its own part. */
        r = bus_load_model(bus, start ?: BLKMODEL_ROOT_PATH, tree_filter, NULL, &tc.model, &error);
        if (r < 0 && start && sd_bus_error_has_name(&error, SD_BUS_ERROR_UNKNOWN_OBJECT))
                /* Resolved, then removed before we looked. */
                return ctl_fail("No such object: %s (%s)", args[0], BLKMODEL_ERROR_NO_SUCH_OBJECT);
        if (r < 0)
                return bus_report_error(ctl, &error, r, "Failed to get the model");
        if (start) {
                r = tree_fetch_device_paths(&tc, bus, &error);
                if (r < 0)
                        return bus_report_error(ctl, &error, r, "Failed to get the model");
        }
        if (tree_index(&tc) < 0)
                return ctl_fail("Out of memory");

        if (start) {
                if (!model_object(tc.model, start))
                        return ctl_fail("No such object: %s (%s)", args[0], BLKMODEL_ERROR_NO_SUCH_OBJECT);
                r = tree_draw(&tree_draw_ops, ctl, (const char *const[]){start}, 1, &tc);
        } else {
                r = tree_children("/", &roots, &n_roots, &tc);
                if (r >= 0)
                        r = tree_draw(&tree_draw_ops, ctl, roots, n_roots, &tc);
        }
        if (r < 0)
                return ctl_fail("Out of memory");
        return EXIT_OK;
}
