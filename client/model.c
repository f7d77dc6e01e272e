/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <blkmodel/names.h>

#include "json-util.h"
#include "model.h"

#include "common/interfaces.h"
#include "common/util.h"

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

int model_interface_rank(const char *iface)
{
        if (streq(iface, BLKMODEL_IFACE_KOBJECT))
                return 0;
        if (streq(iface, BLKMODEL_IFACE_KSET) || streq(iface, BLKMODEL_IFACE_MANAGER))
                return 2;
        if (startswith(iface, BLKMODEL_IFACE_GROUP_PREFIX))
                return 3;
        if (startswith(iface, BLKMODEL_IFACE_PREFIX))
                return 1;
        return 4;
}

static int compare_strings(const void *a, const void *b)
{
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static int compare_interfaces(const void *a, const void *b)
{
        const char *x = *(const char *const *) a, *y = *(const char *const *) b;
        int rx = model_interface_rank(x), ry = model_interface_rank(y);

        if (rx != ry)
                return rx < ry ? -1 : 1;
        return strcmp(x, y);
}

/* The keys of a JSON object, borrowed, in an array the caller frees. */
static const char **object_keys(json_object *o, size_t *ret_n)
{
        size_t n = 0;
        const char **keys = calloc((size_t) json_object_object_length(o) + 1, sizeof(char *));

        if (!keys)
                return NULL;
        json_object_object_foreach(o, k, v) {
                (void) v;
                keys[n++] = k;
        }
        *ret_n = n;
        return keys;
}

/* to[key] = a new reference to from[key]. */
static int copy_key(json_object *to, json_object *from, const char *key)
{
        json_object *v = NULL;

        (void) json_object_object_get_ex(from, key, &v);
        if (json_object_object_add(to, key, json_object_get(v)) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

json_object *model_ordered_properties(const char *iface, json_object *props)
{
        _cleanup_(json_object_putp) json_object *out = json_object_new_object();
        _cleanup_(freep) const char **keys = NULL;
        size_t n = 0;

        if (!out || !(keys = object_keys(props, &n)))
                return NULL;
        for (const PropertyInfo *p = interface_properties(iface); p && p->name; p++)
                if (json_object_object_get_ex(props, p->name, NULL) && copy_key(out, props, p->name) < 0)
                        return NULL;
        /* The Manager's properties are in no table, and it has no attribute files: in the order the
         * daemon sends them, its introspection's. */
        if (!streq(iface, BLKMODEL_IFACE_MANAGER))
                qsort(keys, n, sizeof(char *), compare_strings);
        for (size_t i = 0; i < n; i++)
                if (!interface_find_property(iface, keys[i]) && copy_key(out, props, keys[i]) < 0)
                        return NULL;
        return TAKE_PTR(out);
}

/* The length of the first path element of p (after its '/'), including the '/'. */
static size_t element_end(const char *p)
{
        const char *s = strchr(p + 1, '/');

        return s ? (size_t) (s - p) : strlen(p);
}

static int compare_model_paths(const void *a, const void *b, void *userdata)
{
        const char *pa = *(const char *const *) a, *pb = *(const char *const *) b;
        json_object *model = userdata;
        size_t i = 0;

        /* The Manager is no kobject: first, as GetManagedObjects of the root has it. */
        if (streq(pa, BLKMODEL_MANAGER_PATH) || streq(pb, BLKMODEL_MANAGER_PATH))
                return streq(pa, BLKMODEL_MANAGER_PATH) ? -1 : streq(pb, BLKMODEL_MANAGER_PATH) ? 1 : 0;

        /* Past the common ancestors, the first elements that differ: siblings, by name. */
        for (;;) {
                _cleanup_(freep) char *xa = NULL, *xb = NULL;
                size_t ea, eb;
                int r;

                if (pa[i] == '\0' || pb[i] == '\0')
                        return pa[i] == '\0' ? (pb[i] == '\0' ? 0 : -1) : 1; /* parent first */
                ea = element_end(pa + i);
                eb = element_end(pb + i);
                if (ea == eb && strncmp(pa + i, pb + i, ea) == 0) {
                        i += ea;
                        continue;
                }
                xa = strndup(pa, i + ea);
                xb = strndup(pb, i + eb);
                if (!xa || !xb)
                        return strcmp(pa, pb);
                r = strverscmp(model_name(model, xa), model_name(model, xb));
                return r ?: strcmp(xa, xb);
        }
}

const char **model_ordered_paths(json_object *model, size_t *ret_n)
{
        const char **paths = object_keys(model, ret_n);

        if (paths)
                qsort_r(paths, *ret_n, sizeof(char *), compare_model_paths, model);
        return paths;
}

json_object *model_ordered_object(json_object *model, const char *path)
{
        _cleanup_(json_object_putp) json_object *out = json_object_new_object();
        _cleanup_(freep) const char **ifaces = NULL;
        json_object *obj = model_object(model, path);
        size_t m = 0;

        if (!out || !(ifaces = object_keys(obj, &m)))
                return NULL;
        qsort(ifaces, m, sizeof(char *), compare_interfaces);
        for (size_t j = 0; j < m; j++) {
                json_object *props = NULL, *sorted;

                (void) json_object_object_get_ex(obj, ifaces[j], &props);
                sorted = model_ordered_properties(ifaces[j], props);
                if (!sorted || json_object_object_add(out, ifaces[j], sorted) < 0) {
                        json_object_put(sorted);
                        return NULL;
                }
        }
        return TAKE_PTR(out);
}
