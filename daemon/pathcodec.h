/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * Names on the bus.  Object path elements follow sd_bus_path_encode():
 * every byte outside [A-Za-z0-9], and a leading digit, becomes "_xx", and
 * the empty name becomes "_"; so every sysfs name round-trips exactly.
 * Member and interface-element names are sanitized instead (lossy by
 * design, SPEC §4): each character outside [A-Za-z0-9_] becomes '_', and a
 * leading digit gets a '_' in front.
 */

/* Appends the encoded element to parent ("/org/blkmodel1/block" + "dm-0"). NULL on ENOMEM. */
char *objpath_append(const char *parent, const char *name);

/* Decodes one element; -EINVAL if it is not a valid encoding. */
int objpath_decode_element(const char *element, size_t len, char **ret);

/* True if name is a valid D-Bus member name (also valid as an interface element). */
bool member_name_is_valid(const char *name);

/* The member name for a sysfs file name; NULL on ENOMEM or a name longer than 255. */
char *member_name_from_file(const char *name);
