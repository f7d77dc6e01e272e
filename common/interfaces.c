/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stddef.h>

#include "blkmodel/names.h"
#include "common/interfaces.h"
#include "common/util.h"

/* A kobject's identity never changes (a rename is remove + add); its uevent file does. */
const PropertyInfo kobject_properties[] = {
                {PROP_NAME, BLKMODEL_PROP_NAME, "s", PROPERTY_EMITS_CONST},
                {PROP_DEVPATH, BLKMODEL_PROP_DEVPATH, "s", PROPERTY_EMITS_CONST},
                {PROP_PARENT, BLKMODEL_PROP_PARENT, "o", PROPERTY_EMITS_CONST},
                {PROP_KSET, BLKMODEL_PROP_KSET, "o", PROPERTY_EMITS_CONST},
                {PROP_KTYPE, BLKMODEL_PROP_KTYPE, "s", PROPERTY_EMITS_CONST},
                {PROP_UEVENT, BLKMODEL_PROP_UEVENT, "a{ss}", PROPERTY_EMITS_TRUE,
                 .source = PROPERTY_SOURCE_UEVENT},
                {},
};

const PropertyInfo kset_properties[] = {
                /* Thousands of paths, changed by every disk that comes or goes: InterfacesAdded and
                 * InterfacesRemoved say which, the property is only invalidated. */
                {PROP_MEMBERS, BLKMODEL_PROP_MEMBERS, "ao", PROPERTY_EMITS_INVALIDATES},
                {},
};

const PropertyInfo disk_properties[] = {
                {PROP_MAJOR, BLKMODEL_PROP_MAJOR, "u", PROPERTY_EMITS_TRUE, .source = "dev"},
                {PROP_MINOR, BLKMODEL_PROP_MINOR, "u", PROPERTY_EMITS_TRUE, .source = "dev"},
                {PROP_SIZE, BLKMODEL_PROP_SIZE, "t", PROPERTY_EMITS_TRUE, .source = "size"},
                {PROP_READ_ONLY, BLKMODEL_PROP_READ_ONLY, "b", PROPERTY_EMITS_TRUE, .source = "ro"},
                {PROP_REMOVABLE, BLKMODEL_PROP_REMOVABLE, "b", PROPERTY_EMITS_TRUE, .source = "removable"},
                {PROP_PARTITIONS, BLKMODEL_PROP_PARTITIONS, "ao", PROPERTY_EMITS_TRUE},
                {PROP_HOLDERS, BLKMODEL_PROP_HOLDERS, "ao", PROPERTY_EMITS_TRUE,
                 .source = PROPERTY_SOURCE_HOLDERS},
                {PROP_SLAVES, BLKMODEL_PROP_SLAVES, "ao", PROPERTY_EMITS_TRUE,
                 .source = PROPERTY_SOURCE_SLAVES},
                {PROP_QUEUE, BLKMODEL_PROP_QUEUE, "o", PROPERTY_EMITS_CONST},
                {PROP_DEVICE, BLKMODEL_PROP_DEVICE, "o", PROPERTY_EMITS_CONST},
                {},
};

const PropertyInfo partition_properties[] = {
                {PROP_MAJOR, BLKMODEL_PROP_MAJOR, "u", PROPERTY_EMITS_TRUE, .source = "dev"},
                {PROP_MINOR, BLKMODEL_PROP_MINOR, "u", PROPERTY_EMITS_TRUE, .source = "dev"},
                {PROP_SIZE, BLKMODEL_PROP_SIZE, "t", PROPERTY_EMITS_TRUE, .source = "size"},
                {PROP_READ_ONLY, BLKMODEL_PROP_READ_ONLY, "b", PROPERTY_EMITS_TRUE, .source = "ro"},
                {PROP_NUMBER, BLKMODEL_PROP_NUMBER, "u", PROPERTY_EMITS_TRUE,
                 .source = PROPERTY_SOURCE_UEVENT},
                {PROP_START, BLKMODEL_PROP_START, "t", PROPERTY_EMITS_TRUE, .source = "start"},
                {PROP_HOLDERS, BLKMODEL_PROP_HOLDERS, "ao", PROPERTY_EMITS_TRUE,
                 .source = PROPERTY_SOURCE_HOLDERS},
                {},
};

const PropertyInfo queue_properties[] = {
                {PROP_SCHEDULER, BLKMODEL_PROP_SCHEDULER, "s", PROPERTY_EMITS_TRUE, true, "scheduler"},
                {PROP_SCHEDULERS, BLKMODEL_PROP_SCHEDULERS, "as", PROPERTY_EMITS_TRUE,
                 .source = "scheduler"},
                {PROP_ELEVATOR, BLKMODEL_PROP_ELEVATOR, "o", PROPERTY_EMITS_TRUE},
                {},
};

const PropertyInfo elevator_properties[] = {{}};
const PropertyInfo device_properties[] = {
                {PROP_SUBSYSTEM, BLKMODEL_PROP_SUBSYSTEM, "s", PROPERTY_EMITS_CONST,
                 .source = PROPERTY_SOURCE_SUBSYSTEM},
                /* Bound and unbound with events of the device's own subsystem, which are not ours to hear:
                 * read at every Get, never announced. */
                {PROP_DRIVER, BLKMODEL_PROP_DRIVER, "s", PROPERTY_EMITS_FALSE,
                 .source = PROPERTY_SOURCE_DRIVER},
                {},
};

static const struct {
        const char *interface;
        const PropertyInfo *properties;
} interface_table[] = {
                {BLKMODEL_IFACE_KOBJECT, kobject_properties},
                {BLKMODEL_IFACE_KSET, kset_properties},
                {BLKMODEL_IFACE_DISK, disk_properties},
                {BLKMODEL_IFACE_PARTITION, partition_properties},
                {BLKMODEL_IFACE_QUEUE, queue_properties},
                {BLKMODEL_IFACE_ELEVATOR, elevator_properties},
                {BLKMODEL_IFACE_DEVICE, device_properties},
};

const PropertyInfo *interface_properties(const char *interface)
{
        for (size_t i = 0; interface && i < ELEMENTSOF(interface_table); i++)
                if (streq(interface_table[i].interface, interface))
                        return interface_table[i].properties;
        return NULL;
}

const PropertyInfo *interface_find_property(const char *interface, const char *name)
{
        const PropertyInfo *p = interface_properties(interface);

        for (; p && p->name; p++)
                if (streq(p->name, name))
                        return p;
        return NULL;
}

const char *property_emits_to_string(PropertyEmits e)
{
        switch (e) {
        case PROPERTY_EMITS_TRUE:
                return "true";
        case PROPERTY_EMITS_INVALIDATES:
                return "invalidates";
        case PROPERTY_EMITS_CONST:
                return "const";
        case PROPERTY_EMITS_FALSE:
                return "false";
        }
        return "true";
}
