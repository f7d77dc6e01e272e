/* SPDX-License-Identifier: LGPL-2.1-or-later */

/*
 * The values of list's columns, each computed from the model the way util-linux's lsblk computes it
 * from sysfs (misc-utils/lsblk.c, lib/sysfs.c), so that the two tools agree cell for cell.
 */

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <blkmodel/names.h>

#include "list-cells.h"
#include "model.h"

#include "common/util.h"

#define GROUP_DM BLKMODEL_IFACE_GROUP_PREFIX "dm"
#define GROUP_MD BLKMODEL_IFACE_GROUP_PREFIX "md"

static const char *row_iface(const ListRow *row)
{
        return row->partition ? BLKMODEL_IFACE_PARTITION : BLKMODEL_IFACE_DISK;
}

static int cell_string(const char *s, Cell *ret)
{
        if (!s) {
                *ret = (Cell){CELL_NONE};
                return 0;
        }
        *ret = (Cell){CELL_STRING, .s = strdup(s)};
        return ret->s ? 0 : -ENOMEM;
}

static int cell_number(uint64_t u, Cell *ret)
{
        *ret = (Cell){CELL_NUMBER, .u = u};
        return 0;
}

static int cell_bool(bool b, Cell *ret)
{
        *ret = (Cell){CELL_BOOL, .b = b};
        return 0;
}

static bool row_has_slaves(const ListRow *row)
{
        json_object *slaves = model_prop(row->obj, BLKMODEL_IFACE_DISK, BLKMODEL_PROP_SLAVES);

        return slaves && json_object_array_length(slaves) > 0;
}

/* A one-attribute column: the file's text, read as the column's type. */
int get_attr(const ListRow *row, const ListColumn *c, Cell *ret)
{
        const char *v = NULL;
        uint64_t u;

        switch (c->where) {
        case FROM_SELF:
                v = model_string(row->obj, row_iface(row), c->attr);
                break;
        case FROM_QUEUE:
                v = model_string(row->queue, BLKMODEL_IFACE_QUEUE, c->attr);
                break;
        case FROM_DEVICE:
                /* lsblk: whole disks that sit on no other device (a multipath map has no model). */
                if (!row->partition && !row_has_slaves(row))
                        v = model_string(row->device, BLKMODEL_IFACE_DEVICE, c->attr);
                break;
        }
        if (c->type == COLUMN_STRING)
                return cell_string(v, ret);
        if (parse_u64(v, &u) < 0) {
                *ret = (Cell){CELL_NONE};
                return 0;
        }
        return c->type == COLUMN_BOOL ? cell_bool(u != 0, ret) : cell_number(u, ret);
}

/* lsblk reads DISC-ALN and DISC-ZERO only where the queue discards at all, else 0. */
int get_discard_attr(const ListRow *row, const ListColumn *c, Cell *ret)
{
        uint64_t gran = 0;

        if (parse_u64(model_string(row->queue, BLKMODEL_IFACE_QUEUE, "discard_granularity"), &gran) < 0 ||
            gran == 0)
                return c->type == COLUMN_BOOL ? cell_bool(false, ret) : cell_number(0, ret);
        return get_attr_or_zero(row, c, ret);
}

/* The zone limits lsblk reads as 0 when the kernel has no such file. */
int get_attr_or_zero(const ListRow *row, const ListColumn *c, Cell *ret)
{
        int r = get_attr(row, c, ret);

        if (r >= 0 && ret->kind == CELL_NONE)
                return cell_number(0, ret);
        return r;
}

/* The kernel's name with '/' for '!' (cciss!c0d0 is /dev/cciss/c0d0), as lsblk shows it. */
static char *row_kname(const ListRow *row, const char *path)
{
        return devnode_name_of(model_name(row->model, path));
}

int get_kname(const ListRow *row, const ListColumn *c, Cell *ret)
{
        *ret = (Cell){CELL_STRING, .s = row_kname(row, row->path)};
        return ret->s ? 0 : -ENOMEM;
}

int get_name(const ListRow *row, const ListColumn *c, Cell *ret)
{
        const char *dm_name = model_string(row->obj, GROUP_DM, "name");

        /* A device-mapper device is known by its mapper name. */
        if (!isempty(dm_name))
                return cell_string(dm_name, ret);
        return get_kname(row, c, ret);
}

int get_path(const ListRow *row, const ListColumn *c, Cell *ret)
{
        _cleanup_(freep) char *kname = row_kname(row, row->path);
        const char *dm_name = model_string(row->obj, GROUP_DM, "name");
        char *s = NULL;
        int r;

        if (!kname)
                return -ENOMEM;
        if (!isempty(dm_name))
                r = asprintf(&s, "/dev/mapper/%s", dm_name);
        else
                r = asprintf(&s, "/dev/%s", kname);
        if (r < 0)
                return -ENOMEM;
        *ret = (Cell){CELL_STRING, .s = s};
        return 0;
}

int get_majmin(const ListRow *row, const ListColumn *c, Cell *ret)
{
        char *s = NULL;

        if (asprintf(&s, "%" PRIu64 ":%" PRIu64, model_u64(row->obj, row_iface(row), BLKMODEL_PROP_MAJOR),
                     model_u64(row->obj, row_iface(row), BLKMODEL_PROP_MINOR)) < 0)
                return -ENOMEM;
        *ret = (Cell){CELL_STRING, .s = s};
        return 0;
}

uint64_t list_row_size(const ListRow *row)
{
        return model_u64(row->obj, row_iface(row), BLKMODEL_PROP_SIZE);
}

int get_size(const ListRow *row, const ListColumn *c, Cell *ret)
{
        return cell_number(list_row_size(row), ret);
}

int get_ro(const ListRow *row, const ListColumn *c, Cell *ret)
{
        return cell_bool(model_bool(row->obj, row_iface(row), BLKMODEL_PROP_READ_ONLY), ret);
}

int get_rm(const ListRow *row, const ListColumn *c, Cell *ret)
{
        return cell_bool(model_bool(row->disk, BLKMODEL_IFACE_DISK, BLKMODEL_PROP_REMOVABLE), ret);
}

/* Calls f on each Device object up the disk's hardware chain, nearest first, until it returns true. */
static bool row_walk_devices(const ListRow *row, bool (*f)(json_object *dev, void *userdata), void *userdata)
{
        json_object *dev = row->device;

        /* A loop in a confused model must not hang us. */
        for (unsigned n = 0; dev && n < 256; n++) {
                const char *parent;

                if (!model_has_iface(dev, BLKMODEL_IFACE_DEVICE))
                        return false;
                if (f(dev, userdata))
                        return true;
                parent = model_string(dev, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_PARENT);
                dev = model_object(row->model, parent);
        }
        return false;
}

static bool device_is_hotplug_bus(json_object *dev, void *userdata)
{
        static const char *const buses[] = {"usb", "ieee1394", "pcmcia", "mmc", "ccw"};
        const char *s = model_string(dev, BLKMODEL_IFACE_DEVICE, BLKMODEL_PROP_SUBSYSTEM);

        for (size_t i = 0; s && i < ELEMENTSOF(buses); i++)
                if (streq(s, buses[i]))
                        return true;
        return false;
}

/* lsblk: removable media, or anything on a bus that can be unplugged. */
int get_hotplug(const ListRow *row, const ListColumn *c, Cell *ret)
{
        return cell_bool(model_bool(row->disk, BLKMODEL_IFACE_DISK, BLKMODEL_PROP_REMOVABLE) ||
                                         row_walk_devices(row, device_is_hotplug_bus, NULL),
                         ret);
}

/* lib/blkdev.c: blkdev_scsi_type_to_name() */
static const char *scsi_type_to_name(uint64_t type)
{
        static const char *const names[] = {
                        [0x00] = "disk",    [0x01] = "tape", [0x02] = "printer", [0x03] = "processor",
                        [0x04] = "worm",    [0x05] = "rom",  [0x06] = "scanner", [0x07] = "mo-disk",
                        [0x08] = "changer", [0x09] = "comm", [0x0c] = "raid",    [0x0d] = "enclosure",
                        [0x0e] = "rbc",     [0x11] = "osd",  [0x7f] = "no-lun",
        };

        return type < ELEMENTSOF(names) ? names[type] : NULL;
}

/* lsblk's get_type(): dm by its uuid's prefix, md by its level, SCSI by the device's type. */
int get_type(const ListRow *row, const ListColumn *c, Cell *ret)
{
        const char *name = model_name(row->model, row->path);
        char *t = NULL;

        if (row->partition)
                t = strdup("part");
        else if (startswith(name, "dm-")) {
                const char *uuid = model_string(row->obj, GROUP_DM, "uuid");

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
                const char *level = model_string(row->obj, GROUP_MD, "level");

                t = strdup(isempty(level) ? "md" : level);
        } else {
                const char *n = NULL;
                uint64_t type;

                if (parse_u64(model_string(row->device, BLKMODEL_IFACE_DEVICE, "type"), &type) >= 0)
                        n = scsi_type_to_name(type);
                t = strdup(n ?: "disk");
        }
        if (!t)
                return -ENOMEM;
        for (char *p = t; *p; p++)
                *p = (char) tolower((unsigned char) *p);
        *ret = (Cell){CELL_STRING, .s = t};
        return 0;
}

/* The bracketed name of queue/scheduler; nothing for bio-based devices (dm, md), whose file says
 * "none" unbracketed. */
int get_sched(const ListRow *row, const ListColumn *c, Cell *ret)
{
        const char *s = model_string(row->queue, BLKMODEL_IFACE_QUEUE, "scheduler");
        const char *open, *close;

        if (!s || !(open = strchr(s, '[')) || !(close = strchr(open, ']'))) {
                *ret = (Cell){CELL_NONE};
                return 0;
        }
        *ret = (Cell){CELL_STRING, .s = strndup(open + 1, (size_t) (close - open - 1))};
        return ret->s ? 0 : -ENOMEM;
}

int get_pkname(const ListRow *row, const ListColumn *c, Cell *ret)
{
        _cleanup_(freep) char *disk = NULL;
        const char *parent = row->parent;

        /* A partition listed by itself still has its disk. */
        if (!parent && row->partition) {
                const char *slash = strrchr(row->path, '/');

                disk = slash ? strndup(row->path, (size_t) (slash - row->path)) : NULL;
                parent = disk;
        }
        if (!parent) {
                *ret = (Cell){CELL_NONE};
                return 0;
        }
        *ret = (Cell){CELL_STRING, .s = row_kname(row, parent)};
        return ret->s ? 0 : -ENOMEM;
}

/* A SCSI device is named by its H:C:T:L. */
static const char *row_hctl(const ListRow *row)
{
        const char *s = model_string(row->device, BLKMODEL_IFACE_DEVICE, BLKMODEL_PROP_SUBSYSTEM);

        if (!streq_ptr(s, "scsi"))
                return NULL;
        return model_string(row->device, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_NAME);
}

int get_hctl(const ListRow *row, const ListColumn *c, Cell *ret)
{
        return cell_string(row->partition ? NULL : row_hctl(row), ret);
}

static bool device_is_usb(json_object *dev, void *userdata)
{
        return streq_ptr(model_string(dev, BLKMODEL_IFACE_DEVICE, BLKMODEL_PROP_SUBSYSTEM), "usb");
}

/* The driver of the nearest PCI device up the chain: a libata host's driver is its SCSI proc_name. */
static bool device_pci_driver(json_object *dev, void *userdata)
{
        const char **ret = userdata;

        if (!streq_ptr(model_string(dev, BLKMODEL_IFACE_DEVICE, BLKMODEL_PROP_SUBSYSTEM), "pci"))
                return false;
        *ret = model_string(dev, BLKMODEL_IFACE_DEVICE, BLKMODEL_PROP_DRIVER);
        return true;
}

/*
 * lsblk's get_transport() (util-linux 2.38), from the device chain: a SCSI disk by its host (FC, SAS,
 * iSCSI, FireWire, USB, then libata's sata/ata by the host driver's name); else an NVMe namespace by
 * its name.  A partition has no device link of its own, so only the name rule applies to it.
 */
static const char *row_transport(const ListRow *row)
{
        const char *devpath = model_string(row->device, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_DEVPATH);
        const char *driver = NULL;

        if (!row->partition && row_hctl(row)) {
                if (devpath && strstr(devpath, "/rport-"))
                        return "fc";
                if (devpath && strstr(devpath, "/end_device-"))
                        return "sas";
                if (model_string(row->device, BLKMODEL_IFACE_DEVICE, "ieee1394_id"))
                        return "sbp";
                if (devpath && strstr(devpath, "/session"))
                        return "iscsi";
                if (row_walk_devices(row, device_is_usb, NULL))
                        return "usb";
                if (row_walk_devices(row, device_pci_driver, &driver) && driver) {
                        if (startswith(driver, "ahci") || startswith(driver, "sata"))
                                return "sata";
                        if (strstr(driver, "ata"))
                                return "ata";
                }
                return NULL;
        }
        return startswith(model_name(row->model, row->path), "nvme") ? "nvme" : NULL;
}

int get_tran(const ListRow *row, const ListColumn *c, Cell *ret)
{
        return cell_string(row_transport(row), ret);
}

typedef struct Chain {
        char *s;
        int error;
} Chain;

static bool chain_add(json_object *dev, void *userdata)
{
        const char *sub = model_string(dev, BLKMODEL_IFACE_DEVICE, BLKMODEL_PROP_SUBSYSTEM);
        Chain *ch = userdata;
        size_t n = strlen(sub ?: "");
        char *s;

        /* De-duplicated: scsi appears once for the LUN, its target and its host. */
        if (n == 0)
                return false;
        for (const char *p = ch->s; (p = strstr(p, sub)); p += n)
                if ((p == ch->s || p[-1] == ':') && (p[n] == ':' || p[n] == '\0'))
                        return false;
        if (asprintf(&s, "%s:%s", ch->s, sub) < 0) {
                ch->error = -ENOMEM;
                return true;
        }
        free(ch->s);
        ch->s = s;
        return false;
}

int get_subsystems(const ListRow *row, const ListColumn *c, Cell *ret)
{
        Chain ch = {.s = strdup("block")};

        if (!ch.s)
                return -ENOMEM;
        (void) row_walk_devices(row, chain_add, &ch);
        if (ch.error < 0) {
                free(ch.s);
                return ch.error;
        }
        *ret = (Cell){CELL_STRING, .s = ch.s};
        return 0;
}

int get_state(const ListRow *row, const ListColumn *c, Cell *ret)
{
        const char *suspended = model_string(row->obj, GROUP_DM, "suspended");

        if (row->partition)
                return cell_string(NULL, ret);
        if (suspended)
                return cell_string(streq(suspended, "1") ? "suspended" : "running", ret);
        return cell_string(model_string(row->device, BLKMODEL_IFACE_DEVICE, "state"), ret);
}

/* In 512-byte sectors, as the partition's start file has it. */
int get_start(const ListRow *row, const ListColumn *c, Cell *ret)
{
        if (!row->partition)
                return cell_string(NULL, ret);
        return get_attr(row, c, ret);
}

int get_zone_sz(const ListRow *row, const ListColumn *c, Cell *ret)
{
        int r = get_attr(row, c, ret);

        if (r >= 0 && ret->kind == CELL_NUMBER)
                ret->u <<= 9;
        return r;
}

int get_object(const ListRow *row, const ListColumn *c, Cell *ret)
{
        return cell_string(row->path, ret);
}
