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

/* What loading one model needs at every step. */
typedef struct Loader {
        sd_bus *bus;
        BusPropertyFilter filter;
        void *userdata;
        json_object *model;
        sd_bus_error *error;
} Loader;

/* GetManagedObjects on path: the objects below it, into the model. */
static int load_managed_objects(Loader *l, const char *path)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        ModelReader mr = {.into = l->model, .filter = l->filter, .userdata = l->userdata};
        int r;

        r = sd_bus_call_method(l->bus, BLKMODEL_BUS_NAME, path, "org.freedesktop.DBus.ObjectManager",
                               "GetManagedObjects", l->error, &reply, NULL);
        if (r < 0)
                return r;
        return bus_message_read_dict(reply, "{oa{sa{sv}}}", read_object_entry, &mr);
}

static bool error_is_vanished(const sd_bus_error *e)
{
        return sd_bus_error_has_names(e, SD_BUS_ERROR_UNKNOWN_OBJECT, SD_BUS_ERROR_UNKNOWN_INTERFACE);
}

/* Introspect; 0 and nothing when the object went away meanwhile. */
static int load_introspect(Loader *l, const char *path, Introspection *ret)
{
        int r;

        r = introspect_object(l->bus, path, ret, l->error);
        if (r >= 0)
                return 1;
        if (error_is_vanished(l->error)) {
                sd_bus_error_free(l->error);
                return 0;
        }
        return r;
}

/* One object by itself: GetAll on each of its model interfaces, as GetManagedObjects would list it. */
static int load_object(Loader *l, const char *path, const Introspection *in)
{
        json_object *obj = NULL;
        int r;

        for (size_t i = 0; i < in->n_interfaces; i++) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
                const char *iface = in->interfaces[i].name;
                json_object *props;

                if (!introspect_interface_is_model(iface))
                        continue;
                r = sd_bus_call_method(l->bus, BLKMODEL_BUS_NAME, path, "org.freedesktop.DBus.Properties",
                                       "GetAll", l->error, &reply, "s", iface);
                if (r < 0 && error_is_vanished(l->error)) {
                        /* Gone meanwhile: as if it had never been there. */
                        sd_bus_error_free(l->error);
                        json_object_object_del(l->model, path);
                        return 0;
                }
                if (r < 0)
                        return r;
                if (!obj && !(obj = json_add_object(l->model, path)))
                        return -ENOMEM;
                props = json_add_object(obj, iface);
                if (!props)
                        return -ENOMEM;
                r = read_properties(reply, iface, l->filter, l->userdata, props);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int load_subtree(Loader *l, const char *path, const Introspection *in);

/* The children of path one by one (in is path's introspection), each with what is below it. */
static int load_children(Loader *l, const char *path, const Introspection *in)
{
        int r;

        for (size_t i = 0; i < in->n_children; i++) {
                _cleanup_(introspection_done) Introspection child = {};
                _cleanup_(freep) char *p = NULL;

                if (asprintf(&p, "%s/%s", path, in->children[i]) < 0)
                        return -ENOMEM;
                r = load_introspect(l, p, &child);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue; /* gone meanwhile */
                r = load_object(l, p, &child);
                if (r < 0)
                        return r;
                if (introspect_has_interface(&child, "org.freedesktop.DBus.ObjectManager"))
                        r = load_subtree(l, p, &child);
                else
                        r = load_children(l, p, &child);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Everything below path, an ObjectManager: in one reply, or in parts if it would not fit in one. */
static int load_subtree(Loader *l, const char *path, const Introspection *in)
{
        _cleanup_(introspection_done) Introspection own = {};
        int r;

        r = load_managed_objects(l, path);
        if (r >= 0 || !sd_bus_error_has_name(l->error, SD_BUS_ERROR_LIMITS_EXCEEDED))
                return r;
        sd_bus_error_free(l->error);

        if (!in) {
                r = load_introspect(l, path, &own);
                if (r <= 0)
                        return r;
                in = &own;
        }
        return load_children(l, path, in);
}

int bus_load_model(sd_bus *bus, const char *top, BusPropertyFilter filter, void *userdata, json_object **ret,
                   sd_bus_error *error)
{
        _cleanup_(json_object_putp) json_object *model = NULL;
        _cleanup_(introspection_done) Introspection in = {};
        Loader l = {.bus = bus, .filter = filter, .userdata = userdata, .error = error};
        int r;

        model = json_object_new_object();
        if (!model)
                return -ENOMEM;
        l.model = model;

        if (streq(top, BLKMODEL_ROOT_PATH))
                r = load_subtree(&l, top, NULL);
        else {
                r = introspect_object(bus, top, &in, error);
                if (r >= 0)
                        r = load_object(&l, top, &in);
                if (r >= 0)
                        r = introspect_has_interface(&in, "org.freedesktop.DBus.ObjectManager")
                                            ? load_subtree(&l, top, &in)
                                            : load_children(&l, top, &in);
        }
        if (r < 0)
                return r;

        *ret = TAKE_PTR(model);
        return 0;
}

int bus_load_object(sd_bus *bus, const char *path, json_object *model, sd_bus_error *error)
{
        _cleanup_(introspection_done) Introspection in = {};
        Loader l = {.bus = bus, .model = model, .error = error};
        int r;

        r = introspect_object(bus, path, &in, error);
        if (r < 0)
                return r;
        return load_object(&l, path, &in);
}
