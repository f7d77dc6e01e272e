/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <malloc.h>

#include "base/log.h"
#include "blkmodel/names.h"
#include "bus/bus-internal.h"
#include "bus/errors.h"

size_t bus_object_size_estimate(const Kobject *k)
{
        /* What bus_append_object() appends, measured from above on kernel-shaped trees (1.1-1.3x the
         * real size): D-Bus pads dict entries to 8 bytes and prefixes strings with their length. */
        size_t n = 16 + strlen(k->path), values = live_object_value_bytes(k);
        Iface iface;

        n += 6 * 24 + strlen(k->name) + strlen(k->devpath) + (k->parent ? strlen(k->parent->path) : 1) +
             (k->kset ? strlen(k->kset->path) : 1) + 16;
        /* The values at the last reading; before one, the uevent file's few short lines (a PCI
         * device's, with DRIVER, PCI_ID, MODALIAS …, are the longest). */
        if (values > 0)
                n += values;
        else if (ktype_is_block_device(k->ktype))
                n += 224;
        else if (k->ktype->id == KTYPE_DEVICE)
                n += 384;
        for (size_t i = 0; i < kobject_n_ifaces(k); i++) {
                kobject_iface(k, i, &iface);
                n += 16 + strlen(iface.name);
                for (const PropertyInfo *p = iface.properties; p->name; p++)
                        n += 24 + strlen(p->name);
        }
        for (Kobject *c = k->first_child; c; c = c->next_sibling)
                n += 8 + strlen(c->path); /* Partitions, Queue, Elevator */
        for (Kobject *c = k->first_member; c; c = c->next_member)
                n += 8 + strlen(c->path); /* Members */
        if (ktype_is_block_device(k->ktype))
                n += 64; /* Holders, Slaves: mostly empty, a few paths on stacked devices */
        if (k->ktype->id == KTYPE_QUEUE)
                n += 128; /* Schedulers */
        return n;
}

typedef int (*ObjectFunc)(Publisher *p, Kobject *k, void *userdata);

/* Calls f for every object below top (NULL: every object), parents before children. */
static int foreach_below(Publisher *p, Kobject *top, ObjectFunc f, void *userdata)
{
        Kobject *k;
        size_t i = 0;
        int r;

        if (!top) {
                while ((k = hashmap_iterate(&p->model->by_path, &i, NULL)))
                        if ((r = f(p, k, userdata)) < 0)
                                return r;
                return 0;
        }
        for (k = top->first_child; k; k = k->next_sibling) {
                if ((r = f(p, k, userdata)) < 0)
                        return r;
                if ((r = foreach_below(p, k, f, userdata)) < 0)
                        return r;
        }
        return 0;
}

static int add_estimate(Publisher *p, Kobject *k, void *userdata)
{
        *(size_t *) userdata += bus_object_size_estimate(k);
        return 0;
}

static int append_managed_object(Publisher *p, Kobject *k, void *userdata)
{
        sd_bus_message *reply = userdata;
        int r;

        r = sd_bus_message_open_container(reply, 'e', "oa{sa{sv}}");
        if (r >= 0)
                r = sd_bus_message_append(reply, "o", k->path);
        if (r >= 0)
                r = bus_append_object(p, reply, k);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

/*
 * The root answers for every object; a kset for the objects below it, so that a model too large
 * for one message (10,000 disks with their partitions, queues and hardware) can still be read
 * whole in two calls, on /org/blkmodel1/block and /org/blkmodel1/devices.
 */
int bus_method_get_managed_objects(Publisher *p, sd_bus_message *msg, Kobject *top, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *where = top ? top->path : BLKMODEL_ROOT_PATH;
        /* D-Bus caps an array at 64 MiB, and dbus-daemon's system bus a message at 32 MiB by default; a bus
         * drops a connection that sends more.  Refuse instead. */
        size_t estimate = 64, limit = MIN(p->message_max, BUS_ARRAY_MAX);
        int r;

        (void) foreach_below(p, top, add_estimate, &estimate);
        if (estimate > limit) {
                log_warning("GetManagedObjects on %s refused: about %zu MiB, more than one message may carry (%zu MiB).",
                            where, estimate >> 20, limit >> 20);
                return bus_error_limits_exceeded(error,
                                                 "The objects below %s are about %zu MiB, more than one message may "
                                                 "carry (%zu MiB): call GetManagedObjects on %s and on %s for their "
                                                 "parts.",
                                                 where, estimate >> 20, limit >> 20, p->model->block_kset->path,
                                                 p->model->devices_kset->path);
        }
        log_debug("GetManagedObjects on %s: at most %zu bytes.", where, estimate);

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "{oa{sa{sv}}}");
        if (r >= 0)
                r = foreach_below(p, top, append_managed_object, reply);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        r = sd_bus_send(NULL, reply, NULL);
        /* Building it scattered thousands of small allocations over the heap: give the pages back. */
        reply = sd_bus_message_unref(reply);
        (void) malloc_trim(0);
        return r;
}
