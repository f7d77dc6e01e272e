/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>

#include "bus-manager.h"
#include "eventlog.h"
#include "log.h"
#include "names.h"
#include "resolve.h"
#include "sysfs.h"
#include "uevent.h"
#include "common/util.h"

const char bus_manager_introspection_xml[] =
                " <interface name=\"" BLKMODEL_IFACE_MANAGER "\">\n"
                "  <method name=\"GetEvents\">\n"
                "   <arg type=\"t\" name=\"after\" direction=\"in\"/>\n"
                "   <arg type=\"a(tssoa{ss})\" name=\"events\" direction=\"out\"/>\n"
                "  </method>\n"
                "  <method name=\"Resolve\">\n"
                "   <arg type=\"s\" name=\"spec\" direction=\"in\"/>\n"
                "   <arg type=\"o\" name=\"object\" direction=\"out\"/>\n"
                "  </method>\n"
                "  <method name=\"Rescan\">\n"
                "  </method>\n"
                "  <method name=\"Trigger\">\n"
                "   <arg type=\"o\" name=\"object\" direction=\"in\"/>\n"
                "   <arg type=\"s\" name=\"action\" direction=\"in\"/>\n"
                "  </method>\n"
                "  <signal name=\"Uevent\">\n"
                "   <arg type=\"t\" name=\"seqnum\"/>\n"
                "   <arg type=\"s\" name=\"action\"/>\n"
                "   <arg type=\"s\" name=\"devpath\"/>\n"
                "   <arg type=\"o\" name=\"object\"/>\n"
                "   <arg type=\"a{ss}\" name=\"env\"/>\n"
                "  </signal>\n"
                "  <property name=\"Version\" type=\"s\" access=\"read\">\n"
                "   <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" "
                "value=\"const\"/>\n"
                "  </property>\n"
                "  <property name=\"SysfsRoot\" type=\"s\" access=\"read\">\n"
                "   <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" "
                "value=\"const\"/>\n"
                "  </property>\n"
                "  <property name=\"UeventSource\" type=\"s\" access=\"read\">\n"
                "   <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" "
                "value=\"const\"/>\n"
                "  </property>\n"
                "  <property name=\"LastSeqnum\" type=\"t\" access=\"read\">\n"
                "   <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" "
                "value=\"false\"/>\n"
                "  </property>\n"
                "  <property name=\"OldestSeqnum\" type=\"t\" access=\"read\">\n"
                "   <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" "
                "value=\"false\"/>\n"
                "  </property>\n"
                "  <property name=\"EventsLost\" type=\"t\" access=\"read\">\n"
                "   <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" value=\"true\"/>\n"
                "  </property>\n"
                "  <property name=\"ObjectCount\" type=\"u\" access=\"read\">\n"
                "   <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" "
                "value=\"false\"/>\n"
                "  </property>\n"
                " </interface>\n";

#define IFACE_PROPERTIES "org.freedesktop.DBus.Properties"

typedef struct ManagerProperty {
        const char *name;
        const char *signature;
} ManagerProperty;

static const ManagerProperty manager_properties[] = {
                {"Version", "s"},      {"SysfsRoot", "s"},  {"UeventSource", "s"}, {"LastSeqnum", "t"},
                {"OldestSeqnum", "t"}, {"EventsLost", "t"}, {"ObjectCount", "u"},
};

static int append_manager_property(Manager *m, sd_bus_message *reply, const ManagerProperty *p)
{
        const char *n = p->name;

        if (streq(n, "Version"))
                return sd_bus_message_append(reply, "v", "s", BLKMODEL_VERSION);
        if (streq(n, "SysfsRoot"))
                return sd_bus_message_append(reply, "v", "s", m->sysfs.root);
        if (streq(n, "UeventSource"))
                return sd_bus_message_append(reply, "v", "s", manager_uevent_source_name(m));
        if (streq(n, "LastSeqnum"))
                return sd_bus_message_append(reply, "v", "t", manager_last_seqnum(m));
        if (streq(n, "OldestSeqnum"))
                return sd_bus_message_append(reply, "v", "t", manager_oldest_seqnum(m));
        if (streq(n, "EventsLost"))
                return sd_bus_message_append(reply, "v", "t", m->events_lost);
        if (streq(n, "ObjectCount"))
                return sd_bus_message_append(reply, "v", "u", (uint32_t) m->model->n_objects);
        return -ENOENT;
}

bool bus_is_call(sd_bus_message *msg, const char *interface, const char *member)
{
        const char *i = sd_bus_message_get_interface(msg);
        /* D-Bus allows calls without an interface: then the member alone decides. */
        return streq_ptr(sd_bus_message_get_member(msg), member) && (!i || streq(i, interface));
}

static int property_get(Manager *m, sd_bus_message *msg, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *interface, *property;
        int r;

        r = sd_bus_message_read(msg, "ss", &interface, &property);
        if (r < 0)
                return r;
        if (!streq(interface, BLKMODEL_IFACE_MANAGER))
                return sd_bus_error_setf(error, SD_BUS_ERROR_UNKNOWN_INTERFACE,
                                         "Object " BLKMODEL_ROOT_PATH " has no interface '%s'.", interface);
        for (size_t i = 0; i < ELEMENTSOF(manager_properties); i++)
                if (streq(manager_properties[i].name, property)) {
                        r = sd_bus_message_new_method_return(msg, &reply);
                        if (r >= 0)
                                r = append_manager_property(m, reply, &manager_properties[i]);
                        return r < 0 ? r : sd_bus_send(NULL, reply, NULL);
                }
        return sd_bus_error_setf(error, SD_BUS_ERROR_UNKNOWN_PROPERTY, "Interface %s has no property '%s'.",
                                 interface, property);
}

static int property_get_all(Manager *m, sd_bus_message *msg, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *interface;
        int r;

        r = sd_bus_message_read(msg, "s", &interface);
        if (r < 0)
                return r;
        if (!streq(interface, BLKMODEL_IFACE_MANAGER))
                return sd_bus_error_setf(error, SD_BUS_ERROR_UNKNOWN_INTERFACE,
                                         "Object " BLKMODEL_ROOT_PATH " has no interface '%s'.", interface);
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "{sv}");
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(manager_properties); i++) {
                r = sd_bus_message_open_container(reply, 'e', "sv");
                if (r >= 0)
                        r = sd_bus_message_append(reply, "s", manager_properties[i].name);
                if (r >= 0)
                        r = append_manager_property(m, reply, &manager_properties[i]);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r < 0 ? r : sd_bus_send(NULL, reply, NULL);
}

static int method_resolve(Manager *m, sd_bus_message *msg, sd_bus_error *error)
{
        const char *spec;
        Kobject *k;
        int r;

        r = sd_bus_message_read(msg, "s", &spec);
        if (r < 0)
                return r;
        r = resolve_spec(m->model, spec, &k);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return sd_bus_error_setf(error, BLKMODEL_ERROR_NO_SUCH_OBJECT, "No such object: %s", spec);
        return sd_bus_reply_method_return(msg, "o", k ? k->path : BLKMODEL_ROOT_PATH);
}

/* Root, or the daemon's own uid (a session daemon's user). Asked of the bus, not of /proc: no pid races. */
int bus_check_privileged(Manager *m, sd_bus_message *msg, sd_bus_error *error)
{
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        uid_t euid;
        int r;

        r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID, &creds);
        if (r >= 0)
                r = sd_bus_creds_get_euid(creds, &euid);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Cannot determine the caller's identity: %m");
        if (euid != 0 && euid != geteuid())
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "%s.%s() is for root only.",
                                         strempty(sd_bus_message_get_interface(msg)),
                                         strempty(sd_bus_message_get_member(msg)));
        return 0;
}

static int method_rescan(Manager *m, sd_bus_message *msg, sd_bus_error *error)
{
        int r;

        r = bus_check_privileged(m, msg, error);
        if (r < 0)
                return r;
        r = manager_rescan(m);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Rescan failed: %m");
        return sd_bus_reply_method_return(msg, NULL);
}

static int append_event(sd_bus_message *reply, const EventRecord *e)
{
        int r;

        r = sd_bus_message_append(reply, "tsso", e->seqnum, e->action, e->devpath, e->object_path);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "{ss}");
        for (size_t i = 0; r >= 0 && i < e->n_env; i++)
                r = sd_bus_message_append(reply, "{ss}", e->env_keys[i], e->env_values[i]);
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int method_get_events(Manager *m, sd_bus_message *msg, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        size_t first, n;
        uint64_t after;
        int r;

        r = sd_bus_message_read(msg, "t", &after);
        if (r < 0)
                return r;
        r = eventlog_since(m->events, after, &first, &n);
        if (r == -ESTALE)
                return sd_bus_error_setf(error, BLKMODEL_ERROR_EVENTS_EXPIRED,
                                         "Events after %" PRIu64
                                         " are no longer retained (oldest is %" PRIu64
                                         "); resynchronize with GetManagedObjects.",
                                         after, eventlog_oldest_seqnum(m->events));
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Cannot list the events after %" PRIu64 ": %m",
                                               after);

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(tssoa{ss})");
        for (size_t i = 0; r >= 0 && i < n; i++) {
                r = sd_bus_message_open_container(reply, 'r', "tssoa{ss}");
                if (r >= 0)
                        r = append_event(reply, eventlog_get(m->events, first + i));
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r < 0 ? r : sd_bus_send(NULL, reply, NULL);
}

static int method_trigger(Manager *m, sd_bus_message *msg, sd_bus_error *error)
{
        const char *path, *action;
        Kobject *k;
        int fd, r;

        r = sd_bus_message_read(msg, "os", &path, &action);
        if (r < 0)
                return r;
        if (isempty(action))
                action = "change";
        /* The kernel takes "ACTION [UUID [KEY=VALUE…]]"; we pass the known action names only. */
        if (uevent_action_from_string(action) < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Unknown uevent action '%s'.",
                                         action);
        k = model_find_path(m->model, path);
        if (!k)
                return sd_bus_error_setf(error, BLKMODEL_ERROR_NO_SUCH_OBJECT, "No such object: %s", path);
        if (k->ktype->id != KTYPE_DISK && k->ktype->id != KTYPE_PARTITION && k->ktype->id != KTYPE_DEVICE)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "%s is a %s: it has no uevent file to trigger.", path,
                                         k->ktype->name);
        r = bus_check_privileged(m, msg, error);
        if (r < 0)
                return r;

        fd = sysfs_open_dir(&m->sysfs, k->devpath);
        if (fd < 0)
                return sd_bus_error_set_errnof(error, fd, "Cannot open %s: %m", k->devpath);
        r = sysfs_write_attr(fd, "uevent", action);
        close(fd);
        if (r < 0)
                return sd_bus_error_setf(error, BLKMODEL_ERROR_WRITE_FAILED,
                                         "Writing '%s' to %s/uevent failed: %s", action, k->devpath,
                                         strerror(-r));
        return sd_bus_reply_method_return(msg, NULL);
}

int bus_manager_emit_uevent(Manager *m, const EventRecord *e)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *s = NULL;
        int r;

        if (!m->bus)
                return 0;
        r = sd_bus_message_new_signal(m->bus, &s, BLKMODEL_ROOT_PATH, BLKMODEL_IFACE_MANAGER, "Uevent");
        if (r >= 0)
                r = append_event(s, e);
        if (r >= 0)
                r = sd_bus_send(m->bus, s, NULL);
        return r;
}

int bus_manager_emit_events_lost(Manager *m)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *s = NULL;
        int r;

        if (!m->bus || !m->announce)
                return 0;
        r = sd_bus_message_new_signal(m->bus, &s, BLKMODEL_ROOT_PATH, IFACE_PROPERTIES, "PropertiesChanged");
        if (r >= 0)
                r = sd_bus_message_append(s, "sa{sv}as", BLKMODEL_IFACE_MANAGER, 1, "EventsLost", "t",
                                          m->events_lost, 0);
        if (r >= 0)
                r = sd_bus_send(m->bus, s, NULL);
        return r;
}

int bus_check_signature(sd_bus_message *msg, const char *signature, sd_bus_error *error)
{
        if (sd_bus_message_has_signature(msg, signature))
                return 0;
        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                 "Invalid arguments '%s' to %s(), expected '%s'.",
                                 strempty(sd_bus_message_get_signature(msg, true)),
                                 strempty(sd_bus_message_get_member(msg)), signature);
}

int bus_manager_dispatch(Manager *m, sd_bus_message *msg, sd_bus_error *error)
{
        if (bus_is_call(msg, IFACE_PROPERTIES, "Get"))
                return bus_check_signature(msg, "ss", error) ?: property_get(m, msg, error);
        if (bus_is_call(msg, IFACE_PROPERTIES, "GetAll"))
                return bus_check_signature(msg, "s", error) ?: property_get_all(m, msg, error);
        if (bus_is_call(msg, IFACE_PROPERTIES, "Set"))
                return bus_check_signature(msg, "ssv", error)
                                       ?: sd_bus_error_setf(error, SD_BUS_ERROR_PROPERTY_READ_ONLY,
                                                            "The properties of " BLKMODEL_IFACE_MANAGER
                                                            " are read-only.");
        if (bus_is_call(msg, BLKMODEL_IFACE_MANAGER, "Resolve"))
                return bus_check_signature(msg, "s", error) ?: method_resolve(m, msg, error);
        if (bus_is_call(msg, BLKMODEL_IFACE_MANAGER, "Rescan"))
                return bus_check_signature(msg, "", error) ?: method_rescan(m, msg, error);
        if (bus_is_call(msg, BLKMODEL_IFACE_MANAGER, "GetEvents"))
                return bus_check_signature(msg, "t", error) ?: method_get_events(m, msg, error);
        if (bus_is_call(msg, BLKMODEL_IFACE_MANAGER, "Trigger"))
                return bus_check_signature(msg, "os", error) ?: method_trigger(m, msg, error);
        return 0;
}
