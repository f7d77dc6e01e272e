/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "base/log.h"
#include "live/live-internal.h"

/*
 * A dm or md device appearing, changing its table or going away changes the holders/ of the
 * devices below it and the slaves/ of those above.  Each stacked device's neighbours (what its
 * holders/ and slaves/ linked to at its last reading) are kept, so that an event re-reads the
 * links of exactly the devices on the other side: those it linked to before and those it links
 * to now.
 */

typedef struct Stacked {
        Kobject *k;     /* borrowed: the entry goes when the object leaves the model */
        char **holders; /* object paths, NULL if none */
        char **slaves;
} Stacked;

static const char *stacked_path(const void *s)
{
        return ((const Stacked *) s)->k->path;
}

void stacking_init(Live *l)
{
        hashmap_init(&l->stacked, stacked_path);
}

static Stacked *stacked_free(Stacked *s)
{
        if (s) {
                strv_free(s->holders);
                strv_free(s->slaves);
                free(s);
        }
        return NULL;
}

static int strv_extend_all(char ***l, size_t *n, char *const *add)
{
        for (char *const *a = add; a && *a; a++) {
                bool seen = false;
                for (size_t i = 0; i < *n && !seen; i++)
                        seen = streq((*l)[i], *a);
                if (seen)
                        continue;
                int r = strv_extend(l, n, *a);
                if (r < 0)
                        return r;
        }
        return 0;
}

void stacking_forget(Live *l, Kobject *k)
{
        stacked_free(hashmap_remove(&l->stacked, hashmap_get(&l->stacked, k->path)));
}

/* A side's paths now, or NULL for none. */
static int links_copy(char *const *links, char ***ret)
{
        size_t n = 0;

        *ret = NULL;
        return strv_extend_all(ret, &n, links);
}

void stacking_note(Live *l, Kobject *k, const StackingLinks *now)
{
        _cleanup_(strv_freep) char **holders = NULL, **slaves = NULL;
        Stacked *s = hashmap_get(&l->stacked, k->path);

        /* A side not read is as it was. */
        if ((now->read_holders ? links_copy(now->holders, &holders)
                               : links_copy(s ? s->holders : NULL, &holders)) < 0 ||
            (now->read_slaves ? links_copy(now->slaves, &slaves)
                              : links_copy(s ? s->slaves : NULL, &slaves)) < 0) {
                log_error("Out of memory noting the links of %s.", k->path);
                return;
        }
        if (!holders && !slaves) {
                if (s)
                        stacking_forget(l, k);
                return;
        }
        if (!s) {
                s = calloc(1, sizeof(Stacked));
                if (s)
                        s->k = k;
                if (!s || hashmap_put(&l->stacked, s) < 0) {
                        free(s);
                        log_error("Out of memory noting the links of %s.", k->path);
                        return;
                }
        }
        strv_free(s->holders);
        strv_free(s->slaves);
        s->holders = TAKE_PTR(holders);
        s->slaves = TAKE_PTR(slaves);
}

char **stacking_neighbours(Live *l, const Kobject *k)
{
        Stacked *s = k ? hashmap_get(&l->stacked, k->path) : NULL;
        char **copy = NULL;
        size_t n = 0;

        if (!s || strv_extend_all(&copy, &n, s->holders) < 0 || strv_extend_all(&copy, &n, s->slaves) < 0)
                return strv_free(copy);
        return copy;
}

static void refresh_links(Live *l, const char *path, const Kobject *skip)
{
        Kobject *o = model_find_path(l->model, path);

        if (o && o != skip && ktype_is_block_device(o->ktype))
                (void) changes_refresh(l, o, REFRESH_STRUCTURE);
}

void stacking_refresh_neighbours(Live *l, Kobject *k, char **before)
{
        _cleanup_(strv_freep) char **now = stacking_neighbours(l, k && k->linked ? k : NULL);

        for (char **p = before; p && *p; p++)
                refresh_links(l, *p, k);
        /* Those it links to now: unless they were among before, they have not been looked at. */
        for (char **p = now; p && *p; p++) {
                bool seen = false;
                for (char **b = before; b && *b && !seen; b++)
                        seen = streq(*b, *p);
                if (!seen)
                        refresh_links(l, *p, k);
        }
        strv_free(before);
}

void stacking_done(Live *l)
{
        Stacked *s;
        size_t i = 0;

        while ((s = hashmap_iterate(&l->stacked, &i)))
                stacked_free(s);
        hashmap_deinit(&l->stacked);
}
