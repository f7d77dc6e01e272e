/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The public names of blkmodel on D-Bus (SPEC §3).  Shared by the daemon
 * and every client so that a rename happens in exactly one place.
 */

#define BLKMODEL_BUS_NAME               "org.blkmodel1"
#define BLKMODEL_ROOT_PATH              "/org/blkmodel1"  /* the ObjectManager */
#define BLKMODEL_MANAGER_PATH           "/org/blkmodel1/Manager"
#define BLKMODEL_BLOCK_PATH             "/org/blkmodel1/block"
#define BLKMODEL_DEVICES_PATH           "/org/blkmodel1/devices"

#define BLKMODEL_IFACE_PREFIX           "org.blkmodel1."
#define BLKMODEL_IFACE_MANAGER          "org.blkmodel1.Manager"
#define BLKMODEL_IFACE_KOBJECT          "org.blkmodel1.Kobject"
#define BLKMODEL_IFACE_KSET             "org.blkmodel1.Kset"
#define BLKMODEL_IFACE_DISK             "org.blkmodel1.Disk"
#define BLKMODEL_IFACE_PARTITION        "org.blkmodel1.Partition"
#define BLKMODEL_IFACE_QUEUE            "org.blkmodel1.Queue"
#define BLKMODEL_IFACE_ELEVATOR         "org.blkmodel1.Elevator"
#define BLKMODEL_IFACE_DEVICE           "org.blkmodel1.Device"
#define BLKMODEL_IFACE_GROUP_PREFIX     "org.blkmodel1.Group."

/* On an attribute property (or a group's interface) whose name is not its file's (msi_irqs/35 is
 * published as _35): the sysfs file (directory) name, for clients that show sysfs names. */
#define BLKMODEL_ANNOTATION_FILE        "org.blkmodel1.File"

#define BLKMODEL_ERROR_PREFIX           "org.blkmodel1.Error."
#define BLKMODEL_ERROR_NO_SUCH_OBJECT   "org.blkmodel1.Error.NoSuchObject"
#define BLKMODEL_ERROR_EVENTS_EXPIRED   "org.blkmodel1.Error.EventsExpired"
#define BLKMODEL_ERROR_READ_FAILED      "org.blkmodel1.Error.ReadFailed"
#define BLKMODEL_ERROR_WRITE_FAILED     "org.blkmodel1.Error.WriteFailed"
#define BLKMODEL_ERROR_ACCESS_DENIED    "org.blkmodel1.Error.AccessDenied"
#define BLKMODEL_ERROR_NOT_WRITABLE     "org.blkmodel1.Error.NotWritable"

/*
 * Members of the interfaces above (SPEC §4, §5), named once so that the
 * daemon and its clients cannot drift apart.  Added by the client work.
 */
#define BLKMODEL_METHOD_RESOLVE         "Resolve"
#define BLKMODEL_METHOD_GET_EVENTS      "GetEvents"
#define BLKMODEL_METHOD_RESCAN          "Rescan"
#define BLKMODEL_METHOD_TRIGGER         "Trigger"
#define BLKMODEL_METHOD_SETTLE          "Settle"
#define BLKMODEL_SIGNAL_UEVENT          "Uevent"

#define BLKMODEL_PROP_NAME              "Name"
#define BLKMODEL_PROP_DEVPATH           "DevPath"
#define BLKMODEL_PROP_PARENT            "Parent"
#define BLKMODEL_PROP_KSET              "Kset"
#define BLKMODEL_PROP_KTYPE             "Ktype"
#define BLKMODEL_PROP_UEVENT            "Uevent"
#define BLKMODEL_PROP_MAJOR             "Major"
#define BLKMODEL_PROP_MINOR             "Minor"
#define BLKMODEL_PROP_SIZE              "Size"
#define BLKMODEL_PROP_READ_ONLY         "ReadOnly"
#define BLKMODEL_PROP_REMOVABLE         "Removable"
#define BLKMODEL_PROP_PARTITIONS        "Partitions"
#define BLKMODEL_PROP_HOLDERS           "Holders"
#define BLKMODEL_PROP_SLAVES            "Slaves"
#define BLKMODEL_PROP_QUEUE             "Queue"
#define BLKMODEL_PROP_DEVICE            "Device"
#define BLKMODEL_PROP_NUMBER            "Number"
#define BLKMODEL_PROP_START             "Start"
#define BLKMODEL_PROP_SCHEDULER         "Scheduler"
#define BLKMODEL_PROP_SCHEDULERS        "Schedulers"
#define BLKMODEL_PROP_ELEVATOR          "Elevator"
#define BLKMODEL_PROP_MEMBERS           "Members"
#define BLKMODEL_PROP_SUBSYSTEM         "Subsystem"
#define BLKMODEL_PROP_DRIVER            "Driver"
#define BLKMODEL_PROP_VERSION           "Version"
#define BLKMODEL_PROP_SYSFS_ROOT        "SysfsRoot"
#define BLKMODEL_PROP_UEVENT_SOURCE     "UeventSource"
#define BLKMODEL_PROP_LAST_SEQNUM       "LastSeqnum"
#define BLKMODEL_PROP_OLDEST_SEQNUM     "OldestSeqnum"
#define BLKMODEL_PROP_EVENTS_LOST       "EventsLost"
#define BLKMODEL_PROP_OBJECT_COUNT      "ObjectCount"

/* Values of Kobject.Ktype. */
#define BLKMODEL_KTYPE_KSET             "kset"
#define BLKMODEL_KTYPE_DISK             "disk"
#define BLKMODEL_KTYPE_PARTITION        "partition"
#define BLKMODEL_KTYPE_QUEUE            "queue"
#define BLKMODEL_KTYPE_ELEVATOR         "elevator"
#define BLKMODEL_KTYPE_DEVICE           "device"

/* polkit actions of the privileged calls (polkit/org.blkmodel1.policy): what rules name. */
#define BLKMODEL_ACTION_SET_ATTRIBUTE   "org.blkmodel1.set-attribute"
#define BLKMODEL_ACTION_TRIGGER         "org.blkmodel1.trigger"
#define BLKMODEL_ACTION_RESCAN          "org.blkmodel1.rescan"
