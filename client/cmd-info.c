/* SPDX-License-Identifier: LGPL-2.1-or-later */

/*
 * info: one object as udevadm info shows a device, and with -a the attribute walk of udevadm
 * info -a: the object, then each ancestor up its device chain (a partition's disk, a disk's
 * hardware, each hardware parent), with what a udev rule could match on.
 */

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blkmodel/names.h>

#include "blkmodelctl.h"
#include "bus-error.h"
#include "bus-model.h"
#include "json-util.h"
#include "model.h"
#include "output.h"

#include "common/interfaces.h"
#include "common/util.h"

/* A confused model must not send the walk round in circles. */
#define MAX_CHAIN 64

/* The next object up the device chain, or NULL at its top. */
static const char *info_up(json_object *obj)
{
        const char *ktype = model_string(obj, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_KTYPE);
        const char *next;

        if (!ktype || streq(ktype, BLKMODEL_KTYPE_KSET))
                return NULL;
        /* A disk's parent is its kset; what it sits on is its device link. */
        if (streq(ktype, BLKMODEL_KTYPE_DISK))
                next = model_string(obj, BLKMODEL_IFACE_DISK, BLKMODEL_PROP_DEVICE);
        else {
                next = model_string(obj, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_PARENT);
                /* The top hardware device's parent is the devices kset, where udevadm stops too. */
                if (streq_ptr(next, model_string(obj, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_KSET)))
                        return NULL;
        }
        return isempty(next) || streq(next, "/") ? NULL : next;
}

static const char *info_subsystem(json_object *obj)
{
        const char *ktype = model_string(obj, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_KTYPE);

        if (streq_ptr(ktype, BLKMODEL_KTYPE_DISK) || streq_ptr(ktype, BLKMODEL_KTYPE_PARTITION))
                return "block";
        return strempty(model_string(obj, BLKMODEL_IFACE_DEVICE, BLKMODEL_PROP_SUBSYSTEM));
}

static const char *info_driver(json_object *obj)
{
        return strempty(model_string(obj, BLKMODEL_IFACE_DEVICE, BLKMODEL_PROP_DRIVER));
}

/* udevadm's rules: no links, no device numbers, nothing that looks like a path or is not text. */
static bool info_attribute_shown(const char *name, const char *value)
{
        static const char *const skipped[] = {"uevent", "dev",       "modalias", "resource",
                                              "driver", "subsystem", "module"};

        for (size_t i = 0; i < ELEMENTSOF(skipped); i++)
                if (streq(name, skipped[i]))
                        return false;
        if (value[0] == '/')
                return false;
        for (const char *p = value; *p; p++) {
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        return false;
                /* The daemon writes bytes that are no text as \xNN: binary files like PCI config. */
                if (p[0] == '\\' && p[1] == 'x' && isxdigit((unsigned char) p[2]) &&
                    isxdigit((unsigned char) p[3]))
                        return false;
        }
        return true;
}

/* { "file" or "group/file": value }, sorted, of the raw attributes of obj's kind and groups. */
static json_object *info_attributes(json_object *obj)
{
        _cleanup_(json_object_putp) json_object *all = json_object_new_object();
        _cleanup_(json_object_putp) json_object *sorted = NULL;

        if (!all)
                return NULL;
        json_object_object_foreach(obj, iface, props) {
                const char *group = startswith(iface, BLKMODEL_IFACE_GROUP_PREFIX);

                /* Kobject and Manager have no attribute files; Kset's directory has none either. */
                if (model_interface_rank(iface) != 1 && !group)
                        continue;
                json_object_object_foreach(props, name, value) {
                        _cleanup_(freep) char *key = NULL;

                        if (interface_find_property(iface, name) ||
                            !json_object_is_type(value, json_type_string) ||
                            !info_attribute_shown(name, json_object_get_string(value)))
                                continue;
                        if (group ? asprintf(&key, "%s/%s", group, name) < 0 : !(key = strdup(name)))
                                return NULL;
                        if (json_object_object_add(all, key, json_object_get(value)) < 0)
                                return NULL;
                }
        }
        /* Sorted by name, as udevadm prints them. */
        sorted = model_ordered_properties("", all);
        return TAKE_PTR(sorted);
}

static json_object *info_node_json(json_object *model, const char *path)
{
        _cleanup_(json_object_putp) json_object *j = json_object_new_object();
        json_object *obj = model_object(model, path),
                    *uevent = model_prop(obj, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_UEVENT);

        if (!j)
                return NULL;
        json_object_object_add(j, "object", json_object_new_string(path));
        json_object_object_add(j, "devpath",
                               json_object_new_string(strempty(model_string(obj, BLKMODEL_IFACE_KOBJECT,
                                                                            BLKMODEL_PROP_DEVPATH))));
        json_object_object_add(j, "kernel", json_object_new_string(model_name(model, path)));
        json_object_object_add(j, "ktype",
                               json_object_new_string(strempty(model_string(obj, BLKMODEL_IFACE_KOBJECT,
                                                                            BLKMODEL_PROP_KTYPE))));
        json_object_object_add(j, "subsystem", json_object_new_string(info_subsystem(obj)));
        json_object_object_add(j, "driver", json_object_new_string(info_driver(obj)));
        json_object_object_add(j, "uevent", uevent ? json_object_get(uevent) : json_object_new_object());
        json_object_object_add(j, "attributes", info_attributes(obj));
        return TAKE_PTR(j);
}

/* udevadm info -q all: P: devpath, M: name, U: subsystem, T: devtype, D: number, N: node, E: env. */
static void info_print_query(json_object *model, const char *path)
{
        json_object *obj = model_object(model, path);
        json_object *uevent = model_prop(obj, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_UEVENT);
        const char *devpath = strempty(model_string(obj, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_DEVPATH));
        const char *devtype;
        json_object *v;

        printf("P: %s\nM: %s\n", devpath, model_name(model, path));
        if (!isempty(info_subsystem(obj)))
                printf("U: %s\n", info_subsystem(obj));
        devtype = json_object_object_get_ex(uevent, "DEVTYPE", &v) ? json_object_get_string(v) : NULL;
        if (devtype)
                printf("T: %s\n", devtype);
        if (json_object_object_get_ex(uevent, "MAJOR", &v)) {
                json_object *mi = NULL;

                (void) json_object_object_get_ex(uevent, "MINOR", &mi);
                printf("D: %c %s:%s\n", streq(info_subsystem(obj), "block") ? 'b' : 'c',
                       json_object_get_string(v), mi ? json_object_get_string(mi) : "0");
        }
        if (json_object_object_get_ex(uevent, "DEVNAME", &v))
                printf("N: %s\n", json_object_get_string(v));
        printf("O: %s\n", path);
        printf("E: DEVPATH=%s\n", devpath);
        if (!isempty(info_subsystem(obj)))
                printf("E: SUBSYSTEM=%s\n", info_subsystem(obj));
        json_object_object_foreach(uevent, key, value)
                printf("E: %s=%s\n", key, json_object_get_string(value));
}

/* One device of udevadm info -a: KERNEL==, SUBSYSTEM==, DRIVER==, ATTR{}== (the parents' with S). */
static void info_print_walk_node(json_object *model, const char *path, bool parent)
{
        json_object *obj = model_object(model, path);
        _cleanup_(json_object_putp) json_object *attrs = info_attributes(obj);
        const char *s = parent ? "S" : "";

        printf("  looking at %sdevice '%s':\n", parent ? "parent " : "",
               strempty(model_string(obj, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_DEVPATH)));
        printf("    KERNEL%s==\"%s\"\n", s, model_name(model, path));
        printf("    SUBSYSTEM%s==\"%s\"\n", s, info_subsystem(obj));
        printf("    DRIVER%s==\"%s\"\n", s, info_driver(obj));
        json_object_object_foreach(attrs, name, value)
                printf("    ATTR%s{%s}==\"%s\"\n", s, name, json_object_get_string(value));
        printf("\n");
}

int cmd_info(Ctl *ctl, char **args, int n_args)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(json_object_putp) json_object *model = json_object_new_object(), *j = NULL;
        _cleanup_(freep) char *path = NULL;
        const char *chain[MAX_CHAIN];
        size_t n = 0;
        sd_bus *bus = NULL;
        int r;

        if (!model)
                return ctl_fail("Out of memory");
        r = ctl_resolve(ctl, args[0], &bus, &path);
        if (r != EXIT_OK)
                return r;

        /* Up the chain, one object at a time: only these few are needed, not the whole model. */
        for (const char *p = path; p && n < (ctl->all ? MAX_CHAIN : 1);
             p = info_up(model_object(model, p))) {
                if (model_object(model, p))
                        break; /* a loop */
                r = bus_load_object(bus, p, model, &error);
                if (r < 0)
                        return bus_report_error(ctl, &error, r, args[0]);
                if (!model_object(model, p))
                        return ctl_fail("No such object: %s (%s)", p, BLKMODEL_ERROR_NO_SUCH_OBJECT);
                chain[n++] = p;
        }

        if (ctl->json) {
                json_object *parents;

                j = info_node_json(model, chain[0]);
                parents = j ? json_add_array(j, "parents") : NULL;
                if (!parents)
                        return ctl_fail("Out of memory");
                for (size_t i = 1; i < n; i++)
                        if (json_object_array_add(parents, info_node_json(model, chain[i])) < 0)
                                return ctl_fail("Out of memory");
                output_json(j, true);
                return EXIT_OK;
        }

        if (!ctl->all) {
                info_print_query(model, chain[0]);
                return EXIT_OK;
        }
        printf("\n"
               "blkmodelctl info -a starts with the object given and walks up the chain of\n"
               "parent devices, as udevadm info -a does. It prints for every device found\n"
               "its attributes in the udev rules key format; a rule can match the device's\n"
               "and those of one single parent device.\n\n");
        for (size_t i = 0; i < n; i++)
                info_print_walk_node(model, chain[i], i > 0);
        return EXIT_OK;
}
