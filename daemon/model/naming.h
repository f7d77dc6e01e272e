/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/*
 * The names an object is published under.  Object path elements are
 * sd_bus_path_encode()d, so every sysfs name round-trips exactly ("dm-0" →
 * "dm_2d0").  Member and interface-element names are sanitized instead
 * (lossy by design, SPEC §4): each character outside [A-Za-z0-9_] becomes
 * '_', and a leading digit gets a '_' in front.
 */

#define MEMBER_NAME_MAX 255

/* parent + "/" + the encoded name.  -ENOMEM. */
int object_path_append(const char *parent, const char *name, char **ret);

/* True if name is a valid D-Bus member name (also valid as an interface element). */
bool member_name_is_valid(const char *name);

/* The member name for a sysfs file name.  -ENAMETOOLONG past MEMBER_NAME_MAX, -ENOMEM. */
int member_name_from_file(const char *name, char **ret);
