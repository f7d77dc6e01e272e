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
#include "json-util.h"
#include "model.h"
#include "output.h"
#include "tree-draw.h"

#include "common/util.h"

/* Only what the table needs: the full model can be large. */
static bool list_filter(const char *iface, const char *name, void *userdata)
{
        if (streq(iface, BLKMODEL_IFACE_KOBJECT))
                return streq(name, BLKMODEL_PROP_NAME) || streq(name, BLKMODEL_PROP_KTYPE);
        if (streq(iface, BLKMODEL_IFACE_DISK) || streq(iface, BLKMODEL_IFACE_PARTITION))
                return streq(name, BLKMODEL_PROP_MAJOR) || streq(name, BLKMODEL_PROP_MINOR) ||
                       streq(name, BLKMODEL_PROP_SIZE) || streq(name, BLKMODEL_PROP_READ_ONLY) ||
                       streq(name, BLKMODEL_PROP_PARTITIONS) || streq(name, BLKMODEL_PROP_HOLDERS) ||
                       streq(name, BLKMODEL_PROP_SLAVES) || streq(name, BLKMODEL_PROP_QUEUE) ||
                       streq(name, BLKMODEL_PROP_DEVICE);
        if (streq(iface, BLKMODEL_IFACE_QUEUE))
                return streq(name, "scheduler");
        if (streq(iface, BLKMODEL_IFACE_GROUP_PREFIX "dm"))
                return streq(name, "uuid") || streq(name, "name");
        if (streq(iface, BLKMODEL_IFACE_GROUP_PREFIX "md"))
                return streq(name, "level");
        if (streq(iface, BLKMODEL_IFACE_DEVICE))
                return streq(name, "type");
        return false;
}

typedef struct ListContext {
        Ctl *ctl;
        json_object *model;
} ListContext;

/* lib/blkdev.c: blkdev_scsi_type_to_name() */
static const char *scsi_type_to_name(long type)
{
        static const char *const names[] = {
                        [0x00] = "disk",    [0x01] = "tape", [0x02] = "printer", [0x03] = "processor",
                        [0x04] = "worm",    [0x05] = "rom",  [0x06] = "scanner", [0x07] = "mo-disk",
                        [0x08] = "changer", [0x09] = "comm", [0x0c] = "raid",    [0x0d] = "enclosure",
                        [0x0e] = "rbc",     [0x11] = "osd",  [0x7f] = "no-lun",
        };

        if (type < 0 || (unsigned long) type >= ELEMENTSOF(names))
                return NULL;
        return names[type];
}

/* Caller frees.  lsblk's get_type(), from the model instead of sysfs. */
static char *list_type(ListContext *lc, json_object *obj, const char *name, bool partition)
{
        char *t = NULL;

        if (partition)
                return strdup("part");

        if (startswith(name, "dm-")) {
                const char *uuid = model_string(obj, BLKMODEL_IFACE_GROUP_PREFIX "dm", "uuid");

                if (!isempty(uuid)) {
                        size_t n = strcspn(uuid, "-");

                        /* kpartx: "part1-..." is a partition mapping */
                        if (n >= 4 && strncasecmp(uuid, "part", 4) == 0)
                                n = 4;
                        t = strndup(uuid, n);
                } else
                        t = strdup("dm");
        } else if (startswith(name, "loop"))
                t = strdup("loop");
        else if (startswith(name, "md")) {
                const char *level = model_string(obj, BLKMODEL_IFACE_GROUP_PREFIX "md", "level");

                t = strdup(isempty(level) ? "md" : level);
        } else {
                const char *dev = model_string(obj, BLKMODEL_IFACE_DISK, BLKMODEL_PROP_DEVICE);
                const char *type = model_string(model_object(lc->model, dev), BLKMODEL_IFACE_DEVICE, "type");
                const char *n = NULL;

                if (!isempty(type)) {
                        char *end;
                        long v = strtol(type, &end, 10);

                        if (*end == '\0')
                                n = scsi_type_to_name(v);
                }
                t = strdup(n ?: "disk");
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
        _cleanup_(freep) BusPropRequest *req = NULL;

        req = calloc(max, sizeof(BusPropRequest));
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
                if (dev && !streq(dev, "/"))
                        req[n++] = (BusPropRequest){dev, BLKMODEL_IFACE_DEVICE, "type"};
                /* Room for the next object's four, at most. */
                if (n + 4 > max) {
                        BusPropRequest *more = reallocarray(req, max *= 2, sizeof(BusPropRequest));

                        if (!more)
                                return -ENOMEM;
                        req = more;
                }
        }
        return bus_fetch_properties(bus, lc->model, req, n, error);
}

/* The disk a partition belongs to: its path minus the last element. */
static json_object *list_partition_disk(ListContext *lc, const char *path)
{
        _cleanup_(freep) char *p = NULL;
        const char *slash = strrchr(path, '/');

        if (!slash)
                return NULL;
        p = strndup(path, (size_t) (slash - path));
        if (!p)
                return NULL;
        return model_object(lc->model, p);
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

/* What list shows of one device. */
typedef struct ListDevice {
        const char *kname;
        char *name; /* the device node's */
        char *type;
        char *sched;
        uint32_t major, minor;
        uint64_t bytes;
        bool ro;
} ListDevice;

static void list_device_done(ListDevice *d)
{
        d->name = mfree(d->name);
        d->type = mfree(d->type);
        d->sched = mfree(d->sched);
}

static int list_device_read(ListContext *lc, const char *path, json_object *obj, ListDevice *ret)
{
        _cleanup_(list_device_done) ListDevice d = {};
        bool partition = model_has_iface(obj, BLKMODEL_IFACE_PARTITION);
        const char *iface = partition ? BLKMODEL_IFACE_PARTITION : BLKMODEL_IFACE_DISK;
        const char *dm_name;

        d.kname = model_name(lc->model, path);

        /* The device node's name: the kernel stores '/' as '!'; a dm device
         * shows its mapper name, as in lsblk. */
        dm_name = model_string(obj, BLKMODEL_IFACE_GROUP_PREFIX "dm", "name");
        d.name = strdup(isempty(dm_name) ? d.kname : dm_name);
        if (!d.name)
                return -ENOMEM;
        for (char *p = d.name; *p; p++)
                if (*p == '!')
                        *p = '/';

        d.major = (uint32_t) model_u64(obj, iface, BLKMODEL_PROP_MAJOR);
        d.minor = (uint32_t) model_u64(obj, iface, BLKMODEL_PROP_MINOR);
        d.bytes = model_u64(obj, iface, BLKMODEL_PROP_SIZE);
        d.ro = model_bool(obj, iface, BLKMODEL_PROP_READ_ONLY);
        d.type = list_type(lc, obj, d.kname, partition);
        if (!d.type)
                return -ENOMEM;
        d.sched = list_scheduler(lc, partition ? list_partition_disk(lc, path) : obj);
        if (!d.sched)
                return -ENOMEM;

        *ret = d;
        d = (ListDevice){};
        return 0;
}

static int list_device_json(const ListDevice *d, const char *path, json_object *j)
{
        _cleanup_(freep) char *majmin = NULL;

        json_object_object_add(j, "name", json_object_new_string(d->name));
        json_object_object_add(j, "kname", json_object_new_string(d->kname));
        json_object_object_add(j, "object", json_object_new_string(path));
        if (asprintf(&majmin, "%" PRIu32 ":%" PRIu32, d->major, d->minor) < 0)
                return -ENOMEM;
        json_object_object_add(j, "maj:min", json_object_new_string(majmin));
        json_object_object_add(j, "size", json_object_new_uint64(d->bytes));
        json_object_object_add(j, "ro", json_object_new_boolean(d->ro));
        json_object_object_add(j, "type", json_object_new_string(d->type));
        json_object_object_add(j, "scheduler", isempty(d->sched) ? NULL : json_object_new_string(d->sched));
        return 0;
}

static int list_device_row(TreeDraw *d, const ListContext *lc, const ListDevice *dev)
{
        _cleanup_(freep) char *majmin = NULL, *size = NULL;

        /* lsblk's own format, so that the columns line up as in lsblk. */
        if (asprintf(&majmin, "%3" PRIu32 ":%-3" PRIu32, dev->major, dev->minor) < 0)
                return -ENOMEM;
        size = lc->ctl->bytes ? NULL : output_size_human(dev->bytes);
        if (!size && asprintf(&size, "%" PRIu64, dev->bytes) < 0)
                return -ENOMEM;
        return tree_draw_row(d, (const char *const[]){dev->name, majmin, size, dev->ro ? "1" : "0",
                                                      dev->type, dev->sched});
}

static int list_node(TreeDraw *d, const char *path, json_object *j, void *userdata)
{
        _cleanup_(list_device_done) ListDevice dev = {};
        ListContext *lc = userdata;
        json_object *obj = model_object(lc->model, path);
        int r;

        /* Named as a holder or partition, yet not in the model: nothing to show. */
        if (!obj)
                return 1;

        r = list_device_read(lc, path, obj, &dev);
        if (r < 0)
                return r;
        return j ? list_device_json(&dev, path, j) : list_device_row(d, lc, &dev);
}

/* Minimum widths are lsblk's width hints, for equal tables. */
static const TableColumn list_columns[] = {
                {"NAME", ALIGN_LEFT, 0}, {"MAJ:MIN", ALIGN_LEFT, 0}, {"SIZE", ALIGN_RIGHT, 5},
                {"RO", ALIGN_RIGHT, 0},  {"TYPE", ALIGN_LEFT, 4},    {"SCHEDULER", ALIGN_LEFT, 0},
};

static const TreeDrawOps list_draw_ops = {
                .style = TREE_STYLE_LSBLK,
                /* A confused model may make a holder its own slave. */
                .max_depth = 64,
                .columns = list_columns,
                .n_columns = ELEMENTSOF(list_columns),
                .json_key = "blockdevices",
                .children = list_children,
                .node = list_node,
};

int cmd_list(Ctl *ctl, char **args, int n_args)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(json_object_putp) json_object *model = NULL;
        _cleanup_(freep) const char **roots = NULL;
        ListContext lc = {.ctl = ctl};
        size_t n_roots = 0;
        sd_bus *bus = NULL;
        int r;

        r = ctl_bus(ctl, &bus);
        if (r != EXIT_OK)
                return r;

        r = bus_get_managed_objects(bus, list_filter, NULL, &model, &error);
        if (r < 0)
                return bus_report_error(&error, r, "Failed to get the model");
        lc.model = model;
        r = list_fetch_attributes(&lc, bus, &error);
        if (r < 0)
                return bus_report_error(&error, r, "Failed to get the model");

        /* Top level: disks that sit on nothing (no slaves). */
        roots = calloc(json_object_object_length(model) + 1, sizeof(char *));
        if (!roots)
                return ctl_fail("Out of memory");
        json_object_object_foreach(model, path, obj) {
                json_object *slaves;

                if (!model_has_iface(obj, BLKMODEL_IFACE_DISK))
                        continue;
                slaves = model_prop(obj, BLKMODEL_IFACE_DISK, BLKMODEL_PROP_SLAVES);
                if (slaves && json_object_array_length(slaves) > 0)
                        continue;
                roots[n_roots++] = path;
        }
        list_sort(&lc, roots, n_roots);

        if (tree_draw(&list_draw_ops, ctl, roots, n_roots, &lc) < 0)
                return ctl_fail("Out of memory");
        return EXIT_OK;
}
