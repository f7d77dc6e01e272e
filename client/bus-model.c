/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <blkmodel/names.h>

#include "bus-json.h"
#include "bus-model.h"
#include "introspect.h"
#include "json-util.h"

#include "common/time-util.h"
#include "common/util.h"

/* The MAJ:MIN of a block device node a path names, if it names one; 0 if not, *ret untouched. */
static int spec_devnum(const char *spec, char **ret)
{
        struct stat st;

        /* Object paths, devpaths and /sys paths are the daemon's to read; only a node in this
         * machine's /dev (or a link to one, like /dev/disk/by-id/...) carries a number. */
        if (spec[0] != '/' || startswith(spec, BLKMODEL_ROOT_PATH "/") || streq(spec, BLKMODEL_ROOT_PATH))
                return 0;
        if (stat(spec, &st) < 0 || !S_ISBLK(st.st_mode))
                return 0;
        if (asprintf(ret, "%u:%u", major(st.st_rdev), minor(st.st_rdev)) < 0)
                return -ENOMEM;
        return 1;
}

static int call_resolve(sd_bus *bus, const char *spec, char **ret_path, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *path;
        char *copy;
        int r;

        r = sd_bus_call_method(bus, BLKMODEL_BUS_NAME, BLKMODEL_MANAGER_PATH, BLKMODEL_IFACE_MANAGER,
                               BLKMODEL_METHOD_RESOLVE, error, &reply, "s", spec);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "o", &path);
        if (r < 0)
                return r;
        copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        *ret_path = copy;
        return 0;
}

int bus_resolve(sd_bus *bus, const char *spec, char **ret_path, sd_bus_error *error)
{
        _cleanup_(freep) char *devnum = NULL;
        char *copy;
        int r;

        /* The root object is no kobject, so Resolve need not know it. */
        if (streq(spec, BLKMODEL_ROOT_PATH) || streq(spec, BLKMODEL_MANAGER_PATH)) {
                copy = strdup(spec);
                if (!copy)
                        return -ENOMEM;
                *ret_path = copy;
                return 0;
        }

        r = spec_devnum(spec, &devnum);
        if (r < 0)
                return r;
        if (r > 0) {
                r = call_resolve(bus, devnum, ret_path, error);
                /* A daemon on another tree (a fixture) may know the name but not this machine's number. */
                if (r >= 0 || !sd_bus_error_has_name(error, BLKMODEL_ERROR_NO_SUCH_OBJECT))
                        return r;
                sd_bus_error_free(error);
        }
        return call_resolve(bus, spec, ret_path, error);
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

/*
 * Reads a{sv} into object[iface].  With a filter, an interface it keeps nothing of is left out: it
 * tells the caller nothing, and costs a hash table for every object of a large model.
 */
static int add_interface(sd_bus_message *m, const char *iface, BusPropertyFilter filter, void *userdata,
                         json_object *object)
{
        _cleanup_(json_object_putp) json_object *props = json_object_new_object();
        int r;

        if (!props)
                return -ENOMEM;
        r = read_properties(m, iface, filter, userdata, props);
        if (r < 0)
                return r;
        if (filter && json_object_object_length(props) == 0)
                return 0;
        if (json_object_object_add(object, iface, props) < 0)
                return -ENOMEM;
        TAKE_PTR(props);
        return 0;
}

/* One {sa{sv}}: an interface and its properties, into into[iface]. */
static int read_interface_entry(sd_bus_message *m, void *userdata)
{
        ModelReader *mr = userdata;
        const char *iface;
        int r;

        r = sd_bus_message_read_basic(m, SD_BUS_TYPE_STRING, &iface);
        if (r < 0)
                return r;
        return add_interface(m, iface, mr->filter, mr->userdata, mr->into);
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

/*
 * Loading a model in parts: many calls in flight at once, each answer queueing the calls it leads to.
 * An Introspect of an object queues a GetAll per model interface (the object itself) and either its
 * GetManagedObjects (where it is an ObjectManager) or an Introspect of each child; a GetManagedObjects
 * refused with LimitsExceeded queues an Introspect of its children.
 */

/* Calls in flight at once: enough to hide the round trips, few enough for any bus's limits. */
#define LOAD_IN_FLIGHT 64

typedef enum JobKind {
        JOB_INTROSPECT,
        JOB_GET_ALL,
        JOB_MANAGED_OBJECTS,
} JobKind;

typedef struct Loader Loader;

typedef struct Job {
        Loader *loader;
        JobKind kind;
        char *path;
        char *iface;    /* JOB_GET_ALL */
        bool with_self; /* JOB_INTROSPECT: load the object itself */
        bool try_below; /* JOB_INTROSPECT: its GetManagedObjects where it has one */
        bool required;  /* the object asked for: its absence is an error, not a vanished object */
        struct Job *next;
} Job;

struct Loader {
        sd_bus *bus;
        BusPropertyFilter filter;
        void *userdata;
        json_object *model;
        json_object *gone; /* paths that vanished while loading: left out at the end */
        Job *head, *tail;  /* not sent yet */
        size_t in_flight;
        int error; /* the first failure */
        sd_bus_error bus_error;
};

static Job *job_free(Job *j)
{
        if (j) {
                free(j->path);
                free(j->iface);
                free(j);
        }
        return NULL;
}

static void loader_fail(Loader *l, int r, const sd_bus_error *e)
{
        if (l->error < 0)
                return;
        l->error = r < 0 ? r : -EIO;
        if (e)
                (void) sd_bus_error_copy(&l->bus_error, e);
}

static int loader_queue(Loader *l, JobKind kind, const char *path, const char *iface, bool with_self,
                        bool try_below, bool required)
{
        Job *j = calloc(1, sizeof(Job));

        if (!j)
                return -ENOMEM;
        *j = (Job){.loader = l,
                   .kind = kind,
                   .path = strdup(path),
                   .iface = iface ? strdup(iface) : NULL,
                   .with_self = with_self,
                   .try_below = try_below,
                   .required = required};
        if (!j->path || (iface && !j->iface)) {
                job_free(j);
                return -ENOMEM;
        }
        if (l->tail)
                l->tail->next = j;
        else
                l->head = j;
        l->tail = j;
        return 0;
}

static bool error_is_vanished(const sd_bus_error *e)
{
        return sd_bus_error_has_names(e, SD_BUS_ERROR_UNKNOWN_OBJECT, SD_BUS_ERROR_UNKNOWN_INTERFACE);
}

/* model[path], created if missing. */
static json_object *model_path(json_object *model, const char *path)
{
        json_object *obj;

        if (!json_object_object_get_ex(model, path, &obj))
                obj = json_add_object(model, path);
        return obj;
}

static int on_introspect(Loader *l, Job *j, sd_bus_message *reply)
{
        _cleanup_(introspection_done) Introspection in = {};
        const char *xml;
        int r;

        r = sd_bus_message_read(reply, "s", &xml);
        if (r >= 0)
                r = introspect_parse(xml, &in);
        if (r < 0)
                return r;
        for (size_t i = 0; j->with_self && i < in.n_interfaces; i++)
                if (introspect_interface_is_model(in.interfaces[i].name)) {
                        r = loader_queue(l, JOB_GET_ALL, j->path, in.interfaces[i].name, false, false,
                                         j->required);
                        if (r < 0)
                                return r;
                }
        if (j->try_below && introspect_has_interface(&in, "org.freedesktop.DBus.ObjectManager"))
                return loader_queue(l, JOB_MANAGED_OBJECTS, j->path, NULL, false, false, false);
        for (size_t i = 0; i < in.n_children; i++) {
                _cleanup_(freep) char *child = NULL;

                if (asprintf(&child, "%s/%s", j->path, in.children[i]) < 0)
                        return -ENOMEM;
                r = loader_queue(l, JOB_INTROSPECT, child, NULL, true, true, false);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int on_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
        Job *j = userdata;
        Loader *l = j->loader;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        ModelReader mr = {.into = l->model, .filter = l->filter, .userdata = l->userdata};
        json_object *obj;
        int r = 0;

        l->in_flight--;
        if (l->error < 0)
                goto done; /* draining: the load has failed */

        if (e) {
                if (j->kind == JOB_MANAGED_OBJECTS && sd_bus_error_has_name(e, SD_BUS_ERROR_LIMITS_EXCEEDED))
                        /* Too much below it for one message: its children one by one. */
                        r = loader_queue(l, JOB_INTROSPECT, j->path, NULL, false, false, false);
                else if (error_is_vanished(e) && !j->required) {
                        /* Gone between the look that named it and now: as if never there. */
                        if (j->kind != JOB_MANAGED_OBJECTS &&
                            json_object_object_add(l->gone, j->path, NULL) < 0)
                                r = -ENOMEM;
                } else
                        loader_fail(l, -sd_bus_error_get_errno(e), e);
        } else if (j->kind == JOB_INTROSPECT)
                r = on_introspect(l, j, reply);
        else if (j->kind == JOB_MANAGED_OBJECTS)
                r = bus_message_read_dict(reply, "{oa{sa{sv}}}", read_object_entry, &mr);
        else {
                obj = model_path(l->model, j->path);
                r = obj ? add_interface(reply, j->iface, l->filter, l->userdata, obj) : -ENOMEM;
        }
        if (r < 0)
                loader_fail(l, r, NULL);
done:
        job_free(j);
        return 0;
}

static int loader_send(Loader *l, Job *j)
{
        static const char *const members[] = {
                        [JOB_INTROSPECT] = "Introspect",
                        [JOB_GET_ALL] = "GetAll",
                        [JOB_MANAGED_OBJECTS] = "GetManagedObjects",
        };
        static const char *const ifaces[] = {
                        [JOB_INTROSPECT] = "org.freedesktop.DBus.Introspectable",
                        [JOB_GET_ALL] = "org.freedesktop.DBus.Properties",
                        [JOB_MANAGED_OBJECTS] = "org.freedesktop.DBus.ObjectManager",
        };
        int r;

        if (j->kind == JOB_GET_ALL)
                r = sd_bus_call_method_async(l->bus, NULL, BLKMODEL_BUS_NAME, j->path, ifaces[j->kind],
                                             members[j->kind], on_reply, j, "s", j->iface);
        else
                r = sd_bus_call_method_async(l->bus, NULL, BLKMODEL_BUS_NAME, j->path, ifaces[j->kind],
                                             members[j->kind], on_reply, j, NULL);
        if (r < 0)
                return r;
        l->in_flight++;
        return 0;
}

static void loader_done(Loader *l)
{
        /* Replies still due name jobs that name l: take them in before l goes. */
        while (l->in_flight > 0 && sd_bus_process(l->bus, NULL) >= 0)
                if (l->in_flight > 0)
                        (void) sd_bus_wait(l->bus, UINT64_MAX);
        while (l->head) {
                Job *j = l->head;

                l->head = j->next;
                job_free(j);
        }
        json_object_put(l->model);
        json_object_put(l->gone);
        sd_bus_error_free(&l->bus_error);
}

int bus_load_model(sd_bus *bus, const char *top, BusPropertyFilter filter, void *userdata, json_object **ret,
                   sd_bus_error *error)
{
        _cleanup_(loader_done) Loader l = {
                        .bus = bus,
                        .filter = filter,
                        .userdata = userdata,
                        .bus_error = SD_BUS_ERROR_NULL,
        };
        int r;

        l.model = json_object_new_object();
        l.gone = json_object_new_object();
        if (!l.model || !l.gone)
                return -ENOMEM;

        /* The root's GetManagedObjects holds everything, the Manager too; any other object is asked for
         * itself, then for what is below it. */
        if (streq(top, BLKMODEL_ROOT_PATH))
                r = loader_queue(&l, JOB_MANAGED_OBJECTS, top, NULL, false, false, false);
        else
                r = loader_queue(&l, JOB_INTROSPECT, top, NULL, true, true, true);
        if (r < 0)
                return r;

        while ((l.head || l.in_flight > 0) && l.error == 0) {
                while (l.head && l.in_flight < LOAD_IN_FLIGHT) {
                        Job *j = l.head;

                        l.head = j->next;
                        if (!l.head)
                                l.tail = NULL;
                        r = loader_send(&l, j);
                        if (r < 0) {
                                job_free(j);
                                return r;
                        }
                }
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return r;
                if (r == 0) {
                        r = sd_bus_wait(bus, UINT64_MAX);
                        if (r < 0)
                                return r;
                }
        }
        if (l.error < 0) {
                if (error)
                        (void) sd_bus_error_move(error, &l.bus_error);
                return l.error;
        }

        json_object_object_foreach(l.gone, path, v) {
                (void) v;
                json_object_object_del(l.model, path);
        }
        *ret = TAKE_PTR(l.model);
        return 0;
}

int bus_load_object(sd_bus *bus, const char *path, json_object *model, Introspection *ret_in,
                    sd_bus_error *error)
{
        _cleanup_(introspection_done) Introspection in = {};
        json_object *obj;
        int r;

        r = introspect_object(bus, path, &in, error);
        if (r < 0)
                return r;
        for (size_t i = 0; i < in.n_interfaces; i++) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
                const char *iface = in.interfaces[i].name;

                if (!introspect_interface_is_model(iface))
                        continue;
                r = sd_bus_call_method(bus, BLKMODEL_BUS_NAME, path, "org.freedesktop.DBus.Properties",
                                       "GetAll", error, &reply, "s", iface);
                if (r < 0)
                        return r;
                obj = model_path(model, path);
                r = obj ? add_interface(reply, iface, NULL, NULL, obj) : -ENOMEM;
                if (r < 0)
                        return r;
        }
        if (ret_in) {
                *ret_in = in;
                in = (Introspection){};
        }
        return 0;
}
