/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>

#include "common/util.h"
#include "model/order.h"

/*
 * How many members or children may come or go between two readings while their order is kept up to
 * date: each is a binary search and a move of the pointers after it (at most 400 KB at 50,000
 * members), where sorting them again at the next reading held the loop 20-24 ms at 10,000 disks x 4.
 * Past that many (a hotplug storm nobody reads during) the order is dropped, and the next reading
 * sorts once.
 */
#define SORTED_KEPT_CHANGES 256

struct MembersSnapshot {
        const Kobject *kset;
        Kobject **members; /* sorted by name */
        size_t n;
        /* Members that left since, by address: their objects may be freed, so are never touched.
         * Appended as they leave and sorted when next looked up, so that a storm of removals
         * while a large reply is being built costs no more than sorting them. */
        const Kobject **gone;
        size_t n_gone, n_gone_allocated, n_gone_sorted;
        MembersSnapshot *next;
};

static void sorted_list_free(SortedList *s)
{
        free(s->items);
        *s = (SortedList){};
}

/* The owner's members (or children) in name order, from its slot, or sorted into a free one. */
static int sorted_list_get(SortedList *slots, size_t n_slots, const Kobject *owner, bool children,
                           Kobject *const **ret, size_t *ret_n)
{
        SortedList *free_slot = NULL;
        size_t n = 0, most = children ? owner->n_children : owner->n_members;
        Kobject **l;

        for (size_t i = 0; i < n_slots; i++) {
                SortedList *s = &slots[i];
                if (s->owner == owner) {
                        s->changes = 0; /* read: worth keeping up to date again */
                        *ret = s->items;
                        *ret_n = s->n;
                        return 0;
                }
                if (!s->owner && !free_slot)
                        free_slot = s;
        }
        l = malloc(sizeof(Kobject *) * (most + 1));
        if (!l)
                return -ENOMEM;
        if (children)
                for (Kobject *c = owner->first_child; c; c = c->next_sibling)
                        l[n++] = c;
        else
                for (Kobject *c = owner->first_member; c; c = c->next_member)
                        l[n++] = c;
        qsort(l, n, sizeof(Kobject *), kobject_name_cmp);
        if (!free_slot) {
                /* More owners than slots: the first slot's answer makes room. */
                free_slot = &slots[0];
                sorted_list_free(free_slot);
        }
        *free_slot = (SortedList){.owner = owner, .items = l, .n = n, .n_allocated = most + 1};
        *ret = l;
        *ret_n = n;
        return 0;
}

int kset_members_sorted(Model *m, const Kobject *kset, Kobject *const **ret, size_t *ret_n)
{
        return sorted_list_get(m->sorted_members, ELEMENTSOF(m->sorted_members), kset, false, ret, ret_n);
}

int model_children_sorted(Model *m, const Kobject *k, Kobject *const **ret, size_t *ret_n)
{
        return sorted_list_get(m->sorted_children, ELEMENTSOF(m->sorted_children), k, true, ret, ret_n);
}

int kset_members_snapshot(Model *m, const Kobject *kset, MembersSnapshot **ret)
{
        _cleanup_(freep) MembersSnapshot *s = calloc(1, sizeof(MembersSnapshot));
        Kobject *const *sorted;
        int r;

        if (!s)
                return -ENOMEM;
        r = kset_members_sorted(m, kset, &sorted, &s->n);
        if (r < 0)
                return r;
        s->members = malloc(sizeof(Kobject *) * MAX(s->n, 1u));
        if (!s->members)
                return -ENOMEM;
        memcpy(s->members, sorted, sizeof(Kobject *) * s->n);
        s->kset = kset;
        s->next = m->members_snapshots;
        m->members_snapshots = s;
        *ret = TAKE_PTR(s);
        return 0;
}

size_t members_snapshot_size(const MembersSnapshot *s)
{
        return s->n;
}

static int pointer_cmp(const void *a, const void *b)
{
        uintptr_t x = (uintptr_t) *(const Kobject *const *) a, y = (uintptr_t) *(const Kobject *const *) b;

        return x < y ? -1 : x > y;
}

static size_t gone_position(const MembersSnapshot *s, const Kobject *k)
{
        size_t lo = 0, hi = s->n_gone;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if ((uintptr_t) s->gone[mid] < (uintptr_t) k)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

Kobject *members_snapshot_get(MembersSnapshot *s, size_t i)
{
        Kobject *k;
        size_t at;

        assert(i < s->n);
        k = s->members[i];
        if (s->n_gone == 0)
                return k;
        if (s->n_gone_sorted < s->n_gone) {
                qsort(s->gone, s->n_gone, sizeof(Kobject *), pointer_cmp);
                s->n_gone_sorted = s->n_gone;
        }
        at = gone_position(s, k);
        return at < s->n_gone && s->gone[at] == k ? NULL : k;
}

MembersSnapshot *members_snapshot_free(Model *m, MembersSnapshot *s)
{
        if (!s)
                return NULL;
        for (MembersSnapshot **p = &m->members_snapshots; *p; p = &(*p)->next)
                if (*p == s) {
                        *p = s->next;
                        break;
                }
        free(s->gone);
        free(s->members);
        free(s);
        return NULL;
}

/* Remembers that k left: its address alone, which a new object may take later (one the snapshot
 * does not hold, as it came after).  If it cannot, the snapshot forgets every member from then on:
 * fewer paths, never a freed object's. */
static void snapshot_forget(MembersSnapshot *s, const Kobject *k)
{
        if (GREEDY_REALLOC(s->gone, s->n_gone_allocated, s->n_gone + 1) < 0) {
                s->n = 0;
                return;
        }
        s->gone[s->n_gone++] = k;
}

/* The first of n items sorted by name whose name is not below name (past: above it). */
static size_t name_position(Kobject *const *items, size_t n, const char *name, bool past)
{
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(items[mid]->name, name);
                if (c < 0 || (past && c == 0))
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

/* The first position whose name is not below k's. */
static size_t sorted_position(const SortedList *s, const Kobject *k)
{
        return name_position(s->items, s->n, k->name, false);
}

int model_child_after(Model *m, const Kobject *k, const char *after, Kobject **ret)
{
        Kobject *const *children;
        size_t n, at;
        int r;

        r = model_children_sorted(m, k, &children, &n);
        if (r < 0)
                return r;
        at = after ? name_position(children, n, after, true) : 0;
        *ret = at < n ? children[at] : NULL;
        return 0;
}

/* Puts k in its place, or takes it out: false if the order must be made again instead. */
static bool sorted_list_update(SortedList *s, Kobject *k, bool added)
{
        size_t at;

        if (s->changes >= SORTED_KEPT_CHANGES)
                return false;
        at = sorted_position(s, k);
        if (added) {
                if (GREEDY_REALLOC(s->items, s->n_allocated, s->n + 1) < 0)
                        return false;
                memmove(s->items + at + 1, s->items + at, (s->n - at) * sizeof(Kobject *));
                s->items[at] = k;
                s->n++;
        } else {
                /* Another of the same name first (the kernel's names are unique): sort again. */
                if (at >= s->n || s->items[at] != k)
                        return false;
                memmove(s->items + at, s->items + at + 1, (s->n - at - 1) * sizeof(Kobject *));
                s->n--;
        }
        s->changes++;
        return true;
}

static void sorted_lists_changed(SortedList *slots, size_t n_slots, const Kobject *owner, Kobject *k,
                                 bool added)
{
        for (size_t i = 0; i < n_slots; i++)
                if (slots[i].owner == owner && !sorted_list_update(&slots[i], k, added))
                        sorted_list_free(&slots[i]);
}

void kset_members_changed(Model *m, const Kobject *kset, Kobject *k, bool added)
{
        sorted_lists_changed(m->sorted_members, ELEMENTSOF(m->sorted_members), kset, k, added);
        if (!added)
                for (MembersSnapshot *s = m->members_snapshots; s; s = s->next)
                        if (s->kset == kset)
                                snapshot_forget(s, k);
}

void kobject_children_changed(Model *m, const Kobject *parent, Kobject *k, bool added)
{
        sorted_lists_changed(m->sorted_children, ELEMENTSOF(m->sorted_children), parent, k, added);
        /* k itself is going, and may be freed: a new object at its address is not to find its list. */
        if (!added)
                for (size_t i = 0; i < ELEMENTSOF(m->sorted_children); i++)
                        if (m->sorted_children[i].owner == k)
                                sorted_list_free(&m->sorted_children[i]);
}

void model_order_done(Model *m)
{
        assert(!m->members_snapshots);
        for (size_t i = 0; i < ELEMENTSOF(m->sorted_members); i++)
                sorted_list_free(&m->sorted_members[i]);
        for (size_t i = 0; i < ELEMENTSOF(m->sorted_children); i++)
                sorted_list_free(&m->sorted_children[i]);
}
