/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>

#include "common/util.h"
#include "model/members.h"

/*
 * How many members may come or go between two readings while the order is kept up to date: each is a
 * binary search and a move of the pointers after it (at most 400 KB at 50,000 members), where sorting
 * them again at the next reading held the loop 20-24 ms at 10,000 disks x 4.  Past that many (a
 * hotplug storm nobody reads during) the order is dropped, and the next reading sorts once.
 */
#define MEMBERS_KEPT_CHANGES 256

struct MembersSnapshot {
        const Kobject *kset;
        Kobject **members; /* sorted by name */
        size_t n;
        /* Members that left since, by address: their objects may be freed, so are never touched. */
        const Kobject **gone;
        size_t n_gone, n_gone_allocated;
        MembersSnapshot *next;
};

static void sorted_members_free(struct SortedMembers *s)
{
        free(s->members);
        *s = (struct SortedMembers){};
}

int kset_members_sorted(Model *m, const Kobject *kset, Kobject *const **ret, size_t *ret_n)
{
        struct SortedMembers *free_slot = NULL;
        Kobject **l;
        size_t n = 0;

        for (size_t i = 0; i < ELEMENTSOF(m->sorted_members); i++) {
                struct SortedMembers *s = &m->sorted_members[i];
                if (s->kset == kset) {
                        s->changes = 0; /* read: worth keeping up to date again */
                        *ret = s->members;
                        *ret_n = s->n;
                        return 0;
                }
                if (!s->kset && !free_slot)
                        free_slot = s;
        }
        l = malloc(sizeof(Kobject *) * (kset->n_members + 1));
        if (!l)
                return -ENOMEM;
        for (Kobject *c = kset->first_member; c; c = c->next_member)
                l[n++] = c;
        qsort(l, n, sizeof(Kobject *), kobject_name_cmp);
        if (!free_slot) {
                /* More ksets than slots (the model has two): the first slot's answer makes room. */
                free_slot = &m->sorted_members[0];
                sorted_members_free(free_slot);
        }
        *free_slot = (struct SortedMembers){
                        .kset = kset, .members = l, .n = n, .n_allocated = kset->n_members + 1};
        *ret = l;
        *ret_n = n;
        return 0;
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

Kobject *members_snapshot_get(const MembersSnapshot *s, size_t i)
{
        Kobject *k;
        size_t at;

        assert(i < s->n);
        k = s->members[i];
        if (s->n_gone == 0)
                return k;
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
        size_t at = gone_position(s, k);

        if (at < s->n_gone && s->gone[at] == k)
                return;
        if (GREEDY_REALLOC(s->gone, s->n_gone_allocated, s->n_gone + 1) < 0) {
                s->n = 0;
                return;
        }
        memmove(s->gone + at + 1, s->gone + at, (s->n_gone - at) * sizeof(Kobject *));
        s->gone[at] = k;
        s->n_gone++;
}

/* The first position whose member's name is not below k's. */
static size_t sorted_position(const struct SortedMembers *s, const Kobject *k)
{
        size_t lo = 0, hi = s->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (kobject_name_cmp(&s->members[mid], &k) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

/* Puts k in its place, or takes it out: false if the order must be made again instead. */
static bool sorted_members_update(struct SortedMembers *s, Kobject *k, bool added)
{
        size_t at;

        if (s->changes >= MEMBERS_KEPT_CHANGES)
                return false;
        at = sorted_position(s, k);
        if (added) {
                if (GREEDY_REALLOC(s->members, s->n_allocated, s->n + 1) < 0)
                        return false;
                memmove(s->members + at + 1, s->members + at, (s->n - at) * sizeof(Kobject *));
                s->members[at] = k;
                s->n++;
        } else {
                /* Another member of the same name first (the kernel's names are unique): sort again. */
                if (at >= s->n || s->members[at] != k)
                        return false;
                memmove(s->members + at, s->members + at + 1, (s->n - at - 1) * sizeof(Kobject *));
                s->n--;
        }
        s->changes++;
        return true;
}

void kset_members_changed(Model *m, const Kobject *kset, Kobject *k, bool added)
{
        for (size_t i = 0; i < ELEMENTSOF(m->sorted_members); i++) {
                struct SortedMembers *s = &m->sorted_members[i];
                if (s->kset == kset && !sorted_members_update(s, k, added))
                        sorted_members_free(s);
        }
        if (!added)
                for (MembersSnapshot *s = m->members_snapshots; s; s = s->next)
                        if (s->kset == kset)
                                snapshot_forget(s, k);
}

void kset_members_done(Model *m)
{
        assert(!m->members_snapshots);
        for (size_t i = 0; i < ELEMENTSOF(m->sorted_members); i++)
                sorted_members_free(&m->sorted_members[i]);
}
