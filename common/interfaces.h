/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/*
 * The model's own properties, per interface (SPEC §4): their names, D-Bus
 * types, how their changes are announced and what they derive from.  One
 * table for the daemon, which serves them, and for blkmodelctl, which
 * tells them apart from the raw attribute properties beside them.
 */

/* org.freedesktop.DBus.Property.EmitsChangedSignal */
typedef enum PropertyEmits {
        PROPERTY_EMITS_TRUE,
        PROPERTY_EMITS_INVALIDATES,
        PROPERTY_EMITS_CONST,
        PROPERTY_EMITS_FALSE,
} PropertyEmits;

typedef enum PropertyId {
        /* org.blkmodel1.Kobject */
        PROP_NAME,
        PROP_DEVPATH,
        PROP_PARENT,
        PROP_KSET,
        PROP_KTYPE,
        PROP_UEVENT,
        /* the kinds' typed properties */
        PROP_MAJOR,
        PROP_MINOR,
        PROP_SIZE,
        PROP_READ_ONLY,
        PROP_REMOVABLE,
        PROP_PARTITIONS,
        PROP_HOLDERS,
        PROP_SLAVES,
        PROP_QUEUE,
        PROP_DEVICE,
        PROP_NUMBER,
        PROP_START,
        PROP_SCHEDULER,
        PROP_SCHEDULERS,
        PROP_ELEVATOR,
        PROP_MEMBERS,
        PROP_SUBSYSTEM,
        PROP_DRIVER,
        _PROP_MAX,
} PropertyId;

/* What a property's value is read from, when not a plain attribute file. */
#define PROPERTY_SOURCE_UEVENT "uevent"
#define PROPERTY_SOURCE_HOLDERS "holders/"
#define PROPERTY_SOURCE_SLAVES "slaves/"
#define PROPERTY_SOURCE_SUBSYSTEM "subsystem@"
#define PROPERTY_SOURCE_DRIVER "driver@"

typedef struct PropertyInfo {
        PropertyId id;
        const char *name;
        const char *signature;
        PropertyEmits emits;
        bool writable;
        /* The attribute file (or PROPERTY_SOURCE_*) its value derives from; NULL when the
         * model's structure alone decides it (Partitions, Queue, Elevator, Members …). */
        const char *source;
} PropertyInfo;

/* Arrays end with an entry whose name is NULL. */
extern const PropertyInfo kobject_properties[];
extern const PropertyInfo kset_properties[];
extern const PropertyInfo disk_properties[];
extern const PropertyInfo partition_properties[];
extern const PropertyInfo queue_properties[];
extern const PropertyInfo elevator_properties[];
extern const PropertyInfo device_properties[];

/* The typed properties of one of the model's interfaces (Kobject included), in the model's order;
 * NULL for any other name. */
const PropertyInfo *interface_properties(const char *interface);
/* One typed property, or NULL: how a raw attribute is told from the model's own properties. */
const PropertyInfo *interface_find_property(const char *interface, const char *name);

/* "true", "invalidates", "const", "false". */
const char *property_emits_to_string(PropertyEmits e);
