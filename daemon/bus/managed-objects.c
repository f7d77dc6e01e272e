/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <malloc.h>

#include "base/log.h"
#include "blkmodel/names.h"
#include "bus/bus-internal.h"
#include "bus/errors.h"

/* Values guessed for an object never read yet: most attribute values are a few characters. */
#define GUESSED_VALUE_BYTES 16
#define GUESSED_UEVENT_BYTES 256

static size_t entry_estimate(const char *name, const char *signature)
{
        return 8 + 4 + strlen(name) + 1 + 1 + strlen(signature) + 1;
}

/* About what bus_append_object() appends for k, without reading anything. */
static size_t bus_object_size_estimate(const Kobject *k)
{
        size_t n = 16 + strlen(k->path), values = live_object_value_bytes(k), guessed = 0;
        Iface iface;

        for (size_t i = 0; i < kobject_n_ifaces(k); i++) {
                kobject_iface(k, i, &iface);
                n += 16 + strlen(iface.name);
                for (const PropertyInfo *p = iface.properties; p->name; p++)
                        n += entry_estimate(p->name, p->signature) + 8;
                for (size_t j = 0; iface.attrs && j < iface.attrs->n_attrs; j++) {
                        n += entry_estimate(iface.attrs->attrs[j].member, "s") + 8;
                        guessed += GUESSED_VALUE_BYTES;
                }
        }
        /* The values at the last reading; before one, a guess. */
        if (values > 0)
                n += values;
        else
                n += guessed + (k->ktype->has_uevent ? GUESSED_UEVENT_BYTES : 0);
        n += strlen(k->name) + strlen(k->devpath) + (k->parent ? strlen(k->parent->path) : 1) +
             (k->kset ? strlen(k->kset->path) : 1);
        for (Kobject *c = k->first_child; c; c = c->next_sibling)
                n += 8 + strlen(c->path); /* Partitions, Queue, Elevator */
        for (Kobject *c = k->first_member; c; c = c->next_member)
                n += 8 + strlen(c->path); /* Members */
        return n;
}

bool bus_object_is_manager(const Kobject *k)
{
        return k->ktype->id == KTYPE_KSET || k->ktype->id == KTYPE_DISK || k->ktype->id == KTYPE_DEVICE;
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

typedef struct Reply {
        sd_bus_message *m;
        size_t bound, limit;
        bool privileged;
} Reply;

static int append_managed_object(Publisher *p, Kobject *k, void *userdata)
{
        Reply *reply = userdata;
        int r;

        r = sd_bus_message_open_container(reply->m, 'e', "oa{sa{sv}}");
        if (r >= 0)
                r = sd_bus_message_append(reply->m, "o", k->path);
        reply->bound += 8 + 4 + strlen(k->path) + 1 + 8;
        if (r >= 0)
                r = bus_append_object(p, reply->m, k, reply->privileged, &reply->bound);
        if (r >= 0)
                r = sd_bus_message_close_container(reply->m);
        /* The estimate said it would fit, the values read say otherwise: stop before the bus drops us. */
        if (r >= 0 && reply->bound > reply->limit)
                return -E2BIG;
        return r;
}

static int append_manager(Publisher *p, Reply *reply)
{
        int r;

        r = sd_bus_message_open_container(reply->m, 'e', "oa{sa{sv}}");
        if (r >= 0)
                r = sd_bus_message_append(reply->m, "o", BLKMODEL_MANAGER_PATH);
        if (r >= 0)
                r = bus_manager_append_object(p, reply->m, &reply->bound);
        if (r >= 0)
                r = sd_bus_message_close_container(reply->m);
        return r;
}

static int refuse(Publisher *p, Kobject *top, size_t bytes, size_t limit, sd_bus_error *error)
{
        const char *where = top ? top->path : BLKMODEL_ROOT_PATH;

        log_warning("GetManagedObjects on %s refused: about %zu MiB, more than one message may carry (%zu "
                    "MiB).",
                    where, bytes >> 20, limit >> 20);
        if (!top)
                return bus_error_limits_exceeded(
                                error,
                                "The objects below %s are about %zu MiB, more than one message "
                                "may carry (%zu MiB): call GetManagedObjects on %s and on %s "
                                "for their parts.",
                                where, bytes >> 20, limit >> 20, p->model->block_kset->path,
                                p->model->devices_kset->path);
        return bus_error_limits_exceeded(error,
                                         "The objects below %s are about %zu MiB, more than one message may "
                                         "carry (%zu MiB): call GetManagedObjects on each of its children "
                                         "(Introspect lists them) for their parts.",
                                         where, bytes >> 20, limit >> 20);
}

/*
 * The root answers for every object; a kset, a disk or a device for the objects below it, so that a
 * model too large for one message (10,000 disks with every attribute) can still be read whole, in
 * parts.
 */
int bus_method_get_managed_objects(Publisher *p, sd_bus_message *msg, Kobject *top, bool privileged,
                                   sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        /* D-Bus caps an array at 64 MiB, and dbus-daemon's system bus a message at 32 MiB by default; a bus
         * drops a connection that sends more.  Refuse instead. */
        Reply reply = {.bound = 64, .limit = MIN(p->message_max, BUS_ARRAY_MAX) - 4096, .privileged = privileged};
        size_t estimate = 64;
        int r;

        (void) foreach_below(p, top, add_estimate, &estimate);
        if (estimate > reply.limit)
                return refuse(p, top, estimate, reply.limit, error);
        log_debug("GetManagedObjects on %s: about %zu bytes.", top ? top->path : BLKMODEL_ROOT_PATH,
                  estimate);

        r = sd_bus_message_new_method_return(msg, &m);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "{oa{sa{sv}}}");
        reply.m = m;
        /* The root's managed objects: the Manager, then every kobject. */
        if (r >= 0 && !top)
                r = append_manager(p, &reply);
        if (r >= 0)
                r = foreach_below(p, top, append_managed_object, &reply);
        if (r == -E2BIG)
                r = refuse(p, top, reply.bound, reply.limit, error);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_send(NULL, m, NULL);
        /* Building it scattered thousands of small allocations over the heap: give the pages back. */
        m = sd_bus_message_unref(m);
        (void) malloc_trim(0);
        return r;
}
