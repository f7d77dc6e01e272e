/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <blkmodel/names.h>

#include "bus-json.h"
#include "bus-model.h"

#include "common/time-util.h"

int bus_resolve(sd_bus *bus, const char *spec, char **ret_path, sd_bus_error *error)
{
        sd_bus_message *reply = NULL;
        const char *path;
        char *copy;
        int r;

        /* The root object is no kobject, so Resolve need not know it. */
        if (strcmp(spec, BLKMODEL_ROOT_PATH) == 0) {
                copy = strdup(spec);
                if (!copy)
                        return -ENOMEM;
                *ret_path = copy;
                return 0;
        }

        r = sd_bus_call_method(bus, BLKMODEL_BUS_NAME, BLKMODEL_ROOT_PATH, BLKMODEL_IFACE_MANAGER,
                               BLKMODEL_METHOD_RESOLVE, error, &reply, "s", spec);
        if (r < 0)
                return r;

        r = sd_bus_message_read(reply, "o", &path);
        if (r >= 0) {
                copy = strdup(path);
                r = copy ? 0 : -ENOMEM;
        }
        sd_bus_message_unref(reply);
        if (r < 0)
                return r;

        *ret_path = copy;
        return 0;
}

/*
 * What each level of a{oa{sa{sv}}} hands down to the next: where this level's entries go, and
 * the caller's property filter, applied only at the innermost a{sv}.
 */
typedef struct ModelReader {
        json_object *into;
        BusPropertyFilter filter;
        void *userdata;
        const char *iface; /* while reading a{sv}: the interface the properties belong to */
} ModelReader;

/* A new empty object at parent[key]; NULL when out of memory. */
static json_object *json_add_object(json_object *parent, const char *key)
{
        json_object *child = json_object_new_object();

        if (!child || json_object_object_add(parent, key, child) < 0) {
                json_object_put(child);
                return NULL;
        }
        return child;
}

/* One {sv}: kept in into if the filter wants it, skipped unread otherwise. */
static int read_property_entry(sd_bus_message *m, void *userdata)
{
        ModelReader *mr = userdata;
        json_object *value = NULL;
        const char *name;
        int r;

        r = sd_bus_message_read_basic(m, SD_BUS_TYPE_STRING, &name);
        if (r < 0)
                return r;

        if (mr->filter && !mr->filter(mr->iface, name, mr->userdata))
                return sd_bus_message_skip(m, "v");

        r = bus_message_read_json(m, &value);
        if (r < 0)
                return r;
        if (json_object_object_add(mr->into, name, value) < 0) {
                json_object_put(value);
                return -ENOMEM;
        }
        return 0;
}

/* Reads a{sv} into obj, keeping the properties the filter wants. */
static int read_properties(sd_bus_message *m, const char *iface, BusPropertyFilter filter, void *userdata,
                           json_object *obj)
{
        ModelReader mr = {.into = obj, .filter = filter, .userdata = userdata, .iface = iface};

        return bus_message_read_dict(m, "{sv}", read_property_entry, &mr);
}

/* One {sa{sv}}: an interface and its properties, into into[iface]. */
static int read_interface_entry(sd_bus_message *m, void *userdata)
{
        ModelReader *mr = userdata;
        json_object *props;
        const char *iface;
        int r;

        r = sd_bus_message_read_basic(m, SD_BUS_TYPE_STRING, &iface);
        if (r < 0)
                return r;

        props = json_add_object(mr->into, iface);
        if (!props)
                return -ENOMEM;

        return read_properties(m, iface, mr->filter, mr->userdata, props);
}

/* One {oa{sa{sv}}}: an object and its interfaces, into into[path]. */
static int read_object_entry(sd_bus_message *m, void *userdata)
{
        ModelReader *mr = userdata, ifaces = *mr;
        const char *path;
        int r;

        r = sd_bus_message_read_basic(m, SD_BUS_TYPE_OBJECT_PATH, &path);
        if (r < 0)
                return r;

        ifaces.into = json_add_object(mr->into, path);
        if (!ifaces.into)
                return -ENOMEM;

        return bus_message_read_dict(m, "{sa{sv}}", read_interface_entry, &ifaces);
}

int bus_get_managed_objects(sd_bus *bus, BusPropertyFilter filter, void *userdata, json_object **ret,
                            sd_bus_error *error)
{
        sd_bus_message *reply = NULL;
        ModelReader mr = {.filter = filter, .userdata = userdata};
        int r;

        r = sd_bus_call_method(bus, BLKMODEL_BUS_NAME, BLKMODEL_ROOT_PATH,
                               "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", error, &reply,
                               NULL);
        if (r < 0)
                return r;

        mr.into = json_object_new_object();
        if (!mr.into)
                r = -ENOMEM;
        else
                r = bus_message_read_dict(reply, "{oa{sa{sv}}}", read_object_entry, &mr);
        sd_bus_message_unref(reply);
        if (r < 0) {
                json_object_put(mr.into);
                return r;
        }

        *ret = mr.into;
        return 0;
}

int bus_get_all(sd_bus *bus, const char *path, const char *iface, json_object **ret, sd_bus_error *error)
{
        sd_bus_message *reply = NULL;
        json_object *props;
        int r;

        r = sd_bus_call_method(bus, BLKMODEL_BUS_NAME, path, "org.freedesktop.DBus.Properties", "GetAll",
                               error, &reply, "s", iface);
        if (r < 0)
                return r;

        props = json_object_new_object();
        if (!props) {
                sd_bus_message_unref(reply);
                return -ENOMEM;
        }

        r = read_properties(reply, iface, NULL, NULL, props);
        sd_bus_message_unref(reply);
        if (r < 0) {
                json_object_put(props);
                return r;
        }

        *ret = props;
        return 0;
}

/* Calls in flight at once: enough to hide the round trips, few enough for any bus's limits. */
#define FETCH_IN_FLIGHT 128

typedef struct Fetch {
        json_object *model;
        const BusPropRequest *req;
        size_t in_flight;
        int error; /* the first failure other than a vanished object */
        sd_bus_error bus_error;
} Fetch;

typedef struct FetchCall {
        Fetch *fetch;
        const BusPropRequest *req;
} FetchCall;

/* model[path][iface], created if missing. */
static json_object *model_iface(json_object *model, const char *path, const char *iface)
{
        json_object *obj, *props;

        if (!json_object_object_get_ex(model, path, &obj)) {
                obj = json_object_new_object();
                if (!obj || json_object_object_add(model, path, obj) < 0) {
                        json_object_put(obj);
                        return NULL;
                }
        }
        if (!json_object_object_get_ex(obj, iface, &props)) {
                props = json_object_new_object();
                if (!props || json_object_object_add(obj, iface, props) < 0) {
                        json_object_put(props);
                        return NULL;
                }
        }
        return props;
}

static int on_fetch_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
        FetchCall *c = userdata;
        Fetch *f = c->fetch;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        json_object *props, *value = NULL;
        int r = 0;

        f->in_flight--;
        if (e) {
                /* The object went away between GetManagedObjects and now, or has no such attribute here
                 * (only SCSI devices have a type): it is simply not there. */
                if (!sd_bus_error_has_names(e, SD_BUS_ERROR_UNKNOWN_OBJECT, SD_BUS_ERROR_UNKNOWN_PROPERTY) &&
                    f->error == 0) {
                        f->error = -sd_bus_error_get_errno(e) ?: -EIO;
                        sd_bus_error_copy(&f->bus_error, e);
                }
                goto done;
        }
        props = model_iface(f->model, c->req->path, c->req->iface);
        if (!props)
                r = -ENOMEM;
        else if (!c->req->prop)
                r = read_properties(reply, c->req->iface, NULL, NULL, props);
        else {
                r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_VARIANT, NULL);
                if (r >= 0)
                        r = bus_message_read_json(reply, &value);
                if (r >= 0 && json_object_object_add(props, c->req->prop, value) < 0) {
                        json_object_put(value);
                        r = -ENOMEM;
                }
        }
        if (r < 0 && f->error == 0)
                f->error = r;
done:
        free(c);
        return 0;
}

int bus_fetch_properties(sd_bus *bus, json_object *model, const BusPropRequest *req, size_t n,
                         sd_bus_error *error)
{
        Fetch f = {.model = model, .bus_error = SD_BUS_ERROR_NULL};
        size_t sent = 0;
        int r = 0;

        while ((sent < n || f.in_flight > 0) && f.error == 0) {
                while (sent < n && f.in_flight < FETCH_IN_FLIGHT) {
                        FetchCall *c = malloc(sizeof(FetchCall));

                        if (!c) {
                                r = -ENOMEM;
                                goto out;
                        }
                        *c = (FetchCall){.fetch = &f, .req = &req[sent]};
                        if (req[sent].prop)
                                r = sd_bus_call_method_async(bus, NULL, BLKMODEL_BUS_NAME, req[sent].path,
                                                             "org.freedesktop.DBus.Properties", "Get",
                                                             on_fetch_reply, c, "ss", req[sent].iface,
                                                             req[sent].prop);
                        else
                                r = sd_bus_call_method_async(bus, NULL, BLKMODEL_BUS_NAME, req[sent].path,
                                                             "org.freedesktop.DBus.Properties", "GetAll",
                                                             on_fetch_reply, c, "s", req[sent].iface);
                        if (r < 0) {
                                free(c);
                                goto out;
                        }
                        sent++;
                        f.in_flight++;
                }
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        goto out;
                if (r == 0) {
                        r = sd_bus_wait(bus, USEC_INFINITY);
                        if (r < 0)
                                goto out;
                }
        }
        r = f.error;
        if (r < 0 && error)
                sd_bus_error_move(error, &f.bus_error);
out:
        /* Replies still due would name f, which is about to go: drain them first. */
        while (f.in_flight > 0 && sd_bus_process(bus, NULL) >= 0)
                if (f.in_flight > 0)
                        (void) sd_bus_wait(bus, USEC_INFINITY);
        sd_bus_error_free(&f.bus_error);
        return r < 0 ? r : 0;
}
