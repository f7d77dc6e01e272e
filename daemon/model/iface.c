/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>

#include "blkmodel/names.h"
#include "common/util.h"
#include "model/iface.h"

/* Groups are raw attributes only. */
static const PropertyInfo group_properties[] = {{}};

size_t kobject_n_ifaces(const Kobject *k)
{
        return 2 + (k->shape ? k->shape->n_groups : 0);
}

void kobject_iface(const Kobject *k, size_t i, Iface *ret)
{
        assert(i < kobject_n_ifaces(k));

        if (i == 0) {
                *ret = (Iface){
                                .kind = IFACE_KOBJECT,
                                .name = BLKMODEL_IFACE_KOBJECT,
                                .properties = kobject_properties,
                };
                return;
        }
        if (i == 1) {
                *ret = (Iface){
                                .kind = IFACE_KIND,
                                .name = k->ktype->interface,
                                .properties = k->ktype->properties,
                                .attrs = k->shape ? k->shape->attrs : NULL,
                };
                return;
        }
        const Group *g = &k->shape->groups[i - 2];
        *ret = (Iface){
                        .kind = IFACE_GROUP,
                        .name = g->interface,
                        .properties = group_properties,
                        .attrs = g->attrs,
                        .attr_dir = g->dir,
        };
}

bool kobject_find_iface(const Kobject *k, const char *name, Iface *ret)
{
        for (size_t i = 0; i < kobject_n_ifaces(k); i++) {
                kobject_iface(k, i, ret);
                if (streq(ret->name, name))
                        return true;
        }
        return false;
}

bool iface_same_in(const Iface *iface, const Shape *s)
{
        const Group *g;

        switch (iface->kind) {
        case IFACE_KOBJECT:
                return true;
        case IFACE_KIND:
                return s && s->attrs == iface->attrs;
        case IFACE_GROUP:
                g = s ? shape_find_group(s, iface->name) : NULL;
                return g && g->attrs == iface->attrs;
        }
        return false;
}

const char *iface_attr_relpath_in(const Iface *iface, const Attr *a, char buf[static IFACE_RELPATH_MAX])
{
        size_t dir, file;

        if (!iface->attr_dir)
                return a->file;
        dir = strlen(iface->attr_dir);
        file = strlen(a->file);
        if (dir + 1 + file >= IFACE_RELPATH_MAX)
                return NULL;
        memcpy(buf, iface->attr_dir, dir);
        buf[dir] = '/';
        memcpy(buf + dir + 1, a->file, file + 1);
        return buf;
}

char *iface_attr_relpath(const Iface *iface, const Attr *a)
{
        char buf[IFACE_RELPATH_MAX];
        const char *rel = iface_attr_relpath_in(iface, a, buf);

        return rel ? strdup(rel) : NULL;
}
