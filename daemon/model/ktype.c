/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "model/ktype.h"
#include "blkmodel/names.h"

const Ktype ktype_kset = {
                .id = KTYPE_KSET,
                .name = BLKMODEL_KTYPE_KSET,
                .interface = BLKMODEL_IFACE_KSET,
                .properties = kset_properties,
};

const Ktype ktype_disk = {
                .id = KTYPE_DISK,
                .name = BLKMODEL_KTYPE_DISK,
                .interface = BLKMODEL_IFACE_DISK,
                .properties = disk_properties,
                .has_uevent = true,
};

const Ktype ktype_partition = {
                .id = KTYPE_PARTITION,
                .name = BLKMODEL_KTYPE_PARTITION,
                .interface = BLKMODEL_IFACE_PARTITION,
                .properties = partition_properties,
                .has_uevent = true,
};

const Ktype ktype_queue = {
                .id = KTYPE_QUEUE,
                .name = BLKMODEL_KTYPE_QUEUE,
                .interface = BLKMODEL_IFACE_QUEUE,
                .properties = queue_properties,
};

const Ktype ktype_elevator = {
                .id = KTYPE_ELEVATOR,
                .name = BLKMODEL_KTYPE_ELEVATOR,
                .interface = BLKMODEL_IFACE_ELEVATOR,
                .properties = elevator_properties,
};

const Ktype ktype_device = {
                .id = KTYPE_DEVICE,
                .name = BLKMODEL_KTYPE_DEVICE,
                .interface = BLKMODEL_IFACE_DEVICE,
                .properties = device_properties,
                .held_by_dependents = true,
                .has_uevent = true,
};
