/* SPDX-License-Identifier: LGPL-2.1-or-later */

/*
 * list: block devices as lsblk shows them.  Partitions and holders hang
 * under the device they sit on; TYPE follows lsblk's rules (dm uuid
 * prefix, md level, SCSI device type), so that the two tools agree.
 */

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <blkmodel/names.h>

#include "blkmodelctl.h"
#include "bus-error.h"
#include "bus-model.h"
#include "model.h"
#include "output.h"

/* Only what the table needs: the full model can be large. */
static bool list_filter(const char *iface, const char *name, void *userdata)
{
        if (strcmp(iface, BLKMODEL_IFACE_KOBJECT) == 0)
                return strcmp(name, BLKMODEL_PROP_NAME) == 0 || strcmp(name, BLKMODEL_PROP_KTYPE) == 0;
        if (strcmp(iface, BLKMODEL_IFACE_DISK) == 0 || strcmp(iface, BLKMODEL_IFACE_PARTITION) == 0)
                return strcmp(name, BLKMODEL_PROP_MAJOR) == 0 || strcmp(name, BLKMODEL_PROP_MINOR) == 0 ||
                       strcmp(name, BLKMODEL_PROP_SIZE) == 0 || strcmp(name, BLKMODEL_PROP_READ_ONLY) == 0 ||
                       strcmp(name, BLKMODEL_PROP_PARTITIONS) == 0 ||
                       strcmp(name, BLKMODEL_PROP_HOLDERS) == 0 || strcmp(name, BLKMODEL_PROP_SLAVES) == 0 ||
                       strcmp(name, BLKMODEL_PROP_QUEUE) == 0 || strcmp(name, BLKMODEL_PROP_DEVICE) == 0;
        if (strcmp(iface, BLKMODEL_IFACE_QUEUE) == 0)
                return strcmp(name, "scheduler") == 0;
        if (strcmp(iface, BLKMODEL_IFACE_GROUP_PREFIX "dm") == 0)
                return strcmp(name, "uuid") == 0 || strcmp(name, "name") == 0;
        if (strcmp(iface, BLKMODEL_IFACE_GROUP_PREFIX "md") == 0)
                return strcmp(name, "level") == 0;
        if (strcmp(iface, BLKMODEL_IFACE_DEVICE) == 0)
                return strcmp(name, "type") == 0;
        return false;
}

typedef struct ListContext {
        Ctl *ctl;
        json_object *model;
        Table *table;
        TreePrefix prefix;
} ListContext;

/* lib/blkdev.c: blkdev_scsi_type_to_name() */
static const char *scsi_type_to_name(long type)
{
        switch (type) {
        case 0x00:
                return "disk";
        case 0x01:
                return "tape";
        case 0x02:
                return "printer";
        case 0x03:
                return "processor";
        case 0x04:
                return "worm";
        case 0x05:
                return "rom";
        case 0x06:
                return "scanner";
        case 0x07:
                return "mo-disk";
        case 0x08:
                return "changer";
        case 0x09:
                return "comm";
        case 0x0c:
                return "raid";
        case 0x0d:
                return "enclosure";
        case 0x0e:
                return "rbc";
        case 0x11:
                return "osd";
        case 0x7f:
                return "no-lun";
        }
        return NULL;
}

/* Caller frees.  lsblk's get_type(), from the model instead of sysfs. */
static char *list_type(ListContext *lc, json_object *obj, const char *name, bool partition)
{
        char *t = NULL;

        if (partition)
                return strdup("part");

        if (strncmp(name, "dm-", 3) == 0) {
                const char *uuid = model_string(obj, BLKMODEL_IFACE_GROUP_PREFIX "dm", "uuid");

                if (uuid && uuid[0]) {
                        size_t n = strcspn(uuid, "-");

                        /* kpartx: "part1-..." is a partition mapping */
                        if (n >= 4 && strncasecmp(uuid, "part", 4) == 0)
                                n = 4;
                        t = strndup(uuid, n);
                } else
                        t = strdup("dm");
        } else if (strncmp(name, "loop", 4) == 0)
                t = strdup("loop");
        else if (strncmp(name, "md", 2) == 0) {
                const char *level = model_string(obj, BLKMODEL_IFACE_GROUP_PREFIX "md", "level");

                t = strdup(level && level[0] ? level : "md");
        } else {
                const char *dev = model_string(obj, BLKMODEL_IFACE_DISK, BLKMODEL_PROP_DEVICE);
                const char *type = model_string(model_object(lc->model, dev), BLKMODEL_IFACE_DEVICE, "type");
                const char *n = NULL;

                if (type && type[0]) {
                        char *end;
                        long v = strtol(type, &end, 10);

                        if (*end == '\0')
                                n = scsi_type_to_name(v);
                }
                t = strdup(n ? n : "disk");
        }

        if (t)
                for (char *p = t; *p; p++)
                        *p = (char) tolower((unsigned char) *p);
        return t;
}

/*
 * The raw attributes list needs beyond GetManagedObjects' typed properties: queue/scheduler
 * (bracketed or not, as lsblk tells bio-based devices apart), dm/uuid and dm/name, md/level, and
 * the SCSI type of each disk's device.
 */
static int list_fetch_attributes(ListContext *lc, sd_bus *bus, sd_bus_error *error)
{
        size_t n = 0, max = 2 * (size_t) json_object_object_length(lc->model) + 1;
        BusPropRequest *req = calloc(max, sizeof(BusPropRequest));
        int r;

        if (!req)
                return -ENOMEM;
        json_object_object_foreach(lc->model, path, obj) {
                const char *dev;

                if (model_has_iface(obj, BLKMODEL_IFACE_QUEUE))
                        req[n++] = (BusPropRequest){path, BLKMODEL_IFACE_QUEUE, "scheduler"};
                if (model_has_iface(obj, BLKMODEL_IFACE_GROUP_PREFIX "dm")) {
                        req[n++] = (BusPropRequest){path, BLKMODEL_IFACE_GROUP_PREFIX "dm", "uuid"};
                        req[n++] = (BusPropRequest){path, BLKMODEL_IFACE_GROUP_PREFIX "dm", "name"};
                }
                if (model_has_iface(obj, BLKMODEL_IFACE_GROUP_PREFIX "md"))
                        req[n++] = (BusPropRequest){path, BLKMODEL_IFACE_GROUP_PREFIX "md", "level"};
                dev = model_string(obj, BLKMODEL_IFACE_DISK, BLKMODEL_PROP_DEVICE);
                if (dev && strcmp(dev, "/") != 0)
                        req[n++] = (BusPropRequest){dev, BLKMODEL_IFACE_DEVICE, "type"};
                if (n + 4 > max) {
                        BusPropRequest *more = reallocarray(req, max *= 2, sizeof(BusPropRequest));
                        if (!more) {
                                free(req);
                                return -ENOMEM;
                        }
                        req = more;
                }
        }
        r = bus_fetch_properties(bus, lc->model, req, n, error);
        free(req);
        return r;
}

/* The disk a partition belongs to: its path minus the last element. */
static json_object *list_partition_disk(ListContext *lc, const char *path)
{
        const char *slash = strrchr(path, '/');
        json_object *o;
        char *p;

        if (!slash)
                return NULL;
        p = strndup(path, (size_t) (slash - path));
        if (!p)
                return NULL;
        o = model_object(lc->model, p);
        free(p);
        return o;
}

/*
 * lsblk's SCHED: the bracketed name of queue/scheduler, nothing for
 * bio-based devices (dm, md), whose file says "none" unbracketed.
 * Caller frees.
 */
static char *list_scheduler(ListContext *lc, json_object *disk)
{
        const char *q = model_string(disk, BLKMODEL_IFACE_DISK, BLKMODEL_PROP_QUEUE);
        const char *s = model_string(model_object(lc->model, q), BLKMODEL_IFACE_QUEUE, "scheduler");
        const char *open, *close;

        if (!s || !(open = strchr(s, '[')) || !(close = strchr(open, ']')))
                return strdup("");
        return strndup(open + 1, (size_t) (close - open - 1));
}

static uint64_t list_devno(json_object *model, const char *path)
{
        json_object *o = model_object(model, path);
        const char *iface = model_has_iface(o, BLKMODEL_IFACE_PARTITION) ? BLKMODEL_IFACE_PARTITION
                                                                         : BLKMODEL_IFACE_DISK;

        return model_u64(o, iface, BLKMODEL_PROP_MAJOR) << 32 | model_u64(o, iface, BLKMODEL_PROP_MINOR);
}

static int list_compare(const void *a, const void *b, void *userdata)
{
        const char *pa = *(const char *const *) a, *pb = *(const char *const *) b;
        json_object *model = userdata;
        uint64_t da = list_devno(model, pa), db = list_devno(model, pb);

        if (da != db)
                return da < db ? -1 : 1;
        return strverscmp(model_name(model, pa), model_name(model, pb));
}

/* lsblk's order: by MAJ:MIN. */
static void list_sort(ListContext *lc, const char **paths, size_t n)
{
        qsort_r(paths, n, sizeof(char *), list_compare, lc->model);
}

/* Children in lsblk's order: partitions first, then holders, each by name. */
static int list_children(ListContext *lc, json_object *obj, bool partition, const char ***ret, size_t *ret_n)
{
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

        *ret = c;
        *ret_n = np + nh;
        return 0;
}

/*
 * Adds one device and everything stacked on it.  depth bounds a cycle
 * that a confused model could contain (a holder that is its own slave).
 */
static int list_device(ListContext *lc, const char *path, json_object *jparent, bool last, bool root,
                       unsigned depth)
{
        json_object *obj = model_object(lc->model, path);
        bool partition = model_has_iface(obj, BLKMODEL_IFACE_PARTITION);
        const char *iface = partition ? BLKMODEL_IFACE_PARTITION : BLKMODEL_IFACE_DISK;
        const char *kname = model_name(lc->model, path), *dm_name;
        char *name = NULL, *type = NULL, *size = NULL, *majmin = NULL, *prefix = NULL, *label = NULL;
        char *sched = NULL;
        const char **children = NULL;
        size_t n_children = 0, saved;
        uint64_t bytes;
        uint32_t major, minor;
        bool ro;
        int r = -ENOMEM;

        if (!obj || depth > 64)
                return 0;

        /* The device node's name: the kernel stores '/' as '!'; a dm device
         * shows its mapper name, as in lsblk. */
        dm_name = model_string(obj, BLKMODEL_IFACE_GROUP_PREFIX "dm", "name");
        name = strdup(dm_name && dm_name[0] ? dm_name : kname);
        if (!name)
                goto finish;
        for (char *p = name; *p; p++)
                if (*p == '!')
                        *p = '/';

        major = (uint32_t) model_u64(obj, iface, BLKMODEL_PROP_MAJOR);
        minor = (uint32_t) model_u64(obj, iface, BLKMODEL_PROP_MINOR);
        bytes = model_u64(obj, iface, BLKMODEL_PROP_SIZE);
        ro = model_bool(obj, iface, BLKMODEL_PROP_READ_ONLY);
        type = list_type(lc, obj, kname, partition);
        if (!type)
                goto finish;
        sched = list_scheduler(lc, partition ? list_partition_disk(lc, path) : obj);
        if (!sched)
                goto finish;

        r = list_children(lc, obj, partition, &children, &n_children);
        if (r < 0)
                goto finish;
        r = -ENOMEM;

        if (lc->ctl->json) {
                json_object *j = json_object_new_object(), *arr;

                if (!j || json_object_array_add(jparent, j) < 0) {
                        json_object_put(j);
                        goto finish;
                }
                json_object_object_add(j, "name", json_object_new_string(name));
                json_object_object_add(j, "kname", json_object_new_string(kname));
                json_object_object_add(j, "object", json_object_new_string(path));
                if (asprintf(&majmin, "%" PRIu32 ":%" PRIu32, major, minor) < 0) {
                        majmin = NULL;
                        goto finish;
                }
                json_object_object_add(j, "maj:min", json_object_new_string(majmin));
                json_object_object_add(j, "size", json_object_new_uint64(bytes));
                json_object_object_add(j, "ro", json_object_new_boolean(ro));
                json_object_object_add(j, "type", json_object_new_string(type));
                json_object_object_add(j, "scheduler", sched[0] ? json_object_new_string(sched) : NULL);

                if (n_children > 0) {
                        arr = json_object_new_array();
                        if (!arr)
                                goto finish;
                        json_object_object_add(j, "children", arr);
                        for (size_t i = 0; i < n_children; i++) {
                                r = list_device(lc, children[i], arr, i + 1 == n_children, false, depth + 1);
                                if (r < 0)
                                        goto finish;
                        }
                }
                r = 0;
                goto finish;
        }

        /* lsblk's own format, so that the columns line up as in lsblk. */
        if (asprintf(&majmin, "%3" PRIu32 ":%-3" PRIu32, major, minor) < 0) {
                majmin = NULL;
                goto finish;
        }
        size = lc->ctl->bytes ? NULL : output_size_human(bytes);
        if (!size && asprintf(&size, "%" PRIu64, bytes) < 0) {
                size = NULL;
                goto finish;
        }
        prefix = tree_prefix_line(&lc->prefix, TREE_STYLE_LSBLK, lc->ctl->utf8, last, root);
        if (!prefix || asprintf(&label, "%s%s", prefix, name) < 0) {
                label = NULL;
                goto finish;
        }

        r = table_add_row(lc->table,
                          (const char *const[]){label, majmin, size, ro ? "1" : "0", type, sched});
        if (r < 0)
                goto finish;

        saved = lc->prefix.len;
        r = tree_prefix_push(&lc->prefix, TREE_STYLE_LSBLK, lc->ctl->utf8, last, root);
        for (size_t i = 0; r >= 0 && i < n_children; i++)
                r = list_device(lc, children[i], NULL, i + 1 == n_children, false, depth + 1);
        tree_prefix_pop(&lc->prefix, saved);

finish:
        free(children);
        free(sched);
        free(name);
        free(type);
        free(size);
        free(majmin);
        free(prefix);
        free(label);
        return r;
}

int cmd_list(Ctl *ctl, char **args, int n_args)
{
        /* Minimum widths are lsblk's width hints, for equal tables. */
        static const TableColumn columns[] = {
                        {"NAME", ALIGN_LEFT, 0}, {"MAJ:MIN", ALIGN_LEFT, 0}, {"SIZE", ALIGN_RIGHT, 5},
                        {"RO", ALIGN_RIGHT, 0},  {"TYPE", ALIGN_LEFT, 4},    {"SCHEDULER", ALIGN_LEFT, 0},
        };
        sd_bus_error error = SD_BUS_ERROR_NULL;
        ListContext lc = {.ctl = ctl};
        json_object *jroot = NULL, *jdevs = NULL;
        const char **roots = NULL;
        size_t n_roots = 0;
        sd_bus *bus = NULL;
        int r;

        r = ctl_bus(ctl, &bus);
        if (r != EXIT_OK)
                return r;

        r = bus_get_managed_objects(bus, list_filter, NULL, &lc.model, &error);
        if (r >= 0)
                r = list_fetch_attributes(&lc, bus, &error);
        if (r < 0) {
                r = bus_report_error(&error, r, "Failed to get the model");
                goto finish;
        }

        /* Top level: disks that sit on nothing (no slaves). */
        roots = calloc(json_object_object_length(lc.model) + 1, sizeof(char *));
        if (!roots)
                goto oom;
        json_object_object_foreach(lc.model, path, obj) {
                json_object *slaves;

                if (!model_has_iface(obj, BLKMODEL_IFACE_DISK))
                        continue;
                slaves = model_prop(obj, BLKMODEL_IFACE_DISK, BLKMODEL_PROP_SLAVES);
                if (slaves && json_object_array_length(slaves) > 0)
                        continue;
                roots[n_roots++] = path;
        }
        list_sort(&lc, roots, n_roots);

        if (ctl->json) {
                jroot = json_object_new_object();
                jdevs = json_object_new_array();
                if (!jroot || !jdevs) {
                        json_object_put(jdevs);
                        goto oom;
                }
                json_object_object_add(jroot, "blockdevices", jdevs);
        } else {
                lc.table = table_new(columns, sizeof(columns) / sizeof(columns[0]));
                if (!lc.table)
                        goto oom;
        }

        for (size_t i = 0; i < n_roots; i++) {
                r = list_device(&lc, roots[i], jdevs, true, true, 0);
                if (r < 0)
                        goto oom;
        }

        if (ctl->json)
                output_json(jroot, true);
        else
                table_print(lc.table, stdout, ctl->legend, ctl->colour);
        r = EXIT_OK;
        goto finish;

oom:
        r = ctl_fail("Out of memory");
finish:
        free(roots);
        json_object_put(jroot);
        table_free(lc.table);
        tree_prefix_done(&lc.prefix);
        json_object_put(lc.model);
        sd_bus_error_free(&error);
        return r;
}
