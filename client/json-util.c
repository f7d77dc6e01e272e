/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "json-util.h"

#include "common/util.h"

/* Hands child to parent at key; child is freed on failure. */
static json_object *json_add(json_object *parent, const char *key, json_object *child)
{
        _cleanup_(json_object_putp) json_object *c = child;

        if (!c || json_object_object_add(parent, key, c) < 0)
                return NULL;
        return TAKE_PTR(c);
}

json_object *json_add_object(json_object *parent, const char *key)
{
        return json_add(parent, key, json_object_new_object());
}

json_object *json_add_array(json_object *parent, const char *key)
{
        return json_add(parent, key, json_object_new_array());
}
