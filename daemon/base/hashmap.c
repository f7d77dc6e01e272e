/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hashmap.h"
#include "common/util.h"

/* A tombstone keeps probe chains intact after a removal. */
static char tombstone;
#define TOMBSTONE ((void *) &tombstone)

/*
 * Eight bytes a step, each mixed in by a multiply: the shape table's keys are every file name of a
 * directory, about 1.5 KB, hashed once per directory at start (21,000 at 1,000 x 4), where FNV-1a's
 * byte a step was 4 % of the start's CPU.
 */
static uint64_t string_hash(const char *s)
{
        size_t n = strlen(s);
        uint64_t h = UINT64_C(0x9e3779b97f4a7c15) ^ n, w;

        for (; n >= 8; n -= 8, s += 8) {
                memcpy(&w, s, 8);
                h = (h ^ w) * UINT64_C(0xff51afd7ed558ccd);
                h ^= h >> 32;
        }
        w = 0;
        memcpy(&w, s, n);
        h ^= w;
        /* MurmurHash3's finalizer: every bit reaches the low ones, which probing uses (paths differ in
         * their last bytes, which a multiply alone carries only upwards). */
        h ^= h >> 33;
        h *= UINT64_C(0xff51afd7ed558ccd);
        h ^= h >> 33;
        h *= UINT64_C(0xc4ceb9fe1a85ec53);
        return h ^ (h >> 33);
}

void hashmap_init(Hashmap *h, HashmapKeyOf key_of)
{
        *h = (Hashmap){.key_of = key_of};
}

void hashmap_deinit(Hashmap *h)
{
        unsigned resizes = h->resizes;

        free(h->slots);
        hashmap_init(h, h->key_of);
        h->resizes = resizes + 1; /* every entry went */
}

const char *hashmap_key_self(const void *value)
{
        return value;
}

static size_t probe(const Hashmap *h, const char *key, bool *ret_found);

static int resize(Hashmap *h, size_t n_buckets)
{
        void **old = h->slots;
        size_t old_n = h->n_buckets;

        h->slots = calloc(n_buckets, sizeof(void *));
        if (!h->slots) {
                h->slots = old;
                return -ENOMEM;
        }
        h->n_buckets = n_buckets;
        h->n_tombstones = 0;
        h->resizes++;

        for (size_t i = 0; i < old_n; i++) {
                bool found;
                if (!old[i] || old[i] == TOMBSTONE)
                        continue;
                h->slots[probe(h, h->key_of(old[i]), &found)] = old[i];
        }
        free(old);
        return 0;
}

/* Returns the slot holding key, or the first free slot for it. */
static size_t probe(const Hashmap *h, const char *key, bool *ret_found)
{
        size_t mask = h->n_buckets - 1, i = string_hash(key) & mask, first_free = SIZE_MAX;

        for (;;) {
                void *v = h->slots[i];
                if (!v) {
                        *ret_found = false;
                        return first_free != SIZE_MAX ? first_free : i;
                }
                if (v == TOMBSTONE) {
                        if (first_free == SIZE_MAX)
                                first_free = i;
                } else if (streq(h->key_of(v), key)) {
                        *ret_found = true;
                        return i;
                }
                i = (i + 1) & mask;
        }
}

int hashmap_put(Hashmap *h, void *value)
{
        bool found;
        size_t i;
        int r;

        if ((h->n_entries + h->n_tombstones + 1) * 4 >= h->n_buckets * 3) {
                size_t n = h->n_buckets ? h->n_buckets : 16;
                while ((h->n_entries + 1) * 2 >= n)
                        n *= 2;
                r = resize(h, n);
                if (r < 0)
                        return r;
        }

        i = probe(h, h->key_of(value), &found);
        if (found)
                return -EEXIST;
        if (h->slots[i] == TOMBSTONE)
                h->n_tombstones--;
        h->slots[i] = value;
        h->n_entries++;
        return 0;
}

void *hashmap_get(const Hashmap *h, const char *key)
{
        bool found;
        size_t i;

        if (h->n_entries == 0)
                return NULL;
        i = probe(h, key, &found);
        return found ? h->slots[i] : NULL;
}

void *hashmap_remove(Hashmap *h, const void *value)
{
        bool found;
        size_t i;

        if (h->n_entries == 0 || !value)
                return NULL;
        i = probe(h, h->key_of(value), &found);
        if (!found || h->slots[i] != value)
                return NULL;
        h->slots[i] = TOMBSTONE;
        h->n_entries--;
        h->n_tombstones++;
        return (void *) value;
}

size_t hashmap_size(const Hashmap *h)
{
        return h->n_entries;
}

void *hashmap_iterate(const Hashmap *h, size_t *i)
{
        for (; *i < h->n_buckets; (*i)++) {
                void *v = h->slots[*i];
                if (v && v != TOMBSTONE) {
                        (*i)++;
                        return v;
                }
        }
        return NULL;
}
