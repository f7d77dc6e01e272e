/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <blkmodel/names.h>

#include "bus-json.h"
#include "bus-model.h"
#include "json-util.h"

#include "common/time-util.h"
#include "common/util.h"

int bus_resolve(sd_bus *bus, const char *spec, char **ret_path, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *path;
        char *copy;
        int r;

        /* The root object is no kobject, so Resolve need not know it. */
        if (streq(spec, BLKMODEL_ROOT_PATH) || streq(spec, BLKMODEL_MANAGER_PATH))
                path = spec;
        else {
                r = sd_bus_call_method(bus, BLKMODEL_BUS_NAME, BLKMODEL_MANAGER_PATH, BLKMODEL_IFACE_MANAGER,
                                       BLKMODEL_METHOD_RESOLVE, error, &reply, "s", spec);
                if (r < 0)
                        return r;
                r = sd_bus_message_read(reply, "o", &path);
                if (r < 0)
                        return r;
        }

        copy = strdup(path);
        if (!copy)
                return -ENOMEM;
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

/* One {sv}: kept in into if the filter wants it, skipped unread otherwise. */
static int read_property_entry(sd_bus_message *m, void *userdata)
{
        _cleanup_(json_object_putp) json_object *value = NULL;
        ModelReader *mr = userdata;
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
        if (json_object_object_add(mr->into, name, value) < 0)
                return -ENOMEM;
        TAKE_PTR(value);
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
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(json_object_putp) json_object *model = NULL;
        ModelReader mr = {.filter = filter, .userdata = userdata};
        int r;

        r = sd_bus_call_method(bus, BLKMODEL_BUS_NAME, BLKMODEL_ROOT_PATH,
                               "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", error, &reply,
                               NULL);
        if (r < 0)
                return r;

        model = json_object_new_object();
        if (!model)
                return -ENOMEM;
        mr.into = model;
        r = bus_message_read_dict(reply, "{oa{sa{sv}}}", read_object_entry, &mr);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(model);
        return 0;
}

int bus_get_all(sd_bus *bus, const char *path, const char *iface, json_object **ret, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(json_object_putp) json_object *props = NULL;
        int r;

        r = sd_bus_call_method(bus, BLKMODEL_BUS_NAME, path, "org.freedesktop.DBus.Properties", "GetAll",
                               error, &reply, "s", iface);
        if (r < 0)
                return r;

        props = json_object_new_object();
        if (!props)
                return -ENOMEM;
        r = read_properties(reply, iface, NULL, NULL, props);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(props);
        return 0;
}

int bus_get_property(sd_bus *bus, const char *path, const char *iface, const char *prop, json_object **ret,
                     sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_call_method(bus, BLKMODEL_BUS_NAME, path, "org.freedesktop.DBus.Properties", "Get", error,
                               &reply, "ss", iface, prop);
        if (r < 0)
                return r;
        /* The variant itself: JSON has no such wrapper, so this is the value inside. */
        return bus_message_read_json(reply, ret);
}

/* Calls in flight at once: enough to hide the round trips, few enough for any bus's limits. */
#define FETCH_IN_FLIGHT 128

typedef struct Fetch {
        sd_bus *bus;
        json_object *model;
        size_t in_flight;
        int error; /* the first failure other than a vanished object */
        sd_bus_error bus_error;
} Fetch;

typedef struct FetchCall {
        Fetch *fetch;
        const BusPropRequest *req;
} FetchCall;

static void fetch_done(Fetch *f)
{
        /* Replies still due would name f, which is about to go: drain them first. */
        while (f->in_flight > 0 && sd_bus_process(f->bus, NULL) >= 0)
                if (f->in_flight > 0)
                        (void) sd_bus_wait(f->bus, USEC_INFINITY);
        sd_bus_error_free(&f->bus_error);
}

/* Keeps the first failure only: the one that stops the fetch. */
static void fetch_fail(Fetch *f, int error, const sd_bus_error *bus_error)
{
        if (f->error != 0)
                return;
        f->error = error;
        if (bus_error)
                (void) sd_bus_error_copy(&f->bus_error, bus_error);
}

/* model[path][iface], created if missing. */
static json_object *model_iface(json_object *model, const char *path, const char *iface)
{
        json_object *obj, *props;

        if (!json_object_object_get_ex(model, path, &obj)) {
                obj = json_add_object(model, path);
                if (!obj)
                        return NULL;
        }
        if (!json_object_object_get_ex(obj, iface, &props))
                props = json_add_object(obj, iface);
        return props;
}

/* Stores the answer to one request in model[path][iface]. */
static int fetch_store(json_object *model, const BusPropRequest *req, sd_bus_message *reply)
{
        _cleanup_(json_object_putp) json_object *value = NULL;
        json_object *props;
        int r;

        props = model_iface(model, req->path, req->iface);
        if (!props)
                return -ENOMEM;
        if (!req->prop)
                return read_properties(reply, req->iface, NULL, NULL, props);

        r = bus_message_read_json(reply, &value);
        if (r < 0)
                return r;
        if (json_object_object_add(props, req->prop, value) < 0)
                return -ENOMEM;
        TAKE_PTR(value);
        return 0;
}

static int on_fetch_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
        _cleanup_(freep) FetchCall *c = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        Fetch *f = c->fetch;
        int r;

        f->in_flight--;
        if (e) {
                /* The object went away between GetManagedObjects and now, or has no such attribute here
                 * (only SCSI devices have a type): it is simply not there. */
                if (!sd_bus_error_has_names(e, SD_BUS_ERROR_UNKNOWN_OBJECT, SD_BUS_ERROR_UNKNOWN_PROPERTY))
                        fetch_fail(f, -sd_bus_error_get_errno(e) ?: -EIO, e);
                return 0;
        }

        r = fetch_store(f->model, c->req, reply);
        if (r < 0)
                fetch_fail(f, r, NULL);
        return 0;
}

static int fetch_send(Fetch *f, const BusPropRequest *req)
{
        _cleanup_(freep) FetchCall *c = NULL;
        int r;

        c = malloc(sizeof(FetchCall));
        if (!c)
                return -ENOMEM;
        *c = (FetchCall){.fetch = f, .req = req};

        if (req->prop)
                r = sd_bus_call_method_async(f->bus, NULL, BLKMODEL_BUS_NAME, req->path,
                                             "org.freedesktop.DBus.Properties", "Get", on_fetch_reply, c,
                                             "ss", req->iface, req->prop);
        else
                r = sd_bus_call_method_async(f->bus, NULL, BLKMODEL_BUS_NAME, req->path,
                                             "org.freedesktop.DBus.Properties", "GetAll", on_fetch_reply, c,
                                             "s", req->iface);
        if (r < 0)
                return r;

        /* The reply handler frees it. */
        TAKE_PTR(c);
        f->in_flight++;
        return 0;
}

int bus_fetch_properties(sd_bus *bus, json_object *model, const BusPropRequest *req, size_t n,
                         sd_bus_error *error)
{
        _cleanup_(fetch_done) Fetch f = {.bus = bus, .model = model, .bus_error = SD_BUS_ERROR_NULL};
        size_t sent = 0;
        int r;

        while ((sent < n || f.in_flight > 0) && f.error == 0) {
                for (; sent < n && f.in_flight < FETCH_IN_FLIGHT; sent++) {
                        r = fetch_send(&f, &req[sent]);
                        if (r < 0)
                                return r;
                }
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return r;
                if (r == 0) {
                        r = sd_bus_wait(bus, USEC_INFINITY);
                        if (r < 0)
                                return r;
                }
        }
        if (f.error < 0) {
                if (error)
                        (void) sd_bus_error_move(error, &f.bus_error);
                return f.error;
        }
        return 0;
}
