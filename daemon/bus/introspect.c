/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>

#include "bus/bus-internal.h"

#define INTROSPECT_DOCTYPE                                                                                  \
        "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\"\n"                \
        "\"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n"

static const char standard_interfaces_xml[] =
                " <interface name=\"org.freedesktop.DBus.Peer\">\n"
                "  <method name=\"Ping\"/>\n"
                "  <method name=\"GetMachineId\">\n"
                "   <arg type=\"s\" name=\"machine_uuid\" direction=\"out\"/>\n"
                "  </method>\n"
                " </interface>\n"
                " <interface name=\"org.freedesktop.DBus.Introspectable\">\n"
                "  <method name=\"Introspect\">\n"
                "   <arg name=\"data\" type=\"s\" direction=\"out\"/>\n"
                "  </method>\n"
                " </interface>\n"
                " <interface name=\"org.freedesktop.DBus.Properties\">\n"
                "  <method name=\"Get\">\n"
                "   <arg name=\"interface_name\" direction=\"in\" type=\"s\"/>\n"
                "   <arg name=\"property_name\" direction=\"in\" type=\"s\"/>\n"
                "   <arg name=\"value\" direction=\"out\" type=\"v\"/>\n"
                "  </method>\n"
                "  <method name=\"GetAll\">\n"
                "   <arg name=\"interface_name\" direction=\"in\" type=\"s\"/>\n"
                "   <arg name=\"props\" direction=\"out\" type=\"a{sv}\"/>\n"
                "  </method>\n"
                "  <method name=\"Set\">\n"
                "   <arg name=\"interface_name\" direction=\"in\" type=\"s\"/>\n"
                "   <arg name=\"property_name\" direction=\"in\" type=\"s\"/>\n"
                "   <arg name=\"value\" direction=\"in\" type=\"v\"/>\n"
                "  </method>\n"
                "  <signal name=\"PropertiesChanged\">\n"
                "   <arg type=\"s\" name=\"interface_name\"/>\n"
                "   <arg type=\"a{sv}\" name=\"changed_properties\"/>\n"
                "   <arg type=\"as\" name=\"invalidated_properties\"/>\n"
                "  </signal>\n"
                " </interface>\n";

/* A kset, a disk or a device answers GetManagedObjects for its part of the model; the signals come
 * from the root. */
static const char kset_object_manager_xml[] =
                " <interface name=\"org.freedesktop.DBus.ObjectManager\">\n"
                "  <method name=\"GetManagedObjects\">\n"
                "   <arg type=\"a{oa{sa{sv}}}\" name=\"object_paths_interfaces_and_properties\" "
                "direction=\"out\"/>\n"
                "  </method>\n"
                " </interface>\n";

/* "true" is the default of EmitsChangedSignal: left out, which keeps `busctl tree` over 100,000
 * objects from parsing megabytes of annotations. */
static void xml_property(FILE *f, const char *name, const char *signature, bool writable,
                         PropertyEmits emits)
{
        const char *access = writable ? "readwrite" : "read";

        if (emits == PROPERTY_EMITS_TRUE) {
                fprintf(f, "  <property name=\"%s\" type=\"%s\" access=\"%s\"/>\n", name, signature, access);
                return;
        }
        fprintf(f,
                "  <property name=\"%s\" type=\"%s\" access=\"%s\">\n"
                "   <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" value=\"%s\"/>\n"
                "  </property>\n",
                name, signature, access, property_emits_to_string(emits));
}

static void xml_iface(FILE *f, const Iface *iface)
{
        fprintf(f, " <interface name=\"%s\">\n", iface->name);
        for (const PropertyInfo *p = iface->properties; p->name; p++)
                xml_property(f, p->name, p->signature, p->writable, p->emits);
        for (size_t i = 0; iface->attrs && i < iface->attrs->n_attrs; i++) {
                const Attr *a = &iface->attrs->attrs[i];
                xml_property(f, a->member, "s", a->flags & ATTR_WRITABLE,
                             a->flags & ATTR_VOLATILE ? PROPERTY_EMITS_FALSE : PROPERTY_EMITS_TRUE);
        }
        fputs(" </interface>\n", f);
}

int bus_introspect(Publisher *p, const char *path, Kobject *k, char **ret)
{
        _cleanup_(freep) Kobject **children = NULL;
        size_t n_children = 0, size = 0;
        char *buf = NULL;
        Iface iface;
        FILE *f;
        int r;

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        fputs(INTROSPECT_DOCTYPE, f);
        fprintf(f, "<node name=\"%s\">\n", path);
        fputs(standard_interfaces_xml, f);
        for (size_t i = 0; i < kobject_n_ifaces(k); i++) {
                kobject_iface(k, i, &iface);
                xml_iface(f, &iface);
        }
        if (bus_object_is_manager(k))
                fputs(kset_object_manager_xml, f);
        r = kobject_children_sorted(k, _KTYPE_MAX, &children, &n_children);
        for (size_t i = 0; r >= 0 && i < n_children; i++)
                fprintf(f, " <node name=\"%s\"/>\n", strrchr(children[i]->path, '/') + 1);
        fputs("</node>\n", f);
        if (fclose(f) != 0 || r < 0) {
                free(buf);
                return r < 0 ? r : -ENOMEM;
        }
        *ret = buf;
        return 0;
}
