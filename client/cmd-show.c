/* SPDX-License-Identifier: LGPL-2.1-or-later */

/*
 * show, get, set: one object's properties.  The object's interfaces and
 * property types come from Introspect, so that the client knows nothing
 * of which attributes a kernel has: the daemon publishes what sysfs has.
 */

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <blkmodel/names.h>

#include "blkmodelctl.h"
#include "bus-error.h"
#include "bus-model.h"
#include "introspect.h"
#include "json-util.h"
#include "model.h"
#include "output.h"

#include "common/interfaces.h"
#include "common/util.h"

#define UNKNOWN_PROPERTY "org.freedesktop.DBus.Error.UnknownProperty"
#define INVALID_ARGS "org.freedesktop.DBus.Error.InvalidArgs"

static int show_compare(const void *a, const void *b)
{
        const IntrospectInterface *x = a, *y = b;
        int rx = model_interface_rank(x->name), ry = model_interface_rank(y->name);

        if (rx != ry)
                return rx < ry ? -1 : 1;
        return strcmp(x->name, y->name);
}

/*
 * The model's own properties are shown apart from sysfs's raw attributes.  Manager's are in no
 * table, but they are all it has, and a lone group prints the same whichever it is.
 */
static bool property_is_typed(const char *iface, const char *name)
{
        return interface_find_property(iface, name);
}

/* Prints the properties of one kind (typed or raw) of one interface. */
static void show_properties(Ctl *ctl, json_object *props, const char *iface, bool typed, size_t indent)
{
        size_t width = 0;

        json_object_object_foreach(props, k1, v1) {
                (void) v1;
                if (property_is_typed(iface, k1) == typed && strlen(k1) > width)
                        width = strlen(k1);
        }
        json_object_object_foreach(props, key, value) {
                if (property_is_typed(iface, key) != typed)
                        continue;
                /* An empty value gets no padding: no trailing blanks. */
                if (output_value_is_empty(value)) {
                        printf("%*s%s\n", (int) indent, "", key);
                        continue;
                }
                printf("%*s%-*s  ", (int) indent, "", (int) width, key);
                /* An attribute's text is the device's (a USB model string): escaped like lsblk's cells. */
                output_value_ext(stdout, value, indent + width + 2, true);
        }
}

/* show --writable: drops from props what the introspection does not publish as writable. */
static void keep_writable(const IntrospectInterface *f, json_object *props)
{
        for (size_t i = 0; i < f->n_properties; i++)
                if (!f->properties[i].writable)
                        json_object_object_del(props, f->properties[i].name);
}

int cmd_show(Ctl *ctl, char **args, int n_args)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(json_object_putp) json_object *jroot = NULL;
        _cleanup_(introspection_done) Introspection in = {};
        _cleanup_(freep) char *path = NULL;
        json_object *jifaces;
        sd_bus *bus = NULL;
        int r;

        r = ctl_resolve(ctl, args[0], &bus, &path);
        if (r != EXIT_OK)
                return r;
        r = introspect_object(bus, path, &in, &error);
        if (r < 0)
                return bus_report_error(ctl, &error, r, path);
        qsort(in.interfaces, in.n_interfaces, sizeof(in.interfaces[0]), show_compare);

        jroot = json_object_new_object();
        if (!jroot)
                return ctl_fail("Out of memory");
        json_object_object_add(jroot, "object", json_object_new_string(path));
        jifaces = json_add_object(jroot, "interfaces");
        if (!jifaces)
                return ctl_fail("Out of memory");

        /* Fetch everything first: an object that vanishes half-way is one
         * error, not half a listing. */
        for (size_t i = 0; i < in.n_interfaces; i++) {
                const char *iface = in.interfaces[i].name;
                json_object *all, *sorted;

                if (!introspect_interface_is_model(iface))
                        continue;
                r = bus_get_all(bus, path, iface, &all, &error);
                if (r < 0)
                        return bus_report_error(ctl, &error, r, path);
                /* In model order, whatever order the daemon's reply had. */
                sorted = model_ordered_properties(iface, all);
                json_object_put(all);
                if (sorted && ctl->writable) {
                        keep_writable(in.interfaces + i, sorted);
                        /* An interface with nothing to write is no part of the answer. */
                        if (json_object_object_length(sorted) == 0) {
                                json_object_put(sorted);
                                continue;
                        }
                }
                if (!sorted || json_object_object_add(jifaces, iface, sorted) < 0) {
                        json_object_put(sorted);
                        return ctl_fail("Out of memory");
                }
        }

        if (ctl->json) {
                output_json(jroot, true);
                return EXIT_OK;
        }

        printf("%s%s%s\n", output_colour(ctl->colour, ANSI_BOLD), path,
               output_colour(ctl->colour, ANSI_RESET));
        json_object_object_foreach(jifaces, iface, props) {
                bool has_typed = false, has_raw = false;

                json_object_object_foreach(props, key, value) {
                        (void) value;
                        if (property_is_typed(iface, key))
                                has_typed = true;
                        else
                                has_raw = true;
                }

                printf("  %s%s%s\n", output_colour(ctl->colour, ANSI_BLUE), iface,
                       output_colour(ctl->colour, ANSI_RESET));
                if (has_typed)
                        show_properties(ctl, props, iface, true, 4);
                if (has_raw) {
                        /* Raw attributes apart: they are sysfs's words, not ours. */
                        if (has_typed)
                                printf("    %sattributes:%s\n", output_colour(ctl->colour, ANSI_GREY),
                                       output_colour(ctl->colour, ANSI_RESET));
                        show_properties(ctl, props, iface, false, has_typed ? 6 : 4);
                }
        }
        return EXIT_OK;
}

/* One attribute or typed property of one object, as get and set name it. */
typedef struct PropertyTarget {
        char *path;
        Introspection introspection;
        const IntrospectInterface *iface; /* both point into introspection */
        const IntrospectProperty *prop;
} PropertyTarget;

static void property_target_done(PropertyTarget *t)
{
        introspection_done(&t->introspection);
        t->path = mfree(t->path);
}

/* Whether the introspected object has a child node that is the path element of name. */
static int child_path(const Introspection *in, const char *path, const char *name, char **ret)
{
        _cleanup_(freep) char *child = NULL;
        const char *element;
        int r;

        r = sd_bus_path_encode(path, name, &child);
        if (r < 0)
                return r;
        element = strrchr(child, '/') + 1;
        for (size_t i = 0; i < in->n_children; i++)
                if (streq(in->children[i], element)) {
                        *ret = TAKE_PTR(child);
                        return 1;
                }
        return 0;
}

/* The object a link directory entry names: holders/NAME, slaves/NAME, in that typed property. */
static int linked_path(Ctl *ctl, const char *path, const Introspection *in, const char *dir,
                       const char *name, char **ret)
{
        _cleanup_(json_object_putp) json_object *list = NULL;
        _cleanup_(freep) char *encoded = NULL;
        const IntrospectInterface *iface;
        const IntrospectProperty *prop;
        size_t n;
        int r;

        if (introspect_find_property(in,
                                     streq(dir, "holders") ? BLKMODEL_PROP_HOLDERS : BLKMODEL_PROP_SLAVES,
                                     &iface, &prop) < 0)
                return 0;
        if (bus_get_property(ctl->bus, path, iface->name, prop->name, &list, NULL) < 0 ||
            !json_object_is_type(list, json_type_array))
                return 0;
        /* Object paths end in the encoded name, as sysfs's links are named by the plain one. */
        r = sd_bus_path_encode("/", name, &encoded);
        if (r < 0)
                return r;
        n = json_object_array_length(list);
        for (size_t i = 0; i < n; i++) {
                const char *p = json_object_get_string(json_object_array_get_idx(list, i));
                const char *last = p ? strrchr(p, '/') : NULL;

                if (last && streq(last, encoded)) {
                        *ret = strdup(p);
                        return *ret ? 1 : -ENOMEM;
                }
        }
        return 0;
}

/*
 * Follows ATTR, a path relative to the object's sysfs directory, from object to object as sysfs
 * does from directory to directory: a child kobject (queue/, iosched/, sda1/), device/ (the disk's
 * hardware), holders/NAME and slaves/NAME.  Stops at the last element, or at an attribute group
 * (loop/, power/), whose interface is on the object reached.  *path, *in and *attr follow the walk.
 */
static int attr_walk(Ctl *ctl, char **path, Introspection *in, const char **attr, sd_bus_error *error)
{
        for (unsigned depth = 0; depth < 64; depth++) {
                _cleanup_(freep) char *elem = NULL, *next = NULL;
                const char *slash = strchr(*attr, '/'), *rest;
                int r;

                if (!slash)
                        return 0;
                elem = strndup(*attr, (size_t) (slash - *attr));
                if (!elem)
                        return -ENOMEM;
                rest = slash + 1;

                r = child_path(in, *path, elem, &next);
                if (r == 0 && streq(elem, "device")) {
                        _cleanup_(json_object_putp) json_object *dev = NULL;

                        if (bus_get_property(ctl->bus, *path, BLKMODEL_IFACE_DISK, BLKMODEL_PROP_DEVICE,
                                             &dev, NULL) >= 0 &&
                            json_object_is_type(dev, json_type_string) &&
                            !streq(json_object_get_string(dev), "/")) {
                                next = strdup(json_object_get_string(dev));
                                r = next ? 1 : -ENOMEM;
                        }
                }
                if (r == 0 && (streq(elem, "holders") || streq(elem, "slaves")) && strchr(rest, '/')) {
                        _cleanup_(freep) char *name = strndup(rest, strcspn(rest, "/"));

                        r = name ? linked_path(ctl, *path, in, elem, name, &next) : -ENOMEM;
                        if (r > 0)
                                rest += strlen(name) + 1;
                }
                if (r < 0)
                        return r;
                if (r == 0)
                        return 0; /* an attribute group, or nothing: the caller looks */

                introspection_done(in);
                free(*path);
                *path = TAKE_PTR(next);
                *attr = rest;
                r = introspect_object(ctl->bus, *path, in, error);
                if (r < 0)
                        return r;
        }
        return -ELOOP;
}

/* Resolves OBJECT and finds ATTR on it; a failure is reported here and its exit code returned. */
static int property_lookup(Ctl *ctl, const char *spec, const char *attr, PropertyTarget *ret)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(introspection_done) Introspection in = {};
        _cleanup_(freep) char *path = NULL;
        const IntrospectInterface *iface;
        const IntrospectProperty *prop;
        const char *rest = attr;
        sd_bus *bus = NULL;
        int r;

        r = ctl_resolve(ctl, spec, &bus, &path);
        if (r != EXIT_OK)
                return r;
        r = introspect_object(bus, path, &in, &error);
        if (r >= 0)
                r = attr_walk(ctl, &path, &in, &rest, &error);
        if (r < 0 && sd_bus_error_is_set(&error))
                return bus_report_error(ctl, &error, r, spec);
        if (r < 0)
                return ctl_fail("Failed to follow '%s' from %s: %s", attr, spec, strerror(-r));
        r = introspect_find_property(&in, rest, &iface, &prop);
        if (r == -ENOENT)
                return ctl_fail("No attribute or property '%s' on %s (%s)", attr, spec, UNKNOWN_PROPERTY);
        if (r < 0)
                return ctl_fail("Out of memory");

        *ret = (PropertyTarget){
                        .path = TAKE_PTR(path),
                        .introspection = in,
                        .iface = iface,
                        .prop = prop,
        };
        in = (Introspection){};
        return EXIT_OK;
}

static int property_print(Ctl *ctl, const char *path, const char *iface, const char *member,
                          json_object *value)
{
        _cleanup_(json_object_putp) json_object *j = NULL;

        if (!ctl->json) {
                /* One line per item: none for an empty array or dictionary, so that `while read` sees
                 * no item. */
                if (json_object_is_type(value, json_type_string) || !output_value_is_empty(value))
                        output_value(stdout, value, 0);
                return EXIT_OK;
        }

        j = json_object_new_object();
        if (!j)
                return ctl_fail("Out of memory");
        json_object_object_add(j, "object", json_object_new_string(path));
        json_object_object_add(j, "interface", json_object_new_string(iface));
        json_object_object_add(j, "property", json_object_new_string(member));
        json_object_object_add(j, "value", json_object_get(value));
        output_json(j, true);
        return EXIT_OK;
}

/* Gets the property's value now and prints it; a failed Get is reported with what. */
static int property_show(Ctl *ctl, const char *path, const char *iface, const char *member, const char *what)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(json_object_putp) json_object *value = NULL;
        int r;

        r = bus_get_property(ctl->bus, path, iface, member, &value, &error);
        if (r < 0)
                return bus_report_error(ctl, &error, r, what);
        return property_print(ctl, path, iface, member, value);
}

int cmd_get(Ctl *ctl, char **args, int n_args)
{
        _cleanup_(property_target_done) PropertyTarget t = {};
        int r;

        r = property_lookup(ctl, args[0], args[1], &t);
        if (r != EXIT_OK)
                return r;

        return property_show(ctl, t.path, t.iface->name, t.prop->name, args[1]);
}

static int parse_bool(const char *s, int *ret)
{
        static const char *const yes[] = {"1", "yes", "y", "true", "t", "on", NULL};
        static const char *const no[] = {"0", "no", "n", "false", "f", "off", NULL};

        for (const char *const *p = yes; *p; p++)
                if (strcasecmp(s, *p) == 0) {
                        *ret = 1;
                        return 0;
                }
        for (const char *const *p = no; *p; p++)
                if (strcasecmp(s, *p) == 0) {
                        *ret = 0;
                        return 0;
                }
        return -EINVAL;
}

/* Appends VALUE converted to the property's basic type. */
static int append_value(sd_bus_message *m, const char *type, const char *value)
{
        char *end;
        int r;

        if (strlen(type) != 1)
                return -EOPNOTSUPP;

        switch (type[0]) {
        case SD_BUS_TYPE_STRING:
        case SD_BUS_TYPE_OBJECT_PATH:
        case SD_BUS_TYPE_SIGNATURE:
                return sd_bus_message_append_basic(m, type[0], value);
        case SD_BUS_TYPE_BOOLEAN: {
                int b;

                r = parse_bool(value, &b);
                if (r < 0)
                        return r;
                return sd_bus_message_append_basic(m, type[0], &b);
        }
        case SD_BUS_TYPE_DOUBLE: {
                double d;

                errno = 0;
                d = strtod(value, &end);
                if (errno != 0 || end == value || *end != '\0' || !isfinite(d))
                        return -EINVAL;
                return sd_bus_message_append_basic(m, type[0], &d);
        }
        case SD_BUS_TYPE_BYTE:
        case SD_BUS_TYPE_UINT16:
        case SD_BUS_TYPE_UINT32:
        case SD_BUS_TYPE_UINT64: {
                static const uint64_t max[] = {UINT8_MAX, UINT16_MAX, UINT32_MAX, UINT64_MAX};
                unsigned long long v;
                int idx = type[0] == SD_BUS_TYPE_BYTE     ? 0
                          : type[0] == SD_BUS_TYPE_UINT16 ? 1
                          : type[0] == SD_BUS_TYPE_UINT32 ? 2
                                                          : 3;
                union {
                        uint8_t u8;
                        uint16_t u16;
                        uint32_t u32;
                        uint64_t u64;
                } u;

                /* strtoull() takes " -5" (after its blanks) as 2^64 - 5. */
                if (value[0] == '-' || isspace((unsigned char) value[0]))
                        return -EINVAL;
                errno = 0;
                v = strtoull(value, &end, 0);
                if (errno != 0 || end == value || *end != '\0' || v > max[idx])
                        return -EINVAL;
                if (idx == 0)
                        u.u8 = (uint8_t) v;
                else if (idx == 1)
                        u.u16 = (uint16_t) v;
                else if (idx == 2)
                        u.u32 = (uint32_t) v;
                else
                        u.u64 = v;
                return sd_bus_message_append_basic(m, type[0], &u);
        }
        case SD_BUS_TYPE_INT16:
        case SD_BUS_TYPE_INT32:
        case SD_BUS_TYPE_INT64: {
                long long v;
                union {
                        int16_t s16;
                        int32_t s32;
                        int64_t s64;
                } u;

                errno = 0;
                v = strtoll(value, &end, 0);
                if (errno != 0 || end == value || *end != '\0')
                        return -EINVAL;
                if (type[0] == SD_BUS_TYPE_INT16) {
                        if (v < INT16_MIN || v > INT16_MAX)
                                return -EINVAL;
                        u.s16 = (int16_t) v;
                } else if (type[0] == SD_BUS_TYPE_INT32) {
                        if (v < INT32_MIN || v > INT32_MAX)
                                return -EINVAL;
                        u.s32 = (int32_t) v;
                } else
                        u.s64 = v;
                return sd_bus_message_append_basic(m, type[0], &u);
        }
        }
        return -EOPNOTSUPP;
}

int cmd_set(Ctl *ctl, char **args, int n_args)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_(property_target_done) PropertyTarget t = {};
        const char *value = args[2], *type;
        int r;

        r = property_lookup(ctl, args[0], args[1], &t);
        if (r != EXIT_OK)
                return r;
        /* One the daemon publishes read-only it refuses before it looks at the value, whatever the
         * type: sent as the text given, the answer is that, not that "maybe" is no boolean. */
        type = t.prop->writable ? t.prop->type : "s";

        r = sd_bus_message_new_method_call(ctl->bus, &m, BLKMODEL_BUS_NAME, t.path,
                                           "org.freedesktop.DBus.Properties", "Set");
        if (r >= 0)
                r = sd_bus_message_append(m, "ss", t.iface->name, t.prop->name);
        if (r >= 0)
                r = sd_bus_message_open_container(m, SD_BUS_TYPE_VARIANT, type);
        if (r >= 0) {
                r = append_value(m, type, value);
                if (r == -EINVAL)
                        return ctl_fail("Invalid value '%s' for %s of type '%s' (%s)", value, t.prop->name,
                                        t.prop->type, INVALID_ARGS);
                if (r == -EOPNOTSUPP)
                        return ctl_fail("Cannot set %s: properties of type '%s' are not settable from the "
                                        "command line (%s)",
                                        t.prop->name, t.prop->type, INVALID_ARGS);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r < 0)
                return ctl_fail("Failed to build the call: %s", strerror(-r));

        /* The daemon decides whether it may be written: it knows the file. */
        r = sd_bus_call(ctl->bus, m, 0, &error, NULL);
        if (r < 0) {
                _cleanup_(freep) char *what = NULL;

                if (asprintf(&what, "Failed to set %s on %s", t.prop->name, args[0]) < 0)
                        what = NULL;
                return bus_report_error(ctl, &error, r, what ?: t.prop->name);
        }

        /* What the kernel stored, which need not be what we wrote. */
        if (!ctl->json)
                return EXIT_OK;
        return property_show(ctl, t.path, t.iface->name, t.prop->name, t.prop->name);
}
