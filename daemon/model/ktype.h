/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "common/interfaces.h"

/*
 * What a kind of kobject is: data, not code paths, like the kernel's
 * const struct kobj_type.  Each kind says what it is called, the interface
 * its attributes and typed properties are published on, and how it lives.
 */

typedef enum KtypeId {
        KTYPE_KSET,
        KTYPE_DISK,
        KTYPE_PARTITION,
        KTYPE_QUEUE,
        KTYPE_ELEVATOR,
        KTYPE_DEVICE,
        _KTYPE_MAX,
} KtypeId;

typedef struct Ktype {
        KtypeId id;
        const char *name;      /* the Ktype property: "disk" */
        const char *interface; /* "org.blkmodel1.Disk" */
        /* The model's typed properties on that interface; attribute files may not shadow them. */
        const PropertyInfo *properties;
        /* Kept alive by the objects below it rather than by the model: a Device is published
         * exactly as long as some disk sits on it. */
        bool held_by_dependents;
        /* Has a uevent file of its own (ksets, queues and schedulers have none). */
        bool has_uevent;
} Ktype;

extern const Ktype ktype_kset, ktype_disk, ktype_partition, ktype_queue, ktype_elevator, ktype_device;

static inline bool ktype_is_block_device(const Ktype *t)
{
        return t->id == KTYPE_DISK || t->id == KTYPE_PARTITION;
}
