/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "kobject.h"
#include "manager.h"

/*
 * Publication of the model's kobjects.  One fallback handler below the
 * root path serves Introspect, Properties and ObjectManager for every
 * object: sd-bus vtables keep per-object and per-property state, which at
 * 100,000 objects with dozens of attributes each would cost more than the
 * whole model (SPEC §9).  Here an object costs nothing beyond the model:
 * its interfaces follow from its ktype and its interned shape.
 */

int bus_object_register(Manager *m);

/* dbus-daemon's default largest message on the system bus, and the protocol's own limit. */
#define BUS_SYSTEM_MESSAGE_MAX ((size_t) 32 << 20)
#define BUS_MESSAGE_MAX ((size_t) 128 << 20)
/* The protocol's largest array: GetManagedObjects' reply is one. */
#define BUS_ARRAY_MAX ((size_t) 64 << 20)

/*
 * Appends the a{sa{sv}} of one object for GetManagedObjects and InterfacesAdded: every interface,
 * with the Kobject and typed properties.  Raw attribute values are left to Get and GetAll: all of
 * them for 10,000 disks would be 136 MiB, more than a D-Bus message may be, and ~3 million reads.
 */
int bus_object_append_all(Manager *m, sd_bus_message *reply, Kobject *k);
/* An upper bound of the bytes bus_object_append_all() appends for k. */
size_t bus_object_size_estimate(const Kobject *k);
/* Appends the as of one object's interface names. */
int bus_object_append_interface_names(Manager *m, sd_bus_message *reply, Kobject *k);

typedef enum BusRefresh {
        BUS_REFRESH_RECORD, /* read and remember, announce nothing */
        BUS_REFRESH_ALL,    /* re-read everything, announce what changed */
        BUS_REFRESH_LINKS,  /* only holders/ and slaves/ */
        BUS_REFRESH_WATCHED, /* only what changes without an event (a queue's scheduler, read-ahead) */
} BusRefresh;

/*
 * Re-reads what an object's properties derive from and emits PropertiesChanged, per interface,
 * for exactly the properties whose value differs from the last reading (all of them if there
 * was none).  Returns the number of properties announced.
 */
int bus_object_refresh(Manager *m, Kobject *k, BusRefresh how);

/*
 * The object's directory gained or lost attribute files or groups (a loop device's loop/ comes
 * with its backing file): InterfacesRemoved for the interfaces that went or changed, then
 * InterfacesAdded for those that came or changed, PropertiesChanged for the rest.  Takes over
 * the caller's reference to shape.
 */
int bus_object_reshape(Manager *m, Kobject *k, Shape *shape);

/* PropertiesChanged for one typed property of the object's kind interface: with its new value,
 * or (with_value false) as invalidated. */
int bus_object_emit_property_changed(Manager *m, Kobject *k, const char *property, bool with_value);

/* ObjectManager signals for one object. */
int bus_object_emit_added(Manager *m, Kobject *k);
int bus_object_emit_removed(Manager *m, Kobject *k);
