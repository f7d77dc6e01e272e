/* SPDX-License-Identifier: LGPL-2.1-or-later */

/*
 * list: block devices as lsblk shows them.  Partitions and holders hang under the device they sit
 * on; the columns, their meanings, their JSON keys and the rule that hides empty devices are
 * lsblk's (list-columns.c), so that the two tools agree.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include <blkmodel/names.h>

#include "blkmodelctl.h"
#include "bus-error.h"
#include "bus-model.h"
#include "json-util.h"
#include "list-columns.h"
#include "model.h"
#include "output.h"
#include "tree-draw.h"

#include "common/util.h"

/* The loop driver's block major (linux/major.h). */
#define LOOP_MAJOR 7

typedef struct ListContext {
        Ctl *ctl;
        json_object *model;
        const ListColumn **columns;
        size_t n_columns;
        TableColumn *table_columns;
        char **json_keys;
} ListContext;

static void list_context_done(ListContext *lc)
{
        free(lc->columns);
        free(lc->table_columns);
        strv_free(lc->json_keys);
}

/* Appends the columns a comma-separated list names; -EINVAL with *ret_bad at the first unknown. */
static int list_add_columns(ListContext *lc, const char *list, const char **ret_bad, size_t *ret_bad_len)
{
        for (const char *p = list;;) {
                size_t n = strcspn(p, ",");
                const ListColumn *c = list_column_find(p, n);
                const ListColumn **a;

                if (!c) {
                        *ret_bad = p;
                        *ret_bad_len = n;
                        return -EINVAL;
                }
                a = reallocarray(lc->columns, lc->n_columns + 1, sizeof(*a));
                if (!a)
                        return -ENOMEM;
                lc->columns = a;
                lc->columns[lc->n_columns++] = c;
                if (p[n] == '\0')
                        return 0;
                p += n + 1;
        }
}

/* -o LIST, -o +LIST (the defaults and more, as lsblk takes it), -O; then the table's headings. */
static int list_pick_columns(ListContext *lc)
{
        const char *o = lc->ctl->columns, *bad = NULL, *elsewhere;
        size_t bad_len = 0, n_keys = 0;
        int r = 0;

        if (lc->ctl->all_columns) {
                for (size_t i = 0; i < list_n_columns && r >= 0; i++) {
                        const ListColumn **a = reallocarray(lc->columns, lc->n_columns + 1, sizeof(*a));

                        if (!a)
                                return ctl_fail("Out of memory");
                        lc->columns = a;
                        lc->columns[lc->n_columns++] = list_columns + i;
                }
        } else {
                if (!o || o[0] == '+')
                        r = list_add_columns(lc, list_default_columns, &bad, &bad_len);
                if (r >= 0 && o)
                        r = list_add_columns(lc, o[0] == '+' ? o + 1 : o, &bad, &bad_len);
        }
        elsewhere = r == -EINVAL ? list_column_not_offered(bad, bad_len) : NULL;
        if (elsewhere)
                return ctl_usage("list",
                                 "column '%.*s' is not offered: lsblk reads it from %s, "
                                 "not from the kernel's device model",
                                 (int) bad_len, bad, elsewhere);
        if (r == -EINVAL)
                return ctl_usage("list", "unknown column '%.*s'", (int) bad_len, bad);
        if (r < 0)
                return ctl_fail("Out of memory");

        lc->table_columns = calloc(lc->n_columns, sizeof(TableColumn));
        if (!lc->table_columns)
                return ctl_fail("Out of memory");
        for (size_t i = 0; i < lc->n_columns; i++) {
                _cleanup_(freep) char *key = strdup(lc->columns[i]->name);

                lc->table_columns[i] = (TableColumn){lc->columns[i]->name, lc->columns[i]->align,
                                                     lc->columns[i]->width_hint};
                /* lsblk's JSON keys: the column names in lower case. */
                for (char *p = key; p && *p; p++)
                        *p = (char) (*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
                if (!key || strv_consume(&lc->json_keys, &n_keys, TAKE_PTR(key)) < 0)
                        return ctl_fail("Out of memory");
        }
        return EXIT_OK;
}

/* lsblk sorts by makedev()'s number, not by (major, minor): 7:256 comes after 253:0. */
static dev_t list_devno(json_object *model, const char *path)
{
        json_object *o = model_object(model, path);
        const char *iface = model_has_iface(o, BLKMODEL_IFACE_PARTITION) ? BLKMODEL_IFACE_PARTITION
                                                                         : BLKMODEL_IFACE_DISK;

        return makedev((unsigned) model_u64(o, iface, BLKMODEL_PROP_MAJOR),
                       (unsigned) model_u64(o, iface, BLKMODEL_PROP_MINOR));
}

static int list_compare(const void *a, const void *b, void *userdata)
{
        const char *pa = *(const char *const *) a, *pb = *(const char *const *) b;
        json_object *model = userdata;
        dev_t da = list_devno(model, pa), db = list_devno(model, pb);

        if (da != db)
                return da < db ? -1 : 1;
        return strverscmp(model_name(model, pa), model_name(model, pb));
}

/* lsblk's order: by MAJ:MIN as list_devno() has it. */
static void list_sort(ListContext *lc, const char **paths, size_t n)
{
        qsort_r(paths, n, sizeof(char *), list_compare, lc->model);
}

/* Drops the repeats of a sorted list; returns the new length. */
static size_t list_unique(const char **paths, size_t n)
{
        size_t w = 0;

        for (size_t i = 0; i < n; i++)
                if (w == 0 || !streq(paths[w - 1], paths[i]))
                        paths[w++] = paths[i];
        return w;
}

/* Children in lsblk's order: partitions first, then holders, each sorted as list_sort() does. */
static int list_children(const char *path, const char ***ret_children, size_t *ret_n, void *userdata)
{
        ListContext *lc = userdata;
        json_object *obj = model_object(lc->model, path);
        bool partition = model_has_iface(obj, BLKMODEL_IFACE_PARTITION);
        const char *iface = partition ? BLKMODEL_IFACE_PARTITION : BLKMODEL_IFACE_DISK;
        json_object *parts = partition ? NULL : model_prop(obj, iface, BLKMODEL_PROP_PARTITIONS);
        json_object *holders = model_prop(obj, iface, BLKMODEL_PROP_HOLDERS);
        size_t np = parts ? json_object_array_length(parts) : 0;
        size_t nh = holders ? json_object_array_length(holders) : 0;
        const char **c;

        c = calloc(np + nh + 1, sizeof(char *));
        if (!c)
                return -ENOMEM;
        for (size_t i = 0; i < np; i++)
                c[i] = json_object_get_string(json_object_array_get_idx(parts, i));
        for (size_t i = 0; i < nh; i++)
                c[np + i] = json_object_get_string(json_object_array_get_idx(holders, i));
        list_sort(lc, c, np);
        list_sort(lc, c + np, nh);

        *ret_children = c;
        *ret_n = np + nh;
        return 0;
}

/*
 * lsblk's rule for empty devices (ignore_empty()): a loop device of 0 bytes with no backing file (an
 * unattached one) is hidden, any other device is shown; -A hides every empty device, -a none.
 */
static bool list_hidden(const ListContext *lc, const ListRow *row)
{
        const char *iface = row->partition ? BLKMODEL_IFACE_PARTITION : BLKMODEL_IFACE_DISK;

        if (lc->ctl->all || list_row_size(row) > 0)
                return false;
        if (lc->ctl->noempty)
                return true;
        return model_u64(row->obj, iface, BLKMODEL_PROP_MAJOR) == LOOP_MAJOR &&
               isempty(model_string(row->obj, BLKMODEL_IFACE_GROUP_PREFIX "loop", "backing_file"));
}

static int list_node(TreeDraw *d, const char *path, json_object *j, void *userdata)
{
        ListContext *lc = userdata;
        _cleanup_(freep) char **cells = NULL;
        ListRow row;
        int r = 0;

        /* Named as a holder or partition, yet not in the model: nothing to show. */
        if (!model_object(lc->model, path))
                return 1;
        list_row_init(&row, lc->model, path, tree_draw_parent(d));
        if (list_hidden(lc, &row))
                return 1;

        if (j) {
                for (size_t i = 0; i < lc->n_columns; i++) {
                        json_object *v = NULL;

                        r = list_cell_json(lc->columns[i], &row, lc->ctl->bytes, &v);
                        if (r < 0)
                                return r;
                        if (json_object_object_add(j, lc->json_keys[i], v) < 0) {
                                json_object_put(v);
                                return -ENOMEM;
                        }
                }
                return 0;
        }

        cells = calloc(lc->n_columns + 1, sizeof(char *));
        if (!cells)
                return -ENOMEM;
        for (size_t i = 0; i < lc->n_columns && r >= 0; i++)
                r = list_cell_text(lc->columns[i], &row, lc->ctl->bytes, &cells[i]);
        if (r >= 0)
                r = tree_draw_row(d, (const char *const *) cells);
        for (size_t i = 0; i < lc->n_columns; i++)
                free(cells[i]);
        return r;
}

/*
 * The devices the user named that the daemon knows: their arguments (pointing into args) and object
 * paths, in the same order.  One that names nothing is said so on stderr, one line each, and counted
 * in *ret_missing, as lsblk and ls go on to what they find; any other failure is reported and its
 * exit code returned.
 */
static int list_resolve(Ctl *ctl, sd_bus *bus, char **args, int n_args, char ***ret_args, char ***ret_paths,
                        size_t *ret_missing)
{
        _cleanup_(strv_freep) char **paths = NULL;
        _cleanup_(freep) char **found = NULL;
        size_t n = 0, missing = 0;
        int r;

        found = calloc((size_t) n_args + 1, sizeof(char *));
        if (!found)
                return ctl_fail("Out of memory");
        for (int i = 0; i < n_args; i++) {
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
                char *path = NULL;

                r = bus_resolve(bus, args[i], &path, &error);
                if (r < 0 && sd_bus_error_has_name(&error, BLKMODEL_ERROR_NO_SUCH_OBJECT)) {
                        (void) bus_report_resolve_error(ctl, &error, r, args[i]);
                        missing++;
                        continue;
                }
                if (r < 0)
                        return bus_report_resolve_error(ctl, &error, r, args[i]);
                found[n] = args[i];
                if (strv_consume(&paths, &n, path) < 0)
                        return ctl_fail("Out of memory");
        }
        *ret_args = TAKE_PTR(found);
        *ret_paths = TAKE_PTR(paths);
        *ret_missing = missing;
        return EXIT_OK;
}

/* The disk of a block device's object path (a partition's is its parent), NULL for no block device. */
static char *disk_path_of(const char *path)
{
        const char *rest = startswith(path, BLKMODEL_ROOT_PATH "/block/");
        size_t n;

        if (!rest || !*rest)
                return NULL;
        n = strcspn(rest, "/");
        return strndup(path, (size_t) (rest - path) + n);
}

static int model_merge(json_object *model, json_object *part)
{
        json_object_object_foreach(part, path, obj)
                if (json_object_object_add(model, path, json_object_get(obj)) < 0)
                        return -ENOMEM;
        return 0;
}

/* An object gone between the reading that named it and ours: what the whole model's one reading
 * would not have had either.  Clears the error. */
static bool gone_meanwhile(int r, sd_bus_error *error)
{
        if (r >= 0 || !sd_bus_error_has_name(error, SD_BUS_ERROR_UNKNOWN_OBJECT))
                return false;
        sd_bus_error_free(error);
        return true;
}

/* Adds the disk's subtree (its partitions, queue, scheduler) and its hardware chain to model, unless
 * it is there; its holders' disks to *todo.  A holder's disk (not named) or hardware gone meanwhile
 * is left out, as list leaves out a holder the model does not have. */
static int list_load_disk(sd_bus *bus, const char *disk, bool named, json_object *model, char ***todo,
                          size_t *n_todo, sd_bus_error *error)
{
        _cleanup_(json_object_putp) json_object *part = NULL;
        int r;

        if (model_object(model, disk))
                return 0;
        r = bus_load_model(bus, disk, list_filter, NULL, &part, error);
        if (!named && gone_meanwhile(r, error))
                return 0;
        if (r >= 0)
                r = model_merge(model, part);
        if (r < 0)
                return r;
        json_object_object_foreach(part, path, obj) {
                (void) path; /* the holders are what counts */
                const char *iface = model_has_iface(obj, BLKMODEL_IFACE_PARTITION) ? BLKMODEL_IFACE_PARTITION
                                                                                   : BLKMODEL_IFACE_DISK;
                json_object *holders = model_prop(obj, iface, BLKMODEL_PROP_HOLDERS);

                for (size_t i = 0; holders && i < json_object_array_length(holders); i++) {
                        char *d = disk_path_of(
                                        json_object_get_string(json_object_array_get_idx(holders, i)));
                        if (d && strv_consume(todo, n_todo, d) < 0)
                                return -ENOMEM;
                }
        }
        /* The hardware, nearest first, up to what is there already or the devices kset. */
        for (const char *dev = model_string(model_object(model, disk), BLKMODEL_IFACE_DISK,
                                            BLKMODEL_PROP_DEVICE);
             dev && startswith(dev, BLKMODEL_ROOT_PATH "/devices/") && !model_object(model, dev);
             dev = model_string(model_object(model, dev), BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_PARENT)) {
                r = bus_load_object(bus, dev, model, NULL, error);
                if (gone_meanwhile(r, error))
                        break;
                if (r < 0)
                        return r;
        }
        return 0;
}

/*
 * Only what rows of the devices named read: each one's disk with what is below it and its
 * hardware, and the same of every device that holds them, up the stack.  A one-disk question costs
 * the same at 10,000 disks as at ten.
 */
static int list_load_named(sd_bus *bus, char **paths, json_object **ret, sd_bus_error *error)
{
        _cleanup_(json_object_putp) json_object *model = json_object_new_object();
        _cleanup_(strv_freep) char **todo = NULL;
        size_t n_todo = 0, n_named;
        int r;

        if (!model)
                return -ENOMEM;
        for (char **p = paths; *p; p++) {
                char *d = disk_path_of(*p);
                if (d && strv_consume(&todo, &n_todo, d) < 0)
                        return -ENOMEM;
        }
        n_named = n_todo;
        /* todo grows as holders are found; a stack that loops ends on what is loaded already. */
        for (size_t i = 0; i < n_todo; i++) {
                r = list_load_disk(bus, todo[i], i < n_named, model, &todo, &n_todo, error);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(model);
        return 0;
}

/*
 * The devices the user named (args, resolved as paths), each once.  One that is no disk or
 * partition is said so on stderr and left out, as lsblk goes on to the others (*ret_failed counts
 * them); so is one that lsblk's rule hides (*ret_hidden counts those).
 */
static void list_named_roots(ListContext *lc, char **args, size_t n_args, char **paths, const char **roots,
                             size_t *n_roots, size_t *ret_failed, size_t *ret_hidden)
{
        size_t failed = 0, hidden = 0;

        for (size_t i = 0; i < n_args; i++) {
                const char *path = paths[i];
                json_object *obj;
                ListRow row;

                obj = model_object(lc->model, path);
                if (!model_has_iface(obj, BLKMODEL_IFACE_DISK) &&
                    !model_has_iface(obj, BLKMODEL_IFACE_PARTITION)) {
                        (void) ctl_fail("Not a block device: %s (%s)", args[i], path);
                        failed++;
                        continue;
                }
                list_row_init(&row, lc->model, path, NULL);
                if (list_hidden(lc, &row)) {
                        /* lsblk says nothing; saying why costs one line. */
                        (void) ctl_warn("%s is empty (0 bytes%s): %s", args[i],
                                        lc->ctl->noempty ? "" : ", no backing file",
                                        lc->ctl->noempty ? "-A hides it" : "-a lists it");
                        hidden++;
                        continue;
                }
                roots[(*n_roots)++] = path;
        }
        *ret_failed = failed;
        *ret_hidden = hidden;
}

int cmd_list(Ctl *ctl, char **args, int n_args)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(json_object_putp) json_object *model = NULL;
        _cleanup_(list_context_done) ListContext lc = {.ctl = ctl};
        _cleanup_(strv_freep) char **named = NULL;
        _cleanup_(freep) char **named_args = NULL;
        _cleanup_(freep) const char **roots = NULL;
        size_t n_roots = 0, n_named = 0, failed = 0;
        sd_bus *bus = NULL;
        int r;

        r = list_pick_columns(&lc);
        if (r != EXIT_OK)
                return r;
        r = ctl_bus(ctl, &bus);
        if (r != EXIT_OK)
                return r;

        if (n_args > 0) {
                r = list_resolve(ctl, bus, args, n_args, &named_args, &named, &failed);
                if (r != EXIT_OK)
                        return r;
                n_named = (size_t) n_args - failed;
                /* Each one said so already; no table of nothing. */
                if (n_named == 0)
                        return EXIT_FAIL;
                r = list_load_named(bus, named, &model, &error);
        } else
                r = bus_load_model(bus, BLKMODEL_ROOT_PATH, list_filter, NULL, &model, &error);
        if (r < 0)
                return bus_report_error(ctl, &error, r, "Failed to get the model");
        lc.model = model;

        roots = calloc(json_object_object_length(model) + (size_t) n_args + 1, sizeof(char *));
        if (!roots)
                return ctl_fail("Out of memory");
        if (n_args > 0) {
                size_t not_block = 0, hidden = 0;

                /* The roots point into named, which lives to the end. */
                list_named_roots(&lc, named_args, n_named, named, roots, &n_roots, &not_block, &hidden);
                failed += not_block;
                /* As lsblk fails when none of the devices named is shown. */
                if (n_roots == 0)
                        return EXIT_FAIL;
        } else {
                /* Top level: disks that sit on nothing (no slaves). */
                json_object_object_foreach(model, path, obj) {
                        json_object *slaves;

                        if (!model_has_iface(obj, BLKMODEL_IFACE_DISK))
                                continue;
                        slaves = model_prop(obj, BLKMODEL_IFACE_DISK, BLKMODEL_PROP_SLAVES);
                        if (slaves && json_object_array_length(slaves) > 0)
                                continue;
                        roots[n_roots++] = path;
                }
        }
        /* lsblk's order, for the devices named too: by MAJ:MIN, not as named; one named twice once. */
        list_sort(&lc, roots, n_roots);
        n_roots = list_unique(roots, n_roots);

        TreeDrawOps ops = {
                        .style = TREE_STYLE_LSBLK,
                        /* A confused model may make a holder its own slave. */
                        .max_depth = 64,
                        .columns = lc.table_columns,
                        .n_columns = lc.n_columns,
                        .tree_column = -1,
                        .json_key = "blockdevices",
                        .children = list_children,
                        .node = list_node,
        };
        for (size_t i = 0; i < lc.n_columns; i++)
                if (streq(lc.columns[i]->name, "NAME")) {
                        ops.tree_column = (int) i;
                        break;
                }
        if (tree_draw(&ops, ctl, roots, n_roots, &lc) < 0)
                return ctl_fail("Out of memory");
        /* What was found is listed; a device named that was not still fails the command, as with ls. */
        return failed > 0 ? EXIT_FAIL : EXIT_OK;
}
