/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "base/log.h"
#include "blkmodel/names.h"
#include "bus/bus-internal.h"
#include "bus/errors.h"

/* What live announces, as the signals a caching client builds its view from.  Each asks the backlog
 * first: while the bus reads nothing from us, signals are counted, not queued (bus/backlog.c). */

/*
 * r: how building the signal went; bound: its body's size at most.  One the bus would drop the
 * daemon for (a bus configured with a small limit; an object with hundreds of large files) is not
 * sent: SignalsDropped tells subscribers to resync, as when the bus stalled (e: its Uevent, if any).
 * So is one whose values could not be read for want of descriptors or memory.
 */
void bus_send_signal(Publisher *p, sd_bus_message *s, int r, size_t bound, const EventRecord *e,
                     const char *what, const char *path)
{
        if (r >= 0 && bound > bus_reply_body_max(p)) {
                char sizes[128];

                bus_sizes_text(bound, bus_reply_body_max(p), sizes, sizeof(sizes));
                log_warning("%s for %s not sent: %s; SignalsDropped tells subscribers.", what, path, sizes);
                backlog_oversized(p->backlog, e);
                return;
        }
        if (r < 0 && errno_is_resource(r)) {
                /* Its values could not be read: sent with "" for them, it would tell what is not so. */
                log_warning_errno(r, "%s for %s not sent: %m; SignalsDropped tells subscribers.", what, path);
                backlog_oversized(p->backlog, e);
                return;
        }
        if (r < 0) {
                if (!bus_gone_error(r))
                        log_warning_errno(r, "Cannot send %s for %s: %m", what, path);
                return;
        }
        bus_send_in_order(p, s, bound, e ? e->seqnum : 0);
}

void publisher_object_added(Publisher *p, Kobject *k, ObjDir *d)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *s = NULL;
        size_t bound;
        int r;

        if (!backlog_admit(p->backlog, NULL))
                return;

        r = sd_bus_message_new_signal(p->bus, &s, BLKMODEL_ROOT_PATH, IFACE_OBJECT_MANAGER,
                                      "InterfacesAdded");
        if (r >= 0)
                r = sd_bus_message_append(s, "o", k->path);
        /* The path, the a{sa{sv}}'s length, the padding to its first entry. */
        bound = wire_dict_head(k->path);
        if (r >= 0)
                r = bus_append_object(p, s, k, d, false, &bound);
        bus_send_signal(p, s, r, bound, NULL, "InterfacesAdded", k->path);
}

void publisher_object_removed(Publisher *p, Kobject *k)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *s = NULL;
        size_t bound;
        int r;

        if (!backlog_admit(p->backlog, NULL))
                return;

        r = sd_bus_message_new_signal(p->bus, &s, BLKMODEL_ROOT_PATH, IFACE_OBJECT_MANAGER,
                                      "InterfacesRemoved");
        if (r >= 0)
                r = sd_bus_message_append(s, "o", k->path);
        bound = wire_string_end(0, k->path) + 4;
        if (r >= 0)
                r = bus_append_interface_names(s, k, &bound);
        bus_send_signal(p, s, r, bound, NULL, "InterfacesRemoved", k->path);
}

void publisher_interfaces_changed(Publisher *p, Kobject *k, char *const *interfaces, bool added, ObjDir *d)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *s = NULL;
        _cleanup_(objdir_donep) ObjDir own = OBJDIR_INIT(p->sysfs, k);
        size_t bound;
        Iface iface;
        int r;

        if (!backlog_admit(p->backlog, NULL))
                return;
        r = sd_bus_message_new_signal(p->bus, &s, BLKMODEL_ROOT_PATH, IFACE_OBJECT_MANAGER,
                                      added ? "InterfacesAdded" : "InterfacesRemoved");
        if (r >= 0)
                r = sd_bus_message_append(s, "o", k->path);
        /* The path, then the array's length (and for an a{sa{sv}}, the padding to its first entry). */
        bound = added ? wire_dict_head(k->path) : wire_align(wire_string_end(0, k->path), 4) + 4;
        if (r >= 0 && !added)
                r = sd_bus_message_append_strv(s, (char **) interfaces);
        for (char *const *i = interfaces; !added && i && *i; i++)
                bound = wire_string_end(bound, *i);
        if (r >= 0 && added) {
                r = sd_bus_message_open_container(s, 'a', "{sa{sv}}");
                for (size_t i = 0; r >= 0 && i < kobject_n_ifaces(k); i++) {
                        kobject_iface(k, i, &iface);
                        if (!strv_contains(interfaces, iface.name))
                                continue;
                        r = sd_bus_message_open_container(s, 'e', "sa{sv}");
                        if (r >= 0)
                                r = sd_bus_message_append(s, "s", iface.name);
                        bound += wire_dict_head(iface.name);
                        if (r >= 0)
                                r = bus_append_iface_properties(p, d ?: &own, &iface, s, false, &bound);
                        if (r >= 0)
                                r = sd_bus_message_close_container(s);
                }
                if (r >= 0)
                        r = sd_bus_message_close_container(s);
        }
        bus_send_signal(p, s, r, bound, NULL, added ? "InterfacesAdded" : "InterfacesRemoved", k->path);
}

void publisher_properties_changed(Publisher *p, Kobject *k, const char *interface, char *const *changed,
                                  char *const *invalidated, ObjDir *d)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *s = NULL;
        _cleanup_(objdir_donep) ObjDir own = OBJDIR_INIT(p->sysfs, k);
        size_t bound = wire_string_end(0, interface) + 8;
        Iface iface;
        int r;

        if (!kobject_find_iface(k, interface, &iface))
                return;
        if (!backlog_admit(p->backlog, NULL))
                return;
        r = sd_bus_message_new_signal(p->bus, &s, k->path, IFACE_PROPERTIES, "PropertiesChanged");
        if (r >= 0)
                r = sd_bus_message_append(s, "s", interface);
        if (r >= 0)
                r = sd_bus_message_open_container(s, 'a', "{sv}");
        for (char *const *c = changed; r >= 0 && c && *c; c++) {
                const Attr *a = iface.attrs ? attr_set_find(iface.attrs, *c) : NULL;
                /* A signal goes to everyone: a value only root may read goes by name only. */
                if (a && (a->flags & ATTR_PRIVILEGED))
                        continue;
                r = sd_bus_message_open_container(s, 'e', "sv");
                if (r >= 0)
                        r = sd_bus_message_append(s, "s", *c);
                if (r >= 0)
                        r = bus_append_property(p, d ?: &own, &iface, *c, s, true, &bound, NULL);
                if (r >= 0)
                        r = sd_bus_message_close_container(s);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(s);
        if (r >= 0)
                r = sd_bus_message_open_container(s, 'a', "s");
        bound = wire_align(bound, 4) + 4;
        for (char *const *c = invalidated; r >= 0 && c && *c; c++) {
                r = sd_bus_message_append(s, "s", *c);
                bound = wire_string_end(bound, *c);
        }
        for (char *const *c = changed; r >= 0 && c && *c; c++) {
                const Attr *a = iface.attrs ? attr_set_find(iface.attrs, *c) : NULL;
                if (a && (a->flags & ATTR_PRIVILEGED)) {
                        r = sd_bus_message_append(s, "s", *c);
                        bound = wire_string_end(bound, *c);
                }
        }
        if (r >= 0)
                r = sd_bus_message_close_container(s);
        bus_send_signal(p, s, r, bound, NULL, "PropertiesChanged", k->path);
}
