/* SPDX-License-Identifier: LGPL-2.1-or-later */

/*
 * show, get, set: one object's properties.  The object's interfaces and
 * property types come from Introspect, so that the client knows nothing
 * of which attributes a kernel has: the daemon publishes what sysfs has.
 */

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <blkmodel/names.h>

#include "blkmodelctl.h"
#include "bus-error.h"
#include "bus-json.h"
#include "bus-model.h"
#include "introspect.h"
#include "model.h"
#include "output.h"

#include "common/interfaces.h"

#define UNKNOWN_PROPERTY "org.freedesktop.DBus.Error.UnknownProperty"
#define INVALID_ARGS "org.freedesktop.DBus.Error.InvalidArgs"

/* Display order: Kobject, the kind interface, Kset/Manager, then groups. */
static int show_rank(const char *iface)
{
        if (strcmp(iface, BLKMODEL_IFACE_KOBJECT) == 0)
                return 0;
        if (strcmp(iface, BLKMODEL_IFACE_KSET) == 0 || strcmp(iface, BLKMODEL_IFACE_MANAGER) == 0)
                return 2;
        if (strncmp(iface, BLKMODEL_IFACE_GROUP_PREFIX, strlen(BLKMODEL_IFACE_GROUP_PREFIX)) == 0)
                return 3;
        return 1;
}

static int show_compare(const void *a, const void *b)
{
        const IntrospectInterface *x = a, *y = b;
        int rx = show_rank(x->name), ry = show_rank(y->name);

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
                output_value(stdout, value, indent + width + 2);
        }
}

int cmd_show(Ctl *ctl, char **args, int n_args)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        Introspection in = {};
        json_object *jroot = NULL, *jifaces = NULL, *all = NULL;
        char *path = NULL;
        sd_bus *bus = NULL;
        int r;

        r = ctl_resolve(ctl, args[0], &bus, &path);
        if (r != EXIT_OK)
                return r;
        r = introspect_object(bus, path, &in, &error);
        if (r < 0) {
                r = bus_report_error(&error, r, path);
                goto finish;
        }
        qsort(in.interfaces, in.n_interfaces, sizeof(in.interfaces[0]), show_compare);

        jroot = json_object_new_object();
        jifaces = json_object_new_object();
        if (!jroot || !jifaces) {
                json_object_put(jifaces);
                goto oom;
        }
        json_object_object_add(jroot, "object", json_object_new_string(path));
        json_object_object_add(jroot, "interfaces", jifaces);

        /* Fetch everything first: an object that vanishes half-way is one
         * error, not half a listing. */
        for (size_t i = 0; i < in.n_interfaces; i++) {
                const char *iface = in.interfaces[i].name;

                if (!introspect_interface_is_model(iface))
                        continue;
                r = bus_get_all(bus, path, iface, &all, &error);
                if (r < 0) {
                        r = bus_report_error(&error, r, path);
                        goto finish;
                }
                json_object_object_add(jifaces, iface, all);
                all = NULL;
        }

        if (ctl->json) {
                output_json(jroot, true);
                r = EXIT_OK;
                goto finish;
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
        r = EXIT_OK;
        goto finish;

oom:
        r = ctl_fail("Out of memory");
finish:
        json_object_put(all);
        json_object_put(jroot);
        introspection_done(&in);
        free(path);
        sd_bus_error_free(&error);
        return r;
}

/* Resolves OBJECT and finds ATTR on it; prints the error itself. */
static int property_lookup(Ctl *ctl, const char *spec, const char *attr, char **ret_path, Introspection *in,
                           const IntrospectInterface **ret_iface, const IntrospectProperty **ret_prop)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        char *path = NULL;
        sd_bus *bus = NULL;
        int r;

        r = ctl_resolve(ctl, spec, &bus, &path);
        if (r != EXIT_OK)
                return r;
        r = introspect_object(bus, path, in, &error);
        if (r < 0) {
                r = bus_report_error(&error, r, spec);
                goto fail;
        }
        r = introspect_find_property(in, attr, ret_iface, ret_prop);
        if (r == -ENOENT) {
                r = ctl_fail("No attribute or property '%s' on %s (%s)", attr, spec, UNKNOWN_PROPERTY);
                goto fail;
        }
        if (r < 0) {
                r = ctl_fail("Out of memory");
                goto fail;
        }

        *ret_path = path;
        return EXIT_OK;

fail:
        introspection_done(in);
        free(path);
        sd_bus_error_free(&error);
        return r;
}

static int property_get(sd_bus *bus, const char *path, const char *iface, const char *member,
                        json_object **ret, sd_bus_error *error)
{
        sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_call_method(bus, BLKMODEL_BUS_NAME, path, "org.freedesktop.DBus.Properties", "Get", error,
                               &reply, "ss", iface, member);
        if (r < 0)
                return r;
        r = bus_message_read_json(reply, ret);
        sd_bus_message_unref(reply);
        return r;
}

static int property_print(Ctl *ctl, const char *path, const char *iface, const char *member,
                          json_object *value)
{
        if (ctl->json) {
                json_object *j = json_object_new_object();

                if (!j)
                        return ctl_fail("Out of memory");
                json_object_object_add(j, "object", json_object_new_string(path));
                json_object_object_add(j, "interface", json_object_new_string(iface));
                json_object_object_add(j, "property", json_object_new_string(member));
                json_object_object_add(j, "value", json_object_get(value));
                output_json(j, true);
                json_object_put(j);
        } else
                output_value(stdout, value, 0);
        return EXIT_OK;
}

/* Gets the property's value now and prints it; a failed Get is reported with what. */
static int property_show(Ctl *ctl, const char *path, const char *iface, const char *member, const char *what)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        json_object *value = NULL;
        int r;

        r = property_get(ctl->bus, path, iface, member, &value, &error);
        if (r < 0)
                r = bus_report_error(&error, r, what);
        else
                r = property_print(ctl, path, iface, member, value);

        json_object_put(value);
        sd_bus_error_free(&error);
        return r;
}

int cmd_get(Ctl *ctl, char **args, int n_args)
{
        const IntrospectInterface *iface;
        const IntrospectProperty *prop;
        Introspection in = {};
        char *path = NULL;
        int r;

        r = property_lookup(ctl, args[0], args[1], &path, &in, &iface, &prop);
        if (r != EXIT_OK)
                return r;

        r = property_show(ctl, path, iface->name, prop->name, args[1]);

        introspection_done(&in);
        free(path);
        return r;
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

                if (value[0] == '-')
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
        sd_bus_error error = SD_BUS_ERROR_NULL;
        const IntrospectInterface *iface;
        const IntrospectProperty *prop;
        sd_bus_message *m = NULL, *reply = NULL;
        Introspection in = {};
        char *path = NULL;
        int r;

        r = property_lookup(ctl, args[0], args[1], &path, &in, &iface, &prop);
        if (r != EXIT_OK)
                return r;

        r = sd_bus_message_new_method_call(ctl->bus, &m, BLKMODEL_BUS_NAME, path,
                                           "org.freedesktop.DBus.Properties", "Set");
        if (r >= 0)
                r = sd_bus_message_append(m, "ss", iface->name, prop->name);
        if (r >= 0)
                r = sd_bus_message_open_container(m, SD_BUS_TYPE_VARIANT, prop->type);
        if (r >= 0) {
                r = append_value(m, prop->type, args[2]);
                if (r == -EINVAL) {
                        r = ctl_fail("Invalid value '%s' for %s of type '%s' (%s)", args[2], prop->name,
                                     prop->type, INVALID_ARGS);
                        goto finish;
                }
                if (r == -EOPNOTSUPP) {
                        r = ctl_fail("Cannot set %s: properties of type '%s' are not settable from the "
                                     "command line (%s)",
                                     prop->name, prop->type, INVALID_ARGS);
                        goto finish;
                }
        }
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r < 0) {
                r = ctl_fail("Failed to build the call: %s", strerror(-r));
                goto finish;
        }

        /* The daemon decides whether it may be written: it knows the file. */
        r = sd_bus_call(ctl->bus, m, 0, &error, &reply);
        if (r < 0) {
                char *what = NULL;

                if (asprintf(&what, "Failed to set %s on %s", prop->name, args[0]) < 0)
                        what = NULL;
                r = bus_report_error(&error, r, what ? what : prop->name);
                free(what);
                goto finish;
        }

        /* What the kernel stored, which need not be what we wrote. */
        r = ctl->json ? property_show(ctl, path, iface->name, prop->name, prop->name) : EXIT_OK;

finish:
        sd_bus_message_unref(m);
        sd_bus_message_unref(reply);
        introspection_done(&in);
        free(path);
        sd_bus_error_free(&error);
        return r;
}
