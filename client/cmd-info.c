/* SPDX-License-Identifier: LGPL-2.1-or-later */

/*
 * info: one object as udevadm info shows a device, and with -a the attribute walk of udevadm
 * info -a: the object, then each ancestor up its device chain (a partition's disk, a disk's
 * hardware, each hardware parent), with what a udev rule could match on.
 */

#include <assert.h>
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
#include "common/utf8.h"
#include "common/util.h"

/* A confused model must not send the walk round in circles. */
#define MAX_CHAIN 64

/* An object path property that points somewhere: "/" is the model's none. */
static bool info_link_set(const char *path)
{
        return !isempty(path) && !streq(path, "/");
}

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
        return info_link_set(next) ? next : NULL;
}

/* A class's glue directory (the "nvme" between a PCI function and nvme0) has no uevent file: it is
 * no device, and in no published kset.  udevadm info -a does not show it as a parent. */
static bool info_glue_directory(json_object *obj)
{
        return streq_ptr(model_string(obj, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_KTYPE),
                         BLKMODEL_KTYPE_DEVICE) &&
               !info_link_set(model_string(obj, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_KSET));
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
static bool info_attribute_skipped(const char *name)
{
        static const char *const skipped[] = {"uevent", "dev",       "modalias", "resource",
                                              "driver", "subsystem", "module"};

        for (size_t i = 0; i < ELEMENTSOF(skipped); i++)
                if (streq(name, skipped[i]))
                        return true;
        return false;
}

static bool info_value_shown(const char *value)
{
        if (value[0] == '/')
                return false;
        for (const char *p = value; *p; p++) {
                if (char_is_control(*p))
                        return false;
                /* The daemon writes bytes that are no text as \xNN: binary files like PCI config. */
                if (p[0] == '\\' && p[1] == 'x' && isxdigit((unsigned char) p[2]) &&
                    isxdigit((unsigned char) p[3]))
                        return false;
        }
        return true;
}

/* One object whose attributes a walk node shows: the node's own, and a disk's queue and scheduler,
 * which udevadm shows as the disk's queue/ and queue/iosched/ (directories without a uevent file). */
typedef struct InfoPart {
        const char *prefix;
        char *path;
        Introspection in;
} InfoPart;

typedef struct InfoNode {
        InfoPart parts[3];
        size_t n_parts;
} InfoNode;

static void info_node_done(InfoNode *n)
{
        for (size_t i = 0; i < n->n_parts; i++) {
                free(n->parts[i].path);
                introspection_done(&n->parts[i].in);
        }
        *n = (InfoNode){};
}

static int info_node_add(InfoNode *n, sd_bus *bus, json_object *model, const char *prefix, const char *path,
                         sd_bus_error *error)
{
        InfoPart *part = &n->parts[n->n_parts];
        int r;

        assert(n->n_parts < ELEMENTSOF(n->parts));
        *part = (InfoPart){.prefix = prefix, .path = strdup(path)};
        if (!part->path)
                return -ENOMEM;
        n->n_parts++;
        r = bus_load_object(bus, path, model, &part->in, error);
        if (r < 0)
                return r;
        return model_object(model, path) ? 0 : -ENOENT;
}

/* The node's own object; for a disk its queue and the queue's scheduler too. */
static int info_node_load(InfoNode *n, sd_bus *bus, json_object *model, const char *path, bool all,
                          sd_bus_error *error)
{
        const char *queue, *elevator;
        int r;

        r = info_node_add(n, bus, model, "", path, error);
        if (r < 0 || !all)
                return r;
        queue = model_string(model_object(model, path), BLKMODEL_IFACE_DISK, BLKMODEL_PROP_QUEUE);
        if (!info_link_set(queue))
                return 0;
        r = info_node_add(n, bus, model, "queue/", queue, error);
        if (r < 0)
                return r;
        elevator = model_string(model_object(model, queue), BLKMODEL_IFACE_QUEUE, BLKMODEL_PROP_ELEVATOR);
        return info_link_set(elevator) ? info_node_add(n, bus, model, "queue/iosched/", elevator, error) : 0;
}

/* udevadm's text for an attribute it may not read; null in JSON. */
#define NOT_READABLE "(not readable)"

/*
 * What udevadm prints for one attribute: 1 and its value; 0 where reading is not allowed (a
 * write-only file, one only root may read: NOT_READABLE); -1 where reading failed (left out).
 * GetAll reports a file that failed as "", so an empty value is asked for again with Get, which says
 * why.  *ret_got holds the value Get returned.
 */
static int info_attribute_value(sd_bus *bus, const char *path, json_object *obj,
                                const IntrospectInterface *f, const IntrospectProperty *prop,
                                const char **ret, json_object **ret_got)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        json_object *v = model_prop(obj, f->name, prop->name);

        if (!prop->readable || !v) /* write-only; or kept from this caller */
                return 0;
        *ret = json_object_get_string(v);
        if (!isempty(*ret))
                return 1;
        if (bus_get_property(bus, path, f->name, prop->name, ret_got, &error) >= 0) {
                *ret = json_object_get_string(*ret_got);
                return 1;
        }
        if (sd_bus_error_has_names(&error, SD_BUS_ERROR_ACCESS_DENIED, BLKMODEL_ERROR_ACCESS_DENIED))
                return 0;
        return -1;
}

/* { "file", "group/file" or "queue/file": value or null (not readable) }, sorted, of the raw
 * attributes, as udevadm names them (by file name, not D-Bus name: msi_irqs/35, not msi_irqs/_35). */
static json_object *info_attributes(sd_bus *bus, json_object *model, const InfoNode *n)
{
        _cleanup_(json_object_putp) json_object *all = json_object_new_object();
        _cleanup_(json_object_putp) json_object *sorted = NULL;

        if (!all)
                return NULL;
        for (size_t i = 0; i < n->n_parts; i++) {
                const InfoPart *part = &n->parts[i];
                json_object *obj = model_object(model, part->path);

                for (size_t j = 0; j < part->in.n_interfaces; j++) {
                        const IntrospectInterface *f = &part->in.interfaces[j];
                        const char *group = startswith(f->name, BLKMODEL_IFACE_GROUP_PREFIX);

                        /* Kobject and Manager have no attribute files; Kset's directory has none either. */
                        if (model_interface_rank(f->name) != 1 && !group)
                                continue;
                        for (size_t k = 0; k < f->n_properties; k++) {
                                _cleanup_(json_object_putp) json_object *got = NULL;
                                _cleanup_(freep) char *key = NULL;
                                const IntrospectProperty *prop = &f->properties[k];
                                const char *value = NULL;
                                int readable, r;

                                if (interface_find_property(f->name, prop->name))
                                        continue;
                                if (asprintf(&key, "%s%s%s%s", part->prefix,
                                             group ? introspect_interface_dir(f) : "", group ? "/" : "",
                                             introspect_property_file(prop)) < 0)
                                        return NULL;
                                if (info_attribute_skipped(key))
                                        continue;
                                readable = info_attribute_value(bus, part->path, obj, f, prop, &value, &got);
                                if (readable < 0 || (readable > 0 && !info_value_shown(value)))
                                        continue;
                                r = json_object_object_add(all, key,
                                                           readable ? json_object_new_string(value) : NULL);
                                if (r < 0)
                                        return NULL;
                        }
                }
        }
        /* Sorted by name, as udevadm prints them. */
        sorted = model_ordered_properties("", all);
        return TAKE_PTR(sorted);
}

static json_object *info_node_json(sd_bus *bus, json_object *model, const InfoNode *n)
{
        const char *path = n->parts[0].path;
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
        json_object_object_add(j, "attributes", info_attributes(bus, model, n));
        return TAKE_PTR(j);
}

/* udevadm's R: the kernel name's trailing number ("sda1" → "1", "0000:00:02.0" → "0"); NULL if none. */
static const char *info_sysnum(const char *name)
{
        const char *p = name + strlen(name);

        while (p > name && isdigit((unsigned char) p[-1]))
                p--;
        return *p ? p : NULL;
}

/* udevadm info -q all: P: devpath, M: name, R: its number, U: subsystem, T: devtype, D: device
 * number, N: node, Q: disk sequence number, V: driver, E: env.  udevadm's L: and S: (link priority
 * and links) are udev's database, not the kernel's: not in the model. */
static void info_print_query(json_object *model, const char *path)
{
        json_object *obj = model_object(model, path);
        json_object *uevent = model_prop(obj, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_UEVENT);
        const char *devpath = strempty(model_string(obj, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_DEVPATH));
        const char *sysnum = info_sysnum(model_name(model, path));
        const char *devtype;
        json_object *v;

        output_line("P: %s", devpath);
        output_line("M: %s", model_name(model, path));
        if (sysnum)
                output_line("R: %s", sysnum);
        if (!isempty(info_subsystem(obj)))
                output_line("U: %s", info_subsystem(obj));
        devtype = json_object_object_get_ex(uevent, "DEVTYPE", &v) ? json_object_get_string(v) : NULL;
        if (devtype)
                output_line("T: %s", devtype);
        if (json_object_object_get_ex(uevent, "MAJOR", &v)) {
                json_object *mi = NULL;

                (void) json_object_object_get_ex(uevent, "MINOR", &mi);
                output_line("D: %c %s:%s", streq(info_subsystem(obj), "block") ? 'b' : 'c',
                       json_object_get_string(v), mi ? json_object_get_string(mi) : "0");
        }
        if (json_object_object_get_ex(uevent, "DEVNAME", &v))
                output_line("N: %s", json_object_get_string(v));
        if (json_object_object_get_ex(uevent, "DISKSEQ", &v))
                output_line("Q: %s", json_object_get_string(v));
        if (!isempty(info_driver(obj)))
                output_line("V: %s", info_driver(obj));
        output_line("O: %s", path);
        output_line("E: DEVPATH=%s", devpath);
        if (!isempty(info_subsystem(obj)))
                output_line("E: SUBSYSTEM=%s", info_subsystem(obj));
        json_object_object_foreach(uevent, key, value)
                output_line("E: %s=%s", key, json_object_get_string(value));
}

/* One device of udevadm info -a: KERNEL==, SUBSYSTEM==, DRIVER==, ATTR{}== (the parents' with S). */
static void info_print_walk_node(sd_bus *bus, json_object *model, const InfoNode *n, bool parent)
{
        const char *path = n->parts[0].path;
        json_object *obj = model_object(model, path);
        _cleanup_(json_object_putp) json_object *attrs = info_attributes(bus, model, n);
        const char *s = parent ? "S" : "";

        output_line("  looking at %sdevice '%s':", parent ? "parent " : "",
               strempty(model_string(obj, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_DEVPATH)));
        output_line("    KERNEL%s==\"%s\"", s, model_name(model, path));
        output_line("    SUBSYSTEM%s==\"%s\"", s, info_subsystem(obj));
        output_line("    DRIVER%s==\"%s\"", s, info_driver(obj));
        json_object_object_foreach(attrs, name, value)
                output_line("    ATTR%s{%s}==\"%s\"", s, name,
                       value ? json_object_get_string(value) : NOT_READABLE);
        fputc('\n', stdout);
}

static void info_chain_done(InfoNode (*chain)[MAX_CHAIN])
{
        for (size_t i = 0; i < MAX_CHAIN; i++)
                info_node_done(&(*chain)[i]);
}

int cmd_info(Ctl *ctl, char **args, int n_args)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(json_object_putp) json_object *model = json_object_new_object(), *j = NULL;
        _cleanup_(freep) char *path = NULL;
        _cleanup_(info_chain_done) InfoNode chain[MAX_CHAIN] = {};
        size_t n = 0;
        sd_bus *bus = NULL;
        int r;

        if (!model)
                return ctl_fail("Out of memory");
        r = ctl_resolve(ctl, args[0], &bus, &path);
        if (r != EXIT_OK)
                return r;

        /* Up the chain, one object at a time: only these few are needed, not the whole model. */
        for (const char *p = path; p && n < (ctl->all ? MAX_CHAIN : 1);) {
                json_object *obj;

                if (model_object(model, p))
                        break; /* a loop */
                r = info_node_load(&chain[n], bus, model, p, ctl->all, &error);
                if (r == -ENOENT)
                        return ctl_fail("No such object: %s (%s)", p, BLKMODEL_ERROR_NO_SUCH_OBJECT);
                if (r < 0)
                        return bus_report_error(ctl, &error, r, args[0]);
                obj = model_object(model, chain[n].parts[0].path);
                /* The Manager: no DevPath, no uevent, nothing udevadm would show. */
                if (!model_prop(obj, BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_DEVPATH))
                        return ctl_fail("Not a kobject: %s", p);
                p = info_up(obj);
                if (n > 0 && info_glue_directory(obj))
                        info_node_done(&chain[n]);
                else
                        n++;
        }

        if (ctl->json) {
                json_object *parents;

                j = info_node_json(bus, model, &chain[0]);
                parents = j ? json_add_array(j, "parents") : NULL;
                if (!parents)
                        return ctl_fail("Out of memory");
                for (size_t i = 1; i < n; i++)
                        if (json_object_array_add(parents, info_node_json(bus, model, &chain[i])) < 0)
                                return ctl_fail("Out of memory");
                output_json(j, true);
                return EXIT_OK;
        }

        if (!ctl->all) {
                info_print_query(model, chain[0].parts[0].path);
                return EXIT_OK;
        }
        printf("\n"
               "blkmodelctl info -a starts with the object given and walks up the chain of\n"
               "parent devices, as udevadm info -a does. It prints for every device found\n"
               "its attributes in the udev rules key format; a rule can match the device's\n"
               "and those of one single parent device.\n\n");
        for (size_t i = 0; i < n; i++)
                info_print_walk_node(bus, model, &chain[i], i > 0);
        return EXIT_OK;
}
