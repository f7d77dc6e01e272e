/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>

#include "blkmodel/names.h"
#include "common/utf8.h"
#include "common/util.h"
#include "model/kobject.h"
#include "model/naming.h"
#include "model/order.h"

int kobject_new(Model *m, const Ktype *t, const char *name, Kobject *parent, Kobject *kset,
                const char *devpath, Kobject **ret)
{
        _cleanup_(freep) char *path = NULL;
        size_t name_size = strlen(name) + 1, devpath_size = strlen(devpath) + 1;
        Kobject *k;
        int r;

        /* D-Bus strings are UTF-8: one such name in GetManagedObjects would fail the whole reply. */
        if (!utf8_is_valid(name) || !utf8_is_valid(devpath))
                return -EILSEQ;
        r = object_path_append(parent ? parent->path : BLKMODEL_ROOT_PATH, name, &path);
        if (r < 0)
                return r;

        /* The three strings never change: they live behind the object, in the same allocation (three
         * small ones would cost ~50 bytes more per object, issue 12). */
        k = calloc(1, sizeof(Kobject) + name_size + devpath_size + strlen(path) + 1);
        if (!k)
                return -ENOMEM;
        k->name = memcpy((char *) (k + 1), name, name_size);
        k->devpath = memcpy(k->name + name_size, devpath, devpath_size);
        k->path = strcpy(k->devpath + devpath_size, path);
        k->n_ref = 1;
        k->ktype = t;
        k->parent = kobject_ref(parent);
        k->kset = kset;
        *ret = k;
        return 0;
}

Kobject *kobject_ref(Kobject *k)
{
        if (k) {
                assert(k->n_ref > 0);
                k->n_ref++;
        }
        return k;
}

static void kobject_release(Model *m, Kobject *k)
{
        /* Like the kernel's kobject_cleanup(): drop what we hold, the parent last. */
        assert(!k->first_child);
        assert(!k->observer_data);
        shape_unref(&m->shapes, k->shape);
        kobject_unref(m, k->device);
        Kobject *parent = k->parent;
        free(k);
        kobject_unref(m, parent);
}

void kobject_unref(Model *m, Kobject *k)
{
        if (!k)
                return;
        assert(k->n_ref > 0);
        if (--k->n_ref > 0)
                return;
        if (k->linked) {
                /* A dependent-held object (a Device) leaves the model with its last user.
                 * Unlinking must not free it under us: hold it across. */
                k->n_ref = 1;
                model_unlink(m, k);
                if (--k->n_ref > 0)
                        return;
        }
        kobject_release(m, k);
}

static const char *path_of(const void *k)
{
        return ((const Kobject *) k)->path;
}

static const char *devpath_of(const void *k)
{
        return ((const Kobject *) k)->devpath;
}

static const char *name_of(const void *k)
{
        return ((const Kobject *) k)->name;
}

static void index_remove(Model *m, Kobject *k)
{
        (void) hashmap_remove(&m->by_path, k);
        (void) hashmap_remove(&m->by_devpath, k);
        if (ktype_is_block_device(k->ktype))
                (void) hashmap_remove(&m->by_name, k);
}

static int index_add(Model *m, Kobject *k)
{
        int r;

        r = hashmap_put(&m->by_path, k);
        if (r < 0)
                return r;
        /* Two objects can't share a devpath; a clash means a broken tree, and the first one wins. */
        r = hashmap_put(&m->by_devpath, k);
        if (r >= 0 && ktype_is_block_device(k->ktype))
                r = hashmap_put(&m->by_name, k);
        if (r < 0)
                index_remove(m, k);
        return r;
}

int model_link(Model *m, Kobject *k)
{
        int r;

        assert(!k->linked);
        r = index_add(m, k);
        if (r < 0)
                return r;

        if (k->parent) {
                Kobject *p = k->parent;
                k->next_sibling = p->first_child;
                if (p->first_child)
                        p->first_child->prev_sibling = k;
                p->first_child = k;
                p->n_children++;
                kobject_children_changed(m, p, k, true);
        }
        if (k->kset) {
                Kobject *s = k->kset;
                k->next_member = s->first_member;
                if (s->first_member)
                        s->first_member->prev_member = k;
                s->first_member = k;
                s->n_members++;
                kset_members_changed(m, s, k, true);
        }

        k->linked = true;
        m->n_objects++;
        m->tree_changes++;
        /* Saturates, rather than every object carry a wider count: a Device that once had 65,535
         * disks (an NVMe controller's namespaces) leaves with the last reference they held, when
         * whatever still holds the last disk lets it go, not when it is unlinked. */
        if (k->device && k->device->n_users < UINT16_MAX)
                k->device->n_users++;
        if (!k->ktype->held_by_dependents)
                kobject_ref(k);
        if (m->observer && m->observer->added)
                m->observer->added(m, k, m->observer_data);
        return 0;
}

/* A Device leaves the model with its last dependent (a disk on it, a device below it), as the
 * published tree must say at once, whoever else still holds it (a round of the poll, a queue of
 * changes, a reply being built): they hold its memory, not its place in the model. */
static void unlink_if_unused(Model *m, Kobject *k)
{
        if (k->ktype->held_by_dependents && k->linked && !k->unlinking && k->n_users == 0 && !k->first_child)
                model_unlink(m, k);
}

void model_unlink(Model *m, Kobject *k)
{
        if (!k->linked || k->unlinking)
                return;

        k->unlinking = true;
        /* Children go first, so that every removal a client sees leaves a consistent tree. */
        while (k->first_child)
                model_unlink(m, k->first_child);

        if (m->observer && m->observer->removed)
                m->observer->removed(m, k, m->observer_data);
        index_remove(m, k);

        if (k->parent) {
                Kobject *p = k->parent;
                if (k->prev_sibling)
                        k->prev_sibling->next_sibling = k->next_sibling;
                else
                        p->first_child = k->next_sibling;
                if (k->next_sibling)
                        k->next_sibling->prev_sibling = k->prev_sibling;
                k->next_sibling = k->prev_sibling = NULL;
                p->n_children--;
                kobject_children_changed(m, p, k, false);
        }
        if (k->kset) {
                Kobject *s = k->kset;
                if (k->prev_member)
                        k->prev_member->next_member = k->next_member;
                else
                        s->first_member = k->next_member;
                if (k->next_member)
                        k->next_member->prev_member = k->prev_member;
                k->next_member = k->prev_member = NULL;
                s->n_members--;
                kset_members_changed(m, s, k, false);
        }

        k->linked = false;
        k->unlinking = false;
        m->n_objects--;
        m->tree_changes++;
        if (k->device) {
                if (k->device->n_users < UINT16_MAX)
                        k->device->n_users--;
                unlink_if_unused(m, k->device);
        }
        if (k->parent)
                unlink_if_unused(m, k->parent);
        if (!k->ktype->held_by_dependents)
                kobject_unref(m, k);
}

static int make_kset(Model *m, const char *name, Kobject **ret)
{
        _cleanup_(freep) char *devpath = NULL;
        Kobject *k;
        int r;

        devpath = path_join("/", name);
        if (!devpath)
                return -ENOMEM;
        r = kobject_new(m, &ktype_kset, name, NULL, NULL, devpath, &k);
        if (r < 0)
                return r;
        r = model_link(m, k);
        /* On success the model's own reference (taken by model_link) keeps it. */
        kobject_unref(m, k);
        if (r < 0)
                return r;
        *ret = k;
        return 0;
}

int model_new(Model **ret)
{
        Model *m;
        int r;

        m = calloc(1, sizeof(Model));
        if (!m)
                return -ENOMEM;
        shape_registry_init(&m->shapes);
        hashmap_init(&m->by_path, path_of);
        hashmap_init(&m->by_devpath, devpath_of);
        hashmap_init(&m->by_name, name_of);

        r = make_kset(m, "block", &m->block_kset);
        if (r >= 0)
                r = make_kset(m, "devices", &m->devices_kset);
        if (r < 0) {
                model_free(m);
                return r;
        }
        *ret = m;
        return 0;
}

Model *model_free(Model *m)
{
        if (!m)
                return NULL;
        m->observer = NULL;
        /* Disks first: releasing them lets their Devices go. */
        if (m->block_kset)
                model_unlink(m, m->block_kset);
        if (m->devices_kset)
                model_unlink(m, m->devices_kset);
        assert(m->n_objects == 0);
        model_order_done(m);
        hashmap_deinit(&m->by_path);
        hashmap_deinit(&m->by_devpath);
        hashmap_deinit(&m->by_name);
        shape_registry_deinit(&m->shapes);
        free(m);
        return NULL;
}

void model_set_observer(Model *m, const ModelObserver *o, void *userdata)
{
        m->observer = o;
        m->observer_data = userdata;
}

Kobject *model_find_path(const Model *m, const char *path)
{
        return hashmap_get(&m->by_path, path);
}

Kobject *model_find_devpath(const Model *m, const char *devpath)
{
        return hashmap_get(&m->by_devpath, devpath);
}

Kobject *model_find_name(const Model *m, const char *name)
{
        return hashmap_get(&m->by_name, name);
}

Kobject *kobject_find_child(const Kobject *k, const char *name)
{
        for (Kobject *c = k->first_child; c; c = c->next_sibling)
                if (streq(c->name, name))
                        return c;
        return NULL;
}

Kobject *kobject_find_child_type(const Kobject *k, KtypeId id)
{
        for (Kobject *c = k->first_child; c; c = c->next_sibling)
                if (c->ktype->id == id)
                        return c;
        return NULL;
}

int kobject_name_cmp(const void *a, const void *b)
{
        const Kobject *x = *(Kobject *const *) a, *y = *(Kobject *const *) b;
        return strcmp(x->name, y->name);
}

int kobject_children_sorted(const Kobject *k, KtypeId only, Kobject ***ret, size_t *ret_n)
{
        return kobject_children_sorted_by(k, only, kobject_name_cmp, ret, ret_n);
}

int kobject_children_sorted_by(const Kobject *k, KtypeId only, int (*cmp)(const void *, const void *),
                               Kobject ***ret, size_t *ret_n)
{
        Kobject **l = malloc(sizeof(Kobject *) * (k->n_children + 1));
        size_t n = 0;

        if (!l)
                return -ENOMEM;
        for (Kobject *c = k->first_child; c; c = c->next_sibling)
                if (only == _KTYPE_MAX || c->ktype->id == only)
                        l[n++] = c;
        qsort(l, n, sizeof(Kobject *), cmp);
        *ret = l;
        *ret_n = n;
        return 0;
}
