/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* list's columns: their names, types and widths, and their cells as text and as JSON. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <blkmodel/names.h>

#include "list-cells.h"
#include "list-columns.h"
#include "model.h"

#include "common/interfaces.h"
#include "common/util.h"

#define GROUP_DM BLKMODEL_IFACE_GROUP_PREFIX "dm"
#define GROUP_MD BLKMODEL_IFACE_GROUP_PREFIX "md"

#define S COLUMN_STRING
#define N COLUMN_NUMBER
#define B COLUMN_BOOL
#define Z COLUMN_SIZE
#define L ALIGN_LEFT
#define R ALIGN_RIGHT

/* In lsblk's --help order; width hints are lsblk's absolute ones (its relative ones act only where
 * lsblk fills or squeezes a terminal's width, which blkmodelctl does not). */
const ListColumn list_columns[] = {
                {"ALIGNMENT", N, R, 6, "alignment offset", get_attr, FROM_SELF, "alignment_offset"},
                {"DISC-ALN", N, R, 6, "discard alignment offset", get_discard_attr, FROM_SELF,
                 "discard_alignment"},
                {"DAX", B, R, 1, "dax-capable device", get_attr, FROM_QUEUE, "dax"},
                {"DISC-GRAN", Z, R, 6, "discard granularity", get_attr, FROM_QUEUE, "discard_granularity"},
                {"DISC-MAX", Z, R, 6, "discard max bytes", get_attr, FROM_QUEUE, "discard_max_bytes"},
                {"DISC-ZERO", B, R, 1, "discard zeroes data", get_discard_attr, FROM_QUEUE,
                 "discard_zeroes_data"},
                {"HCTL", S, L, 10, "Host:Channel:Target:Lun for SCSI", get_hctl},
                {"HOTPLUG", B, R, 1, "removable or hotplug device (usb, pcmcia, ...)", get_hotplug},
                {"KNAME", S, L, 0, "internal kernel device name", get_kname},
                {"LOG-SEC", N, R, 7, "logical sector size", get_attr, FROM_QUEUE, "logical_block_size"},
                {"MAJ:MIN", S, L, 6, "major:minor device number", get_majmin},
                {"MIN-IO", N, R, 6, "minimum I/O size", get_attr, FROM_QUEUE, "minimum_io_size"},
                {"MODEL", S, L, 0, "device identifier", get_attr, FROM_DEVICE, "model"},
                {"NAME", S, L, 0, "device name", get_name},
                {"OPT-IO", N, R, 6, "optimal I/O size", get_attr, FROM_QUEUE, "optimal_io_size"},
                {"PATH", S, L, 0, "path to the device node", get_path},
                {"PHY-SEC", N, R, 7, "physical sector size", get_attr, FROM_QUEUE, "physical_block_size"},
                {"PKNAME", S, L, 0, "internal parent kernel device name", get_pkname},
                {"RA", N, R, 3, "read-ahead of the device", get_attr, FROM_QUEUE, "read_ahead_kb"},
                {"RAND", B, R, 1, "adds randomness", get_attr, FROM_QUEUE, "add_random"},
                {"REV", S, R, 4, "device revision", get_attr, FROM_DEVICE, "rev"},
                {"RM", B, R, 1, "removable device", get_rm},
                {"RO", B, R, 1, "read-only device", get_ro},
                {"ROTA", B, R, 1, "rotational device", get_attr, FROM_QUEUE, "rotational"},
                {"RQ-SIZE", N, R, 5, "request queue size", get_attr, FROM_QUEUE, "nr_requests"},
                {"SCHED", S, L, 0, "I/O scheduler name", get_sched},
                {"SERIAL", S, L, 0, "disk serial number", get_attr, FROM_DEVICE, "serial"},
                {"SIZE", Z, R, 5, "size of the device", get_size},
                {"START", N, R, 5, "partition start offset", get_start, FROM_SELF, "start"},
                {"STATE", S, L, 7, "state of the device", get_state},
                {"SUBSYSTEMS", S, L, 0, "de-duplicated chain of subsystems", get_subsystems},
                {"TRAN", S, L, 6, "device transport type", get_tran},
                {"TYPE", S, L, 4, "device type", get_type},
                {"VENDOR", S, L, 0, "device vendor", get_attr, FROM_DEVICE, "vendor"},
                {"WSAME", Z, R, 6, "write same max bytes", get_attr, FROM_QUEUE, "write_same_max_bytes"},
                {"ZONED", S, L, 0, "zone model", get_attr, FROM_QUEUE, "zoned"},
                {"ZONE-SZ", Z, R, 9, "zone size", get_zone_sz, FROM_QUEUE, "chunk_sectors"},
                {"ZONE-WGRAN", Z, R, 10, "zone write granularity", get_attr, FROM_QUEUE,
                 "zone_write_granularity"},
                {"ZONE-APP", Z, R, 11, "zone append max bytes", get_attr, FROM_QUEUE,
                 "zone_append_max_bytes"},
                {"ZONE-NR", N, R, 8, "number of zones", get_attr, FROM_QUEUE, "nr_zones"},
                {"ZONE-OMAX", N, R, 10, "maximum number of open zones", get_attr_or_zero, FROM_QUEUE,
                 "max_open_zones"},
                {"ZONE-AMAX", N, R, 10, "maximum number of active zones", get_attr_or_zero, FROM_QUEUE,
                 "max_active_zones"},
                /* Not lsblk's: where the device is on the bus. */
                {"OBJECT", S, L, 0, "the D-Bus object (blkmodel's own)", get_object},
};
const size_t list_n_columns = ELEMENTSOF(list_columns);
const char list_default_columns[] = "NAME,MAJ:MIN,RM,SIZE,RO,TYPE,SCHED";

#undef S
#undef N
#undef B
#undef Z
#undef L
#undef R

const ListColumn *list_column_find(const char *name, size_t len)
{
        for (size_t i = 0; i < list_n_columns; i++)
                if (strlen(list_columns[i].name) == len && strncasecmp(list_columns[i].name, name, len) == 0)
                        return list_columns + i;
        return NULL;
}

/* lsblk's columns (util-linux 2.38) that no kobject attribute gives, and where lsblk reads them. */
static const struct {
        const char *names;
        const char *source;
} columns_not_offered[] = {
                {"FSAVAIL FSROOTS FSSIZE FSUSED FSUSE% MOUNTPOINT MOUNTPOINTS", "the mount table"},
                {"FSTYPE FSVER LABEL UUID WWN", "udev's database (blkid)"},
                {"PARTFLAGS PARTLABEL PARTTYPE PARTTYPENAME PARTUUID PTTYPE PTUUID",
                 "udev's database (blkid)"},
                {"OWNER GROUP MODE", "the device node"},
};

const char *list_column_not_offered(const char *name, size_t len)
{
        for (size_t i = 0; i < ELEMENTSOF(columns_not_offered); i++)
                for (const char *p = columns_not_offered[i].names; *p;) {
                        size_t n = strcspn(p, " ");

                        if (n == len && strncasecmp(p, name, len) == 0)
                                return columns_not_offered[i].source;
                        p += n + (p[n] == ' ');
                }
        return NULL;
}

void list_row_init(ListRow *row, json_object *model, const char *path, const char *parent)
{
        json_object *obj = model_object(model, path);
        bool partition = model_has_iface(obj, BLKMODEL_IFACE_PARTITION);
        json_object *disk = obj;

        if (partition) {
                const char *slash = strrchr(path, '/');
                _cleanup_(freep) char *p = slash ? strndup(path, (size_t) (slash - path)) : NULL;

                disk = model_object(model, p);
        }
        *row = (ListRow){
                        .model = model,
                        .path = path,
                        .obj = obj,
                        .partition = partition,
                        .disk = disk,
                        .queue = model_object(model,
                                              model_string(disk, BLKMODEL_IFACE_DISK, BLKMODEL_PROP_QUEUE)),
                        .device = model_object(model, model_string(disk, BLKMODEL_IFACE_DISK,
                                                                   BLKMODEL_PROP_DEVICE)),
                        .parent = parent,
        };
}

static void cell_done(Cell *c)
{
        c->s = mfree(c->s);
}

int list_cell_text(const ListColumn *c, const ListRow *row, bool bytes, char **ret)
{
        _cleanup_(cell_done) Cell cell = {};
        char *s = NULL;
        int r;

        r = c->get(row, c, &cell);
        if (r < 0)
                return r;
        switch (cell.kind) {
        case CELL_NONE:
                s = strdup("");
                break;
        case CELL_STRING:
                /* lsblk's own MAJ:MIN format, so that the colons line up as in lsblk. */
                if (c->get == get_majmin) {
                        unsigned ma = 0, mi = 0;

                        if (sscanf(cell.s, "%u:%u", &ma, &mi) == 2 && asprintf(&s, "%3u:%-3u", ma, mi) < 0)
                                return -ENOMEM;
                }
                s = s ?: TAKE_PTR(cell.s);
                break;
        case CELL_BOOL:
                s = strdup(cell.b ? "1" : "0");
                break;
        case CELL_NUMBER:
                if (c->type == COLUMN_SIZE && !bytes)
                        s = output_size_human(cell.u);
                else if (asprintf(&s, "%" PRIu64, cell.u) < 0)
                        s = NULL;
                break;
        }
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int list_cell_json(const ListColumn *c, const ListRow *row, bool bytes, json_object **ret)
{
        _cleanup_(cell_done) Cell cell = {};
        _cleanup_(freep) char *human = NULL;
        json_object *j = NULL;
        int r;

        r = c->get(row, c, &cell);
        if (r < 0)
                return r;
        switch (cell.kind) {
        case CELL_NONE:
                *ret = NULL;
                return 0;
        case CELL_STRING:
                j = json_object_new_string(cell.s);
                break;
        case CELL_BOOL:
                j = json_object_new_boolean(cell.b);
                break;
        case CELL_NUMBER:
                /* lsblk -J: sizes as text unless --bytes. */
                if (c->type == COLUMN_SIZE && !bytes) {
                        human = output_size_human(cell.u);
                        j = human ? json_object_new_string(human) : NULL;
                } else
                        j = json_object_new_uint64(cell.u);
                break;
        }
        if (!j)
                return -ENOMEM;
        *ret = j;
        return 0;
}

bool list_filter(const char *iface, const char *name, void *userdata)
{
        /* Of Kobject, what places a row; of the kinds, every typed property (a few per object) and
         * the raw attributes the columns read.  Uevent, a table of its own per object, is not read. */
        if (streq(iface, BLKMODEL_IFACE_KOBJECT))
                return streq(name, BLKMODEL_PROP_NAME) || streq(name, BLKMODEL_PROP_DEVPATH) ||
                       streq(name, BLKMODEL_PROP_PARENT);
        if (interface_find_property(iface, name))
                return true;
        if (streq(iface, BLKMODEL_IFACE_DISK) || streq(iface, BLKMODEL_IFACE_PARTITION) ||
            streq(iface, BLKMODEL_IFACE_QUEUE) || streq(iface, BLKMODEL_IFACE_DEVICE))
                for (size_t i = 0; i < list_n_columns; i++)
                        if (list_columns[i].attr && streq(list_columns[i].attr, name))
                                return true;
        if (streq(iface, BLKMODEL_IFACE_QUEUE))
                return streq(name, "scheduler");
        if (streq(iface, BLKMODEL_IFACE_DEVICE))
                return streq(name, "type") || streq(name, "state");
        if (streq(iface, GROUP_DM))
                return streq(name, "uuid") || streq(name, "name") || streq(name, "suspended");
        if (streq(iface, GROUP_MD))
                return streq(name, "level");
        if (streq(iface, BLKMODEL_IFACE_GROUP_PREFIX "loop"))
                return streq(name, "backing_file");
        return false;
}
