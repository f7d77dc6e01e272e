/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <blkmodel/names.h>

#include "model.h"

json_object *model_object(json_object *model, const char *path)
{
        json_object *o = NULL;

        if (!model || !path)
                return NULL;
        if (!json_object_object_get_ex(model, path, &o))
                return NULL;
        return o;
}

json_object *model_prop(json_object *object, const char *iface, const char *prop)
{
        json_object *i = NULL, *p = NULL;

        if (!object)
                return NULL;
        if (!json_object_object_get_ex(object, iface, &i))
                return NULL;
        if (!json_object_object_get_ex(i, prop, &p))
                return NULL;
        return p;
}

bool model_has_iface(json_object *object, const char *iface)
{
        return object && json_object_object_get_ex(object, iface, NULL);
}

const char *model_string(json_object *object, const char *iface, const char *prop)
{
        json_object *p = model_prop(object, iface, prop);

        if (!p || !json_object_is_type(p, json_type_string))
                return NULL;
        return json_object_get_string(p);
}

uint64_t model_u64(json_object *object, const char *iface, const char *prop)
{
        json_object *p = model_prop(object, iface, prop);

        if (!p || !json_object_is_type(p, json_type_int))
                return 0;
        return json_object_get_uint64(p);
}

bool model_bool(json_object *object, const char *iface, const char *prop)
{
        json_object *p = model_prop(object, iface, prop);

        return p && json_object_get_boolean(p);
}

const char *model_name(json_object *model, const char *path)
{
        const char *n = model_string(model_object(model, path), BLKMODEL_IFACE_KOBJECT, BLKMODEL_PROP_NAME);
        const char *slash;

        if (n)
                return n;
        slash = strrchr(path, '/');
        return slash ? slash + 1 : path;
}

static int compare_paths(const void *a, const void *b, void *userdata)
{
        const char *pa = *(const char *const *) a, *pb = *(const char *const *) b;
        json_object *model = userdata;
        int r;

        r = strverscmp(model_name(model, pa), model_name(model, pb));
        return r ?: strcmp(pa, pb);
}

void model_sort_paths(json_object *model, const char **paths, size_t n)
{
        qsort_r(paths, n, sizeof(char *), compare_paths, model);
}

char *model_sanitize_member(const char *name)
{
        size_t n = strlen(name);
        char *s = malloc(n + 2), *d = s;

        if (!s)
                return NULL;
        if (name[0] >= '0' && name[0] <= '9')
                *d++ = '_';
        for (const char *c = name; *c; c++) {
                bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                          *c == '_';
                *d++ = ok ? *c : '_';
        }
        *d = '\0';
        return s;
}
