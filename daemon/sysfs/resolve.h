/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "model/kobject.h"
#include "sysfs/sysfs.h"

/*
 * Manager.Resolve: every way a storage engineer names a block device
 * (SPEC §5): "sda1", "/dev/sda1", "8:1", "/sys/block/sda/queue",
 * "sda/queue/iosched", a devpath, an object path, a link below /dev
 * ("/dev/disk/by-id/…", "/dev/mapper/…").  Lookups go through the model;
 * a client string becomes a file name only as a checked MAJ:MIN below
 * dev/block, or as a path confined below /dev, opened O_PATH.
 *
 * Returns 0 and the object (NULL for the root path itself), -ENOENT if
 * nothing matches, -EINVAL for a spec that cannot name anything.
 */
int resolve_spec(const Sysfs *sysfs, const Model *m, const char *spec, Kobject **ret);
