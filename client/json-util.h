/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <json-c/json.h>

/* For _cleanup_(json_object_putp): drops the reference, if any. */
static inline void json_object_putp(json_object **j)
{
        json_object_put(*j);
}

/* A new empty object or array at parent[key].  The parent owns it: the pointer is borrowed.  NULL
 * when out of memory. */
json_object *json_add_object(json_object *parent, const char *key);
json_object *json_add_array(json_object *parent, const char *key);
