/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdio.h>

#include "differential.h"
#include "sysfs/typed-value.h"

/*
 * Two models of one tree, compared the long way: the same objects (by path), each with the same
 * identity (ktype, name, devpath, parent, kset, hardware), the same interfaces with the same
 * attribute files, and every value read through each model the same.  The values come from the
 * same files, so what differs is what a model itself decides: which objects exist, the paths in
 * Partitions, Queue, Elevator, Holders, Members, Device, and which files an object publishes.
 * Each file is read once per object: the fresh model's reading starts with the live one's.
 */

static char *strdup_or_die(const char *s)
{
        char *p = strdup(s);
        if (!p)
                abort();
        return p;
}

/* A typed value as one string: what a client would compare. */
static char *typed_string(const TypedValue *v)
{
        size_t len = 64 + (v->string ? strlen(v->string) : 0);
        char *s, *q;

        for (char **p = v->strv; p && *p; p++)
                len += strlen(*p) + 1;
        s = malloc(len);
        if (!s)
                abort();
        q = s + sprintf(s, "%s:%" PRIu64 ":%s:", v->signature, v->number, v->string ? v->string : "");
        for (char **p = v->strv; p && *p; p++)
                q = stpcpy(stpcpy(q, *p), "|");
        return s;
}

char *property_value(Model *m, ObjDir *d, const Iface *iface, const char *member, PropertyEmits *emits)
{
        const char *value;
        const Attr *a;

        for (const PropertyInfo *p = iface->properties; p->name; p++)
                if (streq(p->name, member)) {
                        TypedValue v;
                        char *s;
                        if (typed_value_read(d, m, p, &v) < 0)
                                abort();
                        s = typed_string(&v);
                        typed_value_done(&v);
                        *emits = p->emits;
                        return s;
                }
        a = iface->attrs ? attr_set_find(iface->attrs, member) : NULL;
        if (!a)
                return NULL;
        *emits = a->flags & ATTR_VOLATILE ? PROPERTY_EMITS_FALSE : PROPERTY_EMITS_TRUE;
        return strdup_or_die(objdir_read_attr(d, iface, a, &value) >= 0 ? value : "");
}

static void values_free(Value *v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(v[i].value);
        free(v);
}

/* Every property of every interface of k, in order: the typed ones, then the attributes. */
static Value *values_read(Model *m, const Kobject *k, ObjDir *d, size_t *ret_n)
{
        Value *v = NULL;
        size_t n = 0, max = 0;
        Iface iface;

        for (size_t i = 0; i < kobject_n_ifaces(k); i++) {
                kobject_iface(k, i, &iface);
                size_t n_typed = 0;
                while (iface.properties[n_typed].name)
                        n_typed++;
                for (size_t j = 0; j < n_typed + (iface.attrs ? iface.attrs->n_attrs : 0); j++) {
                        const char *name = j < n_typed ? iface.properties[j].name
                                                       : iface.attrs->attrs[j - n_typed].member;
                        if (n == max) {
                                max = max ? 2 * max : 64;
                                v = realloc(v, max * sizeof(Value));
                                if (!v)
                                        abort();
                        }
                        v[n] = (Value){.iface = iface.name, .name = name};
                        v[n].value = property_value(m, d, &iface, name, &v[n].emits);
                        n++;
                }
        }
        *ret_n = n;
        return v;
}

static const char *path_or_none(const Kobject *k)
{
        return k ? k->path : "(none)";
}

static bool attr_sets_equal(const AttrSet *a, const AttrSet *b)
{
        if (!a || !b)
                return a == b;
        if (a->n_attrs != b->n_attrs)
                return false;
        for (size_t i = 0; i < a->n_attrs; i++)
                if (!streq(a->attrs[i].file, b->attrs[i].file) ||
                    !streq(a->attrs[i].member, b->attrs[i].member) || a->attrs[i].flags != b->attrs[i].flags)
                        return false;
        return true;
}

/* Identity and interfaces; true if the values can be compared one by one. */
static bool compare_shape(Checker *c, const Kobject *k, const Kobject *f)
{
        bool same = true;

        if (k->ktype != f->ktype || !streq(k->name, f->name) || !streq(k->devpath, f->devpath))
                checker_problem(c, "%s: %s %s at %s live, %s %s at %s fresh", k->path, k->ktype->name,
                                k->name, k->devpath, f->ktype->name, f->name, f->devpath);
        if (!streq(path_or_none(k->parent), path_or_none(f->parent)) ||
            !streq(path_or_none(k->kset), path_or_none(f->kset)) ||
            !streq(path_or_none(k->device), path_or_none(f->device)))
                checker_problem(c, "%s: parent %s, kset %s, device %s live; %s, %s, %s fresh", k->path,
                                path_or_none(k->parent), path_or_none(k->kset), path_or_none(k->device),
                                path_or_none(f->parent), path_or_none(f->kset), path_or_none(f->device));
        if (k->n_children != f->n_children || k->n_members != f->n_members || !k->linked)
                checker_problem(c,
                                "%s: %" PRIu32 " children and %" PRIu32 " members live, %" PRIu32
                                " and %" PRIu32 " fresh",
                                k->path, k->n_children, k->n_members, f->n_children, f->n_members);
        if (model_find_devpath(c->model, k->devpath) != k ||
            (ktype_is_block_device(k->ktype) && model_find_name(c->model, k->name) != k))
                checker_problem(c, "%s: not found by its own devpath or name", k->path);

        if (kobject_n_ifaces(k) != kobject_n_ifaces(f)) {
                checker_problem(c, "%s: %zu interfaces live, %zu fresh", k->path, kobject_n_ifaces(k),
                                kobject_n_ifaces(f));
                return false;
        }
        for (size_t i = 0; i < kobject_n_ifaces(k); i++) {
                Iface il, iff;
                kobject_iface(k, i, &il);
                kobject_iface(f, i, &iff);
                if (!streq(il.name, iff.name) || il.kind != iff.kind ||
                    !streq_ptr(il.attr_dir, iff.attr_dir) || !attr_sets_equal(il.attrs, iff.attrs)) {
                        checker_problem(c, "%s: interface %s (%zu attributes) live, %s (%zu) fresh", k->path,
                                        il.name, il.attrs ? il.attrs->n_attrs : 0, iff.name,
                                        iff.attrs ? iff.attrs->n_attrs : 0);
                        same = false;
                }
        }
        return same;
}

static void compare_object(Checker *c, Kobject *k, Model *fresh)
{
        _cleanup_(objdir_donep) ObjDir dl = OBJDIR_INIT(c->sysfs, k), df = OBJDIR_INIT(c->sysfs, NULL);
        Kobject *f = model_find_path(fresh, k->path);
        Value *lv, *fv = NULL;
        size_t nl, nf = 0;

        lv = values_read(c->model, k, &dl, &nl);
        checker_compare_client(c, k, lv, nl);
        if (!f)
                checker_problem(c, "%s: %s %s live, not in a fresh scan", k->path, k->ktype->name,
                                k->devpath);
        else if (compare_shape(c, k, f)) {
                /* The same files: what the live reading read is what the fresh one would. */
                df.k = f;
                df.fd = TAKE_FD(dl.fd);
                df.values = TAKE_PTR(dl.values);
                df.n_values = dl.n_values;
                dl.n_values = 0;
                fv = values_read(fresh, f, &df, &nf);
                for (size_t i = 0; i < nl && i < nf; i++)
                        if (!streq(lv[i].value, fv[i].value))
                                checker_problem(c, "%s: %s.%s is '%.200s' live, '%.200s' fresh", k->path,
                                                lv[i].iface, lv[i].name, lv[i].value, fv[i].value);
        }
        values_free(lv, nl);
        values_free(fv, nf);
}

void checker_compare(Checker *c, Model *fresh)
{
        Model *m = c->model;
        Kobject *k, *f;
        size_t i = 0;

        if (m->n_objects != fresh->n_objects || hashmap_size(&m->by_path) != m->n_objects ||
            hashmap_size(&m->by_devpath) != hashmap_size(&fresh->by_devpath) ||
            hashmap_size(&m->by_name) != hashmap_size(&fresh->by_name))
                checker_problem(c,
                                "%zu objects (%zu by path, %zu by devpath, %zu by name) live, %zu (%zu, "
                                "%zu) fresh",
                                m->n_objects, hashmap_size(&m->by_path), hashmap_size(&m->by_devpath),
                                hashmap_size(&m->by_name), fresh->n_objects,
                                hashmap_size(&fresh->by_devpath), hashmap_size(&fresh->by_name));
        while ((k = hashmap_iterate(&m->by_path, &i)))
                compare_object(c, k, fresh);
        i = 0;
        while ((f = hashmap_iterate(&fresh->by_path, &i)))
                if (!model_find_path(m, f->path))
                        checker_problem(c, "%s: %s %s in a fresh scan, not live", f->path, f->ktype->name,
                                        f->devpath);
        checker_client_leftovers(c);
}
