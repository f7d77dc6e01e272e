/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "common/util.h"
#include "model/round.h"

void model_round_release(ModelRound *r, Model *m)
{
        for (size_t i = r->pos; i < r->n; i++)
                kobject_unref(m, r->objects[i]);
        free(r->objects);
        *r = (ModelRound){};
}

static void round_begin(ModelRound *r, Model *m, const Kobject *below, bool ksets)
{
        model_round_release(r, m);
        *r = (ModelRound){.resizes = m->by_path.resizes, .below = below, .ksets = ksets, .taking = true};
}

void model_round_begin(ModelRound *r, Model *m)
{
        round_begin(r, m, NULL, false);
}

void model_round_begin_below(ModelRound *r, Model *m, const Kobject *top)
{
        round_begin(r, m, top, true);
}

static bool wanted(const ModelRound *r, const Kobject *k)
{
        if (!r->ksets && k->ktype->id == KTYPE_KSET)
                return false;
        if (!r->below)
                return true;
        for (const Kobject *a = k->parent; a; a = a->parent)
                if (a == r->below)
                        return true;
        return false;
}

int model_round_take(ModelRound *r, Model *m, size_t max)
{
        const Hashmap *index = &m->by_path;
        Kobject *k;

        if (!r->taking)
                return 1;
        /* Objects were added meanwhile and every entry moved: over again. */
        if (r->resizes != index->resizes)
                round_begin(r, m, r->below, r->ksets);
        /* As many as there are now: it is kept for the whole round (minutes at 10,000 disks). */
        if (!r->objects) {
                r->objects = reallocarray(NULL, hashmap_size(index) + 1, sizeof(Kobject *));
                if (!r->objects)
                        return -ENOMEM;
                r->n_allocated = hashmap_size(index) + 1;
        }
        for (size_t i = 0; i < max; i++) {
                k = hashmap_iterate(index, &r->next_slot);
                if (!k) {
                        r->taking = false;
                        return 1;
                }
                if (!wanted(r, k))
                        continue;
                if (GREEDY_REALLOC(r->objects, r->n_allocated, r->n + 1) < 0)
                        return -ENOMEM;
                r->objects[r->n++] = kobject_ref(k);
        }
        return 0;
}

Kobject *model_round_next(ModelRound *r)
{
        return r->pos < r->n ? r->objects[r->pos++] : NULL;
}

void model_round_hand_over(ModelRound *r, Kobject ***ret, size_t *ret_n)
{
        assert(!r->taking && r->pos == 0);
        *ret = TAKE_PTR(r->objects);
        *ret_n = r->n;
        *r = (ModelRound){};
}

bool model_round_active(const ModelRound *r)
{
        return r->taking || r->pos < r->n;
}
